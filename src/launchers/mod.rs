//! Launchers for engines people already run, generated from the plan (never maintained by
//! hand): a GitHub Actions workflow with a matrix job per shard, or a Kubernetes Indexed Job
//! — each followed by the merge (docs/scale-out.md). bakeoff does not manage machines; it
//! writes what those engines need to run `bakeoff run --shard K/N` and `bakeoff merge`.

mod yaml;

use std::path::{Path, PathBuf};

use anyhow::bail;

use crate::plan::Plan;
use yaml::Y;
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
}

/// Where the workflow keeps the history between runs (in the runner's checkout, restored
/// from and saved to the Actions cache).
const HISTORY: &str = ".bakeoff/history.sqlite";

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

/// Whether a contender (or member) of the plan is built by commands while neither the
/// plan's `[ci] setup` nor `--setup` installs anything: a runner has gcc, make and git, and
/// a build needing more fails on every shard.
pub fn builds_without_setup(plan_path: &Path, setup: &[String]) -> anyhow::Result<bool> {
    let plan = Plan::load(plan_path)?;
    let builds = plan.contenders.iter().any(|c| {
        c.source
            .iter()
            .chain(c.members.iter().filter_map(|m| m.source.as_ref()))
            .any(|s| !s.build.is_empty())
    });
    Ok(builds && plan.ci.setup.is_empty() && setup.is_empty())
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

/// Reads the plan and checks the shard count against it.
fn plan(c: &CiCommon) -> anyhow::Result<Plan> {
    let plan = Plan::load(&c.plan)?;
    Plan::check_portable(&c.plan)?;
    // GitHub evaluates `${{ … }}` anywhere in a workflow, before any shell quoting.
    for (what, text) in [("path", plan_arg(&c.plan)), ("name", plan.name.clone())] {
        if text.contains("${{") {
            bail!("the plan's {what} `{text}` holds `${{{{`, which a workflow would evaluate; rename it");
        }
    }
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

/// Single-quoted for a POSIX shell.
fn sh(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:%".contains(c))
    {
        return s.to_string();
    }
    format!("'{}'", s.replace('\'', r"'\''"))
}

fn header(what: &str, c: &CiCommon) -> String {
    // No character of a path (or a flag) may end the comment: a newline, CR, NEL or U+2028
    // there would add keys to the document.
    let line = format!(
        "# Written by `bakeoff ci {what} {} --shards {}{}` ({}).",
        plan_arg(&c.plan),
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

/// A workflow step that runs a command.
fn step(name: &str, run: String) -> Y {
    Y::map([("name", Y::str(name)), ("run", Y::str(run))])
}

/// Installing bakeoff: `--install`'s command, else this version from crates.io with the
/// binary kept in the Actions cache under its version, so only a version's first job
/// compiles it.
fn install_steps(a: &CiGithubArgs) -> Vec<Y> {
    if let Some(cmd) = &a.install {
        return vec![step("Install bakeoff", cmd.clone())];
    }
    let version = env!("CARGO_PKG_VERSION");
    vec![
        Y::map([
            ("name", Y::str("Keep bakeoff's binary")),
            ("id", Y::str("bakeoff-bin")),
            ("uses", Y::str("actions/cache@v4")),
            (
                "with",
                Y::map([
                    ("path", Y::str("~/.cargo/bin/bakeoff")),
                    (
                        "key",
                        Y::str(format!("bakeoff-bin-${{{{ runner.os }}}}-{version}")),
                    ),
                ]),
            ),
        ]),
        Y::map([
            ("name", Y::str("Install bakeoff")),
            (
                "if",
                Y::str("steps.bakeoff-bin.outputs.cache-hit != 'true'"),
            ),
            (
                "run",
                Y::str(format!(
                    "cargo install --locked bakeoff --version {version}"
                )),
            ),
        ]),
    ]
}

/// What the contenders need on a fresh runner: the plan's `[ci] setup` and `--setup`
/// commands, and the cache of builds from source.
fn contender_steps(a: &CiGithubArgs, plan: &Plan) -> Vec<Y> {
    let mut steps = Vec::new();
    for s in plan.ci.setup.iter().chain(&a.setup) {
        steps.push(step("Set up the contenders", s.clone()));
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

/// A shard job's steps: check out, install, what the contenders need, the shard's run (at a
/// pull request's base and head), and keeping its results.
fn shard_steps(
    a: &CiGithubArgs,
    plan: &Plan,
    checkout: Y,
    install: &[Y],
) -> anyhow::Result<Vec<Y>> {
    let c = &a.common;
    let n = c.shards;
    let mut shard_steps = vec![checkout];
    shard_steps.extend(install.iter().cloned());
    shard_steps.extend(contender_steps(a, plan));
    // On a pull request, its base and head are the compared refs.
    let refs = match &a.pull_request {
        Some((base, new)) => {
            for name in [base, new] {
                if !plan
                    .contenders
                    .iter()
                    .any(|c| c.name == *name && c.source.is_some())
                {
                    bail!("--pull-request: `{name}` is not a contender of the plan built from a git `source`");
                }
            }
            format!(
                " $([ -n \"${{{{ github.event.pull_request.base.sha }}}}\" ] && echo --ref {}=${{{{ github.event.pull_request.base.sha }}}} --ref {}=${{{{ github.event.pull_request.head.sha }}}})",
                sh(base),
                sh(new)
            )
        }
        None => String::new(),
    };
    shard_steps.push(step(
        &format!("Run shard ${{{{ matrix.shard }}}} of {n}"),
        format!(
            "bakeoff run {} --shard \"${{{{ matrix.shard }}}}/{n}\" --out \"results/shard-${{{{ matrix.shard }}}}\"{refs}",
            sh(&plan_arg(&c.plan))
        ),
    ));
    shard_steps.push(Y::map([
        ("name", Y::str("Keep the shard's results")),
        ("if", Y::str("always()")),
        ("uses", Y::str("actions/upload-artifact@v4")),
        (
            "with",
            Y::map([
                ("name", Y::str("bakeoff-shard-${{ matrix.shard }}")),
                ("path", Y::str("results/shard-${{ matrix.shard }}")),
                ("if-no-files-found", Y::str("error")),
            ]),
        ),
    ]));
    Ok(shard_steps)
}

/// The merge job's steps: every shard's results, merged into one report; with a history,
/// the merged run recorded, its steps found and confirmed, the dashboard kept, the history
/// saved for the next run.
fn merge_steps(a: &CiGithubArgs, plan: &Plan, checkout: Y, install: &[Y]) -> Vec<Y> {
    let c = &a.common;
    let history = a.history || plan.history.record;
    let mut steps = vec![checkout];
    steps.extend(install.iter().cloned());
    if history {
        // `confirm` builds the two commits of a step and runs them.
        steps.extend(contender_steps(a, plan));
        steps.push(Y::map([
            ("name", Y::str("Restore the history")),
            ("uses", Y::str("actions/cache/restore@v4")),
            (
                "with",
                Y::map([
                    ("path", Y::str(HISTORY)),
                    ("key", Y::str("bakeoff-history-${{ github.run_id }}")),
                    ("restore-keys", Y::str("bakeoff-history-")),
                ]),
            ),
        ]));
    }
    steps.push(Y::map([
        ("name", Y::str("Fetch every shard's results")),
        ("uses", Y::str("actions/download-artifact@v4")),
        (
            "with",
            Y::map([
                ("pattern", Y::str("bakeoff-shard-*")),
                ("path", Y::str("shards")),
            ]),
        ),
    ]));
    // `bakeoff merge` writes the report and the gate's outcome into the step summary.
    let record = match history {
        true => format!(" --record --history {HISTORY}"),
        false => String::new(),
    };
    steps.push(step(
        "Merge the shards",
        format!(
            "bakeoff merge shards/* --out merged{}{record}",
            merge_flags(c)
        ),
    ));
    steps.push(Y::map([
        ("name", Y::str("Keep the merged results and report")),
        ("if", Y::str("always()")),
        ("uses", Y::str("actions/upload-artifact@v4")),
        (
            "with",
            Y::map([
                ("name", Y::str("bakeoff-merged")),
                ("path", Y::str("merged")),
            ]),
        ),
    ]));
    if history {
        steps.extend(history_steps(c));
    }
    steps
}

/// After the merge, with a history: its steps found and confirmed, the dashboard drawn and
/// kept, the history saved for the next run — also after a gate failed, since the run is
/// recorded and its steps are worth knowing.
fn history_steps(c: &CiCommon) -> Vec<Y> {
    let go_on = || ("if", Y::str("${{ !cancelled() }}"));
    let run =
        |name: &str, run: String| Y::map([("name", Y::str(name)), go_on(), ("run", Y::str(run))]);
    // The smallest step worth an alert is the gate's, when the workflow has one.
    let least = match c.fail_on_regression {
        Some(p) if p > 0.0 && p < 100.0 => format!(" --min-magnitude {p}%"),
        _ => String::new(),
    };
    vec![
        run(
            "Find, confirm and bisect steps in the history",
            format!(
                "bakeoff history detect --confirm --bisect{least} --plan {} --out confirm --history {HISTORY}",
                sh(&plan_arg(&c.plan))
            ),
        ),
        run(
            "Say what was confirmed",
            "if [ -f confirm/alerts.md ]; then cat confirm/alerts.md >> \"$GITHUB_STEP_SUMMARY\"; fi"
                .to_string(),
        ),
        run(
            "Draw the history",
            format!("bakeoff history report --out history --history {HISTORY}"),
        ),
        Y::map([
            (
                "name",
                Y::str("Keep the history's dashboard and confirmations"),
            ),
            go_on(),
            ("uses", Y::str("actions/upload-artifact@v4")),
            (
                "with",
                Y::map([
                    ("name", Y::str("bakeoff-history")),
                    ("path", Y::str("history\nconfirm")),
                    ("if-no-files-found", Y::str("ignore")),
                ]),
            ),
        ]),
        // A cache key is never overwritten: each run saves its own, the next restores the
        // newest by prefix.
        Y::map([
            ("name", Y::str("Save the history")),
            go_on(),
            ("uses", Y::str("actions/cache/save@v4")),
            (
                "with",
                Y::map([
                    ("path", Y::str(HISTORY)),
                    ("key", Y::str("bakeoff-history-${{ github.run_id }}")),
                ]),
            ),
        ]),
    ]
}

/// A GitHub Actions workflow: a matrix job per shard, then the merge.
pub fn github(a: &CiGithubArgs) -> anyhow::Result<String> {
    let c = &a.common;
    let plan = plan(c)?;
    let n = c.shards;
    // The whole history: contenders built from source resolve their refs in it.
    let checkout = Y::map([
        ("uses", Y::str("actions/checkout@v4")),
        ("with", Y::map([("fetch-depth", Y::Int(0))])),
    ]);
    let install = install_steps(a);
    let shard_steps = shard_steps(a, &plan, checkout.clone(), &install)?;
    let merge_steps = merge_steps(a, &plan, checkout, &install);
    let mut on = vec![("workflow_dispatch", Y::map::<&str>([]))];
    if a.pull_request.is_some() {
        on.push(("pull_request", Y::map::<&str>([])));
    }
    if let Some(cron) = &a.schedule {
        on.push((
            "schedule",
            Y::List(vec![Y::map([("cron", Y::str(cron.clone()))])]),
        ));
    }
    let env: Vec<(&str, Y)> = plan
        .ci
        .env
        .iter()
        .map(|(k, v)| (k.as_str(), Y::str(v.clone())))
        .collect();
    let doc = Y::map([
        ("name", Y::str(format!("bakeoff: {}", plan.name))),
        // Quoted: YAML 1.1 readers take a bare `on` for `true`.
        ("on", Y::map(on)),
        ("env", Y::map(env)),
        (
            "jobs",
            Y::map([
                (
                    "shard",
                    Y::map([
                        (
                            "name",
                            Y::str(format!("shard ${{{{ matrix.shard }}}} of {n}")),
                        ),
                        ("runs-on", Y::str(a.runs_on.clone())),
                        (
                            "strategy",
                            Y::map([
                                ("fail-fast", Y::Bool(false)),
                                (
                                    "matrix",
                                    Y::map([(
                                        "shard",
                                        Y::List((1..=n).map(|k| Y::Int(k.into())).collect()),
                                    )]),
                                ),
                            ]),
                        ),
                        ("steps", Y::List(shard_steps)),
                    ]),
                ),
                (
                    "merge",
                    Y::map([
                        ("needs", Y::str("shard")),
                        // Also when a shard failed: the merge then says which is missing.
                        ("if", Y::str("always()")),
                        ("runs-on", Y::str(a.runs_on.clone())),
                        ("steps", Y::List(merge_steps)),
                    ]),
                ),
            ]),
        ),
    ]);
    Ok(header("github", c) + &doc.to_yaml())
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
