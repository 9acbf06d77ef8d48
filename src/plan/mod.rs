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

pub use check::MIN_STEP_CALLS;
pub use error::PlanError;
pub use point::{PointId, Vars};
pub use source::{
    fill as fill_source, fill_member as fill_member_source, Location, Rev, Source, SourceKind,
};
pub use what_if::{add_variant, fmt_hold, Delay, Variant, WhatIf, WHAT_IFS};

use crate::load::{Pacing, Stop};

#[derive(Debug, Clone)]
pub struct Plan {
    /// `[ci]`: what a CI workflow installs and sets before running the plan.
    pub ci: Ci,
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
}

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

/// In which order contenders take turns. `Paired` (the default when two or more contenders
/// serve scenarios): the contenders of a repetition run side by side and the load alternates
/// between them in short slices, so each round compares them in the same seconds of the
/// machine's life (docs/verdicts.md). `Interleaved`: one contender at a time, `A B A B …`
/// (spreads slow drift over all contenders); `Sequential`: `A A … B B …`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    Paired,
    Interleaved,
    Sequential,
}

impl Order {
    pub fn as_str(self) -> &'static str {
        match self {
            Order::Paired => "paired",
            Order::Interleaved => "interleaved",
            Order::Sequential => "sequential",
        }
    }
}

/// How a paired point is cut into rounds (`[paired]` in a plan).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Paired {
    /// Each contender's turn in a round.
    pub slice: Duration,
    pub rounds: Rounds,
    /// A change counts only when its whole interval clears this band around 1 (0.01 = 1 %).
    pub noise: f64,
    /// Two figures are proven equal when the whole interval lies inside this band.
    pub equivalence: f64,
    /// The false discovery rate the report holds its "different" verdicts to
    /// (Benjamini–Hochberg over every verdict of the report).
    pub fdr: f64,
}

/// How many rounds a paired point gets.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Rounds {
    /// Exactly this many.
    Fixed(u32),
    /// At least enough rounds for the scenario's `duration` (and 2), then more, two at a
    /// time, until the main ratio's interval within the repetition is within ±`precision`
    /// (0.02 = 2 %) or `max` rounds were run.
    Auto { max: u32, precision: f64 },
}

impl Default for Paired {
    fn default() -> Paired {
        Paired {
            // A round's spread does not grow with the slice here, so shorter slices buy
            // more rounds in the same time; 100 ms still holds enough calls
            // (benches/slices.sh, docs/verdicts.md).
            slice: Duration::from_millis(100),
            rounds: Rounds::Auto {
                max: 30,
                precision: 0.02,
            },
            noise: 0.01,
            // The precision target: a point that reached ±2 % around 1 is proven equal
            // within it (docs/verdicts.md, "Three verdicts").
            equivalence: 0.02,
            fdr: 0.05,
        }
    }
}

/// Disjoint CPU sets for the contenders' processes and for the load engine.
#[derive(Debug, Clone, PartialEq)]
pub struct Cores {
    pub contender: Vec<usize>,
    pub load: Vec<usize>,
}

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
pub struct Probe {
    pub check: Check,
    /// Give up waiting after this long.
    pub timeout: Duration,
    /// Each attempt gets at most this long (a server may accept a call and hold it).
    pub attempt_timeout: Duration,
    pub interval: Duration,
    /// For `http` and `grpc` probes of `https://` endpoints.
    pub tls: TlsSpec,
    /// What the answer must also say (`http` and `grpc` probes).
    pub expect: Option<Expect>,
}

/// The value at `path` (`result.hash`, `kvs[0].value`, `[2]`), if there is one.
pub fn at_path<'a>(v: &'a serde_json::Value, path: &str) -> Option<&'a serde_json::Value> {
    let mut cur = v;
    for part in path.split('.').filter(|p| !p.is_empty()) {
        let (name, mut rest) = match part.find('[') {
            Some(i) => (&part[..i], &part[i..]),
            None => (part, ""),
        };
        if !name.is_empty() {
            cur = cur.get(name)?;
        }
        while let Some(r) = rest.strip_prefix('[') {
            let end = r.find(']')?;
            cur = cur.get(r[..end].parse::<usize>().ok()?)?;
            rest = &r[end + 1..];
        }
    }
    Some(cur)
}

