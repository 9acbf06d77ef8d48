//! HTTP/2, one connection per client and one stream at a time on it: over cleartext with
//! prior knowledge ("h2c") for `http://`, over TLS negotiated by ALPN (`h2`) for `https://`.
//! gRPC rides on the same exchange. Calls that send one body and keep nothing of the answer
//! (the load engine's) go through the lean client (`lean2`); the others through the `h2`
//! crate.

use std::pin::Pin;
use std::task::{ready, Context, Poll};

use bytes::Bytes;
use h2::client::SendRequest;
use h2::RecvStream;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::hpack::{self, Head};
use super::http1::Http1Request;
use super::lean2::Lean;
use super::target::{connect, Endpoint};
use super::tls::Stream;
use super::{CallError, Class, Protocol, Reply};

pub struct H2Conn {
    way: Way,
    /// Messages the call in flight has received so far (gRPC streams): what a call cut
    /// short by its timeout still delivered.
    pub(crate) items: u64,
}

enum Way {
    Full(SendRequest<Bytes>),
    Lean(Box<Lean>),
}

impl H2Conn {
    /// The lean client, when the connection is one, and the count of messages received.
    pub(crate) fn lean_items(&mut self) -> (Option<&mut Lean>, &mut u64) {
        match &mut self.way {
            Way::Lean(l) => (Some(l), &mut self.items),
            Way::Full(_) => (None, &mut self.items),
        }
    }

    fn full(&self) -> Result<&SendRequest<Bytes>, CallError> {
        match &self.way {
            Way::Full(send) => Ok(send),
            Way::Lean(_) => Err(CallError::Protocol(
                "a lean HTTP/2 connection was given a call it does not make".into(),
            )),
        }
    }

    pub fn reusable(&self) -> bool {
        match &self.way {
            Way::Full(_) => true,
            Way::Lean(l) => l.reusable(),
        }
    }
}

/// Opens a connection for the lean client.
pub async fn open_lean(endpoint: &Endpoint) -> Result<H2Conn, CallError> {
    Ok(H2Conn {
        way: Way::Lean(Box::new(Lean::open(endpoint).await?)),
        items: 0,
    })
}

/// Writes made while the connection is polled go out together: the frames h2 writes are
/// kept until a flush, and the first flush of a batch is put off by one turn of the runtime
/// (the connection task wakes itself), so a PING acknowledgement written while reading an
/// answer leaves in the same syscall as the next request instead of one of its own, as
/// nghttp2 does. Against gRPC-Go servers, which ping with every answer to estimate the
/// bandwidth, that halves the client's writes (`benches/peers.sh`, BENCHMARKS.md).
struct Coalesce {
    io: Stream,
    buf: Vec<u8>,
    /// Bytes of `buf` already written.
    sent: usize,
    deferred: bool,
}

/// Whether `bytes` are whole HTTP/2 frames none of which carries a request (HEADERS,
/// DATA, CONTINUATION); the connection preface and anything unparsed count as a request.
fn only_control_frames(mut bytes: &[u8]) -> bool {
    if bytes.is_empty() || bytes.starts_with(b"PRI ") {
        return false;
    }
    while !bytes.is_empty() {
        if bytes.len() < 9 {
            return false;
        }
        let len = u32::from_be_bytes([0, bytes[0], bytes[1], bytes[2]]) as usize;
        if matches!(bytes[3], 0x0 | 0x1 | 0x9) || bytes.len() < 9 + len {
            return false;
        }
        bytes = &bytes[9 + len..];
    }
    true
}

/// Past this much buffered, writes go out without waiting for the flush.
const COALESCE_MAX: usize = 256 * 1024;

impl Coalesce {
    fn drain(&mut self, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        while self.sent < self.buf.len() {
            let n = ready!(Pin::new(&mut self.io).poll_write(cx, &self.buf[self.sent..]))?;
            if n == 0 {
                return Poll::Ready(Err(std::io::ErrorKind::WriteZero.into()));
            }
            self.sent += n;
        }
        self.buf.clear();
        self.sent = 0;
        Poll::Ready(Ok(()))
    }
}

