//! HTTP/1.1 over one keep-alive connection per client. A request without templates is encoded
//! once and written as is; responses are parsed in place with `httparse`, and bodies are
//! counted, not copied, unless the caller needs them (JSON-RPC, `bakeoff call`).

use std::net::SocketAddr;

use super::target::{connect, Endpoint};
use super::template::Template;
use super::tls::Stream;
use super::{CallError, Class, Protocol, Reply};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const READ_BUF: usize = 64 * 1024;
const MAX_HEAD: usize = 1024 * 1024;

/// How to build each request.
#[derive(Debug, Clone)]
pub struct Http1Request {
    pub method: String,
    pub path: Template,
    pub headers: Vec<(String, String)>,
    pub body: Option<Template>,
}

pub struct Http1 {
    endpoint: Endpoint,
    request: Http1Request,
    seed: u64,
    keep_body: bool,
    /// The whole request, when it is the same every time.
    encoded: Option<Vec<u8>>,
}

pub struct Http1Conn {
    stream: Stream,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    reusable: bool,
    scratch: Vec<u8>,
}

impl Http1 {
    pub fn new(endpoint: Endpoint, request: Http1Request, seed: u64, keep_body: bool) -> Http1 {
        let is_static =
            request.path.is_static() && request.body.as_ref().is_none_or(Template::is_static);
        let mut http = Http1 {
            endpoint,
            request,
            seed,
            keep_body,
            encoded: None,
        };
        if is_static {
            let mut buf = Vec::new();
            http.encode(0, &mut buf);
            http.encoded = Some(buf);
        }
        http
    }

    pub fn addr(&self) -> SocketAddr {
        self.endpoint.addr
    }

    fn encode(&self, seq: u64, out: &mut Vec<u8>) {
        use std::io::Write as _;
        out.clear();
        let r = &self.request;
        let path = r.path.render_string(seq, self.seed);
        let body = r.body.as_ref().map(|b| b.render_string(seq, self.seed));
        let _ = write!(out, "{} {} HTTP/1.1\r\n", r.method, path);
        let has = |name: &str| r.headers.iter().any(|(k, _)| k.eq_ignore_ascii_case(name));
        if !has("host") {
            let _ = write!(out, "Host: {}\r\n", self.endpoint.authority);
        }
        if !has("user-agent") {
            let _ = write!(out, "User-Agent: bakeoff/{}\r\n", env!("CARGO_PKG_VERSION"));
        }
        for (k, v) in &r.headers {
            let _ = write!(out, "{k}: {v}\r\n");
        }
        if let Some(body) = &body {
            let _ = write!(out, "Content-Length: {}\r\n\r\n", body.len());
            out.extend_from_slice(body.as_bytes());
        } else {
            out.extend_from_slice(b"\r\n");
        }
    }

    async fn exchange(&self, c: &mut Http1Conn, seq: u64) -> Result<Reply, CallError> {
        if !c.reusable {
            *c = self.connect().await?;
        }
        let request: &[u8] = match &self.encoded {
            Some(bytes) => bytes,
            None => {
                let mut scratch = std::mem::take(&mut c.scratch);
                self.encode(seq, &mut scratch);
                c.scratch = scratch;
                &c.scratch
            }
        };
        c.stream
            .write_all(request)
            .await
            .map_err(super::tls::call_error)?;
        let head_only = self.request.method.eq_ignore_ascii_case("HEAD");
        read_response(c, head_only, self.keep_body).await
    }
}

impl Protocol for Http1 {
    type Conn = Http1Conn;

    async fn connect(&self) -> Result<Http1Conn, CallError> {
        Ok(Http1Conn {
            stream: connect(&self.endpoint).await?,
            buf: vec![0; READ_BUF],
            start: 0,
            end: 0,
            reusable: true,
            scratch: Vec::new(),
        })
    }

    async fn call(&self, conn: &mut Http1Conn, seq: u64) -> Result<Reply, CallError> {
        self.exchange(conn, seq).await
    }

