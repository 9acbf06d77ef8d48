//! A contender's start for a repetition: fresh state, launch, readiness and start-up timing,
//! its compat answers in repetition 1, and a what-if variant's forcing — recorded in its run.

use super::ctx::Ctx;
use super::events::Reporter;
use super::live::{self, save, Live};
use crate::contender::{self, Launch};
use crate::results::{self, Results, Status};

/// Starts contender `ci` for a repetition and records its start-up (and, in repetition 1,
/// its compat answers). `None` when it did not start at all (recorded as failed); otherwise
/// the caller must [`Live::finish`] it, whether it became ready or not.
pub(super) fn start(
    ctx: &Ctx,
    ci: usize,
    repetition: u32,
    block: Option<u32>,
    results: &mut Results,
    rep: &mut dyn Reporter,
) -> anyhow::Result<Option<Live>> {
    let c = &ctx.plan.contenders[ci];
    let prefix = format!("{}.r{repetition}", contender::slug(&c.name));
    let state = ctx.dir.join("state").join(&prefix);
    let _ = std::fs::remove_dir_all(&state);
    let idx = live::open_record(ctx, ci, repetition, block, results)?;
    let launch = Launch {
        contender: c,
        state: state.clone(),
        logs: ctx.dir.join("logs"),
        log_prefix: prefix,
        cpus: ctx.contender_cpus.clone(),
        log_cpus: ctx.log_cpus(),
        log_limit: ctx.plan.log_limit,
        protos: ctx.protos,
        cancel: ctx.cancel.clone(),
    };
    let mut ticks0 = crate::sys::cpu_ticks();
    let Some(mut running) = launched(ctx, &launch, idx, results, rep)? else {
        return Ok(None);
    };
    let mut ready = running.wait_ready(ctx.rt);
    // A member that exited before it was ready, leaving a port of its in another process's
    // hands, lost the race for a port picked free: it is started once more on fresh ports.
    let taken = match &ready {
        Err((None, contender::ProbeError::Exited(_))) => running.port_taken(),
        _ => None,
    };
    if let Some(port) = taken {
        ticks0 = crate::sys::cpu_ticks();
        let Some(again) = relaunched(ctx, &launch, running, port, idx, results, rep)? else {
            return Ok(None);
        };
        running = again;
        ready = running.wait_ready(ctx.rt);
    }
    results.runs[idx].logs = running
        .logs
        .iter()
        .map(|l| l.strip_prefix(ctx.dir).unwrap_or(l).display().to_string())
        .collect();
    let mut endpoints = Vec::new();
    match ready {
        Ok(s) => {
            let startup = startup_of(ctx, &s, &state, &ticks0, &running);
            rep.contender_ready(&c.name, &startup);
            results.runs[idx].startup = Some(startup);
            save(ctx.dir, results)?;
            // Parsed and resolved once; every client of this repetition uses them.
            match crate::client::endpoints(&running.endpoints) {
                Ok(eps) => {
                    if repetition == 1 && !ctx.plan.compat.is_empty() {
                        super::answers::compat(ctx, &eps, &state, results, idx, rep)?;
                        super::answers::member_references(ctx, &running, &state, results, rep)?;
                    }
                    endpoints = eps;
                }
                Err(e) => live::fail(&mut results.runs[idx], format!("{e:#}"), rep),
            }
        }
        Err((first, e)) => never_ready(&mut results.runs[idx], &c.name, first, e, rep),
    }
    let forcing = force(c, &running, !endpoints.is_empty(), rep);
    Ok(Some(Live {
        ci,
        idx,
        running,
        endpoints,
        state,
        leader: None,
        forcing,
    }))
}

