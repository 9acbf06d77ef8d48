//! The calls a plan makes — gRPC, HTTP, JSON-RPC — with their placeholders and TLS, and the setup steps that make them.

use super::*;

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