    fn describe(&self) -> String {
        format!("HTTP/1.1 {} {}", self.request.method, self.endpoint.url())
    }

    fn reusable(&self, conn: &Http1Conn) -> bool {
        conn.reusable
    }

    fn tls(&self) -> Option<String> {
        self.endpoint.tls.as_ref()?.negotiated().map(str::to_string)
    }
}

/// Reads more bytes into the connection buffer; `Ok(0)` is end of stream.
async fn fill(c: &mut Http1Conn) -> Result<usize, CallError> {
    if c.start == c.end {
        c.start = 0;
        c.end = 0;
    } else if c.end == c.buf.len() {
        if c.start > 0 {
            c.buf.copy_within(c.start..c.end, 0);
            c.end -= c.start;
            c.start = 0;
        } else if c.buf.len() < MAX_HEAD {
            c.buf.resize(c.buf.len() * 2, 0);
        } else {
            return Err(CallError::Protocol(
                "response head larger than 1 MiB".into(),
            ));
        }
    }
    let n = c
        .stream
        .read(&mut c.buf[c.end..])
        .await
        .map_err(super::tls::call_error)?;
    c.end += n;
    Ok(n)
}

enum Framing {
    Length(u64),
    Chunked,
    UntilClose,
}

struct Head {
    status: u16,
    framing: Framing,
    close: bool,
}

fn parse_head(bytes: &[u8], head_only: bool) -> Result<Option<(Head, usize)>, CallError> {
    // Uninitialised: httparse writes the headers it finds, so the 2 KiB of a fresh header
    // array is not cleared for every response.
    let mut headers = [const { std::mem::MaybeUninit::<httparse::Header>::uninit() }; 64];
    let mut resp = httparse::Response::new(&mut []);
    let n = match httparse::ParserConfig::default().parse_response_with_uninit_headers(
        &mut resp,
        bytes,
        &mut headers,
    ) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(e) => return Err(CallError::Protocol(format!("bad HTTP response: {e}"))),
    };
    let status = resp.code.unwrap_or(0);
    let mut framing = Framing::UntilClose;
    let mut close = resp.version == Some(0);
    for h in resp.headers.iter() {
        if h.name.eq_ignore_ascii_case("content-length") {
            let len = std::str::from_utf8(h.value)
                .ok()
                .and_then(|v| v.trim().parse().ok())
                .ok_or_else(|| CallError::Protocol("bad Content-Length".into()))?;
            if matches!(framing, Framing::Length(other) if other != len) {
                // Two lengths: which one frames the body is the classic smuggling question.
                return Err(CallError::Protocol(
                    "two different Content-Length headers".into(),
                ));
            }
            if !matches!(framing, Framing::Chunked) {
                framing = Framing::Length(len);
            }
        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
            if h.value.eq_ignore_ascii_case(b"chunked")
                || h.value.to_ascii_lowercase().ends_with(b"chunked")
            {
                framing = Framing::Chunked;
            }
        } else if h.name.eq_ignore_ascii_case("connection") {
            if h.value.eq_ignore_ascii_case(b"close") {
                close = true;
            } else if h.value.eq_ignore_ascii_case(b"keep-alive") {
                close = false;
            }
        }
    }
    if head_only || status == 204 || status == 304 || (100..200).contains(&status) {
        framing = Framing::Length(0);
    }
    Ok(Some((
        Head {
            status,
            framing,
            close,
        },
        n,
    )))
}

