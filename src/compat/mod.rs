//! Do the contenders give the same answers? Every compat case goes to every contender
//! ([`ask`]); the answers are kept in the results and compared afterwards ([`analyze`]):
//! outcome first, then bytes, then a field-level diff of a canonical JSON form, with noise
//! (fields on which two instances of the baseline already disagree) set apart.

pub mod analyze;
pub mod diff;
pub mod reference;

use std::time::Duration;

use base64::Engine as _;

use crate::plan::{Call, CompatSet};
use crate::protocol::grpc;
use crate::protocol::{CallError, Class, Protocol, Reply};
use crate::results::CompatAnswer;
use crate::runner::drive::{Driver, Protos};

pub use analyze::{analyze, CompatReport};

/// The call for one case: the request replaces `{case}` where the call has it, else it is
/// the body (gRPC, HTTP) or the params (JSON-RPC).
pub fn call_for(call: &Call, request: &str) -> Call {
    if call.mentions("{case}") {
        return call.with_vars(&[("case".to_string(), request.to_string())]);
    }
    let mut c = call.clone();
    match &mut c {
        Call::Grpc { body, .. } => *body = request.to_string(),
        Call::Http { body, .. } => *body = Some(request.to_string()),
        Call::JsonRpc { params, .. } => *params = request.to_string(),
    }
    c
}

/// Sends case `index` of `set` to `endpoint` once and records the answer.
pub fn ask(
    set: &CompatSet,
    index: usize,
    endpoint: &str,
    protos: &Protos,
    timeout: Duration,
    rt: &tokio::runtime::Runtime,
) -> CompatAnswer {
    let request = &set.cases[index].request;
    let built = match (request.strip_prefix("raw:"), &set.call) {
        (Some(b64), Call::Grpc { method, .. }) => {
            Driver::build_raw_grpc(method, b64, endpoint, protos)
        }
        _ => Driver::build(
            &call_for(&set.call, request),
            &[endpoint.to_string()],
            protos,
            0,
            true,
        ),
    };
    record(set, index, built, timeout, rt)
}

/// Sends case `index` of `set` to the set's reference server.
pub fn ask_reference(
    set: &CompatSet,
    index: usize,
    protos: &Protos,
    timeout: Duration,
    rt: &tokio::runtime::Runtime,
) -> Option<CompatAnswer> {
    let r = set.reference.as_ref()?;
    let call = r
        .call
        .with_vars(&[("case".to_string(), set.cases[index].request.clone())]);
    let built = Driver::build(&call, std::slice::from_ref(&r.endpoint), protos, 0, true);
    Some(record(set, index, built, timeout, rt))
}

/// Makes the one call of a case with a client built for it, and records the answer.
fn record(
    set: &CompatSet,
    index: usize,
    built: anyhow::Result<Driver>,
    timeout: Duration,
    rt: &tokio::runtime::Runtime,
) -> CompatAnswer {
    let mut answer = CompatAnswer {
        set: set.name.clone(),
        case: index,
        outcome: String::new(),
        success: false,
        detail: None,
        messages: Vec::new(),
        raw: Vec::new(),
    };
    let driver = match built {
        Ok(d) => d,
        Err(e) => {
            answer.outcome = "not sent".into();
            answer.detail = Some(format!("{e:#}"));
            return answer;
        }
    };
    let reply = rt.block_on(async {
        tokio::time::timeout(timeout, driver.once())
            .await
            .unwrap_or(Err(CallError::Timeout(timeout)))
    });
    match reply {
        Ok(r) => fill(&mut answer, r, &driver),
        Err(e) => {
            answer.outcome = if matches!(e, CallError::Timeout(_)) {
                "timeout".into()
            } else {
                e.class().to_string()
            };
            answer.detail = Some(e.to_string());
        }
    }
    answer
}

fn fill(answer: &mut CompatAnswer, r: Reply, driver: &Driver) {
    answer.outcome = r.class.to_string();
    answer.success = r.class.is_success();
    answer.detail = r.detail.clone();
    let b64 = base64::engine::general_purpose::STANDARD;
    for m in r.body.unwrap_or_default() {
        answer.raw.push(b64.encode(&m));
        let json = match (driver, r.class) {
            (Driver::Grpc(g), _) => grpc::decode_json(&g.first().method().output(), &m)
                .unwrap_or_else(|e| serde_json::Value::String(format!("<undecodable: {e}>"))),
            (_, Class::Http(_) | Class::JsonRpcResult | Class::JsonRpcError(_)) => {
                serde_json::from_slice(&m).unwrap_or_else(|_| {
                    serde_json::Value::String(String::from_utf8_lossy(&m).into_owned())
                })
            }
            _ => serde_json::Value::String(String::from_utf8_lossy(&m).into_owned()),
        };
        answer.messages.push(json);
    }
}

