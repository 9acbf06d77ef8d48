//! The hostile user's cases (issue 15): absurd numbers, silent servers, injected headers,
//! credentials in URLs. Each failed before its fix; each names the flag and the limit.

mod common;

use std::io::Read as _;
use std::net::TcpListener;
use std::time::{Duration, Instant};

use common::*;

fn fails_with(args: &[&str], needles: &[&str]) -> String {
    let out = bakeoff(args);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "{args:?} should fail");
    assert!(!err.contains("panicked"), "{args:?} panicked: {err}");
    for n in needles {
        assert!(err.contains(n), "{args:?}: expected `{n}` in:\n{err}");
    }
    err
}

#[test]
fn templates_are_bounded_before_anything_is_allocated() {
    // Nothing listens on port 1: the check must come before any connection.
    fails_with(
        &[
            "load",
            "-d",
            "{fill:99999999999999:x}",
            "http://127.0.0.1:1/",
        ],
        &["-d", "more than the 64 MiB limit", "--max-body"],
    );
    // Raised by the flag, the same body passes the check (and then fails to connect).
    fails_with(
        &[
            "load",
            "--max-body",
            "1GiB",
            "-d",
            "{fill:100000000:x}",
            "http://127.0.0.1:1/",
        ],
        &["cannot reach"],
    );
    fails_with(
        &["load", "--max-body", "64 parsecs", "http://127.0.0.1:1/"],
        &["--max-body", "parsecs"],
    );
}

#[test]
fn rates_that_do_not_fit_the_run_are_config_errors() {
    let url = "http://127.0.0.1:1/";
    fails_with(
        &["load", "-q", "1e-30", "--warmup", "1s", "-z", "1s", url],
        &["-q/--rate", "does not fit"],
    );
    fails_with(
        &["load", "-q", "1e-19", "-n", "5", url],
        &["-q/--rate", "days"],
    );
    fails_with(
        &["load", "-q", "0.1", "-z", "2s", url],
        &["-q/--rate", "does not fit in the 2s duration"],
    );
}

#[test]
fn a_duration_is_wall_clock_even_against_a_silent_server() {
    let addr = silent_server();
    let url = format!("http://{addr}/");
    // Closed loop: the calls in flight get the grace, not the 20 s timeout.
    let t = Instant::now();
    // No call finished: exit 2, the result printed all the same.
    let v = bakeoff_json_exit(&["load", "-z", "1s", "-c", "2", &url], 2);
    let took = t.elapsed();
    assert!(took < Duration::from_secs(6), "took {took:?}");
    assert_eq!(u(&v, "requests"), 0, "{v}");
    assert_eq!(u(&v, "unfinished"), 2, "{v}");
    // Open loop far beyond what 2 clients can send: it stops at the deadline and counts
    // what was due but never sent.
    let t = Instant::now();
    let v = bakeoff_json_exit(&["load", "-q", "200000", "-z", "1s", "-c", "2", &url], 2);
    let took = t.elapsed();
    assert!(took < Duration::from_secs(6), "took {took:?}");
    assert!(u(&v, "dropped") > 190_000, "{v}");
}

#[test]
fn open_loop_stops_at_its_deadline_when_the_generator_cannot_keep_up() {
    let Some(nginx) = start_nginx() else { return };
    let url = nginx.url("/index.html");
    let t = Instant::now();
    let v = bakeoff_json(&[
        "load", "-q", "2000000", "-z", "1s", "-c", "2", "-t", "1", &url,
    ]);
    let took = t.elapsed();
    // Two clients cannot send 2 million requests a second: the run ends on time, with
    // what could not be sent counted.
    assert!(took < Duration::from_secs(5), "took {took:?}");
    assert!(u(&v, "successes") > 0, "{v}");
    assert!(u(&v, "dropped") > 1_000_000, "{v}");
    assert_eq!(u(&v, "successes") + u(&v, "dropped"), 2_000_000, "{v}");
}

#[test]
fn headers_and_targets_cannot_carry_more_than_was_written() {
    let url = "http://127.0.0.1:1/";
    fails_with(
        &["load", "-H", "X-A: b\rX-Injected: 1", url],
        &["header `X-A`", "cannot carry"],
    );
    fails_with(
        &["load", "-H", "Bad Name: 1", url],
        &["header `Bad Name`", "not a valid header name"],
    );
    fails_with(
        &["load", "http://127.0.0.1:1/a b"],
        &["space or a control character"],
    );
    // gRPC metadata too.
    let proto = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/etcd/protos/rpc.proto"
    );
    fails_with(
        &[
            "load",
            "--grpc",
            url,
            "--proto",
            proto,
            "--call",
            "etcdserverpb.KV/Range",
            "-H",
            "x-a: b\nc",
        ],
        &["header `x-a`"],
    );
}

