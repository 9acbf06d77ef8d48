//! `bakeoff check` (docs/bisect.md): one step of a bisection — the working tree against a
//! ref, paired — turned into the exit code `git bisect run` reads.

use super::*;
use crate::analysis::verdicts::{Figure, PointVerdicts};
use crate::plan::{AGAINST, CURRENT};
use crate::stats::paired::Call;

/// What a check found, as `git bisect run` reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    Good,
    Bad,
    Skip,
}

impl Step {
    fn code(self) -> u8 {
        match self {
            Step::Good => 0,
            Step::Bad => 1,
            Step::Skip => 125,
        }
    }
}

/// The exit code of a mistake in the flags of the command `args` names: `check` 128 (`git
/// bisect run` reads 1–127 but 125 as "bad" and stops only above 127), `bisect` 1 (its 2
/// means "a range"), any other clap's usual 2.
pub fn mistake_code(args: &[String]) -> u8 {
    match args
        .iter()
        .skip(1)
        .find(|a| !a.starts_with('-'))
        .map(String::as_str)
    {
        Some("check") => 128,
        Some("bisect") => 1,
        _ => 2,
    }
}

/// A mistake (the plan, the flags, a ref that does not build) exits 128: `git bisect run`
/// reads 1–127 but 125 as "bad", and stops at anything above.
pub(crate) fn run_check(args: &CheckArgs) -> anyhow::Result<u8> {
    match check(args) {
        Ok(code) => Ok(code),
        Err(e) => {
            eprintln!("bakeoff: error: {e:#}");
            Ok(128)
        }
    }
}

fn check(args: &CheckArgs) -> anyhow::Result<u8> {
    let cancel = install_handler(on_interrupt_run, 0);
    crate::sys::raise_open_files_limit();
    crate::sys::children::adopt();
    let opts = runner::RunOptions {
        out: args.out.clone(),
        cut: Some(runner::Cut::Check {
            contender: args.contender.clone(),
            against: args.against.clone(),
        }),
        budget: args.budget.map(|b| b.0),
        cancel,
        ..runner::RunOptions::default()
    };
    let (done, verdicts) = run_cut(&args.plan, opts)?;
    eprintln!("results: {}", done.dir.join("results.json").display());
    if done.results.status == crate::results::Status::Interrupted {
        return Ok(130);
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
        bail!("--against {}: it did not build: {e}", args.against);
    }
    let (step, why) = match built(CURRENT) {
        Some(e) => (
            Step::Skip,
            format!(
                "the working tree did not build: {}",
                e.lines().next().unwrap_or("")
            ),
        ),
        None => judge(&verdicts, args.figure),
    };
    let word = match step {
        Step::Good => "good",
        Step::Bad => "bad",
        Step::Skip => "skip",
    };
    eprintln!(
        "check: {word} (exit {}) — the working tree against {}: {why}",
        step.code(),
        args.against
    );
    Ok(step.code())
}

/// The verdict of the judged figure (none: the plan's main one) at a point.
pub(super) fn judged(
    v: &PointVerdicts,
    figure: Option<CheckFigure>,
) -> Option<crate::analysis::verdicts::Verdict> {
    match figure {
        None => v.main().cloned(),
        Some(f) => v
            .get(match f {
                CheckFigure::CpuPerRequest => Figure::CpuPerRequest,
                CheckFigure::Throughput => Figure::Throughput,
                CheckFigure::P50 => Figure::P50,
                CheckFigure::P99 => Figure::P99,
            })
            .cloned(),
    }
}

/// The step the verdicts of the working tree against the ref say: bad when a point reads
/// *different* and worse on the judged figure, skip when one is still inconclusive (or
/// none was judged), else good; and why, in words.
fn judge(verdicts: &[PointVerdicts], figure: Option<CheckFigure>) -> (Step, String) {
    let pick = |v: &PointVerdicts| judged(v, figure);
    let mine: Vec<(String, crate::analysis::verdicts::Verdict)> = verdicts
        .iter()
        .filter(|v| v.contender == CURRENT)
        .filter_map(|v| Some((v.point.to_string(), pick(v)?)))
        .collect();
    if mine.is_empty() {
        return (Step::Skip, "no paired verdict to judge".into());
    }
    let worse = |x: &crate::analysis::verdicts::Verdict| match x.figure {
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
