//! Contenders built from a git repository made at test time (issue 24): three commits of a
//! tiny C server — `fast`, `same` (a comment changed) and `slow` (twice the work per answer) —
//! built with `cc`, cached, overridden with `--ref`, gated with `--fail-on-regression`; a ref
//! that does not exist, a build that fails, the working tree with an uncommitted change, and
//! two runs sharing one cache at once.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use common::*;

const SERVER: &str = include_str!("fixtures/fromsource/server.c");

/// A repository with the three commits, tagged.
fn repo(dir: &Path) -> PathBuf {
    let r = dir.join("repo");
    std::fs::create_dir_all(&r).unwrap();
    git(&r, &["init", "-q", "-b", "main"]);
    let commit = |text: &str, tag: &str| {
        std::fs::write(r.join("server.c"), text).unwrap();
        git(&r, &["add", "server.c"]);
        git(&r, &["commit", "-q", "-m", tag]);
        git(&r, &["tag", tag]);
    };
    commit(SERVER, "fast");
    commit(
        &SERVER.replace("usage: server PORT", "usage: server PORT (same)"),
        "same",
    );
    commit(
        &SERVER.replace("#define WORK 20000", "#define WORK 40000"),
        "slow",
    );
    r
}

/// A plan comparing `new` against `base`, both built from `repo` (`like` keeps the repository;
/// only the ref differs).
fn plan(dir: &Path, base: &str, new: &str, extra: &str) -> PathBuf {
    let text = format!(
        r#"name = "from source"
repetitions = 2
baseline = "base"

[[contender]]
name = "base"
source = {{ git = "repo", ref = "{base}" }}
build = [["cc", "-O1", "-o", "server", "server.c", "-lpthread"]]
command = ["{{source}}/server", "{{port}}"]
ready = {{ http = "http://127.0.0.1:{{port}}/", timeout = "20s" }}
{extra}
[[contender]]
name = "new"
like = "base"
source = {{ ref = "{new}" }}

[[scenario]]
name = "get"
http = "/"
clients = [2]
duration = "2s"
"#
    );
    let p = dir.join("plan.toml");
    std::fs::write(&p, text).unwrap();
    p
}