#[test]
fn env_placeholders_in_headers_are_filled_and_never_printed() {
    let Some(f) = start_grpc_fixture(&[]) else {
        return;
    };
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_bakeoff"))
        .args([
            "call",
            "--json",
            "--grpc",
            &f.url,
            "--call",
            "fixture.Echo/Metadata",
        ])
        .args(["-H", "authorization: Bearer {env:BAKEOFF_TEST_TOKEN}"])
        .env("BAKEOFF_TEST_TOKEN", "t0p-s3cret")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let pairs = v["messages"][0]["pairs"].as_array().unwrap();
    assert!(
        pairs
            .iter()
            .any(|p| p["key"] == "authorization" && p["value"] == "Bearer t0p-s3cret"),
        "{v}"
    );
    let unset = bakeoff(&[
        "call",
        "--grpc",
        &f.url,
        "--call",
        "fixture.Echo/Metadata",
        "-H",
        "authorization: {env:BAKEOFF_SURELY_UNSET}",
    ]);
    let err = String::from_utf8_lossy(&unset.stderr);
    assert!(
        !unset.status.success() && err.contains("{env:BAKEOFF_SURELY_UNSET} is not set"),
        "{err}"
    );
}

#[test]
fn credentials_in_urls_are_refused_without_printing_the_password() {
    let err = fails_with(
        &["load", "http://alice:hunter2@127.0.0.1:1/"],
        &["carries credentials", "alice:***@127.0.0.1:1"],
    );
    assert!(!err.contains("hunter2"), "{err}");
    fails_with(&["load", "http://[::1"], &["`[` is not closed"]);
}

#[test]
fn diff_against_an_unreachable_server_is_an_error_not_a_difference() {
    let Some(nginx) = start_nginx() else { return };
    let dir = TempDir::new("hostile-diff");
    let cases = dir.path().join("cases.toml");
    std::fs::write(
        &cases,
        "[[compat]]\nhttp = \"GET /index.html\"\nrequests = ['']\n",
    )
    .unwrap();
    let dead = format!("http://127.0.0.1:{}", free_port());
    fails_with(
        &[
            "diff",
            "--cases",
            cases.to_str().unwrap(),
            &dead,
            &nginx.url(""),
        ],
        &["cannot be reached", &dead],
    );
}

#[test]
fn more_clients_than_open_files_allowed_is_said_before_the_run() {
    let Some(nginx) = start_nginx() else { return };
    let url = nginx.url("/index.html");
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_bakeoff"));
    cmd.args(["load", "-n", "300", "-c", "300", "--json", &url]);
    use std::os::unix::process::CommandExt as _;
    // SAFETY: setrlimit is async-signal-safe; soft and hard both 128, so raising cannot help.
    unsafe {
        cmd.pre_exec(|| {
            let l = libc::rlimit {
                rlim_cur: 128,
                rlim_max: 128,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &l) == 0 {
                Ok(())
            } else {
                Err(std::io::Error::last_os_error())
            }
        });
    }
    let out = cmd.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("300 clients need about 364 open files, more than this process may have (128"),
        "{err}"
    );
}

/// A contender that fails every call looks fast (failures are quick): the report says
/// it failed, gives it no latency or delta, and the run exits 2.
#[test]
fn a_contender_that_fails_every_call_does_not_look_fast() {
    let Some(nginx) = nginx_bin() else { return };
    // Both report tables: the interleaved one and the paired one.
    for order in ["interleaved", "paired"] {
        let dir = TempDir::new("hostile-fails");
        let plan = format!(
            "name = \"fails\"\nrepetitions = 1\nbaseline = \"good\"\norder = \"{order}\"\n{}{}\n[[scenario]]\nname = \"missing\"\nhttp = \"/{{file}}\"\nmatrix = {{ file = [\"only.html\"] }}\nrequests = 200\n",
            nginx_contender("good", &nginx, dir.path()),
            // Serves a folder without the file: every call is a 404.
            nginx_contender_with("empty", &nginx, &dir.path().join("empty"), "")
        );
        std::fs::write(dir.path().join("www/only.html"), "only here\n").unwrap();
        let r = run_plan(dir.path(), &plan, &[]);
        assert_eq!(r.output.status.code(), Some(2), "{order}: {}", r.stderr());
        let md = r.stdout();
        assert!(
            md.contains(
                "empty failed most calls at missing [file=only.html clients=1] (200 of 200; HTTP 404"
            ),
            "{order}: {md}"
        );
        assert!(md.contains("— (100% of calls failed)"), "{order}: {md}");
        assert!(!md.contains("-100%") && !md.contains("÷"), "{order}: {md}");
    }
}

