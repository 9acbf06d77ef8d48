//! Command-line definitions. Flags become checked values here, once; the rest of the crate
//! never sees a raw flag.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context as _};
use clap::{Args, Parser, Subcommand};

use crate::client::{Client, Descriptors, Options};
use crate::load::{LoadConfig, Pacing, Stop};
use crate::plan::Call;
use crate::protocol::target::Endpoint;
use crate::protocol::template::Template;
use crate::report;

#[derive(Debug, Parser)]
#[command(
    name = "bakeoff",
    version,
    about = "Reproducible side-by-side bake-offs between builds or implementations of a server"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// The most bytes one request body, path or gRPC message may render to (templates such
    /// as {fill:N:…} are checked before anything is sent), and the most of one answer kept
    /// to compare or print (diff, compat, call), e.g. 256MiB [default: 64MiB].
    #[arg(long = "max-body", global = true, value_name = "SIZE", value_parser = parse_size)]
    pub max_body: Option<usize>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Send load to one server and report latency, throughput and outcomes (like hey or oha).
    Load(LoadArgs),
    /// Send one request and print the answer (gRPC answers decoded to JSON).
    Call(CallArgs),
    /// Run a bake-off from a plan file: start each contender fresh, time it, load it, repeat.
    #[command(
        override_usage = "bakeoff run [OPTIONS] <PLAN>\n       bakeoff run --resume <DIR> [OPTIONS]"
    )]
    Run(RunArgs),
    /// A whole bake-off with built-in contenders, in about a minute: start-up, compat,
    /// latency, a small concurrency sweep, 3 repetitions, findings.
    Demo(DemoArgs),
    /// Write the reports of a results directory again into DIR/report/ (report.md,
    /// report.html with its charts, a CSV per table, report.json) and print the Markdown.
    Report {
        /// A results directory, or its results.json.
        dir: PathBuf,
    },
    /// Check a plan without running it (every check `run` makes before it starts
    /// anything), or print it with its templates expanded.
    Plan {
        #[command(subcommand)]
        action: PlanAction,
    },
    /// Join the shards of one plan (`run --shard K/N` on several machines) into one results
    /// directory and write its report: the report one machine would have written, with a
    /// table of the machines and verdicts made within each machine and combined.
    Merge(MergeArgs),
    /// Write the launcher of a scaled-out run for an engine you already use: a GitHub
    /// Actions workflow or a Kubernetes Indexed Job (docs/scale-out.md).
    Ci {
        #[command(subcommand)]
        action: CiAction,
    },
    /// The cache of contenders built from source: list or prune it (docs/from-source.md).
    Cache {
        #[command(subcommand)]
        action: CacheAction,
    },
    /// Kill what an earlier run in DIR left running (if bakeoff and its guards were killed
    /// outright), by the record it keeps of its members' process groups and start times.
    Cleanup {
        /// A results directory.
        dir: PathBuf,
    },
    /// The demo's contender (used by `bakeoff demo`).
    #[command(hide = true)]
    DemoServer {
        #[arg(value_enum)]
        version: crate::demo::server::Version,
        port: u16,
        state: PathBuf,
        /// Extra CPU time spent on every answer, e.g. 5us (for calibrating verdicts).
        #[arg(long = "work", default_value = "0s", value_parser = parse_duration)]
        work: Duration,
    },
    /// Send compatibility cases to several servers and compare their answers (the first
    /// endpoint is the baseline).
    Diff(DiffArgs),
    /// Compare benchmark results old against new (Go -bench output, Criterion folders,
    /// hyperfine JSON, bakeoff results.json): medians, deltas, Mann-Whitney U, per unit.
    #[command(
        override_usage = "bakeoff compare [OPTIONS] <OLD> <NEW> [MORE]...\n       bakeoff compare [OPTIONS] <ONE-HYPERFINE-FILE>"
    )]
    Compare(CompareArgs),
}

