//! The alerts of a confirmation (docs/history.md, "The culprit, unaided"): each confirmed
//! step with its measured size and its culprit — one commit by id, subject and link, or why
//! it is no narrower — as `alerts.md` and `alerts.json`, for a workflow to post.

use std::fmt::Write as _;
use std::path::Path;

use serde::{Deserialize, Serialize};

/// The alerts file's schema version.
pub const SCHEMA: u32 = 1;

/// A confirmed step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Alert {
    /// The step's number in the history (`history confirm STEP`).
    pub step: i64,
    /// `plan · contender · point · figure`, as lists show it.
    pub series: String,
    pub figure: String,
    pub point: String,
    /// Worse: more CPU or latency, less throughput.
    pub regression: bool,
    /// The first bad commit over the last good one, measured side by side.
    pub ratio: f64,
    pub lo: f64,
    pub hi: f64,
    pub last_good: String,
    pub first_bad: String,
    pub culprit: Culprit,
}

/// Which commit made the step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Culprit {
    /// One commit: the step's own first bad commit (its neighbours were measured), or the one
    /// a bisection named and confirmed.
    Commit {
        id: String,
        subject: String,
        link: Option<String>,
    },
    /// The commits after `after` up to `to`, and why it is no narrower (a bisection's answer,
    /// or a step across commits that was not bisected).
    Range {
        after: String,
        to: String,
        commits: usize,
        why: String,
    },
}

/// The alerts as Markdown: the regressions first, each with its culprit.
pub fn markdown(alerts: &[Alert]) -> String {
    let mut out = String::new();
    let worse = alerts.iter().filter(|a| a.regression).count();
    let _ = writeln!(
        out,
        "**bakeoff: {} confirmed side by side**, {} of them {}.\n",
        crate::units::count(alerts.len() as u64, "step"),
        worse,
        if worse == 1 {
            "a regression"
        } else {
            "regressions"
        }
    );
    let mut sorted: Vec<&Alert> = alerts.iter().collect();
    sorted.sort_by_key(|a| !a.regression);
    for a in sorted {
        let ratio = |x: f64| crate::stats::notation::fmt_ratio(x);
        let _ = writeln!(
            out,
            "- {} **{}** ({}–{}) — {}",
            if a.regression {
                "Regression:"
            } else {
                "Improvement:"
            },
            ratio(a.ratio),
            ratio(a.lo),
            ratio(a.hi),
            a.series
        );
        let _ = writeln!(out, "  - {}", culprit_words(&a.culprit));
    }
    if alerts.is_empty() {
        out = "**bakeoff: no step confirmed.**\n".into();
    }
    out
}

/// A culprit in words.
fn culprit_words(c: &Culprit) -> String {
    let short = |id: &str| crate::units::prefix(id, 10).to_string();
    match c {
        Culprit::Commit { id, subject, link } => {
            let name = match link {
                Some(l) => format!("[`{}`]({l})", short(id)),
                None => format!("`{}`", short(id)),
            };
            format!(
                "culprit: {name} “{}”",
                subject.replace(['`', '[', ']', '<', '>'], "'")
            )
        }
        Culprit::Range {
            after,
            to,
            commits,
            why,
        } => format!(
            "culprit: one of the {} after `{}` up to `{}` — {why}",
            crate::units::count(*commits as u64, "commit"),
            short(after),
            short(to)
        ),
    }
}

/// Writes `alerts.md` and `alerts.json` in `dir`, each atomically.
pub fn write(dir: &Path, alerts: &[Alert]) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir)?;
    let json = serde_json::json!({ "schema": SCHEMA, "alerts": alerts });
    crate::results::write_atomic(&dir.join("alerts.json"), &serde_json::to_vec_pretty(&json)?)?;
    crate::results::write_atomic(&dir.join("alerts.md"), markdown(alerts).as_bytes())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alert(regression: bool, culprit: Culprit) -> Alert {
        Alert {
            step: 3,
            series: "p · srv · get [clients=1] · cpu_per_request ÷ reference".into(),
            figure: "cpu_per_request".into(),
            point: "get [clients=1]".into(),
            regression,
            ratio: 1.031,
            lo: 1.02,
            hi: 1.05,
            last_good: "a".repeat(40),
            first_bad: "b".repeat(40),
            culprit,
        }
    }

    #[test]
    fn an_alert_names_its_culprit_first_the_regressions() {
        let one = Culprit::Commit {
            id: "c".repeat(40),
            subject: "hash every `answer` twice".into(),
            link: Some(format!("https://example.com/c/{}", "c".repeat(40))),
        };
        let range = Culprit::Range {
            after: "a".repeat(40),
            to: "b".repeat(40),
            commits: 3,
            why: "commit 2 did not build".into(),
        };
        let md = markdown(&[alert(false, range), alert(true, one)]);
        let lines: Vec<&str> = md.lines().collect();
        assert!(
            lines[0].contains("2 steps confirmed") && lines[0].contains("1 of them a regression"),
            "{md}"
        );
        assert!(
            lines[2].starts_with("- Regression: **1.03×** (1.02×–1.05×)"),
            "{md}"
        );
        assert!(
            lines[3].contains("[`cccccccccc`](https://example.com/c/")
                && lines[3].contains("“hash every 'answer' twice”"),
            "{md}"
        );
        assert!(lines[5].contains("one of the 3 commits after `aaaaaaaaaa` up to `bbbbbbbbbb` — commit 2 did not build"), "{md}");
        assert_eq!(markdown(&[]), "**bakeoff: no step confirmed.**\n");
    }
}