async fn read_response(
    c: &mut Http1Conn,
    head_only: bool,
    keep_body: bool,
) -> Result<Reply, CallError> {
    let head = loop {
        if let Some((head, n)) = parse_head(&c.buf[c.start..c.end], head_only)? {
            c.start += n;
            if (100..200).contains(&head.status) && head.status != 101 {
                continue; // an interim response: the real one follows
            }
            break head;
        }
        if fill(c).await? == 0 {
            return Err(CallError::Io("connection closed before a response".into()));
        }
    };
    let mut body = keep_body.then(Vec::new);
    let mut total: u64 = 0;
    match head.framing {
        Framing::Length(mut left) => loop {
            let avail = ((c.end - c.start) as u64).min(left) as usize;
            take(c, avail, &mut body, &mut total)?;
            left -= avail as u64;
            if left == 0 {
                break;
            }
            if fill(c).await? == 0 {
                return Err(CallError::Io(
                    "connection closed inside a response body".into(),
                ));
            }
        },
        Framing::Chunked => {
            let mut chunks = Chunked::default();
            loop {
                let used = chunks
                    .feed(&c.buf[c.start..c.end], &mut body, &mut total)
                    .map_err(|e| CallError::Protocol(e.into()))?;
                c.start += used;
                super::kept_within(body.as_ref().map_or(0, Vec::len))?;
                if chunks.done() {
                    break;
                }
                if fill(c).await? == 0 {
                    return Err(CallError::Io(
                        "connection closed inside a chunked body".into(),
                    ));
                }
            }
        }
        Framing::UntilClose => {
            loop {
                let avail = c.end - c.start;
                take(c, avail, &mut body, &mut total)?;
                if fill(c).await? == 0 {
                    break;
                }
            }
            c.reusable = false;
        }
    }
    if head.close {
        c.reusable = false;
    }
    Ok(Reply {
        class: Class::Http(head.status),
        items: 1,
        bytes: total,
        body: body.map(|b| vec![b]),
        detail: None,
        trailers: Vec::new(),
    })
}

fn take(
    c: &mut Http1Conn,
    n: usize,
    body: &mut Option<Vec<u8>>,
    total: &mut u64,
) -> Result<(), CallError> {
    if let Some(b) = body {
        super::kept_within(b.len() + n)?;
        b.extend_from_slice(&c.buf[c.start..c.start + n]);
    }
    c.start += n;
    *total += n as u64;
    Ok(())
}

/// A decoder for `Transfer-Encoding: chunked` (RFC 9112 §7.1) that consumes what it can
/// from each slice and keeps its place between reads.
#[derive(Default)]
struct Chunked {
    state: ChunkState,
}

#[derive(Default, PartialEq)]
enum ChunkState {
    #[default]
    Size,
    Data(u64),
    DataEnd,
    Trailer,
    Done,
}

impl Chunked {
    fn done(&self) -> bool {
        self.state == ChunkState::Done
    }

