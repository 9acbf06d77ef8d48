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
mod target;
pub use commands::mistake_code;
pub use target::*;
mod ci;
pub use ci::*;
mod run_flags;
pub use run_flags::*;
mod history_flags;
pub use history_flags::*;

#[derive(Debug, Parser)]
#[command(
    name = "bakeoff",
    version,
    about = "Reproducible side-by-side bake-offs between builds or implementations of a server"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// Fails when standard output was closed (`bakeoff man >&-`): Rust's runtime then puts
/// `/dev/null` there, opened read-write, and what is written vanishes without a word — a
/// command whose only product is its output must not exit 0 having written nothing. A
/// shell's `> /dev/null` opens it write-only, and is obeyed.
fn stdout_open() -> anyhow::Result<()> {
    // SAFETY: fstat and F_GETFL only read the descriptor's state into memory we own.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    let stat = unsafe { libc::fstat(1, &mut st) };
    let flags = unsafe { libc::fcntl(1, libc::F_GETFL) };
    let null = (st.st_mode & libc::S_IFMT) == libc::S_IFCHR && st.st_rdev == libc::makedev(1, 3);
    if stat != 0 || flags == -1 || (null && flags & libc::O_ACCMODE == libc::O_RDWR) {
        bail!("standard output is closed: nothing to write to (redirect it to a file)");
    }
    Ok(())
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
    /// The history of recorded runs: list its series, show one, export them, import results
    /// folders (docs/history.md).
    History {
        /// The history's file [default: $BAKEOFF_HISTORY, else
        /// $XDG_DATA_HOME/bakeoff/history.sqlite].
        #[arg(long = "history", value_name = "FILE", global = true)]
        history: Option<PathBuf>,
        #[command(subcommand)]
        action: HistoryAction,
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
    /// Print a completion script for a shell, e.g. `bakeoff completions bash >
    /// ~/.local/share/bash-completion/completions/bakeoff`.
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print bakeoff's manual page (roff), e.g. `bakeoff man > bakeoff.1 && man -l bakeoff.1`.
    Man,
    /// The demo's contender (used by `bakeoff demo`).
    #[command(hide = true)]
    DemoServer {
        #[arg(value_enum)]
        version: crate::demo::server::Version,
        port: u16,
        state: PathBuf,
        /// Extra CPU time spent on the answers (for calibrating verdicts): a fixed amount on
        /// every answer, e.g. 5us, or a share of what answering cost the server, e.g. 2%.
        #[arg(long = "work", default_value = "0s", value_parser = crate::demo::server::parse_work)]
        work: crate::demo::server::Work,
    },
    /// Send compatibility cases to several servers and compare their answers (the first
    /// endpoint is the baseline).
    Diff(DiffArgs),
    /// One step of a bisection, for `git bisect run`: contender NAME built from its
    /// repository's working tree against NAME built at REF, paired; exit 0 (equivalent or
    /// better), 1 (different and worse), 125 (did not build, or still inconclusive)
    /// (docs/bisect.md).
    Check(CheckArgs),
    /// Which commit between a good and a bad one made the change: neighbours measured side
    /// by side, paired, at every step; a culprit confirmed against its parent, or an honest
    /// range, or "not reproduced"; exit 0 (a confirmed answer), 2 (a range or undecided)
    /// (docs/bisect.md).
    Bisect(BisectArgs),
    /// Compare benchmark results old against new (Go -bench output, Criterion folders,
    /// hyperfine JSON, bakeoff results.json): medians, deltas, Mann-Whitney U, per unit.
    #[command(
        override_usage = "bakeoff compare [OPTIONS] <OLD> <NEW> [MORE]...\n       bakeoff compare [OPTIONS] <ONE-HYPERFINE-FILE>"
    )]
    Compare(CompareArgs),
}

/// `--max-body`, on the commands that send requests or keep answers.
#[derive(Debug, Clone, Default, Args)]
pub struct BodyArgs {
    /// The most bytes one request body, path or gRPC message may render to (templates such
    /// as {fill:N:…} are checked before anything is sent), and the most of one answer kept
    /// to compare or print (diff, compat, call), e.g. 256MiB [default: 64MiB].
    #[arg(long = "max-body", value_name = "SIZE", value_parser = parse_size)]
    pub max_body: Option<usize>,
}

