//! `bakeoff bisect` (issue 49, docs/bisect.md) over histories of a small C server made at
//! test time: 64 commits after the good one, each changing a line the answers do not depend
//! on, some making every answer dearer. The search itself (two culprits, a step limit, more
//! ways) is tested against a model in src/bisect/tests.rs; here it runs on real builds and
//! paired runs.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Mutex;

use common::*;

const SERVER: &str = include_str!("fixtures/fromsource/server.c");

/// One bisection at a time: each measures CPU per request, and two at once on two cores
/// would measure each other.
static ONE: Mutex<()> = Mutex::new(());

/// A repository of commit 0 (good) and 64 more: commit `k` costs `work(k)` per answer, and
/// does not build when `work(k)` is `None`.
fn history(dir: &Path, work: impl Fn(usize) -> Option<u32>) -> (PathBuf, Vec<String>) {
    let r = dir.join("repo");
    std::fs::create_dir_all(&r).unwrap();
    git(&r, &["init", "-q", "-b", "main"]);
    let mut ids = Vec::new();
    for k in 0..=64 {
        let text = SERVER.replace("usage: server PORT", &format!("usage: server PORT ({k})"));
        let text = match work(k) {
            Some(w) => text.replace("#define WORK 20000", &format!("#define WORK {w}")),
            None => format!("{text}\nthis does not compile\n"),
        };
        std::fs::write(r.join("server.c"), text).unwrap();
        git(&r, &["add", "server.c"]);
        git(&r, &["commit", "-q", "-m", &format!("commit {k}")]);
        ids.push(git(&r, &["rev-parse", "HEAD"]));
    }
    std::fs::write(
        dir.join("plan.toml"),
        r#"name = "bisect"
repetitions = 3
budget = "60s"
paired = { noise = "5%", equivalence = "10%", precision = "5%" }

[[contender]]
name = "server"
source = { git = "repo", ref = "main" }
build = [["cc", "-O1", "-o", "server", "server.c", "-lpthread"]]
command = ["{source}/server", "{port}"]
ready = { http = "http://127.0.0.1:{port}/", timeout = "20s" }

[[scenario]]
name = "get"
http = "/"
clients = [2]
duration = "1s"
"#,
    )
    .unwrap();
    (r, ids)
}

fn bisect(dir: &Path, args: &[&str]) -> (Output, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_bakeoff"))
        .arg("bisect")
        .args(args)
        .current_dir(dir)
        .env("BAKEOFF_CACHE", dir.join("cache"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    (o, err)
}

fn record(dir: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("bisect.json")).unwrap()).unwrap()
}

fn ends(ids: &[String]) -> [&str; 6] {
    [
        "--contender",
        "server",
        "--good",
        &ids[0],
        "--bad",
        &ids[64],
    ]
}

/// Commit 37 makes every answer 40 % dearer: named, confirmed against its parent, with at
/// most log2(64) + 4 builds; each step's verdicts kept in bisect.json, the report written.
#[test]
fn bisect_names_the_slow_commit_and_confirms_it() {
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = TempDir::new("bisect-one");
    let (_, ids) = history(dir.path(), |k| Some(if k >= 37 { 28000 } else { 20000 }));
    let mut args = vec!["plan.toml", "--out", "b"];
    args.extend(ends(&ids));
    let (o, err) = bisect(dir.path(), &args);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let line = format!("Culprit: commit 37 `{}`", &ids[37][..10]);
    assert!(err.contains(&line) && err.contains("confirmed"), "{err}");
    let rec = record(&dir.path().join("b"));
    assert_eq!(rec["answer"]["kind"], "culprits");
    assert_eq!(rec["answer"]["blames"][0]["to"], 37);
    assert_eq!(rec["answer"]["blames"][0]["why"], "confirmed");
    let builds = rec["builds"].as_array().unwrap();
    assert!(builds.len() <= 10, "{builds:?}");
    let steps = rec["steps"].as_array().unwrap();
    assert_eq!(steps[0]["kind"], "endpoints");
    assert_eq!(steps.last().unwrap()["kind"], "confirm");
    assert_eq!(steps.last().unwrap()["at"], serde_json::json!([36, 37]));
    for s in steps {
        let pairs = s["pairs"].as_array().unwrap();
        assert_eq!(pairs.len(), s["at"].as_array().unwrap().len() - 1, "{s}");
        assert!(
            pairs
                .iter()
                .all(|p| !p["points"].as_array().unwrap().is_empty()),
            "{s}"
        );
        let run = dir.path().join("b").join(s["dir"].as_str().unwrap());
        assert!(run.join("report/report.md").is_file());
        // The plan's three repetitions: a step runs at least five, the confirmation more.
        let results: serde_json::Value =
            serde_json::from_slice(&std::fs::read(run.join("results.json")).unwrap()).unwrap();
        let reps = if s["kind"] == "confirm" { 6 } else { 5 };
        assert_eq!(results["repetitions"], reps, "{s}");
        // A step's five share the plan's three seconds of each point: 0.6 s each at least,
        // more only where the rounds are not decided yet.
        let served = results["runs"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|r| r["points"].as_array().unwrap())
            .map(|p| p["load"]["duration_s"].as_f64().unwrap());
        let shortest = served.fold(f64::INFINITY, f64::min);
        match s["kind"].as_str() {
            Some("confirm") => assert!(shortest >= 0.95, "{s}: {shortest}"),
            _ => assert!((0.55..1.0).contains(&shortest), "{s}: {shortest}"),
        }
    }
    let md = std::fs::read_to_string(dir.path().join("b/report.md")).unwrap();
    let bold = format!("**Culprit: commit 37** `{}`", &ids[37][..10]);
    assert!(md.contains(&bold) && md.contains("## Steps"), "{md}");
    assert!(md.contains(&format!("--against {}", ids[36])), "{md}");
    assert!(dir.path().join("b/report.html").is_file());
}