/// A contender that floods its output: each log keeps its head and a rolling tail within
/// `log_limit`, says how much it dropped, and the run goes on.
#[test]
fn a_flooding_contender_cannot_fill_the_disk() {
    let dir = TempDir::new("hostile-flood");
    let plan = r#"
name = "flood"
repetitions = 1
log_limit = "64KiB"
[[contender]]
name = "loud"
command = ["sh", "-c", "echo first-line >&2; yes bakeoff-log-line | head -c 50000000 >&2; echo last-line >&2; exec python3 -m http.server {port} --bind 127.0.0.1"]
ready = { http = "http://127.0.0.1:{port}/", timeout = "60s" }

[[scenario]]
name = "root"
http = "/"
requests = 20
"#;
    let r = run_plan(dir.path(), plan, &[]);
    assert!(r.output.status.success(), "{}", r.stderr());
    let run = r.run("loud", 1);
    let log = run["logs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| r.out_dir.join(l.as_str().unwrap()))
        .find(|p| p.to_string_lossy().ends_with(".stderr"))
        .unwrap();
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.len() <= 64 * 1024 + 200, "{} bytes", text.len());
    assert!(
        text.starts_with("first-line\nbakeoff-log-line\n"),
        "{}",
        &text[..100]
    );
    assert!(
        text.contains("bytes of output dropped here"),
        "no dropped line"
    );
    assert!(text.contains("last-line\n"), "the tail is kept");
}

/// Setup commands' output is capped like a member's (issue 25, item 9): 40 MB of it leaves a
/// log of the default limit (16 MiB) with its head, a line saying what was dropped and its
/// tail, and a second step's output after it.
#[test]
fn a_flooding_setup_command_cannot_fill_the_disk() {
    let dir = TempDir::new("hostile-setup-flood");
    let plan = r#"
name = "setup flood"
repetitions = 1
# A setup command's log is held to the plan's limit, as a member's is.
log_limit = "1MiB"
[[contender]]
name = "loud"
setup = [["sh", "-c", "echo setup-first; yes setup-line | head -c 8000000; echo setup-last"], ["sh", "-c", "echo second-step >&2"]]
command = ["python3", "-m", "http.server", "{port}", "--bind", "127.0.0.1"]
ready = { http = "http://127.0.0.1:{port}/", timeout = "60s" }
"#;
    let r = run_plan(dir.path(), plan, &[]);
    assert!(r.output.status.success(), "{}", r.stderr());
    let log = r.out_dir.join("logs/loud.r1.setup.log");
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.len() <= (1 << 20) + 400, "{} bytes", text.len());
    assert!(
        text.starts_with("setup-first\nsetup-line\n"),
        "{}",
        &text[..60]
    );
    assert!(
        text.contains("bytes of output dropped here"),
        "no dropped line"
    );
    assert!(text.contains("setup-last\n"), "the tail is kept");
    assert!(
        text.ends_with("second-step\n"),
        "the second step follows: {:?}",
        &text[text.len() - 40..]
    );
}

