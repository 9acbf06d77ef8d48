//! Every kind of gRPC call, metadata, trailers and server reflection, against a small real
//! gRPC server written with Python grpcio (tests/fixtures/grpc/grpc_server.py), and against
//! etcd's own bidi streams (Lease/LeaseKeepAlive, Watch/Watch).

mod common;

use common::*;

/// etcd's own `.proto` files, kept with the example plan.
const ETCD_PROTO: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/examples/etcd/protos/rpc.proto"
);

fn run(args: &[&str]) -> (bool, String, String) {
    let out = bakeoff(args);
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn call_json(args: &[&str]) -> serde_json::Value {
    let mut a = vec!["call"];
    a.extend(args);
    bakeoff_json(&a)
}

#[test]
fn reflection_lists_describes_and_builds_messages_without_a_proto() {
    let Some(both) = start_grpc_fixture(&[]) else {
        return;
    };
    let Some(alpha) = start_grpc_fixture(&["--reflection", "v1alpha"]) else {
        return;
    };
    let Some(none) = start_grpc_fixture(&["--no-reflection"]) else {
        return;
    };
    for f in [&both, &alpha] {
        let (ok, out, err) = run(&["call", "--grpc", &f.url, "--list"]);
        assert!(ok, "{err}");
        assert!(out.contains("fixture.Echo\n"), "{out}");
        assert!(
            out.contains("Sum (client-streaming): fixture.Num → fixture.Total"),
            "{out}"
        );
        assert!(out.contains("Chat (bidi)"), "{out}");
        assert!(!out.contains("grpc.reflection"), "{out}");
    }
    // v1 where the server has it; v1alpha after v1 answered UNIMPLEMENTED.
    assert!(both.out.lock().unwrap().contains("reflection v1 asked"));
    assert!(!alpha.out.lock().unwrap().contains("reflection v1 asked"));
    let (ok, out, err) = run(&[
        "call",
        "--grpc",
        &both.url,
        "--describe",
        "fixture.Echo/Unary",
    ]);
    assert!(ok, "{err}");
    let skeleton: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        skeleton,
        serde_json::json!({"text": "", "seq": "0", "fail": 0})
    );
    assert!(
        err.contains("fixture.Echo/Unary (unary): fixture.Msg → fixture.Msg"),
        "{err}"
    );
    // Load and call without --proto.
    let v = bakeoff_json(&[
        "load",
        "--grpc",
        &alpha.url,
        "--call",
        "fixture.Echo/Unary",
        "-d",
        r#"{"text": "hi", "seq": {seq}}"#,
        "-n",
        "40",
        "-c",
        "2",
    ]);
    assert_eq!(u(&v, "successes"), 40, "{v}");
    let v = call_json(&[
        "--grpc",
        &both.url,
        "--call",
        "fixture.Echo/Unary",
        "-d",
        r#"{"text":"hi"}"#,
    ]);
    assert_eq!(v["messages"][0]["text"], "hi", "{v}");
    // A server without reflection: say what to do instead.
    let (ok, _, err) = run(&["call", "--grpc", &none.url, "--call", "fixture.Echo/Unary"]);
    assert!(!ok);
    assert!(
        err.contains("offers no reflection")
            && err.contains("pass the service's .proto with --proto FILE"),
        "{err}"
    );
}

