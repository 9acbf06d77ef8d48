//! SIGTERM in the middle of a bake-off: bakeoff stops the contender, keeps what it measured,
//! says how to continue, and `--resume` finishes the job without redoing finished work. The
//! first part runs on one CPU and the resumed part on all of them: the report says the
//! repetitions ran with different CPUs.

mod common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;

#[test]
fn sigterm_stops_cleanly_and_resume_finishes_the_run() {
    let Some(nginx) = nginx_bin() else { return };
    let dir = TempDir::new("interrupt");
    let plan = format!(
        "name = \"interrupt me\"\nrepetitions = 2\nbaseline = \"a\"\n{}{}\n[[scenario]]\nname = \"index\"\nhttp = \"/index.html\"\nduration = \"1s\"\n",
        nginx_contender("a", &nginx, dir.path()),
        nginx_contender("b", &nginx, dir.path())
    );
    let plan_path = dir.path().join("plan.toml");
    std::fs::write(&plan_path, &plan).unwrap();
    let out = dir.path().join("out");
    let cpus = bakeoff::sys::allowed_cpus();
    let first_cpu = cpus[0];
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_bakeoff"));
    cmd.arg("run")
        .arg(&plan_path)
        .arg("--out")
        .arg(&out)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    only_on(&mut cmd, vec![first_cpu]);
    let mut child = cmd.spawn().unwrap();
    let pid = child.id();

    // Wait (bounded) until one repetition is done and the next is under way.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let r = read_results(&out);
        let runs = r["runs"].as_array().cloned().unwrap_or_default();
        let complete = runs.iter().filter(|x| x["status"] == "complete").count();
        if complete >= 1 && runs.last().is_some_and(|x| x["status"] == "running") {
            break;
        }
        assert!(Instant::now() < deadline, "the run never got going: {r}");
        assert!(child.try_wait().unwrap().is_none(), "bakeoff ended early");
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: sending a signal to our own child.
    unsafe {
        libc::kill(pid as i32, libc::SIGTERM);
    }
    let stop_deadline = Instant::now() + Duration::from_secs(30);
    while child.try_wait().unwrap().is_none() {
        assert!(
            Instant::now() < stop_deadline,
            "bakeoff did not stop after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("bakeoff run --resume"), "{stderr}");
    assert!(leftovers(pid).is_empty(), "processes left behind");

    let r = read_results(&out);
    assert_eq!(r["status"], "interrupted");
    let runs = r["runs"].as_array().unwrap().clone();
    assert!(runs.iter().all(|x| x["status"] != "running"), "{r}");
    let complete: Vec<_> = runs
        .iter()
        .filter(|x| x["status"] == "complete")
        .cloned()
        .collect();
    assert!(!complete.is_empty() && complete.len() < 4, "{r}");
    // The report of an interrupted run says so first.
    let rep = bakeoff(&["report", out.to_str().unwrap()]);
    let md = String::from_utf8_lossy(&rep.stdout);
    assert!(
        md.contains("_Interrupted: these are the repetitions that ran"),
        "{md}"
    );

    // Resume: finished repetitions are kept as they were, the rest is run.
    let resumed = Command::new(env!("CARGO_BIN_EXE_bakeoff"))
        .arg("run")
        .arg("--resume")
        .arg(&out)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&resumed.stderr).into_owned();
    assert!(resumed.status.success(), "{said}");
    // It says how many starts were left, not how many the plan has.
    let left = 4 - complete.len();
    assert!(
        said.contains(&format!("bakeoff: {left} contender start")),
        "{said}"
    );
    let r = read_results(&out);
    assert_eq!(r["status"], "complete");
    let runs = r["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 4, "{r}");
    assert!(runs.iter().all(|x| x["status"] == "complete"), "{r}");
    for c in &complete {
        assert!(
            runs.contains(c),
            "a finished repetition changed on resume: {c}"
        );
    }
    // The interrupted part ran on one CPU, the resumed part on all of them.
    let allowed: Vec<usize> = runs
        .iter()
        .map(|x| x["environment"]["cpus_allowed"].as_array().unwrap().len())
        .collect();
    assert!(allowed.contains(&1), "{allowed:?}");
    // Resumed once more, a finished run says there is nothing left to start.
    let again = Command::new(env!("CARGO_BIN_EXE_bakeoff"))
        .args(["run", "--resume"])
        .arg(&out)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&again.stderr);
    assert!(
        again.status.success()
            && said.contains("every contender start of")
            && said.contains("done already"),
        "{said}"
    );
    let report = std::fs::read_to_string(out.join("report/report.md")).unwrap();
    if cpus.len() > 1 {
        assert!(allowed.contains(&cpus.len()), "{allowed:?}");
        assert!(
            report.contains("repetitions ran with different CPUs allowed: 1 ["),
            "{report}"
        );
    } else {
        assert!(
            !report.contains("repetitions ran with different"),
            "{report}"
        );
    }
    // A second resume has nothing left to do.
    let again = bakeoff(&["run", "--resume", out.to_str().unwrap()]);
    assert!(again.status.success());
    assert_eq!(read_results(&out)["runs"].as_array().unwrap().len(), 4);
}

/// Starts `bakeoff run` on `plan` (written to `dir/plan.toml`, results in `dir/out`).
fn spawn_run(
    dir: &std::path::Path,
    plan: &str,
    output: fn() -> Stdio,
) -> (std::process::Child, std::path::PathBuf) {
    let plan_path = dir.join("plan.toml");
    std::fs::write(&plan_path, plan).unwrap();
    let out = dir.join("out");
    let child = Command::new(env!("CARGO_BIN_EXE_bakeoff"))
        .arg("run")
        .arg(&plan_path)
        .arg("--out")
        .arg(&out)
        .stdin(Stdio::null())
        .stdout(output())
        .stderr(output())
        .spawn()
        .unwrap();
    (child, out)
}

/// Waits (a minute at most) until the run's first contender has started and `also` gives
/// a value; returns it.
fn wait_started<T>(
    child: &mut std::process::Child,
    out: &std::path::Path,
    also: impl Fn() -> Option<T>,
) -> T {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let r = read_results(out);
        let started = r["runs"]
            .as_array()
            .and_then(|runs| runs.first().cloned())
            .is_some_and(|run| run["startup"].is_object());
        if let Some(v) = also().filter(|_| started) {
            return v;
        }
        assert!(Instant::now() < deadline, "the run never got going: {r}");
        assert!(child.try_wait().unwrap().is_none(), "bakeoff ended early");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// GNU `timeout` sends two signals: the second kills the contender at once (one that
/// ignores SIGTERM here), and results.json still records the interruption and the exit.
#[test]
fn a_second_signal_kills_at_once_and_still_records_the_interruption() {
    let dir = TempDir::new("interrupt-twice");
    let plan = r#"
name = "interrupt me twice"
repetitions = 1
[[contender]]
name = "stubborn"
command = ["sh", "-c", "trap '' TERM; exec python3 -m http.server {port} --bind 127.0.0.1"]
ready = { http = "http://127.0.0.1:{port}/", timeout = "20s" }
stop_timeout = "60s"

[[scenario]]
name = "slow"
http = "/"
duration = "60s"
"#;
    let (mut child, out) = spawn_run(dir.path(), plan, Stdio::piped);
    let pid = child.id();
    wait_started(&mut child, &out, || Some(()));
    std::thread::sleep(Duration::from_millis(300));
    let sent = Instant::now();
    // SAFETY: signals to our own child.
    unsafe {
        libc::kill(pid as i32, libc::SIGTERM);
    }
    std::thread::sleep(Duration::from_millis(300));
    unsafe {
        libc::kill(pid as i32, libc::SIGTERM);
    }
    while child.try_wait().unwrap().is_none() {
        assert!(
            sent.elapsed() < Duration::from_secs(10),
            "bakeoff did not end after the second signal (the contender ignores SIGTERM and has a 60 s stop_timeout)"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(130));
    assert!(leftovers(pid).is_empty(), "processes left behind");
    let r = read_results(&out);
    let run = &r["runs"][0];
    assert_ne!(run["status"], "running", "{r}");
    assert!(
        !run["exits"].as_array().unwrap().is_empty(),
        "no exit recorded: {run}"
    );
}

/// `kill -9` of bakeoff: 2 s later nothing started for the run is alive — a wrapper's
/// child, a `setsid` daemon, and a daemon that cleared its environment included (the guard
/// between bakeoff and each member is a child subreaper and kills its whole subtree).
#[test]
fn sigkill_of_bakeoff_leaves_nothing_behind() {
    let dir = TempDir::new("sigkill");
    let marker = format!("bakeoff-escape-test-{}", std::process::id());
    // The member: a shell that starts a server, a setsid'd sleeper and an env -i'd one
    // (each named by the marker so the test can find them), then waits.
    let plan = format!(
        r#"
name = "kill me"
repetitions = 1
[[contender]]
name = "wrapper"
command = ["sh", "-c", "setsid sh -c 'sleep 1000; echo {marker}-setsid' & setsid env -i sh -c 'sleep 1000; echo {marker}-noenv' & exec python3 -m http.server {{port}} --bind 127.0.0.1"]
ready = {{ http = "http://127.0.0.1:{{port}}/", timeout = "20s" }}

[[scenario]]
name = "slow"
http = "/"
duration = "60s"
"#
    );
    let (mut child, out) = spawn_run(dir.path(), &plan, Stdio::null);
    let pid = child.id();
    let escaped = |marker: &str| -> Vec<i32> {
        std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
            .filter(|p| {
                std::fs::read(format!("/proc/{p}/cmdline"))
                    .is_ok_and(|c| String::from_utf8_lossy(&c).contains(marker))
            })
            .collect()
    };
    wait_started(&mut child, &out, || {
        (escaped(&marker).len() >= 2).then_some(())
    });
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    std::thread::sleep(Duration::from_secs(2));
    let left = escaped(&marker);
    let tagged = leftovers(pid);
    // Kill them anyway, so a failure here does not leave them running.
    for p in left.iter().chain(&tagged) {
        // SAFETY: signals to processes this test's run started.
        unsafe {
            libc::kill(*p, libc::SIGKILL);
        }
    }
    assert!(
        left.is_empty(),
        "escaped after SIGKILL of bakeoff: {left:?}"
    );
    assert!(
        tagged.is_empty(),
        "left behind after SIGKILL of bakeoff: {tagged:?}"
    );
}

/// If bakeoff and a guard are both killed outright (the guard first, so it cannot act),
/// the member is left running; `bakeoff cleanup DIR` finds it by the record the run keeps
/// (process group and start time) and kills it.
#[test]
fn cleanup_kills_what_a_run_killed_outright_left_behind() {
    let dir = TempDir::new("cleanup");
    let plan = r#"
name = "orphan me"
repetitions = 1
[[contender]]
name = "srv"
command = ["python3", "-m", "http.server", "{port}", "--bind", "127.0.0.1"]
ready = { http = "http://127.0.0.1:{port}/", timeout = "20s" }

[[scenario]]
name = "slow"
http = "/"
duration = "60s"
"#;
    let (mut child, out) = spawn_run(dir.path(), plan, Stdio::null);
    let pid = child.id();
    let guard = wait_started(&mut child, &out, || {
        let recorded: Vec<i32> = std::fs::read_dir(out.join("live"))
            .map(|d| {
                d.flatten()
                    .filter_map(|e| e.file_name().to_str()?.parse().ok())
                    .collect()
            })
            .unwrap_or_default();
        (recorded.len() == 1).then(|| recorded[0])
    });
    // SAFETY: signals to processes this test started.
    unsafe {
        libc::kill(pid as i32, libc::SIGSTOP);
        libc::kill(guard, libc::SIGKILL);
        libc::kill(pid as i32, libc::SIGKILL);
    }
    child.wait().unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let before = leftovers(pid);
    assert!(
        !before.is_empty(),
        "the member should have been orphaned for this test"
    );
    let cleaned = bakeoff(&["cleanup", out.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&cleaned.stderr);
    assert!(
        cleaned.status.success() && err.contains("killed 1 process "),
        "{err}"
    );
    std::thread::sleep(Duration::from_millis(200));
    let after = leftovers(pid);
    for p in &after {
        // SAFETY: as above, so a failure leaves nothing running.
        unsafe {
            libc::kill(*p, libc::SIGKILL);
        }
    }
    assert!(after.is_empty(), "still running after cleanup: {after:?}");
    assert!(!out.join("live").exists(), "the record is removed");
}
