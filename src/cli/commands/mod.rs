//! What each command does with its checked arguments: call into the library, print, and
//! turn the outcome into an exit code. Signal handling for the long-running commands.

use std::io::IsTerminal as _;

use anyhow::bail;

use super::*;
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering::Relaxed};

use crate::cancel::Cancel;
use crate::load;
use crate::report;
use crate::runner;
mod bisect;
mod cache;
mod check;
mod ci;
mod history;
mod offline;
pub(crate) use crate::drive::record::record_run;
pub(crate) use bisect::run_bisect;
pub(crate) use cache::run_cache;
pub use check::mistake_code;
pub(crate) use check::run_check;
pub(crate) use ci::run_ci;
pub(crate) use history::run_history;
pub(crate) use offline::*;

pub(super) fn run_load(args: &LoadArgs) -> anyhow::Result<u8> {
    let cfg = args.config()?;
    warn_if_too_many_clients(cfg.clients());
    // The processes a what-if may change, checked before anything is sent.
    let forced_pids = match args.pid.filter(|_| args.what_if.is_some()) {
        Some(pid) => Some((
            pid,
            crate::contender::nodelay::with_children(pid)
                .map_err(|e| anyhow::anyhow!("--pid: {e}"))?,
        )),
        None => None,
    };
    let cfg = cfg.cancelled_by(install_interrupt_handler());
    let client = args.target.build(false)?;
    let mut bar = report::progress::Bar::new(std::io::stderr().is_terminal());
    let mut progress = |p| {
        bar.update(p);
        load::Flow::Continue
    };
    let result = match forced_pids {
        None => client.run(&cfg, &mut progress),
        Some((pid, pids)) => 'forced: {
            use crate::contender::nodelay;
            let port = args.target.call()?.1.addr.port();
            let what = format!("pid {pid}");
            let mut forced = nodelay::force(&pids, &[port], false, &what);
            let mut session = match client.open(&cfg) {
                Ok(session) => session,
                Err(e) => break 'forced Err(e),
            };
            // Once the server has accepted what the load opened (2 s at most).
            nodelay::wait_accepted(
                &pids,
                &[port],
                cfg.clients(),
                std::time::Duration::from_secs(2),
            );
            forced.merge(nodelay::force(&pids, &[port], true, &what));
            eprintln!("bakeoff: what-if nodelay: {}", forced.summary());
            if forced.sockets.is_empty() {
                bail!(
                    "--what-if nodelay: nothing was forced, so nothing would be measured: {}",
                    forced.problems.join("; ")
                );
            }
            session.run(args.stop(), args.warmup(), &mut progress)
        }
    };
    bar.finish();
    let result = match result {
        // Ctrl-C while connecting: no result to print.
        Err(e @ load::LoadError::Interrupted) => {
            eprintln!("bakeoff: {e}");
            return Ok(130);
        }
        r => r?,
    };
    if args.json {
        emit(&format!("{}\n", serde_json::to_string_pretty(&result)?))?;
    } else {
        emit(&report::load_summary::render(&result))?;
    }
    if result.interrupted {
        return Ok(130);
    }
    match load_verdict(&result, args.fail_on_error, args.max_failures) {
        Some(why) => {
            eprintln!("bakeoff: {why}");
            Ok(2)
        }
        None => Ok(0),
    }
}

/// Why `bakeoff load` exits 2, if it does: no call succeeded; or, as asked, any call failed
/// or more than the given share did.
pub(super) fn load_verdict(
    r: &crate::load::LoadResult,
    fail_on_error: bool,
    max_failures: Option<f64>,
) -> Option<String> {
    let share = r.failures as f64 / r.requests.max(1) as f64;
    if r.successes == 0 {
        let unfinished = if r.unfinished > 0 {
            format!(", {} unfinished at the deadline", r.unfinished)
        } else {
            String::new()
        };
        Some(format!(
            "no call succeeded ({} failed{unfinished})",
            r.failures
        ))
    } else if fail_on_error && r.failures > 0 {
        Some(format!(
            "{} of {} calls failed (--fail-on-error)",
            r.failures, r.requests
        ))
    } else {
        max_failures.filter(|m| share > *m).map(|max| {
            format!(
                "{:.2}% of calls failed, more than --max-failures {:.2}%",
                share * 100.0,
                max * 100.0
            )
        })
    }
}

