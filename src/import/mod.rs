//! Microbenchmark results from other tools, read into one shape so `bakeoff compare` can put
//! them side by side: Go's benchmark format (`go test -bench`), Criterion's `target/criterion`
//! folders, hyperfine's `--export-json`, and bakeoff's own `results.json`. The format is
//! found from the content, not the file name.

mod criterion;
mod gobench;
mod hyperfine;
mod results;

use std::collections::BTreeMap;
use std::path::Path;

use crate::stats::Direction;

/// Where a set of measurements came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Format {
    GoBench,
    Criterion,
    Hyperfine,
    BakeoffResults,
}

/// One input of a comparison: samples per benchmark and unit, in the order first seen.
#[derive(Debug, Clone, PartialEq)]
pub struct BenchSet {
    /// The file or folder as given.
    pub label: String,
    pub format: Format,
    /// Go's `key: value` configuration lines (goos, goarch, pkg, cpu, …), in order.
    pub config: Vec<(String, String)>,
    pub rows: Vec<Row>,
    /// Directions declared by the input (Go's `Unit ns/op better=lower`).
    pub better: BTreeMap<String, Direction>,
}

/// All samples of one benchmark in one unit (several runs = several samples).
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub name: String,
    pub unit: String,
    pub values: Vec<f64>,
}

impl BenchSet {
    fn new(label: &str, format: Format) -> BenchSet {
        BenchSet {
            label: label.to_string(),
            format,
            config: Vec::new(),
            rows: Vec::new(),
            better: BTreeMap::new(),
        }
    }

    /// Adds one sample, keeping rows in first-seen order.
    fn push(&mut self, name: &str, unit: &str, value: f64) {
        match self
            .rows
            .iter_mut()
            .find(|r| r.name == name && r.unit == unit)
        {
            Some(r) => r.values.push(value),
            None => self.rows.push(Row {
                name: name.to_string(),
                unit: unit.to_string(),
                values: vec![value],
            }),
        }
    }

    /// The direction of `unit`: declared by the input, else the usual one for the unit.
    pub fn direction(&self, unit: &str) -> Direction {
        self.better
            .get(unit)
            .copied()
            .unwrap_or_else(|| Direction::for_unit(unit))
    }
}

/// An input that cannot be read, with the file and (for text formats) line.
#[derive(Debug, thiserror::Error, PartialEq)]
pub struct ImportError {
    pub file: String,
    pub line: Option<usize>,
    pub message: String,
}

impl std::fmt::Display for ImportError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.line {
            Some(l) => write!(f, "{}:{l}: {}", self.file, self.message),
            None => write!(f, "{}: {}", self.file, self.message),
        }
    }
}

fn error(file: &str, line: Option<usize>, message: impl Into<String>) -> ImportError {
    ImportError {
        file: file.to_string(),
        line,
        message: message.into(),
    }
}

/// Reads a file or a Criterion folder, detecting its format.
pub fn load(path: &Path) -> Result<BenchSet, ImportError> {
    let label = path.display().to_string();
    if path.is_dir() {
        return criterion::load(path, &label);
    }
    let bytes = crate::sys::read_bounded_bytes_or_pipe(path, crate::sys::DATA_LIMIT)
        .map_err(|e| error(&label, None, format!("cannot read: {e}")))?;
    parse(&label, &bytes)
}

/// Detects the format of `bytes` (a file's content) and parses it.
pub fn parse(label: &str, bytes: &[u8]) -> Result<BenchSet, ImportError> {
    let text = std::str::from_utf8(bytes).map_err(|e| {
        let line = bytes[..e.valid_up_to()]
            .iter()
            .filter(|&&b| b == b'\n')
            .count()
            + 1;
        error(label, Some(line), "not UTF-8 text")
    })?;
    if text.trim_start().starts_with('{') {
        let v: serde_json::Value = serde_json::from_str(text)
            .map_err(|e| error(label, Some(e.line()), format!("not valid JSON: {e}")))?;
        if v.get("results").is_some_and(|r| r.is_array()) {
            return hyperfine::parse(label, &v);
        }
        if v.get("schema_version").is_some() && v.get("runs").is_some() {
            return results::parse(label, &v);
        }
        return Err(error(
            label,
            None,
            "JSON, but neither hyperfine --export-json output nor a bakeoff results.json",
        ));
    }
    gobench::parse(label, text)
}