#[derive(Debug, Subcommand)]
pub enum CacheAction {
    /// Every build in the cache: key, contender, source @ commit, size, age, last used.
    List,
    /// Remove builds not used for a while (and what interrupted builds left).
    Prune {
        /// Builds not used for this long, e.g. 30d, 12h [default: 30d].
        #[arg(long = "older-than", value_name = "AGE", value_parser = parse_age, conflicts_with = "all")]
        older_than: Option<Duration>,
        /// Every build.
        #[arg(long = "all")]
        all: bool,
    },
}

/// `30d`, `12h`, `90m` or a duration bakeoff reads elsewhere.
fn parse_age(s: &str) -> Result<Duration, String> {
    match s.strip_suffix('d').map(str::parse::<u64>) {
        Some(Ok(days)) => Ok(Duration::from_secs(days * 86_400)),
        _ => parse_duration(s),
    }
}

#[derive(Debug, Subcommand)]
pub enum PlanAction {
    /// Run every check `bakeoff run` makes before starting anything; exit 1 at the first
    /// mistake (file:line:column).
    Check {
        /// The plan file (TOML).
        plan: PathBuf,
        /// Check contender NAME's source at REF (as `run --ref`).
        #[arg(long = "ref", value_name = "NAME=REF", value_parser = parse_ref)]
        refs: Vec<(String, String)>,
    },
    /// Print the plan as `run` uses it: `like`, `members = N`, `{join:…}`, `{index}` and
    /// `vars` expanded (comments are not kept). The plan is then checked.
    Show {
        /// The plan file (TOML).
        plan: PathBuf,
    },
}

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Write results here [default: bakeoff-results/<time>-<name>].
    #[arg(long = "out", value_name = "DIR")]
    pub out: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct DiffArgs {
    /// A TOML file of `[[compat]]` sections (and the `protos` they need), as in a plan.
    #[arg(long = "cases", value_name = "FILE")]
    pub cases: PathBuf,
    /// The servers: the baseline first (http://host:port).
    #[arg(value_name = "ENDPOINT", num_args = 2.., required = true)]
    pub endpoints: Vec<String>,
    /// A second instance of the baseline's build: fields on which it and the baseline
    /// disagree are noise, not differences (repeatable).
    #[arg(long = "noise", value_name = "ENDPOINT")]
    pub noise: Vec<String>,
    /// Exit with status 3 when a must-match case differs (for CI).
    #[arg(long = "fail-on-diff")]
    pub fail_on_diff: bool,
    /// Print the analysis and every answer as JSON.
    #[arg(long = "json")]
    pub json: bool,
    /// Give up on a call after this long.
    #[arg(long = "timeout", default_value = "10s", value_parser = parse_timeout)]
    pub timeout: Duration,
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The baseline, then the inputs compared against it (format found from the content);
    /// one file compares its benchmarks against its first (or --baseline).
    #[arg(value_name = "INPUT", num_args = 1.., required = true)]
    pub inputs: Vec<PathBuf>,
    /// One file: compare its benchmarks against this one.
    #[arg(long = "baseline", value_name = "NAME")]
    pub baseline: Option<String>,
    /// The baseline's benchmark OLD is called NEW in the other inputs (repeatable).
    #[arg(long = "rename", value_name = "OLD=NEW", value_parser = parse_rename)]
    pub rename: Vec<(String, String)>,
    /// Pair rows with the baseline's by position instead of by name.
    #[arg(long = "by-position", conflicts_with = "rename")]
    pub by_position: bool,
    /// Column names for the inputs, in order (e.g. --names old,new) [default: the shortest
    /// part of their paths that tells them apart].
    #[arg(long = "names", value_name = "A,B", value_delimiter = ',')]
    pub names: Vec<String>,
    /// Output: text (terminal), md, csv or json.
    #[arg(long = "format", value_enum, default_value = "text")]
    pub format: report::compare_table::Format,
    /// Exit with status 3 when a change is significantly worse than this (e.g. 5%).
    #[arg(long = "threshold", value_name = "PERCENT", value_parser = parse_percent)]
    pub threshold: Option<f64>,
    /// Significance level of the Mann-Whitney U test.
    #[arg(long = "alpha", default_value_t = 0.05)]
    pub alpha: f64,
    /// Significant changes smaller than this are reported as within noise.
    #[arg(long = "noise", value_name = "PERCENT", default_value = "1%", value_parser = parse_percent)]
    pub noise: f64,
}

