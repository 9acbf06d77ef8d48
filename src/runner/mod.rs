//! The bake-off, in floors (docs/architecture.md): this file only runs it — a fresh or
//! resumed results folder, the one compiled `.proto` set, the pinning, then the order floor
//! (`order.rs`: blocks of contenders, one loop) over the point floor (`point.rs`: one point
//! whole or in paired rounds, `rounds.rs` behind the `seam.rs` trait; capacity searches and
//! ramps in `ramps.rs`, what-if and profiles as hooks) over the live floor (`live.rs`,
//! `startup.rs`, `answers.rs`: a started contender and the only writer of its run record).
//! `results.json` is written after every step; a contender that fails is recorded as
//! failed and the others go on; Ctrl-C stops after the step in progress.

mod answers;
mod ctx;
pub mod events;
mod live;
mod measure;
mod more;
mod options;
mod order;
mod point;
mod preflight;
mod profiles;
mod ramps;
mod rounds;
mod seam;
mod setup;
mod sources;
mod startup;
mod whatif;

use std::path::Path;

use anyhow::Context as _;

use crate::client::Descriptors;
use crate::plan::Plan;
use crate::results::{self, Status};
use ctx::Ctx;
pub use events::Reporter;
use live::save;
pub use options::{Cut, Finished, RunOptions, Unsettled};
pub use rounds::main_pairs;
use setup::{ask_references, fresh, pinning, resume, schedule, Opened};

/// Runs the plan at `plan_path` (or resumes `opts.resume`).
pub fn run(
    plan_path: Option<&Path>,
    opts: &RunOptions,
    rep: &mut dyn Reporter,
) -> anyhow::Result<Finished> {
    // The `.proto` set the checks compiled is the one every client and probe of the run
    // shares.
    let Opened {
        mut plan,
        dir,
        mut results,
        protos,
    } = match &opts.resume {
        Some(dir) => resume(dir, &opts.cancel)?,
        None => fresh(plan_path.context("give a plan file")?, opts)?,
    };
    let (contender_cpus, load_cpus) = pinning(&plan, &mut results.warnings);
    for w in &results.warnings {
        rep.warning(&w.to_string());
    }
    let here = here(&mut results, opts, (&contender_cpus, &load_cpus));
    save(&dir, &results)?;

    // Built once, before anything is measured; a contender whose build failed does not run.
    let unbuilt = sources::build_all(&mut plan, &dir, &mut results, opts, rep)?;
    let plan = plan;
    let (shard, schedule, blocks) = what_is_left(&plan, &results, &unbuilt);
    // What is left to start: all of it, or what a resumed run has not done yet.
    rep.run_started(&dir, blocks.iter().map(|b| b.members.len()).sum());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    if results.compat_reference.is_empty() {
        ask_references(&plan, &protos, &rt, &mut results, rep);
        save(&dir, &results)?;
    }
    // bakeoff's own threads (probes, the sampler) stay off the contenders' CPUs; contenders
    // that are not pinned get every CPU back.
    let allowed = crate::sys::allowed_cpus();
    if let Some(l) = &load_cpus {
        crate::sys::pin_current_thread(l).context("pinning bakeoff to the load CPUs")?;
    }
    let ctx = Ctx {
        plan: &plan,
        dir: &dir,
        protos: &protos,
        contender_cpus: contender_cpus.or_else(|| Some(allowed.clone())),
        load_cpus: load_cpus.unwrap_or_default(),
        rt: &rt,
        here,
        shard,
        cancel: opts.cancel.clone(),
    };
    let measuring = std::time::Instant::now();
    let mut served = order::serve_all(&ctx, &blocks, schedule.len(), &mut results, rep);
    if served.is_ok() {
        let first_s = measuring.elapsed().as_secs_f64();
        served = more::second_stage(&ctx, &schedule, opts, first_s, &mut results, rep);
    }
    let _ = crate::sys::pin_current_thread(&allowed);
    served?;
    results.status = if opts.cancel.is_cancelled() {
        Status::Interrupted
    } else {
        Status::Complete
    };
    results.finished_at = Some(results::now_utc());
    save(&dir, &results)?;
    Ok(Finished { dir, results })
}

/// The run's shard, its schedule (repetition, contender) without the contenders that did
/// not build, and the blocks still to serve: all of them, or what a resumed run has not done.
fn what_is_left(
    plan: &Plan,
    results: &results::Results,
    unbuilt: &[usize],
) -> (Option<results::Shard>, Vec<(u32, usize)>, Vec<order::Block>) {
    let shard = results.shards.as_ref().and_then(|s| match s.have[..] {
        [k] => Some(results::Shard { k, n: s.of }),
        _ => None,
    });
    let mut schedule = schedule(plan, shard);
    schedule.retain(|(_, ci)| !unbuilt.contains(ci));
    let done = |repetition: u32, ci: usize| {
        let (of, variant) = plan.contenders[ci].runs_as();
        results
            .runs
            .iter()
            .any(|r| r.id.is(of, variant) && r.id.repetition == repetition)
    };
    let blocks = order::blocks(plan.order, &schedule, &done);
    (shard, schedule, blocks)
}

/// Where this invocation runs, detected before bakeoff pins itself, with the CPUs it pins
/// to: every repetition it runs records it. The top-level environment stays where the run
/// began (a resumed run keeps it).
fn here(
    results: &mut results::Results,
    opts: &RunOptions,
    (contender_cpus, load_cpus): (&Option<Vec<usize>>, &Option<Vec<usize>>),
) -> crate::results::env::Environment {
    let mut here = crate::results::env::Environment::detect();
    here.contender_cpus = contender_cpus.clone();
    here.load_cpus = load_cpus.clone();
    if opts.resume.is_none() {
        results.environment = here.clone();
    }
    here
}

/// Every check `run` makes before it starts anything (the plan itself, then the programs
/// and every client its scenarios need), for `bakeoff plan check`.
pub fn check_plan(
    path: &std::path::Path,
    refs: &[(String, String)],
) -> anyhow::Result<(Plan, Vec<String>)> {
    let plan = Plan::load(path)?
        .with_refs(refs)
        .map_err(anyhow::Error::msg)?;
    let protos = Descriptors::new(plan.protos.clone(), plan.includes.clone());
    // No handler: Ctrl-C ends bakeoff, and the guard of a git command (a fetch) with it.
    let resolved = preflight::check(&plan, &protos, &crate::cancel::Cancel::new())?;
    Ok((plan, resolved))
}
