//! Why verdicts do not settle, named (issue 48): a busy loop pinned on the contenders' CPU is
//! found as contention (and a quiet CPU is not), and a contender made slow in one repetition
//! only is found as an odd repetition. One test, its phases in turn: a run of another test
//! on the same CPUs at the same time would be contention too.

mod common;

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use bakeoff::diagnose::{findings, Finding, Limits};
use bakeoff::results::Results;
use common::*;

/// Two demo servers side by side on CPU 1, the load on CPU 0; `second` is the second
/// contender's command.
fn plan(dir: &Path, repetitions: u32, second: &str) -> String {
    let exe = env!("CARGO_BIN_EXE_bakeoff");
    format!(
        r#"name = "contention"
repetitions = {repetitions}
baseline = "a"
cores = {{ contender = [1], load = [0] }}
paired = {{ slice = "50ms", max_rounds = 8 }}

[[contender]]
name = "a"
command = ["{exe}", "demo-server", "v2", "{{port}}", "{{state}}"]
ready = {{ http = "http://127.0.0.1:{{port}}/health", status = 200, timeout = "30s" }}

[[contender]]
name = "b"
command = {second}
ready = {{ http = "http://127.0.0.1:{{port}}/health", status = 200, timeout = "30s" }}

[[scenario]]
name = "get"
http = "GET /block/{{rand:0..10000}}"
clients = [1]
duration = "1s"
"#
    )
    .replace("{dir}", &dir.display().to_string())
}

fn found(dir: &Path, plan: &str) -> (Vec<Finding>, String) {
    let run = run_plan_env(dir, plan, &["--budget", "off"], None, &[]);
    assert!(run.output.status.success(), "{}", run.stderr());
    let r = Results::load(&run.out_dir).unwrap();
    let report = std::fs::read_to_string(run.out_dir.join("report/report.md")).unwrap();
    (findings(&r, Limits::default()), report)
}

/// A thread spinning on CPU `cpu` until dropped.
struct Spinner(Arc<AtomicBool>, Option<std::thread::JoinHandle<()>>);

impl Spinner {
    fn on(cpu: usize) -> Spinner {
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let t = std::thread::spawn(move || {
            // SAFETY: a CPU set on the stack, for this thread only.
            unsafe {
                let mut set: libc::cpu_set_t = std::mem::zeroed();
                libc::CPU_SET(cpu, &mut set);
                libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
            }
            while !s.load(Ordering::Relaxed) {
                std::hint::spin_loop();
            }
        });
        Spinner(stop, Some(t))
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
        if let Some(t) = self.1.take() {
            let _ = t.join();
        }
    }
}

#[test]
fn contention_and_an_odd_repetition_are_named_and_a_quiet_machine_is_not() {
    if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
        assert!(std::env::var_os("CI").is_none(), "CI needs two CPUs");
        return;
    }
    let exe = env!("CARGO_BIN_EXE_bakeoff");
    let same = format!(r#"["{exe}", "demo-server", "v2", "{{port}}", "{{state}}"]"#);
    let contention = |f: &[Finding]| {
        f.iter()
            .filter_map(|x| match x {
                Finding::Contention { others, .. } => Some(others.unwrap_or(0.0)),
                _ => None,
            })
            .collect::<Vec<f64>>()
    };

    // Quiet: nothing of ours on CPU 1. On a machine others are using, the finding is an
    // honest answer when it measured their work there (at least a tenth of CPU 1): then the
    // quiet case cannot be had, and is said to be skipped; a finding with no such work
    // behind it is a false one.
    let dir = TempDir::new("contention-quiet");
    let (f, _) = found(dir.path(), &plan(dir.path(), 2, &same));
    let quiet = contention(&f);
    if !quiet.is_empty() && quiet.iter().all(|others| *others >= 0.10) {
        eprintln!(
            "skipped: the quiet case — the machine was not quiet (other processes used CPU 1 for {:.0}% of their time): {f:?}",
            100.0 * quiet.iter().copied().fold(0.0, f64::max)
        );
    } else {
        assert!(quiet.is_empty(), "{f:?}");
    }

    // A busy loop on CPU 1: both contenders share it with the loop.
    let dir = TempDir::new("contention-busy");
    let (f, report) = {
        let _spin = Spinner::on(1);
        found(dir.path(), &plan(dir.path(), 2, &same))
    };
    let others = contention(&f);
    assert!(!others.is_empty(), "{f:?}");
    assert!(others.iter().all(|o| *o >= 0.10), "{others:?}");
    assert!(
        report.contains("other processes used its CPU 1 for"),
        "{report}"
    );

    // b made slow on its second start only (a fixed millisecond of work on every answer, ten times its own).
    let dir = TempDir::new("contention-odd");
    let slow = format!(
        r#"["sh", "-c", "n=$(cat {{dir}}/starts 2>/dev/null || echo 0); echo $((n + 1)) > {{dir}}/starts; w=0s; [ $n = 1 ] && w=1ms; exec {exe} demo-server v2 \"$0\" \"$1\" --work $w", "{{port}}", "{{state}}"]"#
    );
    let (f, report) = found(dir.path(), &plan(dir.path(), 3, &slow));
    let odd: Vec<&Finding> = f
        .iter()
        .filter(|x| matches!(x, Finding::OddRepetition { contender, .. } if contender == "b"))
        .collect();
    let [Finding::OddRepetition {
        repetition, factor, ..
    }] = odd[..]
    else {
        panic!("{f:?}")
    };
    assert_eq!(*repetition, 2, "{f:?}");
    assert!(*factor >= 3.0, "{f:?}");
    assert!(
        report.contains("b, get [clients=1]: repetition 2 served"),
        "{report}"
    );
}