/// Says before a run when its connections cannot all be opened under the open-files limit
/// (raised to the hard limit first): otherwise some clients fail with EMFILE unexplained.
pub(super) fn warn_if_too_many_clients(clients: usize) {
    let limit = crate::sys::raise_open_files_limit();
    let need = clients as u64 + crate::sys::SPARE_FDS;
    if need > limit {
        eprintln!(
            "bakeoff: warning: {clients} clients need about {need} open files, more than this \
             process may have ({limit}, the hard limit of `ulimit -n`); the clients past it \
             will fail to connect (EMFILE)"
        );
    }
}

/// Exit codes of `bakeoff run`: 0 all went well, 2 a contender or a scenario point failed
/// (what was measured is kept), 3 compat cases differ and `--fail-on-diff` was given,
/// 130 interrupted.
pub(super) fn run_plan(args: &RunArgs) -> anyhow::Result<u8> {
    let cancel = install_handler(on_interrupt_run, 0);
    // Contenders inherit it too; many clients need it raised.
    crate::sys::raise_open_files_limit();
    // What a member that kills its own guard leaves re-parents here, not to init.
    crate::sys::children::adopt();
    let opts = runner::RunOptions {
        out: args.out.clone(),
        resume: args.resume.clone(),
        smoke: args.smoke,
        repetitions: args.repetitions,
        only: args.only.clone(),
        scenarios: args.scenarios.clone(),
        points: Vec::new(),
        shard: args.shard()?,
        what_if: args.what_if.iter().map(|&w| w.into()).collect(),
        profile: args.profile,
        refs: args.refs.clone(),
        rebuild: args.rebuild,
        budget: args.budget.map(|b| b.0),
        cut: None,
        cancel,
        unsettled: Some(runner::Unsettled::new(
            crate::analysis::settle::unsettled,
            crate::analysis::settle::resized,
        )),
    };
    let mut rep = report::terminal::Terminal::new(std::io::stderr().is_terminal());
    let done = runner::run(args.plan.as_deref(), &opts, &mut rep);
    crate::sys::children::sweep();
    let done = done?;
    let code = finish_run(&done, args.gates())?;
    let wanted = crate::history::record::Wants::of(&done.dir).record;
    if (args.record || wanted) && code != 130 {
        record_run(&done.dir, args.history.as_deref())?;
    }
    Ok(code)
}

pub(super) fn run_demo(args: &DemoArgs) -> anyhow::Result<u8> {
    let cancel = install_handler(on_interrupt_run, 0);
    crate::sys::children::adopt();
    let mut rep = report::terminal::Terminal::new(std::io::stderr().is_terminal());
    let done = crate::demo::run(args.out.clone(), cancel, &mut rep);
    crate::sys::children::sweep();
    finish_run(&done?, Gates::default())
}

