//! Start order: a member with `after = ["node"]` starts once the node passed its `ready`
//! probe; each member's own start and first response are recorded and shown.

mod common;

use common::*;

fn plan(after: &str) -> String {
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/after/member.py");
    let s = script.display();
    format!(
        r#"
name = "start order"
repetitions = 1
[[contender]]
name = "pair"
[[contender.member]]
name = "node"
endpoint = "http://127.0.0.1:{{port:node}}"
command = ["python3", "{s}", "{{port:node}}", "--slow", "0.4"]
ready = {{ http = "http://127.0.0.1:{{port:node}}/", status = 200 }}
[[contender.member]]
name = "indexer"
{after}
endpoint = "http://127.0.0.1:{{port:idx}}"
command = ["python3", "{s}", "{{port:idx}}", "--needs", "{{port:node}}"]
ready = {{ http = "http://127.0.0.1:{{port:idx}}/", status = 200 }}
[[scenario]]
name = "get"
http = "GET /"
requests = 20
"#
    )
}

#[test]
fn after_starts_a_member_once_the_members_it_names_are_ready() {
    let dir = TempDir::new("after");
    let run = run_plan(dir.path(), &plan("after = [\"node\"]"), &[]);
    assert!(run.output.status.success(), "{}", run.stderr());
    let x = run.run("pair", 1);
    assert_eq!(x["status"], "complete", "{x}");
    let members = x["startup"]["members"].as_array().unwrap();
    let (node, indexer) = (&members[0], &members[1]);
    assert_eq!(node["member"], "node");
    assert_eq!(indexer["member"], "indexer");
    // The node takes 0.4 s before it listens; the indexer was started after it answered.
    let node_first = node["first_response_s"].as_f64().unwrap();
    assert!(node_first >= 0.4, "{node}");
    assert!(
        indexer["started_s"].as_f64().unwrap() >= node_first,
        "{members:?}"
    );
    // Its own first response is timed from its own start, not the node's.
    assert!(
        indexer["first_response_s"].as_f64().unwrap()
            < x["startup"]["first_response_s"].as_f64().unwrap()
    );
    assert_eq!(x["points"][0]["load"]["successes"], 20);
    let report = run.stdout();
    assert!(report.contains("| pair | indexer | +"), "{report}");
}

#[test]
fn without_after_the_same_member_starts_too_early_and_says_why() {
    let dir = TempDir::new("after-none");
    let run = run_plan(dir.path(), &plan(""), &[]);
    let x = run.run("pair", 1);
    assert_eq!(x["status"], "failed", "{x}");
    let error = x["error"].as_str().unwrap();
    assert!(
        error.contains("member `indexer`") && error.contains("cannot reach the node"),
        "{error}"
    );
}

