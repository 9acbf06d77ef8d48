//! The flags of `run` and `merge`: the plan, where results go, the shard, the refs, the what-ifs and the gates.

use super::*;

/// `5%`, `5` or `0.5%` → percent.
pub fn parse_percent(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .trim_end_matches('%')
        .parse()
        .map_err(|_| format!("`{s}` is not a percentage like 5%"))?;
    if v.is_finite() && v >= 0.0 {
        Ok(v)
    } else {
        Err(format!("`{s}` must be 0% or more"))
    }
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The plan file (TOML).
    #[arg(value_name = "PLAN", required_unless_present = "resume")]
    pub plan: Option<PathBuf>,
    /// Write results here [default: bakeoff-results/<time>-<name>].
    #[arg(long = "out", value_name = "DIR", conflicts_with = "resume")]
    pub out: Option<PathBuf>,
    /// Continue an interrupted run in DIR (repetitions that finished are kept).
    #[arg(long = "resume", value_name = "DIR", conflicts_with_all = ["plan", "smoke"])]
    pub resume: Option<PathBuf>,
    /// Record the finished run in the history (docs/history.md).
    #[arg(long = "record")]
    pub record: bool,
    /// The history's file [default: $BAKEOFF_HISTORY, else
    /// $XDG_DATA_HOME/bakeoff/history.sqlite].
    #[arg(long = "history", value_name = "FILE")]
    pub history: Option<PathBuf>,
    /// Check the plan in seconds: one repetition, every point of every scenario at one
    /// request per client.
    #[arg(long = "smoke")]
    pub smoke: bool,
    /// Exit with status 3 when a must-match compat case differs (for CI).
    #[arg(long = "fail-on-diff")]
    pub fail_on_diff: bool,
    /// Run this many repetitions instead of the plan's.
    #[arg(long = "repetitions", value_name = "N", conflicts_with = "resume")]
    pub repetitions: Option<u32>,
    /// Run only these contenders (comma-separated or repeated; their noise instances too).
    #[arg(
        long = "only",
        value_name = "CONTENDER",
        value_delimiter = ',',
        conflicts_with = "resume"
    )]
    pub only: Vec<String>,
    /// Run only these scenarios (comma-separated or repeated).
    #[arg(
        long = "scenario",
        value_name = "NAME",
        value_delimiter = ',',
        conflicts_with = "resume"
    )]
    pub scenarios: Vec<String>,
    /// Run shard K of N (from 1): every N-th repetition of every contender, starting at
    /// the K-th; `bakeoff merge` joins the shards (docs/scale-out.md).
    #[arg(long = "shard", value_name = "K/N", value_parser = parse_shard, conflicts_with_all = ["resume", "shards"])]
    pub shard: Option<crate::results::Shard>,
    /// Record a CPU profile (perf) of every contender at every point of every plain
    /// scenario, with flame graphs in report.html (docs/profiles.md).
    #[arg(long = "profile", conflicts_with = "resume")]
    pub profile: bool,
    /// Run a what-if variant of every contender compared: `nodelay` runs NAME+nodelay, the
    /// same build with TCP_NODELAY forced on its sockets from outside (docs/what-if.md).
    #[arg(
        long = "what-if",
        value_name = "WHAT",
        value_enum,
        conflicts_with = "resume"
    )]
    pub what_if: Vec<WhatIfArg>,
    /// Cut the plan into N shards and run the one $JOB_COMPLETION_INDEX names (a Kubernetes
    /// Indexed Job; index 0 is shard 1). Also read from $BAKEOFF_SHARDS.
    #[arg(long = "shards", value_name = "N", conflicts_with = "resume")]
    pub shards: Option<u32>,
    /// Build contender NAME (from a git `source`) at REF for this run: a tag, branch,
    /// commit or revision (repeatable; docs/from-source.md).
    #[arg(long = "ref", value_name = "NAME=REF", value_parser = parse_ref, conflicts_with = "resume")]
    pub refs: Vec<(String, String)>,
    /// Build contenders from source again even when the cache has their build.
    #[arg(long = "rebuild")]
    pub rebuild: bool,
    /// How long a paired run may spend measuring, the plan's repetitions included: what is
    /// left after them buys repetitions for the comparisons still inconclusive (e.g. 20m;
    /// `off`: the plan's repetitions only) [default: the plan's `budget`, else 10m]
    /// (docs/verdicts.md, "The budget").
    #[arg(long = "budget", value_name = "DURATION", value_parser = parse_budget, conflicts_with = "resume")]
    pub budget: Option<Budget>,
    /// Exit with status 4 when a paired verdict reads *different* and worse than the
    /// baseline by more than this (e.g. 5%): more CPU per request or item, less throughput,
    /// or a higher p50/p99, with the estimate past it (the rule of `merge`; docs/verdicts.md, "The
    /// gates"). Its outcome is printed either way.
    #[arg(long = "fail-on-regression", value_name = "PERCENT", value_parser = parse_percent)]
    pub fail_on_regression: Option<f64>,
    /// Exit with status 5 unless every paired comparison's main figure (CPU per request,
    /// else throughput) is proven *equivalent* within this band (e.g. 2%): the gate for a
    /// change that must not change performance.
    #[arg(long = "fail-unless-equivalent", value_name = "PERCENT", value_parser = parse_percent)]
    pub fail_unless_equivalent: Option<f64>,
    #[command(flatten)]
    pub body: super::BodyArgs,
}

