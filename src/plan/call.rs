//! The call of a scenario, setup step or compat section: exactly one of gRPC, HTTP or
//! JSON-RPC, and no `{word}` that is not a matrix variable.

use std::ops::Range;
use std::time::Duration;

use toml::Spanned;

use crate::protocol::grpc::CallShape;

use super::check::{value_text, CallFields, Checker};
use super::error::{nearest, PlanError};
use super::matrix::braced_words;
use super::Call;

type Res<T> = Result<T, PlanError>;

impl Checker<'_> {
    fn grpc_call(
        &self,
        g: &Spanned<String>,
        f: &CallFields,
        headers: Vec<(String, String)>,
    ) -> Res<Call> {
        if !g.get_ref().contains('/') {
            return Err(self.at(
                g,
                format!(
                    "`{}` is not a method name; write it as package.Service/Method",
                    g.get_ref()
                ),
            ));
        }
        if let Some(p) = f.path.or(None) {
            return Err(self.at(p, "`path` is for `http` and `jsonrpc` calls"));
        }
        let interval = match f.stream_interval {
            None => None,
            Some(d) => Some(self.duration(Some(d), "stream_interval", Duration::ZERO)?),
        };
        let replies = match f.replies {
            None => None,
            Some(n) if *n.get_ref() >= 1 => Some(*n.get_ref() as u64),
            Some(n) => return Err(self.at(n, "`replies` must be at least 1")),
        };
        Ok(Call::Grpc {
            method: g.get_ref().clone(),
            body: f.body.map_or("{}".into(), |b| value_text(b.get_ref())),
            shape: CallShape {
                metadata: headers,
                interval,
                replies,
            },
        })
    }

    pub(super) fn call(&self, span: Range<usize>, f: &CallFields, has_protos: bool) -> Res<Call> {
        let _ = has_protos;
        let headers: Vec<(String, String)> = f.headers.clone().into_iter().collect();
        let path = f.path.map(|p| p.get_ref().clone());
        match (f.grpc, f.http, f.jsonrpc) {
            // Without `protos`, the messages are built from what each contender says
            // through server reflection.
            (Some(g), None, None) => self.grpc_call(g, f, headers),
            _ if f.stream_interval.is_some() || f.replies.is_some() => {
                let at = f
                    .stream_interval
                    .map(|s| s.span())
                    .or(f.replies.map(|r| r.span()));
                Err(self.span(
                    at.unwrap_or(span),
                    "`stream_interval` and `replies` are for streaming gRPC calls",
                ))
            }
            (None, Some(h), None) => {
                let text = h.get_ref().trim();
                let (method, p) = match text.split_once(' ') {
                    Some((m, p)) => (m.to_string(), p.trim().to_string()),
                    None if text.starts_with('/') => ("GET".to_string(), text.to_string()),
                    None => (text.to_string(), path.clone().unwrap_or("/".into())),
                };
                if method.is_empty()
                    || !method.bytes().all(|b| b.is_ascii_uppercase())
                    || !p.starts_with('/')
                {
                    return Err(self.at(h, format!("`http = \"{text}\"`: write the method and path, e.g. \"GET /index.html\"")));
                }
                Ok(Call::Http {
                    method,
                    path: p,
                    headers,
                    body: f.body.map(|b| value_text(b.get_ref())),
                    h2: f.h2,
                })
            }
            (None, None, Some(j)) => Ok(Call::JsonRpc {
                method: j.get_ref().clone(),
                path: path.unwrap_or("/".into()),
                params: f.params.map_or("[]".into(), |p| value_text(p.get_ref())),
                headers,
            }),
            _ => Err(self.span(
                span,
                "give exactly one of `grpc`, `http` or `jsonrpc` for the call",
            )),
        }
    }

    /// A `{name}` in a call that is neither a matrix variable nor a template keyword is
    /// almost always a typo; catch it now instead of sending it literally.
    pub(super) fn vars_known(&self, call: &Call, vars: &[&str], span: Range<usize>) -> Res<()> {
        let texts: Vec<&str> = match call {
            Call::Grpc { body, .. } => vec![body],
            Call::Http { path, body, .. } => [Some(path.as_str()), body.as_deref()]
                .into_iter()
                .flatten()
                .collect(),
            Call::JsonRpc { path, params, .. } => vec![path, params],
        };
        for t in texts {
            if let Some(w) = crate::protocol::template::unknown_keywords(t).first() {
                return Err(self.span(
                    span.clone(),
                    format!(
                        "`{{{w}:…}}` is not a placeholder ({} are)",
                        crate::protocol::template::KEYWORDS.join(", ")
                    ),
                ));
            }
            for word in braced_words(t) {
                if word != "seq" && !vars.contains(&word) {
                    let hint = nearest(word, vars.iter().copied())
                        .map(|n| format!("; did you mean `{{{n}}}`?"))
                        .unwrap_or_else(|| " (declare it under `matrix`)".into());
                    return Err(self.span(
                        span.clone(),
                        format!("`{{{word}}}` is not a matrix variable{hint}"),
                    ));
                }
            }
        }
        Ok(())
    }
}
