//! The plan file: what to compare, how to start each contender, and which scenarios to run.
//! [`Plan::load`] reads and checks it once; errors name the file, line and column, and the rest
//! of the crate only ever sees the checked types below.

mod call;
mod check;
mod compat;
pub mod error;
mod matrix;
mod point;
mod probe;
mod raw;
mod source;
mod template;
mod what_if;

use std::path::{Path, PathBuf};
use std::time::Duration;

pub use check::{parse_budget, MIN_STEP_CALLS};
pub use error::PlanError;
pub use point::{PointId, Vars};
pub use source::{
    fill as fill_source, fill_member as fill_member_source, Location, Rev, Source, SourceKind,
};
pub use what_if::{add_variant, fmt_hold, Delay, Variant, WhatIf, WHAT_IFS};

use crate::load::{Pacing, Stop};
mod calls;
pub use calls::*;
mod expect;
pub use expect::*;
mod units;
pub use units::*;
mod flags;
pub use flags::{AGAINST, CURRENT};
mod paired;
pub use paired::*;

#[derive(Debug, Clone)]
pub struct Plan {
    /// `[ci]`: what a CI workflow installs and sets before running the plan.
    pub ci: Ci,
    /// `[history]` (docs/history.md).
    pub history: History,
    pub name: String,
    /// The plan file, and its text as read (copied into the results directory).
    pub path: PathBuf,
    pub text: String,
    pub repetitions: u32,
    pub order: Order,
    /// Used when `order` is paired.
    pub paired: Paired,
    pub seed: u64,
    pub cores: Option<Cores>,
    pub protos: Vec<PathBuf>,
    pub includes: Vec<PathBuf>,
    pub contenders: Vec<Contender>,
    pub scenarios: Vec<Scenario>,
    pub compat: Vec<CompatSet>,
    /// Each member log's size limit: the first half as it came, then a rolling tail.
    pub log_limit: u64,
    /// Points whose calls sit in the ~40 ms band are measured again at the end of their
    /// repetition with TCP_NODELAY forced on the contender (docs/what-if.md).
    pub confirm: bool,
    /// How long a paired run may spend measuring, its plan's repetitions included: what is
    /// left after them buys repetitions for the points still inconclusive (docs/verdicts.md,
    /// "The budget"). `None`: the plan's repetitions only (or exactly `max_repetitions`).
    pub budget: Option<Duration>,
}

/// The budget of a plan that names neither `budget` nor `paired.max_repetitions`.
pub const DEFAULT_BUDGET: Duration = Duration::from_secs(600);

/// `[[compat]]`: one call made with many requests; every contender gets every request and
/// the answers are compared with the baseline's.
#[derive(Debug, Clone, PartialEq)]
pub struct CompatSet {
    /// Defaults to the call, e.g. `etcdserverpb.KV/Range`.
    pub name: String,
    /// The call; a request is its body (gRPC, HTTP) or params (JSON-RPC), or replaces
    /// `{case}` where the call's path or body has it.
    pub call: Call,
    pub cases: Vec<Case>,
    pub mode: CompatMode,
    /// Field paths left out of the comparison (`header.member_id`; `kvs[].create_revision`).
    pub ignore: Vec<String>,
    /// Repeated fields compared as multisets.
    pub unordered: Vec<String>,
    /// Fields equal when one is the other with its bytes reversed (still reported).
    pub byte_order: Vec<String>,
    /// Calls made once, before the cases.
    pub setup: Vec<Step>,
    pub reference: Option<Reference>,
    pub tls: TlsSpec,
}

/// An outside server (any protocol) some fields of every answer are checked against.
#[derive(Debug, Clone, PartialEq)]
pub struct Reference {
    /// Where it is asked. For a member reference it may hold that member's placeholders
    /// (`{port:rpc}`); empty means the member's own endpoint.
    pub endpoint: String,
    /// `(contender, member)` when the reference is a member of a running contender: asked in
    /// the repetition where compat runs, from that contender's start.
    pub member: Option<(String, String)>,
    /// Its call; `{case}` in it is replaced by the case's request.
    pub call: Call,
    pub fields: Vec<FieldMap>,
    pub tls: TlsSpec,
}

