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
    warnings: &'a [crate::results::Warning],
    /// Paired runs: every verdict, typed (docs/verdicts.md).
    verdicts: Vec<JsonVerdict>,
    /// Paired runs: the family of those verdicts and its error control.
    error_control: Option<JsonFamily>,
}

#[derive(Serialize)]
struct JsonVerdict {
    point: String,
    contender: String,
    baseline: String,
    figure: &'static str,
    ratio: f64,
    lo: f64,
    hi: f64,
    /// `different`, `equivalent` or `inconclusive`.
    verdict: &'static str,
    /// A difference's direction: `higher` or `lower`; else null.
    direction: Option<&'static str>,
    /// The p-value of "inside the noise band".
    p: f64,
    /// Its interval cleared the noise band, but the error control held it back.
    held_back: bool,
    /// The interval's half-width (±share): changes under it could not be told.
    half_width: f64,
    /// Inconclusive ones: what would settle it.
    settle: Option<String>,
    repetitions: usize,
    rounds: usize,
}

#[derive(Serialize)]
struct JsonFamily {
    comparisons: usize,
    verdicts: usize,
    method: &'static str,
    fdr: f64,
    different: usize,
    equivalent: usize,
    inconclusive: usize,
    held_back: usize,
    /// The figures judged (`paired.judge`, keys like `cpu_per_request`): the family's.
    figures: Vec<&'static str>,
    /// Comparisons measured at none of the judged figures: no verdict, not in the family.
    unjudged: usize,
}

fn json_verdicts(a: &Analysis) -> Vec<JsonVerdict> {
    a.verdicts
        .iter()
        .flat_map(|v| {
            v.verdicts.iter().map(move |x| {
                let half = x.ratio.precision();
                JsonVerdict {
                    point: v.point.to_string(),
                    contender: v.contender.clone(),
                    baseline: v.baseline.clone(),
                    figure: x.figure.name(),
                    ratio: x.ratio.ratio,
                    lo: x.ratio.lo,
                    hi: x.ratio.hi,
                    verdict: x.call.word(),
                    direction: Some(x.call.direction()).filter(|d| !d.is_empty()),
                    p: x.p,
                    held_back: x.held_back,
                    half_width: if half.is_finite() { half } else { 0.0 },
                    settle: x.settle(v.round_limit),
                    repetitions: x.ratio.repetitions,
                    rounds: x.ratio.rounds,
                }
            })
        })
        .collect()
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
            verdicts: json_verdicts(a),
            error_control: a.family.as_ref().map(|f| JsonFamily {
                comparisons: f.comparisons,
                verdicts: f.verdicts,
                method: "benjamini-hochberg",
                fdr: f.fdr,
                different: f.different,
                equivalent: f.equivalent,
                inconclusive: f.inconclusive,
                held_back: f.held_back,
                figures: if f.judged.is_empty() {
                    crate::analysis::verdicts::Figure::ALL
                        .iter()
                        .filter(|x| a.verdicts.iter().any(|v| v.get(**x).is_some()))
                        .map(|x| x.key())
                        .collect()
                } else {
                    f.judged.iter().map(|x| x.key()).collect()
                },
                unjudged: f.unjudged,
            }),
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

/// On GitHub Actions, appends the verdict to the job's summary page: each gate's line, what
/// tripped it, then the Markdown report.
pub fn github_step_summary(
    a: &Analysis,
    gates: &[String],
    tripped: &[String],
) -> std::io::Result<()> {
    use std::io::Write as _;
    let Some(path) = std::env::var_os("GITHUB_STEP_SUMMARY") else {
        return Ok(());
    };
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    f.write_all(verdict_lines(gates, tripped).as_bytes())?;
    // The report's own Verdict section repeats the gates' lines: said once, above.
    let report: String = super::markdown::render(a)
        .lines()
        .filter(|l| !gates.iter().any(|g| *l == format!("- **{g}**")))
        .map(|l| format!("{l}\n"))
        .collect();
    f.write_all(report.as_bytes())
}

/// The marker a pull request's comment carries, so the next run updates it in place.
pub const COMMENT_MARKER: &str = "<!-- bakeoff verdict -->";

/// The gates' lines in bold, what tripped them as a list under them.
fn verdict_lines(gates: &[String], tripped: &[String]) -> String {
    let mut out = String::new();
    for g in gates {
        out.push_str(&format!("**{g}**\n\n"));
    }
    for t in tripped {
        out.push_str(&format!("- {t}\n"));
    }
    if !tripped.is_empty() {
        out.push('\n');
    }
    out
}

/// `report/verdict.md` in a results folder: the verdict as a pull request's comment says it
/// (`bakeoff ci comment` posts it) — the marker, the gates' lines and what tripped them, and
/// on GitHub Actions a link to the run whose summary holds the whole report.
pub fn verdict(dir: &Path, gates: &[String], tripped: &[String]) -> std::io::Result<()> {
    let mut text = format!("{COMMENT_MARKER}\n{}", verdict_lines(gates, tripped));
    if gates.is_empty() {
        text.push_str("**bakeoff: no gate was set**: the report says what differs.\n\n");
    }
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    if let (Some(server), Some(repo), Some(run)) = (
        env("GITHUB_SERVER_URL"),
        env("GITHUB_REPOSITORY"),
        env("GITHUB_RUN_ID"),
    ) {
        text.push_str(&format!(
            "The whole report: [the run's summary]({server}/{repo}/actions/runs/{run}).\n"
        ));
    }
    let report = dir.join("report");
    std::fs::create_dir_all(&report)?;
    write_atomic(&report.join("verdict.md"), text.as_bytes())
}