/// Runs a set's setup steps, then asks every case; answers in case order.
pub fn run_set(
    set: &CompatSet,
    endpoint: &str,
    protos: &Protos,
    timeout: Duration,
    rt: &tokio::runtime::Runtime,
) -> Result<Vec<CompatAnswer>, String> {
    for step in &set.setup {
        crate::runner::drive::run_step(step, &[], endpoint, protos, 0, timeout, &[])
            .map_err(|e| format!("compat `{}`: {e:#}", set.name))?;
    }
    Ok((0..set.cases.len())
        .map(|i| ask(set, i, endpoint, protos, timeout, rt))
        .collect())
}

/// What `bakeoff diff` found: the analysis, the sets, and every endpoint's answers.
pub struct DiffOutcome {
    pub report: CompatReport,
    pub sets: Vec<crate::results::CompatSetInfo>,
    pub answers: Vec<(String, Vec<CompatAnswer>)>,
}

/// Asks servers that are already running every case of `file`; the first endpoint is the
/// baseline, `noise` are second instances of its build.
pub fn diff_endpoints(
    file: &crate::plan::CasesFile,
    endpoints: &[String],
    noise: &[String],
    timeout: Duration,
) -> anyhow::Result<DiffOutcome> {
    use anyhow::Context as _;
    let protos = Protos {
        files: file.protos.clone(),
        includes: file.includes.clone(),
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let mut answers = Vec::new();
    for ep in endpoints.iter().chain(noise) {
        crate::protocol::target::Endpoint::parse(ep).with_context(|| format!("endpoint `{ep}`"))?;
        let mut all = Vec::new();
        for set in &file.compat {
            all.extend(run_set(set, ep, &protos, timeout, &rt).map_err(anyhow::Error::msg)?);
        }
        answers.push((ep.clone(), all));
    }
    let reference: Vec<CompatAnswer> = file
        .compat
        .iter()
        .flat_map(|set| {
            (0..set.cases.len())
                .filter_map(|i| ask_reference(set, i, &protos, timeout, &rt))
                .collect::<Vec<_>>()
        })
        .collect();
    let sets: Vec<_> = file
        .compat
        .iter()
        .map(crate::results::CompatSetInfo::from)
        .collect();
    let who = analyze::Who {
        baseline: &endpoints[0],
        noise: noise.iter().map(String::as_str).collect(),
        others: endpoints[1..].iter().map(String::as_str).collect(),
    };
    let refs: Vec<(&str, &[CompatAnswer])> = answers
        .iter()
        .map(|(e, a)| (e.as_str(), a.as_slice()))
        .collect();
    let report = analyze(&sets, &who, &refs, &reference);
    Ok(DiffOutcome {
        report,
        sets,
        answers,
    })
}

impl Driver {
    /// One call on a fresh connection to the first endpoint.
    pub async fn once(&self) -> Result<Reply, CallError> {
        async fn go<P: Protocol>(p: &P) -> Result<Reply, CallError> {
            let mut c = p.connect().await?;
            p.call(&mut c, 0).await
        }
        match self {
            Driver::Http1(p) => go(p).await,
            Driver::Http2(p) => go(p).await,
            Driver::Grpc(p) => go(p).await,
            Driver::JsonRpc(p) => go(p).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_fills_case_or_becomes_the_body() {
        let get = Call::Http {
            method: "GET".into(),
            path: "/block/{case}".into(),
            headers: vec![],
            body: None,
            h2: false,
        };
        assert!(
            matches!(call_for(&get, "42"), Call::Http { path, body: None, .. } if path == "/block/42")
        );
        let post = Call::Http {
            method: "POST".into(),
            path: "/v3/kv/range".into(),
            headers: vec![],
            body: None,
            h2: false,
        };
        assert!(matches!(call_for(&post, "{}"), Call::Http { body: Some(b), .. } if b == "{}"));
        let rpc = Call::JsonRpc {
            method: "getblock".into(),
            path: "/".into(),
            params: "[]".into(),
            headers: vec![],
        };
        assert!(matches!(call_for(&rpc, "[7]"), Call::JsonRpc { params, .. } if params == "[7]"));
    }
}