fn run(dir: &Path, cache: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bakeoff"))
        .args(args)
        .current_dir(dir)
        .env("BAKEOFF_CACHE", cache)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// A contender's entry in a results document, by name.
fn contender<'a>(res: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    res["contenders"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no contender `{name}` in {res}"))
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn builds_once_then_the_cache_has_them_and_provenance_is_kept() {
    let dir = TempDir::new("src-cache");
    let r = repo(dir.path());
    let cache = dir.path().join("cache");
    let p = plan(dir.path(), "fast", "fast", "");
    let args = |out: &str, new: &str| -> Vec<String> {
        vec![
            "run".into(),
            p.display().to_string(),
            "--out".into(),
            out.into(),
            "--ref".into(),
            format!("new={new}"),
            "--repetitions".into(),
            "1".into(),
        ]
    };
    let a: Vec<String> = args("out1", "same");
    let first = run(
        dir.path(),
        &cache,
        &a.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    let err = stderr(&first);
    assert_eq!(first.status.code(), Some(0), "{err}");
    assert_eq!(err.matches(": building repo @ ").count(), 2, "{err}");
    let res = read_results(&dir.path().join("out1"));
    let src = |name: &str| contender(&res, name)["source"].clone();
    assert_eq!(src("base")["commit"], git(&r, &["rev-parse", "fast"]));
    assert_eq!(src("new")["commit"], git(&r, &["rev-parse", "same"]));
    assert_eq!(src("new")["ref"], "same", "--ref is what was built");
    assert_eq!(src("base")["dirty"], false);
    let build = &src("base")["build"];
    assert_eq!(build["cached"], false);
    assert!(build["seconds"].as_f64().unwrap() > 0.0, "{build}");
    assert!(build["cpu_s"].as_f64().unwrap() > 0.0, "{build}");
    assert!(build["peak_rss_bytes"].as_u64().unwrap() > 0, "{build}");
    let log = dir.path().join("out1").join(build["log"].as_str().unwrap());
    assert!(log.is_file(), "{}", log.display());
    let report = std::fs::read_to_string(dir.path().join("out1/report/report.md")).unwrap();
    assert!(report.contains("base: repo @ fast → `"), "{report}");
    // The title says what was built, `--ref` included; two commits are not one build.
    assert!(
        report.starts_with("# from source (base @ fast, new @ same)\n"),
        "{report}"
    );
    assert!(!report.contains("The same build"), "{report}");
    assert!(report.contains("(clean) — built in"), "{report}");
    // Nothing was built in the user's checkout.
    assert!(!r.join("server").exists());
    assert_eq!(git(&r, &["status", "--porcelain"]), "");

    // `new` at `base`'s commit: the same build, served from the cache, and said so.
    let a = args("out2", "fast");
    let second = run(
        dir.path(),
        &cache,
        &a.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    let err = stderr(&second);
    assert_eq!(second.status.code(), Some(0), "{err}");
    assert_eq!(err.matches(": cached build of repo @ ").count(), 2, "{err}");
    assert!(!err.contains(": building "), "{err}");
    let report = std::fs::read_to_string(dir.path().join("out2/report/report.md")).unwrap();
    assert!(
        report.contains("**The same build:** `base` and `new` are both commit `"),
        "{report}"
    );
    let res = read_results(&dir.path().join("out2"));
    assert!(res["contenders"]
        .as_array()
        .unwrap()
        .iter()
        .all(|c| c["source"]["build"]["cached"] == true));
    // `compare` says which commits it compares.
    let cmp = run(
        dir.path(),
        &cache,
        &["compare", "out1/results.json", "out2/results.json"],
    );
    let text = String::from_utf8_lossy(&cmp.stdout);
    let fast = git(&r, &["rev-parse", "--short=12", "fast"]);
    assert!(
        text.contains(&format!("base = repo @ fast ({fast})")) && text.contains("built: "),
        "{text}{}",
        stderr(&cmp)
    );
    let listed = run(dir.path(), &cache, &["cache", "list"]);
    let text = String::from_utf8_lossy(&listed.stdout);
    assert_eq!(text.lines().count(), 2, "{text}");
    // Each build names every contender it served, not only the one that built it.
    let fast_line = text
        .lines()
        .find(|l| l.contains(&git(&r, &["rev-parse", "--short=12", "fast"])))
        .unwrap_or_default();
    assert!(fast_line.contains("  for base, new  "), "{text}");
    assert!(
        text.contains(&git(&r, &["rev-parse", "--short=12", "fast"])),
        "{text}"
    );
    let pruned = run(dir.path(), &cache, &["cache", "prune", "--all"]);
    assert!(
        stderr(&pruned).contains("removed 2 builds"),
        "{}",
        stderr(&pruned)
    );
    assert!(cache::is_empty(&cache));
}

mod cache {
    pub fn is_empty(cache: &std::path::Path) -> bool {
        std::fs::read_dir(cache.join("builds"))
            .map(|d| {
                d.flatten()
                    .all(|e| e.path().extension().is_some_and(|x| x == "lock"))
            })
            .unwrap_or(true)
    }
}

#[test]
fn a_ref_that_does_not_exist_is_a_plan_error_naming_the_nearest() {
    let dir = TempDir::new("src-ref");
    repo(dir.path());
    let cache = dir.path().join("cache");
    let p = plan(dir.path(), "fast", "slwo", "");
    let o = run(dir.path(), &cache, &["plan", "check", p.to_str().unwrap()]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("contender `new`: source: `slwo` is not a ref"),
        "{err}"
    );
    assert!(err.contains("did you mean `slow`?"), "{err}");
    // `--ref` overrides it, in plan check as in run.
    let o = run(
        dir.path(),
        &cache,
        &["plan", "check", p.to_str().unwrap(), "--ref", "new=slow"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // It says which commit each ref is.
    let r = dir.path().join("repo");
    for (who, at) in [("base", "fast"), ("new", "slow")] {
        let line = format!(
            "  {who}: repo @ {at} → {} (clean)",
            git(&r, &["rev-parse", "--short=12", at])
        );
        assert!(stderr(&o).contains(&line), "{line}\n{}", stderr(&o));
    }
    let o = run(
        dir.path(),
        &cache,
        &["plan", "check", p.to_str().unwrap(), "--ref", "neww=slow"],
    );
    assert!(
        stderr(&o).contains("no contender is named `neww`; did you mean `new`?"),
        "{}",
        stderr(&o)
    );
    // Nothing was run or built.
    assert!(!dir.path().join("bakeoff-results").exists());
}

#[test]
fn a_failed_build_is_that_contenders_result_and_the_others_go_on() {
    let dir = TempDir::new("src-fail");
    repo(dir.path());
    let cache = dir.path().join("cache");
    let p = plan(dir.path(), "fast", "fast", "");
    // `broken` builds with a command that fails, after printing why.
    let text = std::fs::read_to_string(&p).unwrap().replace(
        "[[scenario]]",
        "[[contender]]\nname = \"broken\"\nlike = \"base\"\nbuild = [[\"sh\", \"-c\", \"echo the compiler is unhappy >&2; exit 3\"]]\n\n[[scenario]]",
    );
    std::fs::write(&p, text).unwrap();
    let o = run(
        dir.path(),
        &cache,
        &[
            "run",
            p.to_str().unwrap(),
            "--out",
            "out",
            "--repetitions",
            "1",
        ],
    );
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    let res = read_results(&dir.path().join("out"));
    let broken = contender(&res, "broken")["source"].clone();
    let e = broken["error"].as_str().unwrap();
    assert!(
        e.contains("build failed") && e.contains("exit status: 3"),
        "{e}"
    );
    assert!(e.contains("the compiler is unhappy"), "the log's tail: {e}");
    // The others were measured.
    let runs = res["runs"].as_array().unwrap();
    assert!(runs
        .iter()
        .any(|r| r["contender"] == "base" && r["status"] == "complete"));
    assert!(runs.iter().all(|r| r["contender"] != "broken"));
    let report = std::fs::read_to_string(dir.path().join("out/report/report.md")).unwrap();
    assert!(report.contains("broken: repo @ fast"), "{report}");
    assert!(report.contains("**build failed**"), "{report}");
    // Nothing was kept of the failed build.
    assert!(std::fs::read_dir(cache.join("builds"))
        .unwrap()
        .flatten()
        .all(|e| !e.file_name().to_string_lossy().contains(".tmp-")));
}

#[test]
fn the_working_tree_with_an_uncommitted_change_is_built_as_it_is() {
    let dir = TempDir::new("src-dirty");
    let r = repo(dir.path());
    let cache = dir.path().join("cache");
    let p = dir.path().join("plan.toml");
    std::fs::write(
        &p,
        r#"name = "dirty"
repetitions = 1
[[contender]]
name = "here"
source = { git = "repo", worktree = true }
build = [["cc", "-O1", "-o", "server", "server.c", "-lpthread"]]
command = ["{source}/server", "{port}"]
ready = { http = "http://127.0.0.1:{port}/", timeout = "20s" }
[[scenario]]
name = "get"
http = "/"
requests = 20
"#,
    )
    .unwrap();
    let changed = SERVER.replace("#define WORK 20000", "#define WORK 1234");
    std::fs::write(r.join("server.c"), &changed).unwrap();
    std::fs::write(r.join("notes.txt"), "untracked").unwrap();
    let before = git(&r, &["status", "--porcelain"]);
    let o = run(
        dir.path(),
        &cache,
        &["run", p.to_str().unwrap(), "--out", "out"],
    );
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(err.contains("(working tree)"), "{err}");
    let res = read_results(&dir.path().join("out"));
    let src = &res["contenders"][0]["source"];
    assert_eq!(src["dirty"], true, "{src}");
    assert_eq!(src["commit"], git(&r, &["rev-parse", "HEAD"]));
    // The build had the change and the untracked file; the checkout is as it was.
    let key = src["key"].as_str().unwrap();
    let tree = cache.join("builds").join(key).join("tree");
    assert_eq!(
        std::fs::read_to_string(tree.join("server.c")).unwrap(),
        changed
    );
    assert!(tree.join("notes.txt").is_file());
    assert_eq!(git(&r, &["status", "--porcelain"]), before);
    assert!(!r.join("server").exists());
    // Another change is another build.
    std::fs::write(r.join("notes.txt"), "changed again").unwrap();
    let o = run(
        dir.path(),
        &cache,
        &["run", p.to_str().unwrap(), "--out", "out2"],
    );
    assert!(stderr(&o).contains(": building "), "{}", stderr(&o));
}

#[test]
fn two_runs_at_once_share_one_cache_and_build_once() {
    let dir = TempDir::new("src-twice");
    repo(dir.path());
    let cache = dir.path().join("cache");
    let p = dir.path().join("plan.toml");
    // A build slow enough that the second run arrives while the first builds.
    std::fs::write(
        &p,
        r#"name = "twice"
repetitions = 1
[[contender]]
name = "one"
source = { git = "repo", ref = "fast" }
build = [["sh", "-c", "sleep 1 && cc -O1 -o server server.c -lpthread"]]
command = ["{source}/server", "{port}"]
ready = { http = "http://127.0.0.1:{port}/", timeout = "20s" }
[[scenario]]
name = "get"
http = "/"
requests = 20
"#,
    )
    .unwrap();
    let start = |out: &str| {
        Command::new(env!("CARGO_BIN_EXE_bakeoff"))
            .args(["run", p.to_str().unwrap(), "--out", out])
            .current_dir(dir.path())
            .env("BAKEOFF_CACHE", &cache)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (a, b) = (start("a"), start("b"));
    let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
    let (ea, eb) = (stderr(&a), stderr(&b));
    assert_eq!(
        (a.status.code(), b.status.code()),
        (Some(0), Some(0)),
        "{ea}\n---\n{eb}"
    );
    let built = [&ea, &eb]
        .iter()
        .filter(|e| e.contains(": building "))
        .count();
    let cached = [&ea, &eb]
        .iter()
        .filter(|e| e.contains(": cached build of "))
        .count();
    assert_eq!((built, cached), (1, 1), "{ea}\n---\n{eb}");
    let builds: Vec<_> = std::fs::read_dir(cache.join("builds"))
        .unwrap()
        .flatten()
        .filter(|e| e.path().is_dir())
        .collect();
    assert_eq!(builds.len(), 1, "one build, no leftovers");
}

#[test]
fn the_gate_trips_on_twice_the_work_and_not_on_an_identical_build() {
    let dir = TempDir::new("src-gate");
    repo(dir.path());
    let cache = dir.path().join("cache");
    let p = plan(dir.path(), "fast", "fast", "");
    let gate = |new: &str, out: &str| {
        run(
            dir.path(),
            &cache,
            &[
                "run",
                p.to_str().unwrap(),
                "--out",
                out,
                "--ref",
                &format!("new={new}"),
                "--fail-on-regression",
                "5",
                // Three fresh starts: a verdict's interval is at least Student's t over the
                // repetitions, and two (t = 12.7) would make the gate depend on the host.
                "--repetitions",
                "3",
            ],
        )
    };
    let slow = gate("slow", "slow");
    let err = stderr(&slow);
    assert_eq!(slow.status.code(), Some(4), "{err}");
    assert!(err.contains("regression: "), "{err}");
    // The gate says its outcome either way, and how large a regression it could catch.
    assert!(
        err.lines().any(|l| l.starts_with("gate: ")
            && l.contains("past 5%")
            && l.contains("different and worse past it")),
        "{err}"
    );
    let same = gate("same", "same");
    let err = stderr(&same);
    assert_eq!(same.status.code(), Some(0), "{err}");
    let line = err
        .lines()
        .find(|l| l.starts_with("gate: "))
        .unwrap_or_default();
    assert!(
        line.starts_with("gate: no regression past 5% — ")
            && line.contains("or more would have tripped it"),
        "{err}"
    );
}

#[test]
fn shards_built_from_different_commits_do_not_merge() {
    let dir = TempDir::new("src-merge");
    repo(dir.path());
    let cache = dir.path().join("cache");
    let p = plan(dir.path(), "fast", "fast", "");
    let shard = |k: &str, new: &str, out: &str| {
        let o = run(
            dir.path(),
            &cache,
            &[
                "run",
                p.to_str().unwrap(),
                "--shard",
                k,
                "--out",
                out,
                "--ref",
                &format!("new={new}"),
            ],
        );
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    };
    shard("1/2", "fast", "s1");
    shard("2/2", "same", "s2");
    let o = run(
        dir.path(),
        &cache,
        &["merge", "s1", "s2", "--out", "merged"],
    );
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("measured different builds: contender `new`"),
        "{err}"
    );
    assert!(!dir.path().join("merged").exists());
}

/// `bakeoff ci github` for a plan built from source: the workflow reads back (PyYAML), has
/// the history checked out, the plan's `[ci]` setup, the builds' cache, the pull request's
/// refs, the merge with its gate; an `{env:…}` nothing sets is warned about. Then its own
/// shell steps run here, with GitHub's expressions filled in as a pull request would: setup,
/// the shard, the merge.
#[test]
fn the_workflow_for_a_plan_from_source_runs_its_own_steps() {
    let dir = TempDir::new("src-ci");
    let r = repo(dir.path());
    let cache = dir.path().join("cache");
    let p = plan(dir.path(), "fast", "fast", "");
    let text = std::fs::read_to_string(&p).unwrap().replace("repetitions = 2", "repetitions = 1")
        + "\n[ci]\nsetup = [\"echo \\\"FROM_SETUP=yes\\\" >> \\\"$GITHUB_ENV\\\"\"]\nenv = { SET_HERE = \"1\" }\n";
    // A contender that reads a variable nothing sets (and one the setup sets).
    let text = text.replace(
        "command = [\"{source}/server\", \"{port}\"]",
        "command = [\"{source}/server\", \"{port}\"]\nenv = { A = \"{env:NOBODY_SETS_THIS:-x}\", B = \"{env:FROM_SETUP}\", C = \"{env:SET_HERE}\", D = \"{env:UNSET_IN_CI}\" }",
    );
    std::fs::write(&p, text).unwrap();
    let o = run(
        dir.path(),
        &cache,
        &[
            "ci",
            "github",
            "plan.toml",
            "--shards",
            "1",
            "--pull-request",
            "base,new",
            "--fail-on-regression",
            "5",
            "--out",
            "wf",
        ],
    );
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(
        err.contains("`{env:UNSET_IN_CI}`, which the workflow does not set"),
        "{err}"
    );
    for set in ["FROM_SETUP", "SET_HERE", "NOBODY_SETS_THIS"] {
        assert!(!err.contains(set), "{set} is set or has a default: {err}");
    }
    // Read back: the steps of each job as (name, run or uses), and the triggers.
    let script = r#"
import json, sys, yaml
w = yaml.safe_load(open(sys.argv[1]))
out = {"on": sorted(w["on"].keys()), "env": w["env"], "jobs": {}}
for name, job in w["jobs"].items():
    out["jobs"][name] = [{"run": s.get("run"), "uses": s.get("uses"), "with": s.get("with"), "if": s.get("if")} for s in job["steps"]]
print(json.dumps(out))
"#;
    let read = Command::new("python3")
        .args(["-c", script])
        // A pull request's gate is written as bakeoff-gate.yml.
        .arg(dir.path().join("wf/bakeoff-gate.yml"))
        .output()
        .unwrap();
    assert!(
        read.status.success(),
        "{}",
        String::from_utf8_lossy(&read.stderr)
    );
    let w: serde_json::Value = serde_json::from_slice(&read.stdout).unwrap();
    assert_eq!(
        w["on"],
        serde_json::json!(["pull_request", "workflow_dispatch"])
    );
    assert_eq!(w["env"]["SET_HERE"], "1");
    let shard = w["jobs"]["shard"].as_array().unwrap();
    assert_eq!(shard[0]["uses"], "actions/checkout@v4");
    assert_eq!(shard[0]["with"]["fetch-depth"], 0, "refs need the history");
    assert!(shard.iter().any(|s| s["uses"] == "actions/cache@v4"));
    // The steps a pull request runs (not those for any other event).
    let runs: Vec<String> = shard
        .iter()
        .filter(|s| s["if"] != "github.event_name != 'pull_request'")
        .filter_map(|s| s["run"].as_str().map(str::to_string))
        .collect();
    // Every command a step runs is one this machine has (bakeoff, cargo, the shell's own).
    for r in &runs {
        let program = r.split_whitespace().next().unwrap();
        assert!(["cargo", "echo", "bakeoff"].contains(&program), "{r}");
    }
    let merge: Vec<String> = w["jobs"]["merge"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["run"].as_str().map(str::to_string))
        .collect();
    assert!(
        merge.iter().any(|m| m.contains("--fail-on-regression 5%")),
        "{merge:?}"
    );

    // The steps, as a pull request from `fast` to `same` would run them.
    let bin = dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_bakeoff"), bin.join("bakeoff")).unwrap();
    let github_env = dir.path().join("github_env");
    std::fs::write(&github_env, "").unwrap();
    let fill = |step: &str| {
        step.replace("${{ matrix.shard }}", "1")
            .replace("${{ github.event.pull_request.number }}", "7")
            .replace(
                "${{ github.event.pull_request.base.sha }}",
                &git(&r, &["rev-parse", "fast"]),
            )
            .replace(
                "${{ github.event.pull_request.head.sha }}",
                &git(&r, &["rev-parse", "same"]),
            )
    };
    let sh = |step: &str| {
        let mut env: Vec<(String, String)> = std::fs::read_to_string(&github_env)
            .unwrap()
            .lines()
            .filter_map(|l| {
                l.split_once('=')
                    .map(|(k, v)| (k.to_string(), v.to_string()))
            })
            .collect();
        env.push(("SET_HERE".into(), "1".into()));
        env.push(("UNSET_IN_CI".into(), "set for this test".into()));
        let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
        Command::new("bash")
            .args(["-e", "-c", &fill(step)])
            .current_dir(dir.path())
            .env("PATH", path)
            .env("GITHUB_ENV", &github_env)
            // No `gh` here: the comment step says it could not post, and goes on.
            .env("GITHUB_REPOSITORY", "them/theirs")
            .env("BAKEOFF_CACHE", &cache)
            .envs(env)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    for step in runs.iter().filter(|r| !r.starts_with("cargo install")) {
        let o = sh(step);
        assert!(o.status.success(), "{step}: {}", stderr(&o));
    }
    let res = read_results(&dir.path().join("results/shard-1"));
    let new = contender(&res, "new");
    assert_eq!(
        new["source"]["commit"],
        git(&r, &["rev-parse", "same"]),
        "the pull request's head"
    );
    // The artifacts, as download-artifact lays them out, then the merge and its gate.
    std::fs::create_dir_all(dir.path().join("shards")).unwrap();
    std::fs::rename(
        dir.path().join("results/shard-1"),
        dir.path().join("shards/bakeoff-shard-1"),
    )
    .unwrap();
    for step in merge.iter().filter(|r| !r.starts_with("cargo install")) {
        let o = sh(step);
        assert!(o.status.success(), "{step}: {}", stderr(&o));
    }
    assert!(dir.path().join("merged/report/report.md").is_file());
}

/// A URL source (issue 24): fetched into the cache's partial clone and checked out from it
/// (a `file://` URL stands in for a server here); a URL that cannot be fetched says so.
#[test]
fn a_url_source_is_fetched_into_the_cache_and_an_unreachable_one_says_so() {
    let dir = TempDir::new("src-url");
    let r = repo(dir.path());
    let cache = dir.path().join("cache");
    let url = format!("file://{}", r.display());
    let p = plan(dir.path(), "fast", "slow", "");
    let text = std::fs::read_to_string(&p)
        .unwrap()
        .replace("git = \"repo\"", &format!("git = \"{url}\""));
    std::fs::write(&p, &text).unwrap();
    let o = run(
        dir.path(),
        &cache,
        &[
            "run",
            p.to_str().unwrap(),
            "--out",
            "out",
            "--repetitions",
            "1",
        ],
    );
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let res = read_results(&dir.path().join("out"));
    let new = contender(&res, "new");
    assert_eq!(new["source"]["commit"], git(&r, &["rev-parse", "slow"]));
    assert!(
        cache.join("repos").is_dir(),
        "the partial clone is kept in the cache"
    );
    // Nowhere to fetch from.
    let gone = text.replace(&url, "file:///nonexistent/bakeoff-repo");
    std::fs::write(&p, gone).unwrap();
    let o = run(dir.path(), &cache, &["plan", "check", p.to_str().unwrap()]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("cannot fetch `file:///nonexistent/bakeoff-repo`") && err.contains("network"),
        "{err}"
    );
}

/// A member built from a source of its own (issue 24: "a contender (or member)"): a cluster
/// of two members at two commits, each `{source}` its own tree, each recorded.
#[test]
fn members_can_be_built_from_sources_of_their_own() {
    let dir = TempDir::new("src-members");
    let r = repo(dir.path());
    let cache = dir.path().join("cache");
    let member = |name: &str, rev: &str| {
        format!(
            r#"[[contender.member]]
name = "{name}"
source = {{ git = "repo", ref = "{rev}" }}
build = [["cc", "-O1", "-o", "server", "server.c", "-lpthread"]]
command = ["{{source}}/server", "{{port:{name}}}"]
endpoint = "http://127.0.0.1:{{port:{name}}}"
ready = {{ http = "http://127.0.0.1:{{port:{name}}}/", timeout = "20s" }}
"#
        )
    };
    let p = dir.path().join("plan.toml");
    std::fs::write(
        &p,
        format!(
            "name = \"members\"\nrepetitions = 1\n[[contender]]\nname = \"pair\"\n{}{}\n[[scenario]]\nname = \"get\"\nhttp = \"/\"\nrequests = 10\ntarget = \"all\"\n",
            member("a", "fast"),
            member("b", "same")
        ),
    )
    .unwrap();
    let o = run(
        dir.path(),
        &cache,
        &["run", p.to_str().unwrap(), "--out", "out"],
    );
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(
        err.contains("pair/a: building repo @ fast")
            && err.contains("pair/b: building repo @ same"),
        "{err}"
    );
    let res = read_results(&dir.path().join("out"));
    let members = res["contenders"][0]["members"].as_array().unwrap();
    assert_eq!(
        members[0]["source"]["commit"],
        git(&r, &["rev-parse", "fast"])
    );
    assert_eq!(
        members[1]["source"]["commit"],
        git(&r, &["rev-parse", "same"])
    );
    assert_ne!(members[0]["source"]["key"], members[1]["source"]["key"]);
    let report = std::fs::read_to_string(dir.path().join("out/report/report.md")).unwrap();
    assert!(
        report.contains("pair/a: repo @ fast") && report.contains("pair/b: repo @ same"),
        "{report}"
    );
    // A member's `build` without a source of its own is refused where it is written.
    let bad = std::fs::read_to_string(&p).unwrap().replacen(
        "source = { git = \"repo\", ref = \"fast\" }\n",
        "",
        1,
    );
    std::fs::write(&p, bad).unwrap();
    let o = run(dir.path(), &cache, &["plan", "check", p.to_str().unwrap()]);
    assert!(
        stderr(&o).contains("member `a`: `build` needs a `source`"),
        "{}",
        stderr(&o)
    );
}

/// `--rebuild` builds again what the cache has; a build past its `build_timeout` is ended
/// and recorded as that contender's failure.
#[test]
fn rebuild_builds_again_and_a_build_past_its_timeout_fails() {
    let dir = TempDir::new("src-rebuild");
    repo(dir.path());
    let cache = dir.path().join("cache");
    let p = plan(dir.path(), "fast", "fast", "");
    let args = [
        "run",
        p.to_str().unwrap(),
        "--repetitions",
        "1",
        "--only",
        "base",
    ];
    let first = run(dir.path(), &cache, &[&args[..], &["--out", "a"]].concat());
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    let again = run(
        dir.path(),
        &cache,
        &[&args[..], &["--out", "b", "--rebuild"]].concat(),
    );
    let err = stderr(&again);
    assert_eq!(again.status.code(), Some(0), "{err}");
    assert!(
        err.contains("base: building repo @ fast") && !err.contains("cached build"),
        "{err}"
    );
    // A build that overstays its limit.
    let slow = std::fs::read_to_string(&p).unwrap().replace(
        "build = [[\"cc\", \"-O1\", \"-o\", \"server\", \"server.c\", \"-lpthread\"]]",
        "build = [[\"sleep\", \"30\"]]\nbuild_timeout = \"1s\"",
    );
    std::fs::write(&p, slow).unwrap();
    let started = std::time::Instant::now();
    let o = run(dir.path(), &cache, &[&args[..], &["--out", "c"]].concat());
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(25),
        "{err}"
    );
    let res = read_results(&dir.path().join("c"));
    let e = res["contenders"][0]["source"]["error"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(e.contains("still running after"), "{e}");
}

/// The README's plan, as a newcomer copies it into a repository of its shape (a server that
/// `make server` builds, started as `server --port PORT --data DIR`, tagged `v1.4.0`, with
/// `main` one commit on): `plan check` resolves both refs, and `run` with nothing else
/// builds both, serves both points and keeps its report under
/// `bakeoff-results/<time>-<name>/report/`, as the README says. Each point is cut to 500 ms
/// (the plan's default is 10 s); the plan is otherwise the README's, byte for byte.
#[test]
fn the_readmes_plan_runs_in_a_repository_of_its_shape() {
    let dir = TempDir::new("src-readme");
    let r = dir.path().join("repo");
    std::fs::create_dir_all(&r).unwrap();
    let server = SERVER
        .replace("argc != 2", "argc != 5")
        .replace("usage: server PORT", "usage: server --port PORT --data DIR")
        .replace("atoi(argv[1])", "atoi(argv[2])");
    assert_eq!(
        server.matches("argv[2]").count(),
        1,
        "the fixture's main changed"
    );
    std::fs::write(r.join("server.c"), &server).unwrap();
    std::fs::write(
        r.join("Makefile"),
        "server: server.c\n\tcc -O1 -o server server.c -lpthread\n",
    )
    .unwrap();
    git(&r, &["init", "-q", "-b", "main"]);
    git(&r, &["add", "server.c", "Makefile"]);
    git(&r, &["commit", "-q", "-m", "the release"]);
    git(&r, &["tag", "v1.4.0"]);
    std::fs::write(r.join("server.c"), server.replace("20000", "21000")).unwrap();
    git(&r, &["commit", "-q", "-am", "main, one commit on"]);

    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let text = readme
        .split("```toml\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .expect("the README shows a plan");
    assert_eq!(text.matches("clients = [1, 16]\n").count(), 1, "{text}");
    let text = text.replace(
        "clients = [1, 16]\n",
        "clients = [1, 16]\nduration = \"500ms\"\n",
    );
    std::fs::write(r.join("plan.toml"), &text).unwrap();
    let cache = dir.path().join("cache");

    let check = run(&r, &cache, &["plan", "check", "plan.toml"]);
    let said = stderr(&check);
    assert_eq!(check.status.code(), Some(0), "{said}");
    for at in ["v1.4.0", "main"] {
        let commit = git(&r, &["rev-parse", "--short=12", at]);
        assert!(
            said.contains(&format!(" @ {at} → {commit} (clean)")),
            "{said}"
        );
    }

    let ran = run(&r, &cache, &["run", "plan.toml"]);
    assert_eq!(ran.status.code(), Some(0), "{}", stderr(&ran));
    // Run in the user's checkout: the results go under its git folder, and the working
    // tree is left as it was (issue 71).
    assert!(!r.join("bakeoff-results").exists());
    let kept: Vec<PathBuf> = std::fs::read_dir(r.join(".git/bakeoff-results"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(kept.len(), 1, "{kept:?}");
    let name = kept[0].file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        name.ends_with("-my-server--the-release-against-main"),
        "{name}"
    );
    assert!(kept[0].join("report/report.md").is_file());
    let res = read_results(&kept[0]);
    // Both points served in each of the plan's three repetitions (the budget may add more).
    for c in ["release", "main"] {
        let served = res["runs"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|run| run["contender"] == c && run["repetition"].as_u64() <= Some(3))
            .flat_map(|run| run["points"].as_array().unwrap())
            .filter(|p| p["load"]["successes"].as_u64().unwrap_or(0) > 0)
            .count();
        assert_eq!(served, 2 * 3, "{c}: two points, three repetitions");
    }
}