/// The contender launched (not yet ready), or `None` when it did not start at all: its run
/// recorded as failed (interrupted, if Ctrl-C cut a setup command short) and saved.
fn launched(
    ctx: &Ctx,
    launch: &Launch,
    idx: usize,
    results: &mut Results,
    rep: &mut dyn Reporter,
) -> anyhow::Result<Option<contender::Running>> {
    match contender::start(launch) {
        Ok(r) => Ok(Some(r)),
        Err(e) => {
            let run = &mut results.runs[idx];
            // A setup command cut short by Ctrl-C is redone on --resume, not a failure.
            run.status = if ctx.cancel.is_cancelled() {
                Status::Interrupted
            } else {
                Status::Failed
            };
            run.error = Some(format!("did not start: {e}"));
            rep.contender_failed(&launch.contender.name, &e.to_string());
            let _ = std::fs::remove_dir_all(&launch.state);
            save(ctx.dir, results)?;
            Ok(None)
        }
    }
}

/// The contender stopped and launched once more on fresh ports, its `port` having been taken
/// by another process before the member bound it — said in a warning — or `None` as
/// [`launched`].
fn relaunched(
    ctx: &Ctx,
    launch: &Launch,
    running: contender::Running,
    port: u16,
    idx: usize,
    results: &mut Results,
    rep: &mut dyn Reporter,
) -> anyhow::Result<Option<contender::Running>> {
    let problem = format!(
        "port {port} was taken by another process before the contender bound it; started again on fresh ports"
    );
    rep.warning(&format!("{}: {problem}", launch.contender.name));
    let run = results.runs[idx].id.clone();
    results
        .warnings
        .push(results::Warning::Stop { run, problem });
    let _ = running.stop();
    let _ = std::fs::remove_dir_all(&launch.state);
    launched(ctx, launch, idx, results, rep)
}

/// A what-if variant: the option forced on its listening sockets once it is ready (after
/// its compat answers, before any load), then on each connection before load is sent.
fn force(
    c: &crate::plan::Contender,
    running: &contender::Running,
    ready: bool,
    rep: &mut dyn Reporter,
) -> Option<results::Forcing> {
    match &c.variant {
        Some(v) if v.what == crate::plan::WhatIf::NoDelay && ready => {
            let mut w = results::Forcing::nodelay();
            super::live::count_forced(Some(&mut w), &running.force_nodelay(false));
            if !w.took() {
                let why = w.problems.join("; ");
                rep.warning(&format!(
                    "{}: what-if nodelay: nothing forced: {why}",
                    c.name
                ));
            }
            Some(w)
        }
        _ => None,
    }
}

/// A contender that never became ready (or whose ready condition failed after its first
/// answer): failed, or interrupted by Ctrl-C.
fn never_ready(
    run: &mut results::Run,
    name: &str,
    first: Option<std::time::Duration>,
    e: contender::ProbeError,
    rep: &mut dyn Reporter,
) {
    let text = match first {
        Some(f) => format!("answered after {f:.1?} but its ready condition failed: {e}"),
        None => format!("never became ready: {e}"),
    };
    run.status = if matches!(e, contender::ProbeError::Interrupted) {
        Status::Interrupted
    } else {
        Status::Failed
    };
    run.error = Some(text.clone());
    rep.contender_failed(name, &text);
}

/// What a start-up measured, from the probes' timings and the contender's cost so far.
fn startup_of(
    ctx: &Ctx,
    s: &contender::Startup,
    state: &std::path::Path,
    ticks0: &[Option<crate::sys::CpuTicks>],
    running: &contender::Running,
) -> results::Startup {
    results::Startup {
        first_response_s: s.first_response.as_secs_f64(),
        ready_s: s.ready.as_secs_f64(),
        disk_after_start_bytes: contender::usage::disk_usage(state),
        steal: crate::sys::steal_share(ticks0, &crate::sys::cpu_ticks(), &ctx.busy_cpus()),
        // On the scheduler's clock (nanoseconds): a start-up of a few milliseconds is below
        // the sampled ticks' 10 ms.
        cpu_s: Some(running.cost().cpu_ns as f64 / 1e9),
        first_response_resolution_s: Some(s.resolution.as_secs_f64()),
        members: if s.members.len() > 1 {
            s.members
                .iter()
                .map(|m| results::MemberStartup {
                    member: m.name.clone(),
                    started_s: m.started.as_secs_f64(),
                    first_response_s: m.first_response.as_secs_f64(),
                })
                .collect()
        } else {
            Vec::new()
        },
    }
}
