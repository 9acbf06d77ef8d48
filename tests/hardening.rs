//! Hardening round four (issue 68): what a file, a flag or a plan can make bakeoff do that it
//! must not — a commit id read as git's option, a workflow value that ends its YAML scalar, a
//! Kubernetes shard whose setup swallows its run — and the exit codes `git bisect run` reads.
//! Each test failed before its fix.

mod common;

use std::path::Path;
use std::process::{Command, Output, Stdio};

use common::*;

fn bakeoff_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bakeoff"))
        .args(args)
        .current_dir(dir)
        .env("BAKEOFF_CACHE", dir.join("cache"))
        .env_remove("BAKEOFF_HISTORY")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A results folder of one short run of the built-in demo server, its plan in a git
/// repository at `dir/repo`.
fn results_in_a_repository(dir: &Path) -> std::path::PathBuf {
    let repo = dir.join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("README"), "a repository\n").unwrap();
    commit_all(&repo, "one");
    std::fs::write(repo.join("plan.toml"), demo_plan("bench", 100)).unwrap();
    let out = dir.join("out");
    let o = bakeoff_in(&repo, &["run", "plan.toml", "--out", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    out
}

/// Escape 1: a commit id from a results file, or from `--commit`, that git would read as an
/// option (`--output=FILE` overwrites FILE) is refused before git sees it.
#[test]
fn a_commit_id_from_a_file_or_a_flag_is_never_read_as_an_option() {
    let dir = TempDir::new("commit-option");
    let out = results_in_a_repository(dir.path());
    let repo = dir.path().join("repo");
    let victim = dir.path().join("victim");

    // `--commit=--output=FILE`: refused as not a commit, FILE never written.
    let flag = format!("--commit=--output={}", victim.display());
    let o = bakeoff_in(
        &repo,
        &[
            "history",
            "import",
            out.to_str().unwrap(),
            &flag,
            "--history",
            "../h.sqlite",
        ],
    );
    assert_ne!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("not a commit"), "{}", stderr(&o));
    assert!(!victim.exists(), "git wrote {}", victim.display());

    // A results.json whose contender names the commit `--output=FILE`.
    let path = out.join("results.json");
    let mut r: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    r["contenders"][0]["source"] = serde_json::json!({
        "repository": ".",
        "commit": format!("--output={}", victim.display()),
        "dirty": false,
        "key": "k",
    });
    std::fs::write(&path, serde_json::to_vec_pretty(&r).unwrap()).unwrap();
    let o = bakeoff_in(
        &repo,
        &[
            "history",
            "import",
            out.to_str().unwrap(),
            "--history",
            "../h.sqlite",
        ],
    );
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("results.json") && err.contains("not a commit id"),
        "{err}"
    );
    assert!(!victim.exists(), "git wrote {}", victim.display());
    // Nothing was recorded: the history lists no series.
    let o = bakeoff_in(&repo, &["history", "list", "--history", "../h.sqlite"]);
    assert!(
        !String::from_utf8_lossy(&o.stdout).contains("bench ·"),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
}

