//! gRPC without generated code: the service is compiled from `.proto` files at run time
//! (`protox`), requests are written as proto3 JSON and encoded with `prost-reflect`, and the
//! call goes over h2c. Unary and server-streaming calls; every streamed message is an *item*.

use std::path::{Path, PathBuf};

use bytes::{Buf, Bytes, BytesMut};
use prost::Message as _;
use prost_reflect::{DescriptorPool, DynamicMessage, MessageDescriptor, MethodDescriptor};

use super::http2::{exchange, next_data, open, trailers, H2Conn};
use super::target::Endpoint;
use super::template::Template;
use super::{CallError, Class, GrpcCode, Protocol, Reply};

#[derive(Debug, thiserror::Error)]
pub enum GrpcSetupError {
    #[error("`{0}` is not a method name; write it as package.Service/Method")]
    CallSyntax(String),
    #[error("no service `{service}` in the .proto files{hint}")]
    NoService { service: String, hint: String },
    #[error("service `{service}` has no method `{method}`; it has: {known}")]
    NoMethod {
        service: String,
        method: String,
        known: String,
    },
    #[error("{0}")]
    Proto(String),
    #[error("`{method}` is a client-streaming call; only unary and server-streaming calls are supported")]
    ClientStreaming { method: String },
    #[error("the request does not fit {message}: {reason}\n  request: {json}")]
    Request {
        message: String,
        reason: String,
        json: String,
    },
}

/// Finds `call` (`package.Service/Method`) in a compiled pool.
pub fn find_method(pool: &DescriptorPool, call: &str) -> Result<MethodDescriptor, GrpcSetupError> {
    let (service, method) = call
        .trim_start_matches('/')
        .split_once('/')
        .ok_or_else(|| GrpcSetupError::CallSyntax(call.to_string()))?;
    let Some(svc) = pool.get_service_by_name(service) else {
        let known: Vec<String> = pool.services().map(|s| s.full_name().to_string()).collect();
        let hint = if known.is_empty() {
            String::new()
        } else {
            format!("; they define: {}", known.join(", "))
        };
        return Err(GrpcSetupError::NoService {
            service: service.to_string(),
            hint,
        });
    };
    let found = svc.methods().find(|m| m.name() == method);
    let m = found.ok_or_else(|| GrpcSetupError::NoMethod {
        service: service.to_string(),
        method: method.to_string(),
        known: svc
            .methods()
            .map(|m| m.name().to_string())
            .collect::<Vec<_>>()
            .join(", "),
    })?;
    if m.is_client_streaming() {
        return Err(GrpcSetupError::ClientStreaming {
            method: call.to_string(),
        });
    }
    Ok(m)
}

/// Compiles `protos` with `includes` as import roots (each file's own folder when none is
/// given). Done once per plan: see `client::Descriptors`.
pub fn compile(protos: &[PathBuf], includes: &[PathBuf]) -> Result<DescriptorPool, GrpcSetupError> {
    if protos.is_empty() {
        return Err(GrpcSetupError::Proto(
            "gRPC needs at least one --proto file".into(),
        ));
    }
    let mut roots: Vec<PathBuf> = includes.to_vec();
    if roots.is_empty() {
        for p in protos {
            let dir = p.parent().filter(|d| !d.as_os_str().is_empty());
            let dir = dir.map_or_else(|| PathBuf::from("."), Path::to_path_buf);
            if !roots.contains(&dir) {
                roots.push(dir);
            }
        }
    }
    for p in protos {
        if !p.exists() {
            return Err(GrpcSetupError::Proto(format!(
                "cannot read `{}`: no such file",
                p.display()
            )));
        }
    }
    let mut compiler = protox::Compiler::new(&roots)
        .map_err(|e| GrpcSetupError::Proto(describe_protox(&e, &roots)))?;
    compiler.include_imports(true);
    compiler
        .open_files(protos)
        .map_err(|e| GrpcSetupError::Proto(describe_protox(&e, &roots)))?;
    Ok(compiler.descriptor_pool())
}

