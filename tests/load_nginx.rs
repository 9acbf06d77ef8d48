//! `bakeoff load` against a real nginx on loopback: counts, statuses, h2c, durations,
//! warm-up, reproducible templates and JSON-RPC error classes.

mod common;

use bakeoff::load::result::Latency;
use common::*;

#[test]
fn counts_statuses_bytes_and_histogram_agree() {
    let Some(ng) = start_nginx() else { return };
    let v = bakeoff_json(&["load", "-n", "500", "-c", "4", &ng.url("/index.html")]);
    assert_eq!(v["schema_version"], 1);
    assert_eq!(u(&v, "requests"), 500);
    assert_eq!(u(&v, "successes"), 500);
    assert_eq!(outcomes(&v), [("HTTP 200".to_string(), 500)]);
    assert_eq!(u(&v, "bytes"), 500 * INDEX.len() as u64);
    let lat: Latency = serde_json::from_value(v["latency_us"].clone()).unwrap();
    let h = lat.histogram().unwrap();
    assert_eq!(h.len(), 500);
    assert_eq!(h.value_at_quantile(0.99), lat.p99);
    assert!(lat.p50 > 0 && lat.p50 <= lat.p90 && lat.p90 <= lat.max);
    let per_second: u64 = v["timeline"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| u(s, "requests"))
        .sum();
    assert_eq!(per_second, 500);
    assert!(v["generator"]["cpu_us_per_request"].as_f64().unwrap() > 0.0);
}

#[test]
fn a_missing_path_is_counted_as_404_and_exits_2() {
    let Some(ng) = start_nginx() else { return };
    let out = bakeoff(&[
        "load",
        "-n",
        "300",
        "-c",
        "3",
        "--json",
        &ng.url("/missing"),
    ]);
    // No call succeeded: the result is printed, and the exit code says so.
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no call succeeded (300 failed)"));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(outcomes(&v), [("HTTP 404".to_string(), 300)]);
    assert_eq!(u(&v, "failures"), 300);
    assert_eq!(u(&v, "successes"), 0);
}

