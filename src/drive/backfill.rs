//! `history backfill` (docs/history.md, "Starting a history"): a range of a
//! contender's commits, each run and recorded as a nightly would have — with the plan's
//! reference beside each when it has one — so a new history starts with its past.

use std::path::{Path, PathBuf};

use anyhow::Context as _;

use super::record::record_run;
use super::run_cut;
use crate::cancel::Cancel;
use crate::runner;

/// What `backfill` is asked.
pub struct Backfill<'a> {
    pub plan: &'a Path,
    pub contender: &'a str,
    pub from: &'a str,
    pub to: &'a str,
    pub every: u32,
    pub out: Option<&'a Path>,
    pub history: Option<&'a Path>,
}

/// Runs and records every `every`-th commit from `from` to `to` (the newest always); 130
/// when interrupted, 2 when a commit could not be run or recorded, else 0.
pub fn backfill(b: &Backfill, cancel: &Cancel) -> anyhow::Result<u8> {
    let plan = crate::plan::Plan::load(b.plan)?;
    let source = plan
        .local_git(b.contender)
        .map_err(anyhow::Error::msg)?
        .source
        .context("a git source")?;
    let cache = crate::build::cache::root();
    let commits =
        crate::build::history::range(&source, b.from, b.to, &cache, cancel).map_err(|e| {
            anyhow::anyhow!("{}", e.replace("--good", "--from").replace("--bad", "--to"))
        })?;
    let every = b.every.max(1) as usize;
    let last = commits.len() - 1;
    let chosen: Vec<usize> = (0..=last)
        .filter(|k| k % every == 0 || *k == last)
        .collect();
    let root = match b.out {
        Some(d) => d.to_path_buf(),
        None => crate::build::results_dir(
            &crate::results::now_utc(),
            &format!("backfill-{}", plan.name),
        ),
    };
    eprintln!(
        "backfill: {} of the {} commits from {} to {}, one run each, recorded in {}",
        chosen.len(),
        commits.len(),
        crate::units::prefix(&commits[0].id, 10),
        crate::units::prefix(&commits[last].id, 10),
        crate::history::store::path(b.history).display()
    );
    let mut failed = 0;
    for (n, &k) in chosen.iter().enumerate() {
        if cancel.is_cancelled() {
            return Ok(130);
        }
        let c = &commits[k];
        eprintln!(
            "backfill: {} of {}: {} “{}”",
            n + 1,
            chosen.len(),
            c.short(),
            crate::units::printable(&c.subject)
        );
        let dir: PathBuf = root.join(format!("{:03}-{}", n + 1, c.short()));
        let opts = runner::RunOptions {
            out: Some(dir),
            refs: vec![(b.contender.to_string(), c.id.clone())],
            cancel: cancel.clone(),
            ..runner::RunOptions::default()
        };
        let recorded = run_cut(b.plan, opts).and_then(|(done, _)| {
            if done.results.status == crate::results::Status::Interrupted {
                return Ok(false);
            }
            record_run(&done.dir, b.history)?;
            Ok(true)
        });
        match recorded {
            Ok(true) => {}
            Ok(false) => return Ok(130),
            Err(e) => {
                failed += 1;
                eprintln!("backfill: {} was not recorded: {e:#}", c.short());
            }
        }
    }
    Ok(if failed > 0 { 2 } else { 0 })
}
