//! What a probe checks (a port, an answer, a log line, a command) and what it expects of the answer.

use super::*;

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
