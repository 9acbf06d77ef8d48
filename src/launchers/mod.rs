//! Launchers for engines people already run, generated from the plan (never maintained by
//! hand): a GitHub Actions workflow with a matrix job per shard, or a Kubernetes Indexed Job
//! — each followed by the merge (docs/scale-out.md). bakeoff does not manage machines; it
//! writes what those engines need to run `bakeoff run --shard K/N` and `bakeoff merge`.

mod yaml;

use std::path::{Path, PathBuf};

use anyhow::bail;

use crate::plan::Plan;
// Single-quoted for a POSIX shell where needed.
use crate::units::shell_word as sh;
use yaml::Y;
mod action;
mod comment;
pub use comment::*;
mod github;
pub use github::*;
mod install;
pub use install::*;
mod issue;
pub use issue::*;
mod publish;
pub use publish::*;
mod k8s;
pub use k8s::*;

/// What every launcher needs (the `bakeoff ci` flags).
pub struct CiCommon {
    /// The plan file, as the repository has it (its path is used as written).
    pub plan: PathBuf,
    pub shards: u32,
    /// Passed to the merge.
    pub fail_on_diff: bool,
    /// Passed to the merge, in percent.
    pub fail_on_regression: Option<f64>,
    pub fail_unless_equivalent: Option<f64>,
}

/// `bakeoff ci github`.
pub struct CiGithubArgs {
    pub common: CiCommon,
    pub runs_on: String,
    /// How each job installs bakeoff; `None`: this version from crates.io, the binary
    /// cached between runs.
    pub install: Option<String>,
    /// Commands that install what the contenders need, before a shard runs.
    pub setup: Vec<String>,
    /// `--pull-request BASE,NEW`: on a pull request, these contenders are built at its base
    /// and head commits.
    pub pull_request: Option<(String, String)>,
    /// `--schedule CRON`: a `schedule` trigger too.
    pub schedule: Option<String>,
    /// `--history`: keep a history between runs (also when the plan records).
    pub history: bool,
    /// `--action OWNER/REPO@REF`: one job using bakeoff's composite action.
    pub action: Option<String>,
}

/// Where the workflow keeps the history between runs (in the runner's checkout, restored
/// from and saved to the Actions cache).
const HISTORY: &str = ".bakeoff/history.sqlite";

/// How long a shard job may run, and the merge (which, with a history, may confirm and
/// bisect a step): past it GitHub cancels the job, rather than after its 6 hours.
const SHARD_MINUTES: i64 = 120;
const MERGE_MINUTES: i64 = 240;

/// What the contenders need on a fresh runner: the plan's `[ci] setup` and `--setup`
/// commands, and the cache of builds from source.
fn contender_steps(a: &CiGithubArgs, plan: &Plan) -> Vec<Y> {
    let mut steps = Vec::new();
    for s in plan.ci.setup.iter().chain(&a.setup) {
        steps.push(Y::map([
            ("name", Y::str("Set up the contenders")),
            ("run", Y::str(s.clone())),
        ]));
    }
    if plan.contenders.iter().any(|c| c.source.is_some()) {
        // Builds of the same commits are kept between runs (bakeoff's cache key decides
        // what is reused; a stale entry is only a miss).
        steps.push(Y::map([
            ("name", Y::str("Keep the contenders' builds")),
            ("uses", Y::str("actions/cache@v4")),
            (
                "with",
                Y::map([
                    ("path", Y::str("~/.cache/bakeoff/builds")),
                    (
                        "key",
                        Y::str("bakeoff-builds-${{ runner.os }}-${{ github.event.pull_request.base.sha }}-${{ github.sha }}"),
                    ),
                    ("restore-keys", Y::str("bakeoff-builds-${{ runner.os }}-")),
                ]),
            ),
        ]));
    }
    steps
}

/// The `{env:NAME}` a plan reads that its `[ci] env` does not set: a workflow would fail at
/// the plan check without them.
pub fn unset_env(plan_path: &Path) -> anyhow::Result<Vec<String>> {
    let plan = Plan::load(plan_path)?;
    Ok(plan
        .env_needed()
        .into_iter()
        .filter(|v| !plan.ci.env.iter().any(|(k, _)| k == v))
        // A setup command may set it for the later steps (`echo "NAME=…" >> "$GITHUB_ENV"`).
        .filter(|v| !plan.ci.setup.iter().any(|s| s.contains(&format!("{v}="))))
        .collect())
}

/// What a GitHub runner has to build with, so a plan building with them alone needs no
/// `[ci] setup`.
const RUNNER_TOOLS: &[&str] = &[
    "cc",
    "gcc",
    "g++",
    "c++",
    "clang",
    "clang++",
    "make",
    "cmake",
    "ninja",
    "meson",
    "git",
    "sh",
    "bash",
    "env",
    "cargo",
    "rustc",
    "go",
    "python3",
    "python",
    "pip",
    "pip3",
    "node",
    "npm",
    "npx",
    "yarn",
    "java",
    "javac",
    "mvn",
    "gradle",
    "dotnet",
    "autoreconf",
    "true",
    "cp",
    "mkdir",
    "ln",
    "tar",
    "install",
];