/// protox errors carry the file and a byte span; turn them into `file:line:column: message`.
fn describe_protox(e: &protox::Error, roots: &[PathBuf]) -> String {
    let Some(name) = e.file() else {
        return e.to_string();
    };
    // protox names files relative to their import root; show the path the user can open.
    let path = roots.iter().map(|r| r.join(name)).find(|p| p.is_file());
    let file = path
        .as_deref()
        .map_or(name.to_string(), |p| p.display().to_string());
    use miette::Diagnostic as _;
    let span = e.labels().and_then(|mut l| l.next()).map(|l| *l.inner());
    if let Some(span) = span {
        if let Ok(text) = std::fs::read_to_string(&file) {
            let offset = span.offset().min(text.len());
            let before = &text[..offset];
            let line = before.matches('\n').count() + 1;
            let column = offset - before.rfind('\n').map_or(0, |i| i + 1) + 1;
            return format!("{file}:{line}:{column}: {e}");
        }
    }
    format!("{file}: {e}")
}

/// Parses proto3 JSON into a message of type `desc` and encodes it.
pub fn encode_json(desc: &MessageDescriptor, json: &str) -> Result<Vec<u8>, GrpcSetupError> {
    let mut de = serde_json::Deserializer::from_str(json);
    let msg = DynamicMessage::deserialize(desc.clone(), &mut de)
        .and_then(|m| de.end().map(|_| m))
        .map_err(|e| GrpcSetupError::Request {
            message: desc.full_name().to_string(),
            reason: e.to_string(),
            json: json.to_string(),
        })?;
    Ok(msg.encode_to_vec())
}

/// Decodes one response message into proto3 JSON (field names as in the .proto, defaults
/// included), for showing and comparing answers.
pub fn decode_json(desc: &MessageDescriptor, bytes: &[u8]) -> Result<serde_json::Value, String> {
    let msg = DynamicMessage::decode(desc.clone(), bytes)
        .map_err(|e| format!("cannot decode {}: {e}", desc.full_name()))?;
    let opts = prost_reflect::SerializeOptions::new()
        .skip_default_fields(false)
        .use_proto_field_name(true);
    msg.serialize_with_options(serde_json::value::Serializer, &opts)
        .map_err(|e| e.to_string())
}

enum Body {
    Fixed(Bytes),
    Varying(Template),
}

pub struct Grpc {
    endpoint: Endpoint,
    method: MethodDescriptor,
    path: String,
    body: Body,
    seed: u64,
    keep_body: bool,
}

impl Grpc {
    /// Checks the request against the method's input type now, so a JSON mistake is one
    /// clear error before any load is sent.
    pub fn new(
        endpoint: Endpoint,
        method: MethodDescriptor,
        request: Template,
        seed: u64,
        keep_body: bool,
    ) -> Result<Grpc, GrpcSetupError> {
        let first = encode_json(&method.input(), &request.render_string(0, seed))?;
        let body = if request.is_static() {
            Body::Fixed(frame(&first))
        } else {
            Body::Varying(request)
        };
        let path = format!("/{}/{}", method.parent_service().full_name(), method.name());
        Ok(Grpc {
            endpoint,
            method,
            path,
            body,
            seed,
            keep_body,
        })
    }

    /// A client that sends `message` (already encoded, possibly malformed) as it is.
    pub fn raw(
        endpoint: Endpoint,
        method: MethodDescriptor,
        message: &[u8],
        keep_body: bool,
    ) -> Grpc {
        let path = format!("/{}/{}", method.parent_service().full_name(), method.name());
        Grpc {
            endpoint,
            method,
            path,
            body: Body::Fixed(frame(message)),
            seed: 0,
            keep_body,
        }
    }

    pub fn method(&self) -> &MethodDescriptor {
        &self.method
    }

    fn request_body(&self, seq: u64) -> Result<Bytes, CallError> {
        match &self.body {
            Body::Fixed(b) => Ok(b.clone()),
            Body::Varying(t) => {
                let json = t.render_string(seq, self.seed);
                let msg = encode_json(&self.method.input(), &json)
                    .map_err(|e| CallError::Protocol(e.to_string()))?;
                Ok(frame(&msg))
            }
        }
    }
}

/// The gRPC length-prefixed message: a compression flag (0) and a big-endian u32 length.
fn frame(msg: &[u8]) -> Bytes {
    let mut b = BytesMut::with_capacity(msg.len() + 5);
    b.extend_from_slice(&[0]);
    b.extend_from_slice(&(msg.len() as u32).to_be_bytes());
    b.extend_from_slice(msg);
    b.freeze()
}

