//! `bakeoff ci github` (docs/scale-out.md): a GitHub Actions workflow — a matrix job per
//! shard, then the merge, with the history's steps when the plan keeps one.

use super::action::action_job;
use super::install::install_steps;
use super::*;

/// The condition of a step for pull requests only, and for every other event.
const ON_PR: &str = "github.event_name == 'pull_request'";
const NOT_PR: &str = "github.event_name != 'pull_request'";

/// `step` run only when `condition` holds.
fn when(condition: &str, step: Y) -> Y {
    match step {
        Y::Map(mut m) => {
            m.insert(1, ("if".to_string(), Y::str(condition)));
            Y::Map(m)
        }
        other => other,
    }
}

/// A workflow step that runs a command.
fn step(name: &str, run: String) -> Y {
    Y::map([("name", Y::str(name)), ("run", Y::str(run))])
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
    let run = format!(
        "bakeoff run {} --shard \"${{{{ matrix.shard }}}}/{n}\" --out \"results/shard-${{{{ matrix.shard }}}}\"",
        sh(&plan_arg(&c.plan))
    );
    let name = format!("Run shard ${{{{ matrix.shard }}}} of {n}");
    match &a.pull_request {
        // On a pull request, its base and head are the compared refs; on any other event,
        // the plan's own.
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
            let refs = format!(
                " --ref {}=\"${{{{ github.event.pull_request.base.sha }}}}\" --ref {}=\"${{{{ github.event.pull_request.head.sha }}}}\"",
                sh(base),
                sh(new)
            );
            shard_steps.push(when(ON_PR, step(&name, format!("{run}{refs}"))));
            shard_steps.push(when(NOT_PR, step(&name, run)));
        }
        None => shard_steps.push(step(&name, run)),
    }
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
    // A history records one branch (docs/history.md): a pull request's run is not recorded,
    // nor are steps looked for in it.
    let recorded = |y: Y| match a.pull_request.is_some() {
        true => when(NOT_PR, y),
        false => y,
    };
    let mut steps = vec![checkout];
    steps.extend(install.iter().cloned());
    if history {
        // `confirm` builds the two commits of a step and runs them.
        steps.extend(contender_steps(a, plan));
        steps.push(recorded(Y::map([
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
        ])));
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
    let merge = format!("bakeoff merge shards/* --out merged{}", merge_flags(c));
    match (history, a.pull_request.is_some()) {
        (false, _) => steps.push(step("Merge the shards", merge)),
        (true, false) => steps.push(step(
            "Merge the shards",
            format!("{merge} --record --history {HISTORY}"),
        )),
        (true, true) => {
            steps.push(when(ON_PR, step("Merge the shards", merge.clone())));
            steps.push(when(
                NOT_PR,
                step(
                    "Merge the shards",
                    format!("{merge} --record --history {HISTORY}"),
                ),
            ));
        }
    }
    if a.pull_request.is_some() {
        steps.push(comment_step());
    }
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
        steps.extend(history_steps(c, a.pull_request.is_some()));
    }
    steps
}

/// The verdict as one comment on the pull request, updated in place; a fork's token cannot
/// write, and that is no failure (the step summary has it).
fn comment_step() -> Y {
    Y::map([
            ("name", Y::str("Say the verdict on the pull request")),
            (
                "if",
                Y::str(format!("${{{{ !cancelled() && {ON_PR} }}}}")),
            ),
            ("env", Y::map([("GH_TOKEN", Y::str("${{ github.token }}"))])),
            (
                "run",
                Y::str(
                    "bakeoff ci comment merged --pull-request \"${{ github.event.pull_request.number }}\"",
                ),
            ),
        ])
}

