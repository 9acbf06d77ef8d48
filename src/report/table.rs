//! One table shape for every output: built once from results, written as Markdown or CSV
//! (and carried as is in the JSON report).

use serde::Serialize;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Table {
    /// A file-name-safe id, e.g. `startup` or `serving-read-one-key`.
    pub id: String,
    pub title: String,
    /// The table as people read it (Markdown, HTML): `21.1 ms (21.0 ms–21.5 ms)`.
    pub head: Vec<String>,
    pub rows: Vec<Vec<String>>,
    /// The same table for tools (CSV, report.json): one value per cell, numbers in base
    /// units (seconds, bytes, requests/s) with the unit in the column's name, a median and
    /// its min and max as three columns; `null` where there is no value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<Data>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct Data {
    pub head: Vec<String>,
    pub rows: Vec<Vec<serde_json::Value>>,
}

impl Data {
    /// Starts a row; its cells are added with [`Row`]'s methods.
    pub fn row(&mut self) -> Row<'_> {
        self.rows.push(Vec::new());
        let first = self.rows.len() == 1;
        Row { data: self, first }
    }
}

/// One row of [`Data`] being filled: the first row names the columns as it goes.
pub struct Row<'a> {
    data: &'a mut Data,
    first: bool,
}

impl Row<'_> {
    pub fn cell(&mut self, name: &str, v: impl Into<serde_json::Value>) -> &mut Self {
        if self.first {
            self.data.head.push(name.to_string());
        }
        self.data.rows.last_mut().expect("a row").push(v.into());
        self
    }

    /// A number, or `null` when there is none (or it is not finite).
    pub fn num(&mut self, name: &str, v: Option<f64>) -> &mut Self {
        // Whole numbers (byte counts, most rates' bounds) are written without a `.0`.
        let v = match v.filter(|x| x.is_finite()) {
            None => serde_json::Value::Null,
            Some(x) if x.fract() == 0.0 && x.abs() < 9e15 => serde_json::Value::from(x as i64),
            Some(x) => serde_json::Value::from(x),
        };
        self.cell(name, v)
    }

    /// `NAME_median_UNIT`, `NAME_min_UNIT`, `NAME_max_UNIT` of the values (nulls when none).
    pub fn stats(&mut self, name: &str, unit: &str, values: &[f64]) -> &mut Self {
        let s = crate::stats::Sample::new(values.to_vec()).ok();
        self.num(
            &format!("{name}_median_{unit}"),
            s.as_ref().map(|s| s.median()),
        );
        self.num(&format!("{name}_min_{unit}"), s.as_ref().map(|s| s.min()));
        self.num(&format!("{name}_max_{unit}"), s.as_ref().map(|s| s.max()))
    }
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
        let Some(d) = &self.data else {
            let mut out = line(&self.head);
            for r in &self.rows {
                out.push_str(&line(r));
            }
            return out;
        };
        let text = |v: &serde_json::Value| match v {
            serde_json::Value::Null => String::new(),
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let mut out = line(&d.head);
        for r in &d.rows {
            out.push_str(&line(&r.iter().map(text).collect::<Vec<_>>()));
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
            data: None,
        };
        assert_eq!(
            t.markdown(),
            "## T\n\n| a | b |\n|---|---|\n| 1 | x, \"y\" |\n\n"
        );
        assert_eq!(t.csv(), "a,b\n1,\"x, \"\"y\"\"\"\n");
    }

    #[test]
    fn csv_carries_the_typed_twin_one_value_per_cell() {
        let mut d = Data::default();
        d.row()
            .cell("contender", "a")
            .stats("first_response", "s", &[0.021, 0.020, 0.0215])
            .num("failed", None);
        d.row()
            .cell("contender", "b")
            .stats("first_response", "s", &[])
            .num("failed", Some(3.0));
        let t = Table {
            id: "t".into(),
            title: "T".into(),
            head: vec!["contender".into(), "first response".into()],
            rows: vec![vec!["a".into(), "21.0 ms (20.0 ms–21.5 ms)".into()]],
            data: Some(d),
        };
        assert_eq!(
            t.csv(),
            "contender,first_response_median_s,first_response_min_s,first_response_max_s,failed\n\
             a,0.021,0.02,0.0215,\n\
             b,,,,3\n"
        );
        assert!(t.markdown().contains("21.0 ms (20.0 ms–21.5 ms)"));
    }
}