impl Expect {
    /// Whether an answer (its messages as JSON; text bodies as strings) passes; why not.
    pub fn check(&self, messages: &[serde_json::Value]) -> Result<(), String> {
        let first = messages.first().ok_or("the answer has no body")?;
        let get = |path: &str| {
            at_path(first, path).ok_or_else(|| format!("the answer has no field `{path}`"))
        };
        match self {
            Expect::Equals { field, value } => {
                let got = get(field)?;
                // A number written in the plan matches the same number sent as text
                // (proto3 JSON writes 64-bit integers as strings).
                let same = got == value
                    || matches!((got, value), (serde_json::Value::String(s), v @ serde_json::Value::Number(_)) if s.parse::<serde_json::Number>().is_ok_and(|n| serde_json::Value::Number(n) == *v));
                same.then_some(())
                    .ok_or_else(|| format!("`{field}` is {got}, not {value}"))
            }
            Expect::SameAs { field, other } => {
                let (a, b) = (get(field)?, get(other)?);
                (a == b)
                    .then_some(())
                    .ok_or_else(|| format!("`{field}` is {a}, `{other}` is {b}"))
            }
            Expect::Matches(re) => {
                let re = regex_lite::Regex::new(re).map_err(|e| e.to_string())?;
                let text: Vec<String> = messages
                    .iter()
                    .map(|m| match m {
                        serde_json::Value::String(s) => s.clone(),
                        other => other.to_string(),
                    })
                    .collect();
                text.iter()
                    .any(|t| re.is_match(t))
                    .then_some(())
                    .ok_or_else(|| format!("the answer does not match `{}`", re.as_str()))
            }
        }
    }
}

/// A check on a probe's answer, beyond its status.
#[derive(Debug, Clone, PartialEq)]
pub enum Expect {
    /// The field at this dotted path of the JSON answer equals the value.
    Equals {
        field: String,
        value: serde_json::Value,
    },
    /// The two fields of the JSON answer are equal (etcd's `header.member_id` and `leader`).
    SameAs { field: String, other: String },
    /// The body, as text, matches this regular expression.
    Matches(String),
}

#[derive(Debug, Clone)]
pub enum Check {
    /// A TCP connection to `host:port` succeeds.
    Tcp(String),
    /// An HTTP request (GET, or `method` with a `body`) answers with this status (any 2xx
    /// when none is given).
    Http {
        url: String,
        status: Option<u16>,
        method: String,
        body: Option<String>,
    },
    /// A JSON-RPC 2.0 call answers with a result (not an error): a node is ready when
    /// `getblockcount` answers.
    JsonRpc {
        method: String,
        /// JSON text: an array or an object.
        params: String,
        endpoint: Option<String>,
    },
    /// A gRPC call answers OK (e.g. `grpc.health.v1.Health/Check`).
    Grpc {
        call: String,
        body: String,
        endpoint: Option<String>,
    },
    /// A line of the member's stdout or stderr matches this regular expression.
    Log(String),
    /// A command exits with status 0.
    Command(Vec<String>),
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

/// A call, with `{var}` placeholders not yet filled in.
#[derive(Debug, Clone, PartialEq)]
pub enum Call {
    Grpc {
        method: String,
        body: String,
        /// Metadata, and how streams are sent.
        shape: crate::protocol::grpc::CallShape,
    },
    Http {
        method: String,
        path: String,
        headers: Vec<(String, String)>,
        body: Option<String>,
        h2: bool,
    },
    JsonRpc {
        method: String,
        path: String,
        params: String,
        headers: Vec<(String, String)>,
    },
}

impl Call {
    /// The call with matrix variables filled in.
    pub fn with_vars(&self, vars: &[(String, String)]) -> Call {
        self.map_texts(&|s: &str| fill_vars(s, vars))
    }

    /// The call with `fill` applied to its path, body and params (not its method or
    /// headers).
    pub fn map_texts(&self, fill: &dyn Fn(&str) -> String) -> Call {
        match self {
            Call::Grpc {
                method,
                body,
                shape,
            } => Call::Grpc {
                method: method.clone(),
                body: fill(body),
                shape: shape.clone(),
            },
            Call::Http {
                method,
                path,
                headers,
                body,
                h2,
            } => Call::Http {
                method: method.clone(),
                path: fill(path),
                headers: headers.clone(),
                body: body.as_deref().map(fill),
                h2: *h2,
            },
            Call::JsonRpc {
                method,
                path,
                params,
                headers,
            } => Call::JsonRpc {
                method: method.clone(),
                path: fill(path),
                params: fill(params),
                headers: headers.clone(),
            },
        }
    }