/// `OLD=NEW` → (OLD, NEW).
fn parse_rename(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((a, b)) if !a.is_empty() && !b.is_empty() => Ok((a.to_string(), b.to_string())),
        _ => Err(format!("`{s}`: write --rename OLD=NEW")),
    }
}

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
    /// Exit with status 4 when a paired verdict reads *different* and worse than the
    /// baseline by more than this (e.g. 5%): more CPU per request or item, less throughput,
    /// or a higher p50/p99, with the whole interval past it (the rule of `merge`).
    #[arg(long = "fail-on-regression", value_name = "PERCENT", value_parser = parse_percent)]
    pub fail_on_regression: Option<f64>,
    /// Exit with status 5 unless every paired comparison's main figure (CPU per request,
    /// else throughput) is proven *equivalent* within this band (e.g. 2%): the gate for a
    /// change that must not change performance.
    #[arg(long = "fail-unless-equivalent", value_name = "PERCENT", value_parser = parse_percent)]
    pub fail_unless_equivalent: Option<f64>,
}

/// `NAME=REF` of `--ref`.
fn parse_ref(s: &str) -> Result<(String, String), String> {
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
    fn gates(&self) -> commands::Gates {
        commands::Gates {
            diff: self.fail_on_diff,
            regression: self.fail_on_regression,
            equivalent: self.fail_unless_equivalent,
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
fn parse_shard(s: &str) -> Result<crate::results::Shard, String> {
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
    /// baseline by more than this (e.g. 5%), with the whole interval past it.
    #[arg(long = "fail-on-regression", value_name = "PERCENT", value_parser = parse_percent)]
    pub fail_on_regression: Option<f64>,
    /// Exit with status 5 unless every paired comparison's main figure is proven
    /// *equivalent* within this band (e.g. 2%).
    #[arg(long = "fail-unless-equivalent", value_name = "PERCENT", value_parser = parse_percent)]
    pub fail_unless_equivalent: Option<f64>,
}

impl MergeArgs {
    /// The gates `finish_run` applies.
    fn gates(&self) -> commands::Gates {
        commands::Gates {
            diff: self.fail_on_diff,
            regression: self.fail_on_regression,
            equivalent: self.fail_unless_equivalent,
        }
    }
}

impl CiCommonArgs {
    fn launcher(&self) -> crate::launchers::CiCommon {
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
}

#[derive(Debug, Args)]
pub struct CiCommonArgs {
    /// The plan file, as the repository has it (its path is used as written).
    #[arg(value_name = "PLAN")]
    pub plan: PathBuf,
    /// How many shards (each runs a block of repetitions on its own machine).
    #[arg(long = "shards", value_name = "N")]
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
    /// Write the workflow into DIR as bakeoff.yml (e.g. `.github/workflows`) [default: print
    /// it] — as `ci k8s --out DIR` writes its Jobs.
    #[arg(long = "out", value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// The runner label of every job.
    #[arg(long = "runs-on", default_value = "ubuntu-latest")]
    pub runs_on: String,
    /// How each job installs bakeoff.
    #[arg(
        long = "install",
        value_name = "COMMAND",
        default_value = "cargo install --locked --path ."
    )]
    pub install: String,
    /// A command that installs what the contenders need before a shard runs (repeatable),
    /// e.g. "sudo apt-get install -y etcd-server"; after the plan's own `[ci] setup`.
    #[arg(long = "setup", value_name = "COMMAND")]
    pub setup: Vec<String>,
    /// Run on pull requests too, building contender BASE at the pull request's base commit
    /// and NEW at its head (both built from a git `source`).
    #[arg(long = "pull-request", value_name = "BASE,NEW", value_parser = parse_pair)]
    pub pull_request: Option<(String, String)>,
}

/// `BASE,NEW` of `--pull-request`.
fn parse_pair(s: &str) -> Result<(String, String), String> {
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

/// What to call and how: shared by `load` and `call`.
#[derive(Debug, Args)]
pub struct TargetArgs {
    /// The HTTP URL (http://host:port/path); for --jsonrpc, the JSON-RPC endpoint.
    #[arg(value_name = "URL")]
    pub url: Option<String>,
    /// HTTP method [default: GET, or POST when a body is given].
    #[arg(short = 'm', long = "method")]
    pub method: Option<String>,
    /// A request header, `Name: value` (repeatable).
    #[arg(short = 'H', long = "header", value_name = "HEADER")]
    pub headers: Vec<String>,
    /// Request body (a template: {seq}, {rand:A..B}, {line:FILE}, {b64:...}).
    #[arg(short = 'd', long = "data", conflicts_with = "data_file")]
    pub data: Option<String>,
    /// Read the request body (a template) from a file.
    #[arg(short = 'D', long = "data-file", value_name = "FILE")]
    pub data_file: Option<PathBuf>,
    /// Use HTTP/2 over cleartext (prior knowledge) instead of HTTP/1.1.
    #[arg(long = "h2")]
    pub h2: bool,
    /// gRPC server URL (http:// or https://host:port); needs --call; the request is -d JSON
    /// (a JSON array of messages for client-streaming and bidi calls). Messages are built
    /// from --proto files, or from what the server says through reflection without them.
    #[arg(long = "grpc", value_name = "URL", conflicts_with_all = ["url", "h2", "jsonrpc"])]
    pub grpc: Option<String>,
    /// A .proto file defining the service (repeatable).
    #[arg(long = "proto", value_name = "FILE")]
    pub protos: Vec<PathBuf>,
    /// An import root for .proto files (repeatable) [default: each file's folder].
    #[arg(short = 'I', long = "import-path", value_name = "DIR")]
    pub includes: Vec<PathBuf>,
    /// The gRPC method, `package.Service/Method`.
    #[arg(long = "call", value_name = "METHOD")]
    pub call: Option<String>,
    /// Call this JSON-RPC 2.0 method at URL.
    #[arg(long = "jsonrpc", value_name = "METHOD", conflicts_with = "h2")]
    pub jsonrpc: Option<String>,
    /// JSON-RPC params (a JSON array or object; a template).
    #[arg(long = "params", default_value = "[]", requires = "jsonrpc")]
    pub params: String,
    /// Seed for {rand:...} placeholders: the same seed sends the same requests.
    #[arg(long = "seed", default_value_t = 0)]
    pub seed: u64,
    /// Give up on a call after this long (e.g. 500ms, 20s).
    #[arg(long = "timeout", default_value = "20s", value_parser = parse_timeout)]
    pub timeout: Duration,
    /// Client-streaming and bidi gRPC calls: pause this long between messages sent.
    #[arg(long = "stream-interval", value_parser = parse_duration, requires = "grpc")]
    pub stream_interval: Option<Duration>,
    /// Bidi gRPC calls: end the call once this many messages arrived (for servers that
    /// keep the stream open, like etcd's Watch).
    #[arg(long = "replies", value_name = "N", requires = "grpc", value_parser = clap::value_parser!(u64).range(1..))]
    pub replies: Option<u64>,
    #[command(flatten)]
    pub tls: TlsArgs,
}

/// TLS flags, as ghz and curl spell them.
#[derive(Debug, Args, Default)]
pub struct TlsArgs {
    /// Trust the CA certificates in FILE (PEM) instead of the system's.
    #[arg(long = "cacert", value_name = "FILE")]
    pub cacert: Option<PathBuf>,
    /// Client certificate (PEM) for mutual TLS; needs --key.
    #[arg(long = "cert", value_name = "FILE", requires = "key")]
    pub cert: Option<PathBuf>,
    /// The client certificate's private key (PEM).
    #[arg(long = "key", value_name = "FILE", requires = "cert")]
    pub key: Option<PathBuf>,
    /// Do not verify the server's certificate.
    #[arg(short = 'k', long = "insecure")]
    pub insecure: bool,
    /// The name sent as SNI and verified, instead of the URL's host.
    #[arg(long = "servername", value_name = "NAME")]
    pub servername: Option<String>,
}

impl TlsArgs {
    pub fn options(&self) -> crate::protocol::tls::TlsOptions {
        crate::protocol::tls::TlsOptions {
            cacert: self.cacert.clone(),
            cert: self.cert.clone(),
            key: self.key.clone(),
            insecure: self.insecure,
            servername: self.servername.clone(),
        }
    }
}

#[derive(Debug, Args)]
pub struct LoadArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    /// Number of requests to send [default: 200 unless -z is given].
    #[arg(short = 'n', long = "requests", conflicts_with = "duration")]
    pub requests: Option<u64>,
    /// Send for this long instead of a count (e.g. 10s, 1m).
    #[arg(short = 'z', long = "duration", value_parser = parse_duration)]
    pub duration: Option<Duration>,
    /// Concurrent clients, one connection each.
    #[arg(short = 'c', long = "clients", default_value_t = 50)]
    pub clients: usize,
    /// Open loop: send at this total rate (requests/s) whatever the server does; latency is
    /// then corrected for coordinated omission.
    #[arg(short = 'q', long = "rate")]
    pub rate: Option<f64>,
    /// Worker threads [default: one per CPU this process may use, at most one per client].
    #[arg(
        short = 't',
        long = "threads",
        default_value_t = 0,
        hide_default_value = true
    )]
    pub threads: usize,
    /// Pin worker threads to these CPUs (e.g. 0 or 0,1).
    #[arg(long = "cpus", value_delimiter = ',')]
    pub cpus: Vec<usize>,
    /// Send load for this long first and leave it out of the results.
    #[arg(long = "warmup", value_parser = parse_duration)]
    pub warmup: Option<Duration>,
    /// Print the result as JSON (schema version inside) instead of a summary.
    #[arg(long = "json")]
    pub json: bool,
    /// Exit 2 if any call failed (without it: only when no call succeeded).
    #[arg(long = "fail-on-error", conflicts_with = "max_failures")]
    pub fail_on_error: bool,
    /// Exit 2 if more than this share of calls failed, e.g. 1% (for CI, like k6's
    /// `http_req_failed: rate<0.01`).
    #[arg(long = "max-failures", value_name = "SHARE", value_parser = parse_share_arg)]
    pub max_failures: Option<f64>,
    /// What if the server set TCP_NODELAY: force it on the sockets of --pid from outside
    /// (its listening socket on the target's port, and its side of each connection once
    /// the clients have connected, before anything is sent), then measure.
    #[arg(long = "what-if", value_name = "WHAT", value_enum, requires = "pid")]
    pub what_if: Option<WhatIfArg>,
    /// The server's process for --what-if (and its children): only a PID you name.
    #[arg(long = "pid", value_name = "PID", requires = "what_if")]
    pub pid: Option<i32>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum WhatIfArg {
    /// TCP_NODELAY on: no Nagle delay of small writes.
    Nodelay,
}

impl From<WhatIfArg> for crate::plan::WhatIf {
    fn from(w: WhatIfArg) -> crate::plan::WhatIf {
        match w {
            WhatIfArg::Nodelay => crate::plan::WhatIf::NoDelay,
        }
    }
}

/// `1%` or `0.5%` → a share of calls.
fn parse_share_arg(s: &str) -> Result<f64, String> {
    crate::plan::parse_share(s)
        .filter(|x| *x < 1.0)
        .ok_or_else(|| format!("`{s}` is not a percentage below 100%, like 1%"))
}

#[derive(Debug, Args)]
pub struct CallArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    /// List the gRPC server's services and methods (from --proto, else reflection).
    #[arg(long = "list", requires = "grpc", conflicts_with_all = ["call", "describe"])]
    pub list: bool,
    /// Show the request of a gRPC method as JSON with every field at its default.
    #[arg(
        long = "describe",
        value_name = "METHOD",
        requires = "grpc",
        conflicts_with = "call"
    )]
    pub describe: Option<String>,
    /// Print the answer as one JSON object (outcome and messages).
    #[arg(long = "json")]
    pub json: bool,
}