#[test]
fn client_streaming_and_bidi_calls_send_every_message() {
    let Some(f) = start_grpc_fixture(&[]) else {
        return;
    };
    // Message i of call s is request number s·n + i: {seq} differs per message.
    let body = r#"[{"value": {seq}, "address": "t1"}, {"value": {seq}, "address": "t1"}, {"value": 10, "address": "t2"}]"#;
    let v = call_json(&["--grpc", &f.url, "--call", "fixture.Echo/Sum", "-d", body]);
    assert_eq!(
        v["messages"][0],
        serde_json::json!({"sum": "11", "count": "3", "distinct": "2"}),
        "{v}"
    );
    // One object is a stream of one message.
    let v = call_json(&[
        "--grpc",
        &f.url,
        "--call",
        "fixture.Echo/Sum",
        "-d",
        r#"{"value": 5}"#,
    ]);
    assert_eq!(v["messages"][0]["count"], "1", "{v}");
    // Bidi: every answer is an item.
    let v = bakeoff_json(&[
        "load",
        "--grpc",
        &f.url,
        "--call",
        "fixture.Echo/Chat",
        "-d",
        r#"[{"text": "a"}, {"text": "b"}, {"text": "c"}]"#,
        "-n",
        "30",
        "-c",
        "3",
    ]);
    assert_eq!(u(&v, "successes"), 30, "{v}");
    assert_eq!(u(&v, "items"), 90, "{v}");
    assert!(v["target"].as_str().unwrap().ends_with("(bidi)"), "{v}");
    let v = call_json(&[
        "--grpc",
        &f.url,
        "--call",
        "fixture.Echo/Chat",
        "-d",
        r#"[{"text": "a"}, {"text": "b"}]"#,
    ]);
    assert_eq!(v["messages"][1]["text"], "B", "{v}");
    // --stream-interval spaces the messages: two pauses of 60 ms are in every call's time.
    let v = bakeoff_json(&[
        "load",
        "--grpc",
        &f.url,
        "--call",
        "fixture.Echo/Sum",
        "-d",
        r#"[{"value": 1}, {"value": 2}, {"value": 3}]"#,
        "--stream-interval",
        "60ms",
        "-n",
        "4",
        "-c",
        "2",
    ]);
    assert_eq!(u(&v, "successes"), 4, "{v}");
    let min = v["latency_us"]["min"].as_u64().unwrap();
    assert!(min >= 120_000, "the whole call is timed: min {min} µs");
    // A message that does not fit the method's input is an error before anything is sent,
    // naming the message.
    let (ok, _, err) = run(&[
        "call",
        "--grpc",
        &f.url,
        "--call",
        "fixture.Echo/Sum",
        "-d",
        r#"[{"value": 1}, {"nope": 2}]"#,
    ]);
    assert!(
        !ok && err.contains("fixture.Num") && err.contains("nope"),
        "{err}"
    );
}

#[test]
fn metadata_is_sent_and_binary_keys_are_base64() {
    let Some(f) = start_grpc_fixture(&[]) else {
        return;
    };
    let v = call_json(&[
        "--grpc",
        &f.url,
        "--call",
        "fixture.Echo/Metadata",
        "-H",
        "authorization: Bearer t0ken",
        "-H",
        "x-trace-bin: AAEC/w==",
    ]);
    let pairs = v["messages"][0]["pairs"].as_array().unwrap();
    let get = |k: &str| {
        pairs
            .iter()
            .find(|p| p["key"] == k)
            .map(|p| p["value"].as_str().unwrap().to_string())
    };
    assert_eq!(get("authorization").as_deref(), Some("Bearer t0ken"), "{v}");
    // The server decodes -bin values; it echoes the bytes in base64.
    assert_eq!(get("x-trace-bin").as_deref(), Some("AAEC/w=="), "{v}");
    let (ok, _, err) = run(&[
        "call",
        "--grpc",
        &f.url,
        "--call",
        "fixture.Echo/Metadata",
        "-H",
        "x-trace-bin: not base64!",
    ]);
    assert!(
        !ok && err.contains("metadata `x-trace-bin` is a binary key"),
        "{err}"
    );
}