/// `bakeoff check` (docs/bisect.md).
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The plan file (TOML).
    #[arg(value_name = "PLAN")]
    pub plan: PathBuf,
    /// The contender to check: built from a git `source` in a folder on this machine.
    #[arg(long = "contender", value_name = "NAME")]
    pub contender: String,
    /// What the working tree is compared against: a tag, branch or commit.
    #[arg(long = "against", value_name = "REF")]
    pub against: String,
    /// The figure judged [default: CPU per request where measured, else throughput].
    #[arg(long = "figure", value_enum)]
    pub figure: Option<CheckFigure>,
    /// Write results here [default: bakeoff-results/<time>-<name>].
    #[arg(long = "out", value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// How long it may measure (as `run --budget`).
    #[arg(long = "budget", value_name = "DURATION", value_parser = parse_budget)]
    pub budget: Option<Budget>,
    #[command(flatten)]
    pub body: super::BodyArgs,
}

/// `bakeoff bisect` (docs/bisect.md).
#[derive(Debug, Args)]
pub struct BisectArgs {
    /// The plan file (TOML).
    #[arg(value_name = "PLAN", required_unless_present = "resume")]
    pub plan: Option<PathBuf>,
    /// The contender whose history is walked: built from a git `source` in a folder on this
    /// machine (the plan's other contenders are not run).
    #[arg(
        long = "contender",
        value_name = "NAME",
        required_unless_present = "resume"
    )]
    pub contender: Option<String>,
    /// A commit (or tag, branch) before the change.
    #[arg(long = "good", value_name = "REF", required_unless_present = "resume")]
    pub good: Option<String>,
    /// A commit after the change, on the first-parent line from --good.
    #[arg(long = "bad", value_name = "REF", required_unless_present = "resume")]
    pub bad: Option<String>,
    /// The figure judged [default: CPU per request where measured, else throughput].
    #[arg(long = "figure", value_enum, conflicts_with = "resume")]
    pub figure: Option<CheckFigure>,
    /// The scenarios measured (repeatable) [default: every one of the plan].
    #[arg(long = "scenario", value_name = "NAME", conflicts_with = "resume")]
    pub scenarios: Vec<String>,
    /// The smallest change worth a culprit, e.g. 5% [default: half of what good against
    /// bad measured].
    #[arg(long = "effect", value_name = "PERCENT", value_parser = parse_effect, conflicts_with = "resume")]
    pub effect: Option<f64>,
    /// Cut each range at K−1 commits, measured together with its ends [default: 2, the
    /// midpoint].
    #[arg(long = "ways", value_name = "K", value_parser = clap::value_parser!(u32).range(2..=8), conflicts_with = "resume")]
    pub ways: Option<u32>,
    /// How long each of its paired runs may measure (as `run --budget`).
    #[arg(long = "budget", value_name = "DURATION", value_parser = parse_budget, conflicts_with = "resume")]
    pub budget: Option<Budget>,
    /// Write the bisection here [default: bakeoff-results/<time>-bisect-<name>].
    #[arg(long = "out", value_name = "DIR", conflicts_with = "resume")]
    pub out: Option<PathBuf>,
    /// Go on with the bisection in DIR from its last finished step.
    #[arg(long = "resume", value_name = "DIR")]
    pub resume: Option<PathBuf>,
    #[command(flatten)]
    pub body: super::BodyArgs,
}

/// The figures `check --figure` can judge; `cpu_per_request`, as the reports and
/// `paired.judge` spell it, is the same as `cpu-per-request`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CheckFigure {
    #[value(alias = "cpu_per_request")]
    CpuPerRequest,
    Throughput,
    P50,
    P99,
}