#[test]
fn a_placeholder_typo_on_the_command_line_is_warned_about() {
    let Some(nginx) = start_nginx() else { return };
    let out = bakeoff(&[
        "load",
        "-n",
        "2",
        "-c",
        "1",
        "-m",
        "POST",
        "-d",
        r#"{"id": "{rnd:1..5}"}"#,
        &nginx.url("/"),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("`{rnd:…}` in -d is not a placeholder bakeoff knows"),
        "{err}"
    );
}

/// Files bakeoff is told to read are regular files of a bounded size (issue 25, item 8):
/// `/dev/zero`, `/dev/urandom` and a FIFO as a CA file or a `.proto` are refused at once,
/// naming the flag, instead of aborting or never returning.
#[test]
fn devices_and_fifos_are_refused_as_files() {
    let dir = TempDir::new("hostile-files");
    let fifo = dir.path().join("ca.pem");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let fifo = fifo.to_str().unwrap().to_string();
    for (flag, file) in [
        ("--cacert", "/dev/zero"),
        ("--cacert", "/dev/urandom"),
        ("--cacert", fifo.as_str()),
    ] {
        let started = Instant::now();
        let err = fails_with(
            &["load", flag, file, "-n", "1", "https://127.0.0.1:1/"],
            &[flag, "not a regular file"],
        );
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "{flag} {file}: {err}"
        );
    }
    fails_with(
        &[
            "load",
            "--grpc",
            "http://127.0.0.1:1",
            "--proto",
            "/dev/zero",
            "--call",
            "p.S/M",
        ],
        &["/dev/zero", "not a regular file"],
    );
    // Every other file bakeoff reads whole: plans, cases files, -D bodies, results (the
    // second probe: `run /dev/zero` took 23 GB, `diff --cases /dev/urandom` 9 GB, a FIFO
    // hung plan check and diff).
    let results = dir.path().join("res");
    std::fs::create_dir_all(&results).unwrap();
    std::os::unix::fs::symlink("/dev/zero", results.join("results.json")).unwrap();
    let results = results.to_str().unwrap().to_string();
    let url = "http://127.0.0.1:1/";
    let cases: &[&[&str]] = &[
        &["run", "/dev/zero"],
        &["plan", "check", &fifo],
        &["plan", "show", "/dev/urandom"],
        &["diff", "--cases", &fifo, url, url],
        &["diff", "--cases", "/dev/urandom", url, url],
        &["call", "-D", "/dev/zero", "-m", "POST", url],
        &["report", &results],
        &["compare", "/dev/zero", &fifo],
    ];
    // A zero timeout is refused, not read as "none" (the probe's `call --timeout 0s`
    // answered).
    fails_with(
        &["call", "--timeout", "0s", url],
        &["--timeout", "give a timeout above 0"],
    );
    for args in cases {
        let started = Instant::now();
        let err = fails_with(args, &["not a regular file"]);
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "{args:?}: {err}"
        );
    }
}

/// A password in a plan's URL never gets as far as a run (issue 25, item 16): plan check
/// refuses it where it is written, and says so without repeating it.
#[test]
fn a_password_in_a_plan_url_is_refused_without_being_repeated() {
    let dir = TempDir::new("hostile-password");
    for (key, line) in [
        ("endpoint", "endpoint = \"http://admin:hunter2@127.0.0.1:{port}\"\nready = { tcp = \"127.0.0.1:{port}\" }"),
        ("probe", "ready = { http = \"http://admin:hunter2@127.0.0.1:{port}/\" }"),
    ] {
        let plan = dir.path().join(format!("{key}.toml"));
        std::fs::write(
            &plan,
            format!("name = \"p\"\n[[contender]]\nname = \"a\"\ncommand = [\"sleep\", \"1\"]\n{line}\n[[scenario]]\nname = \"s\"\nhttp = \"/\"\n"),
        )
        .unwrap();
        let err = fails_with(
            &["plan", "check", plan.to_str().unwrap()],
            &["carries credentials", "admin:***@127.0.0.1", &format!("{key}.toml:")],
        );
        assert!(!err.contains("hunter2"), "{key}: {err}");
    }
}

/// Absurd client counts are bounded before any socket opens (issue 25, item 9): more than
/// 100,000 is refused naming `-c`; a closed loop of `-n 1` runs one client however many `-c`
/// asks for, and ends.
#[test]
fn client_counts_are_bounded_and_capped_at_the_requests() {
    fails_with(
        &["load", "-c", "4294967296", "-n", "1", "http://127.0.0.1:1/"],
        &["-c/--clients 4294967296", "at most 100000"],
    );
    let (addr, _server) = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let h = std::thread::spawn(move || {
            for s in l.incoming().flatten() {
                std::thread::spawn(move || {
                    use std::io::Write as _;
                    let mut s = s;
                    let mut buf = [0u8; 4096];
                    while let Ok(n) = s.read(&mut buf) {
                        if n == 0 {
                            break;
                        }
                        let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
                    }
                });
            }
        });
        (addr, h)
    };
    let started = Instant::now();
    let v = bakeoff_json(&[
        "load",
        "-c",
        "100000",
        "-n",
        "1",
        &format!("http://{addr}/"),
    ]);
    assert!(started.elapsed() < Duration::from_secs(60));
    assert_eq!(v["requests"], 1, "{v}");
    assert_eq!(v["clients"], 1, "{v}");
}