#[test]
fn fail_on_error_and_max_failures_set_the_exit_code_for_ci() {
    let Some(ng) = start_nginx() else { return };
    let dir = TempDir::new("load-exit");
    let paths = dir.path().join("paths");
    // One request in four asks for a page that is not there.
    std::fs::write(&paths, "index.html\nindex.html\nindex.html\nmissing\n").unwrap();
    let url = ng.url(&format!("/{{line:{}}}", paths.display()));
    let code = |extra: &[&str]| {
        let mut args = vec!["load", "-n", "200", "-c", "1", &url];
        args.extend(extra);
        let out = bakeoff(&args);
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    assert_eq!(code(&[]).0, Some(0), "some calls succeeded");
    let (c, err) = code(&["--fail-on-error"]);
    assert_eq!(c, Some(2));
    assert!(
        err.contains("50 of 200 calls failed (--fail-on-error)"),
        "{err}"
    );
    let (c, err) = code(&["--max-failures", "10%"]);
    assert_eq!(c, Some(2));
    assert!(
        err.contains("25.00% of calls failed, more than --max-failures 10.00%"),
        "{err}"
    );
    assert_eq!(code(&["--max-failures", "30%"]).0, Some(0));
    let (c, err) = code(&["--max-failures", "lots"]);
    assert_eq!(c, Some(2), "clap's usage error");
    assert!(err.contains("not a percentage"), "{err}");
}

#[test]
fn http2_cleartext_works() {
    let Some(ng) = start_nginx() else { return };
    let v = bakeoff_json(&[
        "load",
        "--h2",
        "-n",
        "300",
        "-c",
        "2",
        &ng.h2_url("/index.html"),
    ]);
    assert!(v["target"].as_str().unwrap().starts_with("HTTP/2"));
    assert_eq!(outcomes(&v), [("HTTP 200".to_string(), 300)]);
    assert_eq!(u(&v, "bytes"), 300 * INDEX.len() as u64);
}

/// The lean HTTP/2 client (`protocol::lean2`) against a server that takes the protocol's
/// corners on every connection (tests/fixtures/h2_quirks.py): PINGs before answers, Huffman
/// headers entered in and evicted from the client's table, a 40 kB header past the whole
/// table cut into CONTINUATION frames, padded DATA, a 150 kB request body past the server's
/// window and a 4.5 MB answer past the client's, a GOAWAY while a call is in flight,
/// (second run) a header table of 0 for the client's requests and requests never answered,
/// and (third) requests refused unprocessed by a GOAWAY, through both HTTP/2 clients.
#[test]
fn the_lean_http2_client_takes_the_protocols_corners() {
    let dir = TempDir::new("h2quirks");
    let body = dir.path().join("body");
    std::fs::write(&body, vec![b'x'; 150_000]).unwrap();
    let body = body.to_str().unwrap();
    let answer = 30 * 150_000 + 100;

    let Some((_server, port)) = start_h2_quirks(&["4096", "0", "23"]) else {
        return;
    };
    let url = format!("http://127.0.0.1:{port}/");
    let args = [
        "load", "--h2", "-n", "50", "-c", "2", "-m", "POST", "-D", body, &url,
    ];
    let v = bakeoff_json(&args);
    assert_eq!(outcomes(&v), [("HTTP 200".to_string(), 50)], "{v}");
    assert_eq!(u(&v, "bytes"), 50 * answer);
    // Each connection's 23rd call saw the GOAWAY and the next call opened another.
    assert!(u(&v, "reconnects") >= 1, "{v}");

    let Some((_server, port)) = start_h2_quirks(&["0", "5", "0"]) else {
        return;
    };
    let url = format!("http://127.0.0.1:{port}/x?y=1");
    let v = bakeoff_json(&[
        "load",
        "--h2",
        "-n",
        "20",
        "-c",
        "1",
        "--timeout",
        "300ms",
        "-m",
        "POST",
        "-H",
        "x-token: abc",
        "-D",
        body,
        &url,
    ]);
    // Every fifth call on a connection is never answered: it times out, and the client
    // starts again on a new connection, so four of each five are answered.
    assert_eq!(
        outcomes(&v),
        [("HTTP 200".to_string(), 16), ("timeout".to_string(), 4)],
        "{v}"
    );
    assert_eq!(u(&v, "bytes"), 16 * answer);

    // Every fourth request on a connection is refused by a GOAWAY naming the third as the
    // last: not processed, so it is sent again on a new connection, and every call is
    // answered. Once each was a failure ("the server is closing the connection").
    let Some((_server, port)) = start_h2_quirks(&["4096", "0", "0", "4"]) else {
        return;
    };
    let url = format!("http://127.0.0.1:{port}/");
    let v = bakeoff_json(&["load", "--h2", "-n", "12", "-c", "1", &url]);
    assert_eq!(outcomes(&v), [("HTTP 200".to_string(), 12)], "{v}");
    // Three a connection: the 4th, 7th and 10th calls were sent again, each on a new one.
    assert_eq!(u(&v, "reconnects"), 3, "{v}");
    // The same through the `h2` crate's client.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_bakeoff"))
        .args(["load", "--h2", "-n", "12", "-c", "1", "--json", &url])
        .env("BAKEOFF_HTTP2_CLIENT", "h2")
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(
        outcomes(&v),
        [("HTTP 200".to_string(), 12)],
        "h2 crate: {v}"
    );
    assert_eq!(u(&v, "reconnects"), 3, "h2 crate: {v}");
}

#[test]
fn a_duration_bounds_the_run_and_warmup_is_excluded() {
    let Some(ng) = start_nginx() else { return };
    let v = bakeoff_json(&[
        "load",
        "-z",
        "1s",
        "-c",
        "2",
        "--warmup",
        "300ms",
        &ng.url("/index.html"),
    ]);
    let secs = v["duration_s"].as_f64().unwrap();
    assert!((0.95..3.0).contains(&secs), "ran for {secs} s");
    assert!(u(&v, "warmup_requests") > 0);
    assert!(u(&v, "requests") > 0);
    assert_eq!(v["warmup_s"].as_f64().unwrap(), 0.3);
    let n = bakeoff_json(&[
        "load",
        "-n",
        "50",
        "-c",
        "1",
        "--warmup",
        "200ms",
        &ng.url("/index.html"),
    ]);
    assert_eq!(
        u(&n, "requests"),
        50,
        "warm-up requests do not count toward -n"
    );
    assert!(u(&n, "warmup_requests") > 0);
}

#[test]
fn templated_paths_vary_and_a_seed_reproduces_them() {
    let Some(ng) = start_nginx() else { return };
    // f0..f2 exist, f3 does not: the mix of 200 and 404 depends only on the seed.
    let url = ng.url("/f{rand:0..4}.txt");
    let run = |seed: &str| {
        outcomes(&bakeoff_json(&[
            "load", "-n", "400", "-c", "4", "--seed", seed, &url,
        ]))
    };
    let a = run("7");
    assert_eq!(a.len(), 2, "both outcomes occur: {a:?}");
    assert_eq!(a[0].1 + a[1].1, 400);
    let (ok, missing) = (a[0].1, a[1].1);
    assert!(
        (220..380).contains(&ok),
        "about 3 in 4 exist: {ok} vs {missing}"
    );
    assert_eq!(run("7"), a, "same seed, same requests");
    assert_ne!(run("8"), a, "another seed, other requests");
}

#[test]
fn jsonrpc_error_objects_are_their_own_class() {
    let Some(ng) = start_nginx() else { return };
    // Every call answered with an error object: no call succeeded, exit 2.
    let e = bakeoff_json_exit(
        &[
            "load",
            "-n",
            "50",
            "-c",
            "2",
            "--jsonrpc",
            "getblock",
            "--params",
            "[{seq}]",
            &ng.url("/rpc/error"),
        ],
        2,
    );
    assert_eq!(outcomes(&e), [("JSON-RPC error -32601".to_string(), 50)]);
    assert_eq!(u(&e, "failures"), 50);
    let ok = bakeoff_json(&[
        "load",
        "-n",
        "50",
        "-c",
        "2",
        "--jsonrpc",
        "getblock",
        &ng.url("/rpc/ok"),
    ]);
    assert_eq!(outcomes(&ok), [("JSON-RPC result".to_string(), 50)]);
    assert_eq!(u(&ok, "successes"), 50);
}

#[test]
fn the_terminal_summary_is_compact_and_says_what_happened() {
    let Some(ng) = start_nginx() else { return };
    let out = bakeoff(&["load", "-n", "100", "-c", "2", &ng.url("/index.html")]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("Requests   100 in"), "{text}");
    assert!(text.contains("HTTP 200 × 100"), "{text}");
    assert!(text.contains("p99"), "{text}");
    assert!(
        out.stderr.is_empty(),
        "no progress bar when not on a terminal"
    );
}

/// docs/load.md shows what `bakeoff load -z 3s -c 16 URL` printed against nginx: the same
/// lines, in the same order, come out now (numbers aside).
#[test]
fn the_readmes_load_output_is_what_load_prints() {
    let Some(ng) = start_nginx() else { return };
    let page = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/load.md"),
    )
    .unwrap();
    let shown = page
        .split("What it printed against nginx")
        .nth(1)
        .and_then(|b| b.split("```").nth(1))
        .expect("docs/load.md shows load's output");
    let labels = |text: &str| -> Vec<String> {
        text.lines()
            .filter_map(|l| l.split_whitespace().next())
            .map(str::to_string)
            .collect()
    };
    let out = bakeoff(&["load", "-z", "1s", "-c", "16", &ng.url("/index.html")]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let printed = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        labels(shown),
        labels(&printed),
        "docs/load.md:\n{shown}\nnow:\n{printed}"
    );
    assert_eq!(
        labels(shown),
        [
            "Target",
            "Load",
            "Requests",
            "Latency",
            "Outcomes",
            "Generator"
        ]
    );
}

