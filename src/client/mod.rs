//! The client factory: the one place that turns a checked call (a plan's [`Call`]) and its
//! endpoints into a ready protocol client, and the only place that matches on the kind of
//! call. The runner, compat, readiness probes and the CLI all get their clients here, and
//! `.proto` files are compiled once per plan ([`Descriptors`]), not once per client.

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
use crate::protocol::tls::TlsOptions;
use crate::protocol::{CallError, Class, Protocol, Reply};

mod descriptors;
pub use descriptors::{Descriptors, REFLECTION_TIMEOUT};

/// How a client treats what it sends and receives.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Seed for `{rand:…}` placeholders.
    pub seed: u64,
    /// Keep answers' bodies (for printing and compat); load runs drop them.
    pub keep_body: bool,
    /// For `https://` endpoints (refused with plaintext ones).
    pub tls: TlsOptions,
}

/// Headers (and gRPC metadata) as they are sent: `{env:NAME}` in a value is filled in from
/// the environment here, so a token never has to be written into a plan, and the plan (and
/// everything bakeoff writes) keeps the placeholder. Names and values that would let a
/// request carry more than was written (CR, LF, NUL) are refused, naming the header only.
fn checked_headers(headers: &[(String, String)]) -> anyhow::Result<Vec<(String, String)>> {
    headers
        .iter()
        .map(|(k, v)| {
            http::HeaderName::from_bytes(k.as_bytes())
                .map_err(|_| anyhow::anyhow!("header `{k}`: not a valid header name"))?;
            let value =
                crate::plan::fill_env(v).map_err(|e| anyhow::anyhow!("header `{k}`: {e}"))?;
            http::HeaderValue::from_str(&value).map_err(|_| {
                anyhow::anyhow!(
                    "header `{k}`: its value has a character a header cannot carry \
                     (CR, LF or another control character)"
                )
            })?;
            Ok((k.clone(), value))
        })
        .collect()
}

/// A request target must not carry spaces or control characters: sent raw, they would
/// split the request line.
fn check_target(path: &str) -> anyhow::Result<()> {
    if path.chars().any(|c| c.is_whitespace() || c.is_control()) {
        anyhow::bail!(
            "path `{}`: a request target cannot contain spaces or control characters \
             (write them percent-encoded, e.g. %20)",
            path.escape_debug()
        );
    }
    Ok(())
}

/// The endpoints with their TLS settings attached: a connector per endpoint offering `alpn`,
/// made now so a bad certificate file is an error before anything is sent.
fn with_tls(
    endpoints: &[Endpoint],
    tls: &TlsOptions,
    alpn: &[&[u8]],
) -> anyhow::Result<Vec<Endpoint>> {
    endpoints
        .iter()
        .map(|ep| {
            let mut ep = ep.clone();
            if ep.secure {
                ep.tls = Some(tls.connector(ep.host(), alpn).map_err(anyhow::Error::msg)?);
            } else if tls.is_set() {
                anyhow::bail!(
                    "TLS options are given, but `{}` is a plaintext URL; use https://",
                    ep.url()
                );
            }
            Ok(ep)
        })
        .collect()
}

/// Parses (and resolves) endpoint URLs once, naming the one that is wrong.
pub fn endpoints(urls: &[String]) -> anyhow::Result<Vec<Endpoint>> {
    urls.iter()
        .map(|e| Endpoint::parse(e).with_context(|| format!("endpoint `{}`", Endpoint::redact(e))))
        .collect()
}

/// A protocol client ready to be driven: spread round-robin over its endpoints.
pub enum Client {
    Http1(RoundRobin<Http1>),
    Http2(RoundRobin<Http2>),
    Grpc(RoundRobin<Grpc>),
    JsonRpc(RoundRobin<JsonRpc>),
}