pub use crate::plan::{parse_duration, parse_size};

/// A call's timeout: a duration above zero (a zero timeout would end every call before it
/// is sent, or read as "none").
fn parse_timeout(s: &str) -> Result<Duration, String> {
    match parse_duration(s)? {
        d if d.is_zero() => Err(format!(
            "`{s}`: a call needs time to answer; give a timeout above 0"
        )),
        d => Ok(d),
    }
}

impl TargetArgs {
    fn headers(&self) -> anyhow::Result<Vec<(String, String)>> {
        self.headers
            .iter()
            .map(|h| match h.split_once(':') {
                Some((k, v)) if !k.trim().is_empty() => {
                    Ok((k.trim().to_string(), v.trim().to_string()))
                }
                _ => bail!("-H `{h}`: a header is written `Name: value`"),
            })
            .collect()
    }

    fn body(&self) -> anyhow::Result<Option<String>> {
        match (&self.data, &self.data_file) {
            (Some(d), _) => Ok(Some(d.clone())),
            (None, Some(f)) => {
                crate::sys::read_bounded(f, crate::protocol::template::max_len() as u64).map(Some)
            }
            .with_context(|| format!("-D: cannot read `{}`", f.display())),
            (None, None) => Ok(None),
        }
    }

    /// A `{word:…}` in -d or --params that is not a placeholder is sent as written: says so.
    fn warn_unknown_placeholders(&self, body: Option<&str>) {
        let texts = [("-d", body), ("--params", Some(self.params.as_str()))];
        for (flag, text) in texts {
            for w in crate::protocol::template::unknown_keywords(text.unwrap_or_default()) {
                eprintln!(
                    "bakeoff: warning: `{{{w}:…}}` in {flag} is not a placeholder bakeoff knows \
                     ({}); it is sent as written",
                    crate::protocol::template::KEYWORDS.join(", ")
                );
            }
        }
    }

