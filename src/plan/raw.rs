//! The plan file as written: serde types that mirror the TOML, with spans kept on every value
//! a later check may need to point at. Unknown keys are rejected here (`deny_unknown_fields`);
//! everything else is checked in [`super::check`].

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use toml::Spanned;

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawPlan {
    pub name: Spanned<String>,
    pub repetitions: Option<Spanned<i64>>,
    pub baseline: Option<Spanned<String>>,
    pub order: Option<Spanned<String>>,
    pub paired: Option<Spanned<RawPaired>>,
    pub seed: Option<u64>,
    pub cores: Option<Spanned<RawCores>>,
    /// `.proto` files for gRPC calls, relative to the plan file.
    #[serde(default, skip_serializing_if = "is_empty")]
    pub protos: Vec<Spanned<String>>,
    /// Import roots for the `.proto` files [default: each file's folder].
    #[serde(default, skip_serializing_if = "is_empty")]
    pub proto_include: Vec<String>,
    /// Each member log's size limit, e.g. `"16MiB"`.
    pub log_limit: Option<Spanned<String>>,
    /// Measure points with a ~40 ms stall again with TCP_NODELAY forced [default: true].
    pub confirm: Option<bool>,
    /// How long a paired run may measure, its second stage included (`"10m"`, `"off"`).
    pub budget: Option<Spanned<String>>,
    #[serde(rename = "contender", default, skip_serializing_if = "is_empty")]
    pub contenders: Vec<Spanned<RawContender>>,
    #[serde(rename = "scenario", default, skip_serializing_if = "is_empty")]
    pub scenarios: Vec<Spanned<RawScenario>>,
    #[serde(rename = "compat", default, skip_serializing_if = "is_empty")]
    pub compat: Vec<Spanned<RawCompat>>,
    /// What `bakeoff ci` workflows need to run the plan on a fresh runner.
    pub ci: Option<RawCi>,
    /// What `bakeoff history` does with the plan's runs.
    pub history: Option<RawHistory>,
}

/// `[history]`: record every run; how a commit's page is linked on the dashboard.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawHistory {
    pub record: Option<bool>,
    /// e.g. `"https://github.com/o/r/commit/{commit}"`.
    pub commit_url: Option<Spanned<String>>,
    /// A ref every run measures beside the plan's one contender, paired: e.g. `"v1.4.0"`.
    pub reference: Option<Spanned<String>>,
    /// How a run beside the reference measures: `"full"` (the default) or `"screen"`.
    pub night: Option<Spanned<String>>,
}

/// `[ci]`: commands that install what the contenders need, and environment variables.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawCi {
    #[serde(default, skip_serializing_if = "is_empty")]
    pub setup: Vec<String>,
    #[serde(default, skip_serializing_if = "is_empty")]
    pub env: std::collections::BTreeMap<String, String>,
}

/// `[paired]`: how paired points are cut into rounds.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawPaired {
    pub slice: Option<Spanned<String>>,
    /// `"auto"` or a number.
    pub rounds: Option<Spanned<toml::Value>>,
    pub max_rounds: Option<Spanned<i64>>,
    pub precision: Option<Spanned<String>>,
    pub noise: Option<Spanned<String>>,
    /// The band inside which an interval proves two figures equal, e.g. `"2%"`.
    pub equivalence: Option<Spanned<String>>,
    /// The false discovery rate among a report's "different" verdicts, e.g. `"5%"`.
    pub fdr: Option<Spanned<String>>,
    /// More repetitions for points still inconclusive, up to this many in all.
    pub max_repetitions: Option<Spanned<i64>>,
    /// The figures the report judges, e.g. `["cpu_per_request"]`; unset: all of them.
    pub judge: Option<Spanned<Vec<Spanned<String>>>>,
}

/// A file of compatibility cases for `bakeoff diff --cases FILE`: a plan's `[[compat]]`
/// sections with the `.proto` files they need, and nothing else.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawCasesFile {
    pub seed: Option<u64>,
    #[serde(default, skip_serializing_if = "is_empty")]
    pub protos: Vec<Spanned<String>>,
    #[serde(default, skip_serializing_if = "is_empty")]
    pub proto_include: Vec<String>,
    #[serde(rename = "compat", default, skip_serializing_if = "is_empty")]
    pub compat: Vec<Spanned<RawCompat>>,
}