/// `ours` (a path in the contender's answer) must equal `theirs` (a path in the reference's
/// answer) after each side's transforms.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct FieldMap {
    pub ours: String,
    pub theirs: String,
    pub transform: Vec<Transform>,
    pub ours_transform: Vec<Transform>,
}

/// Steps that turn a JSON value into what is compared: decode hex or base64 into bytes,
/// reverse bytes (a hash shown little-endian on one side), encode bytes again, or compare
/// as text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Transform {
    Hex,
    Base64,
    Reverse,
    ToHex,
    ToBase64,
    String,
}

impl Transform {
    pub fn parse(s: &str) -> Option<Transform> {
        Some(match s {
            "hex" => Transform::Hex,
            "base64" => Transform::Base64,
            "reverse" => Transform::Reverse,
            "to_hex" => Transform::ToHex,
            "to_base64" => Transform::ToBase64,
            "string" => Transform::String,
            _ => return None,
        })
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Case {
    /// The request as text; `raw:BASE64` sends those bytes as a gRPC message as they are.
    pub request: String,
    /// Where it came from: `cases.jsonl:12`, `requests[3]`, `generate #7`.
    pub origin: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CompatMode {
    /// A difference is a finding.
    MustMatch,
    /// Answers that legitimately change (the tip of a chain): kept and shown, never counted.
    RecordOnly,
}

/// Disjoint CPU sets for the contenders' processes and for the load engine.
#[derive(Debug, Clone, PartialEq)]
pub struct Cores {
    pub contender: Vec<usize>,
    pub load: Vec<usize>,
}

/// `[history]` of a plan (docs/history.md).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct History {
    /// Every run of the plan is recorded, as with `run --record`.
    pub record: bool,
    /// A commit's web page, `{commit}` where its id goes: the dashboard links commits.
    pub commit_url: Option<String>,
    /// The ref of the plan's contender that every run measures beside it, paired, as the
    /// contender [`REFERENCE`] (docs/history.md, "Over time, side by side").
    pub reference: Option<String>,
    /// `night = "screen"` (with a `reference`): each run is a screen — every contender
    /// measured for the scenario's duration only, no second stage — and a candidate it
    /// raises is measured in full by its confirmation; `false` (`"full"`, the default): as
    /// any paired run.
    pub screen: bool,
}

/// The name of the contender `[history] reference` adds.
pub const REFERENCE: &str = "reference";

/// `[ci]` of a plan (docs/scale-out.md).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Ci {
    /// Shell commands that install what the contenders need, on a fresh runner.
    pub setup: Vec<String>,
    /// Environment variables every job sets (`{env:NAME}` in the plan).
    pub env: Vec<(String, String)>,
}

impl Plan {
    /// Every `{env:NAME}` the plan's contenders read without a default (`{env:NAME:-x}`).
    pub fn env_needed(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        let mut rest = self.text.as_str();
        while let Some(i) = rest.find("{env:") {
            rest = &rest[i + 5..];
            let Some(end) = rest.find('}') else { break };
            let spec = &rest[..end];
            if !spec.contains(":-") && !out.iter().any(|o| o == spec) {
                out.push(spec.to_string());
            }
        }
        out
    }
}

#[derive(Debug, Clone)]
pub struct Contender {
    pub name: String,
    /// The contender this one is compared against, if any.
    pub baseline: Option<String>,
    /// One process, or several for a cluster; every member gets its own state folder.
    pub members: Vec<Member>,
    /// When the work done at start-up (an index build, a load) is finished, if that is
    /// later than the first answer.
    pub ready_when: Option<Probe>,
    /// Commands run before start (with `{state}` already created) and after stop.
    pub setup: Vec<Vec<String>>,
    pub cleanup: Vec<Vec<String>>,
    /// How long to wait after SIGTERM before SIGKILL.
    pub stop_timeout: Duration,
    pub dir: Option<PathBuf>,
    /// A second instance of this contender's build, started only for the compat cases to
    /// tell noise from differences.
    pub noise_of: Option<String>,
    /// Passes on the member that currently leads, for `target = "leader"`.
    pub leader: Option<Probe>,
    /// A what-if variant of another contender (`NAME+nodelay`): the same build, run exactly
    /// like it, with the option forced once ready.
    pub variant: Option<Variant>,
    /// Built from source before the run (docs/from-source.md); `{source}` is its tree.
    pub source: Option<Source>,
}

/// The members in the order they can start: each after the members its `after` names, else
/// in plan order. `None` when `after` goes round in a circle.
pub fn start_order(members: &[Member]) -> Option<Vec<usize>> {
    let mut order: Vec<usize> = Vec::with_capacity(members.len());
    while order.len() < members.len() {
        let next = (0..members.len()).find(|&i| {
            !order.contains(&i)
                && members[i]
                    .after
                    .iter()
                    .all(|a| order.iter().any(|&j| members[j].name == *a))
        })?;
        order.push(next);
    }
    Some(order)
}

#[derive(Debug, Clone)]
pub struct Member {
    pub name: String,
    /// Program and arguments; `{port}`, `{port:NAME}`, `{state}` and `{env:NAME}` are filled
    /// in at start.
    pub command: Vec<String>,
    pub env: Vec<(String, String)>,
    /// Where scenarios send load, e.g. `http://127.0.0.1:{port}`.
    pub endpoint: String,
    /// Answers once the member is up; the first success is the *first response*.
    pub ready: Probe,
    /// Started only once these members' `ready` probes passed.
    pub after: Vec<String>,
    /// Built from a source of its own (docs/from-source.md): `{source}` in its strings is
    /// its tree; without one, the contender's.
    pub source: Option<Source>,
}

#[derive(Debug, Clone)]
pub struct Scenario {
    pub name: String,
    pub call: Call,
    pub points: Vec<PointId>,
    pub stop: Stop,
    pub pacing: Pacing,
    pub warmup: Duration,
    pub timeout: Duration,
    pub setup: Vec<Step>,
    pub tls: TlsSpec,
    /// Each point is a search for the highest rate under a latency goal.
    pub capacity: Option<Capacity>,
    /// Each point is a ramp of these stages, one after another.
    pub stages: Vec<Stage>,
    /// `profile = true`: a CPU profile of every contender while each point's load runs
    /// (docs/profiles.md).
    pub profile: bool,
}

impl Scenario {
    /// Its points are steady load, neither a capacity search nor a ramp: those are the
    /// points paired rounds serve, `--profile` profiles, and a bisect step's repetitions
    /// share the plan's duration of.
    pub fn is_steady(&self) -> bool {
        self.capacity.is_none() && self.stages.is_empty()
    }
}

/// A capacity search: open loop, the rate doubled from `min_rate` until a step fails (or
/// `max_rate` passes), then bisected (geometric midpoints) until the highest passing and the
/// lowest failing rate are within `precision`, or `max_steps`. A step passes when every
/// call succeeded, none was left unsent or unfinished, and the latency at `percentile`
/// (measured from when each call was due) is within `goal`.
#[derive(Debug, Clone, PartialEq)]
pub struct Capacity {
    pub percentile: Percentile,
    pub goal: Duration,
    pub min_rate: f64,
    pub max_rate: f64,
    pub step: Duration,
    pub step_warmup: Duration,
    pub precision: f64,
    pub max_steps: u32,
}

/// A latency percentile a goal is set on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Percentile {
    P50,
    P90,
    P99,
    P99_9,
}