impl CheckFigure {
    pub fn figure(self) -> crate::analysis::verdicts::Figure {
        use crate::analysis::verdicts::Figure;
        match self {
            CheckFigure::CpuPerRequest => Figure::CpuPerRequest,
            CheckFigure::Throughput => Figure::Throughput,
            CheckFigure::P50 => Figure::P50,
            CheckFigure::P99 => Figure::P99,
        }
    }
}

/// How `history confirm` measures a step again.
#[derive(Debug, Clone, clap::Args)]
pub struct ConfirmArgs {
    /// The plan to run [default: the file the step's plan was last recorded from].
    #[arg(long = "plan", value_name = "PLAN")]
    pub plan: Option<PathBuf>,
    /// How long each confirmation may measure (as `run --budget`).
    #[arg(long = "budget", value_name = "DURATION", value_parser = parse_budget)]
    pub budget: Option<Budget>,
    /// Where the confirmations' results go, a folder each [default: a new folder under
    /// bakeoff-results/].
    #[arg(long = "out", value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// The smallest step worth an alert: `detect` keeps no smaller step, and a confirmation
    /// rejects a step only when the two commits are proven within it.
    #[arg(long = "min-magnitude", value_name = "PERCENT", default_value = "2%", value_parser = parse_magnitude)]
    pub min_magnitude: f64,
    /// Bisect each confirmed step whose commits are not neighbours, side by side as
    /// `bakeoff bisect` does, and name its culprit in the alert.
    #[arg(long = "bisect")]
    pub bisect: bool,
    #[command(flatten)]
    pub body: super::BodyArgs,
}

/// `--fdr`: a percentage above 0 and below 100.
pub fn parse_share(s: &str) -> Result<f64, String> {
    match parse_percent(s)? {
        v if v > 0.0 && v < 100.0 => Ok(v),
        _ => Err(format!(
            "`{s}`: give a rate above 0% and below 100%, like 5%"
        )),
    }
}

/// `--max-p`: a probability above 0 and below 1.
pub fn parse_p(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(p) if p > 0.0 && p < 1.0 => Ok(p),
        _ => Err(format!(
            "`{s}`: give a p-value above 0 and below 1, like 0.001"
        )),
    }
}

/// `--window`: 2 to 10000 points — the split's work grows with the square of the window,
/// and a window of a billion never ends.
pub fn parse_window(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(n) if (2..=10_000).contains(&n) => Ok(n),
        _ => Err(format!(
            "`{s}`: give 2 to 10000 points (the search's work grows with the square of the window)"
        )),
    }
}

/// `bisect --effect`: a percentage above 0 and at most 1000 (an eleven-fold change).
fn parse_effect(s: &str) -> Result<f64, String> {
    match parse_percent(s)? {
        v if v > 0.0 && v <= 1000.0 => Ok(v),
        _ => Err(format!(
            "`{s}`: give the smallest change worth a culprit, above 0% and at most 1000%, like 5%"
        )),
    }
}

/// `--min-magnitude`: a percentage above 0 and below 100.
fn parse_magnitude(s: &str) -> Result<f64, String> {
    match parse_percent(s)? {
        v if v > 0.0 && v < 100.0 => Ok(v),
        _ => Err(format!(
            "`{s}`: give a step size above 0% and below 100%, like 2%"
        )),
    }
}

/// `--budget`: a duration, or none for `off`.
#[derive(Debug, Clone, Copy)]
pub struct Budget(pub Option<std::time::Duration>);

fn parse_budget(s: &str) -> Result<Budget, String> {
    crate::plan::parse_budget(s).map(Budget)
}

/// `NAME=REF` of `--ref`.
pub(super) fn parse_ref(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((n, r)) if !n.trim().is_empty() && !r.trim().is_empty() => {
            Ok((n.trim().to_string(), r.trim().to_string()))
        }
        _ => Err(format!(
            "`{s}` is not NAME=REF (a contender's name, `=`, a ref)"
        )),
    }
}

impl RunArgs {
    /// The gates `finish_run` applies.
    pub(super) fn gates(&self) -> commands::Gates {
        commands::Gates {
            diff: self.fail_on_diff,
            regression: self.fail_on_regression,
            equivalent: self.fail_unless_equivalent,
            part: self.shard().is_ok_and(|s| s.is_some()),
        }
    }

