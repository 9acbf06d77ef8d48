//! Scale-out (docs/scale-out.md), simulated on this machine: the plan cut into 3 shards run
//! one after another, each in its own network namespace (loopback only) and UTS namespace
//! (its own host name), with `JOB_COMPLETION_INDEX` set as a Kubernetes Indexed Job sets it;
//! then `bakeoff merge`. The merged results must hold what one run of the whole plan holds —
//! the same contenders, points, request counts and compat answers — and reach the same
//! verdicts; merging must refuse a missing shard, a duplicate, another plan and an old file.
//! The launchers' YAML is read back by PyYAML and by the Kubernetes project's own client.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use bakeoff::results::Results;
use common::{leftovers, present_or_skip, python_has, TempDir};

fn plan(exe: &str, count: u32) -> String {
    let contender = |name: &str, version: &str, noise: &str| {
        format!(
            r#"
[[contender]]
name = "{name}"
{noise}command = ["{exe}", "demo-server", "{version}", "{{port}}", "{{state}}"]
ready = {{ tcp = "127.0.0.1:{{port}}" }}
ready_when = {{ http = "http://127.0.0.1:{{port}}/health", status = 200, timeout = "60s" }}
"#
        )
    };
    format!(
        r#"name = "scale-out simulation"
repetitions = 3
baseline = "v1"
order = "paired"
{}{}{}
[[compat]]
name = "GET /block"
http = "GET /block/{{case}}"
generate = {{ count = 6, request = "{{rand:0..10000}}" }}
requests = ["0", "10000", "abc"]

# Count-stopped: one round of exactly {count} calls per contender and repetition, so request
# counts compare exactly.
[[scenario]]
name = "get a block"
http = "GET /block/{{rand:0..10000}}"
clients = 8
requests = {count}
"#,
        contender("v1", "v1", ""),
        contender("v1-again", "v1", "noise_of = \"v1\"\n"),
        contender("v2", "v2", ""),
    )
}

/// Network namespaces made for the test, deleted when it ends (also when it fails).
struct Namespaces(Vec<String>);

