//! One table shape for every output: built once from results, written as Markdown or CSV
//! (and carried as is in the JSON report).

use serde::Serialize;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Table {
    /// A file-name-safe id, e.g. `startup` or `serving-read-one-key`.
    pub id: String,
    pub title: String,
    pub head: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

impl Table {
    pub fn markdown(&self) -> String {
        let mut out = format!(
            "## {}\n\n| {} |\n|{}\n",
            self.title,
            self.head.join(" | "),
            "---|".repeat(self.head.len())
        );
        for r in &self.rows {
            out.push_str(&format!("| {} |\n", r.join(" | ")));
        }
        out.push('\n');
        out
    }

    pub fn csv(&self) -> String {
        let q = |s: &str| {
            if s.contains([',', '"', '\n']) {
                format!("\"{}\"", s.replace('"', "\"\""))
            } else {
                s.to_string()
            }
        };
        let line =
            |cells: &[String]| cells.iter().map(|c| q(c)).collect::<Vec<_>>().join(",") + "\n";
        let mut out = line(&self.head);
        for r in &self.rows {
            out.push_str(&line(r));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_and_csv_hold_the_same_cells() {
        let t = Table {
            id: "t".into(),
            title: "T".into(),
            head: vec!["a".into(), "b".into()],
            rows: vec![vec!["1".into(), "x, \"y\"".into()]],
        };
        assert_eq!(
            t.markdown(),
            "## T\n\n| a | b |\n|---|---|\n| 1 | x, \"y\" |\n\n"
        );
        assert_eq!(t.csv(), "a,b\n1,\"x, \"\"y\"\"\"\n");
    }
}