/// `bakeoff load … --json` with the load threads waiting the way bakeoff chooses for a closed
/// loop of fixed HTTP/1.1 calls (the engine's own ring, or blocking calls for a thread with one
/// connection), or through the runtime (`epoll`).
fn load_waiting_by(io: Option<&str>, args: &[&str]) -> serde_json::Value {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_bakeoff"));
    cmd.args(args)
        .arg("--json")
        .stdin(std::process::Stdio::null());
    match io {
        Some(way) => cmd.env("BAKEOFF_LOAD_IO", way),
        None => cmd.env_remove("BAKEOFF_LOAD_IO"),
    };
    let out = cmd.output().expect("bakeoff runs");
    assert!(
        out.status.success(),
        "bakeoff {args:?} ({io:?}) failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON")
}

#[test]
fn every_way_of_driving_calls_reads_http1s_corners_alike() {
    // Of every nine requests the fixture answers seven (by length in pieces, chunked, after
    // a 100 Continue, then closing, HTTP/1.0 until close, a 300 kB body, a 100 kB header),
    // never answers one and closes on one unanswered.
    // Three ways: the ring (three clients on one load thread), blocking calls (one client on
    // each of three) and the runtime.
    let nine_bytes = 6 * 37 + 300_000;
    for (io, threads, expected) in [
        (None, "1", "io_uring"),
        (None, "3", "blocking"),
        (Some("epoll"), "1", "epoll"),
    ] {
        let (_server, port) = start_http1_quirks(None);
        let url = format!("http://127.0.0.1:{port}/");
        let v = load_waiting_by(
            io,
            &[
                "load",
                "-n",
                "90",
                "-c",
                "3",
                "-t",
                threads,
                "--timeout",
                "300ms",
                &url,
            ],
        );
        let way = v["generator"]["io"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        if expected == "io_uring"
            && !present_or_skip(
                way == "io_uring",
                "io_uring: the kernel refused a ring, so the load went through the runtime",
            )
        {
            continue;
        }
        assert_eq!(way, expected, "{v}");
        assert_eq!(
            outcomes(&v),
            [
                ("HTTP 200".to_string(), 70),
                ("timeout".to_string(), 10),
                ("connection error".to_string(), 10)
            ],
            "{way}: {v}"
        );
        assert_eq!(u(&v, "bytes"), 10 * nine_bytes, "{way}: {v}");
        // Every close and every failed call made the client's next call open a connection,
        // except where it was that client's last call.
        let reconnects = u(&v, "reconnects");
        assert!((37..=40).contains(&reconnects), "{way}: {v}");
        let detail = v["outcomes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["label"] == "connection error")
            .map(|o| o.to_string())
            .unwrap_or_default();
        assert!(
            detail.contains("closed before a response"),
            "{way}: {detail}"
        );
    }
}

#[test]
fn a_refused_connection_is_counted_and_followed_by_a_pause_every_way() {
    // The fixture accepts two connections, then refuses: each client's first close (way 3
    // at the latest) sends it to connections refused, each followed by a 10 ms pause, so
    // a 500 ms run counts at most some fifty a client — not thousands.
    for (io, threads) in [(None, "1"), (None, "2"), (Some("epoll"), "1")] {
        let (_server, port) = start_http1_quirks(Some(2));
        let url = format!("http://127.0.0.1:{port}/");
        let v = load_waiting_by(
            io,
            &[
                "load",
                "-z",
                "500ms",
                "-c",
                "2",
                "-t",
                threads,
                "--timeout",
                "300ms",
                &url,
            ],
        );
        let refused = outcomes(&v)
            .iter()
            .find(|(label, _)| label == "connect error")
            .map_or(0, |(_, n)| *n);
        assert!((1..=130).contains(&refused), "{io:?} -t {threads}: {v}");
        assert!(u(&v, "requests") <= 150, "{io:?} -t {threads}: {v}");
    }
}

#[test]
fn a_target_that_never_answers_a_connection_costs_one_timeout_not_one_a_client() {
    // Forty clients, 300 ms each to connect, to a target whose queue is full: the
    // connections are waited for together, so the run is refused after about one timeout
    // — one after another they took twelve seconds. The bound is the timeout's, with room
    // for a busy host; each way of driving the calls is held to it.
    let (_server, port) = start_full_backlog();
    let url = format!("http://127.0.0.1:{port}/");
    for io in [None, Some("epoll")] {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_bakeoff"));
        cmd.args([
            "load",
            "-n",
            "100",
            "-c",
            "40",
            "-t",
            "1",
            "--timeout",
            "300ms",
            &url,
        ])
        .stdin(std::process::Stdio::null());
        match io {
            Some(way) => cmd.env("BAKEOFF_LOAD_IO", way),
            None => cmd.env_remove("BAKEOFF_LOAD_IO"),
        };
        let started = std::time::Instant::now();
        let out = cmd.output().expect("bakeoff runs");
        let took = started.elapsed();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{io:?}: {err}");
        assert!(
            err.contains("300ms") || err.contains("timed out"),
            "{io:?}: {err}"
        );
        assert!(
            took < std::time::Duration::from_secs(6),
            "{io:?}: {took:?} for 40 connections of 300 ms: {err}"
        );
    }
}

/// Runs `bakeoff load … --json` with `env` set, and returns its result and its peak resident
/// memory in KiB, as GNU time reads it (`time`, forked from a small program: a child forked
/// from this test would start its reading at the test's own peak).
fn load_peak(
    time: &std::path::Path,
    args: &[&str],
    env: Option<(&str, &str)>,
) -> (serde_json::Value, i64) {
    let dir = TempDir::new("load-peak");
    let peak = dir.path().join("peak");
    let mut cmd = std::process::Command::new(time);
    cmd.args(["-f", "%M", "-o"])
        .arg(&peak)
        .arg(env!("CARGO_BIN_EXE_bakeoff"))
        .args(args)
        .arg("--json")
        .stdin(std::process::Stdio::null())
        .env_remove("BAKEOFF_LOAD_IO");
    if let Some((k, v)) = env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("bakeoff runs");
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{args:?}: {e}: {}", String::from_utf8_lossy(&out.stdout)));
    let kib = std::fs::read_to_string(&peak).unwrap();
    let kib = kib
        .trim()
        .parse()
        .unwrap_or_else(|e| panic!("{kib:?}: {e}"));
    (v, kib)
}

#[test]
fn memory_stays_flat_in_request_count_every_way() {
    // Forty times the requests, each way of driving calls: blocking calls (one connection),
    // the ring and the runtime (four), HTTP/2 (four). Histograms and counters, not samples:
    // the peak grows by less than 4 MiB, which 200 bytes kept a request would pass.
    let Some(time) = require("GNU time", "BAKEOFF_TEST_TIME", &["/usr/bin/time".into()]) else {
        return;
    };
    let Some(ng) = start_nginx() else { return };
    let h1 = ng.url("/index.html");
    let h2 = ng.h2_url("/index.html");
    type Way<'a> = (&'a str, &'a [&'a str], Option<(&'a str, &'a str)>);
    let ways: [Way; 4] = [
        ("blocking", &["-c", "1", &h1], None),
        ("io_uring", &["-c", "4", &h1], None),
        (
            "epoll",
            &["-c", "4", &h1],
            Some(("BAKEOFF_LOAD_IO", "epoll")),
        ),
        ("epoll", &["-c", "4", "--h2", &h2], None),
    ];
    for (way, args, env) in ways {
        let mut peaks = Vec::new();
        for n in ["500", "20000"] {
            let mut all = vec!["load", "-n", n, "-t", "1"];
            all.extend_from_slice(args);
            let (v, kib) = load_peak(&time, &all, env);
            let io = v["generator"]["io"].as_str().unwrap_or_default();
            if way == "io_uring"
                && !present_or_skip(io == way, "io_uring: the kernel refused a ring")
            {
                break;
            }
            assert_eq!(io, way, "{args:?}: {v}");
            assert_eq!(u(&v, "requests"), n.parse::<u64>().unwrap(), "{v}");
            peaks.push(kib);
        }
        if let [small, large] = peaks[..] {
            assert!(
                large - small < 4096,
                "{way} {args:?}: peak {small} KiB at 500 requests, {large} KiB at 20,000"
            );
        }
    }
}

