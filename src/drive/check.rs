//! `bakeoff check` (docs/bisect.md): one step of a bisection — the working tree against a
//! ref, paired — and the step its verdicts say.

use std::path::{Path, PathBuf};

use anyhow::bail;

use crate::analysis::verdicts::{Figure, PointVerdicts, Verdict};
use crate::cancel::Cancel;
use crate::plan::{AGAINST, CURRENT};
use crate::runner;
use crate::stats::paired::Call;

/// What a check found, as `git bisect run` reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    Good,
    Bad,
    Skip,
}

impl Step {
    /// The exit code `git bisect run` reads.
    pub fn code(self) -> u8 {
        match self {
            Step::Good => 0,
            Step::Bad => 1,
            Step::Skip => 125,
        }
    }

    pub fn word(self) -> &'static str {
        match self {
            Step::Good => "good",
            Step::Bad => "bad",
            Step::Skip => "skip",
        }
    }
}

/// What `check` is asked.
pub struct Request<'a> {
    pub plan: &'a Path,
    pub contender: &'a str,
    pub against: &'a str,
    /// The figure judged (none: the plan's main one).
    pub figure: Option<Figure>,
    /// `--budget` (`Some(None)`: off).
    pub budget: Option<Option<std::time::Duration>>,
    pub out: Option<PathBuf>,
}

/// The working tree against `--against`, paired, and the step it reads with why in words;
/// `None` when interrupted. A ref that does not build is an error (a mistake, not a step).
pub fn check(req: &Request, cancel: &Cancel) -> anyhow::Result<Option<(Step, String)>> {
    let opts = runner::RunOptions {
        out: req.out.clone(),
        cut: Some(runner::Cut::Check {
            contender: req.contender.to_string(),
            against: req.against.to_string(),
        }),
        budget: req.budget,
        cancel: cancel.clone(),
        ..runner::RunOptions::default()
    };
    let (done, verdicts) = super::run_cut(req.plan, opts)?;
    eprintln!("results: {}", done.dir.join("results.json").display());
    if done.results.status == crate::results::Status::Interrupted {
        return Ok(None);
    }
    let built = |name: &str| {
        done.results
            .contenders
            .iter()
            .find(|c| c.name == name)
            .and_then(|c| c.source.as_ref())
            .and_then(|s| s.error.clone())
    };
    if let Some(e) = built(AGAINST) {
        bail!("--against {}: it did not build: {e}", req.against);
    }
    Ok(Some(match built(CURRENT) {
        Some(e) => (
            Step::Skip,
            format!(
                "the working tree did not build: {}",
                e.lines().next().unwrap_or("")
            ),
        ),
        None => judge(&verdicts, req.figure),
    }))
}

/// The step the verdicts of the working tree against the ref say: bad when a point reads
/// *different* and worse on the judged figure, skip when one is still inconclusive (or
/// none was judged), else good; and why, in words.
fn judge(verdicts: &[PointVerdicts], figure: Option<Figure>) -> (Step, String) {
    let mine: Vec<(String, Verdict)> = verdicts
        .iter()
        .filter(|v| v.contender == CURRENT)
        .filter_map(|v| Some((v.point.to_string(), super::judged(v, figure)?)))
        .collect();
    if mine.is_empty() {
        return (Step::Skip, "no paired verdict to judge".into());
    }
    let worse = |x: &Verdict| match x.figure {
        Figure::Throughput => x.call == Call::Lower,
        _ => x.call == Call::Higher,
    };
    if let Some((at, x)) = mine.iter().find(|(_, x)| worse(x)) {
        return (Step::Bad, format!("different and worse at {at}: {x}"));
    }
    if let Some((at, x)) = mine.iter().find(|(_, x)| x.call == Call::Inconclusive) {
        return (Step::Skip, format!("still inconclusive at {at}: {x}"));
    }
    let n = crate::units::count(mine.len() as u64, "point");
    (
        Step::Good,
        format!("equivalent or better at every one of {n}"),
    )
}