impl Client {
    /// The client for `call` (matrix variables already filled in) against every endpoint.
    /// Request templates and gRPC messages are checked here, before anything is sent.
    pub fn build(
        call: &Call,
        endpoints: &[Endpoint],
        protos: &Descriptors,
        opts: Options,
    ) -> anyhow::Result<Client> {
        anyhow::ensure!(!endpoints.is_empty(), "no endpoint to send load to");
        let Options {
            seed,
            keep_body,
            tls,
        } = opts;
        let alpn: &[&[u8]] = match call {
            Call::Grpc { .. } | Call::Http { h2: true, .. } => &[b"h2"],
            _ => &[b"http/1.1"],
        };
        let endpoints = &with_tls(endpoints, &tls, alpn)?;
        // The endpoint's path is only shown in descriptions; HTTP requests carry their own.
        let at_path = |path: &str| -> Vec<Endpoint> {
            endpoints
                .iter()
                .map(|ep| Endpoint {
                    path: path.to_string(),
                    ..ep.clone()
                })
                .collect()
        };
        Ok(match call {
            Call::Grpc {
                method,
                body,
                shape,
            } => {
                let shape = grpc::CallShape {
                    metadata: checked_headers(&shape.metadata)?,
                    ..shape.clone()
                };
                let m = protos.method(method, &endpoints[0])?;
                let parts = endpoints
                    .iter()
                    .map(|ep| {
                        Grpc::new(ep.clone(), m.clone(), body, shape.clone(), seed, keep_body)
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                Client::Grpc(RoundRobin::new(parts))
            }
            Call::Http {
                method,
                path,
                headers,
                body,
                h2,
            } => {
                let path_t = Template::parse(path).context("path")?;
                check_target(&path_t.render_string(0, seed))?;
                let request = Http1Request {
                    method: method.clone(),
                    path: path_t,
                    headers: checked_headers(headers)?,
                    body: body
                        .as_deref()
                        .map(Template::parse)
                        .transpose()
                        .context("body")?,
                };
                if *h2 {
                    let parts = at_path(path)
                        .into_iter()
                        .map(|ep| Http2::new(ep, request.clone(), seed, keep_body))
                        .collect::<Result<Vec<_>, _>>()
                        .map_err(anyhow::Error::msg)?;
                    Client::Http2(RoundRobin::new(parts))
                } else {
                    let parts = at_path(path)
                        .into_iter()
                        .map(|ep| Http1::new(ep, request.clone(), seed, keep_body))
                        .collect();
                    Client::Http1(RoundRobin::new(parts))
                }
            }
            Call::JsonRpc {
                method,
                path,
                params,
                headers,
            } => {
                check_target(path)?;
                let headers = checked_headers(headers)?;
                let parts = at_path(path)
                    .into_iter()
                    .map(|ep| JsonRpc::new(ep, method, params, headers.clone(), seed, keep_body))
                    .collect::<Result<Vec<_>, _>>()?;
                Client::JsonRpc(RoundRobin::new(parts))
            }
        })
    }

    /// A gRPC client that sends `message` (already encoded, possibly malformed) unchecked.
    pub fn raw_grpc(
        method: &str,
        message: &[u8],
        endpoint: &Endpoint,
        protos: &Descriptors,
        tls: &TlsOptions,
    ) -> anyhow::Result<Client> {
        let ep = with_tls(std::slice::from_ref(endpoint), tls, &[b"h2"])?.remove(0);
        let m = protos.method(method, &ep)?;
        Ok(Client::Grpc(RoundRobin::new(vec![Grpc::raw(
            ep, m, message, true,
        )?])))
    }

    /// Drives the client with the load engine.
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
            Client::Http1(p) => go(p, cfg, progress),
            Client::Http2(p) => go(p, cfg, progress),
            Client::Grpc(p) => go(p, cfg, progress),
            Client::JsonRpc(p) => go(p, cfg, progress),
        }
    }

    /// Opens every load client's connection and keeps them open for several runs (the
    /// slices of a paired point).
    pub fn open(self, cfg: &LoadConfig) -> Result<Box<dyn load::Runs>, LoadError> {
        fn go<P: Protocol>(p: P, cfg: &LoadConfig) -> Result<Box<dyn load::Runs>, LoadError> {
            Ok(Box::new(load::Session::open(Arc::new(p), cfg)?))
        }
        match self {
            Client::Http1(p) => go(p, cfg),
            Client::Http2(p) => go(p, cfg),
            Client::Grpc(p) => go(p, cfg),
            Client::JsonRpc(p) => go(p, cfg),
        }
    }

    /// One call (request number 0) on a fresh connection to the first endpoint, given up
    /// after `timeout`.
    pub async fn once(&self, timeout: Duration) -> Result<Reply, CallError> {
        async fn go<P: Protocol>(p: &P) -> Result<Reply, CallError> {
            let mut c = p.connect().await?;
            p.call(&mut c, 0).await
        }
        let attempt = async {
            match self {
                Client::Http1(p) => go(p).await,
                Client::Http2(p) => go(p).await,
                Client::Grpc(p) => go(p).await,
                Client::JsonRpc(p) => go(p).await,
            }
        };
        // HTTP/2 connections drive themselves on a LocalSet (see `protocol::http2::open`).
        let local = tokio::task::LocalSet::new();
        local
            .run_until(tokio::time::timeout(timeout, attempt))
            .await
            .unwrap_or(Err(CallError::Timeout(timeout)))
    }

    /// Each message of an answer as JSON: gRPC decoded with the method's output type (proto
    /// field names, defaults included); HTTP and JSON-RPC bodies parsed when they are JSON,
    /// else kept as text.
    pub fn messages(&self, reply: &Reply) -> Vec<serde_json::Value> {
        let text = |m: &[u8]| serde_json::Value::String(String::from_utf8_lossy(m).into_owned());
        let out = match self {
            Client::Grpc(g) => Some(g.first().method().output()),
            _ => None,
        };
        reply
            .body
            .iter()
            .flatten()
            .map(|m| match (&out, reply.class) {
                (Some(desc), _) => grpc::decode_json(desc, m)
                    .unwrap_or_else(|e| serde_json::Value::String(format!("<undecodable: {e}>"))),
                (None, Class::Http(_) | Class::JsonRpcResult | Class::JsonRpcError(_)) => {
                    serde_json::from_slice(m).unwrap_or_else(|_| text(m))
                }
                (None, _) => text(m),
            })
            .collect()
    }