/// A server that takes `clients` connections and reads a request from each, never answering:
/// its port, and a channel that gets a message once every request is in. Each connection is
/// held until the test drops the returned sender.
fn start_silent(
    clients: usize,
) -> (
    u16,
    std::sync::mpsc::Receiver<()>,
    std::sync::mpsc::Sender<()>,
) {
    use std::io::Read;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (all_in, got) = std::sync::mpsc::channel();
    let (hold, until) = std::sync::mpsc::channel::<()>();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for _ in 0..clients {
            let Ok((mut s, _)) = listener.accept() else {
                return;
            };
            let mut seen = Vec::new();
            let mut buf = [0u8; 1024];
            while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
                match s.read(&mut buf) {
                    Ok(0) | Err(_) => return,
                    Ok(n) => seen.extend_from_slice(&buf[..n]),
                }
            }
            held.push(s);
        }
        let _ = all_in.send(());
        // Held open until the test is done with them.
        let _ = until.recv();
    });
    (port, got, hold)
}

/// `bakeoff load` of `clients` clients for 5 minutes, each call's timeout 60 s, against
/// 127.0.0.1:`port`, its calls driven the way `io` asks (`BAKEOFF_LOAD_IO`) or the default;
/// its result as JSON. For a test that stops it long before either.
fn load_for_minutes(io: Option<&str>, clients: &str, port: u16) -> std::process::Command {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_bakeoff"));
    cmd.args(["load", "-z", "5m", "--warmup", "0s", "--timeout", "60s"])
        .args(["-c", clients, "-t", "1", "--json"])
        .arg(format!("http://127.0.0.1:{port}/"));
    match io {
        Some(way) => cmd.env("BAKEOFF_LOAD_IO", way),
        None => cmd.env_remove("BAKEOFF_LOAD_IO"),
    };
    cmd
}