/// The same history with every commit as fast: "not reproduced", no culprit, in every one of
/// three bisections; and a change that came (commit 20) and went (commit 30) between the
/// endpoints is not reproduced either.
#[test]
fn an_unchanged_history_blames_no_commit() {
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = TempDir::new("bisect-aa");
    let (_, ids) = history(dir.path(), |_| Some(20000));
    for k in 0..3 {
        let out = format!("aa-{k}");
        let mut args = vec!["plan.toml", "--out", &out];
        args.extend(ends(&ids));
        let (o, err) = bisect(dir.path(), &args);
        assert_eq!(o.status.code(), Some(0), "{err}");
        assert!(
            err.contains("Not reproduced") && err.contains("No commit is blamed"),
            "{err}"
        );
        let rec = record(&dir.path().join(&out));
        assert_eq!(rec["answer"]["kind"], "not_reproduced");
        assert_eq!(rec["steps"].as_array().unwrap().len(), 1);
    }
    let dir = TempDir::new("bisect-came-went");
    let (_, ids) = history(dir.path(), |k| {
        Some(if (20..30).contains(&k) { 28000 } else { 20000 })
    });
    let mut args = vec!["plan.toml", "--out", "b"];
    args.extend(ends(&ids));
    let (o, err) = bisect(dir.path(), &args);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(err.contains("Not reproduced"), "{err}");
}

/// Commit 36 does not build and commit 37 is the slow one: the answer is the range 36–37
/// naming the unbuilt commit — never 36 alone. Interrupted mid-way (SIGINT) it leaves a
/// report and exits 130; `--resume` goes on without measuring a finished step again.
#[test]
fn an_unbuilt_neighbour_makes_a_range_and_resume_goes_on() {
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = TempDir::new("bisect-unbuilt");
    let (_, ids) = history(dir.path(), |k| match k {
        36 => None,
        k if k >= 37 => Some(28000),
        _ => Some(20000),
    });
    let mut child = Command::new(env!("CARGO_BIN_EXE_bakeoff"))
        .arg("bisect")
        .args(["plan.toml", "--out", "b"])
        .args(ends(&ids))
        .current_dir(dir.path())
        .env("BAKEOFF_CACHE", dir.path().join("cache"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Once two steps are saved.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(240);
    let b = dir.path().join("b");
    let saved = |b: &Path| {
        std::fs::read_to_string(b.join("bisect.json"))
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .and_then(|v| v["steps"].as_array().map(|s| s.len()))
            .unwrap_or(0)
    };
    while saved(&b) < 2 {
        assert!(
            std::time::Instant::now() < deadline,
            "no two steps in 240 s"
        );
        if child.try_wait().unwrap().is_some() {
            let o = child.wait_with_output().unwrap();
            panic!("bisect ended early: {}", String::from_utf8_lossy(&o.stderr));
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(130), "{err}");
    let before = record(&b);
    assert_eq!(before["status"], "interrupted");
    let made = before["steps"].as_array().unwrap().clone();
    let md = std::fs::read_to_string(b.join("report.md")).unwrap();
    assert!(
        md.contains("**Interrupted**") && md.contains("--resume"),
        "{md}"
    );

    let (o, err) = bisect(dir.path(), &["--resume", "b"]);
    assert_eq!(o.status.code(), Some(2), "{err}");
    let after = record(&b);
    let steps = after["steps"].as_array().unwrap();
    assert_eq!(
        &steps[..made.len()],
        &made[..],
        "finished steps measured again"
    );
    let blames = after["answer"]["blames"].as_array().unwrap();
    assert_eq!(blames.len(), 1, "{after}");
    assert_eq!(blames[0]["why"], "unbuilt", "{after}");
    assert_eq!(
        (blames[0]["from"].as_u64(), blames[0]["to"].as_u64()),
        (Some(35), Some(37))
    );
    assert!(
        err.contains("A range: commits 36–37") && err.contains(&format!("36 `{}`", &ids[36][..10])),
        "{err}"
    );
    let unbuilt = after["builds"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["commit"] == 36)
        .unwrap();
    assert_eq!(unbuilt["built"], false);
}

/// Mistakes are said before anything is built: a good that is not an ancestor of bad, the
/// same commit twice, a contender not built from a local repository.
#[test]
fn bisect_mistakes_are_said() {
    let dir = TempDir::new("bisect-mistakes");
    let (_, ids) = history(dir.path(), |_| Some(20000));
    let (o, err) = bisect(
        dir.path(),
        &[
            "plan.toml",
            "--contender",
            "server",
            "--good",
            &ids[9],
            "--bad",
            &ids[3],
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("is not an ancestor of --bad"), "{err}");
    let (o, err) = bisect(
        dir.path(),
        &[
            "plan.toml",
            "--contender",
            "server",
            "--good",
            "main",
            "--bad",
            &ids[64],
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("are the same commit"), "{err}");
    let (o, err) = bisect(
        dir.path(),
        &[
            "plan.toml",
            "--contender",
            "servr",
            "--good",
            &ids[0],
            "--bad",
            &ids[64],
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("did you mean `server`"), "{err}");
    let (o, err) = bisect(dir.path(), &["--resume", "nowhere"]);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("--resume nowhere"), "{err}");
    assert!(!dir.path().join("bakeoff-results").exists());
}
