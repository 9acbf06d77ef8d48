//! The flags of `ci github` and `ci k8s`: the workflow's or the Job's shards, runners, image and resources.

use super::*;

impl CiCommonArgs {
    pub(super) fn launcher(&self) -> crate::launchers::CiCommon {
        crate::launchers::CiCommon {
            plan: self.plan.clone(),
            shards: self.shards,
            fail_on_diff: self.fail_on_diff,
            fail_on_regression: self.fail_on_regression,
            fail_unless_equivalent: self.fail_unless_equivalent,
        }
    }
}

impl CiGithubArgs {
    pub fn launcher(&self) -> crate::launchers::CiGithubArgs {
        crate::launchers::CiGithubArgs {
            common: self.common.launcher(),
            runs_on: self.runs_on.clone(),
            install: self.install.clone(),
            setup: self.setup.clone(),
            pull_request: self.pull_request.clone(),
            schedule: self.schedule.clone(),
            history: self.history,
            action: self.action.clone(),
        }
    }
}

impl CiK8sArgs {
    pub fn launcher(&self) -> crate::launchers::CiK8sArgs {
        crate::launchers::CiK8sArgs {
            common: self.common.launcher(),
            image: self.image.clone(),
            workdir: self.workdir.clone(),
            cpus: self.cpus,
            memory: self.memory.clone(),
            storage: self.storage.clone(),
            storage_class: self.storage_class.clone(),
            parallelism: self.parallelism,
            namespace: self.namespace.clone(),
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum CiAction {
    /// Write a GitHub Actions workflow: a matrix job per shard (install bakeoff, run the
    /// shard, upload its results), then a job that merges them, writes the step summary and
    /// fails on --fail-on-diff, --fail-on-regression or --fail-unless-equivalent.
    Github(CiGithubArgs),
    /// Write a Kubernetes Indexed Job (one pod per shard, on different nodes, whole CPUs)
    /// and the Job that merges their results: DIR/job.yaml and DIR/merge.yaml.
    K8s(CiK8sArgs),
    /// Post a run's verdict (DIR/report/verdict.md) as one comment on a pull request with
    /// `gh`, updating the comment an earlier run made; where the token cannot write (a fork's
    /// pull request), say so and exit 0. What the pull-request workflow runs.
    Comment(CiCommentArgs),
    /// Publish a folder (the history's dashboard and badge) as the whole tree of a branch:
    /// one new commit on top of it, pushed, never forced; the checkout is not touched. What
    /// the nightly runs, for GitHub Pages to serve.
    Publish(CiPublishArgs),
    /// Open one GitHub issue for each confirmed regression's culprit in DIR/alerts.json
    /// (as `history detect --confirm` writes it), or update the one an earlier night opened,
    /// with `gh`; a token that cannot write issues is said, exit 0. What the nightly runs.
    Issue(CiIssueArgs),
}

#[derive(Debug, Args)]
pub struct CiPublishArgs {
    /// The folder whose files become the branch's tree.
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
    /// The branch.
    #[arg(long = "branch", value_name = "NAME", default_value = "gh-pages")]
    pub branch: String,
    /// The remote to push to.
    #[arg(long = "remote", value_name = "NAME", default_value = "origin")]
    pub remote: String,
}

#[derive(Debug, Args)]
pub struct CiIssueArgs {
    /// A confirmation's folder (`history detect --confirm --out DIR`).
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
    /// The repository, OWNER/NAME [default: $GITHUB_REPOSITORY].
    #[arg(long = "repo", value_name = "OWNER/NAME")]
    pub repo: Option<String>,
}

#[derive(Debug, Args)]
pub struct CiCommentArgs {
    /// A results folder of `run` or `merge`.
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
    /// The pull request's number.
    #[arg(long = "pull-request", value_name = "N")]
    pub pull_request: u64,
    /// The repository, OWNER/NAME [default: $GITHUB_REPOSITORY].
    #[arg(long = "repo", value_name = "OWNER/NAME")]
    pub repo: Option<String>,
}

#[derive(Debug, Args)]
pub struct CiCommonArgs {
    /// The plan file, as the repository has it (its path is used as written).
    #[arg(value_name = "PLAN")]
    pub plan: PathBuf,
    /// How many shards (each runs a block of repetitions on its own machine).
    #[arg(long = "shards", value_name = "N", default_value_t = 1)]
    pub shards: u32,
    /// Passed to the merge (exit 3 when a must-match compat case differs).
    #[arg(long = "fail-on-diff")]
    pub fail_on_diff: bool,
    /// Passed to the merge (exit 4 on a regression past PERCENT).
    #[arg(long = "fail-on-regression", value_name = "PERCENT", value_parser = parse_percent)]
    pub fail_on_regression: Option<f64>,
    /// Passed to the merge (exit 5 unless every main figure is equivalent within PERCENT).
    #[arg(long = "fail-unless-equivalent", value_name = "PERCENT", value_parser = parse_percent)]
    pub fail_unless_equivalent: Option<f64>,
}

#[derive(Debug, Args)]
pub struct CiGithubArgs {
    #[command(flatten)]
    pub common: CiCommonArgs,
    /// Write the workflow into DIR (e.g. `.github/workflows`) as bakeoff-gate.yml (with
    /// --pull-request), bakeoff-nightly.yml (with --schedule) or bakeoff.yml [default: print
    /// it] — as `ci k8s --out DIR` writes its Jobs.
    #[arg(long = "out", value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// The runner label of every job.
    #[arg(long = "runs-on", default_value = "ubuntu-latest")]
    pub runs_on: String,
    /// How each job installs bakeoff [default: `cargo install --locked bakeoff --version`
    /// this bakeoff's version, the binary cached between runs]; e.g. `cargo install --locked
    /// --path .` in bakeoff's own repository.
    #[arg(long = "install", value_name = "COMMAND")]
    pub install: Option<String>,
    /// A command that installs what the contenders need before a shard runs (repeatable),
    /// e.g. "sudo apt-get install -y etcd-server"; after the plan's own `[ci] setup`.
    #[arg(long = "setup", value_name = "COMMAND")]
    pub setup: Vec<String>,
    /// Run on pull requests too, building contender BASE at the pull request's base commit
    /// and NEW at its head (both built from a git `source`).
    #[arg(long = "pull-request", value_name = "BASE,NEW", value_parser = parse_pair)]
    pub pull_request: Option<(String, String)>,
    /// Run on this schedule too (five cron fields, UTC), e.g. "0 3 * * *" for a nightly.
    #[arg(long = "schedule", value_name = "CRON", value_parser = parse_cron)]
    pub schedule: Option<String>,
    /// Keep a history between runs (also when the plan says `[history] record = true`): the
    /// merge records into it, `history detect --confirm` looks for steps, and `history
    /// report` is kept as an artifact (docs/history.md).
    #[arg(long = "history")]
    pub history: bool,
    /// Write one job that runs bakeoff's own action (`uses: OWNER/bakeoff@TAG`, the
    /// repository's action.yml) instead of the shard and merge jobs; one machine only.
    #[arg(long = "action", value_name = "OWNER/REPO@REF")]
    pub action: Option<String>,
}

/// Five cron fields, as GitHub's `schedule` takes them.
fn parse_cron(s: &str) -> Result<String, String> {
    let fields: Vec<&str> = s.split_whitespace().collect();
    let ok = |f: &str| !f.is_empty() && f.chars().all(|c| c.is_ascii_digit() || "*/,-".contains(c));
    if fields.len() != 5 || !fields.iter().all(|f| ok(f)) {
        return Err(format!(
            "`{s}` is not five cron fields (minute hour day month weekday, e.g. \"0 3 * * *\")"
        ));
    }
    Ok(fields.join(" "))
}

/// `BASE,NEW` of `--pull-request`.
pub(super) fn parse_pair(s: &str) -> Result<(String, String), String> {
    match s.split_once(',') {
        Some((a, b)) if !a.trim().is_empty() && !b.trim().is_empty() => {
            Ok((a.trim().to_string(), b.trim().to_string()))
        }
        _ => Err(format!("`{s}` is not BASE,NEW (two contenders' names)")),
    }
}

#[derive(Debug, Args)]
pub struct CiK8sArgs {
    #[command(flatten)]
    pub common: CiCommonArgs,
    /// The container image: bakeoff, the contenders, and the repository at --workdir.
    #[arg(long = "image", value_name = "IMAGE", required = true)]
    pub image: String,
    /// Where the repository (the plan and the files it names) is inside the image.
    #[arg(long = "workdir", value_name = "DIR", default_value = "/work")]
    pub workdir: String,
    /// Whole CPUs per pod (requests = limits, so the kubelet's static CPU manager can give
    /// the pod its own cores) [default: the plan's cores, else 2].
    #[arg(long = "cpus", value_name = "N")]
    pub cpus: Option<u32>,
    /// Memory per pod (requests = limits).
    #[arg(long = "memory", value_name = "SIZE", default_value = "4Gi")]
    pub memory: String,
    /// The results volume's size (a ReadWriteMany claim every pod mounts).
    #[arg(long = "storage", value_name = "SIZE", default_value = "1Gi")]
    pub storage: String,
    /// The storage class of the results claim [default: the cluster's].
    #[arg(long = "storage-class", value_name = "NAME")]
    pub storage_class: Option<String>,
    /// How many shards run at once [default: all].
    #[arg(long = "parallelism", value_name = "N")]
    pub parallelism: Option<u32>,
    /// The namespace of every object.
    #[arg(long = "namespace", value_name = "NAME", default_value = "default")]
    pub namespace: String,
    /// Write job.yaml and merge.yaml into DIR [default: print both, the merge Job second] —
    /// as `ci github --out DIR` writes its workflow.
    #[arg(long = "out", value_name = "DIR")]
    pub out: Option<PathBuf>,
}