    /// The call the flags describe and the endpoint it goes to.
    pub fn call(&self) -> anyhow::Result<(Call, Endpoint)> {
        let headers = self.headers()?;
        let body = self.body()?;
        // Checked here too, so a mistake names the flag it came from.
        if let Some(b) = &body {
            Template::parse(b).context("-d")?;
        }
        self.warn_unknown_placeholders(body.as_deref());
        if let Some(url) = &self.grpc {
            let endpoint = Endpoint::parse(url).context("--grpc")?;
            let method = self
                .call
                .clone()
                .context("--grpc needs --call package.Service/Method (or --list to see them)")?;
            let body = body.unwrap_or_else(|| "{}".into());
            let shape = crate::protocol::grpc::CallShape {
                metadata: headers,
                interval: self.stream_interval,
                replies: self.replies,
            };
            return Ok((
                Call::Grpc {
                    method,
                    body,
                    shape,
                },
                endpoint,
            ));
        }
        let url = self
            .url
            .as_deref()
            .context("give a URL to call (or --grpc URL for gRPC)")?;
        let endpoint =
            Endpoint::parse(url).with_context(|| format!("URL `{}`", Endpoint::redact(url)))?;
        let path = endpoint.path.clone();
        Template::parse(&path).context("URL path")?;
        if let Some(method) = &self.jsonrpc {
            if body.is_some() {
                bail!(
                    "--jsonrpc builds the body itself; give the arguments with --params, not -d/-D"
                );
            }
            let call = Call::JsonRpc {
                method: method.clone(),
                path,
                params: self.params.clone(),
                headers,
            };
            return Ok((call, endpoint));
        }
        if self.call.is_some() || !self.protos.is_empty() {
            bail!("--call and --proto are for gRPC; give the server with --grpc URL");
        }
        let method = self
            .method
            .clone()
            .unwrap_or_else(|| if body.is_some() { "POST" } else { "GET" }.to_string());
        if method.is_empty() || !method.bytes().all(|b| b.is_ascii_alphabetic()) {
            bail!("-m `{method}` is not an HTTP method");
        }
        let call = Call::Http {
            method,
            path,
            headers,
            body,
            h2: self.h2,
        };
        Ok((call, endpoint))
    }