    /// `--shard K/N`, or `--shards N` (or `$BAKEOFF_SHARDS`) with the index Kubernetes sets.
    pub fn shard(&self) -> anyhow::Result<Option<crate::results::Shard>> {
        shard_of(
            self.shard,
            self.shards,
            std::env::var("BAKEOFF_SHARDS").ok().as_deref(),
            std::env::var("JOB_COMPLETION_INDEX").ok().as_deref(),
        )
    }
}

/// The shard to run from the flags and the environment (passed in, so it can be tested).
pub fn shard_of(
    shard: Option<crate::results::Shard>,
    shards: Option<u32>,
    env_shards: Option<&str>,
    index: Option<&str>,
) -> anyhow::Result<Option<crate::results::Shard>> {
    use anyhow::{bail, Context as _};
    if shard.is_some() {
        return Ok(shard);
    }
    let (n, flag) = match (shards, env_shards.filter(|s| !s.trim().is_empty())) {
        (Some(n), _) => (n, format!("--shards {n}")),
        (None, Some(e)) => (
            e.trim()
                .parse::<u32>()
                .with_context(|| format!("BAKEOFF_SHARDS=`{e}` is not a number of shards"))?,
            format!("BAKEOFF_SHARDS={}", e.trim()),
        ),
        (None, None) => return Ok(None),
    };
    if n == 0 {
        bail!("{flag}: give 1 or more shards");
    }
    let Some(index) = index.filter(|s| !s.trim().is_empty()) else {
        bail!(
            "{flag} takes the shard from $JOB_COMPLETION_INDEX (a Kubernetes Indexed Job sets it), which is not set here; elsewhere give --shard K/{n}"
        );
    };
    let i: u32 = index
        .trim()
        .parse()
        .with_context(|| format!("JOB_COMPLETION_INDEX=`{index}` is not a number"))?;
    if i >= n {
        bail!("JOB_COMPLETION_INDEX={i} with {flag}: the index must be below {n} (0 is shard 1)");
    }
    Ok(Some(crate::results::Shard { k: i + 1, n }))
}

/// `2/3` → shard 2 of 3.
pub(super) fn parse_shard(s: &str) -> Result<crate::results::Shard, String> {
    let bad = || format!("`{s}`: write --shard K/N, e.g. 2/3 (K from 1 to N)");
    let (k, n) = s.split_once('/').ok_or_else(bad)?;
    let (k, n): (u32, u32) = (
        k.trim().parse().map_err(|_| bad())?,
        n.trim().parse().map_err(|_| bad())?,
    );
    if n == 0 || k == 0 || k > n {
        return Err(format!(
            "`{s}`: K must be from 1 to N (shards count from 1, as in 2/3)"
        ));
    }
    Ok(crate::results::Shard { k, n })
}

#[derive(Debug, Args)]
pub struct MergeArgs {
    /// The shards' results directories (or their results.json), in any order.
    #[arg(value_name = "DIR", required = true)]
    pub dirs: Vec<PathBuf>,
    /// Where the merged results and reports go.
    #[arg(long = "out", value_name = "DIR", required = true)]
    pub out: PathBuf,
    /// Exit with status 3 when a must-match compat case differs.
    #[arg(long = "fail-on-diff")]
    pub fail_on_diff: bool,
    /// Exit with status 4 when a paired verdict reads *different* and worse than the
    /// baseline, with the estimate past this (e.g. 5%). Its outcome is printed either way.
    #[arg(long = "fail-on-regression", value_name = "PERCENT", value_parser = parse_percent)]
    pub fail_on_regression: Option<f64>,
    /// Exit with status 5 unless every paired comparison's main figure is proven
    /// *equivalent* within this band (e.g. 2%).
    #[arg(long = "fail-unless-equivalent", value_name = "PERCENT", value_parser = parse_percent)]
    pub fail_unless_equivalent: Option<f64>,
    /// Record the merged run in the history (docs/history.md).
    #[arg(long = "record")]
    pub record: bool,
    /// The history's file [default: $BAKEOFF_HISTORY, else
    /// $XDG_DATA_HOME/bakeoff/history.sqlite].
    #[arg(long = "history", value_name = "FILE")]
    pub history: Option<PathBuf>,
}

impl MergeArgs {
    /// The gates `finish_run` applies.
    pub(super) fn gates(&self) -> commands::Gates {
        commands::Gates {
            diff: self.fail_on_diff,
            regression: self.fail_on_regression,
            equivalent: self.fail_unless_equivalent,
            part: false,
        }
    }
}