/// `[[compat]]`: the same call made with many requests, answers compared across contenders.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawCompat {
    pub name: Option<Spanned<String>>,
    pub grpc: Option<Spanned<String>>,
    pub http: Option<Spanned<String>>,
    pub jsonrpc: Option<Spanned<String>>,
    pub path: Option<Spanned<String>>,
    #[serde(default, skip_serializing_if = "is_empty")]
    pub headers: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "is_false")]
    pub h2: bool,
    pub stream_interval: Option<Spanned<String>>,
    pub replies: Option<Spanned<i64>>,
    pub tls: Option<Spanned<RawTls>>,
    /// A JSONL file of requests, relative to the plan.
    pub cases: Option<Spanned<String>>,
    /// Requests written in the plan (strings, or tables turned into JSON).
    #[serde(default, skip_serializing_if = "is_empty")]
    pub requests: Vec<Spanned<toml::Value>>,
    pub generate: Option<Spanned<RawGenerate>>,
    pub mode: Option<Spanned<String>>,
    #[serde(default, skip_serializing_if = "is_empty")]
    pub ignore: Vec<String>,
    #[serde(default, skip_serializing_if = "is_empty")]
    pub unordered: Vec<String>,
    #[serde(default, skip_serializing_if = "is_empty")]
    pub byte_order: Vec<String>,
    #[serde(default, skip_serializing_if = "is_empty")]
    pub setup: Vec<Spanned<RawStep>>,
    pub reference: Option<Spanned<RawReference>>,
}

impl RawCompat {
    /// Where a reference that is a member names its contender (for errors about it).
    pub fn reference_contender(&self) -> Option<&Spanned<String>> {
        self.reference.as_ref()?.get_ref().contender.as_ref()
    }
}

/// A server bakeoff does not start (it may speak another protocol) whose answers some
/// fields are checked against.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawReference {
    /// An outside server; or, with `contender`, that member's endpoint with its ports.
    pub endpoint: Option<Spanned<String>>,
    /// The reference is a member of this running contender …
    pub contender: Option<Spanned<String>>,
    /// … this one (its first member by default).
    pub member: Option<Spanned<String>>,
    pub grpc: Option<Spanned<String>>,
    pub http: Option<Spanned<String>>,
    pub jsonrpc: Option<Spanned<String>>,
    pub path: Option<Spanned<String>>,
    #[serde(default, skip_serializing_if = "is_empty")]
    pub headers: BTreeMap<String, String>,
    pub tls: Option<Spanned<RawTls>>,
    /// The request, with `{case}` for the case's request; the case's request when absent.
    pub request: Option<Spanned<toml::Value>>,
    pub fields: Vec<Spanned<RawFieldMap>>,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawFieldMap {
    pub ours: String,
    pub theirs: String,
    #[serde(default, skip_serializing_if = "is_empty")]
    pub transform: Vec<Spanned<String>>,
    #[serde(default, skip_serializing_if = "is_empty")]
    pub ours_transform: Vec<Spanned<String>>,
}