#[test]
fn compat_compares_status_messages_trailers_and_streams() {
    let Some(a) = start_grpc_fixture(&["--variant", "a"]) else {
        return;
    };
    let Some(a2) = start_grpc_fixture(&["--variant", "a"]) else {
        return;
    };
    let Some(b) = start_grpc_fixture(&["--variant", "b", "--count-duplicates"]) else {
        return;
    };
    let dir = TempDir::new("grpc-compat");
    let cases = dir.path().join("cases.toml");
    // No protos: reflection describes the calls.
    std::fs::write(
        &cases,
        r#"
[[compat]]
name = "unary"
grpc = "fixture.Echo/Unary"
requests = ['{"text": "same"}', '{"text": "gone", "fail": 5}']

[[compat]]
name = "balance"
grpc = "fixture.Echo/Sum"
requests = ['[{"value": 1, "address": "t1"}, {"value": 2, "address": "t1"}]']
"#,
    )
    .unwrap();
    let out = bakeoff(&[
        "diff",
        "--cases",
        cases.to_str().unwrap(),
        &a.url,
        &b.url,
        "--noise",
        &a2.url,
        "--json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let text = v.to_string();
    let classes: Vec<(String, String)> = v["report"]["sets"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["contenders"][0]["classes"].as_array().unwrap().clone())
        .map(|c| {
            (
                c["kind"].as_str().unwrap().into(),
                c["class"].as_str().unwrap().into(),
            )
        })
        .collect();
    let has = |kind: &str, class: &str| classes.iter().any(|(k, c)| k == kind && c.contains(class));
    // The same NOT_FOUND with another message is a difference of its own kind.
    assert!(
        has(
            "message_differs",
            "status message differs on gRPC NOT_FOUND"
        ),
        "{classes:?}"
    );
    // The trailer x-variant differs on the OK answer.
    assert!(has("trailer_differs", "x-variant"), "{classes:?}");
    // Counting a duplicate address twice (seed 000's GetTaddressBalanceStream) is found.
    assert!(has("value_differs", "distinct"), "{classes:?}\n{text}");
}

#[test]
fn etcd_bidi_streams_lease_keepalive_and_watch() {
    let Some(bin) = etcd35_bin() else {
        return;
    };
    let etcd = start_etcd(&bin);
    let proto = ETCD_PROTO;
    let url = etcd.url();
    let lease = call_json(&[
        "--grpc",
        &url,
        "--proto",
        proto,
        "--call",
        "etcdserverpb.Lease/LeaseGrant",
        "-d",
        r#"{"TTL": 60}"#,
    ]);
    let id = lease["messages"][0]["ID"].as_str().unwrap().to_string();
    let body = format!(r#"[{{"ID": {id}}}, {{"ID": {id}}}]"#);
    let v = bakeoff_json(&[
        "load",
        "--grpc",
        &url,
        "--proto",
        proto,
        "--call",
        "etcdserverpb.Lease/LeaseKeepAlive",
        "-d",
        &body,
        "-n",
        "50",
        "-c",
        "2",
    ]);
    assert_eq!(u(&v, "successes"), 50, "{v}");
    assert_eq!(u(&v, "items"), 100, "one answer per keep-alive: {v}");
    // etcd keeps a watch stream open until the client goes: --replies ends each call.
    let v = bakeoff_json(&[
        "load",
        "--grpc",
        &url,
        "--proto",
        proto,
        "--call",
        "etcdserverpb.Watch/Watch",
        "-d",
        r#"[{"create_request": {"key": "d2F0Y2g="}}]"#,
        "--replies",
        "1",
        "-n",
        "20",
        "-c",
        "2",
        "--timeout",
        "5s",
    ]);
    assert_eq!(u(&v, "successes"), 20, "{v}");
    assert_eq!(u(&v, "items"), 20, "{v}");
    let w = call_json(&[
        "--grpc",
        &url,
        "--proto",
        proto,
        "--call",
        "etcdserverpb.Watch/Watch",
        "-d",
        r#"[{"create_request": {"key": "d2F0Y2g="}}]"#,
        "--replies",
        "1",
    ]);
    assert_eq!(w["messages"][0]["created"], true, "{w}");
    // Without --replies the call hits its timeout; what arrived before is still shown.
    let (ok, out, err) = run(&[
        "call",
        "--grpc",
        &url,
        "--proto",
        proto,
        "--call",
        "etcdserverpb.Watch/Watch",
        "-d",
        r#"[{"create_request": {"key": "d2F0Y2g="}}]"#,
        "--timeout",
        "1s",
    ]);
    assert!(
        !ok && err.contains("1 messages arrived before") && err.contains("no answer within 1s"),
        "{err}"
    );
    assert!(out.contains("\"created\": true"), "{out}");
    // Under load the same: each call is a timeout, and the message each received before it
    // still counts as an item (items/s is a stream's figure); no call succeeded: exit 2.
    let v = bakeoff_json_exit(
        &[
            "load",
            "--grpc",
            &url,
            "--proto",
            proto,
            "--call",
            "etcdserverpb.Watch/Watch",
            "-d",
            r#"[{"create_request": {"key": "d2F0Y2g="}}]"#,
            "-n",
            "3",
            "-c",
            "1",
            "--timeout",
            "300ms",
        ],
        2,
    );
    assert_eq!((u(&v, "requests"), u(&v, "successes")), (3, 0), "{v}");
    assert_eq!(u(&v, "items"), 3, "one `created` message per call: {v}");
}

#[test]
fn a_stream_a_stop_cuts_keeps_the_items_it_received() {
    // Two watches on etcd, each answered with its `created` message and then open for as
    // long as the client waits (a 60 s timeout). SIGINT once etcd has both: the calls get the
    // stop's grace and are then cut, unfinished, and the message each received still counts
    // as an item, as it does for a call that times out. Once the cut lost them: items 0.
    let Some(bin) = etcd35_bin() else {
        return;
    };
    let etcd = start_etcd(&bin);
    let proto = ETCD_PROTO;
    let url = etcd.url();
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_bakeoff"));
    cmd.args(["load", "--grpc", &url, "--proto", proto])
        .args(["--call", "etcdserverpb.Watch/Watch"])
        .args(["-d", r#"[{"create_request": {"key": "d2F0Y2g="}}]"#])
        .args([
            "-z",
            "5m",
            "--warmup",
            "0s",
            "--timeout",
            "60s",
            "-c",
            "2",
            "--json",
        ]);
    // etcd's own count of its watchers says when both calls are in.
    let watchers = || -> u64 {
        let Ok((200, body)) = http_get(etcd.client, "/metrics", std::time::Duration::from_secs(2))
        else {
            return 0;
        };
        body.lines()
            .find_map(|l| l.strip_prefix("etcd_debugging_mvcc_watcher_total "))
            .and_then(|n| n.trim().parse::<f64>().ok())
            .map_or(0, |n| n as u64)
    };
    let both_in = || {
        let asked = std::time::Instant::now();
        while watchers() < 2 {
            assert!(
                asked.elapsed() < std::time::Duration::from_secs(30),
                "etcd never had both watches"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    };
    let (out, _) = interrupted(cmd, both_in, "two watches");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{err}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(v["interrupted"], true, "{v}");
    assert_eq!(u(&v, "unfinished"), 2, "{v}");
    assert_eq!((u(&v, "requests"), u(&v, "failures")), (0, 0), "{v}");
    assert_eq!(u(&v, "items"), 2, "one `created` message per call: {v}");
}

/// A plan whose contender makes its own certificate at start ({state}/ca.pem), serves gRPC
/// over TLS with reflection, and is trusted through `tls` in its probe, a scenario and a
/// compat section; with no `protos` at all.
#[test]
fn a_plan_trusts_the_certificate_a_contender_makes() {
    if start_grpc_fixture(&["--no-reflection"]).is_none() {
        return;
    }
    let dir = TempDir::new("grpc-tls-plan");
    let certs = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/grpc/make_certs.sh"
    );
    let server = grpc_fixture_script();
    let contender = |name: &str| {
        format!(
            r#"
[[contender]]
name = "{name}"
setup = [["sh", "{certs}", "{{state}}"]]
command = ["python3", "{server}", "--port", "{{port}}", "--tls", "{{state}}/server.pem", "{{state}}/server.key"]
endpoint = "https://127.0.0.1:{{port}}"
ready = {{ grpc = "fixture.Echo/Unary", body = '{{"text": "ready?"}}', timeout = "60s", tls = {{ cacert = "{{state}}/ca.pem" }} }}
"#,
            server = server.display()
        )
    };
    let plan = format!(
        r#"
name = "grpc over tls"
baseline = "one"
repetitions = 1
{}{}
[[scenario]]
name = "echo"
grpc = "fixture.Echo/Unary"
body = '{{"text": "x{{seq}}"}}'
requests = 50
clients = 2
tls = {{ cacert = "{{state}}/ca.pem" }}

[[scenario]]
name = "chat"
grpc = "fixture.Echo/Chat"
body = '[{{"text": "a"}}, {{"text": "b"}}]'
requests = 20
tls = {{ cacert = "{{state}}/ca.pem" }}

[[compat]]
grpc = "fixture.Echo/Unary"
requests = ['{{"text": "same"}}']
tls = {{ cacert = "{{state}}/ca.pem", servername = "127.0.0.1" }}
"#,
        contender("one"),
        contender("two")
    );
    let r = run_plan(dir.path(), &plan, &[]);
    assert!(r.output.status.success(), "{}\n{}", r.stderr(), r.stdout());
    for c in ["one", "two"] {
        let run = r.run(c, 1);
        assert_eq!(run["status"], "complete", "{run}");
        let points = run["points"].as_array().unwrap();
        let echo = &points[0]["load"];
        assert_eq!(echo["successes"], 50, "{run}");
        assert!(echo["tls"].as_str().unwrap().contains("ALPN h2"), "{echo}");
        assert_eq!(points[1]["load"]["items"], 40, "{run}");
        assert_eq!(run["compat"][0]["outcome"], "gRPC OK", "{run}");
    }
    // The report says once per contender what TLS negotiated.
    let report = std::fs::read_to_string(r.out_dir.join("report/report.md")).unwrap();
    assert!(report.contains("TLS: one: TLSv1."), "{report}");
    // A streaming call's paired table has items/s beside req/s, in its CSV too (issue 25,
    // item 21); a unary call's has not.
    let chat = report.split("## chat").nth(1).unwrap_or_default();
    assert!(chat.contains("| req/s | items/s | CPU/req |"), "{report}");
    let echo = report.split("## echo").nth(1).unwrap_or_default();
    assert!(
        !echo.split("## ").next().unwrap().contains("items/s"),
        "{report}"
    );
    let csv = std::fs::read_to_string(r.out_dir.join("report/serving-chat.csv")).unwrap();
    assert!(csv.lines().next().unwrap().contains("items"), "{csv}");
}

/// A plan without `protos` asks the server's reflection for its messages until the server
/// first describes them, and not on every probe attempt after that (the descriptors are
/// kept per server): a server whose probe call keeps failing (UNAVAILABLE, its index not
/// built) is asked once, however many attempts the probe makes (issue 25, item 7).
#[test]
fn a_failing_probe_asks_reflection_once() {
    if start_grpc_fixture(&[]).is_none() {
        return;
    }
    let dir = TempDir::new("grpc-reflect-once");
    let server = grpc_fixture_script();
    let plan = format!(
        r#"
name = "reflect once"
repetitions = 1
[[contender]]
name = "starting"
command = ["python3", "{server}", "--port", "{{port}}"]
ready = {{ grpc = "fixture.Echo/Unary", body = '{{"text": "ready?", "fail": 14}}', timeout = "8s", interval = "20ms" }}

[[scenario]]
name = "echo"
grpc = "fixture.Echo/Unary"
body = '{{"text": "x"}}'
requests = 5
"#,
        server = server.display()
    );
    let run = run_plan(dir.path(), &plan, &[]);
    let err = run.stderr();
    assert!(
        err.contains("UNAVAILABLE") || err.contains("never got ready") || err.contains("ready"),
        "{err}"
    );
    let mut asked = 0;
    let mut logs = Vec::new();
    let mut stack = vec![run.out_dir.clone()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.to_string_lossy().contains("stdout") {
                let text = std::fs::read_to_string(&p).unwrap_or_default();
                asked += text.matches("reflection v1 asked").count();
                logs.push(p);
            }
        }
    }
    assert!(
        !logs.is_empty(),
        "no member log in {}",
        run.out_dir.display()
    );
    assert!(
        (1..=2).contains(&asked),
        "reflection asked {asked} times over an 8 s probe at 20 ms: {logs:?}\n{err}"
    );
}