    /// The gRPC endpoint and .proto files of `--grpc`, for `--list` and `--describe`.
    pub fn grpc_target(&self) -> anyhow::Result<(Endpoint, Descriptors)> {
        let url = self
            .grpc
            .as_deref()
            .context("--list and --describe need --grpc URL")?;
        let endpoint = Endpoint::parse(url).context("--grpc")?;
        Ok((
            endpoint,
            Descriptors::within(self.protos.clone(), self.includes.clone(), self.timeout),
        ))
    }

    /// Builds the protocol client the flags describe. `keep_body` keeps answers for printing.
    pub fn build(&self, keep_body: bool) -> anyhow::Result<Client> {
        let (call, endpoint) = self.call()?;
        let protos = Descriptors::within(self.protos.clone(), self.includes.clone(), self.timeout);
        let opts = Options {
            seed: self.seed,
            keep_body,
            tls: self.tls.options(),
        };
        Client::build(&call, &[endpoint], &protos, opts)
    }
}

impl LoadArgs {
    pub fn stop(&self) -> Stop {
        match (self.requests, self.duration) {
            (Some(n), _) => Stop::Count(n),
            (None, Some(d)) => Stop::Duration(d),
            (None, None) => Stop::Count(200),
        }
    }

    pub fn warmup(&self) -> Duration {
        self.warmup.unwrap_or(Duration::ZERO)
    }

