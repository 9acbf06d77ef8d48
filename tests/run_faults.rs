//! Contenders that go wrong: each fault gives a clear message, the other contenders' results
//! are kept, the results file stays valid, and no process bakeoff started is left running
//! (`run_plan` checks the last part for every test).

mod common;

use std::time::{Duration, Instant};

use common::*;

fn scenario(extra: &str) -> String {
    format!("\n[[scenario]]\nname = \"index\"\nhttp = \"GET /index.html\"\nclients = 2\n{extra}\n")
}

fn error_of(run: &PlanRun, contender: &str) -> String {
    run.run(contender, 1)["error"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[test]
fn a_contender_that_exits_at_start_is_reported_and_the_others_go_on() {
    let Some(nginx) = nginx_bin() else { return };
    let dir = TempDir::new("fault-exit");
    let plan = format!(
        r#"name = "exit at start"
repetitions = 1
[[contender]]
name = "broken"
command = ["sh", "-c", "echo 'fatal: cannot open database' >&2; exit 3"]
ready = {{ tcp = "127.0.0.1:{{port}}", timeout = "20s" }}
{}{}"#,
        nginx_contender("good", &nginx, dir.path()),
        scenario("requests = 200")
    );
    let started = Instant::now();
    let run = run_plan(dir.path(), &plan, &[]);
    assert_eq!(run.output.status.code(), Some(2), "{}", run.stderr());
    // Noticed at once, not after the 20 s probe timeout.
    assert!(started.elapsed() < Duration::from_secs(15));
    let e = error_of(&run, "broken");
    assert!(e.contains("exited: exit status: 3"), "{e}");
    assert!(e.contains("fatal: cannot open database"), "{e}");
    assert_eq!(run.run("broken", 1)["status"], "failed");
    assert_eq!(run.run("good", 1)["status"], "complete");
    assert_eq!(run.run("good", 1)["points"][0]["load"]["successes"], 200);
    assert_eq!(run.results["status"], "complete");
    assert!(
        run.stdout()
            .contains("broken repetition 1: never became ready"),
        "{}",
        run.stdout()
    );
}

#[test]
fn a_contender_that_never_becomes_ready_times_out_and_is_killed() {
    let dir = TempDir::new("fault-ready");
    let plan = format!(
        r#"name = "never ready"
repetitions = 1
[[contender]]
name = "sleepy"
command = ["sleep", "600"]
ready = {{ tcp = "127.0.0.1:{{port}}", timeout = "1s", interval = "50ms" }}
{}"#,
        scenario("requests = 10")
    );
    let run = run_plan(dir.path(), &plan, &[]);
    assert_eq!(run.output.status.code(), Some(2));
    let e = error_of(&run, "sleepy");
    assert!(
        e.starts_with("never became ready: not ready after 1."),
        "{e}"
    );
    assert!(e.contains("connect to 127.0.0.1:"), "{e}");
    let exits = run.run("sleepy", 1)["exits"].as_array().unwrap().clone();
    assert_eq!(exits[0]["signal"], 15, "{exits:?}");
    assert_eq!(exits[0]["stopped_by_bakeoff"], true);
}

#[test]
fn a_contender_that_dies_mid_scenario_keeps_what_was_measured() {
    let dir = TempDir::new("fault-die");
    let plan = format!(
        "name = \"dies\"\nrepetitions = 1\n{}{}",
        faulty_contender("dies", "die-after", 100),
        scenario("requests = 1000\ntimeout = \"2s\"")
            + "\n[[scenario]]\nname = \"never reached\"\nhttp = \"/\"\nrequests = 5\n"
    );
    let run = run_plan(dir.path(), &plan, &[]);
    assert_eq!(run.output.status.code(), Some(2), "{}", run.stderr());
    let r = run.run("dies", 1);
    assert_eq!(r["status"], "failed");
    let e = r["error"].as_str().unwrap();
    assert!(
        e.starts_with("died during scenario `index` [clients=2]: member `dies`"),
        "{e}"
    );
    assert!(e.contains("exit status: 5"), "{e}");
    // The point it died in is kept, with the answers it gave before dying; the next
    // scenario is not run against a dead server.
    let points = r["points"].as_array().unwrap();
    assert_eq!(points.len(), 1);
    let l = &points[0]["load"];
    // The 100th answer may be cut off when the server exits on the 101st request.
    let ok = l["successes"].as_u64().unwrap();
    assert!((95..=100).contains(&ok), "{l}");
    // Load stopped once the death was seen, instead of counting refused connections for
    // the rest of the 1000 requests.
    assert_eq!(l["interrupted"], true, "{l}");
    assert!(l["requests"].as_u64().unwrap() < 1000, "{l}");
    assert_eq!(run.results["status"], "complete");
}

#[test]
fn a_contender_that_hangs_is_timed_out_and_killed_even_if_it_ignores_sigterm() {
    let dir = TempDir::new("fault-hang");
    let plan = format!(
        "name = \"hangs\"\nrepetitions = 1\n{}{}",
        faulty_contender("hangs", "hang-after", 10),
        // Ten answers take a few milliseconds, even on a loaded machine; the rest of the
        // two seconds is spent waiting on a server that no longer answers.
        scenario("duration = \"2s\"\ntimeout = \"300ms\"")
    );
    let started = Instant::now();
    let run = run_plan(dir.path(), &plan, &[]);
    assert!(started.elapsed() < Duration::from_secs(20));
    let r = run.run("hangs", 1);
    let l = &r["points"][0]["load"];
    assert_eq!(l["successes"], 10, "{r}");
    let timeouts: u64 = l["outcomes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| o["kind"] == "timeout")
        .map(|o| o["count"].as_u64().unwrap())
        .sum();
    assert!(timeouts >= 2, "{l}");
    // SIGTERM is ignored, so the stop timeout (500 ms) ends in SIGKILL.
    let exit = &r["exits"][0];
    assert_eq!(exit["signal"], 9, "{exit}");
    assert!(exit["status"].as_str().unwrap().contains("SIGKILL"));
    assert!(run.stdout().contains("| 2 | hangs |"), "{}", run.stdout());
}

#[test]
fn a_port_already_taken_is_refused_instead_of_measuring_someone_else() {
    let Some(nginx) = nginx_bin() else { return };
    let dir = TempDir::new("fault-port");
    let squatter = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = squatter.local_addr().unwrap().port();
    let plan = format!(
        r#"name = "port taken"
repetitions = 1
[[contender]]
name = "fixed"
command = ["sleep", "600"]
endpoint = "http://127.0.0.1:{port}"
{}{}"#,
        nginx_contender("good", &nginx, dir.path()),
        scenario("requests = 50")
    );
    let run = run_plan(dir.path(), &plan, &[]);
    assert_eq!(run.output.status.code(), Some(2));
    let e = error_of(&run, "fixed");
    assert_eq!(
        e,
        format!("did not start: 127.0.0.1:{port} (endpoint of `fixed`) is already in use by another process; bakeoff will not measure a server it did not start")
    );
    assert_eq!(run.run("good", 1)["status"], "complete");
    drop(squatter);
}

/// A port bakeoff picked free can be taken by another process before the member binds it
/// (on a busy machine running tests side by side it was): the member exits before it is
/// ready, the port is in a stranger's hands, and the contender is started once more on fresh
/// ports — here the first start waits, holding no port, until the test has taken its port.
#[test]
fn a_port_taken_before_the_member_binds_it_is_left_for_fresh_ports() {
    let dir = TempDir::new("fault-port-race");
    let d = dir.path().to_path_buf();
    let exe = env!("CARGO_BIN_EXE_bakeoff");
    let script = format!(
        "if [ -e {d}/again ]; then exec {exe} demo-server v2 \"$0\" \"$1\"; fi; touch {d}/again; \
         echo \"$0\" > {d}/port.tmp && mv {d}/port.tmp {d}/port; \
         i=0; while [ ! -e {d}/taken ] && [ $i -lt 3000 ]; do sleep 0.01; i=$((i + 1)); done; exit 1",
        d = d.display()
    );
    let plan = format!(
        r#"name = "port race"
repetitions = 1
[[contender]]
name = "raced"
command = ["sh", "-c", {script:?}, "{{port}}", "{{state}}"]
ready = {{ http = "http://127.0.0.1:{{port}}/health", status = 200, timeout = "60s" }}

[[scenario]]
name = "health"
http = "GET /health"
clients = 1
requests = 20
"#
    );
    let stranger = std::thread::spawn(move || {
        let deadline = Instant::now() + Duration::from_secs(60);
        let port: u16 = loop {
            if let Ok(s) = std::fs::read_to_string(d.join("port")) {
                break s.trim().parse().unwrap();
            }
            assert!(
                Instant::now() < deadline,
                "the first start never wrote its port"
            );
            std::thread::sleep(Duration::from_millis(10));
        };
        let held = std::net::TcpListener::bind(("127.0.0.1", port)).unwrap();
        std::fs::write(d.join("taken"), "").unwrap();
        (port, held)
    });
    let run = run_plan(dir.path(), &plan, &[]);
    let (port, held) = stranger.join().unwrap();
    let r = run.run("raced", 1);
    assert_eq!(r["status"], "complete", "{r}\n{}", run.stderr());
    assert_eq!(r["points"][0]["load"]["successes"], 20, "{r}");
    let warned = run.results["warnings"].to_string();
    assert!(
        warned.contains(&format!(
            "port {port} was taken by another process before the contender bound it"
        )),
        "{warned}"
    );
    assert!(run.output.status.success(), "{}", run.stderr());
    drop(held);
}