impl Percentile {
    pub fn as_str(self) -> &'static str {
        match self {
            Percentile::P50 => "p50",
            Percentile::P90 => "p90",
            Percentile::P99 => "p99",
            Percentile::P99_9 => "p99.9",
        }
    }

    /// This percentile of a load's latency, in microseconds.
    pub fn of(self, l: &crate::load::Latency) -> u64 {
        match self {
            Percentile::P50 => l.p50,
            Percentile::P90 => l.p90,
            Percentile::P99 => l.p99,
            Percentile::P99_9 => l.p99_9,
        }
    }
}

/// One stage of a ramp: its own open-loop rate or number of clients, for its duration.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stage {
    pub rate: Option<f64>,
    pub clients: Option<usize>,
    pub duration: Duration,
}

/// Which members of a contender a scenario point sends load to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Spread {
    /// The first member listed.
    First,
    /// Clients spread round-robin over every member.
    All,
    /// The member the contender's `leader` probe finds leading, asked before each point.
    Leader,
}

impl Spread {
    pub fn as_str(self) -> &'static str {
        match self {
            Spread::First => "first",
            Spread::All => "all",
            Spread::Leader => "leader",
        }
    }
}

impl Plan {
    /// Reads and checks a plan file.
    pub fn load(path: &Path) -> anyhow::Result<Plan> {
        use anyhow::Context as _;
        let text = crate::sys::read_bounded(path, crate::sys::PLAN_LIMIT)
            .with_context(|| format!("cannot read the plan `{}`", path.display()))?;
        Ok(Plan::parse(path, &text)?)
    }