    /// Each message of an answer for printing: gRPC decoded to JSON, other bodies as text.
    pub fn printable(&self, reply: &Reply) -> Vec<serde_json::Value> {
        match self {
            Client::Grpc(_) => self.messages(reply),
            _ => reply
                .body
                .iter()
                .flatten()
                .map(|m| serde_json::Value::String(String::from_utf8_lossy(m).into_owned()))
                .collect(),
        }
    }

    /// A gRPC call's messages that arrived before it was cut short (its timeout), decoded
    /// as [`Client::messages`] does; empty for other calls.
    pub fn arrived(&self) -> Vec<serde_json::Value> {
        let Client::Grpc(g) = self else {
            return Vec::new();
        };
        let first = g.first();
        let reply = Reply {
            class: Class::Grpc(crate::protocol::GrpcCode::Ok),
            items: 0,
            bytes: 0,
            body: Some(first.arrived()),
            detail: None,
            trailers: Vec::new(),
        };
        self.messages(&reply)
    }

    /// What the TLS handshake negotiated, once a connection was made.
    pub fn tls(&self) -> Option<String> {
        match self {
            Client::Http1(p) => p.tls(),
            Client::Http2(p) => p.tls(),
            Client::Grpc(p) => p.tls(),
            Client::JsonRpc(p) => p.tls(),
        }
    }

    /// A short human description, e.g. `HTTP/1.1 GET http://127.0.0.1:8080/`.
    pub fn describe(&self) -> String {
        match self {
            Client::Http1(p) => p.describe(),
            Client::Http2(p) => p.describe(),
            Client::Grpc(p) => p.describe(),
            Client::JsonRpc(p) => p.describe(),
        }
    }
}

/// The services at `endpoint` (from the `.proto` files, else reflection), each with its
/// methods as `Name (kind): Request → Response`, for `bakeoff call --list`.
pub fn list_services(
    endpoint: &Endpoint,
    protos: &Descriptors,
    tls: &TlsOptions,
) -> anyhow::Result<Vec<(String, Vec<String>)>> {
    let ep = with_tls(std::slice::from_ref(endpoint), tls, &[b"h2"])?.remove(0);
    let (pool, names) = if protos.is_empty() {
        let r = protos.reflect(&ep)?;
        (r.pool.clone(), r.services.clone())
    } else {
        let pool = protos.pool()?.clone();
        let names = pool.services().map(|s| s.full_name().to_string()).collect();
        (pool, names)
    };
    Ok(names
        .iter()
        .map(|n| {
            let methods = pool
                .get_service_by_name(n)
                .map(|s| {
                    s.methods()
                        .map(|m| {
                            format!(
                                "{} ({}): {} → {}",
                                m.name(),
                                grpc::kind_of(&m),
                                m.input().full_name(),
                                m.output().full_name()
                            )
                        })
                        .collect()
                })
                .unwrap_or_default();
            (n.clone(), methods)
        })
        .collect())
}

/// `package.Service/Method`'s request type as JSON with every field at its default, for
/// `bakeoff call --describe`; with the method's kind and its types' names.
pub fn describe_method(
    method: &str,
    endpoint: &Endpoint,
    protos: &Descriptors,
    tls: &TlsOptions,
) -> anyhow::Result<(String, serde_json::Value)> {
    let ep = with_tls(std::slice::from_ref(endpoint), tls, &[b"h2"])?.remove(0);
    let m = protos.method(method, &ep)?;
    let head = format!(
        "{method} ({}): {} → {}",
        grpc::kind_of(&m),
        m.input().full_name(),
        m.output().full_name()
    );
    Ok((head, grpc::skeleton(&m.input())))
}

/// Runs a setup step one call at a time against `endpoint`; every call must succeed.
pub fn run_step(
    step: &Step,
    vars: &[(String, String)],
    endpoint: &Endpoint,
    protos: &Descriptors,
    opts: Options,
    timeout: Duration,
    cpus: &[usize],
) -> anyhow::Result<()> {
    let call = step.call.with_vars(vars);
    let what = call.describe();
    let client = Client::build(&call, std::slice::from_ref(endpoint), protos, opts)
        .with_context(|| format!("setup step `{what}`"))?;
    let cfg = LoadConfig::new(
        Pacing::Closed,
        Stop::Count(step.requests),
        1,
        1,
        Duration::ZERO,
        timeout,
    )?
    .pin_to(cpus.iter().take(1).copied().collect());
    let r = client
        .run(&cfg, &mut |_| Flow::Continue)
        .with_context(|| format!("setup step `{what}`"))?;
    if r.failures > 0 || r.successes < step.requests {
        let first = r
            .outcomes
            .iter()
            .find(|o| !o.success)
            .map(|o| match &o.example {
                Some(m) => format!("{}: {m}", o.label),
                None => o.label.clone(),
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