/// The programs the plan's contenders (or members) are built with that a runner does not
/// have, while neither the plan's `[ci] setup` nor `--setup` installs anything: a build
/// needing them fails on every shard. A program in the repository (`./configure`) is its own.
pub fn builds_without_setup(plan_path: &Path, setup: &[String]) -> anyhow::Result<Vec<String>> {
    let plan = Plan::load(plan_path)?;
    if !plan.ci.setup.is_empty() || !setup.is_empty() {
        return Ok(Vec::new());
    }
    let mut missing: Vec<String> = Vec::new();
    let sources = plan.contenders.iter().flat_map(|c| {
        c.source
            .iter()
            .chain(c.members.iter().filter_map(|m| m.source.as_ref()))
    });
    for s in sources {
        for argv in &s.build {
            let Some(program) = argv.first() else {
                continue;
            };
            let own = program.contains('/');
            if !own && !RUNNER_TOOLS.contains(&program.as_str()) && !missing.contains(program) {
                missing.push(program.clone());
            }
        }
    }
    Ok(missing)
}

/// `bakeoff ci k8s`.
pub struct CiK8sArgs {
    pub common: CiCommon,
    pub image: String,
    /// Where the repository is inside the image.
    pub workdir: String,
    /// Whole CPUs per pod; `None`: the plan's cores, else 2.
    pub cpus: Option<u32>,
    pub memory: String,
    pub storage: String,
    pub storage_class: Option<String>,
    pub parallelism: Option<u32>,
    pub namespace: String,
}

/// Refuses a value holding `${{`: GitHub would evaluate it before the shell reads the step
/// (script injection), whatever quoting the shell gets.
fn no_expressions<'a>(values: impl Iterator<Item = (&'a str, &'a String)>) -> anyhow::Result<()> {
    for (what, text) in values {
        if text.contains("${{") {
            bail!(
                "the {what} {:?} holds `${{{{`, which GitHub evaluates before the shell reads it (a script injection); write the command without it — a value the workflow should fill goes in a shell variable the job sets",
                text
            );
        }
    }
    Ok(())
}

/// Reads the plan and checks the shard count against it.
fn plan(c: &CiCommon) -> anyhow::Result<Plan> {
    let plan = Plan::load(&c.plan)?;
    Plan::check_portable(&c.plan)?;
    // GitHub evaluates `${{ … }}` anywhere in a workflow, before any shell quoting: in a
    // `run:` it is the classic script injection.
    for (what, text) in [("path", plan_arg(&c.plan)), ("name", plan.name.clone())] {
        if text.contains("${{") {
            bail!("the plan's {what} `{text}` holds `${{{{`, which a workflow would evaluate; rename it");
        }
    }
    let setup = plan.ci.setup.iter().map(|s| ("`[ci] setup` line", s));
    let env = plan
        .ci
        .env
        .iter()
        .flat_map(|(k, v)| [("`[ci] env` name", k), ("`[ci] env` value", v)]);
    no_expressions(setup.chain(env))?;
    if c.shards == 0 {
        bail!("--shards 0: give 1 or more shards");
    }
    if c.shards > plan.repetitions {
        bail!(
            "--shards {}: `{}` runs {} and a shard's unit is one repetition of every contender; give at most {} shards, or raise `repetitions`",
            c.shards,
            c.plan.display(),
            crate::report::count(u64::from(plan.repetitions), "repetition"),
            plan.repetitions
        );
    }
    Ok(plan)
}

/// The plan's path as the workflow and the Job name it: from the root of the repository it
/// is in, where a runner's checkout starts the job — however it was given here (absolute,
/// or from a folder below the root) — with `/` separators.
fn plan_arg(p: &Path) -> String {
    Plan::in_repository(p)
        .display()
        .to_string()
        .replace('\\', "/")
}

/// The merge's flags for CI.
fn merge_flags(c: &CiCommon) -> String {
    let mut f = String::new();
    if c.fail_on_diff {
        f.push_str(" --fail-on-diff");
    }
    if let Some(p) = c.fail_on_regression {
        f.push_str(&format!(" --fail-on-regression {p}%"));
    }
    if let Some(p) = c.fail_unless_equivalent {
        f.push_str(&format!(" --fail-unless-equivalent {p}%"));
    }
    f
}

/// The comment a launcher's file starts with: the whole command that wrote it (`flags`, the
/// launcher's own), so that running it again gives the same file.
fn header(what: &str, c: &CiCommon, flags: &str) -> String {
    // No character of a path (or a flag) may end the comment: a newline, CR, NEL or U+2028
    // there would add keys to the document.
    let line = format!(
        "# Written by `bakeoff ci {what} {} --shards {}{}{flags}` ({}).",
        sh(&plan_arg(&c.plan)),
        c.shards,
        merge_flags(c),
        crate::results::tool()
    );
    let line: String = line
        .chars()
        .flat_map(|ch| match yaml::unsafe_char(ch) {
            true => ch.escape_unicode().collect::<Vec<_>>(),
            false => vec![ch],
        })
        .collect();
    format!("{line}\n# Generate it again after changing the plan; do not edit it by hand.\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_names_are_dns_labels() {
        assert_eq!(dns_name("etcd 3.4 vs 3.5"), "bakeoff-etcd-3-4-vs-3-5");
        assert_eq!(dns_name("--A__b--"), "bakeoff-a-b");
        let long = dns_name(&"x".repeat(100));
        assert!(long.len() <= 50, "{long}");
        // Names a label cannot spell stay apart (they were all `bakeoff`).
        let (a, b) = (dns_name("ベンチ"), dns_name("速度比較"));
        assert_ne!(a, b);
        assert!(a.starts_with("bakeoff-") && a.len() <= 63, "{a}");
        assert!(a
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'));
    }

    #[test]
    fn shell_words_are_quoted_when_needed() {
        assert_eq!(sh("examples/etcd/plan.toml"), "examples/etcd/plan.toml");
        assert_eq!(sh("my plan's.toml"), r"'my plan'\''s.toml'");
    }
}