    fn feed(
        &mut self,
        input: &[u8],
        body: &mut Option<Vec<u8>>,
        total: &mut u64,
    ) -> Result<usize, &'static str> {
        let mut i = 0;
        loop {
            match self.state {
                ChunkState::Done => return Ok(i),
                ChunkState::Size => {
                    let Some(nl) = input[i..].iter().position(|&b| b == b'\n') else {
                        return Ok(i);
                    };
                    let line = &input[i..i + nl];
                    let hex = line.split(|&b| b == b';').next().unwrap_or(b"");
                    let hex = std::str::from_utf8(hex)
                        .map_err(|_| "bad chunk size")?
                        .trim();
                    let size = u64::from_str_radix(hex, 16).map_err(|_| "bad chunk size")?;
                    i += nl + 1;
                    self.state = if size == 0 {
                        ChunkState::Trailer
                    } else {
                        ChunkState::Data(size)
                    };
                }
                ChunkState::Data(left) => {
                    let n = ((input.len() - i) as u64).min(left) as usize;
                    if n == 0 {
                        return Ok(i);
                    }
                    if let Some(b) = body {
                        b.extend_from_slice(&input[i..i + n]);
                    }
                    *total += n as u64;
                    i += n;
                    self.state = if left == n as u64 {
                        ChunkState::DataEnd
                    } else {
                        ChunkState::Data(left - n as u64)
                    };
                }
                ChunkState::DataEnd | ChunkState::Trailer => {
                    let Some(nl) = input[i..].iter().position(|&b| b == b'\n') else {
                        return Ok(i);
                    };
                    let line_empty = input[i..i + nl].iter().all(|&b| b == b'\r');
                    i += nl + 1;
                    if self.state == ChunkState::DataEnd {
                        if !line_empty {
                            return Err("chunk data longer than its size");
                        }
                        self.state = ChunkState::Size;
                    } else if line_empty {
                        self.state = ChunkState::Done;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_in_pieces(wire: &[u8], piece: usize) -> Result<(Vec<u8>, usize), &'static str> {
        let mut c = Chunked::default();
        let mut body = Some(Vec::new());
        let mut total = 0;
        let mut pending: Vec<u8> = Vec::new();
        let mut consumed = 0;
        for p in wire.chunks(piece) {
            pending.extend_from_slice(p);
            let used = c.feed(&pending, &mut body, &mut total)?;
            consumed += used;
            pending.drain(..used);
            if c.done() {
                break;
            }
        }
        assert!(c.done(), "decoder did not finish");
        assert_eq!(total as usize, body.as_ref().unwrap().len());
        Ok((body.unwrap(), consumed))
    }

    #[test]
    fn chunked_bodies_decode_whatever_the_read_boundaries() {
        let wire = b"5;ext=1\r\nhello\r\n7\r\n, world\r\n0\r\nX-Trailer: y\r\n\r\nNEXT";
        for piece in 1..wire.len() {
            let (body, used) = decode_in_pieces(wire, piece).unwrap();
            assert_eq!(body, b"hello, world", "piece size {piece}");
            assert_eq!(used, wire.len() - 4, "piece size {piece}");
        }
    }

    #[test]
    fn chunked_rejects_garbage() {
        assert!(decode_in_pieces(b"zz\r\nhello\r\n0\r\n\r\n", 64).is_err());
        assert!(decode_in_pieces(b"2\r\nhello\r\n0\r\n\r\n", 64).is_err());
    }

    #[test]
    fn heads_give_status_framing_and_close() {
        let (h, n) = parse_head(
            b"HTTP/1.1 404 Not Found\r\nContent-Length: 3\r\n\r\nabc",
            false,
        )
        .unwrap()
        .unwrap();
        assert_eq!((h.status, n, h.close), (404, 45, false));
        assert!(matches!(h.framing, Framing::Length(3)));
        let (h, _) = parse_head(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
            false,
        )
        .unwrap()
        .unwrap();
        assert!(matches!(h.framing, Framing::Chunked) && h.close);
        let (h, _) = parse_head(b"HTTP/1.0 200 OK\r\n\r\n", false)
            .unwrap()
            .unwrap();
        assert!(matches!(h.framing, Framing::UntilClose) && h.close);
        assert!(parse_head(b"HTTP/1.1 200 OK\r\nContent-Le", false)
            .unwrap()
            .is_none());
        assert!(parse_head(b"SMTP ready\r\n\r\n", false).is_err());
        let two = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 50\r\n\r\n";
        assert!(parse_head(two, false).is_err());
        let same = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n";
        assert!(parse_head(same, false).is_ok());
    }

    #[test]
    fn static_requests_are_encoded_once_with_host_and_length() {
        let e = Endpoint::parse("http://127.0.0.1:8080/x").unwrap();
        let req = Http1Request {
            method: "POST".into(),
            path: Template::parse("/x").unwrap(),
            headers: vec![("X-A".into(), "1".into())],
            body: Some(Template::parse("hello").unwrap()),
        };
        let h = Http1::new(e, req, 0, false);
        let wire = String::from_utf8(h.encoded.clone().unwrap()).unwrap();
        assert!(wire.starts_with("POST /x HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n"));
        assert!(wire.contains("X-A: 1\r\n"));
        assert!(wire.ends_with("Content-Length: 5\r\n\r\nhello"));
    }
}
