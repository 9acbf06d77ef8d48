//! `ci github --action OWNER/REPO@REF` (docs/scale-out.md, "As an action"): one job that
//! runs bakeoff's own composite action (the repository's `action.yml`).

use super::*;

/// `--action`'s one job: check out, what the contenders need, then bakeoff's own action with
/// the plan, the gate, the pull request's contenders and the history as its inputs.
pub(super) fn action_job(
    a: &CiGithubArgs,
    plan: &Plan,
    checkout: Y,
    action: &str,
) -> anyhow::Result<Y> {
    let c = &a.common;
    let plain = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|ch| ch.is_ascii_alphanumeric() || "-_./@".contains(ch))
    };
    match action.split_once('@') {
        Some((repo, at)) if repo.split('/').count() == 2 && plain(repo) && plain(at) => {}
        _ => bail!("--action {action:?}: give OWNER/REPO@REF, like owner/bakeoff@v0.1.0"),
    }
    if c.shards != 1 {
        bail!("--action runs one job on one machine: drop --shards {}, or --action for the shard and merge jobs", c.shards);
    }
    if c.fail_on_diff || c.fail_unless_equivalent.is_some() {
        bail!("--action gates on --fail-on-regression only: drop --fail-on-diff and --fail-unless-equivalent, or --action");
    }
    let mut with = vec![("plan", Y::str(plan_arg(&c.plan)))];
    if let Some(p) = c.fail_on_regression {
        with.push(("gate", Y::str(format!("{p}%"))));
    }
    if let Some((base, new)) = &a.pull_request {
        with.push(("pull-request", Y::str(format!("{base},{new}"))));
    }
    if a.history || plan.history.record {
        with.push(("history", Y::str("true")));
    }
    if let Some(i) = &a.install {
        with.push(("install", Y::str(i.clone())));
    }
    let mut steps = vec![checkout];
    steps.extend(contender_steps(a, plan));
    steps.push(Y::map([
        ("name", Y::str("bakeoff")),
        ("uses", Y::str(action)),
        ("with", Y::map(with)),
    ]));
    steps.push(Y::map([
        ("name", Y::str("Keep the results and report")),
        ("if", Y::str("always()")),
        ("uses", Y::str("actions/upload-artifact@v4")),
        (
            "with",
            Y::map([
                ("name", Y::str("bakeoff-results")),
                ("path", Y::str("bakeoff-results")),
            ]),
        ),
    ]));
    Ok(Y::map([(
        "bakeoff",
        Y::map([
            ("runs-on", Y::str(a.runs_on.clone())),
            ("timeout-minutes", Y::Int(MERGE_MINUTES)),
            ("steps", Y::List(steps)),
        ]),
    )]))
}