/// `count` requests from one template (`{seq}` is 0..count, `{rand:…}` follows the seed).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawGenerate {
    pub count: Spanned<i64>,
    pub request: Spanned<toml::Value>,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawCores {
    #[serde(default, skip_serializing_if = "is_empty")]
    pub contender: Vec<usize>,
    #[serde(default, skip_serializing_if = "is_empty")]
    pub load: Vec<usize>,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawContender {
    pub name: Spanned<String>,
    /// Copy every key this contender does not set from that contender (not `name`, `like`
    /// or `noise_of`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub like: Option<Spanned<String>>,
    /// `{name}` in any of this contender's strings (and its members') is this value.
    #[serde(default, skip_serializing_if = "is_empty")]
    pub vars: BTreeMap<String, Spanned<String>>,
    /// `members = 3`: one `[[contender.member]]` is the template of that many members.
    #[serde(rename = "members", skip_serializing_if = "Option::is_none")]
    pub count: Option<Spanned<i64>>,
    /// Compare this contender against another one than the plan's baseline.
    pub baseline: Option<Spanned<String>>,
    pub command: Option<Spanned<Vec<String>>>,
    #[serde(default, skip_serializing_if = "is_empty")]
    pub env: BTreeMap<String, String>,
    pub dir: Option<String>,
    pub endpoint: Option<Spanned<String>>,
    pub ready: Option<Spanned<RawProbe>>,
    pub ready_when: Option<Spanned<RawProbe>>,
    #[serde(default, skip_serializing_if = "is_empty")]
    pub setup: Vec<Spanned<Vec<String>>>,
    #[serde(default, skip_serializing_if = "is_empty")]
    pub cleanup: Vec<Spanned<Vec<String>>>,
    pub stop_timeout: Option<Spanned<String>>,
    #[serde(rename = "member", default, skip_serializing_if = "is_empty")]
    pub members: Vec<Spanned<RawMember>>,
    /// A second instance of that contender's build, started only to answer the compat
    /// cases: fields on which the two disagree are noise.
    pub noise_of: Option<Spanned<String>>,
    /// For `target = "leader"`: passes on the member that leads (asked of each member).
    pub leader: Option<Spanned<RawProbe>>,
    /// What-if variants run beside it, e.g. `["nodelay"]` (`NAME+nodelay`), or a delay on
    /// one edge between its members, `{ delay = "rpc", by = ["1ms", "2ms"] }`
    /// (`NAME+rpc+0ms`, `NAME+rpc+1ms`, …).
    #[serde(default, skip_serializing_if = "is_empty")]
    pub what_if: Vec<Spanned<toml::Value>>,
    /// Built from source (docs/from-source.md): a repository at a ref, or a folder.
    pub source: Option<Spanned<RawSource>>,
    /// Commands run in the checked-out tree, one after another, to build it.
    #[serde(default, skip_serializing_if = "is_empty")]
    pub build: Vec<Spanned<Vec<String>>>,
    pub build_timeout: Option<Spanned<String>>,
}

/// `source = { git = "…", ref = "…" }`, `{ git = "…", worktree = true }` or `{ path = "…" }`.
/// Every key optional here, so `like` can fill in what a contender leaves out.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawSource {
    pub git: Option<String>,
    pub path: Option<String>,
    #[serde(rename = "ref")]
    pub reference: Option<String>,
    pub worktree: Option<bool>,
    pub incremental: Option<bool>,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawMember {
    /// Required, except in a `members = N` template (`m{index}` by default).
    pub name: Option<Spanned<String>>,
    /// Members started only once these passed their `ready` probe.
    pub after: Option<Spanned<Vec<String>>>,
    pub command: Spanned<Vec<String>>,
    #[serde(default, skip_serializing_if = "is_empty")]
    pub env: BTreeMap<String, String>,
    pub endpoint: Option<Spanned<String>>,
    pub ready: Option<Spanned<RawProbe>>,
    /// A member built from a source of its own (its `{source}`); else the contender's.
    pub source: Option<Spanned<RawSource>>,
    #[serde(default, skip_serializing_if = "is_empty")]
    pub build: Vec<Spanned<Vec<String>>>,
    pub build_timeout: Option<Spanned<String>>,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawProbe {
    pub tcp: Option<String>,
    pub http: Option<String>,
    /// The HTTP method of an `http` probe [default: GET].
    pub method: Option<String>,
    /// A JSON-RPC 2.0 method, called at the member's endpoint (or `endpoint`).
    pub jsonrpc: Option<String>,
    /// Its params (an array or an object).
    pub params: Option<Spanned<toml::Value>>,
    pub status: Option<u16>,
    pub grpc: Option<String>,
    pub body: Option<toml::Value>,
    pub endpoint: Option<String>,
    pub log: Option<Spanned<String>>,
    pub command: Option<Vec<String>>,
    pub timeout: Option<Spanned<String>>,
    pub attempt_timeout: Option<Spanned<String>>,
    pub interval: Option<Spanned<String>>,
    pub tls: Option<Spanned<RawTls>>,
    /// The answer must also have this field (a dotted path into its JSON) …
    pub field: Option<Spanned<String>>,
    /// … equal to this value …
    pub equals: Option<Spanned<toml::Value>>,
    /// … or equal to this other field of the same answer.
    pub equals_field: Option<Spanned<String>>,
    /// The answer's body must match this regular expression.
    pub matches: Option<Spanned<String>>,
}

/// `tls = { cacert = "…", cert = "…", key = "…", insecure = true, servername = "…" }`, the
/// keys of the command-line flags.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawTls {
    pub cacert: Option<String>,
    pub cert: Option<String>,
    pub key: Option<String>,
    #[serde(default, skip_serializing_if = "is_false")]
    pub insecure: bool,
    pub servername: Option<String>,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawScenario {
    pub name: Spanned<String>,
    /// Record a CPU profile of every contender while each point's load runs.
    pub profile: Option<Spanned<bool>>,
    pub grpc: Option<Spanned<String>>,
    pub http: Option<Spanned<String>>,
    pub jsonrpc: Option<Spanned<String>>,
    pub body: Option<Spanned<toml::Value>>,
    pub params: Option<Spanned<toml::Value>>,
    pub path: Option<Spanned<String>>,
    #[serde(default, skip_serializing_if = "is_empty")]
    pub headers: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "is_false")]
    pub h2: bool,
    pub stream_interval: Option<Spanned<String>>,
    pub replies: Option<Spanned<i64>>,
    pub tls: Option<Spanned<RawTls>>,
    pub clients: Option<Spanned<OneOrMany<i64>>>,
    #[serde(default, skip_serializing_if = "is_empty")]
    pub matrix: BTreeMap<String, Spanned<Vec<toml::Value>>>,
    pub target: Option<Spanned<OneOrMany<String>>>,
    pub duration: Option<Spanned<String>>,
    pub requests: Option<Spanned<i64>>,
    pub rate: Option<Spanned<OneOrMany<f64>>>,
    pub warmup: Option<Spanned<String>>,
    pub timeout: Option<Spanned<String>>,
    #[serde(default, skip_serializing_if = "is_empty")]
    pub setup: Vec<Spanned<RawStep>>,
    /// Search for the highest rate each contender sustains under a latency goal.
    pub capacity: Option<Spanned<RawCapacity>>,
    /// A ramp: stages run one after another, each with its own rate or clients.
    #[serde(default, skip_serializing_if = "is_empty")]
    pub stages: Vec<Spanned<RawStage>>,
}

