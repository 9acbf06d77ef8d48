//! `bakeoff check` (issue 49, docs/bisect.md): the working tree of a repository made at test
//! time against a ref, exiting as `git bisect run` reads it — 1 when it is slower (twice the
//! work an answer), 0 when it is faster, 125 when it does not build, 128 for a mistake.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use common::*;

const SERVER: &str = include_str!("fixtures/fromsource/server.c");

/// Three tagged commits: `fast`, `slow` (twice the work an answer), `broken` (no build).
fn repo(dir: &Path) -> PathBuf {
    let r = dir.join("repo");
    std::fs::create_dir_all(&r).unwrap();
    git(&r, &["init", "-q", "-b", "main"]);
    for (tag, text) in [
        ("fast", SERVER.to_string()),
        (
            "slow",
            SERVER.replace("#define WORK 20000", "#define WORK 40000"),
        ),
        ("broken", format!("{SERVER}\nthis does not compile\n")),
    ] {
        std::fs::write(r.join("server.c"), text).unwrap();
        git(&r, &["add", "server.c"]);
        git(&r, &["commit", "-q", "-m", tag]);
        git(&r, &["tag", tag]);
    }
    r
}

fn plan(dir: &Path) -> PathBuf {
    let text = r#"name = "check"
repetitions = 3

[[contender]]
name = "server"
source = { git = "repo", ref = "main" }
build = [["cc", "-O1", "-o", "server", "server.c", "-lpthread"]]
command = ["{source}/server", "{port}"]
ready = { http = "http://127.0.0.1:{port}/", timeout = "20s" }

[[contender]]
name = "other"
command = ["sh", "-c", "exit 3"]

[[scenario]]
name = "get"
http = "/"
clients = [2]
duration = "2s"
"#;
    let p = dir.join("plan.toml");
    std::fs::write(&p, text).unwrap();
    p
}

/// `bakeoff check` with the repository checked out at `at`.
fn check(dir: &Path, repo: &Path, at: &str, args: &[&str]) -> (Output, String) {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    git(repo, &["checkout", "-q", at]);
    let n = N.fetch_add(1, Ordering::Relaxed);
    let o = Command::new(env!("CARGO_BIN_EXE_bakeoff"))
        .arg("check")
        .arg(dir.join("plan.toml"))
        .args(args)
        .args(["--out", &format!("out-{n}-{at}")])
        .current_dir(dir)
        .env("BAKEOFF_CACHE", dir.join("cache"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    (o, err)
}

#[test]
fn check_exits_as_git_bisect_run_reads_it() {
    let dir = TempDir::new("check");
    let r = repo(dir.path());
    plan(dir.path());
    let against = |tag: &'static str| ["--contender", "server", "--against", tag];

    let (o, err) = check(dir.path(), &r, "slow", &against("fast"));
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("check: bad (exit 1) — the working tree against fast: different and worse at get [clients=2]"),
        "{err}"
    );
    // Only the contender asked for ran, twice: at the ref and from the working tree.
    let res = read_results(&dir.path().join("out-0-slow"));
    let names: Vec<&str> = res["contenders"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["against", "current"]);
    assert_eq!(
        res["contenders"][1]["source"]["commit"],
        git(&r, &["rev-parse", "slow"])
    );

    let (o, err) = check(dir.path(), &r, "fast", &against("slow"));
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(err.contains("check: good (exit 0)"), "{err}");

    let (o, err) = check(dir.path(), &r, "broken", &against("fast"));
    assert_eq!(o.status.code(), Some(125), "{err}");
    assert!(
        err.contains("check: skip (exit 125)") && err.contains("the working tree did not build"),
        "{err}"
    );

    // Mistakes stop `git bisect run` (above 127), never read as "bad".
    let (o, err) = check(
        dir.path(),
        &r,
        "fast",
        &["--contender", "servr", "--against", "fast"],
    );
    assert_eq!(o.status.code(), Some(128), "{err}");
    assert!(err.contains("did you mean `server`"), "{err}");
    let (o, err) = check(dir.path(), &r, "fast", &against("broken"));
    assert_eq!(o.status.code(), Some(128), "{err}");
    assert!(err.contains("--against broken: it did not build"), "{err}");
}

/// `git bisect run bakeoff check …` over 64 commits of the server after a good one, where
/// commit 37 doubles the work an answer: git ends on commit 37. Identical builds must prove equal for a step
/// to read good, so the plan's equivalence band is set to what this change is worth finding
/// (10 %), and the budget lets a step go on until it decides.
#[test]
fn git_bisect_run_with_check_ends_on_the_slow_commit() {
    let dir = TempDir::new("check-bisect");
    let r = dir.path().join("repo");
    std::fs::create_dir_all(&r).unwrap();
    git(&r, &["init", "-q", "-b", "main"]);
    let mut commits = Vec::new();
    for k in 0..=64 {
        let work = if k >= 37 { "40000" } else { "20000" };
        let text = SERVER
            .replace("#define WORK 20000", &format!("#define WORK {work}"))
            .replace("usage: server PORT", &format!("usage: server PORT ({k})"));
        std::fs::write(r.join("server.c"), text).unwrap();
        git(&r, &["add", "server.c"]);
        git(&r, &["commit", "-q", "-m", &format!("commit {k}")]);
        commits.push(git(&r, &["rev-parse", "HEAD"]));
    }
    let text = std::fs::read_to_string(plan(dir.path())).unwrap().replace(
        "repetitions = 3\n",
        "repetitions = 3\nbudget = \"90s\"\npaired = { noise = \"5%\", equivalence = \"10%\" }\n",
    );
    std::fs::write(dir.path().join("plan.toml"), text).unwrap();
    git(&r, &["bisect", "start", &commits[64], &commits[0]]);
    let step = format!(
        "cd {} && exec {} check plan.toml --contender server --against {} --out \"out-$(git -C repo rev-parse --short HEAD)\"",
        dir.path().display(),
        env!("CARGO_BIN_EXE_bakeoff"),
        commits[0]
    );
    let o = Command::new("git")
        .arg("-C")
        .arg(&r)
        .args(["bisect", "run", "sh", "-c", &step])
        .env("BAKEOFF_CACHE", dir.path().join("cache"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{out}\n{err}");
    assert!(
        out.contains(&format!("{} is the first bad commit", commits[37])),
        "{out}\n{err}"
    );
}
