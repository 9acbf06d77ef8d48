//! Reports as files: each exporter turns results into named byte strings, and one writer
//! puts them in `DIR/report/` (atomically, like results.json). `bakeoff run` and `bakeoff
//! demo` write them at the end; `bakeoff report DIR` writes them again from results alone.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::analysis::Analysis;
use super::table::Table;
use crate::compat::CompatReport;
use crate::diagnose::Finding;
use crate::results::write_atomic;

/// Bumped whenever a field of report.json changes meaning or disappears.
pub const REPORT_SCHEMA_VERSION: u32 = 1;

/// Turns an analysis of results into files: (file name, bytes).
pub trait Exporter {
    fn export(&self, a: &Analysis) -> Vec<(String, Vec<u8>)>;
}

/// `report.md`: the summary a reader pastes into a PR.
pub struct Markdown;

/// One CSV per table (`startup.csv`, `serving-<scenario>.csv`, `scaling-<scenario>.csv`).
pub struct Csv;

/// `report.json`: the same tables, findings and compat analysis, machine-readable.
pub struct Json;

/// `report.html`: one self-contained page with SVG charts, and the profiled points' flame
/// graphs (also written as SVG files of their own).
pub struct Html<'a> {
    pub flames: &'a [super::profiles::Flame],
}

impl Exporter for Html<'_> {
    fn export(&self, a: &Analysis) -> Vec<(String, Vec<u8>)> {
        let mut files = vec![(
            "report.html".into(),
            super::html::render(a, self.flames).into_bytes(),
        )];
        files.extend(
            self.flames
                .iter()
                .map(|f| (f.file.clone(), f.svg.clone().into_bytes())),
        );
        files
    }
}

impl Exporter for Markdown {
    fn export(&self, a: &Analysis) -> Vec<(String, Vec<u8>)> {
        vec![("report.md".into(), super::markdown::render(a).into_bytes())]
    }
}

impl Exporter for Csv {
    fn export(&self, a: &Analysis) -> Vec<(String, Vec<u8>)> {
        a.tables()
            .into_iter()
            .map(|t| (format!("{}.csv", t.id), t.csv().into_bytes()))
            .collect()
    }
}

#[derive(Serialize)]
struct JsonReport<'a> {
    schema_version: u32,
    name: &'a str,
    status: &'a str,
    smoke: bool,
    started_at: &'a str,
    finished_at: Option<&'a str>,
    summary: &'a [String],
    tables: Vec<&'a Table>,
    findings: &'a [Finding],
    compat: &'a [CompatReport],
    warnings: &'a [String],
}

impl Exporter for Json {
    fn export(&self, a: &Analysis) -> Vec<(String, Vec<u8>)> {
        let r = a.results;
        let report = JsonReport {
            schema_version: REPORT_SCHEMA_VERSION,
            name: &r.name,
            status: r.status.as_str(),
            smoke: r.smoke,
            started_at: &r.started_at,
            finished_at: r.finished_at.as_deref(),
            summary: &a.summary,
            tables: a.tables(),
            findings: &a.findings,
            compat: &a.compat,
            warnings: &r.warnings,
        };
        let mut bytes = serde_json::to_vec_pretty(&report).expect("a report serializes");
        bytes.push(b'\n');
        vec![("report.json".into(), bytes)]
    }
}

/// Every exporter's files, written into `dir/report/`; returns their paths.
pub fn write_all(dir: &Path, a: &Analysis) -> std::io::Result<Vec<PathBuf>> {
    let out = dir.join("report");
    std::fs::create_dir_all(&out)?;
    let flames = super::profiles::flames(dir, a.results);
    let html = Html { flames: &flames };
    let exporters: [&dyn Exporter; 4] = [&Markdown, &Csv, &Json, &html];
    let mut written = Vec::new();
    for e in exporters {
        for (name, bytes) in e.export(a) {
            let path = out.join(name);
            write_atomic(&path, &bytes)?;
            written.push(path);
        }
    }
    Ok(written)
}

/// On GitHub Actions, appends the Markdown summary to the job's summary page.
pub fn github_step_summary(a: &Analysis) -> std::io::Result<()> {
    use std::io::Write as _;
    let Some(path) = std::env::var_os("GITHUB_STEP_SUMMARY") else {
        return Ok(());
    };
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    f.write_all(super::markdown::render(a).as_bytes())
}
