//! From a plan's call and a contender's endpoints to a load run: builds the protocol client
//! (spread round-robin over the endpoints), runs the load engine, and runs setup steps.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;

use crate::load::{self, Flow, LoadConfig, LoadError, LoadResult, Pacing, Progress, Stop};
use crate::plan::{Call, Step};
use crate::protocol::grpc::{self, Grpc};
use crate::protocol::http1::{Http1, Http1Request};
use crate::protocol::http2::Http2;
use crate::protocol::jsonrpc::JsonRpc;
use crate::protocol::roundrobin::RoundRobin;
use crate::protocol::target::Endpoint;
use crate::protocol::template::Template;
use crate::protocol::Protocol;

/// `.proto` files for gRPC calls.
#[derive(Debug, Clone, Default)]
pub struct Protos {
    pub files: Vec<PathBuf>,
    pub includes: Vec<PathBuf>,
}

/// A protocol client ready to be driven.
pub enum Driver {
    Http1(RoundRobin<Http1>),
    Http2(RoundRobin<Http2>),
    Grpc(RoundRobin<Grpc>),
    JsonRpc(RoundRobin<JsonRpc>),
}

impl Driver {
    /// Builds the client for `call` (matrix variables already filled in) against every
    /// endpoint. Request templates and gRPC messages are checked here, before any load.
    pub fn build(
        call: &Call,
        endpoints: &[String],
        protos: &Protos,
        seed: u64,
        keep_body: bool,
    ) -> anyhow::Result<Driver> {
        let eps = endpoints
            .iter()
            .map(|e| Endpoint::parse(e).with_context(|| format!("endpoint `{e}`")))
            .collect::<anyhow::Result<Vec<_>>>()?;
        anyhow::ensure!(!eps.is_empty(), "no endpoint to send load to");
        Ok(match call {
            Call::Grpc { method, body } => {
                let m = grpc::load_method(&protos.files, &protos.includes, method)?;
                let t = Template::parse(body).context("gRPC request body")?;
                let parts = eps
                    .into_iter()
                    .map(|ep| Grpc::new(ep, m.clone(), t.clone(), seed, keep_body))
                    .collect::<Result<Vec<_>, _>>()?;
                Driver::Grpc(RoundRobin::new(parts))
            }
            Call::Http {
                method,
                path,
                headers,
                body,
                h2,
            } => {
                let request = || -> anyhow::Result<Http1Request> {
                    Ok(Http1Request {
                        method: method.clone(),
                        path: Template::parse(path).context("path")?,
                        headers: headers.clone(),
                        body: body
                            .as_deref()
                            .map(Template::parse)
                            .transpose()
                            .context("body")?,
                    })
                };
                // The endpoint's path is only shown in descriptions; the request carries its own.
                let eps: Vec<Endpoint> = eps
                    .into_iter()
                    .map(|mut ep| {
                        ep.path = path.clone();
                        ep
                    })
                    .collect();
                if *h2 {
                    let parts = eps
                        .into_iter()
                        .map(|ep| {
                            Http2::new(ep, request()?, seed, keep_body).map_err(anyhow::Error::msg)
                        })
                        .collect::<anyhow::Result<Vec<_>>>()?;
                    Driver::Http2(RoundRobin::new(parts))
                } else {
                    let parts = eps
                        .into_iter()
                        .map(|ep| Ok(Http1::new(ep, request()?, seed, keep_body)))
                        .collect::<anyhow::Result<Vec<_>>>()?;
                    Driver::Http1(RoundRobin::new(parts))
                }
            }
            Call::JsonRpc {
                method,
                path,
                params,
                headers,
            } => {
                let parts = eps
                    .into_iter()
                    .map(|mut ep| {
                        ep.path = path.clone();
                        JsonRpc::new(ep, method, params, headers.clone(), seed, keep_body)
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                Driver::JsonRpc(RoundRobin::new(parts))
            }
        })
    }

    /// A gRPC client that sends `b64`'s bytes as the request message, unchecked.
    pub fn build_raw_grpc(
        method: &str,
        b64: &str,
        endpoint: &str,
        protos: &Protos,
    ) -> anyhow::Result<Driver> {
        use base64::Engine as _;
        let m = grpc::load_method(&protos.files, &protos.includes, method)?;
        let bytes = base64::engine::general_purpose::STANDARD.decode(b64.trim())?;
        let ep = Endpoint::parse(endpoint)?;
        Ok(Driver::Grpc(RoundRobin::new(vec![Grpc::raw(
            ep, m, &bytes, true,
        )])))
    }

    pub fn run(
        self,
        cfg: &LoadConfig,
        progress: &mut dyn FnMut(Progress) -> Flow,
    ) -> Result<LoadResult, LoadError> {
        fn go<P: Protocol>(
            p: P,
            cfg: &LoadConfig,
            progress: &mut dyn FnMut(Progress) -> Flow,
        ) -> Result<LoadResult, LoadError> {
            load::run(Arc::new(p), cfg, progress)
        }
        match self {
            Driver::Http1(p) => go(p, cfg, progress),
            Driver::Http2(p) => go(p, cfg, progress),
            Driver::Grpc(p) => go(p, cfg, progress),
            Driver::JsonRpc(p) => go(p, cfg, progress),
        }
    }
}

/// Runs a setup step one call at a time against the first endpoint; every call must succeed.
pub fn run_step(
    step: &Step,
    vars: &[(String, String)],
    endpoint: &str,
    protos: &Protos,
    seed: u64,
    timeout: Duration,
    cpus: &[usize],
) -> anyhow::Result<()> {
    let call = step.call.with_vars(vars);
    let what = call.describe();
    let driver = Driver::build(&call, &[endpoint.to_string()], protos, seed, false)
        .with_context(|| format!("setup step `{what}`"))?;
    let threads = 1;
    let cfg = LoadConfig::new(
        Pacing::Closed,
        Stop::Count(step.requests),
        1,
        threads,
        Duration::ZERO,
        timeout,
    )?
    .pin_to(cpus.iter().take(1).copied().collect());
    let r = driver
        .run(&cfg, &mut |_| Flow::Continue)
        .with_context(|| format!("setup step `{what}`"))?;
    if r.failures > 0 || r.successes < step.requests {
        let first = r
            .outcomes
            .iter()
            .find(|o| !o.success)
            .map(|o| {
                format!(
                    "{}{}",
                    o.label,
                    o.example
                        .as_deref()
                        .map(|m| format!(": {m}"))
                        .unwrap_or_default()
                )
            })
            .unwrap_or_else(|| "stopped early".into());
        anyhow::bail!(
            "setup step `{what}`: {} of {} calls failed (first failure: {first})",
            step.requests - r.successes,
            step.requests
        );
    }
    Ok(())
}