    /// Refuses a plan whose paths a CI runner's checkout would not have: absolute paths of
    /// this machine, `..` past the repository's root, a `git` source in a folder outside it
    /// (docs/scale-out.md, "In your own repository").
    pub fn check_portable(path: &Path) -> anyhow::Result<()> {
        use anyhow::Context as _;
        let text = crate::sys::read_bounded(path, crate::sys::PLAN_LIMIT)
            .with_context(|| format!("cannot read the plan `{}`", path.display()))?;
        Ok(check::portable::check(path, &text)?)
    }

    /// What a fresh CI runner would lack of the paths the plan's commands name, each a
    /// warning at its place (`setup`: the commands that set the runner up).
    pub fn lacking_on_runner(path: &Path, setup: &[String]) -> anyhow::Result<Vec<String>> {
        use anyhow::Context as _;
        let text = crate::sys::read_bounded(path, crate::sys::PLAN_LIMIT)
            .with_context(|| format!("cannot read the plan `{}`", path.display()))?;
        let found = check::portable::lacking(path, &text, setup)?;
        Ok(found.iter().map(ToString::to_string).collect())
    }

    /// `path` from the root of the repository it is in, as a CI runner's checkout has it;
    /// as given when it cannot be read.
    pub fn in_repository(path: &Path) -> PathBuf {
        let root = check::portable::root_of(path);
        std::fs::canonicalize(path)
            .ok()
            .and_then(|p| p.strip_prefix(&root).ok().map(Path::to_path_buf))
            .unwrap_or_else(|| path.to_path_buf())
    }

    /// Checks a plan's text; `path` names it in errors and anchors relative paths.
    pub fn parse(path: &Path, text: &str) -> Result<Plan, PlanError> {
        check::check(path, text)
    }

    /// The plan with its templates expanded, as TOML (`bakeoff plan show`): what `run`
    /// will use, nothing hidden. Comments are not kept.
    pub fn show(path: &Path, text: &str) -> Result<String, PlanError> {
        let loc = error::Locator::new(path, text);
        let raw = check::expanded(&loc, text)?;
        template::show(&raw).map_err(|e| loc.at(0..0, format!("cannot print the plan: {e}")))
    }

    /// Reads a cases file for `bakeoff diff`: `[[compat]]` sections and their `.proto` files,
    /// or a whole plan (its contenders are then not used).
    pub fn load_cases(path: &Path) -> anyhow::Result<CasesFile> {
        use anyhow::Context as _;
        let text = crate::sys::read_bounded(path, crate::sys::PLAN_LIMIT)
            .with_context(|| format!("cannot read the cases file `{}`", path.display()))?;
        let is_plan = toml::from_str::<toml::Table>(&text)
            .is_ok_and(|t| t.contains_key("contender") || t.contains_key("name"));
        if is_plan {
            let p = Plan::parse(path, &text)?;
            if p.compat.is_empty() {
                anyhow::bail!("the plan `{}` has no [[compat]] sections", path.display());
            }
            return Ok(CasesFile {
                seed: p.seed,
                protos: p.protos,
                includes: p.includes,
                compat: p.compat,
            });
        }
        Ok(compat::check_cases_file(path, &text)?)
    }

    /// The contender `name` is compared against (none for the baseline itself).
    pub fn baseline_of(&self, name: &str) -> Option<&str> {
        let c = self.contenders.iter().find(|c| c.name == name)?;
        c.baseline.as_deref().filter(|b| *b != name)
    }
}

/// A cases file for `bakeoff diff`.
#[derive(Debug, Clone)]
pub struct CasesFile {
    pub seed: u64,
    pub protos: Vec<PathBuf>,
    pub includes: Vec<PathBuf>,
    pub compat: Vec<CompatSet>,
}

/// Each member log's default limit (stdout and stderr each): 8 MiB of head, 8 of tail.
pub const DEFAULT_LOG_LIMIT: u64 = 16 << 20;

#[cfg(test)]
mod tests;