pub(super) fn run_report(dir: &std::path::Path) -> anyhow::Result<u8> {
    // The folder, or its results.json (as `compare` takes it).
    let dir = match dir.file_name() {
        Some(f) if f == "results.json" && dir.is_file() => dir.parent().unwrap_or(dir),
        _ => dir,
    };
    let r = crate::results::Results::load(dir)?;
    let analysis = report::analysis::Analysis::of(&r);
    let files = report::export::write_all(dir, &analysis)?;
    emit(&report::markdown::render(&analysis))?;
    eprintln!(
        "reports: {}",
        files
            .iter()
            .map(|f| f.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
    report::export::github_step_summary(&analysis, &[], &[])?;
    Ok(0)
}

/// Exit codes of `bakeoff merge`: 0, 2 when a contender or point failed in some shard, 3 on
/// `--fail-on-diff` with a must-match case differing, 4 on `--fail-on-regression`.
pub(super) fn run_merge(args: &MergeArgs) -> anyhow::Result<u8> {
    let merged = crate::results::merge::merge_dirs(&args.dirs, &args.out)?;
    let shards = merged.shards.as_ref().map_or(0, |s| s.of);
    eprintln!(
        "merged {} into {}",
        report::count(u64::from(shards), "shard"),
        args.out.display()
    );
    let done = runner::Finished {
        dir: args.out.clone(),
        results: merged,
    };
    let code = finish_run(&done, args.gates())?;
    if args.record || crate::history::record::Wants::of(&done.dir).record {
        record_run(&done.dir, args.history.as_deref())?;
    }
    Ok(code)
}

/// The gates of `run` and `merge`: `--fail-on-diff`, `--fail-on-regression PCT`,
/// `--fail-unless-equivalent PCT` (percentages).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Gates {
    pub diff: bool,
    pub regression: Option<f64>,
    pub equivalent: Option<f64>,
    /// A shard's run (`run --shard`): a part of the verdict, which the merge gives, so it
    /// writes nothing into a GitHub step summary.
    pub part: bool,
}

/// What the gates read: each one's line (said whether it passed or not, on stderr and in a
/// GitHub step summary), the regressions past `--fail-on-regression`, the points not proven
/// equivalent within `--fail-unless-equivalent`.
struct Read {
    said: Vec<String>,
    worse: Vec<String>,
    unequal: Vec<String>,
}

fn read_gates(
    done: &runner::Finished,
    analysis: &report::analysis::Analysis,
    gates: Gates,
) -> Read {
    let mut said = Vec::new();
    let worse = gates.regression.map_or(Vec::new(), |pct| {
        let gate = crate::analysis::gates::RegressionGate::of(&analysis.verdicts, pct / 100.0);
        said.push(gate.line());
        gate.tripped
    });
    for w in &worse {
        eprintln!("regression: {w}");
    }
    let unequal = gates.equivalent.map_or(Vec::new(), |pct| {
        let mut out = crate::analysis::gates::not_equivalent(&analysis.verdicts, pct / 100.0);
        out.extend(crate::analysis::gates::unverdicted(
            &done.results,
            &analysis.verdicts,
        ));
        said.push(crate::analysis::gates::equivalence_line(
            &analysis.verdicts,
            out.len(),
            pct / 100.0,
        ));
        out
    });
    for u in &unequal {
        eprintln!("not equivalent: {u}");
    }
    Read {
        said,
        worse,
        unequal,
    }
}

/// Prints the summary, writes the reports and says where the results are; the exit code of
/// `run`, `demo` and `merge`: 2 a failure, 3 a compat difference, 4 a paired verdict
/// different and worse than `regression` percent, 5 a main figure not proven equivalent
/// within `equivalent` percent (the first that applies).
pub(super) fn finish_run(done: &runner::Finished, gates: Gates) -> anyhow::Result<u8> {
    let mut analysis = report::analysis::Analysis::of(&done.results);
    // The gates first: their lines open the reports.
    let Read {
        said,
        worse,
        unequal,
    } = read_gates(done, &analysis, gates);
    analysis.gates = said.clone();
    emit(&report::markdown::render(&analysis))?;
    report::export::write_all(&done.dir, &analysis)?;
    let results = done.dir.join("results.json");
    eprintln!(
        "report: {} (and report.html beside it)",
        done.dir.join("report").join("report.md").display()
    );
    eprintln!("results: {}", results.display());
    if done.results.status == crate::results::Status::Interrupted {
        eprintln!(
            "interrupted; continue with: bakeoff run --resume {}",
            done.dir.display()
        );
        return Ok(130);
    }
    let failed = done.results.runs.iter().any(|r| {
        r.status == crate::results::Status::Failed || r.points.iter().any(|p| p.error.is_some())
    }) || analysis
        .findings
        .iter()
        .any(|f| matches!(f, crate::diagnose::Finding::MostCallsFailed { .. }))
        // A contender whose build failed did not run.
        || done
            .results
            .contenders
            .iter()
            .any(|c| c.build_failed());
    let differs = gates.diff && analysis.compat.iter().any(|c| c.differences > 0);
    for line in &said {
        eprintln!("{line}");
    }
    // The verdict first: the gates' lines, what tripped them, then the report — once, by
    // the merge: a shard's part of a run is not the verdict.
    let mut tripped: Vec<String> = worse.iter().map(|w| format!("regression: {w}")).collect();
    tripped.extend(unequal.iter().map(|u| format!("not equivalent: {u}")));
    if !gates.part {
        report::export::github_step_summary(&analysis, &said, &tripped)?;
    }
    report::export::verdict(&done.dir, &said, &tripped)?;
    if let Some(hint) = gates.equivalent.and_then(|pct| {
        crate::analysis::gates::settle_hint(&done.results, &analysis.verdicts, pct / 100.0)
    }) {
        eprintln!("hint: {hint}");
    }
    Ok(if failed {
        2
    } else if differs {
        3
    } else if !worse.is_empty() {
        4
    } else if !unequal.is_empty() {
        5
    } else {
        0
    })
}

/// Writes to stdout, returning errors (a closed pipe) instead of panicking like `println!`.
pub(super) fn emit(text: &str) -> std::io::Result<()> {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()
}

/// The one static left: where a signal handler finds the running command's [`Cancel`] (a
/// handler can reach nothing else). Set by [`install_handler`], which makes the value.
static SIGNALLED: AtomicPtr<AtomicBool> = AtomicPtr::new(std::ptr::null_mut());

/// Sets the command's cancellation; whether it was set before (a second signal).
fn signal_cancel() -> bool {
    let flag = SIGNALLED.load(Relaxed);
    // SAFETY: the pointer is null or points at a flag whose `Cancel` is kept alive for the
    // rest of the process (`install_handler` leaks one clone); an atomic swap is
    // async-signal-safe.
    !flag.is_null() && unsafe { (*flag).swap(true, Relaxed) }
}

pub(super) extern "C" fn on_interrupt(_: libc::c_int) {
    signal_cancel();
}

/// During `bakeoff run`: the first Ctrl-C or SIGTERM stops after the step in progress and
/// stops the contenders properly; a second one (GNU `timeout` sends two) kills the
/// contenders' process groups at once, and the run has three seconds to record their exits
/// and the interruption in results.json before an alarm ends the process anyway.
pub(super) extern "C" fn on_interrupt_run(_: libc::c_int) {
    if signal_cancel() {
        crate::contender::kill_all_live();
        // SAFETY: sigaction and alarm are async-signal-safe; the handler only calls _exit.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_alarm as *const () as usize;
            libc::sigaction(libc::SIGALRM, &sa, std::ptr::null_mut());
            libc::alarm(3);
        }
    }
}