impl AsyncRead for Coalesce {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_read(cx, buf)
    }
}

impl AsyncWrite for Coalesce {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        if this.buf.len() >= COALESCE_MAX {
            ready!(this.drain(cx))?;
        }
        this.buf.extend_from_slice(data);
        Poll::Ready(Ok(data.len()))
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        if this.buf.len() >= COALESCE_MAX {
            ready!(this.drain(cx))?;
        }
        let mut n = 0;
        for b in bufs {
            this.buf.extend_from_slice(b);
            n += b.len();
        }
        Poll::Ready(Ok(n))
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        if this.buf.is_empty() {
            return Pin::new(&mut this.io).poll_flush(cx);
        }
        // A request goes at once; only control frames (a PING ack, a window update) wait a
        // turn for the next request to join them.
        if !this.deferred && only_control_frames(&this.buf[this.sent..]) {
            this.deferred = true;
            cx.waker().wake_by_ref();
            return Poll::Ready(Ok(()));
        }
        ready!(this.drain(cx))?;
        this.deferred = false;
        Pin::new(&mut this.io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        ready!(this.drain(cx))?;
        Pin::new(&mut this.io).poll_shutdown(cx)
    }
}

/// Opens an HTTP/2 connection and drives it on the current `LocalSet` (every caller runs
/// inside one: the load workers, [`crate::protocol::Protocol`] callers' one-off calls, and
/// reflection).
pub async fn open(endpoint: &Endpoint) -> Result<H2Conn, CallError> {
    let tcp = Coalesce {
        io: connect(endpoint).await?.expect_h2(),
        buf: Vec::new(),
        sent: 0,
        deferred: false,
    };
    let (send, connection) = h2::client::Builder::new()
        .initial_window_size(4 << 20)
        .initial_connection_window_size(16 << 20)
        .handshake::<_, Bytes>(tcp)
        .await
        .map_err(|e| CallError::Protocol(format!("HTTP/2 handshake failed: {e}")))?;
    // On the caller's LocalSet, so the connection task and the clients share one queue:
    // a client woken by an answer runs before the connection's put-off flush (`Coalesce`).
    tokio::task::spawn_local(async move {
        let _ = connection.await;
    });
    Ok(H2Conn {
        way: Way::Full(send),
        items: 0,
    })
}

pub fn h2_error(e: h2::Error) -> CallError {
    if let Some(io) = e.get_io() {
        if let Some(why) = super::tls::explain_io(io) {
            return CallError::Tls(why);
        }
    }
    // Not processed (RFC 9113 §8.7): a graceful GOAWAY errors only the streams past its last
    // (those before it end in a broken pipe if the connection closes) and requests made after
    // it, which never went out; REFUSED_STREAM says so of its stream.
    let refused = match e.reason() {
        Some(h2::Reason::NO_ERROR) => e.is_go_away(),
        Some(h2::Reason::REFUSED_STREAM) => e.is_reset(),
        _ => false,
    };
    if refused && e.is_remote() {
        return CallError::Unprocessed(e.to_string());
    }
    if e.is_io() {
        CallError::Io(e.to_string())
    } else {
        CallError::Protocol(e.to_string())
    }
}

/// Sends one request with an optional body and returns the response head and body stream.
pub async fn exchange(
    conn: &mut H2Conn,
    request: http::Request<()>,
    body: Option<Bytes>,
) -> Result<(http::response::Parts, RecvStream), CallError> {
    let mut send = conn.full()?.clone().ready().await.map_err(h2_error)?;
    let (response, mut stream) = send
        .send_request(request, body.is_none())
        .map_err(h2_error)?;
    if let Some(body) = body {
        stream.send_data(body, true).map_err(h2_error)?;
    }
    let response = response.await.map_err(h2_error)?;
    Ok(response.into_parts())
}

/// Opens a stream whose body the caller sends (client-streaming and bidi gRPC).
pub async fn send_request(
    conn: &mut H2Conn,
    request: http::Request<()>,
) -> Result<(h2::client::ResponseFuture, h2::SendStream<Bytes>), CallError> {
    let mut send = conn.full()?.clone().ready().await.map_err(h2_error)?;
    send.send_request(request, false).map_err(h2_error)
}

