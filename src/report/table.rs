//! One table shape for every output, built once from what the analysis computed: each cell
//! is made from its value and unit by one constructor, which yields both what people read
//! (Markdown, HTML) and what tools get (CSV, report.json) — so the two cannot drift apart.
//! The formats only supply their syntax.

use serde::Serialize;
use serde_json::Value;

use crate::stats::Sample;
use crate::units::fmt_us;

#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    /// A file-name-safe id, e.g. `startup` or `serving-read-one-key`.
    pub id: String,
    pub title: String,
    /// The columns' headings as people read them.
    pub head: Vec<String>,
    pub rows: Vec<Vec<Cell>>,
}

/// What a paired verdict proved, for a cell's style.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reading {
    Different,
    Equivalent,
    Inconclusive,
}

impl Reading {
    pub fn class(self) -> &'static str {
        match self {
            Reading::Different => "different",
            Reading::Equivalent => "equivalent",
            Reading::Inconclusive => "inconclusive",
        }
    }
}

/// One cell: its text for people, and its named values for tools — numbers in base units
/// (seconds, bytes, requests/s) with the unit in the name, `null` where there is none. A
/// cell that only restates others (a min–max beside its median) has no values.
#[derive(Debug, Clone, PartialEq)]
pub struct Cell {
    pub text: String,
    pub values: Vec<(String, Value)>,
    /// A verdict's reading, which HTML styles.
    pub reading: Option<Reading>,
}

/// How a figure's values are shown and named.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Seconds: shown scaled (`612 µs`, `1.23 ms`), named `_s`.
    Seconds,
    Bytes,
    /// Requests per second (`_rps`).
    Rps,
    /// Items (stream messages) per second (`_per_s`).
    PerSecond,
}

impl Unit {
    fn suffix(self) -> &'static str {
        match self {
            Unit::Seconds => "s",
            Unit::Bytes => "bytes",
            Unit::Rps => "rps",
            Unit::PerSecond => "per_s",
        }
    }

    pub fn show(self, v: f64) -> String {
        match self {
            Unit::Seconds => fmt_us(v * 1e6),
            Unit::Bytes => super::fmt_bytes(v),
            Unit::Rps | Unit::PerSecond => super::fmt_rate(v),
        }
    }
}

/// A number for tools: whole numbers (byte counts, most rates' bounds) without a `.0`, `null`
/// when there is none or it is not finite.
pub fn number(v: Option<f64>) -> Value {
    match v.filter(|x| x.is_finite()) {
        None => Value::Null,
        Some(x) if x.fract() == 0.0 && x.abs() < 9e15 => Value::from(x as i64),
        Some(x) => Value::from(x),
    }
}

/// The three values `NAME_median_UNIT`, `NAME_min_UNIT`, `NAME_max_UNIT` (nulls when none).
fn spread_values(name: &str, unit: Unit, s: Option<&Sample>) -> Vec<(String, Value)> {
    let u = unit.suffix();
    vec![
        (format!("{name}_median_{u}"), number(s.map(|s| s.median()))),
        (format!("{name}_min_{u}"), number(s.map(|s| s.min()))),
        (format!("{name}_max_{u}"), number(s.map(|s| s.max()))),
    ]
}

impl Cell {
    /// Text, the same for people and tools.
    pub fn text(name: &str, text: impl Into<String>) -> Cell {
        let text = text.into();
        Cell {
            values: vec![(name.to_string(), Value::from(text.as_str()))],
            text,
            reading: None,
        }
    }

    /// Text for people only: it restates values other cells carry.
    pub fn shown(text: impl Into<String>) -> Cell {
        Cell {
            text: text.into(),
            values: Vec::new(),
            reading: None,
        }
    }

    /// Text for people, and values of its own for tools.
    pub fn with(text: impl Into<String>, values: Vec<(String, Value)>) -> Cell {
        Cell {
            text: text.into(),
            values,
            reading: None,
        }
    }

    pub fn count(name: &str, n: u64) -> Cell {
        Cell {
            text: n.to_string(),
            values: vec![(name.to_string(), Value::from(n))],
            reading: None,
        }
    }

    /// One value in a unit: `1.23 ms`, named `NAME_UNIT`; `—` and `null` when there is none.
    pub fn value(name: &str, unit: Unit, v: Option<f64>) -> Cell {
        Cell {
            text: v.map_or("—".into(), |v| unit.show(v)),
            values: vec![(format!("{name}_{}", unit.suffix()), number(v))],
            reading: None,
        }
    }

    /// The median of a figure over the repetitions with its range, `1.23 ms (1.20–1.31)`
    /// (the range only when there are several); for tools its median, min and max.
    pub fn spread(name: &str, unit: Unit, values: &[f64]) -> Cell {
        let s = Sample::new(values.to_vec()).ok();
        let text = match &s {
            Some(s) if s.len() > 1 => format!(
                "{} ({}–{})",
                unit.show(s.median()),
                unit.show(s.min()),
                unit.show(s.max())
            ),
            Some(s) => unit.show(s.median()),
            None => "—".into(),
        };
        Cell {
            text,
            values: spread_values(name, unit, s.as_ref()),
            reading: None,
        }
    }