    /// The call for one compat case: the request replaces `{case}` where the call has it,
    /// else it is the body (gRPC, HTTP) or the params (JSON-RPC).
    pub fn for_case(&self, request: &str) -> Call {
        if self.mentions("{case}") {
            return self.with_vars(&[("case".to_string(), request.to_string())]);
        }
        let mut c = self.clone();
        match &mut c {
            Call::Grpc { body, .. } => *body = request.to_string(),
            Call::Http { body, .. } => *body = Some(request.to_string()),
            Call::JsonRpc { params, .. } => *params = request.to_string(),
        }
        c
    }

    /// Whether `text` appears in the call's path, body or params.
    pub fn mentions(&self, text: &str) -> bool {
        match self {
            Call::Grpc { body, .. } => body.contains(text),
            Call::Http { path, body, .. } => {
                path.contains(text) || body.as_deref().is_some_and(|b| b.contains(text))
            }
            Call::JsonRpc { path, params, .. } => path.contains(text) || params.contains(text),
        }
    }

    /// e.g. `etcdserverpb.KV/Range` or `GET /index.html`.
    pub fn describe(&self) -> String {
        match self {
            Call::Grpc { method, .. } => method.clone(),
            Call::Http { method, path, .. } => format!("{method} {path}"),
            Call::JsonRpc { method, .. } => method.clone(),
        }
    }
}

/// TLS settings of a scenario, compat section, probe or reference: the keys of the flags
/// (`cacert`, `cert`, `key`, `insecure`, `servername`), with `{state}` (the contender's state
/// folder) and `{env:NAME}` filled in when a client is made, so a contender that writes its
/// own certificate at start can be trusted. Relative paths are relative to the plan.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TlsSpec {
    pub cacert: Option<String>,
    pub cert: Option<String>,
    pub key: Option<String>,
    pub insecure: bool,
    pub servername: Option<String>,
    /// The plan's folder.
    pub base: PathBuf,
}

impl TlsSpec {
    /// The options for a contender whose state folder is `state`.
    pub fn resolve(
        &self,
        state: Option<&Path>,
    ) -> Result<crate::protocol::tls::TlsOptions, String> {
        let fill = |key: &str, v: &Option<String>| -> Result<Option<String>, String> {
            let Some(v) = v else { return Ok(None) };
            let mut out = v.clone();
            if out.contains("{state}") {
                let s = state.ok_or_else(|| {
                    format!("tls `{key}` uses {{state}}, but there is no contender here")
                })?;
                out = out.replace("{state}", &s.display().to_string());
            }
            fill_env(&out)
                .map(Some)
                .map_err(|e| format!("tls `{key}`: {e}"))
        };
        let path = |key: &str, v: &Option<String>| -> Result<Option<PathBuf>, String> {
            Ok(fill(key, v)?.map(|p| self.base.join(p)))
        };
        Ok(crate::protocol::tls::TlsOptions {
            cacert: path("cacert", &self.cacert)?,
            cert: path("cert", &self.cert)?,
            key: path("key", &self.key)?,
            insecure: self.insecure,
            servername: fill("servername", &self.servername)?,
        })
    }
}

/// A call made `requests` times, one at a time, before a scenario point is measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub call: Call,
    pub requests: u64,
}

/// Replaces `{name}` for each matrix variable; every other brace is left alone.
pub fn fill_vars(text: &str, vars: &[(String, String)]) -> String {
    let mut out = text.to_string();
    for (k, v) in vars {
        out = out.replace(&format!("{{{k}}}"), v);
    }
    out
}