/// Reads the next DATA frame and gives its flow-control credit back at once.
pub async fn next_data(body: &mut RecvStream) -> Result<Option<Bytes>, CallError> {
    match body.data().await {
        None => Ok(None),
        Some(Err(e)) => Err(h2_error(e)),
        Some(Ok(data)) => {
            let _ = body.flow_control().release_capacity(data.len());
            Ok(Some(data))
        }
    }
}

pub async fn trailers(body: &mut RecvStream) -> Result<Option<http::HeaderMap>, CallError> {
    body.trailers().await.map_err(h2_error)
}

/// Plain HTTP requests over HTTP/2.
pub struct Http2 {
    endpoint: Endpoint,
    request: Http1Request,
    method: http::Method,
    /// Built once: the URI when the path has no templates, and the headers.
    uri: Option<http::Uri>,
    headers: http::HeaderMap,
    seed: u64,
    keep_body: bool,
    /// The lean client's request head (every field but a `:path` that changes), and the
    /// body when it never changes; `None` when calls go through `h2`.
    lean: Option<Head>,
    fixed_body: Option<Vec<u8>>,
}

/// HTTP/2 refuses connection-specific header fields (RFC 9113 §8.2.2).
fn connection_specific(name: &str) -> bool {
    [
        "connection",
        "keep-alive",
        "proxy-connection",
        "transfer-encoding",
        "upgrade",
    ]
    .iter()
    .any(|n| name.eq_ignore_ascii_case(n))
}

/// `scheme://authority/path` as a URI.
pub fn uri(endpoint: &Endpoint, path: &str) -> Result<http::Uri, CallError> {
    format!("{}://{}{path}", endpoint.scheme(), endpoint.authority)
        .parse()
        .map_err(|e| CallError::Request(format!("bad request path `{path}`: {e}")))
}

impl Http2 {
    pub fn new(
        endpoint: Endpoint,
        request: Http1Request,
        seed: u64,
        keep_body: bool,
    ) -> Result<Http2, String> {
        let method = http::Method::from_bytes(request.method.as_bytes())
            .map_err(|_| format!("`{}` is not an HTTP method", request.method))?;
        let mut headers = http::HeaderMap::new();
        for (k, v) in &request.headers {
            // HTTP/2 carries the host as :authority; a Host header would be sent twice.
            if k.eq_ignore_ascii_case("host") {
                continue;
            }
            if connection_specific(k) {
                return Err(format!("header `{k}` is not allowed in HTTP/2"));
            }
            let name = http::HeaderName::from_bytes(k.as_bytes())
                .map_err(|_| format!("`{k}` is not a valid header name"))?;
            let value = http::HeaderValue::from_str(v)
                .map_err(|_| format!("the value of header `{k}` is not valid"))?;
            headers.append(name, value);
        }
        let uri = match request.path.is_static() {
            true => Some(
                uri(&endpoint, &request.path.render_string(0, seed)).map_err(|e| e.to_string())?,
            ),
            false => None,
        };
        let lean = (!keep_body && !super::lean2::disabled()).then(|| {
            let path = uri
                .as_ref()
                .map(|u| u.path_and_query().map_or("/", |p| p.as_str()));
            let mut fields = vec![
                (":method", method.as_str()),
                (":scheme", endpoint.scheme()),
                (":authority", endpoint.authority.as_str()),
            ];
            fields.extend(path.map(|p| (":path", p)));
            for (k, v) in &headers {
                fields.push((k.as_str(), v.to_str().unwrap_or_default()));
            }
            Head::new(&fields)
        });
        let fixed_body = match &request.body {
            Some(b) if b.is_static() => Some(b.render_string(0, seed).into_bytes()),
            _ => None,
        };
        Ok(Http2 {
            endpoint,
            request,
            method,
            uri,
            headers,
            seed,
            keep_body,
            lean,
            fixed_body,
        })
    }