/// Parses YAML with PyYAML as JSON (one document).
fn yaml(text: &str) -> serde_json::Value {
    let mut child = Command::new("python3")
        .args([
            "-c",
            "import json, sys, yaml; print(json.dumps(yaml.safe_load(sys.stdin)))",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write as _;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}\n{text}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// A plan whose `[ci]` section is `ci` (TOML), with one contender that needs nothing built.
fn ci_plan(dir: &Path, ci: &str) -> String {
    let plan = dir.join("plan.toml");
    std::fs::write(
        &plan,
        format!(
            "name = \"ci\"\nrepetitions = 2\n\n[[contender]]\nname = \"a\"\ncommand = [\"./server\", \"{{port}}\"]\n\n[[scenario]]\nname = \"get\"\nhttp = \"/\"\nclients = [1]\n\n[ci]\n{ci}\n"
        ),
    )
    .unwrap();
    plan.to_string_lossy().into_owned()
}

/// Escape 4: a `[ci] env` value or `[ci] setup` line holding a newline and U+2028 (or NEL,
/// CR, NUL) reads back from the workflow exactly as written, adding no key and no step.
#[test]
fn no_character_of_a_value_ends_it_in_the_workflow() {
    if !python_has("yaml", "Python's yaml") {
        return;
    }
    let dir = TempDir::new("yaml-breaks");
    let evil_env = "x\n\u{2028}permissions: write-all";
    let evil_setup = "echo one\n\u{2029}  - run: echo injected\u{85}permissions: write-all\r";
    let plan = ci_plan(
        dir.path(),
        &format!(
            "env = {{ TOKEN_X = {} }}\nsetup = [{}]",
            serde_json::to_string(evil_env).unwrap(),
            serde_json::to_string(evil_setup).unwrap()
        ),
    );
    let out = bakeoff_in(dir.path(), &["ci", "github", &plan]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    for c in ['\u{2028}', '\u{2029}', '\u{85}', '\r', '\0'] {
        assert!(!text.contains(c), "{c:?} written raw:\n{text}");
    }
    let w = yaml(&text);
    assert!(
        w.get("permissions").is_none() || w["permissions"] != "write-all",
        "{w}"
    );
    let jobs: Vec<&serde_json::Value> = w["jobs"].as_object().unwrap().values().collect();
    let envs: Vec<&serde_json::Value> = std::iter::once(&w["env"])
        .chain(jobs.iter().map(|j| &j["env"]))
        .filter_map(|e| e.get("TOKEN_X"))
        .collect();
    assert!(!envs.is_empty(), "{w}");
    assert!(
        envs.iter().all(|e| **e == serde_json::json!(evil_env)),
        "{w}"
    );
    let runs: Vec<&str> = jobs
        .iter()
        .flat_map(|j| j["steps"].as_array().unwrap())
        .filter_map(|s| s["run"].as_str())
        .collect();
    assert!(runs.contains(&evil_setup), "{runs:?}");
    assert!(!runs.contains(&"echo injected"), "{runs:?}");
}

/// The shard's command from a `ci k8s` job.yaml.
fn shard_command(dir: &Path, plan: &str) -> String {
    let out = dir.join("k8s");
    let o = bakeoff_in(
        dir,
        &[
            "ci",
            "k8s",
            plan,
            "--shards",
            "2",
            "--image",
            "registry.example/b:1",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = std::fs::read_to_string(out.join("job.yaml")).unwrap();
    let job = text
        .split("\n---\n")
        .find(|d| d.contains("kind: Job"))
        .unwrap();
    let job = yaml(job);
    let c = &job["spec"]["template"]["spec"]["containers"][0]["command"];
    assert_eq!(c[0], "sh");
    c[2].as_str().unwrap().to_string()
}

/// Runs a shard's command with a `bakeoff` on PATH that only says it ran: (exit code, ran).
fn run_shard(dir: &Path, command: &str) -> (i32, bool) {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let fake = bin.join("bakeoff");
    let mark = dir.join("ran");
    let _ = std::fs::remove_file(&mark);
    std::fs::write(&fake, format!("#!/bin/sh\ntouch '{}'\n", mark.display())).unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let o = Command::new("sh")
        .args(["-c", command])
        .current_dir(dir)
        .env("PATH", path)
        .env("JOB_COMPLETION_INDEX", "0")
        .output()
        .unwrap();
    (o.status.code().unwrap_or(-1), mark.exists())
}

/// Wrong answer 6: a `[ci] setup` line cannot swallow the shard's run (a `#` comment, a
/// trailing `||` or `&`), and a setup that fails fails the pod.
#[test]
fn a_kubernetes_shard_always_runs_its_point_or_fails() {
    if !python_has("yaml", "Python's yaml") {
        return;
    }
    let dir = TempDir::new("k8s-setup");
    let d = dir.path();
    for setup in ["true # the server", "true &", "true;"] {
        let plan = ci_plan(
            d,
            &format!("setup = [{}]", serde_json::to_string(setup).unwrap()),
        );
        let (code, ran) = run_shard(d, &shard_command(d, &plan));
        assert!(ran && code == 0, "{setup:?}: exit {code}, ran {ran}");
    }
    for setup in ["false # the server", "true ||"] {
        let plan = ci_plan(
            d,
            &format!("setup = [{}]", serde_json::to_string(setup).unwrap()),
        );
        let (code, ran) = run_shard(d, &shard_command(d, &plan));
        assert!(!ran && code != 0, "{setup:?}: exit {code}, ran {ran}");
    }
    // Each line its own command: the first line's `#` does not hide the second.
    let plan = ci_plan(d, "setup = [\"true # one\", \"false\"]");
    let (code, ran) = run_shard(d, &shard_command(d, &plan));
    assert!(!ran && code != 0, "exit {code}, ran {ran}");
}

/// Wrong answer 5: every mistake of `check` exits 128, which `git bisect run` stops at (2,
/// clap's usual code, reads as "bad"); `--figure` takes the spelling the reports use too;
/// `bisect`'s mistakes exit 1, not 2 ("a range").
#[test]
fn mistakes_never_exit_with_a_code_git_bisect_reads_as_an_answer() {
    let dir = TempDir::new("check-codes");
    let d = dir.path();
    let plan = ci_plan(d, "");
    let base = [
        "check",
        plan.as_str(),
        "--contender",
        "a",
        "--against",
        "HEAD",
    ];
    let with = |extra: &[&str]| {
        let mut a = base.to_vec();
        a.extend_from_slice(extra);
        bakeoff_in(d, &a)
    };
    for (extra, says) in [
        (&["--figur", "p99"][..], "--figur"),
        (&["--figure", "p98"][..], "p98"),
        (&["--nonsense"][..], "--nonsense"),
    ] {
        let o = with(extra);
        assert_eq!(o.status.code(), Some(128), "{extra:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(says), "{}", stderr(&o));
    }
    let o = bakeoff_in(d, &["check", plan.as_str()]);
    assert_eq!(o.status.code(), Some(128), "{}", stderr(&o));
    // Both spellings of a figure are taken: the mistake is then the contender, not the flag.
    for spelling in ["cpu_per_request", "cpu-per-request"] {
        let o = with(&["--figure", spelling]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(128), "{err}");
        assert!(!err.contains("invalid value"), "{spelling}: {err}");
    }
    let o = bakeoff_in(d, &["bisect", plan.as_str(), "--nope"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    // Help is not a mistake.
    let o = bakeoff_in(d, &["check", "--help"]);
    assert_eq!(o.status.code(), Some(0));
}

/// Item 14: `${{ … }}` in a `[ci] setup` line, a `[ci] env` value or `--setup` would be
/// evaluated by GitHub before the shell reads it (script injection): refused, naming it.
#[test]
fn a_workflow_expression_in_a_setup_or_env_is_refused() {
    let dir = TempDir::new("ci-expressions");
    let d = dir.path();
    let evil = "echo ${{ github.event.pull_request.title }}";
    for ci in [
        format!("setup = [{:?}]", evil),
        format!("env = {{ TITLE = {:?} }}", evil),
    ] {
        let plan = ci_plan(d, &ci);
        let o = bakeoff_in(d, &["ci", "github", &plan]);
        assert_eq!(o.status.code(), Some(1), "{ci}: {}", stderr(&o));
        assert!(stderr(&o).contains("script injection"), "{}", stderr(&o));
        assert!(o.stdout.is_empty());
    }
    let plan = ci_plan(d, "");
    let o = bakeoff_in(d, &["ci", "github", &plan, "--setup", evil]);
    assert!(stderr(&o).contains("--setup command"), "{}", stderr(&o));
    assert_eq!(o.status.code(), Some(1));
}

/// Items 12 and 17: flags that mean nothing are refused at once — a detect window past
/// 10000 (the split is quadratic in it: a billion never ended), a p that is not a
/// probability, a rate of 200 %, an effect of 0 % or 1e300 %; and `bisect --scenario` that
/// names no scenario is refused before anything is resolved, built or written.
#[test]
fn flags_that_mean_nothing_are_refused_before_any_work() {
    let dir = TempDir::new("flags-nothing");
    let d = dir.path();
    for bad in [
        &["--window", "0"][..],
        &["--window", "1000000000"][..],
        &["--max-p", "NaN"][..],
        &["--max-p=-1"][..],
        &["--fdr", "200%"][..],
        &["--min-magnitude", "0%"][..],
    ] {
        let mut args = vec!["history", "detect", "--history", "h.sqlite"];
        args.extend_from_slice(bad);
        let o = bakeoff_in(d, &args);
        assert_eq!(o.status.code(), Some(2), "{bad:?}: {}", stderr(&o));
        assert!(stderr(&o).contains("invalid value"), "{}", stderr(&o));
    }
    assert!(
        !d.join("h.sqlite").exists(),
        "no history made for a mistake"
    );
    let repo = d.join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    for k in 0..2 {
        std::fs::write(repo.join("f"), format!("{k}\n")).unwrap();
        git(&repo, &["add", "f"]);
        git(&repo, &["commit", "-q", "-m", "c"]);
    }
    std::fs::write(
        d.join("plan.toml"),
        "name = \"b\"\n[[contender]]\nname = \"s\"\nsource = { git = \"repo\", ref = \"main\" }\nbuild = [[\"false\"]]\ncommand = [\"{source}/s\", \"{port}\"]\n[[scenario]]\nname = \"get\"\nhttp = \"/\"\n",
    )
    .unwrap();
    let base = [
        "bisect",
        "plan.toml",
        "--contender",
        "s",
        "--good",
        "main~1",
        "--bad",
        "main",
    ];
    for (extra, says) in [
        (&["--effect", "0%"][..], "--effect"),
        (&["--effect", "1e300%"][..], "--effect"),
        (&["--scenario", "nope", "--out", "b"][..], "--scenario nope"),
    ] {
        let mut args = base.to_vec();
        args.extend_from_slice(extra);
        let o = bakeoff_in(d, &args);
        assert_eq!(o.status.code(), Some(1), "{extra:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(says), "{}", stderr(&o));
    }
    assert!(!d.join("b").exists(), "no bisection folder for a mistake");
    assert!(!d.join("cache").exists(), "nothing built for a mistake");
}

/// Item 7: the shards of a self-hosted runner pool run in different folders; the same
/// commit built by the same recipe is the same build wherever its checkout lies, so their
/// results merge (they were refused as "`s` is X in one and X in the other").
#[test]
fn shards_from_two_checkouts_of_one_commit_merge() {
    let dir = TempDir::new("two-checkouts");
    let d = dir.path();
    let a = d.join("a");
    std::fs::create_dir_all(a.join("repo")).unwrap();
    let repo = a.join("repo");
    git(&repo, &["init", "-q", "-b", "main"]);
    std::fs::write(
        repo.join("server.c"),
        include_str!("fixtures/fromsource/server.c"),
    )
    .unwrap();
    commit_all(&repo, "s");
    std::fs::write(
        a.join("plan.toml"),
        "name = \"two\"\nrepetitions = 2\n[[contender]]\nname = \"s\"\nsource = { git = \"repo\", ref = \"main\" }\nbuild = [[\"cc\", \"-O1\", \"-o\", \"server\", \"server.c\", \"-lpthread\"]]\ncommand = [\"{source}/server\", \"{port}\"]\nready = { http = \"http://127.0.0.1:{port}/\", timeout = \"20s\" }\n[[scenario]]\nname = \"get\"\nhttp = \"/\"\nclients = [1]\nrequests = 100\n",
    )
    .unwrap();
    // The second runner's checkout: the same commit, another folder.
    let b = d.join("b");
    std::fs::create_dir_all(&b).unwrap();
    git(&b, &["clone", "-q", repo.to_str().unwrap(), "repo"]);
    std::fs::copy(a.join("plan.toml"), b.join("plan.toml")).unwrap();
    for (at, k) in [(&a, 1), (&b, 2)] {
        let out = d.join(format!("shard-{k}"));
        let shard = format!("{k}/2");
        let o = bakeoff_in(
            at,
            &[
                "run",
                "plan.toml",
                "--shard",
                &shard,
                "--out",
                out.to_str().unwrap(),
            ],
        );
        assert_eq!(o.status.code(), Some(0), "shard {k}: {}", stderr(&o));
    }
    let o = bakeoff_in(d, &["merge", "shard-1", "shard-2", "--out", "merged"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

/// Item 16: a history in a folder the caller cannot write is still listed, shown, exported
/// and drawn (read-only; its WAL read as immutable, as no `-shm` can be made), and a command
/// that records in it says why it cannot, not "attempt to write a readonly database". Run as
/// another user when the test is root, whom permissions do not stop.
#[test]
fn a_history_in_a_folder_the_caller_cannot_write_is_read() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = TempDir::new("ro-history");
    let folder = dir.path().join("h");
    std::fs::create_dir_all(&folder).unwrap();
    let history = folder.join("history.sqlite");
    drop(bakeoff::history::Store::open(&history).unwrap());
    let dash = dir.path().join("dash");
    std::fs::create_dir_all(&dash).unwrap();
    std::fs::set_permissions(&dash, std::fs::Permissions::from_mode(0o777)).unwrap();
    std::fs::set_permissions(&history, std::fs::Permissions::from_mode(0o444)).unwrap();
    std::fs::set_permissions(&folder, std::fs::Permissions::from_mode(0o555)).unwrap();
    let root = unsafe { libc::geteuid() } == 0;
    let as_reader = |args: &[&str]| -> Output {
        let mut c = match root {
            true => {
                let mut c = Command::new("setpriv");
                c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
                    .arg(env!("CARGO_BIN_EXE_bakeoff"));
                c
            }
            false => Command::new(env!("CARGO_BIN_EXE_bakeoff")),
        };
        c.args(args)
            .args(["--history", history.to_str().unwrap()])
            .current_dir(dir.path())
            .env("HOME", dir.path())
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    for args in [
        &["history", "list"][..],
        &["history", "export", "--csv"],
        &["history", "report", "--out", dash.to_str().unwrap()],
    ] {
        let o = as_reader(args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "{args:?}: {err}");
        assert!(!err.contains("readonly"), "{args:?}: {err}");
    }
    assert!(dash.join("index.html").is_file() && dash.join("badge.svg").is_file());
    let o = as_reader(&["history", "detect"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("you cannot write history") && err.contains("`history list`"),
        "{err}"
    );
    // Nothing was made beside it.
    let names: Vec<_> = std::fs::read_dir(&folder)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["history.sqlite"], "{names:?}");
    std::fs::set_permissions(&folder, std::fs::Permissions::from_mode(0o755)).unwrap();
}
