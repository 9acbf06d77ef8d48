//! `bakeoff ci github | k8s | comment` (docs/scale-out.md): the launchers written where
//! asked, with what the user should know about them; a verdict posted on a pull request.

use anyhow::Context as _;

use super::*;

pub(crate) fn run_ci(action: &CiAction) -> anyhow::Result<u8> {
    match action {
        CiAction::Github(a) => ci_github(a),
        CiAction::Comment(a) => ci_comment(a),
        CiAction::Publish(a) => ci_publish(a),
        CiAction::Issue(a) => ci_issue(a),
        CiAction::K8s(a) => ci_k8s(a),
    }
}

fn ci_github(a: &CiGithubArgs) -> anyhow::Result<u8> {
    let mut launcher = a.launcher();
    if let Some(cmd) = &launcher.install {
        let cancel = install_handler(on_interrupt_run, 0);
        let (pinned, commit) = crate::launchers::pinned_install(cmd, &cancel)?;
        if let Some(c) = commit {
            eprintln!(
                    "bakeoff: note: --install pinned to --rev {c}, where the repository is now: the workflow installs that commit until written again"
                );
        }
        launcher.install = Some(pinned);
    }
    let text = crate::launchers::github(&launcher)?;
    for v in crate::launchers::unset_env(&a.common.plan)? {
        eprintln!(
                "bakeoff: warning: the plan reads `{{env:{v}}}`, which the workflow does not set: add `{v} = \"…\"` to the plan's `[ci] env` (or give it a default, `{{env:{v}:-…}}`)"
            );
    }
    let missing = crate::launchers::builds_without_setup(&a.common.plan, &a.setup)?;
    if !missing.is_empty() {
        eprintln!(
                "bakeoff: warning: the plan builds with {}, which a GitHub runner does not have, and its `[ci] setup` is empty: install it in `[ci] setup` (docs/plan.md)",
                missing.iter().map(|m| format!("`{m}`")).collect::<Vec<_>>().join(", ")
            );
    }
    let plan = crate::plan::Plan::load(&a.common.plan)?;
    let setup: Vec<String> = plan.ci.setup.iter().chain(&a.setup).cloned().collect();
    for w in crate::plan::Plan::lacking_on_runner(&a.common.plan, &setup)? {
        eprintln!("bakeoff: warning: {w}");
    }
    if a.install.is_none() {
        eprintln!(
                "bakeoff: note: the workflow installs bakeoff with `cargo install --locked bakeoff --version {}`, which needs that version on crates.io; until it is there, pass --install \"cargo install --locked --git URL --rev COMMIT bakeoff\" (the binary is kept in the Actions cache either way)",
                env!("CARGO_PKG_VERSION")
            );
    }
    match &a.out {
        Some(dir) => {
            std::fs::create_dir_all(dir)?;
            let f = dir.join(crate::launchers::kind(&launcher).file);
            std::fs::write(&f, text)?;
            eprintln!("wrote {}", f.display());
        }
        None => emit(&text)?,
    }
    Ok(0)
}

fn ci_comment(a: &CiCommentArgs) -> anyhow::Result<u8> {
    let repo = match &a.repo {
        Some(r) => r.clone(),
        None => github_repository()?,
    };
    let cancel = install_handler(on_interrupt_run, 0);
    match crate::launchers::comment(&a.dir, &repo, a.pull_request, &cancel)? {
            crate::launchers::Posted::Created => {
                eprintln!("comment: posted on pull request {}", a.pull_request)
            }
            crate::launchers::Posted::Updated(id) => eprintln!(
                "comment: updated comment {id} on pull request {}",
                a.pull_request
            ),
            crate::launchers::Posted::Not(why) => eprintln!(
                "bakeoff: warning: no comment on pull request {} ({why}); a fork's pull request gets a token that cannot write: the verdict is in the step summary",
                a.pull_request
            ),
        }
    Ok(0)
}

