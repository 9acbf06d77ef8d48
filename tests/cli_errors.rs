//! Bad input gives one readable message naming what is wrong and a non-zero exit, never a
//! panic.

mod common;

use common::*;

fn fails_with(args: &[&str], needles: &[&str]) {
    let out = bakeoff(args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{args:?} should fail");
    assert!(!err.contains("panicked"), "{args:?} panicked: {err}");
    for n in needles {
        assert!(err.contains(n), "{args:?}: expected `{n}` in:\n{err}");
    }
}

fn dir_with(name: &str, text: &str) -> TempDir {
    let d = TempDir::new("cli");
    std::fs::write(d.path().join(name), text).unwrap();
    d
}

#[test]
fn bad_urls_and_flags_are_named() {
    fails_with(
        &["load", "ftp://127.0.0.1/"],
        &["not an http:// or https:// URL"],
    );
    fails_with(
        &["load", "127.0.0.1:80"],
        &["not an http:// or https:// URL"],
    );
    fails_with(
        &["load", "--cert", "c.pem", "https://127.0.0.1:1/"],
        &["--key"],
    );
    fails_with(
        &["load", "-c", "0", "http://127.0.0.1:1/"],
        &["-c/--clients"],
    );
    fails_with(&["load", "-q", "0", "http://127.0.0.1:1/"], &["-q/--rate"]);
    fails_with(
        &["load", "-z", "10 parsecs", "http://127.0.0.1:1/"],
        &["parsecs"],
    );
    fails_with(
        &["load", "-d", "{rand:9..1}", "http://127.0.0.1:1/"],
        &["-d", "column 1", "empty"],
    );
    fails_with(
        &["load", "-D", "/nonexistent/body", "http://127.0.0.1:1/"],
        &["/nonexistent/body"],
    );
    fails_with(
        &["load", "--cpus", "4096", "http://127.0.0.1:1/"],
        &["--cpus", "4096"],
    );
    fails_with(&["load"], &["URL"]);
    // HTTP/2 has no connection-specific headers: said before any connection is tried.
    fails_with(
        &[
            "load",
            "--h2",
            "-H",
            "Connection: close",
            "http://127.0.0.1:1/",
        ],
        &["header `Connection` is not allowed in HTTP/2"],
    );
}

#[test]
fn an_unreachable_server_is_one_clear_error() {
    let port = free_port(); // free, so nothing listens there
    let url = format!("http://127.0.0.1:{port}/");
    fails_with(
        &["load", "-n", "10", &url],
        &["cannot reach", &format!("127.0.0.1:{port}"), "refused"],
    );
}

#[test]
fn reflection_gives_up_after_the_timeout_given() {
    // A server that accepts and never says a word: reflection waits out --timeout, not its
    // own 20 s.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", silent.local_addr().unwrap());
    let held = std::thread::spawn(move || {
        let mut kept = Vec::new();
        for c in silent.incoming().take(1).flatten() {
            kept.push(c);
            std::thread::sleep(std::time::Duration::from_secs(5));
        }
    });
    let started = std::time::Instant::now();
    fails_with(
        &["call", "--grpc", &url, "--list", "--timeout", "300ms"],
        &["reflection gave no answer within 300.0 ms"],
    );
    assert!(
        started.elapsed() < std::time::Duration::from_secs(15),
        "took {:?}",
        started.elapsed()
    );
    held.join().unwrap();
}

#[test]
fn proto_mistakes_point_at_file_line_and_column() {
    let d = dir_with(
        "bad.proto",
        "syntax = \"proto3\";\npackage p;\nmessage M {\n  int32 x = 1\n}\n",
    );
    let proto = d.path().join("bad.proto");
    let proto = proto.to_str().unwrap();
    fails_with(
        &[
            "load",
            "--grpc",
            "http://127.0.0.1:1",
            "--proto",
            proto,
            "--call",
            "p.S/M",
        ],
        &["bad.proto:5:1"],
    );
    fails_with(
        &[
            "load",
            "--grpc",
            "http://127.0.0.1:1",
            "--proto",
            "/nonexistent.proto",
            "--call",
            "p.S/M",
        ],
        &["/nonexistent.proto"],
    );
}

#[test]
fn unknown_methods_and_misfit_json_are_explained() {
    let proto = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/etcd/protos/rpc.proto"
    );
    let base = ["load", "--grpc", "http://127.0.0.1:1", "--proto", proto];
    let with = |extra: &[&'static str]| {
        base.iter()
            .copied()
            .chain(extra.iter().copied())
            .collect::<Vec<_>>()
    };
    fails_with(
        &with(&["--call", "etcdserverpb.KV/Rnage"]),
        &["no method `Rnage`", "Range"],
    );
    fails_with(
        &with(&["--call", "etcdserverpb.Nope/X"]),
        &["no service", "etcdserverpb.KV"],
    );
    fails_with(&with(&["--call", "Range"]), &["package.Service/Method"]);
    fails_with(
        &with(&["--call", "etcdserverpb.KV/Range", "-d", r#"{"kye":"YQ=="}"#]),
        &["etcdserverpb.RangeRequest", "kye"],
    );
    fails_with(
        &with(&[
            "--call",
            "etcdserverpb.KV/Range",
            "-d",
            r#"{"limit":"many"}"#,
        ]),
        &["etcdserverpb.RangeRequest"],
    );
    fails_with(
        &["load", "--grpc", "http://127.0.0.1:1", "--call", "a.B/C"],
        &["no --proto given", "by reflection", "127.0.0.1:1"],
    );
}

#[test]
fn plan_check_runs_every_check_without_starting_anything() {
    let good = dir_with(
        "plan.toml",
        "name = \"p\"\n[[contender]]\nname = \"a\"\ncommand = [\"sh\", \"-c\", \"exit 0\"]\n[[scenario]]\nname = \"s\"\nhttp = \"/\"\nclients = [1, 4]\n",
    );
    let p = good.path().join("plan.toml");
    let out = bakeoff(&["plan", "check", p.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("OK — 1 contender, 1 scenario (2 points)"),
        "{err}"
    );
    let bad = dir_with(
        "plan.toml",
        "name = \"p\"\n[[contender]]\nname = \"a\"\ncommand = [\"/nonexistent/srv\"]\n",
    );
    let p = bad.path().join("plan.toml");
    fails_with(
        &["plan", "check", p.to_str().unwrap()],
        &["/nonexistent/srv"],
    );
    let typo = dir_with("plan.toml", "name = \"p\"\nrepetitons = 3\n");
    let p = typo.path().join("plan.toml");
    fails_with(
        &["plan", "check", p.to_str().unwrap()],
        &["plan.toml:2:1: unknown key `repetitons`; did you mean `repetitions`?"],
    );
}

#[test]
fn a_plan_that_cannot_start_leaves_no_results_folder_and_says_how_to_fix_it() {
    let d = dir_with(
        "plan.toml",
        "# export BAKEOFF_TEST_UNSET_BIN=/usr/bin/true\nname = \"p\"\n[[contender]]\nname = \"a\"\ncommand = [\"{env:BAKEOFF_TEST_UNSET_BIN}\"]\n",
    );
    let p = d.path().join("plan.toml");
    let out_dir = d.path().join("out");
    fails_with(
        &["run", p.to_str().unwrap(), "--out", out_dir.to_str().unwrap()],
        &[
            "plan.toml:5:13:",
            "BAKEOFF_TEST_UNSET_BIN is not set",
            "set it first, as the plan's comment says: `export BAKEOFF_TEST_UNSET_BIN=/usr/bin/true`",
        ],
    );
    assert!(
        !out_dir.exists(),
        "a results folder was made for a plan that could not start"
    );
    // `dir` is relative to the plan: the error says so, and where it pointed.
    let d = dir_with(
        "plan.toml",
        "name = \"p\"\n[[contender]]\nname = \"a\"\ndir = \"gone\"\ncommand = [\"true\"]\n",
    );
    let p = d.path().join("plan.toml");
    fails_with(
        &["plan", "check", p.to_str().unwrap()],
        &["`dir` is relative to the plan file's folder", "gone"],
    );
}

#[test]
fn overrides_try_a_plan_without_editing_it() {
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/after/member.py");
    let contender = |name: &str| {
        format!("[[contender]]\nname = \"{name}\"\ncommand = [\"python3\", \"{}\", \"{{port}}\"]\nready = {{ http = \"http://127.0.0.1:{{port}}/\", status = 200 }}\n", script.display())
    };
    let plan = format!(
        "name = \"p\"\nrepetitions = 3\nbaseline = \"a\"\n{}{}{}[[scenario]]\nname = \"one\"\nhttp = \"/\"\nrequests = 5\n[[scenario]]\nname = \"two\"\nhttp = \"/\"\nrequests = 5\n",
        contender("a"),
        contender("b"),
        contender("c")
    );
    let d = dir_with("plan.toml", &plan);
    let p = d.path().join("plan.toml");
    let out_dir = d.path().join("out");
    let out = bakeoff(&[
        "run",
        p.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
        "--repetitions",
        "1",
        "--only",
        "b,c",
        "--scenario",
        "two",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("results.json")).unwrap())
            .unwrap();
    assert_eq!(r["repetitions"], 1);
    let runs: Vec<&str> = r["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["contender"].as_str().unwrap())
        .collect();
    assert_eq!(runs, ["b", "c"]);
    // Its baseline left out, b is compared with nothing.
    assert!(
        r["contenders"][0]["baseline"].is_null(),
        "{}",
        r["contenders"]
    );
    let scenarios: Vec<&str> = r["scenarios"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(scenarios, ["two"]);
    fails_with(
        &["run", p.to_str().unwrap(), "--only", "bb"],
        &["--only bb: the plan has no such name; did you mean `b`?"],
    );
    fails_with(
        &["run", p.to_str().unwrap(), "--scenario", "three"],
        &["--scenario three", "it has one, two"],
    );
}

#[test]
fn help_says_what_is_required_and_each_default_once() {
    let help = |args: &[&str]| String::from_utf8_lossy(&bakeoff(args).stdout).into_owned();
    let run = help(&["run", "--help"]);
    assert!(
        run.contains("bakeoff run [OPTIONS] <PLAN>") && run.contains("--resume <DIR>"),
        "{run}"
    );
    let compare = help(&["compare", "--help"]);
    assert!(compare.contains("<OLD> <NEW> [MORE]..."), "{compare}");
    for cmd in ["load", "call", "run", "diff", "compare", "report"] {
        let h = help(&[cmd, "--help"]);
        assert!(
            !h.contains("] [default:"),
            "`{cmd} --help` gives a default twice: {h}"
        );
    }
    assert!(help(&["report", "--help"]).contains("report.html"));
}

#[test]
fn plan_check_takes_several_plans_and_says_each_mistake() {
    let dir = common::TempDir::new("check-several");
    let good = dir.path().join("good.toml");
    let bad = dir.path().join("bad.toml");
    std::fs::write(
        &good,
        "name = \"good\"\n[[contender]]\nname = \"a\"\ncommand = [\"sh\", \"-c\", \"sleep 1\"]\n",
    )
    .unwrap();
    std::fs::write(&bad, "name = \"bad\"\nrepetitions = 0\n").unwrap();
    let out = bakeoff(&[
        "plan",
        "check",
        good.to_str().unwrap(),
        bad.to_str().unwrap(),
        good.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(
        err.matches("good.toml: OK — 1 contender").count(),
        2,
        "{err}"
    );
    assert!(err.contains("bad.toml:2:"), "{err}");
}