/// A server that answers every request with `size` bytes of `x` (Content-Length framed).
fn big_answer_server(size: usize) -> std::net::SocketAddr {
    use std::io::Write as _;
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            std::thread::spawn(move || {
                let mut s = s;
                let mut buf = [0u8; 4096];
                let mut seen = Vec::new();
                while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
                    match s.read(&mut buf) {
                        Ok(n) if n > 0 => seen.extend_from_slice(&buf[..n]),
                        _ => return,
                    }
                }
                let head = format!("HTTP/1.1 200 OK\r\nContent-Length: {size}\r\n\r\n");
                if s.write_all(head.as_bytes()).is_err() {
                    return;
                }
                let chunk = vec![b'x'; 1 << 20];
                let mut left = size;
                while left > 0 {
                    let n = left.min(chunk.len());
                    if s.write_all(&chunk[..n]).is_err() {
                        return; // bakeoff stopped reading: what it should do
                    }
                    left -= n;
                }
            });
        }
    });
    addr
}

/// `diff` (and compat, and `call`) keep answers to compare them: a 200 MiB answer is not
/// held whole (before, it took 1.67 GB for a 300 MB one), but stops at `--max-body` with an
/// error that says so; peak memory stays near the limit.
#[test]
fn kept_answers_are_bounded_by_max_body() {
    let addr = big_answer_server(200 << 20);
    let dir = TempDir::new("hostile-big-answer");
    let cases = dir.path().join("cases.toml");
    std::fs::write(&cases, "[[compat]]\nhttp = \"GET /\"\nrequests = ['']\n").unwrap();
    let url = format!("http://{addr}");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_bakeoff"))
        .args(["diff", "--cases", cases.to_str().unwrap(), &url, &url])
        .stdin(std::process::Stdio::null())
        .stdout(std::fs::File::create(dir.path().join("err")).unwrap())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id() as i32;
    let mut status = 0;
    // SAFETY: wait4 on our own child, into locals.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    assert_eq!(unsafe { libc::wait4(pid, &mut status, 0, &mut usage) }, pid);
    let _ = child.try_wait();
    // The report (on stdout) says what both answers failed with.
    let err = std::fs::read_to_string(dir.path().join("err")).unwrap();
    assert!(
        err.contains("larger than the 64 MiB kept to compare it") && err.contains("--max-body"),
        "{err}"
    );
    let peak_mib = usage.ru_maxrss / 1024;
    assert!(
        peak_mib < 400,
        "bakeoff diff peaked at {peak_mib} MiB:\n{err}"
    );
    // `call` keeps the answer it prints the same way.
    fails_with(
        &["call", &format!("{url}/"), "--max-body", "1MiB"],
        &["larger than the 1 MiB kept to compare it"],
    );
}

/// An inline compat request past `--max-body` is a plan error: never sent, it read as both
/// contenders failing alike ("1 of 1 cases answer like a"). Limits below a MiB are said as
/// given, not as "0 MiB".
#[test]
fn an_inline_request_past_max_body_is_refused_not_counted_as_a_match() {
    let dir = TempDir::new("hostile-inline");
    let plan = dir.path().join("plan.toml");
    let big = "x".repeat(2000);
    std::fs::write(
        &plan,
        format!("name = \"t\"\n[[contender]]\nname = \"a\"\ncommand = [\"sh\", \"-c\", \"sleep 1\"]\n\n[[compat]]\nhttp = \"POST /\"\nrequests = [\"small\", \"{big}\"]\n"),
    )
    .unwrap();
    let e = fails_with(
        &[
            "plan",
            "check",
            plan.to_str().unwrap(),
            "--max-body",
            "1KiB",
        ],
        &[
            "requests[1] is 2000 bytes, more than the 1 KiB",
            "--max-body",
            "plan.toml:8:",
        ],
    );
    assert!(!e.contains("0 MiB"), "{e}");
    // The flag is offered where requests are sent or answers kept, not by every command.
    let help = |args: &[&str]| {
        let o = bakeoff(args);
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    for with in [["load", "--help"], ["run", "--help"], ["diff", "--help"]] {
        assert!(help(&with).contains("--max-body"), "{with:?}");
    }
    for without in [
        ["cache", "--help"],
        ["merge", "--help"],
        ["cleanup", "--help"],
    ] {
        assert!(!help(&without).contains("--max-body"), "{without:?}");
    }
    fails_with(
        &[
            "load",
            "--max-body",
            "1KiB",
            "-d",
            "{fill:5000:x}",
            "http://127.0.0.1:1/",
        ],
        &["more than the 1 KiB limit"],
    );
}