/// A compat reference that is a member bakeoff starts (seed 000 checked each indexer against
/// the node it runs beside): its answers are asked in the repetition where compat runs, and
/// recorded as coming from that member.
#[test]
fn a_reference_can_be_a_member_of_a_running_contender() {
    let dir = TempDir::new("member-ref");
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/after/member.py");
    let s = script.display();
    // The node knows block 5 by hash "aa"; v1's indexer agrees, v2's does not.
    for (folder, hash) in [("node", "aa"), ("v1", "aa"), ("v2", "bb")] {
        let d = dir.path().join(folder);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(
            d.join("5.json"),
            format!(r#"{{"height": 5, "hash": "{hash}"}}"#),
        )
        .unwrap();
    }
    let root = dir.path().display();
    let plan = format!(
        r#"
name = "reference member"
repetitions = 1
baseline = "v1"
[[contender]]
name = "v1"
# Listed first, so compat and load go to it; started after the node.
[[contender.member]]
name = "indexer"
after = ["node"]
endpoint = "http://127.0.0.1:{{port:idx}}"
command = ["python3", "{s}", "{{port:idx}}", "--root", "{root}/v1", "--needs", "{{port:node}}"]
ready = {{ http = "http://127.0.0.1:{{port:idx}}/5.json", status = 200 }}
[[contender.member]]
name = "node"
endpoint = "http://127.0.0.1:{{port:node}}"
command = ["python3", "{s}", "{{port:node}}", "--root", "{root}/node"]
ready = {{ http = "http://127.0.0.1:{{port:node}}/5.json", status = 200 }}
[[contender]]
name = "v2"
command = ["python3", "{s}", "{{port}}", "--root", "{root}/v2"]
ready = {{ http = "http://127.0.0.1:{{port}}/5.json", status = 200 }}
[[compat]]
name = "block"
http = "GET /{{case}}.json"
requests = ["5"]
reference = {{ contender = "v1", member = "node", http = "GET /{{case}}.json", fields = [{{ ours = "hash", theirs = "hash" }}] }}
"#
    );
    let run = run_plan(dir.path(), &plan, &[]);
    let r = &run.results;
    assert_eq!(r["status"], "complete", "{}", run.stderr());
    let refs = r["compat_reference"].as_array().unwrap();
    assert_eq!(refs.len(), 1);
    assert_eq!(refs[0]["messages"][0]["hash"], "aa", "{refs:?}");
    assert_eq!(r["compat"][0]["reference"]["member"]["member"], "node");
    let out = run.stdout();
    let row = out
        .lines()
        .find(|l| l.starts_with("| block | v1/node |"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        row.contains("1/1") && row.contains("0/1"),
        "v1 agrees with the node, v2 does not: {row}"
    );
    assert!(out.contains("differs from the reference at hash"), "{out}");
}

/// A JSON-RPC node is ready when `getblockcount` answers with a result (issue 25, item 19):
/// a `jsonrpc` probe with a field check, and an `http` probe that POSTs a body, both wait out
/// the node's "Loading block index" errors.
#[test]
fn a_jsonrpc_node_is_waited_for_by_its_own_calls() {
    let dir = TempDir::new("jsonrpc-probe");
    let node = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/jsonrpc_node.py"
    );
    let plan = format!(
        r#"name = "node"
repetitions = 1
[[contender]]
name = "node"
command = ["python3", "{node}", "{{port}}", "1"]
ready = {{ tcp = "127.0.0.1:{{port}}" }}
ready_when = {{ jsonrpc = "getblockcount", field = "result", equals = 100, timeout = "20s" }}
[[contender]]
name = "posted"
command = ["python3", "{node}", "{{port}}", "1"]
ready = {{ tcp = "127.0.0.1:{{port}}" }}
ready_when = {{ http = "http://127.0.0.1:{{port}}/", method = "POST", body = '{{"jsonrpc": "2.0", "id": 1, "method": "getblockcount", "params": []}}', field = "result", equals = 100, timeout = "20s" }}
[[scenario]]
name = "count"
jsonrpc = "getblockcount"
requests = 5
"#
    );
    let run = run_plan(dir.path(), &plan, &[]);
    assert!(run.output.status.success(), "{}", run.stderr());
    for c in ["node", "posted"] {
        let r = run.run(c, 1);
        let ready = r["startup"]["ready_s"].as_f64().unwrap();
        // The node answers errors for its first second: ready cannot come before.
        assert!(ready >= 1.0, "{c}: {r}");
        assert_eq!(r["points"][0]["load"]["successes"], 5, "{c}: {r}");
    }
    // A probe key on the wrong kind is refused where it is written.
    let bad = dir.path().join("bad.toml");
    std::fs::write(
        &bad,
        plan.replace("ready = {{ tcp", "ready = { tcp").replacen(
            "ready = { tcp = \"127.0.0.1:{port}\" }",
            "ready = { tcp = \"127.0.0.1:{port}\", params = [1] }",
            1,
        ),
    )
    .unwrap();
    let out = bakeoff(&["plan", "check", bad.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("`params` with `jsonrpc`"),
        "{err}"
    );
}

/// The seed-000 shape in one plan (issue 25, items 18–21): a gRPC server checked, field by
/// field, against the JSON-RPC node that is a member of the same contender — the node waited
/// for by a JSON-RPC probe, and each gRPC case turned into the node's request by a field of
/// the case (`{case.text}`), not by the whole case text — served and loaded over TLS with the
/// certificate of the usual `openssl req -x509` one-liner, made at setup in the contender's
/// folder (the member reaches it as `{state}/..`).
#[test]
fn a_grpc_answer_is_checked_against_a_jsonrpc_member_by_field_of_the_case() {
    if start_grpc_fixture(&[]).is_none() {
        return;
    }
    let dir = TempDir::new("reference-fields");
    let node = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/jsonrpc_node.py"
    );
    let grpc = grpc_fixture_script();
    let plan = format!(
        r#"name = "indexer against its node"
repetitions = 1
[[contender]]
name = "indexer"
setup = [["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1", "-days", "1", "-keyout", "{{state}}/key.pem", "-out", "{{state}}/cert.pem"]]
[[contender.member]]
name = "idx"
after = ["node"]
endpoint = "https://127.0.0.1:{{port:idx}}"
command = ["python3", "{grpc}", "--port", "{{port:idx}}", "--tls", "{{state}}/../cert.pem", "{{state}}/../key.pem"]
ready = {{ grpc = "fixture.Echo/Unary", body = '{{"text": "up?"}}', timeout = "60s", tls = {{ cacert = "{{state}}/cert.pem" }} }}
[[contender.member]]
name = "node"
endpoint = "http://127.0.0.1:{{port:node}}"
command = ["python3", "{node}", "{{port:node}}", "0.3"]
ready = {{ jsonrpc = "getblockcount", field = "result", equals = 100, timeout = "20s" }}
[[contender]]
name = "other"
setup = [["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1", "-days", "1", "-keyout", "{{state}}/key.pem", "-out", "{{state}}/cert.pem"]]
endpoint = "https://127.0.0.1:{{port}}"
command = ["python3", "{grpc}", "--port", "{{port}}", "--tls", "{{state}}/cert.pem", "{{state}}/key.pem"]
ready = {{ grpc = "fixture.Echo/Unary", body = '{{"text": "up?"}}', timeout = "60s", tls = {{ cacert = "{{state}}/cert.pem" }} }}
[[scenario]]
name = "echo"
grpc = "fixture.Echo/Unary"
body = '{{"text": "x{{seq}}"}}'
requests = 40
clients = 2
tls = {{ cacert = "{{state}}/cert.pem" }}
[[compat]]
name = "block"
grpc = "fixture.Echo/Unary"
tls = {{ cacert = "{{state}}/cert.pem" }}
requests = ['{{"text": "5"}}', '{{"text": "abc"}}']
reference = {{ contender = "indexer", member = "node", jsonrpc = "getblock", request = '["{{case.text}}", 1]', fields = [{{ ours = "text", theirs = "result.text" }}] }}
"#,
        grpc = grpc.display()
    );
    let run = run_plan(dir.path(), &plan, &[]);
    let r = &run.results;
    assert_eq!(r["status"], "complete", "{}", run.stderr());
    let refs = r["compat_reference"].as_array().unwrap();
    assert_eq!(
        refs.len(),
        2,
        "{refs:?}\n{}\n{}",
        run.stdout(),
        run.stderr()
    );
    // The node was asked `getblock ["5", 1]`: the field of the case, as a string.
    assert_eq!(refs[0]["messages"][0]["result"]["height"], "5", "{refs:?}");
    assert_eq!(
        refs[1]["messages"][0]["result"]["height"], "abc",
        "{refs:?}"
    );
    // Loaded over TLS: every call of the scenario answered, through the one-liner's
    // certificate (a trust anchor that is the leaf, as curl takes it).
    for run in r["runs"].as_array().unwrap() {
        let load = &run["points"][0]["load"];
        assert_eq!(load["successes"], 40, "{}: {load}", run["contender"]);
        assert!(
            load["tls"].as_str().is_some_and(|t| t.contains("TLS")),
            "{load}"
        );
    }
    let out = run.stdout();
    assert!(!out.contains("differs from the reference"), "{out}");
    assert!(
        out.contains("| block | indexer/node | 2/2 match | 2/2 match |"),
        "every case checked against the node, by field: {out}"
    );
}