extern "C" fn on_alarm(_: libc::c_int) {
    // SAFETY: _exit is async-signal-safe.
    unsafe { libc::_exit(130) }
}

/// First Ctrl-C or SIGTERM: stop sending, finish what is in flight, report what was
/// measured. A second one kills as usual (SA_RESETHAND).
pub(super) fn install_interrupt_handler() -> Cancel {
    install_handler(on_interrupt, libc::SA_RESETHAND)
}

/// Makes the command's cancellation and has SIGINT and SIGTERM set it through `handler`.
pub(super) fn install_handler(handler: extern "C" fn(libc::c_int), flags: libc::c_int) -> Cancel {
    let cancel = Cancel::new();
    // One clone lives as long as the process: a signal may come at any time.
    std::mem::forget(cancel.clone());
    SIGNALLED.store(cancel.as_ptr().cast_mut(), Relaxed);
    // SAFETY: the handlers only touch atomics and call async-signal-safe functions.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = handler as *const () as usize;
        sa.sa_flags = flags;
        libc::sigaction(libc::SIGINT, &sa, std::ptr::null_mut());
        libc::sigaction(libc::SIGTERM, &sa, std::ptr::null_mut());
    }
    cancel
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    #[test]
    fn inputs_are_named_by_what_tells_them_apart() {
        let names =
            |ps: &[&str]| super::short_names(&ps.iter().map(PathBuf::from).collect::<Vec<_>>());
        assert_eq!(
            names(&[
                "/tmp/x/run0/out/results.json",
                "/tmp/x/run1/out/results.json"
            ]),
            ["run0", "run1"]
        );
        assert_eq!(names(&["old.txt", "new.txt"]), ["old.txt", "new.txt"]);
        assert_eq!(
            names(&["a/bench.txt", "a/b/bench.txt"]),
            ["a/bench.txt", "a/b/bench.txt"]
        );
        assert_eq!(names(&["r.json"]), ["r.json"]);
        assert_eq!(names(&["same.txt", "same.txt"]), ["same.txt", "same.txt"]);
    }
}