impl Command {
    /// The command's `--max-body`, when it has one and it is given.
    fn max_body(&self) -> Option<usize> {
        let body = match self {
            Command::Load(a) => &a.target.body,
            Command::Call(a) => &a.target.body,
            Command::Run(a) => &a.body,
            Command::Demo(a) => &a.body,
            Command::Diff(a) => &a.body,
            Command::Check(a) => &a.body,
            Command::Bisect(a) => &a.body,
            Command::Plan {
                action: PlanAction::Check { body, .. } | PlanAction::Show { body, .. },
            } => body,
            Command::History {
                action: HistoryAction::Detect { with, .. } | HistoryAction::Confirm { with, .. },
                ..
            } => &with.body,
            _ => return None,
        };
        body.max_body
    }
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
        /// The plan files (TOML): each is checked, and each mistake said.
        #[arg(value_name = "PLAN", num_args = 1.., required = true)]
        plans: Vec<PathBuf>,
        /// Check contender NAME's source at REF (as `run --ref`).
        #[arg(long = "ref", value_name = "NAME=REF", value_parser = parse_ref)]
        refs: Vec<(String, String)>,
        #[command(flatten)]
        body: BodyArgs,
    },
    /// Print the plan as `run` uses it: `like`, `members = N`, `{join:…}`, `{index}` and
    /// `vars` expanded (comments are not kept). The plan is then checked.
    Show {
        /// The plan file (TOML).
        plan: PathBuf,
        #[command(flatten)]
        body: BodyArgs,
    },
}

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Write results here [default: bakeoff-results/<time>-<name>].
    #[arg(long = "out", value_name = "DIR")]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    pub body: BodyArgs,
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
    #[command(flatten)]
    pub body: BodyArgs,
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

/// `1%` or `0.5%` → a share of calls.
fn parse_share_arg(s: &str) -> Result<f64, String> {
    crate::plan::parse_share(s)
        .filter(|x| *x < 1.0)
        .ok_or_else(|| format!("`{s}` is not a percentage below 100%, like 1%"))
}

pub use crate::plan::{parse_duration, parse_size};

mod commands;

use commands::*;

/// `PLAN: OK — 2 contenders, 1 scenario (3 points), …`.
fn checked(path: &std::path::Path, p: &crate::plan::Plan) -> String {
    use crate::report::count;
    let points: usize = p.scenarios.iter().map(|s| s.points.len()).sum();
    let cases: usize = p.compat.iter().map(|c| c.cases.len()).sum();
    format!(
        "{}: OK — {}, {} ({}), {} ({}), {}",
        path.display(),
        count(p.contenders.len() as u64, "contender"),
        count(p.scenarios.len() as u64, "scenario"),
        count(points as u64, "point"),
        count(p.compat.len() as u64, "compat set"),
        count(cases as u64, "case"),
        count(p.repetitions, "repetition")
    )
}

/// Runs a parsed command; returns the process exit code.
pub fn run(cli: Cli) -> anyhow::Result<u8> {
    if let Some(n) = cli.command.max_body() {
        crate::protocol::template::set_max_len(n);
    }
    match cli.command {
        Command::Load(args) => run_load(&args),
        Command::Call(args) => run_call(&args),
        Command::Run(args) => run_plan(&args),
        Command::Compare(args) => run_compare(&args),
        Command::Check(args) => run_check(&args),
        Command::Bisect(args) => run_bisect(&args),
        Command::Diff(args) => run_diff(&args),
        Command::Demo(args) => run_demo(&args),
        Command::Report { dir } => run_report(&dir),
        Command::Merge(args) => run_merge(&args),
        Command::Ci { action } => run_ci(&action),
        Command::Plan { action } => run_plan_action(&action),
        Command::Cache { action } => run_cache(&action),
        Command::History { history, action } => run_history(history.as_deref(), &action),
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
        Command::Completions { shell } => {
            use clap::CommandFactory as _;
            stdout_open()?;
            let mut out = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "bakeoff", &mut out);
            emit(&String::from_utf8_lossy(&out))
                .map(|()| 0)
                .map_err(Into::into)
        }
        Command::Man => {
            use clap::CommandFactory as _;
            stdout_open()?;
            let mut out = Vec::new();
            clap_mangen::Man::new(Cli::command()).render(&mut out)?;
            emit(&String::from_utf8_lossy(&out))
                .map(|()| 0)
                .map_err(Into::into)
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

/// `bakeoff plan check|show`. Each plan is checked, and each mistake said; one error exits
/// 1 (as one plan's).
fn run_plan_action(action: &PlanAction) -> anyhow::Result<u8> {
    match action {
        PlanAction::Check { plans, refs, .. } => {
            let mut failed = false;
            for plan in plans {
                match crate::runner::check_plan(plan, refs) {
                    Ok((p, resolved)) => {
                        eprintln!("{}", checked(plan, &p));
                        for line in resolved {
                            eprintln!("  {line}");
                        }
                    }
                    Err(e) if plans.len() == 1 => return Err(e),
                    Err(e) => {
                        eprintln!("bakeoff: error: {e:#}");
                        failed = true;
                    }
                }
            }
            Ok(u8::from(failed))
        }
        PlanAction::Show { plan, .. } => {
            use anyhow::Context as _;
            let text = crate::sys::read_bounded(plan, crate::sys::PLAN_LIMIT)
                .with_context(|| format!("cannot read the plan `{}`", plan.display()))?;
            print!("{}", crate::plan::Plan::show(plan, &text)?);
            crate::runner::check_plan(plan, &[])?;
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