/// After the merge, with a history: its steps found and confirmed, the dashboard drawn and
/// kept, the history saved for the next run — also after a gate failed, since the run is
/// recorded and its steps are worth knowing.
fn history_steps(c: &CiCommon, pull_requests: bool) -> Vec<Y> {
    let go_on = || match pull_requests {
        true => ("if", Y::str(format!("${{{{ !cancelled() && {NOT_PR} }}}}"))),
        false => ("if", Y::str("${{ !cancelled() }}")),
    };
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
        // One issue per confirmed regression's culprit, opened once, updated on later
        // nights.
        Y::map([
            ("name", Y::str("Open an issue for a confirmed regression")),
            go_on(),
            ("env", Y::map([("GH_TOKEN", Y::str("${{ github.token }}"))])),
            (
                "run",
                Y::str("if [ -f confirm/alerts.json ]; then bakeoff ci issue confirm; fi"),
            ),
        ]),
        run(
            "Draw the history",
            format!("bakeoff history report --out history --history {HISTORY}"),
        ),
        // The dashboard and its badge as the `gh-pages` branch, for GitHub Pages to serve.
        run(
            "Publish the dashboard",
            "bakeoff ci publish history --branch gh-pages".to_string(),
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

/// What a workflow is for, by its triggers: its file and its title.
pub struct Kind {
    pub file: &'static str,
    pub title: &'static str,
}

/// The gate (pull requests), the nightly (a schedule), or both in one file.
pub fn kind(a: &CiGithubArgs) -> Kind {
    match (a.pull_request.is_some(), a.schedule.is_some()) {
        (true, false) => Kind {
            file: "bakeoff-gate.yml",
            title: "bakeoff gate",
        },
        (false, true) => Kind {
            file: "bakeoff-nightly.yml",
            title: "bakeoff nightly",
        },
        _ => Kind {
            file: "bakeoff.yml",
            title: "bakeoff",
        },
    }
}

/// What the workflow's token may do: read the repository; comment on a pull request; with
/// a history, push the dashboard's branch and open an issue for a confirmed regression.
fn permissions(a: &CiGithubArgs, plan: &Plan) -> Y {
    let history = a.history || plan.history.record;
    let mut p = vec![("contents", Y::str(if history { "write" } else { "read" }))];
    if history {
        p.push(("issues", Y::str("write")));
    }
    if a.pull_request.is_some() {
        p.push(("pull-requests", Y::str("write")));
    }
    Y::map(p)
}

/// `ci github`'s own flags, as the header repeats them.
fn flags(a: &CiGithubArgs) -> String {
    let mut f = String::new();
    if a.runs_on != "ubuntu-latest" {
        f.push_str(&format!(" --runs-on {}", sh(&a.runs_on)));
    }
    if let Some(i) = &a.install {
        f.push_str(&format!(" --install {}", sh(i)));
    }
    for s in &a.setup {
        f.push_str(&format!(" --setup {}", sh(s)));
    }
    if let Some((base, new)) = &a.pull_request {
        f.push_str(&format!(" --pull-request {}", sh(&format!("{base},{new}"))));
    }
    if let Some(cron) = &a.schedule {
        f.push_str(&format!(" --schedule {}", sh(cron)));
    }
    if a.history {
        f.push_str(" --history");
    }
    if let Some(action) = &a.action {
        f.push_str(&format!(" --action {}", sh(action)));
    }
    f
}

/// The shard job (a matrix of `n`) and the merge job.
fn jobs(a: &CiGithubArgs, n: u32, shard_steps: Vec<Y>, merge_steps: Vec<Y>) -> Y {
    Y::map([
        (
            "shard",
            Y::map([
                (
                    "name",
                    Y::str(format!("shard ${{{{ matrix.shard }}}} of {n}")),
                ),
                ("runs-on", Y::str(a.runs_on.clone())),
                ("timeout-minutes", Y::Int(SHARD_MINUTES)),
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
                ("timeout-minutes", Y::Int(MERGE_MINUTES)),
                ("steps", Y::List(merge_steps)),
            ]),
        ),
    ])
}

/// A GitHub Actions workflow: a matrix job per shard, then the merge.
pub fn github(a: &CiGithubArgs) -> anyhow::Result<String> {
    let c = &a.common;
    let plan = plan(c)?;
    let given = a.setup.iter().map(|s| ("--setup command", s));
    no_expressions(given.chain(a.install.iter().map(|i| ("--install command", i))))?;
    let n = c.shards;
    // The whole history: contenders built from source resolve their refs in it.
    let checkout = Y::map([
        ("uses", Y::str("actions/checkout@v4")),
        ("with", Y::map([("fetch-depth", Y::Int(0))])),
    ]);
    let jobs = match &a.action {
        Some(action) => action_job(a, &plan, checkout, action)?,
        None => {
            let install = install_steps(a);
            let shard_steps = shard_steps(a, &plan, checkout.clone(), &install)?;
            let merge_steps = merge_steps(a, &plan, checkout, &install);
            jobs(a, n, shard_steps, merge_steps)
        }
    };
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
    let mut top = vec![
        ("name", Y::str(format!("{}: {}", kind(a).title, plan.name))),
        // Quoted: YAML 1.1 readers take a bare `on` for `true`.
        ("on", Y::map(on)),
        // Read the repository, and write a pull request's comment when there is one
        // (caches and artifacts need no permission).
        ("permissions", permissions(a, &plan)),
        // A pull request's newer push cancels its older run; a nightly is never cut short.
        (
            "concurrency",
            Y::map([
                (
                    "group",
                    Y::str("bakeoff-${{ github.workflow }}-${{ github.event.pull_request.number || github.ref }}"),
                ),
                (
                    "cancel-in-progress",
                    Y::str(format!("${{{{ {ON_PR} }}}}")),
                ),
            ]),
        ),
    ];
    if !env.is_empty() {
        top.push(("env", Y::map(env)));
    }
    top.push(("jobs", jobs));
    let doc = Y::map(top);
    Ok(header("github", c, &flags(a)) + &doc.to_yaml())
}