/// `capacity = { p99 = "10ms", max_rate = 200000 }`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawCapacity {
    pub p50: Option<Spanned<String>>,
    pub p90: Option<Spanned<String>>,
    pub p99: Option<Spanned<String>>,
    pub p99_9: Option<Spanned<String>>,
    pub max_rate: Spanned<f64>,
    pub min_rate: Option<Spanned<f64>>,
    /// How long each step of the search measures.
    pub step: Option<Spanned<String>>,
    /// Load sent before each step is measured.
    pub step_warmup: Option<Spanned<String>>,
    /// Stop once the highest passing and lowest failing rates are this close.
    pub precision: Option<Spanned<String>>,
    pub max_steps: Option<Spanned<i64>>,
}

/// `{ rate = 1000, duration = "10s" }` or `{ clients = 64, duration = "30s" }`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawStage {
    pub rate: Option<Spanned<f64>>,
    pub clients: Option<Spanned<i64>>,
    pub duration: Spanned<String>,
}

/// A call made before a scenario point is measured (e.g. write the key a read scenario reads).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawStep {
    pub grpc: Option<Spanned<String>>,
    pub http: Option<Spanned<String>>,
    pub jsonrpc: Option<Spanned<String>>,
    pub body: Option<Spanned<toml::Value>>,
    pub params: Option<Spanned<toml::Value>>,
    pub path: Option<Spanned<String>>,
    #[serde(default, skip_serializing_if = "is_empty")]
    pub headers: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "is_false")]
    pub h2: bool,
    pub stream_interval: Option<Spanned<String>>,
    pub replies: Option<Spanned<i64>>,
    pub requests: Option<Spanned<i64>>,
}

#[derive(Debug, Deserialize, Serialize, Clone)]
#[serde(untagged)]
pub enum OneOrMany<T> {
    One(T),
    Many(Vec<T>),
}

impl<T: Clone> OneOrMany<T> {
    pub fn to_vec(&self) -> Vec<T> {
        match self {
            OneOrMany::One(t) => vec![t.clone()],
            OneOrMany::Many(v) => v.clone(),
        }
    }
}

/// For `skip_serializing_if`: a list or table the plan left out is not shown either.
fn is_empty<T: IsEmpty>(v: &T) -> bool {
    v.is_empty()
}

fn is_false(b: &bool) -> bool {
    !*b
}

trait IsEmpty {
    fn is_empty(&self) -> bool;
}

impl<T> IsEmpty for Vec<T> {
    fn is_empty(&self) -> bool {
        Vec::is_empty(self)
    }
}

impl<K, V> IsEmpty for BTreeMap<K, V> {
    fn is_empty(&self) -> bool {
        BTreeMap::is_empty(self)
    }
}
