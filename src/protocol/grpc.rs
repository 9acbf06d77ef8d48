//! gRPC without generated code: the service is compiled from `.proto` files at run time
//! (`protox`) or asked of the server (`reflection`), requests are written as proto3 JSON and
//! encoded with `prost-reflect`, and the call goes over HTTP/2 (h2c or TLS). All four kinds
//! of call; every message received is an *item*.

use std::path::{Path, PathBuf};

use base64::Engine as _;
use bytes::{Bytes, BytesMut};
use prost::Message as _;
use prost_reflect::{DescriptorPool, DynamicMessage, MessageDescriptor, MethodDescriptor};

use super::hpack::Head;
use super::http2::{
    exchange, h2_error, next_data, open, open_lean, send_request, trailers, H2Conn,
};
use super::lean2::Lean;
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
    #[error("metadata `{key}` {reason}")]
    Metadata { key: String, reason: String },
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
    Ok(m)
}

/// Compiles `protos` with `includes` as import roots (each file's own folder when none is
/// given). Done once per plan: see `client::Descriptors`.
/// The largest `.proto` file read (the largest public ones are a few hundred KB).
const PROTO_LIMIT: u64 = 16 << 20;

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
        // A regular file of a sane size: `/dev/zero` or a FIFO would never end.
        if let Err(e) = crate::sys::read_bounded_bytes(p, PROTO_LIMIT) {
            return Err(GrpcSetupError::Proto(format!(
                "cannot read `{}`: {e}",
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

/// A request of type `desc` written out as proto3 JSON with every field at its default,
/// nested messages filled in (to a depth of 4, so recursive types end), repeated fields as
/// one-element lists: what `bakeoff call --describe` shows a user to start from.
pub fn skeleton(desc: &MessageDescriptor) -> serde_json::Value {
    fn walk(desc: &MessageDescriptor, depth: usize) -> serde_json::Value {
        use prost_reflect::{Kind, Value};
        let mut m = serde_json::Map::new();
        for f in desc.fields() {
            let one = match f.kind() {
                Kind::Message(inner) if depth < 4 => walk(&inner, depth + 1),
                Kind::Message(_) => serde_json::json!({}),
                Kind::Enum(e) => e
                    .values()
                    .next()
                    .map_or(serde_json::Value::Null, |v| v.name().into()),
                kind => {
                    let v = Value::default_value(&kind);
                    let opts = prost_reflect::SerializeOptions::new().skip_default_fields(false);
                    let mut probe = DynamicMessage::new(desc.clone());
                    probe.set_field(&f, v);
                    probe
                        .serialize_with_options(serde_json::value::Serializer, &opts)
                        .ok()
                        .and_then(|j| j.get(f.json_name()).cloned())
                        .unwrap_or(serde_json::Value::Null)
                }
            };
            let value = if f.is_map() {
                serde_json::json!({})
            } else if f.is_list() {
                serde_json::Value::Array(vec![one])
            } else {
                one
            };
            m.insert(f.name().to_string(), value);
        }
        serde_json::Value::Object(m)
    }
    walk(desc, 0)
}

/// The kind of call a method is, as people name it.
pub fn kind_of(m: &MethodDescriptor) -> &'static str {
    match (m.is_client_streaming(), m.is_server_streaming()) {
        (false, false) => "unary",
        (false, true) => "server-streaming",
        (true, false) => "client-streaming",
        (true, true) => "bidi",
    }
}

/// Renders request `seq` of `t` and encodes it; an error shows the request with `{env:…}`
/// values left as placeholders, so a secret never reaches a message.
fn encode_template(
    desc: &MessageDescriptor,
    t: &Template,
    seq: u64,
    seed: u64,
) -> Result<Vec<u8>, GrpcSetupError> {
    encode_json(desc, &t.render_string(seq, seed)).map_err(|e| match e {
        GrpcSetupError::Request {
            message, reason, ..
        } => {
            let shown = t.render_redacted(seq, seed);
            // serde's reason may quote the value; with a secret in it, say less.
            let reason = if shown == t.render_string(seq, seed) {
                reason
            } else {
                "it does not parse as this message".into()
            };
            GrpcSetupError::Request {
                message,
                reason,
                json: shown,
            }
        }
        other => other,
    })
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

/// What a gRPC call sends besides its messages.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallShape {
    /// Sent as gRPC metadata (HTTP/2 headers); `-bin` keys carry base64 values.
    pub metadata: Vec<(String, String)>,
    /// Client-streaming and bidi calls: the pause between two messages sent.
    pub interval: Option<std::time::Duration>,
    /// Bidi calls: end the call (the client cancels the stream) once this many messages
    /// arrived, for servers that keep a stream open until the client goes (etcd's Watch).
    pub replies: Option<u64>,
}

/// The messages of a call, encoded once when they never change.
enum Body {
    Fixed(Vec<Bytes>),
    Varying(Vec<Template>),
}

pub struct Grpc {
    endpoint: Endpoint,
    method: MethodDescriptor,
    path: String,
    body: Body,
    /// Built once, cloned per call.
    uri: http::Uri,
    headers: http::HeaderMap,
    shape: CallShape,
    seed: u64,
    keep_body: bool,
    /// With `keep_body`: every message as it arrives, so a call cut short by its timeout
    /// still shows what came (`bakeoff call` on a stream that never ends).
    arrived: Option<std::sync::Arc<std::sync::Mutex<Vec<Vec<u8>>>>>,
    /// The lean client's request head: calls that send one message and keep nothing of the
    /// answer (the load engine's unary and server-streaming calls); `None` for the others.
    lean: Option<Head>,
}

/// Splits a JSON array written as template text into its elements' texts, without parsing
/// it as JSON (placeholders such as `{seq}` may stand where a JSON value goes). `None` when
/// the text is not an array.
pub fn split_array(text: &str) -> Option<Vec<&str>> {
    let t = text.trim();
    let inner = t.strip_prefix('[')?.strip_suffix(']')?;
    let mut out = Vec::new();
    let (mut depth, mut in_str, mut escaped, mut start) = (0i32, false, false, 0);
    for (i, c) in inner.char_indices() {
        if in_str {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_str = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_str = true,
            '{' | '[' => depth += 1,
            '}' | ']' => depth -= 1,
            ',' if depth == 0 => {
                out.push(inner[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    let last = inner[start..].trim();
    if !last.is_empty() || !out.is_empty() {
        out.push(last);
    }
    Some(out)
}

/// Checks gRPC metadata and turns it into headers (`-bin` values must be base64).
pub(super) fn metadata_headers(
    metadata: &[(String, String)],
) -> Result<http::HeaderMap, GrpcSetupError> {
    let mut h = http::HeaderMap::new();
    h.insert(
        "content-type",
        http::HeaderValue::from_static("application/grpc"),
    );
    h.insert("te", http::HeaderValue::from_static("trailers"));
    for (k, v) in metadata {
        let bad = |reason: String| GrpcSetupError::Metadata {
            key: k.clone(),
            reason,
        };
        let key = k.to_ascii_lowercase();
        if matches!(key.as_str(), "content-type" | "te") || key.starts_with("grpc-") {
            return Err(bad("is set by the gRPC protocol itself".into()));
        }
        let name = http::HeaderName::from_bytes(key.as_bytes())
            .map_err(|_| bad("is not a valid metadata key".into()))?;
        if key.ends_with("-bin") {
            let b64 = base64::engine::general_purpose::STANDARD_NO_PAD;
            b64.decode(v.trim().trim_end_matches('='))
                .map_err(|e| bad(format!("is a binary key; its value must be base64 ({e})")))?;
        }
        let value = http::HeaderValue::from_str(v.trim())
            .map_err(|_| bad("has a value that is not valid in a header".into()))?;
        h.append(name, value);
    }
    Ok(h)
}

impl Grpc {
    /// Checks every message against the method's input type now, so a JSON mistake is one
    /// clear error before any load is sent. Client-streaming and bidi calls take a JSON
    /// array of messages (one object is a stream of one); message `i` of call `s` is
    /// rendered as request number `s·n + i`, so `{seq}` and `{rand}` differ per message.
    pub fn new(
        endpoint: Endpoint,
        method: MethodDescriptor,
        body: &str,
        shape: CallShape,
        seed: u64,
        keep_body: bool,
    ) -> Result<Grpc, GrpcSetupError> {
        let texts = match (method.is_client_streaming(), split_array(body)) {
            (true, Some(parts)) if parts.is_empty() => {
                return Err(GrpcSetupError::Request {
                    message: method.input().full_name().to_string(),
                    reason: "a streaming call needs at least one message".into(),
                    json: body.to_string(),
                })
            }
            (true, Some(parts)) => parts,
            _ => vec![body],
        };
        let templates = texts
            .iter()
            .map(|t| {
                Template::parse(t).map_err(|e| GrpcSetupError::Request {
                    message: method.input().full_name().to_string(),
                    reason: e.to_string(),
                    json: t.to_string(),
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let n = templates.len() as u64;
        let mut first = Vec::with_capacity(templates.len());
        for (i, t) in templates.iter().enumerate() {
            first.push(frame(&encode_template(
                &method.input(),
                t,
                i as u64 % n,
                seed,
            )?));
        }
        let body = if templates.iter().all(Template::is_static) {
            Body::Fixed(first)
        } else {
            Body::Varying(templates)
        };
        Grpc::with_body(endpoint, method, body, shape, seed, keep_body)
    }

    fn with_body(
        endpoint: Endpoint,
        method: MethodDescriptor,
        body: Body,
        shape: CallShape,
        seed: u64,
        keep_body: bool,
    ) -> Result<Grpc, GrpcSetupError> {
        let path = format!("/{}/{}", method.parent_service().full_name(), method.name());
        let uri = super::http2::uri(&endpoint, &path)
            .map_err(|e| GrpcSetupError::Proto(e.to_string()))?;
        let headers = metadata_headers(&shape.metadata)?;
        let lean =
            (!keep_body && !method.is_client_streaming() && !super::lean2::disabled()).then(|| {
                let mut fields = vec![
                    (":method", "POST"),
                    (":scheme", endpoint.scheme()),
                    (":authority", endpoint.authority.as_str()),
                    (":path", path.as_str()),
                ];
                for (k, v) in &headers {
                    fields.push((k.as_str(), v.to_str().unwrap_or_default()));
                }
                Head::new(&fields)
            });
        Ok(Grpc {
            endpoint,
            method,
            path,
            body,
            uri,
            headers,
            shape,
            seed,
            keep_body,
            arrived: keep_body.then(Default::default),
            lean,
        })
    }

    /// The messages that arrived in the last call so far (kept only with `keep_body`).
    pub fn arrived(&self) -> Vec<Vec<u8>> {
        self.arrived
            .as_ref()
            .map(|a| a.lock().expect("not poisoned").clone())
            .unwrap_or_default()
    }

    /// A client that sends `message` (already encoded, possibly malformed) as it is.
    pub fn raw(
        endpoint: Endpoint,
        method: MethodDescriptor,
        message: &[u8],
        keep_body: bool,
    ) -> Result<Grpc, GrpcSetupError> {
        let body = Body::Fixed(vec![frame(message)]);
        Grpc::with_body(endpoint, method, body, CallShape::default(), 0, keep_body)
    }

    pub fn method(&self) -> &MethodDescriptor {
        &self.method
    }

    fn varying(&self, templates: &[Template], seq: u64) -> Result<Vec<Bytes>, CallError> {
        let n = templates.len() as u64;
        templates
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let seq = seq.wrapping_mul(n).wrapping_add(i as u64);
                encode_template(&self.method.input(), t, seq, self.seed)
                    .map(|m| frame(&m))
                    .map_err(|e| CallError::Request(e.to_string()))
            })
            .collect()
    }

    fn head(&self) -> http::Request<()> {
        let mut req = http::Request::new(());
        *req.method_mut() = http::Method::POST;
        *req.uri_mut() = self.uri.clone();
        *req.headers_mut() = self.headers.clone();
        req
    }

    /// Sends the messages of a streaming call: all at once, or one every `interval`.
    async fn send_stream(
        &self,
        mut stream: h2::SendStream<Bytes>,
        frames: &[Bytes],
    ) -> Result<(), CallError> {
        let send_err = |e: h2::Error| CallError::Io(format!("sending a stream message: {e}"));
        match self.shape.interval {
            None => {
                let all: Vec<u8> = frames.concat();
                stream.send_data(Bytes::from(all), true).map_err(send_err)
            }
            Some(pause) => {
                for (i, f) in frames.iter().enumerate() {
                    if i > 0 {
                        tokio::time::sleep(pause).await;
                    }
                    stream
                        .send_data(f.clone(), i + 1 == frames.len())
                        .map_err(send_err)?;
                }
                Ok(())
            }
        }
    }
}

/// The gRPC length-prefixed message: a compression flag (0) and a big-endian u32 length.
pub(super) fn frame(msg: &[u8]) -> Bytes {
    let mut b = BytesMut::with_capacity(msg.len() + 5);
    b.extend_from_slice(&[0]);
    b.extend_from_slice(&(msg.len() as u32).to_be_bytes());
    b.extend_from_slice(msg);
    b.freeze()
}

/// Splits a stream of DATA frames into gRPC messages, however the frames cut them. Message
/// bodies are copied only when they are kept; otherwise they are counted and skipped.
#[derive(Default)]
pub(super) struct Deframer {
    head: [u8; 5],
    head_len: usize,
    /// Bytes of the current message's body still to come, when inside one.
    remaining: Option<usize>,
    current: Vec<u8>,
    items: u64,
    kept: Option<Vec<Vec<u8>>>,
    /// Bytes of the messages kept, the current one included.
    kept_bytes: usize,
}

impl Deframer {
    /// A deframer that keeps every message (the others only count them).
    pub(super) fn keeping() -> Deframer {
        Deframer {
            kept: Some(Vec::new()),
            ..Deframer::default()
        }
    }

    /// The messages kept so far.
    pub(super) fn messages(&self) -> &[Vec<u8>] {
        self.kept.as_deref().unwrap_or_default()
    }

    pub(super) fn push(&mut self, mut data: &[u8]) -> Result<(), CallError> {
        while !data.is_empty() {
            match self.remaining {
                Some(left) => {
                    let n = left.min(data.len());
                    if self.kept.is_some() {
                        self.kept_bytes += n;
                        super::kept_within(self.kept_bytes)?;
                        self.current.extend_from_slice(&data[..n]);
                    }
                    data = &data[n..];
                    self.remaining = Some(left - n);
                }
                None => {
                    let n = (5 - self.head_len).min(data.len());
                    self.head[self.head_len..self.head_len + n].copy_from_slice(&data[..n]);
                    self.head_len += n;
                    data = &data[n..];
                    if self.head_len < 5 {
                        continue;
                    }
                    if self.head[0] != 0 {
                        return Err(CallError::Protocol(
                            "compressed gRPC messages are not supported".into(),
                        ));
                    }
                    let len = u32::from_be_bytes([
                        self.head[1],
                        self.head[2],
                        self.head[3],
                        self.head[4],
                    ]);
                    self.head_len = 0;
                    self.remaining = Some(len as usize);
                    if self.kept.is_some() {
                        // Grown as bytes arrive: a length prefix is never an allocation.
                        self.current = Vec::with_capacity((len as usize).min(64 * 1024));
                    }
                }
            }
            if self.remaining == Some(0) {
                self.remaining = None;
                self.items += 1;
                if let Some(k) = &mut self.kept {
                    k.push(std::mem::take(&mut self.current));
                }
            }
        }
        Ok(())
    }

    /// Whether the stream so far ended on a message boundary.
    pub(super) fn is_clean(&self) -> bool {
        self.remaining.is_none() && self.head_len == 0
    }
}

pub(super) fn status_of(headers: &http::HeaderMap) -> Option<(GrpcCode, Option<String>)> {
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

/// The outcome of a gRPC call the server answered with an HTTP status other than 200.
fn not_grpc(status: u16) -> Reply {
    Reply {
        class: Class::Http(status),
        items: 0,
        bytes: 0,
        body: None,
        detail: Some("gRPC call answered with a non-200 HTTP status".into()),
        trailers: Vec::new(),
    }
}

/// The trailers worth comparing: everything but the status, which is the outcome itself.
fn kept_trailers(t: &http::HeaderMap) -> Vec<(String, String)> {
    t.iter()
        .filter(|(k, _)| !matches!(k.as_str(), "grpc-status" | "grpc-message"))
        .map(|(k, v)| {
            (
                k.to_string(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect()
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

impl Grpc {
    /// Receives the answer: status from headers (trailers-only) or trailers, every message
    /// counted as an item.
    async fn receive(
        &self,
        head: http::response::Parts,
        mut stream: h2::RecvStream,
        so_far: &mut u64,
    ) -> Result<Reply, CallError> {
        if head.status != http::StatusCode::OK {
            return Ok(not_grpc(head.status.as_u16()));
        }
        let mut frames = Deframer {
            kept: self.keep_body.then(Vec::new),
            ..Deframer::default()
        };
        let mut bytes = 0u64;
        let mut kept = Vec::new();
        // A "trailers-only" answer puts the status in the headers and sends no body.
        let status = match status_of(&head.headers) {
            Some(s) => {
                if self.keep_body {
                    kept = kept_trailers(&head.headers);
                }
                s
            }
            None => {
                let enough = |f: &Deframer| self.shape.replies.is_some_and(|n| f.items >= n);
                if let Some(a) = &self.arrived {
                    a.lock().expect("not poisoned").clear();
                }
                while let Some(data) = next_data(&mut stream).await? {
                    bytes += data.len() as u64;
                    let before = frames.kept.as_ref().map_or(0, Vec::len);
                    frames.push(&data)?;
                    *so_far = frames.items;
                    if let (Some(a), Some(k)) = (&self.arrived, &frames.kept) {
                        a.lock()
                            .expect("not poisoned")
                            .extend(k[before..].iter().cloned());
                    }
                    if enough(&frames) {
                        break;
                    }
                }
                if enough(&frames) {
                    // The client ends the call here: dropping the stream cancels it.
                    (GrpcCode::Ok, None)
                } else {
                    let t = trailers(&mut stream).await?.unwrap_or_default();
                    if self.keep_body {
                        kept = kept_trailers(&t);
                    }
                    status_of(&t).ok_or_else(|| {
                        CallError::Protocol("gRPC response without grpc-status".into())
                    })?
                }
            }
        };
        if !frames.is_clean() && self.shape.replies.is_none() {
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
            trailers: kept,
        })
    }
}

impl Grpc {
    /// A call that sends one message through the lean client; the answer's messages are
    /// counted as they arrive, none kept.
    async fn call_lean(
        &self,
        lean: &mut Lean,
        head: &Head,
        message: &[u8],
        so_far: &mut u64,
    ) -> Result<Reply, CallError> {
        let mut frames = Deframer::default();
        let answer = lean
            .call(head, &[], message, &mut |data| {
                frames.push(data)?;
                *so_far = frames.items;
                Ok(())
            })
            .await?;
        if answer.status != 200 {
            return Ok(not_grpc(answer.status));
        }
        let code = answer
            .grpc_status
            .ok_or_else(|| CallError::Protocol("gRPC response without grpc-status".into()))?;
        if !frames.is_clean() {
            return Err(CallError::Protocol(
                "gRPC stream ended inside a message".into(),
            ));
        }
        Ok(Reply {
            class: Class::Grpc(GrpcCode::from_i64(code)),
            items: frames.items,
            bytes: answer.bytes,
            body: None,
            detail: answer
                .grpc_message
                .map(|m| percent_decode(&m))
                .filter(|m| !m.is_empty()),
            trailers: Vec::new(),
        })
    }
}

impl Protocol for Grpc {
    type Conn = H2Conn;

    async fn connect(&self) -> Result<H2Conn, CallError> {
        match self.lean {
            Some(_) => open_lean(&self.endpoint).await,
            None => open(&self.endpoint).await,
        }
    }

    fn reusable(&self, conn: &H2Conn) -> bool {
        conn.reusable()
    }

    async fn call(&self, conn: &mut H2Conn, seq: u64) -> Result<Reply, CallError> {
        let varying;
        let frames: &[Bytes] = match &self.body {
            Body::Fixed(f) => f,
            Body::Varying(t) => {
                varying = self.varying(t, seq)?;
                &varying
            }
        };
        conn.items = 0;
        if let (Some(head), (Some(lean), items)) = (&self.lean, conn.lean_items()) {
            return self.call_lean(lean, head, &frames[0], items).await;
        }
        if !self.method.is_client_streaming() {
            let (head, stream) = exchange(conn, self.head(), Some(frames[0].clone())).await?;
            return self.receive(head, stream, &mut conn.items).await;
        }
        let (response, send) = send_request(conn, self.head()).await?;
        let so_far = &mut conn.items;
        let answer = async {
            let (head, stream) = response.await.map_err(h2_error)?.into_parts();
            self.receive(head, stream, so_far).await
        };
        // A bidi server may answer while messages are still being sent.
        let (sent, answer) = tokio::join!(self.send_stream(send, frames), answer);
        match (sent, answer) {
            (_, Ok(reply)) => Ok(reply),
            (Err(e), Err(_)) => Err(e),
            (Ok(()), Err(e)) => Err(e),
        }
    }

    fn partial_items(&self, conn: &H2Conn) -> u64 {
        conn.items
    }

    fn describe(&self) -> String {
        let kind = kind_of(&self.method);
        format!(
            "gRPC {} {} ({kind})",
            self.endpoint.url().trim_end_matches('/'),
            self.path
        )
    }

    fn tls(&self) -> Option<String> {
        self.endpoint.tls.as_ref()?.negotiated().map(str::to_string)
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
            let mut counted = Deframer::default();
            for piece in wire.chunks(cut) {
                d.push(piece).unwrap();
                counted.push(piece).unwrap();
            }
            assert_eq!((d.items, counted.items), (3, 3), "cut {cut}");
            assert!(d.is_clean() && counted.is_clean());
            assert_eq!(
                d.kept.unwrap(),
                vec![b"abc".to_vec(), vec![], b"0123456789".to_vec()]
            );
        }
    }

    #[test]
    fn stream_bodies_split_into_message_templates() {
        let parts = split_array(r#"[{"a": {seq}, "s": "x,]"}, {"b": [1, 2]} , {}]"#).unwrap();
        assert_eq!(
            parts,
            [r#"{"a": {seq}, "s": "x,]"}"#, r#"{"b": [1, 2]}"#, "{}"]
        );
        assert_eq!(split_array("[]").unwrap(), Vec::<&str>::new());
        assert_eq!(split_array(r#"[{"q": "\"]"}]"#).unwrap().len(), 1);
        assert!(split_array(r#"{"a": 1}"#).is_none());
    }

    #[test]
    fn metadata_is_checked_before_sending() {
        let m = |k: &str, v: &str| metadata_headers(&[(k.to_string(), v.to_string())]);
        assert!(m("authorization", "Bearer x").is_ok());
        assert!(m("trace-bin", "AAEC").is_ok());
        let e = m("trace-bin", "not base64!").unwrap_err().to_string();
        assert!(e.contains("metadata `trace-bin` is a binary key"), "{e}");
        assert!(m("grpc-timeout", "1S")
            .unwrap_err()
            .to_string()
            .contains("gRPC protocol itself"));
        assert!(m("bad key", "v").is_err());
    }

    #[test]
    fn grpc_message_is_percent_decoded() {
        assert_eq!(percent_decode("key%20not%20found"), "key not found");
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(percent_decode("%zz"), "%zz");
    }
}