impl Plan {
    /// Reads and checks a plan file.
    pub fn load(path: &Path) -> anyhow::Result<Plan> {
        use anyhow::Context as _;
        let text = crate::sys::read_bounded(path, crate::sys::PLAN_LIMIT)
            .with_context(|| format!("cannot read the plan `{}`", path.display()))?;
        Ok(Plan::parse(path, &text)?)
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

    /// The plan with the command line's overrides: `repetitions`, only the contenders in
    /// `only` (with their noise instances; a baseline left out is no longer compared
    /// against), only the scenarios in `scenarios`. Empty lists keep everything. A name
    /// the plan does not have is an error with the nearest one.
    pub fn overridden(
        mut self,
        repetitions: Option<u32>,
        only: &[String],
        scenarios: &[String],
    ) -> Result<Plan, String> {
        if let Some(n) = repetitions {
            if !(1..=1000).contains(&n) {
                return Err(format!("--repetitions {n}: give 1 to 1000"));
            }
            self.repetitions = n;
        }
        let unknown = |flag: &str, name: &str, known: Vec<&str>| {
            let hint = error::did_you_mean(name, known.iter().copied());
            format!(
                "{flag} {name}: the plan has no such name{hint} (it has {})",
                known.join(", ")
            )
        };
        if !only.is_empty() {
            let names: Vec<&str> = self.contenders.iter().map(|c| c.name.as_str()).collect();
            if let Some(n) = only.iter().find(|n| !names.contains(&n.as_str())) {
                return Err(unknown("--only", n, names));
            }
            self.contenders.retain(|c| {
                only.contains(&c.name)
                    || c.noise_of.as_ref().is_some_and(|t| only.contains(t))
                    || c.variant.as_ref().is_some_and(|v| only.contains(&v.of))
            });
            let kept: Vec<String> = self.contenders.iter().map(|c| c.name.clone()).collect();
            for c in &mut self.contenders {
                if c.baseline.as_ref().is_some_and(|b| !kept.contains(b)) {
                    c.baseline = None;
                }
            }
            for set in &mut self.compat {
                if set
                    .reference
                    .as_ref()
                    .and_then(|r| r.member.as_ref())
                    .is_some_and(|(who, _)| !kept.contains(who))
                {
                    set.reference = None;
                }
            }
        }
        if !scenarios.is_empty() {
            let names: Vec<&str> = self.scenarios.iter().map(|s| s.name.as_str()).collect();
            if let Some(n) = scenarios.iter().find(|n| !names.contains(&n.as_str())) {
                return Err(unknown("--scenario", n, names));
            }
            self.scenarios.retain(|s| scenarios.contains(&s.name));
        }
        Ok(self)
    }

    /// Adds the what-if variant `what` of contender `of` (see [`add_variant`]).
    pub fn with_variant(&mut self, of: &str, what: &WhatIf) -> Result<(), String> {
        add_variant(&mut self.contenders, of, what)
    }

    /// `--ref NAME=REF`: contender NAME's git source at REF for this run (its noise instances
    /// and variants, copies of it, too).
    pub fn with_refs(mut self, refs: &[(String, String)]) -> Result<Plan, String> {
        for (name, r) in refs {
            if !self.contenders.iter().any(|c| c.name == *name) {
                let names: Vec<&str> = self.contenders.iter().map(|c| c.name.as_str()).collect();
                return Err(format!(
                    "--ref {name}={r}: no contender is named `{name}`{}",
                    error::did_you_mean(name, names.iter().copied())
                ));
            }
            let copies = self.contenders.iter_mut().filter(|c| {
                c.name == *name
                    || c.noise_of.as_deref() == Some(name)
                    || c.variant.as_ref().is_some_and(|v| v.of == *name)
            });
            for c in copies {
                match c.source.as_mut().map(|s| &mut s.from) {
                    Some(SourceKind::Git { rev, .. }) => *rev = Rev::Ref(r.clone()),
                    _ => {
                        return Err(format!(
                            "--ref {name}={r}: contender `{name}` is not built from a git `source`"
                        ))
                    }
                }
            }
        }
        Ok(self)
    }

    /// `--what-if WHAT`: the variant of every contender compared (not noise instances, not
    /// variants).
    pub fn with_what_if(mut self, what: &[WhatIf]) -> Result<Plan, String> {
        for w in what {
            let names: Vec<String> = self
                .contenders
                .iter()
                .filter(|c| c.noise_of.is_none() && c.variant.is_none())
                .map(|c| c.name.clone())
                .collect();
            for n in names {
                self.with_variant(&n, w)
                    .map_err(|e| format!("--what-if {w}: {e}"))?;
            }
        }
        Ok(self)
    }

    /// The plan cut down to check it in seconds: one repetition, and every point of every
    /// scenario (every target, key size and file it names is tried) at one request per
    /// client — an open-loop point at a rate that sends them within its second.
    pub fn smoke(mut self) -> Plan {
        self.repetitions = 1;
        // A smoke run checks the plan; its one-call points are no evidence either way.
        self.confirm = false;
        for s in &mut self.scenarios {
            let most = s.points.iter().map(|p| p.clients).max().unwrap_or(1);
            s.stop = Stop::Count(most as u64);
            if let Pacing::Open { rate } = s.pacing {
                s.pacing = Pacing::Open {
                    rate: rate.max(most as f64),
                };
            }
            for p in &mut s.points {
                p.rate = p.rate.map(|r| r.max(most as f64));
            }
            s.warmup = Duration::ZERO;
            if let Some(c) = &mut s.capacity {
                c.step = c.step.min(Duration::from_millis(500));
                c.step_warmup = Duration::ZERO;
                c.max_steps = c.max_steps.min(4);
            }
            // The whole ramp in about a second, each stage's rate and clients kept.
            let n = s.stages.len().max(1) as u32;
            for st in &mut s.stages {
                st.duration = st.duration.min(Duration::from_secs(1) / n);
            }
        }
        self
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

/// `2%` → 0.02; `None` for anything that is not a percentage of 0 or more.
pub fn parse_share(s: &str) -> Option<f64> {
    let v: f64 = s.trim().strip_suffix('%')?.trim().parse().ok()?;
    (v.is_finite() && v >= 0.0).then_some(v / 100.0)
}

/// Parses `250ms`, `10s`, `2m`, `1h`, `1.5s` or a bare number of seconds.
/// `64MiB`, `512KiB`, `1GiB`, `1000000` → bytes.
pub fn parse_size(s: &str) -> Result<usize, String> {
    let t = s.trim();
    let (num, unit) = t.split_at(t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len()));
    let n: usize = num
        .parse()
        .map_err(|_| format!("`{s}` is not a size like 64MiB"))?;
    let mult: usize = match unit.trim() {
        "" | "B" => 1,
        "KiB" | "K" | "k" => 1 << 10,
        "MiB" | "M" => 1 << 20,
        "GiB" | "G" => 1 << 30,
        other => return Err(format!("`{other}` is not a unit (B, KiB, MiB, GiB)")),
    };
    n.checked_mul(mult).filter(|&b| b > 0).ok_or_else(|| {
        format!(
            "`{s}` is not a size between 1 byte and {} bytes",
            usize::MAX
        )
    })
}

/// Replaces each `{env:NAME}` in `text` with that variable's value (for header values and TLS
/// settings; templates have their own `{env:…}`, which they keep out of what is stored).
pub fn fill_env(text: &str) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("{env:") {
        out.push_str(&rest[..i]);
        let after = &rest[i + 5..];
        let end = after.find('}').ok_or("`{env:` is not closed with `}`")?;
        let name = &after[..end];
        let value = std::env::var(name).map_err(|_| format!("{{env:{name}}} is not set"))?;
        out.push_str(&value);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Each member log's default limit (stdout and stderr each): 8 MiB of head, 8 of tail.
pub const DEFAULT_LOG_LIMIT: u64 = 16 << 20;

/// No duration bakeoff takes (a run, a timeout, a slice) needs more.
pub const MAX_DURATION: Duration = Duration::from_secs(30 * 86_400);

pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let n: f64 = num
        .parse()
        .map_err(|_| format!("`{s}` is not a duration like 500ms, 10s or 2m"))?;
    let scale = match unit.trim() {
        "" | "s" => 1.0,
        "ms" => 1e-3,
        "us" | "µs" => 1e-6,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        u => return Err(format!("`{u}` is not a time unit (use ms, s, m or h)")),
    };
    let d = Duration::try_from_secs_f64(n * scale).map_err(|_| format!("`{s}` is out of range"))?;
    if d > MAX_DURATION {
        return Err(format!("`{s}` is longer than 30 days"));
    }
    Ok(d)
}

#[cfg(test)]
mod tests;