fn ci_publish(a: &CiPublishArgs) -> anyhow::Result<u8> {
    let cancel = install_handler(on_interrupt_run, 0);
    match crate::launchers::publish(&a.dir, &a.branch, &a.remote, &cancel)? {
        crate::launchers::Published::Pushed(c) => eprintln!(
            "publish: `{}` is branch `{}` on `{}` (commit {})",
            a.dir.display(),
            a.branch,
            a.remote,
            crate::units::prefix(&c, 10)
        ),
        crate::launchers::Published::Unchanged => eprintln!(
            "publish: branch `{}` on `{}` holds these files already",
            a.branch, a.remote
        ),
    }
    Ok(0)
}

fn ci_issue(a: &CiIssueArgs) -> anyhow::Result<u8> {
    let repo = match &a.repo {
        Some(r) => r.clone(),
        None => github_repository()?,
    };
    // The workflow run that found it, as the runner names it.
    let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    let link = match (var("GITHUB_SERVER_URL"), var("GITHUB_RUN_ID")) {
        (Some(server), Some(run)) => Some(format!("{server}/{repo}/actions/runs/{run}")),
        _ => None,
    };
    let cancel = install_handler(on_interrupt_run, 0);
    let filed = crate::launchers::issue(&a.dir, &repo, link.as_deref(), &cancel)?;
    if filed.is_empty() {
        eprintln!("issue: no confirmed regression in `{}`", a.dir.display());
    }
    for (key, f) in filed {
        let key = crate::units::prefix(&key, 10);
        match f {
                crate::launchers::Filed::Opened(n) => {
                    eprintln!("issue: opened issue {n} for the regression at {key}")
                }
                crate::launchers::Filed::Updated(n) => {
                    eprintln!("issue: updated issue {n} for the regression at {key}")
                }
                crate::launchers::Filed::Not(why) => eprintln!(
                    "bakeoff: warning: no issue for the regression at {key} ({why}); the workflow needs `issues: write`, and the alert is in the step summary"
                ),
            }
    }
    Ok(0)
}

fn ci_k8s(a: &CiK8sArgs) -> anyhow::Result<u8> {
    let files = crate::launchers::k8s(&a.launcher())?;
    let Some(out) = &a.out else {
        emit(&format!(
                "{}---\n# The merge: apply it once the shards' Job has completed.\n{}---\n# The pod to copy the report from.\n{}",
                files.job, files.merge, files.fetch
            ))?;
        return Ok(0);
    };
    std::fs::create_dir_all(out)?;
    let (jf, mf, ff) = (
        out.join("job.yaml"),
        out.join("merge.yaml"),
        out.join("fetch.yaml"),
    );
    std::fs::write(&jf, files.job)?;
    std::fs::write(&mf, files.merge)?;
    std::fs::write(&ff, files.fetch)?;
    let name = crate::launchers::k8s_name(&a.common.plan)?;
    let ns = &a.namespace;
    eprintln!(
            "wrote {}, {} and {}; run them with:\n  kubectl apply -f {}\n  kubectl wait --for=condition=complete --timeout=24h -n {ns} job/{name}\n  kubectl apply -f {}\n  kubectl wait --for=condition=complete --timeout=24h -n {ns} job/{name}-merge\nand copy the report out:\n  kubectl apply -f {}\n  kubectl wait --for=condition=ready --timeout=10m -n {ns} pod/{name}-fetch\n  kubectl cp {ns}/{name}-fetch:/results/merged ./merged\n  kubectl delete -f {}",
            jf.display(),
            mf.display(),
            ff.display(),
            jf.display(),
            mf.display(),
            ff.display(),
            ff.display(),
        );
    Ok(0)
}

/// `$GITHUB_REPOSITORY`, as a runner sets it.
fn github_repository() -> anyhow::Result<String> {
    std::env::var("GITHUB_REPOSITORY")
        .ok()
        .filter(|r| !r.is_empty())
        .context("--repo OWNER/NAME: GITHUB_REPOSITORY is not set")
}