    pub fn config(&self) -> anyhow::Result<LoadConfig> {
        let stop = self.stop();
        let pacing = match self.rate {
            Some(rate) => Pacing::Open { rate },
            None => Pacing::Closed,
        };
        let allowed = crate::sys::allowed_cpus();
        if let Some(c) = self.cpus.iter().find(|c| !allowed.contains(c)) {
            bail!("--cpus: CPU {c} is not available to this process (it may use {allowed:?})");
        }
        let warmup = self.warmup();
        let threads = if self.threads == 0 && !self.cpus.is_empty() {
            self.cpus.len()
        } else {
            self.threads
        };
        let cfg = LoadConfig::new(
            pacing,
            stop,
            self.clients,
            threads,
            warmup,
            self.target.timeout,
        )?;
        Ok(cfg.pin_to(self.cpus.clone()))
    }
}

mod commands;

use commands::*;

/// Runs a parsed command; returns the process exit code.
pub fn run(cli: Cli) -> anyhow::Result<u8> {
    if let Some(n) = cli.max_body {
        crate::protocol::template::set_max_len(n);
    }
    match cli.command {
        Command::Load(args) => run_load(&args),
        Command::Call(args) => run_call(&args),
        Command::Run(args) => run_plan(&args),
        Command::Compare(args) => run_compare(&args),
        Command::Diff(args) => run_diff(&args),
        Command::Demo(args) => run_demo(&args),
        Command::Report { dir } => run_report(&dir),
        Command::Merge(args) => run_merge(&args),
        Command::Ci { action } => run_ci(&action),
        Command::Plan {
            action: PlanAction::Check { plan, refs },
        } => {
            let p = crate::runner::check_plan(&plan, &refs)?;
            let points: usize = p.scenarios.iter().map(|s| s.points.len()).sum();
            let cases: usize = p.compat.iter().map(|c| c.cases.len()).sum();
            use crate::report::count;
            eprintln!(
                "{}: OK — {}, {} ({}), {} ({}), {}",
                plan.display(),
                count(p.contenders.len() as u64, "contender"),
                count(p.scenarios.len() as u64, "scenario"),
                count(points as u64, "point"),
                count(p.compat.len() as u64, "compat set"),
                count(cases as u64, "case"),
                count(p.repetitions, "repetition")
            );
            Ok(0)
        }
        Command::Plan {
            action: PlanAction::Show { plan },
        } => {
            use anyhow::Context as _;
            let text = crate::sys::read_bounded(&plan, crate::sys::PLAN_LIMIT)
                .with_context(|| format!("cannot read the plan `{}`", plan.display()))?;
            print!("{}", crate::plan::Plan::show(&plan, &text)?);
            crate::runner::check_plan(&plan, &[])?;
            Ok(0)
        }
        Command::Cache { action } => run_cache(&action),
        Command::Cleanup { dir } => {
            let done = crate::contender::leftovers::clean(&dir)?;
            eprintln!(
                "killed {} left by a run in {}{}",
                crate::report::count(done.killed as u64, "process"),
                dir.display(),
                ignored(done.ignored)
            );
            Ok(0)
        }
        Command::DemoServer {
            version,
            port,
            state,
            work,
        } => {
            crate::demo::server::serve(version, port, state, work)?;
            Ok(0)
        }
    }
}

