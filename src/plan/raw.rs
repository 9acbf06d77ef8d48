//! The plan file as written: serde types that mirror the TOML, with spans kept on every value
//! a later check may need to point at. Unknown keys are rejected here (`deny_unknown_fields`);
//! everything else is checked in [`super::check`].

use std::collections::BTreeMap;

use serde::Deserialize;
use toml::Spanned;

#[derive(Debug, Deserialize)]
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
    #[serde(default)]
    pub protos: Vec<Spanned<String>>,
    /// Import roots for the `.proto` files [default: each file's folder].
    #[serde(default)]
    pub proto_include: Vec<String>,
    /// Each member log's size limit, e.g. `"16MiB"`.
    pub log_limit: Option<Spanned<String>>,
    #[serde(rename = "contender", default)]
    pub contenders: Vec<Spanned<RawContender>>,
    #[serde(rename = "scenario", default)]
    pub scenarios: Vec<Spanned<RawScenario>>,
    #[serde(rename = "compat", default)]
    pub compat: Vec<Spanned<RawCompat>>,
}

/// `[paired]`: how paired points are cut into rounds.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawPaired {
    pub slice: Option<Spanned<String>>,
    /// `"auto"` or a number.
    pub rounds: Option<Spanned<toml::Value>>,
    pub max_rounds: Option<Spanned<i64>>,
    pub precision: Option<Spanned<String>>,
    pub noise: Option<Spanned<String>>,
}

/// A file of compatibility cases for `bakeoff diff --cases FILE`: a plan's `[[compat]]`
/// sections with the `.proto` files they need, and nothing else.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawCasesFile {
    pub seed: Option<u64>,
    #[serde(default)]
    pub protos: Vec<Spanned<String>>,
    #[serde(default)]
    pub proto_include: Vec<String>,
    #[serde(rename = "compat", default)]
    pub compat: Vec<Spanned<RawCompat>>,
}

/// `[[compat]]`: the same call made with many requests, answers compared across contenders.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawCompat {
    pub name: Option<Spanned<String>>,
    pub grpc: Option<Spanned<String>>,
    pub http: Option<Spanned<String>>,
    pub jsonrpc: Option<Spanned<String>>,
    pub path: Option<Spanned<String>>,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    #[serde(default)]
    pub h2: bool,
    pub stream_interval: Option<Spanned<String>>,
    pub replies: Option<Spanned<i64>>,
    pub tls: Option<Spanned<RawTls>>,
    /// A JSONL file of requests, relative to the plan.
    pub cases: Option<Spanned<String>>,
    /// Requests written in the plan (strings, or tables turned into JSON).
    #[serde(default)]
    pub requests: Vec<Spanned<toml::Value>>,
    pub generate: Option<Spanned<RawGenerate>>,
    pub mode: Option<Spanned<String>>,
    #[serde(default)]
    pub ignore: Vec<String>,
    #[serde(default)]
    pub unordered: Vec<String>,
    #[serde(default)]
    pub byte_order: Vec<String>,
    #[serde(default)]
    pub setup: Vec<Spanned<RawStep>>,
    pub reference: Option<Spanned<RawReference>>,
}

/// A server bakeoff does not start (it may speak another protocol) whose answers some
/// fields are checked against.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawReference {
    pub endpoint: Spanned<String>,
    pub grpc: Option<Spanned<String>>,
    pub http: Option<Spanned<String>>,
    pub jsonrpc: Option<Spanned<String>>,
    pub path: Option<Spanned<String>>,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    pub tls: Option<Spanned<RawTls>>,
    /// The request, with `{case}` for the case's request; the case's request when absent.
    pub request: Option<Spanned<toml::Value>>,
    pub fields: Vec<Spanned<RawFieldMap>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawFieldMap {
    pub ours: String,
    pub theirs: String,
    #[serde(default)]
    pub transform: Vec<Spanned<String>>,
    #[serde(default)]
    pub ours_transform: Vec<Spanned<String>>,
}

/// `count` requests from one template (`{seq}` is 0..count, `{rand:…}` follows the seed).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawGenerate {
    pub count: Spanned<i64>,
    pub request: Spanned<toml::Value>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawCores {
    #[serde(default)]
    pub contender: Vec<usize>,
    #[serde(default)]
    pub load: Vec<usize>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawContender {
    pub name: Spanned<String>,
    /// Compare this contender against another one than the plan's baseline.
    pub baseline: Option<Spanned<String>>,
    pub command: Option<Spanned<Vec<String>>>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    pub dir: Option<String>,
    pub endpoint: Option<Spanned<String>>,
    pub ready: Option<Spanned<RawProbe>>,
    pub ready_when: Option<Spanned<RawProbe>>,
    #[serde(default)]
    pub setup: Vec<Spanned<Vec<String>>>,
    #[serde(default)]
    pub cleanup: Vec<Spanned<Vec<String>>>,
    pub stop_timeout: Option<Spanned<String>>,
    #[serde(rename = "member", default)]
    pub members: Vec<Spanned<RawMember>>,
    /// A second instance of that contender's build, started only to answer the compat
    /// cases: fields on which the two disagree are noise.
    pub noise_of: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawMember {
    pub name: Spanned<String>,
    pub command: Spanned<Vec<String>>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    pub endpoint: Option<Spanned<String>>,
    pub ready: Option<Spanned<RawProbe>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawProbe {
    pub tcp: Option<String>,
    pub http: Option<String>,
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
}

/// `tls = { cacert = "…", cert = "…", key = "…", insecure = true, servername = "…" }`, the
/// keys of the command-line flags.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawTls {
    pub cacert: Option<String>,
    pub cert: Option<String>,
    pub key: Option<String>,
    #[serde(default)]
    pub insecure: bool,
    pub servername: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawScenario {
    pub name: Spanned<String>,
    pub grpc: Option<Spanned<String>>,
    pub http: Option<Spanned<String>>,
    pub jsonrpc: Option<Spanned<String>>,
    pub body: Option<Spanned<toml::Value>>,
    pub params: Option<Spanned<toml::Value>>,
    pub path: Option<Spanned<String>>,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    #[serde(default)]
    pub h2: bool,
    pub stream_interval: Option<Spanned<String>>,
    pub replies: Option<Spanned<i64>>,
    pub tls: Option<Spanned<RawTls>>,
    pub clients: Option<Spanned<OneOrMany<i64>>>,
    #[serde(default)]
    pub matrix: BTreeMap<String, Spanned<Vec<toml::Value>>>,
    pub target: Option<Spanned<OneOrMany<String>>>,
    pub duration: Option<Spanned<String>>,
    pub requests: Option<Spanned<i64>>,
    pub rate: Option<Spanned<OneOrMany<f64>>>,
    pub warmup: Option<Spanned<String>>,
    pub timeout: Option<Spanned<String>>,
    #[serde(default)]
    pub setup: Vec<Spanned<RawStep>>,
}

/// A call made before a scenario point is measured (e.g. write the key a read scenario reads).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawStep {
    pub grpc: Option<Spanned<String>>,
    pub http: Option<Spanned<String>>,
    pub jsonrpc: Option<Spanned<String>>,
    pub body: Option<Spanned<toml::Value>>,
    pub params: Option<Spanned<toml::Value>>,
    pub path: Option<Spanned<String>>,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    #[serde(default)]
    pub h2: bool,
    pub stream_interval: Option<Spanned<String>>,
    pub replies: Option<Spanned<i64>>,
    pub requests: Option<Spanned<i64>>,
}

#[derive(Debug, Deserialize, Clone)]
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