    /// As [`Cell::spread`], but people read the median alone.
    pub fn median(name: &str, unit: Unit, values: &[f64]) -> Cell {
        let s = Sample::new(values.to_vec()).ok();
        Cell {
            text: s.as_ref().map_or("—".into(), |s| unit.show(s.median())),
            values: spread_values(name, unit, s.as_ref()),
            reading: None,
        }
    }

    /// The text people read instead (the values stay): `— (80% of calls failed)`.
    pub fn reads(mut self, text: impl Into<String>) -> Cell {
        self.text = text.into();
        self
    }

    /// Adds a value for tools.
    pub fn and(mut self, name: &str, v: impl Into<Value>) -> Cell {
        self.values.push((name.to_string(), v.into()));
        self
    }

    /// Marks the cell as a verdict with this reading.
    pub fn reading(mut self, r: Reading) -> Cell {
        self.reading = Some(r);
        self
    }
}

/// The table for tools: its columns (every name a row's cells give, in the order they first
/// appear) and one value per column per row (`null` where a row has none).
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct Data {
    pub head: Vec<String>,
    pub rows: Vec<Vec<Value>>,
}

impl Table {
    pub fn text_rows(&self) -> Vec<Vec<&str>> {
        self.rows
            .iter()
            .map(|r| r.iter().map(|c| c.text.as_str()).collect())
            .collect()
    }

    pub fn data(&self) -> Data {
        let mut head: Vec<String> = Vec::new();
        for (name, _) in self.rows.iter().flatten().flat_map(|c| &c.values) {
            if !head.contains(name) {
                head.push(name.clone());
            }
        }
        let rows = self
            .rows
            .iter()
            .map(|r| {
                let mut row = vec![Value::Null; head.len()];
                for (name, v) in r.iter().flat_map(|c| &c.values) {
                    let i = head.iter().position(|h| h == name).expect("named above");
                    row[i] = v.clone();
                }
                row
            })
            .collect();
        Data { head, rows }
    }

    pub fn markdown(&self) -> String {
        let mut out = format!(
            "## {}\n\n| {} |\n|{}\n",
            self.title,
            self.head.join(" | "),
            "---|".repeat(self.head.len())
        );
        for r in self.text_rows() {
            out.push_str(&format!("| {} |\n", r.join(" | ")));
        }
        out.push('\n');
        out
    }

    /// The values for tools, one per cell; the text where no cell has values.
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
        let d = self.data();
        if d.head.is_empty() {
            let mut out = line(&self.head);
            for r in self.text_rows() {
                out.push_str(&line(&r.iter().map(|c| c.to_string()).collect::<Vec<_>>()));
            }
            return out;
        }
        let text = |v: &Value| match v {
            Value::Null => String::new(),
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let mut out = line(&d.head);
        for r in &d.rows {
            out.push_str(&line(&r.iter().map(text).collect::<Vec<_>>()));
        }
        out
    }
}

/// report.json carries a table as it always has: `head` and `rows` as people read them,
/// `data` for tools.
impl Serialize for Table {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct as _;
        let data = self.data();
        let mut t = s.serialize_struct("Table", 5)?;
        t.serialize_field("id", &self.id)?;
        t.serialize_field("title", &self.title)?;
        t.serialize_field("head", &self.head)?;
        t.serialize_field("rows", &self.text_rows())?;
        if !data.head.is_empty() {
            t.serialize_field("data", &data)?;
        }
        t.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_and_csv_come_from_the_same_cells() {
        let t = Table {
            id: "t".into(),
            title: "T".into(),
            head: vec!["a".into(), "b".into()],
            rows: vec![vec![Cell::shown("1"), Cell::shown("x, \"y\"")]],
        };
        assert_eq!(
            t.markdown(),
            "## T\n\n| a | b |\n|---|---|\n| 1 | x, \"y\" |\n\n"
        );
        assert_eq!(t.csv(), "a,b\n1,\"x, \"\"y\"\"\"\n");
    }

    #[test]
    fn a_cell_gives_people_its_text_and_tools_its_values() {
        let t = Table {
            id: "t".into(),
            title: "T".into(),
            head: vec!["contender".into(), "first response".into(), "failed".into()],
            rows: vec![
                vec![
                    Cell::text("contender", "a"),
                    Cell::spread("first_response", Unit::Seconds, &[0.021, 0.020, 0.0215]),
                    Cell::shown(""),
                ],
                vec![
                    Cell::text("contender", "b"),
                    Cell::spread("first_response", Unit::Seconds, &[]),
                    Cell::count("failed", 3),
                ],
            ],
        };
        assert_eq!(
            t.csv(),
            "contender,first_response_median_s,first_response_min_s,first_response_max_s,failed\n\
             a,0.021,0.02,0.0215,\n\
             b,,,,3\n"
        );
        let md = t.markdown();
        assert!(md.contains("| a | 21.0 ms (20.0 ms–21.5 ms) |"), "{md}");
        assert!(md.contains("| b | — | 3 |"), "{md}");
        let json = serde_json::to_value(&t).unwrap();
        assert_eq!(json["rows"][0][1], "21.0 ms (20.0 ms–21.5 ms)");
        assert_eq!(json["data"]["rows"][1][4], 3);
        assert_eq!(
            Cell::median("p50", Unit::Seconds, &[0.001, 0.003]).text,
            "2.00 ms"
        );
    }
}