/// What `cleanup` says of records that proved nothing.
fn ignored(n: usize) -> String {
    match n {
        0 => String::new(),
        n => format!(
            " ({} left alone: {} no longer ours, or not a record)",
            crate::report::count(n as u64, "record"),
            if n == 1 {
                "its PID is"
            } else {
                "their PIDs are"
            }
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_in_the_usual_units() {
        assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(parse_duration("10s").unwrap(), Duration::from_secs(10));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("1.5").unwrap(), Duration::from_millis(1500));
        assert!(parse_duration("10 parsecs")
            .unwrap_err()
            .contains("parsecs"));
        assert!(parse_duration("fast").is_err());
    }

    #[test]
    fn flags_that_do_not_fit_together_are_rejected_by_name() {
        let parse = |a: &[&str]| Cli::try_parse_from(a.iter().copied());
        assert!(parse(&[
            "bakeoff",
            "load",
            "-n",
            "5",
            "-z",
            "1s",
            "http://127.0.0.1:1/"
        ])
        .is_err());
        assert!(parse(&[
            "bakeoff",
            "load",
            "-d",
            "x",
            "-D",
            "f",
            "http://127.0.0.1:1/"
        ])
        .is_err());
        let Command::Load(a) = parse(&["bakeoff", "load", "-c", "0", "http://127.0.0.1:1/"])
            .unwrap()
            .command
        else {
            panic!()
        };
        assert!(a.config().unwrap_err().to_string().contains("-c/--clients"));
        let Command::Load(a) = parse(&["bakeoff", "load", "-H", "nocolon", "http://127.0.0.1:1/"])
            .unwrap()
            .command
        else {
            panic!()
        };
        assert!(a
            .target
            .build(false)
            .err()
            .unwrap()
            .to_string()
            .contains("nocolon"));
    }
}