/// What a load stopped by SIGINT `took` to end (`out`) must be: exit 130, well within the
/// calls' 60 s timeout (20 s: far from both it and the grace, for a busy host; a bound, not a
/// speed), and its result, printed, says it was interrupted. The result.
fn stopped_in_the_grace(
    out: &std::process::Output,
    took: std::time::Duration,
    what: &str,
) -> serde_json::Value {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{what}: {err}");
    assert!(
        took < std::time::Duration::from_secs(20),
        "{what}: {took:?} after SIGINT, the calls' timeout is 60 s: {err}"
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(v["interrupted"], true, "{what}: {v}");
    v
}

#[test]
fn a_stop_gives_calls_in_flight_the_grace_not_their_timeout_every_way() {
    // Every client's call is in flight on a server that never answers, with a 60 s timeout:
    // SIGINT ends the load about the grace (1 s) later, the calls given up are unfinished,
    // not failures. The bound is far from both (a busy host), not a speed; once a stop
    // waited out each call's timeout.
    for (io, clients) in [(None, "1"), (None, "3"), (Some("epoll"), "2")] {
        let n: usize = clients.parse().unwrap();
        let (port, all_in, _hold) = start_silent(n);
        let cmd = load_for_minutes(io, clients, port);
        let what = format!("{io:?} -c {clients}");
        let (out, took) = interrupted(
            cmd,
            || {
                all_in
                    .recv_timeout(std::time::Duration::from_secs(30))
                    .expect("every client's request reached the server");
            },
            &what,
        );
        let v = stopped_in_the_grace(&out, took, &format!("{io:?} -c {clients}"));
        assert_eq!(u(&v, "unfinished"), n as u64, "{io:?} -c {clients}: {v}");
        assert_eq!(
            (u(&v, "requests"), u(&v, "failures")),
            (0, 0),
            "{io:?} -c {clients}: {v}"
        );
    }
}

/// A server whose listen queue holds one connection: it takes `clients` connections, fills
/// its queue with one of its own it never takes, then reads a request from each client and
/// closes it. Each client's call fails, and its reconnect's SYN is dropped (a full queue), so
/// the connection is never made. Its port, a channel that gets a message once every client's
/// connection is closed, and a sender: the server is held until it is dropped.
fn start_full_queue(
    clients: usize,
) -> (
    u16,
    std::sync::mpsc::Receiver<()>,
    std::sync::mpsc::Sender<()>,
) {
    use std::io::Read;
    use std::os::fd::FromRawFd;
    // SAFETY: a plain socket(2), bound to 127.0.0.1:0 and listening with a backlog of 0 (one
    // connection waits in the queue), then owned by the listener.
    let listener = unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        assert!(fd >= 0);
        let mut sa: libc::sockaddr_in = std::mem::zeroed();
        sa.sin_family = libc::AF_INET as libc::sa_family_t;
        sa.sin_addr.s_addr = u32::from_ne_bytes([127, 0, 0, 1]);
        let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
        assert_eq!(
            libc::bind(fd, (&sa as *const libc::sockaddr_in).cast(), len),
            0
        );
        assert_eq!(libc::listen(fd, 0), 0);
        std::net::TcpListener::from_raw_fd(fd)
    };
    let port = listener.local_addr().unwrap().port();
    let (hold, until) = std::sync::mpsc::channel::<()>();
    let (all_closed, closed) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut taken = Vec::new();
        for _ in 0..clients {
            let Ok((s, _)) = listener.accept() else {
                return;
            };
            taken.push(s);
        }
        let filler = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        for mut s in taken {
            let mut seen = Vec::new();
            let mut buf = [0u8; 1024];
            while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
                match s.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => seen.extend_from_slice(&buf[..n]),
                }
            }
        }
        // Every client's connection closed here; the filler and the listener stay.
        let _ = all_closed.send(());
        let _ = until.recv();
        drop((filler, listener));
    });
    (port, closed, hold)
}

