//! What bakeoff must never touch (issue 25, items 1, 3 and 4): `cleanup` and `--resume` kill
//! only what provably is a run's own — never a process that got a recorded PID later, never
//! PID 1, never from a folder that is not a results folder; `load --what-if nodelay --pid`
//! refuses PIDs 0 and 1; setup commands and `command` probes die with bakeoff.

mod common;

use std::os::unix::process::CommandExt as _;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::*;

/// A process that is not bakeoff's: `sleep` in a process group of its own, optionally
/// carrying an environment entry.
fn stranger(env: Option<(&str, &str)>) -> Child {
    let mut c = Command::new("sleep");
    c.arg("60")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0);
    if let Some((k, v)) = env {
        c.env(k, v);
    }
    c.spawn().unwrap()
}

fn start_ticks(pid: u32) -> u64 {
    bakeoff::sys::proc_stat(pid as i32).unwrap().start_ticks
}

fn alive(c: &mut Child) -> bool {
    c.try_wait().unwrap().is_none()
}

fn results_folder(dir: &Path) -> std::path::PathBuf {
    let out = dir.join("out");
    std::fs::create_dir_all(out.join("live")).unwrap();
    std::fs::write(out.join("results.json"), "{}").unwrap();
    out
}

fn cleanup(dir: &Path) -> (bool, String) {
    let o = bakeoff(&["cleanup", dir.to_str().unwrap()]);
    (
        o.status.success(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// A record naming a process group whose PID the kernel has since given to a stranger
/// (started after the recorded guard, as PID reuse produces): before, cleanup killed the
/// stranger; now it carries no mark of the run and is left alone. So is the exact process
/// when the record's mark is not in its environment, and records for PIDs 0 and 1.
#[test]
fn cleanup_leaves_a_reused_pid_alone() {
    let dir = TempDir::new("never-reused");
    let out = results_folder(dir.path());
    let mut reused = stranger(None);
    let mut unmarked = stranger(Some(("BAKEOFF_RUN", "someone-else")));
    let live = out.join("live");
    // The guard "started" a tick before the process that now has its PID.
    std::fs::write(
        live.join(reused.id().to_string()),
        format!("{}\n1-srv-1\n", start_ticks(reused.id()) - 1),
    )
    .unwrap();
    // The exact start, but another run's mark.
    std::fs::write(
        live.join(unmarked.id().to_string()),
        format!("{}\n1-srv-2\n", start_ticks(unmarked.id())),
    )
    .unwrap();
    // An old record (no mark) whose guard is long gone: nothing proves what is ours.
    let mut gone = Command::new("true").spawn().unwrap();
    gone.wait().unwrap();
    std::fs::write(live.join(gone.id().to_string()), "5\n").unwrap();
    // PID 0 is every kernel thread's group, PID 1 is init: never signalled.
    std::fs::write(live.join("0"), "0\n").unwrap();
    std::fs::write(live.join("1"), "0\n").unwrap();
    let (ok, err) = cleanup(&out);
    std::thread::sleep(Duration::from_millis(100));
    let (r, u) = (alive(&mut reused), alive(&mut unmarked));
    let _ = reused.kill();
    let _ = unmarked.kill();
    assert!(ok, "{err}");
    assert!(
        r,
        "cleanup killed a process that only reused a recorded PID: {err}"
    );
    assert!(u, "cleanup killed a process without the run's mark: {err}");
    assert!(err.contains("killed 0 processes"), "{err}");
    assert!(err.contains("left alone"), "{err}");
    assert!(!live.exists(), "the records are removed");
}

/// `cleanup` and `--resume` of a folder that is not a results folder kill nothing and say
/// so, even when it holds a record that matches a live process exactly.
#[test]
fn a_folder_that_is_not_results_is_refused() {
    let dir = TempDir::new("never-not-results");
    let out = dir.path().join("not-results");
    std::fs::create_dir_all(out.join("live")).unwrap();
    let tag = format!("{}-x-1", std::process::id());
    let mut ours = stranger(Some(("BAKEOFF_RUN", &tag)));
    std::fs::write(
        out.join("live").join(ours.id().to_string()),
        format!("{}\n{tag}\n", start_ticks(ours.id())),
    )
    .unwrap();
    let (ok, err) = cleanup(&out);
    assert!(!ok && err.contains("is not a results folder"), "{err}");
    let resume = bakeoff(&["run", "--resume", out.to_str().unwrap()]);
    let rerr = String::from_utf8_lossy(&resume.stderr);
    assert!(!resume.status.success(), "{rerr}");
    assert!(rerr.contains("results.json"), "{rerr}");
    std::thread::sleep(Duration::from_millis(100));
    let still = alive(&mut ours);
    let _ = ours.kill();
    assert!(
        still,
        "a folder that is not a results folder was cleaned: {err} / {rerr}"
    );
    let (ok, err) = cleanup(&dir.path().join("missing"));
    assert!(!ok && err.contains("does not exist"), "{err}");
}

/// After bakeoff and its guards are killed outright, a daemon that left its group with
/// `setsid` but still carries the run's mark is found by the mark the record keeps.
#[test]
fn cleanup_finds_a_marked_daemon_outside_its_group() {
    let dir = TempDir::new("never-daemon");
    let out = results_folder(dir.path());
    let tag = format!(
        "{}-daemon-{}",
        std::process::id(),
        start_ticks(std::process::id())
    );
    let mut daemon = stranger(Some(("BAKEOFF_RUN", &tag)));
    // The guard that recorded it is gone: a PID no process has.
    let mut gone = Command::new("true").spawn().unwrap();
    gone.wait().unwrap();
    std::fs::write(
        out.join("live").join(gone.id().to_string()),
        format!("1\n{tag}\n"),
    )
    .unwrap();
    let (ok, err) = cleanup(&out);
    std::thread::sleep(Duration::from_millis(100));
    let still = alive(&mut daemon);
    let _ = daemon.kill();
    assert!(ok, "{err}");
    assert!(!still, "the marked daemon survived cleanup: {err}");
    assert!(err.contains("killed 1 process "), "{err}");
}

/// `load --what-if nodelay --pid 0` (or 1) would walk every process on the machine: refused,
/// naming the flag, before anything is sent (nothing listens on port 1).
#[test]
fn what_if_refuses_pid_0_and_1() {
    for pid in ["0", "1", "-5"] {
        let o = bakeoff(&[
            "load",
            "--what-if",
            "nodelay",
            &format!("--pid={pid}"),
            "-n",
            "1",
            "http://127.0.0.1:1/",
        ]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "--pid {pid}: {err}");
        assert!(
            err.contains("--pid") && err.contains("every process descends from it"),
            "--pid {pid}: {err}"
        );
    }
    let mut gone = Command::new("true").spawn().unwrap();
    gone.wait().unwrap();
    let o = bakeoff(&[
        "load",
        "--what-if",
        "nodelay",
        "--pid",
        &gone.id().to_string(),
        "-n",
        "1",
        "http://127.0.0.1:1/",
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && err.contains("no process has pid"),
        "{err}"
    );
}

/// `kill -9` of bakeoff while a setup command runs, and while a `command` probe runs: the
/// command dies with it (each runs under a guard, as members do), and nothing carrying the
/// run's mark is left.
#[test]
fn setup_commands_and_command_probes_die_with_bakeoff() {
    for (what, contender) in [
        (
            "setup",
            r#"setup = [["sleep", "1000"]]
command = ["python3", "-m", "http.server", "{port}", "--bind", "127.0.0.1"]
ready = { http = "http://127.0.0.1:{port}/", timeout = "60s" }"#,
        ),
        (
            "probe",
            r#"command = ["python3", "-m", "http.server", "{port}", "--bind", "127.0.0.1"]
ready = { command = ["sleep", "1000"], timeout = "60s", attempt_timeout = "50s" }"#,
        ),
    ] {
        let dir = TempDir::new(&format!("never-orphan-{what}"));
        let plan = format!(
            "name = \"orphans\"\nrepetitions = 1\n[[contender]]\nname = \"srv\"\n{contender}\n\n[[scenario]]\nname = \"s\"\nhttp = \"/\"\nduration = \"1s\"\n"
        );
        let plan_path = dir.path().join("plan.toml");
        std::fs::write(&plan_path, plan).unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_bakeoff"))
            .args(["run", plan_path.to_str().unwrap(), "--out"])
            .arg(dir.path().join("out"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let pid = child.id();
        let sleeping = || {
            leftovers(pid).into_iter().any(|p| {
                std::fs::read(format!("/proc/{p}/cmdline")).is_ok_and(|c| c.starts_with(b"sleep\0"))
            })
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        while !sleeping() {
            assert!(
                Instant::now() < deadline,
                "{what}: the command never started"
            );
            assert!(
                child.try_wait().unwrap().is_none(),
                "{what}: bakeoff ended early"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut left = leftovers(pid);
        while !left.is_empty() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
            left = leftovers(pid);
        }
        for p in &left {
            // SAFETY: processes this test's run started.
            unsafe {
                libc::kill(*p, libc::SIGKILL);
            }
        }
        assert!(
            left.is_empty(),
            "{what}: left behind after kill -9: {left:?}"
        );
    }
}

/// A member that kills its own guard (`kill -9 $PPID`) after starting a daemon that left
/// its group and cleared its environment (`setsid env -i`): with the guard gone, the daemon
/// re-parents to bakeoff (a subreaper during runs), which kills it before it exits — nothing
/// is left after a normal run.
#[test]
fn a_member_that_kills_its_guard_leaves_nothing_behind() {
    let dir = TempDir::new("never-guard-killer");
    // Durations no other process has, so the test can find them by their command line.
    let (daemon, member) = (
        format!("9{}1", std::process::id()),
        format!("9{}2", std::process::id()),
    );
    let plan = format!(
        r#"name = "guard killer"
repetitions = 1
[[contender]]
name = "rogue"
command = ["sh", "-c", "setsid env -i sh -c 'sleep {daemon}; true' & sleep 0.2; kill -9 $PPID; exec sleep {member}"]
ready = {{ tcp = "127.0.0.1:{{port}}", timeout = "3s" }}

[[scenario]]
name = "s"
http = "/"
duration = "1s"
"#
    );
    let started = |needle: &str| -> Vec<i32> {
        bakeoff::sys::pids()
            .into_iter()
            .filter(|p| {
                std::fs::read(format!("/proc/{p}/cmdline"))
                    .is_ok_and(|c| String::from_utf8_lossy(&c).contains(needle))
                    && bakeoff::sys::proc_stat(*p).is_some_and(|s| s.state != 'Z')
            })
            .collect()
    };
    let run = run_plan(dir.path(), &plan, &[]);
    let left: Vec<i32> = started(&daemon)
        .into_iter()
        .chain(started(&member))
        .collect();
    for p in &left {
        // SAFETY: processes this test's run started.
        unsafe {
            libc::kill(*p, libc::SIGKILL);
        }
    }
    assert!(
        left.is_empty(),
        "left behind after a normal run: {left:?}\n{}",
        run.stderr()
    );
    // The daemon did start (the test would prove nothing otherwise): the run saw the member
    // die by SIGKILL of its guard.
    let r = &run.results;
    assert!(
        r["runs"][0]["exits"].to_string().contains("signal 9"),
        "{}",
        r["runs"][0]
    );
}