    fn build(&self, seq: u64) -> Result<(http::Request<()>, Option<Bytes>), CallError> {
        let uri = match &self.uri {
            Some(u) => u.clone(),
            None => uri(
                &self.endpoint,
                &self.request.path.render_string(seq, self.seed),
            )?,
        };
        let mut req = http::Request::new(());
        *req.method_mut() = self.method.clone();
        *req.uri_mut() = uri;
        *req.headers_mut() = self.headers.clone();
        let body = self
            .request
            .body
            .as_ref()
            .map(|b| Bytes::from(b.render_string(seq, self.seed)));
        Ok((req, body))
    }

    async fn call_lean(&self, lean: &mut Lean, head: &Head, seq: u64) -> Result<Reply, CallError> {
        let mut path = Vec::new();
        if self.uri.is_none() {
            let p = self.request.path.render_string(seq, self.seed);
            http::uri::PathAndQuery::try_from(p.as_str())
                .map_err(|e| CallError::Request(format!("bad request path `{p}`: {e}")))?;
            hpack::put_literal(&mut path, ":path", p.as_bytes());
        }
        let rendered;
        let body: &[u8] = match (&self.fixed_body, &self.request.body) {
            (Some(b), _) => b,
            (None, Some(t)) => {
                rendered = t.render_string(seq, self.seed);
                rendered.as_bytes()
            }
            (None, None) => &[],
        };
        let answer = lean.call(head, &path, body, &mut |_| Ok(())).await?;
        Ok(Reply {
            class: Class::Http(answer.status),
            items: 1,
            bytes: answer.bytes,
            body: None,
            detail: None,
            trailers: Vec::new(),
        })
    }
}

impl Protocol for Http2 {
    type Conn = H2Conn;

    async fn connect(&self) -> Result<H2Conn, CallError> {
        match self.lean {
            Some(_) => open_lean(&self.endpoint).await,
            None => open(&self.endpoint).await,
        }
    }

    async fn call(&self, conn: &mut H2Conn, seq: u64) -> Result<Reply, CallError> {
        if let (Some(head), (Some(lean), _)) = (&self.lean, conn.lean_items()) {
            return self.call_lean(lean, head, seq).await;
        }
        let (req, body) = self.build(seq)?;
        let (head, mut stream) = exchange(conn, req, body).await?;
        let mut kept = self.keep_body.then(Vec::new);
        let mut total = 0u64;
        while let Some(data) = next_data(&mut stream).await? {
            total += data.len() as u64;
            if let Some(k) = &mut kept {
                super::kept_within(k.len() + data.len())?;
                k.extend_from_slice(&data);
            }
        }
        Ok(Reply {
            class: Class::Http(head.status.as_u16()),
            items: 1,
            bytes: total,
            body: kept.map(|b| vec![b]),
            detail: None,
            trailers: Vec::new(),
        })
    }

    fn reusable(&self, conn: &H2Conn) -> bool {
        conn.reusable()
    }

    fn describe(&self) -> String {
        let how = if self.endpoint.secure { "TLS" } else { "h2c" };
        format!("HTTP/2 ({how}) {} {}", self.method, self.endpoint.url())
    }

    fn tls(&self) -> Option<String> {
        self.endpoint.tls.as_ref()?.negotiated().map(str::to_string)
    }
}

#[cfg(test)]
mod tests {
    use super::only_control_frames;

    #[test]
    fn only_control_frames_wait_for_company() {
        let ping_ack = [0, 0, 8, 6, 1, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8];
        let window = [0, 0, 4, 8, 0, 0, 0, 0, 0, 0, 0, 1, 0];
        let headers = [0, 0, 1, 1, 4, 0, 0, 0, 1, 0x82];
        assert!(only_control_frames(&ping_ack));
        assert!(only_control_frames(&[&ping_ack[..], &window[..]].concat()));
        assert!(!only_control_frames(
            &[&ping_ack[..], &headers[..]].concat()
        ));
        assert!(!only_control_frames(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"));
        assert!(!only_control_frames(&ping_ack[..12]));
        assert!(!only_control_frames(&[]));
    }
}
