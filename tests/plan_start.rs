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
