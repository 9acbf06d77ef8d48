//! The drivers of what runs builds and paired runs over commits (docs/architecture.md): `check`
//! (the working tree against a ref), `bisect` (a search over a range), a history step's
//! confirmation and its culprit, `run --record` and `history backfill` — the nightly's loop is
//! these, called the same way from `bakeoff run`, `bisect`, `check`, `history detect
//! --confirm --bisect` and the workflows `bakeoff ci` writes. `cli/` parses their flags into
//! the requests here and prints what they return; each driver says its progress on stderr as
//! it goes, as the runner's terminal reporter does.

use std::io::IsTerminal as _;
use std::path::Path;

use crate::analysis::verdicts::{Figure, PointVerdicts, Verdict};
use crate::report;
use crate::runner;

pub mod backfill;
pub mod bisect;
pub mod check;
pub mod confirm;
mod culprit;
pub mod record;

/// The paired run of `check`, `bisect`, a confirmation and a backfilled night: the plan cut as
/// `opts` says, given more repetitions where a verdict is unsettled (within the budget), what
/// it left swept, its reports written; the results and the paired verdicts they read.
pub fn run_cut(
    plan: &Path,
    mut opts: runner::RunOptions,
) -> anyhow::Result<(runner::Finished, Vec<PointVerdicts>)> {
    opts.unsettled = Some(runner::Unsettled::new(
        crate::analysis::settle::unsettled,
        crate::analysis::settle::resized,
    ));
    let mut rep = report::terminal::Terminal::new(std::io::stderr().is_terminal());
    let done = runner::run(Some(plan), &opts, &mut rep);
    crate::sys::children::sweep();
    let done = done?;
    let analysis = report::analysis::Analysis::of(&done.results);
    report::export::write_all(&done.dir, &analysis)?;
    let verdicts = analysis.verdicts.clone();
    Ok((done, verdicts))
}

/// The verdict of the judged figure (none: the plan's main one) at a point.
pub fn judged(v: &PointVerdicts, figure: Option<Figure>) -> Option<Verdict> {
    match figure {
        None => v.main().cloned(),
        Some(f) => v.get(f).cloned(),
    }
}

/// A figure as `--figure` and a bisection's record spell it: `cpu-per-request`,
/// `throughput`, `p50`, `p99`.
pub fn figure_name(f: Figure) -> String {
    f.key().replace('_', "-")
}

/// The figure `name` spells ([`figure_name`], or its key with underscores), of those a
/// check or bisection can judge.
pub fn figure_named(name: &str) -> Option<Figure> {
    let key = name.trim().to_ascii_lowercase().replace('-', "_");
    [
        Figure::CpuPerRequest,
        Figure::Throughput,
        Figure::P50,
        Figure::P99,
    ]
    .into_iter()
    .find(|f| f.key() == key)
}

/// A commit id as the drivers print it and name folders by.
pub(crate) fn short(id: &str) -> &str {
    crate::units::prefix(id, 10)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_figure_reads_back_as_it_is_written() {
        for f in [
            Figure::CpuPerRequest,
            Figure::Throughput,
            Figure::P50,
            Figure::P99,
        ] {
            assert_eq!(figure_named(&figure_name(f)), Some(f));
            assert_eq!(figure_named(f.key()), Some(f));
        }
        assert_eq!(figure_named("cpu-per-item"), None);
        assert_eq!(figure_named("p90"), None);
    }
}
