//! `run --record` and a backfilled night (docs/history.md): a finished results folder
//! recorded in the history, said as it is.

use std::path::Path;

use anyhow::Context as _;

use crate::history::{self, Store};

/// Records the finished results folder `dir` in the history; says what it recorded.
pub fn record_run(dir: &Path, flag: Option<&Path>) -> anyhow::Result<()> {
    record_at(dir, flag, None)
}

/// As [`record_run`], with `commit` for the contenders that name none.
pub fn record_at(
    dir: &Path,
    flag: Option<&Path>,
    commit: Option<&crate::build::history::Details>,
) -> anyhow::Result<()> {
    let path = history::store::path(flag);
    let results = crate::results::Results::load(dir)?;
    if results.smoke {
        eprintln!(
            "history: `{}` is a --smoke run, not for comparing: not recorded",
            dir.display()
        );
        return Ok(());
    }
    let analysis = crate::report::analysis::Analysis::of(&results);
    let mut store = Store::open(&path)
        .map_err(|e| history::store::explain(e, &path))
        .with_context(|| {
        format!(
            "the run's results are kept in `{}`; record them later with `bakeoff history import {0}`",
            dir.display()
        )
    })?;
    let cancel = crate::cancel::Cancel::new();
    let got = history::record::record(
        &mut store,
        &results,
        dir,
        &analysis.verdicts,
        commit,
        &cancel,
    )?;
    match got.new {
        true => eprintln!(
            "history: recorded run {} ({}, {}) in {}",
            got.run,
            crate::units::count(got.figures as u64, "figure"),
            crate::units::count(got.verdicts as u64, "verdict"),
            path.display()
        ),
        false => eprintln!(
            "history: `{}` is recorded already (run {}) in {}",
            dir.display(),
            got.run,
            path.display()
        ),
    }
    Ok(())
}
