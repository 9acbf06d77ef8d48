//! Do the contenders give the same answers? Every compat case goes to every contender
//! ([`ask`]); the answers are kept in the results and compared afterwards ([`analyze`]):
//! outcome first, then bytes, then a field-level diff of a canonical JSON form, with noise
//! (fields on which two instances of the baseline already disagree) set apart.

pub mod analyze;
pub mod diff;
pub mod reference;

use std::path::Path;
use std::time::Duration;

use base64::Engine as _;

use crate::client::{Client, Descriptors, Options};
use crate::plan::{Call, CompatSet};
use crate::protocol::target::Endpoint;
use crate::protocol::tls::TlsOptions;
use crate::protocol::CallError;
use crate::results::CompatAnswer;

pub use analyze::{analyze, CompatReport};

/// Compat clients keep answers and send the case's request exactly (no `{rand}` seed).
fn keep(tls: TlsOptions) -> Options {
    Options {
        seed: 0,
        keep_body: true,
        tls,
    }
}

/// Sends case `index` of `set` to `endpoint` once and records the answer. `state` is the
/// contender's state folder (for `{state}` in the set's TLS settings).
pub fn ask(
    set: &CompatSet,
    index: usize,
    endpoint: &Endpoint,
    state: Option<&Path>,
    protos: &Descriptors,
    timeout: Duration,
    rt: &tokio::runtime::Runtime,
) -> CompatAnswer {
    let request = &set.cases[index].request;
    let built = set
        .tls
        .resolve(state)
        .map_err(anyhow::Error::msg)
        .and_then(|tls| match (request.strip_prefix("raw:"), &set.call) {
            (Some(b64), Call::Grpc { method, .. }) => base64::engine::general_purpose::STANDARD
                .decode(b64.trim())
                .map_err(anyhow::Error::from)
                .and_then(|bytes| Client::raw_grpc(method, &bytes, endpoint, protos, &tls)),
            _ => Client::build(
                &set.call.for_case(request),
                std::slice::from_ref(endpoint),
                protos,
                keep(tls),
            ),
        });
    record(set, index, built, timeout, rt)
}

/// Sends case `index` of `set` to the set's reference server.
pub fn ask_reference(
    set: &CompatSet,
    index: usize,
    protos: &Descriptors,
    timeout: Duration,
    rt: &tokio::runtime::Runtime,
) -> Option<CompatAnswer> {
    let r = set.reference.as_ref()?;
    Some(ask_reference_at(
        set,
        index,
        &r.endpoint,
        None,
        protos,
        timeout,
        rt,
    ))
}

/// As [`ask_reference`], at `endpoint` (a member reference's, its placeholders filled in),
/// with `{state}` in its TLS settings the contender's.
pub fn ask_reference_at(
    set: &CompatSet,
    index: usize,
    endpoint: &str,
    state: Option<&std::path::Path>,
    protos: &Descriptors,
    timeout: Duration,
    rt: &tokio::runtime::Runtime,
) -> CompatAnswer {
    let r = set.reference.as_ref().expect("a set with a reference");
    let case = &set.cases[index].request;
    // Fields of the case first (`{case.height|string}`), then the whole case (`{case}`).
    let failed = std::cell::RefCell::new(None);
    let call = r
        .call
        .map_texts(&|t: &str| {
            reference::fill_case_fields(t, case).unwrap_or_else(|e| {
                failed.borrow_mut().get_or_insert(e);
                t.to_string()
            })
        })
        .with_vars(&[("case".to_string(), case.clone())]);
    let built = match failed.into_inner() {
        Some(e) => Err(anyhow::anyhow!("the reference's request: {e}")),
        None => Ok(()),
    }
    .and_then(|()| crate::client::endpoints(&[endpoint.to_string()]))
    .and_then(|eps| {
        let tls = r.tls.resolve(state).map_err(anyhow::Error::msg)?;
        Client::build(&call, &eps, protos, keep(tls))
    });
    record(set, index, built, timeout, rt)
}

/// Makes the one call of a case with a client built for it, and records the answer.
fn record(
    set: &CompatSet,
    index: usize,
    built: anyhow::Result<Client>,
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
        trailers: Default::default(),
    };
    let client = match built {
        Ok(c) => c,
        Err(e) => {
            answer.outcome = "not sent".into();
            answer.detail = Some(format!("{e:#}"));
            return answer;
        }
    };
    match rt.block_on(client.once(timeout)) {
        Ok(r) => {
            answer.outcome = r.class.to_string();
            answer.success = r.class.is_success();
            answer.detail = r.detail.clone();
            answer.messages = client.messages(&r);
            let b64 = base64::engine::general_purpose::STANDARD;
            answer.raw = r.body.iter().flatten().map(|m| b64.encode(m)).collect();
            answer.trailers = r.trailers.iter().cloned().collect();
        }
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

/// Runs a set's setup steps, then asks every case; answers in case order.
pub fn run_set(
    set: &CompatSet,
    endpoint: &Endpoint,
    state: Option<&Path>,
    protos: &Descriptors,
    timeout: Duration,
    rt: &tokio::runtime::Runtime,
) -> Result<Vec<CompatAnswer>, String> {
    let tls = set
        .tls
        .resolve(state)
        .map_err(|e| format!("compat `{}`: {e}", set.name))?;
    for step in &set.setup {
        let opts = Options {
            tls: tls.clone(),
            ..Options::default()
        };
        crate::client::run_step(step, &[], endpoint, protos, opts, timeout, &[])
            .map_err(|e| format!("compat `{}`: {e:#}", set.name))?;
    }
    Ok((0..set.cases.len())
        .map(|i| ask(set, i, endpoint, state, protos, timeout, rt))
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
    let protos = Descriptors::within(file.protos.clone(), file.includes.clone(), timeout);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let mut answers = Vec::new();
    let urls: Vec<String> = endpoints.iter().chain(noise).cloned().collect();
    for (url, ep) in urls.iter().zip(crate::client::endpoints(&urls)?) {
        let mut all = Vec::new();
        for set in &file.compat {
            all.extend(run_set(set, &ep, None, &protos, timeout, &rt).map_err(anyhow::Error::msg)?);
        }
        // A server that could not be reached answered nothing: that is not a difference.
        if !all.is_empty() && all.iter().all(|a| a.outcome == "connect error") {
            let why = all[0].detail.clone().unwrap_or_default();
            anyhow::bail!("`{url}` cannot be reached, so it answered no case: {why}");
        }
        answers.push((url.clone(), all));
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
            matches!(get.for_case("42"), Call::Http { path, body: None, .. } if path == "/block/42")
        );
        let post = Call::Http {
            method: "POST".into(),
            path: "/v3/kv/range".into(),
            headers: vec![],
            body: None,
            h2: false,
        };
        assert!(matches!(post.for_case("{}"), Call::Http { body: Some(b), .. } if b == "{}"));
        let rpc = Call::JsonRpc {
            method: "getblock".into(),
            path: "/".into(),
            params: "[]".into(),
            headers: vec![],
        };
        assert!(matches!(rpc.for_case("[7]"), Call::JsonRpc { params, .. } if params == "[7]"));
    }
}