impl Drop for Namespaces {
    fn drop(&mut self) {
        for ns in &self.0 {
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
    }
}

/// Whether this machine lets the test make namespaces (root, `ip`, `unshare`). In CI they
/// must be there.
fn namespaces_possible() -> bool {
    let ok = Command::new("ip")
        .args(["netns", "list"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
        && Command::new("unshare")
            .args(["--uts", "true"])
            .status()
            .is_ok_and(|s| s.success());
    present_or_skip(
        ok,
        "network and UTS namespaces are not available here (needs root, ip, unshare)",
    )
}

/// `bakeoff run PLAN --shards 3 --out OUT` as Kubernetes would start pod `index`: in its own
/// network namespace with only loopback, under its own host name.
fn run_shard(ns: &mut Namespaces, plan: &Path, index: u32, out: &Path) {
    let name = format!("bk{}s{index}", std::process::id());
    let ip = |args: &[&str]| {
        let s = Command::new("ip").args(args).status().unwrap();
        assert!(s.success(), "ip {args:?}");
    };
    ip(&["netns", "add", &name]);
    ns.0.push(name.clone());
    ip(&["netns", "exec", &name, "ip", "link", "set", "lo", "up"]);
    let child = Command::new("ip")
        .args(["netns", "exec", &name, "unshare", "--uts", "sh", "-c"])
        .arg(format!(
            "hostname sim-node-{} && exec \"$0\" run \"$1\" --shards 3 --out \"$2\"",
            index + 1
        ))
        .arg(env!("CARGO_BIN_EXE_bakeoff"))
        .arg(plan)
        .arg(out)
        .env("JOB_COMPLETION_INDEX", index.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "shard {index}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(leftovers(pid).is_empty(), "shard {index} left processes");
}

fn bakeoff(args: &[&str]) -> (i32, String, String) {
    let o = common::bakeoff(args);
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Requests per (contender, repetition, point).
fn requests(r: &Results) -> Vec<(String, u32, String, u64)> {
    let mut v: Vec<_> = r
        .runs
        .iter()
        .flat_map(|run| {
            run.points.iter().map(move |p| {
                (
                    run.id.contender.clone(),
                    run.id.repetition,
                    p.id.to_string(),
                    p.load.as_ref().map_or(0, |l| l.requests),
                )
            })
        })
        .collect();
    v.sort();
    v
}

#[test]
fn three_shards_in_their_own_namespaces_merge_into_the_report_of_one_run() {
    if !namespaces_possible() {
        return;
    }
    let dir = TempDir::new("scaleout");
    let exe = env!("CARGO_BIN_EXE_bakeoff");
    let plan_path = dir.path().join("plan.toml");
    std::fs::write(&plan_path, plan(exe, 300)).unwrap();

    // The whole plan on one machine.
    let whole_dir = dir.path().join("whole");
    let (code, _, err) = bakeoff(&["run", s(&plan_path), "--out", s(&whole_dir)]);
    assert_eq!(code, 0, "{err}");
    let whole = Results::load(&whole_dir).unwrap();

    // The same plan as 3 shards.
    let mut ns = Namespaces(Vec::new());
    let shards: Vec<PathBuf> = (0..3)
        .map(|i| dir.path().join(format!("shard-{i}")))
        .collect();
    for (i, out) in shards.iter().enumerate() {
        run_shard(&mut ns, &plan_path, i as u32, out);
        let r = Results::load(out).unwrap();
        let sh = r.shards.as_ref().expect("a shard says which it is");
        assert_eq!((sh.of, sh.have.clone()), (3, vec![i as u32 + 1]));
        // Shard K ran repetition K of every contender (and shard 1 the compat cases and
        // the noise instance).
        for run in &r.runs {
            assert_eq!(run.id.repetition, i as u32 + 1, "{:?}", run.id);
            assert_eq!(run.id.shard, Some(i as u32 + 1));
            assert_eq!(run.tool.as_deref(), Some(r.tool.as_str()));
            let host = &run.environment.as_ref().unwrap().hostname;
            assert_eq!(host, &format!("sim-node-{}", i + 1));
        }
        assert_eq!(r.plan_hash, whole.plan_hash);
    }
    drop(ns);

    // Merged in another order than the shards ran.
    // … and recorded in a history, as one run.
    let merged_dir = dir.path().join("merged");
    let history = dir.path().join("h.sqlite");
    let (code, report, err) = bakeoff(&[
        "merge",
        s(&shards[2]),
        s(&shards[0]),
        s(&shards[1]),
        "--out",
        s(&merged_dir),
        "--record",
        "--history",
        s(&history),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("history: recorded run 1 ("), "{err}");
    let merged = Results::load(&merged_dir).unwrap();
    let (code, list, err) = bakeoff(&["history", "list", "--history", s(&history)]);
    assert_eq!(code, 0, "{err}");
    assert!(list.contains(" · throughput |"), "{list}");

    // What one machine would have written: the same contenders, points, runs, request
    // counts (exactly 300 per count-stopped point) and compat answers.
    assert_eq!(merged.contenders, whole.contenders);
    assert_eq!(merged.scenarios, whole.scenarios);
    assert_eq!(merged.compat, whole.compat);
    let ids = |r: &Results| {
        r.runs
            .iter()
            .map(|x| (x.id.contender.clone(), x.id.repetition, x.status))
            .collect::<Vec<_>>()
    };
    assert_eq!(ids(&merged), ids(&whole));
    let counts = requests(&merged);
    assert_eq!(counts.len(), 6, "{counts:?}");
    assert!(counts.iter().all(|c| c.3 == 300), "{counts:?}");
    assert_eq!(counts, requests(&whole));
    let answers = |r: &Results| {
        r.runs
            .iter()
            .flat_map(|x| x.compat.iter().map(|a| (x.id.contender.clone(), a.clone())))
            .map(|(c, a)| (c, a.set, a.case, a.outcome, a.messages))
            .collect::<Vec<_>>()
    };
    assert_eq!(answers(&merged), answers(&whole));
    assert!(!answers(&merged).is_empty());
    // Blocks: one per repetition, numbered apart.
    let mut blocks: Vec<u32> = merged.runs.iter().filter_map(|r| r.block).collect();
    blocks.sort_unstable();
    blocks.dedup();
    assert_eq!(blocks, [1, 2, 3]);

    // The report: the same compat verdict, and the same direction for every verdict of
    // the demo's v2 against v1 (less CPU per request, far more throughput), now combined
    // over the three machines, with the machines named.
    let read = |d: &Path| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(d.join("report/report.json")).unwrap())
            .unwrap()
    };
    let (rm, rw) = (read(&merged_dir), read(&whole_dir));
    assert_eq!(rm["compat"], rw["compat"]);
    let calls = |v: &serde_json::Value| -> Vec<(String, String)> {
        let mut out = Vec::new();
        for t in v["tables"].as_array().unwrap() {
            let Some(data) = t["data"].as_object() else {
                continue;
            };
            let head: Vec<&str> = data["head"]
                .as_array()
                .unwrap()
                .iter()
                .map(|h| h.as_str().unwrap())
                .collect();
            for row in data["rows"].as_array().unwrap() {
                for (h, cell) in head.iter().zip(row.as_array().unwrap()) {
                    if h.ends_with("_call") && cell.as_str().is_some_and(|c| !c.is_empty()) {
                        out.push((h.to_string(), cell.as_str().unwrap().to_string()));
                    }
                }
            }
        }
        out
    };
    let (cm, cw) = (calls(&rm), calls(&rw));
    assert!(
        cw.contains(&("throughput_call".into(), "higher".into())),
        "{cw:?}"
    );
    // Combined over three machines of one repetition each, the interval is Student's t over
    // three ratios (t = 4.3): on a loaded host one machine's v1 escaping its Nagle stall can
    // leave it inconclusive. What must hold is the direction: v2 has more throughput, and no
    // merged verdict says the opposite of the whole run's.
    let throughput = |v: &serde_json::Value| -> (f64, String, String) {
        let x = v["verdicts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["figure"] == "throughput" && x["contender"] == "v2")
            .unwrap_or_else(|| panic!("a throughput verdict: {v}"));
        (
            x["ratio"].as_f64().unwrap(),
            x["verdict"].as_str().unwrap().to_string(),
            x["direction"].as_str().unwrap_or("").to_string(),
        )
    };
    let (tm, tw) = (throughput(&rm), throughput(&rw));
    assert!(tm.0 > 1.0, "merged {tm:?} vs whole {tw:?}");
    assert!(
        tm.1 != "different" || tm.2 == "higher",
        "merged {tm:?} vs whole {tw:?}"
    );
    for (h, c) in &cm {
        assert!(
            cw.iter().all(|(h2, c2)| h2 != h || c2 == c),
            "merged {cm:?} vs whole {cw:?}"
        );
    }
    assert!(
        report.contains("## Machines (3 ran these repetitions)"),
        "{report}"
    );
    for k in 1..=3 {
        assert!(report.contains(&format!("| sim-node-{k} |")), "{report}");
    }
    assert!(report.contains("## Verdicts by machine"), "{report}");
    assert!(
        !report.contains("repetitions ran with different host"),
        "merged paired blocks are compared within their machine: {report}"
    );
    // Logs came along.
    for run in &merged.runs {
        for log in &run.logs {
            assert!(merged_dir.join(log).is_file(), "{log}");
        }
    }

    // Order-independent and idempotent: another order, and the merged result merged
    // again, write the same results.
    let again = dir.path().join("again");
    let (code, _, err) = bakeoff(&[
        "merge",
        s(&shards[1]),
        s(&shards[2]),
        s(&shards[0]),
        "--out",
        s(&again),
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(Results::load(&again).unwrap(), merged);
    let twice = dir.path().join("twice");
    let (code, _, err) = bakeoff(&["merge", s(&merged_dir), "--out", s(&twice)]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(Results::load(&twice).unwrap(), merged);

    // Refusals, each naming what is wrong.
    let refuse = |args: &[&str], want: &str| {
        let (code, _, err) = bakeoff(args);
        assert_eq!(code, 1, "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: wanted {want:?} in {err}");
    };
    let out = dir.path().join("nope");
    refuse(
        &["merge", s(&shards[0]), s(&shards[1]), "--out", s(&out)],
        "shard 3 of 3 missing: the directories given hold shards 1, 2;",
    );
    refuse(
        &[
            "merge",
            s(&shards[0]),
            s(&shards[1]),
            s(&shards[1]),
            s(&shards[2]),
            "--out",
            s(&out),
        ],
        "shard 2 of 3 is there twice",
    );
    refuse(
        &["merge", s(&merged_dir), s(&shards[0]), "--out", s(&out)],
        "shard 1 of 3 is there twice",
    );
    refuse(
        &["merge", s(&whole_dir), s(&shards[0]), "--out", s(&out)],
        "is not a shard",
    );
    let v1 = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/results-v1");
    refuse(
        &["merge", v1, s(&shards[0]), "--out", s(&out)],
        "has schema version 1",
    );
    // Another plan (200 calls a point instead of 300): its shard 2 does not fit.
    let other = dir.path().join("other.toml");
    std::fs::write(&other, plan(exe, 200)).unwrap();
    let other_out = dir.path().join("other-2");
    let (code, _, err) = bakeoff(&["run", s(&other), "--shard", "2/3", "--out", s(&other_out)]);
    assert_eq!(code, 0, "{err}");
    refuse(
        &[
            "merge",
            s(&shards[0]),
            s(&other_out),
            s(&shards[2]),
            "--out",
            s(&out),
        ],
        "ran different plans",
    );
    assert!(!out.exists(), "a refused merge writes nothing");

    // --out one of the shards would overwrite that shard's own results (issue 25, item 5).
    let before = std::fs::read(shards[0].join("results.json")).unwrap();
    refuse(
        &[
            "merge",
            s(&shards[0]),
            s(&shards[1]),
            s(&shards[2]),
            "--out",
            s(&shards[0]),
        ],
        "is the shard",
    );
    assert_eq!(
        std::fs::read(shards[0].join("results.json")).unwrap(),
        before,
        "the shard's results are untouched"
    );

    // A tampered shard naming a log outside its folder (issue 25, item 2): nothing is read
    // from outside the shard, nothing written outside --out.
    let tampered = dir.path().join("tampered");
    let mut copies = Vec::new();
    for (k, shard) in shards.iter().enumerate() {
        let to = tampered.join(format!("s{k}"));
        std::fs::create_dir_all(&to).unwrap();
        for f in ["results.json", "plan.toml"] {
            std::fs::copy(shard.join(f), to.join(f)).unwrap();
        }
        copies.push(to);
    }
    std::fs::write(dir.path().join("secret.txt"), "not the shard's").unwrap();
    let file = copies[0].join("results.json");
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    v["runs"][0]["logs"] = serde_json::json!(["../../secret.txt", "/etc/hostname"]);
    std::fs::write(&file, serde_json::to_vec(&v).unwrap()).unwrap();
    let deep = tampered.join("o").join("out");
    let (code, _, err) = bakeoff(&[
        "merge",
        s(&copies[0]),
        s(&copies[1]),
        s(&copies[2]),
        "--out",
        s(&deep),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("names a log outside its folder"), "{err}");
    assert!(
        !tampered.join("secret.txt").exists(),
        "merge wrote outside --out: {err}"
    );
    assert!(
        !deep.join("etc").exists(),
        "an absolute log path was copied: {err}"
    );

    // The shards header is a claim the runs must bear out (issue 25, item 11).
    let forged = |name: &str, from: &Path, edit: &dyn Fn(&mut serde_json::Value)| {
        let to = tampered.join(name);
        std::fs::create_dir_all(&to).unwrap();
        std::fs::copy(from.join("plan.toml"), to.join("plan.toml")).unwrap();
        let mut v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(from.join("results.json")).unwrap())
                .unwrap();
        edit(&mut v);
        std::fs::write(to.join("results.json"), serde_json::to_vec(&v).unwrap()).unwrap();
        to
    };
    // Shard 1 relabelled as shard 2.
    let relabelled = forged("relabelled", &shards[0], &|v| {
        v["shards"]["have"] = serde_json::json!([2]);
        for r in v["runs"].as_array_mut().unwrap() {
            r["shard"] = serde_json::json!(2);
        }
    });
    refuse(
        &[
            "merge",
            s(&shards[0]),
            s(&relabelled),
            s(&shards[2]),
            "--out",
            s(&out),
        ],
        "which shard 2/3 does not run",
    );
    let empty = forged("empty", &shards[1], &|v| v["runs"] = serde_json::json!([]));
    refuse(
        &[
            "merge",
            s(&shards[0]),
            s(&empty),
            s(&shards[2]),
            "--out",
            s(&out),
        ],
        "has no run of it",
    );
    let beyond = forged("beyond", &shards[1], &|v| {
        v["runs"][0]["repetition"] = serde_json::json!(99);
    });
    refuse(
        &[
            "merge",
            s(&shards[0]),
            s(&beyond),
            s(&shards[2]),
            "--out",
            s(&out),
        ],
        "is of repetition 99",
    );
    let other_tool = forged("other-tool", &shards[1], &|v| {
        v["tool"] = serde_json::json!("bakeoff 0.0.1")
    });
    refuse(
        &[
            "merge",
            s(&shards[0]),
            s(&other_tool),
            s(&shards[2]),
            "--out",
            s(&out),
        ],
        "by bakeoff 0.0.1",
    );
    assert!(!out.exists(), "a refused merge writes nothing");
}

#[test]
fn shard_flags_are_checked_before_anything_runs() {
    let dir = TempDir::new("shardflags");
    let plan_path = dir.path().join("plan.toml");
    std::fs::write(&plan_path, plan(env!("CARGO_BIN_EXE_bakeoff"), 10)).unwrap();
    let out = dir.path().join("out");
    let check = |args: &[&str], env: &[(&str, &str)], want: &str| {
        let o = Command::new(env!("CARGO_BIN_EXE_bakeoff"))
            .args(args)
            .env_remove("JOB_COMPLETION_INDEX")
            .env_remove("BAKEOFF_SHARDS")
            .envs(env.iter().copied())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_ne!(o.status.code(), Some(0), "{args:?}");
        assert!(err.contains(want), "{args:?}: wanted {want:?} in {err}");
    };
    let p = s(&plan_path);
    check(&["run", p, "--shard", "4/3"], &[], "K must be from 1 to N");
    check(&["run", p, "--shard", "x"], &[], "write --shard K/N");
    check(
        &["run", p, "--shard", "1/4", "--out", s(&out)],
        &[],
        "shard 4 of 4 would have nothing to run",
    );
    check(&["run", p, "--shards", "3"], &[], "JOB_COMPLETION_INDEX");
    check(
        &["run", p],
        &[("BAKEOFF_SHARDS", "3"), ("JOB_COMPLETION_INDEX", "3")],
        "must be below 3",
    );
    check(
        &["run", p],
        &[("BAKEOFF_SHARDS", "three")],
        "BAKEOFF_SHARDS=`three`",
    );
    assert!(!out.exists(), "no results folder for a refused shard");
}

/// Parses YAML with PyYAML (which reads `on` as `true` unless it is quoted, as GitHub's own
/// reader would not), as JSON.
fn yaml_to_json(text: &str) -> Option<serde_json::Value> {
    let mut child = Command::new("python3")
        .args([
            "-c",
            "import json, sys, yaml; print(json.dumps(list(yaml.safe_load_all(sys.stdin))))",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .ok()?;
    use std::io::Write as _;
    child.stdin.take()?.write_all(text.as_bytes()).ok()?;
    let out = child.wait_with_output().ok()?;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).ok()
}

#[test]
fn the_github_workflow_has_a_job_per_shard_and_a_merge() {
    if !python_has("yaml", "Python's yaml") {
        return;
    }
    let plan = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/etcd/plan.toml");
    let (code, text, err) = bakeoff(&[
        "ci",
        "github",
        plan,
        "--shards",
        "3",
        "--fail-on-diff",
        "--fail-on-regression",
        "5%",
        "--fail-unless-equivalent",
        "3%",
        "--setup",
        "sudo apt-get install -y etcd-server",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        text.starts_with("# Written by `bakeoff ci github"),
        "{text}"
    );
    let docs = yaml_to_json(&text).expect("python3 with yaml");
    let w = &docs[0];
    assert!(w["on"]["workflow_dispatch"].is_object(), "`on` quoted: {w}");
    let shard = &w["jobs"]["shard"];
    assert_eq!(
        shard["strategy"]["matrix"]["shard"],
        serde_json::json!([1, 2, 3])
    );
    assert_eq!(shard["strategy"]["fail-fast"], false);
    let steps = shard["steps"].as_array().unwrap();
    let runs: Vec<&str> = steps.iter().filter_map(|s| s["run"].as_str()).collect();
    assert!(
        runs.contains(&"sudo apt-get install -y etcd-server"),
        "{runs:?}"
    );
    // The plan as the runner's checkout has it, from the repository's root: not the path of
    // this machine it was given as.
    assert!(
        runs.iter()
            .any(|r| r.starts_with("bakeoff run examples/etcd/plan.toml ")
                && r.contains("--shard \"${{ matrix.shard }}/3\"")),
        "{runs:?}"
    );
    assert!(!text.contains(env!("CARGO_MANIFEST_DIR")), "{text}");
    let upload = steps
        .iter()
        .find(|s| s["uses"] == "actions/upload-artifact@v4")
        .unwrap();
    assert_eq!(upload["if"], "always()");
    assert_eq!(upload["with"]["name"], "bakeoff-shard-${{ matrix.shard }}");
    let merge = &w["jobs"]["merge"];
    assert_eq!(merge["needs"], "shard");
    let msteps = merge["steps"].as_array().unwrap();
    assert!(msteps
        .iter()
        .any(|s| s["uses"] == "actions/download-artifact@v4"
            && s["with"]["pattern"] == "bakeoff-shard-*"));
    assert!(msteps.iter().any(|s| s["run"]
        == "bakeoff merge shards/* --out merged --fail-on-diff --fail-on-regression 5% --fail-unless-equivalent 3%"));

    // More shards than repetitions is refused, naming the plan.
    let (code, _, err) = bakeoff(&["ci", "github", plan, "--shards", "4"]);
    assert_eq!(code, 1);
    assert!(err.contains("give at most 3 shards"), "{err}");
}

#[test]
fn the_kubernetes_job_reads_back_with_the_kubernetes_client() {
    if !python_has("yaml", "Python's yaml") || !python_has("kubernetes", "Python's kubernetes") {
        return;
    }
    let dir = TempDir::new("k8s");
    let plan = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/etcd/plan.toml");
    let out = dir.path().join("k8s");
    let (code, _, err) = bakeoff(&[
        "ci",
        "k8s",
        plan,
        "--shards",
        "3",
        "--image",
        "registry.example/bakeoff-etcd:1",
        "--cpus",
        "4",
        "--fail-on-regression",
        "5%",
        "--out",
        s(&out),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("kubectl apply -f"), "{err}");
    let check = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/scaleout/check_k8s.py"
    );
    let o = Command::new("python3")
        .arg(check)
        .arg(out.join("job.yaml"))
        .arg(out.join("merge.yaml"))
        .arg(out.join("fetch.yaml"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let docs: Vec<serde_json::Value> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let kinds: Vec<&str> = docs.iter().map(|d| d["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["PersistentVolumeClaim", "Job", "Job", "Pod"]);
    let (pvc, job, merge, fetch) = (&docs[0], &docs[1], &docs[2], &docs[3]);
    // The merged report is copied out of a pod on the same claim (issue 70), which ends
    // itself within the hour.
    assert_eq!(fetch["claims"], job["claims"]);
    assert_eq!(fetch["mounts"], serde_json::json!(["/results"]));
    assert_eq!(fetch["deadline"], 3600);
    assert!(err.contains(":/results/merged ./merged"), "{err}");
    assert_eq!(pvc["access_modes"], serde_json::json!(["ReadWriteMany"]));
    assert_eq!(job["completion_mode"], "Indexed");
    assert_eq!(job["completions"], 3);
    assert_eq!(job["parallelism"], 3);
    assert_eq!(job["restart_policy"], "Never");
    assert_eq!(job["image"], "registry.example/bakeoff-etcd:1");
    assert_eq!(
        job["requests"],
        serde_json::json!({"cpu": "4", "memory": "4Gi"})
    );
    assert_eq!(
        job["limits"], job["requests"],
        "whole CPUs: requests = limits"
    );
    assert_eq!(
        job["anti_affinity_topology"],
        serde_json::json!(["kubernetes.io/hostname"])
    );
    assert_eq!(job["env"], serde_json::json!(["BAKEOFF_MACHINE"]));
    let cmd = job["command"][2].as_str().unwrap();
    assert!(
        cmd.contains("bakeoff run") && cmd.contains("--shards 3"),
        "{cmd}"
    );
    assert_eq!(job["claims"], merge["claims"]);
    assert_eq!(job["claims"][0], pvc["name"]);
    let mcmd = merge["command"][2].as_str().unwrap();
    assert_eq!(
        mcmd,
        "bakeoff merge /results/shard-* --out /results/merged --fail-on-regression 5%"
    );
}

/// The image `ci k8s --image` runs (the repository's Dockerfile): built in one stage, the
/// binary copied into a slim Debian with git and a C toolchain. Neither stage can be built
/// here (no registry to pull the base images from, no containers to run), so what the
/// runtime stage must give the binary is checked: the binary links only the C library's own
/// libraries, which every Debian image has, and runs from the stage's layout with an empty
/// environment.
#[test]
fn the_image_gives_its_binary_what_it_needs() {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/Dockerfile")).unwrap();
    let stages: Vec<&str> = text.split("\nFROM ").skip(1).collect();
    assert_eq!(stages.len(), 2, "a build stage and a runtime stage");
    assert!(
        stages[0].contains(" AS build")
            && stages[0].contains("cargo build --profile dist --locked --bin bakeoff")
    );
    let runtime = stages[1];
    assert!(
        runtime.starts_with("docker.io/library/debian:bookworm-slim"),
        "{runtime}"
    );
    for package in ["git", "gcc", "libc6-dev", "make", "ca-certificates"] {
        assert!(
            runtime.contains(&format!(" {package}")),
            "{package}: {runtime}"
        );
    }
    assert!(runtime.contains("COPY --from=build /src/target/dist/bakeoff /usr/local/bin/bakeoff"));

    let exe = env!("CARGO_BIN_EXE_bakeoff");
    let o = Command::new("ldd").arg(exe).output().expect("ldd runs");
    let libs = String::from_utf8_lossy(&o.stdout);
    let libc = [
        "linux-vdso.so.1",
        "libgcc_s.so.1",
        "libm.so.6",
        "libc.so.6",
        "libpthread.so.0",
        "libdl.so.2",
        "librt.so.1",
        "libutil.so.1",
    ];
    for line in libs.lines() {
        let name = line.split_whitespace().next().unwrap_or("");
        let base = name.rsplit('/').next().unwrap_or(name);
        assert!(
            libc.contains(&base) || base.starts_with("ld-linux"),
            "the binary needs `{name}`, which a slim Debian does not have:\n{libs}"
        );
    }
    // The stage's layout, and nothing else.
    let dir = TempDir::new("image");
    let bin = dir.path().join("usr/local/bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::copy(exe, bin.join("bakeoff")).unwrap();
    let o = Command::new(bin.join("bakeoff"))
        .arg("--version")
        .env_clear()
        .env("PATH", &bin)
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).starts_with("bakeoff "));
}