/// Splits a stream of DATA frames into gRPC messages, however the frames cut them.
#[derive(Default)]
struct Deframer {
    buf: BytesMut,
    items: u64,
    kept: Option<Vec<Vec<u8>>>,
}

impl Deframer {
    fn push(&mut self, data: &[u8]) -> Result<(), CallError> {
        self.buf.extend_from_slice(data);
        while self.buf.len() >= 5 {
            if self.buf[0] != 0 {
                return Err(CallError::Protocol(
                    "compressed gRPC messages are not supported".into(),
                ));
            }
            let len = u32::from_be_bytes([self.buf[1], self.buf[2], self.buf[3], self.buf[4]]);
            if self.buf.len() < 5 + len as usize {
                break;
            }
            self.buf.advance(5);
            let msg = self.buf.split_to(len as usize);
            self.items += 1;
            if let Some(k) = &mut self.kept {
                k.push(msg.to_vec());
            }
        }
        Ok(())
    }
}

fn status_of(headers: &http::HeaderMap) -> Option<(GrpcCode, Option<String>)> {
    let code = headers
        .get("grpc-status")?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()?;
    let message = headers
        .get("grpc-message")
        .and_then(|m| m.to_str().ok())
        .map(percent_decode)
        .filter(|m| !m.is_empty());
    Some((GrpcCode::from_i64(code), message))
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let Ok(v) = u8::from_str_radix(&s[i + 1..i + 3], 16) {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

impl Protocol for Grpc {
    type Conn = H2Conn;

    async fn connect(&self) -> Result<H2Conn, CallError> {
        open(&self.endpoint).await
    }

    async fn call(&self, conn: &mut H2Conn, seq: u64) -> Result<Reply, CallError> {
        let body = self.request_body(seq)?;
        let req = http::Request::builder()
            .method(http::Method::POST)
            .uri(format!("http://{}{}", self.endpoint.authority, self.path))
            .header("content-type", "application/grpc")
            .header("te", "trailers")
            .body(())
            .map_err(|e| CallError::Protocol(e.to_string()))?;
        let (head, mut stream) = exchange(conn, req, Some(body)).await?;
        if head.status != http::StatusCode::OK {
            return Ok(Reply {
                class: Class::Http(head.status.as_u16()),
                items: 0,
                bytes: 0,
                body: None,
                detail: Some("gRPC call answered with a non-200 HTTP status".into()),
            });
        }
        let mut frames = Deframer {
            kept: self.keep_body.then(Vec::new),
            ..Deframer::default()
        };
        let mut bytes = 0u64;
        // A "trailers-only" answer puts the status in the headers and sends no body.
        let status = match status_of(&head.headers) {
            Some(s) => s,
            None => {
                while let Some(data) = next_data(&mut stream).await? {
                    bytes += data.len() as u64;
                    frames.push(&data)?;
                }
                let t = trailers(&mut stream).await?.unwrap_or_default();
                status_of(&t).ok_or_else(|| {
                    CallError::Protocol("gRPC response without grpc-status".into())
                })?
            }
        };
        if !frames.buf.is_empty() {
            return Err(CallError::Protocol(
                "gRPC stream ended inside a message".into(),
            ));
        }
        Ok(Reply {
            class: Class::Grpc(status.0),
            items: frames.items,
            bytes,
            body: frames.kept,
            detail: status.1,
        })
    }

    fn describe(&self) -> String {
        let kind = if self.method.is_server_streaming() {
            "server-streaming"
        } else {
            "unary"
        };
        format!(
            "gRPC {} {} ({kind})",
            self.endpoint.url().trim_end_matches('/'),
            self.path
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deframer_counts_messages_across_any_cut() {
        let mut wire = Vec::new();
        for m in [&b"abc"[..], b"", b"0123456789"] {
            wire.extend_from_slice(&frame(m));
        }
        for cut in 1..wire.len() {
            let mut d = Deframer {
                kept: Some(Vec::new()),
                ..Deframer::default()
            };
            for piece in wire.chunks(cut) {
                d.push(piece).unwrap();
            }
            assert_eq!(d.items, 3, "cut {cut}");
            assert!(d.buf.is_empty());
            assert_eq!(d.kept.unwrap()[2], b"0123456789");
        }
    }

    #[test]
    fn grpc_message_is_percent_decoded() {
        assert_eq!(percent_decode("key%20not%20found"), "key not found");
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(percent_decode("%zz"), "%zz");
    }
}
