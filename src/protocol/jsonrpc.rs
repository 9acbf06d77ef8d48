//! JSON-RPC 2.0 over HTTP/1.1 POST. An answer with an `error` object is its own outcome class
//! (`JSON-RPC error CODE`), never a success, even though it arrives as HTTP 200.

use serde::Deserialize;

use super::http1::{Http1, Http1Conn, Http1Request};
use super::target::Endpoint;
use super::template::{Template, TemplateError};
use super::{CallError, Class, Protocol, Reply};

pub struct JsonRpc {
    http: Http1,
    method: String,
    url: String,
    keep_body: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum JsonRpcSetupError {
    #[error(transparent)]
    Template(#[from] TemplateError),
    #[error("--params must be a JSON array or object: {reason}\n  params: {params}")]
    Params { reason: String, params: String },
}

impl JsonRpc {
    /// `params` is JSON text (a template: `{seq}` and friends work inside it).
    pub fn new(
        endpoint: Endpoint,
        method: &str,
        params: &str,
        headers: Vec<(String, String)>,
        seed: u64,
        keep_body: bool,
    ) -> Result<JsonRpc, JsonRpcSetupError> {
        let params_t = Template::parse(params)?;
        let sample = params_t.render_string(0, seed);
        match serde_json::from_str::<serde_json::Value>(&sample) {
            Ok(v) if v.is_array() || v.is_object() => {}
            Ok(_) => {
                return Err(JsonRpcSetupError::Params {
                    reason: "it is neither".into(),
                    params: sample,
                })
            }
            Err(e) => {
                return Err(JsonRpcSetupError::Params {
                    reason: e.to_string(),
                    params: sample,
                })
            }
        }
        let method_json = serde_json::to_string(method).expect("a string serializes");
        let body =
            format!(r#"{{"jsonrpc":"2.0","id":{{seq}},"method":{method_json},"params":{params}}}"#);
        let mut headers = headers;
        if !headers
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case("content-type"))
        {
            headers.push(("Content-Type".into(), "application/json".into()));
        }
        let url = endpoint.url();
        let request = Http1Request {
            method: "POST".into(),
            path: Template::parse(&endpoint.path)?,
            headers,
            body: Some(Template::parse(&body)?),
        };
        Ok(JsonRpc {
            http: Http1::new(endpoint, request, seed, true),
            method: method.to_string(),
            url,
            keep_body,
        })
    }
}

#[derive(Deserialize)]
struct Answer {
    #[serde(default)]
    error: Option<ErrorObject>,
    #[serde(default, deserialize_with = "present")]
    result: bool,
}

#[derive(Deserialize)]
struct ErrorObject {
    code: i64,
    #[serde(default)]
    message: String,
}

fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    serde::de::IgnoredAny::deserialize(d).map(|_| true)
}

/// Classifies a JSON-RPC answer body.
pub fn classify(body: &[u8]) -> Result<(Class, Option<String>), String> {
    let a: Answer =
        serde_json::from_slice(body).map_err(|e| format!("answer is not JSON-RPC: {e}"))?;
    match (a.error, a.result) {
        (Some(e), _) => Ok((Class::JsonRpcError(e.code), Some(e.message))),
        (None, true) => Ok((Class::JsonRpcResult, None)),
        (None, false) => Err("answer has neither `result` nor `error`".into()),
    }
}

impl Protocol for JsonRpc {
    type Conn = Http1Conn;

    async fn connect(&self) -> Result<Http1Conn, CallError> {
        self.http.connect().await
    }

    fn reusable(&self, conn: &Http1Conn) -> bool {
        self.http.reusable(conn)
    }

    fn tls(&self) -> Option<String> {
        self.http.tls()
    }

    async fn call(&self, conn: &mut Http1Conn, seq: u64) -> Result<Reply, CallError> {
        let mut reply = self.http.call(conn, seq).await?;
        if reply.class != Class::Http(200) {
            return Ok(reply);
        }
        let body = reply.body.as_ref().and_then(|b| b.first());
        let (class, detail) =
            classify(body.map_or(&[][..], Vec::as_slice)).map_err(CallError::Protocol)?;
        reply.class = class;
        reply.detail = detail;
        if !self.keep_body {
            reply.body = None;
        }
        Ok(reply)
    }

    fn describe(&self) -> String {
        format!("JSON-RPC {} at {}", self.method, self.url)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_results_and_garbage_are_told_apart() {
        let r = classify(br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no"}}"#);
        assert_eq!(r.unwrap(), (Class::JsonRpcError(-32601), Some("no".into())));
        let r = classify(br#"{"jsonrpc":"2.0","id":1,"result":null}"#).unwrap();
        assert_eq!(r.0, Class::JsonRpcResult);
        assert!(classify(br#"{"jsonrpc":"2.0","id":1}"#).is_err());
        assert!(classify(b"<html>").is_err());
    }

    #[test]
    fn params_must_be_json() {
        let e = Endpoint::parse("http://127.0.0.1:1/").unwrap();
        assert!(JsonRpc::new(e.clone(), "m", "[1,", vec![], 0, false).is_err());
        assert!(JsonRpc::new(e.clone(), "m", "3", vec![], 0, false).is_err());
        assert!(JsonRpc::new(e, "m", r#"[{seq}, "x"]"#, vec![], 0, false).is_ok());
    }
}