/// How many of this host's TCP connections to `port` are still sending their SYN.
fn connecting_to(port: u16) -> usize {
    let table = std::fs::read_to_string("/proc/net/tcp").unwrap_or_default();
    table
        .lines()
        .skip(1)
        .filter(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            let to = f.get(2).and_then(|r| r.rsplit_once(':'));
            to.and_then(|(_, p)| u16::from_str_radix(p, 16).ok()) == Some(port)
                && f.get(3) == Some(&"02")
        })
        .count()
}

/// `bakeoff load -c clients` (through `io`, or the default way) with a 60 s timeout against
/// a server whose listen queue is full ([`start_full_queue`], which takes `taken` clients
/// first), sent SIGINT once `clients` connections to it are sending their SYN: its output,
/// and how long it ran after the signal.
fn stop_while_connecting(
    io: Option<&str>,
    clients: &str,
    taken: usize,
) -> (std::process::Output, std::time::Duration) {
    let n: usize = clients.parse().unwrap();
    let (port, closed, _hold) = start_full_queue(taken);
    let cmd = load_for_minutes(io, clients, port);
    let what = format!("{io:?} -c {clients}");
    interrupted(
        cmd,
        || {
            closed
                .recv_timeout(std::time::Duration::from_secs(30))
                .expect("every client taken reached the server");
            // Each connection on its way now is one the server will never take: the ones it
            // takes were all taken.
            let asked = std::time::Instant::now();
            while connecting_to(port) < n {
                assert!(
                    asked.elapsed() < std::time::Duration::from_secs(30),
                    "{what}: the clients never connected again"
                );
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
        },
        &what,
    )
}

#[test]
fn a_stop_gives_a_reconnect_the_grace_not_its_timeout_every_way() {
    // Each client's first call fails (the server closes its connection) and its reconnect is
    // never answered (the server's queue is full, so the SYN is dropped), with a 60 s
    // timeout. SIGINT ends the load about the grace (1 s) later, each reconnect given up as
    // unfinished; once a blocking client's reconnect waited out its whole timeout.
    for (io, clients) in [(None, "1"), (None, "2"), (Some("epoll"), "2")] {
        let n: u64 = clients.parse().unwrap();
        let (out, took) = stop_while_connecting(io, clients, n as usize);
        let v = stopped_in_the_grace(&out, took, &format!("{io:?} -c {clients}"));
        assert_eq!(u(&v, "unfinished"), n, "{io:?} -c {clients}: {v}");
        assert_eq!(u(&v, "failures"), n, "{io:?} -c {clients}: {v}");
    }
}

#[test]
fn a_stop_while_the_first_connections_are_made_ends_them_at_once_every_way() {
    // No connection can be made at all (the server's queue is full from the start): SIGINT
    // while every client is sending its SYN ends the command at once, exit 130, saying that
    // nothing was sent, not that the target cannot be reached. Once it waited out the whole
    // 60 s timeout and then said the target could not be reached.
    for (io, clients) in [(None, "1"), (None, "2"), (Some("epoll"), "2")] {
        let (out, took) = stop_while_connecting(io, clients, 0);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(130), "{io:?} -c {clients}: {err}");
        assert!(
            took < std::time::Duration::from_secs(20),
            "{io:?} -c {clients}: {took:?} after SIGINT, the timeout is 60 s: {err}"
        );
        assert!(
            err.contains("interrupted before any load was sent"),
            "{io:?} -c {clients}: {err}"
        );
        assert!(
            out.stdout.is_empty(),
            "{io:?} -c {clients}: no result to print"
        );
    }
}
