//! HTTP/1.1 over one keep-alive connection per client. A request without templates is encoded
//! once and written as is; responses are parsed in place with `httparse`, and bodies are
//! counted, not copied, unless the caller needs them (JSON-RPC, `bakeoff call`).

use std::net::SocketAddr;

use super::target::{connect, Endpoint};
use super::template::Template;
use super::tls::Stream;
use super::{Answer, CallError, Class, Fed, Fixed, Inbox, Protocol, Reply};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

mod chunked;
use chunked::Chunked;

/// The longest request the load engine sends itself (`Protocol::fixed`): one that fits a
/// socket's send buffer, so a send never waits for the server to read.
const FIXED_MAX: usize = 16 * 1024;

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
    inbox: Inbox,
    answer: Http1Answer,
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

    fn head_only(&self) -> bool {
        self.request.method.eq_ignore_ascii_case("HEAD")
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
        read_response(c).await
    }
}

impl Protocol for Http1 {
    type Conn = Http1Conn;

    async fn connect(&self) -> Result<Http1Conn, CallError> {
        Ok(Http1Conn {
            stream: connect(&self.endpoint).await?,
            inbox: Inbox::new(),
            answer: Http1Answer::new(self.head_only(), self.keep_body),
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

    fn fixed(&self) -> Option<Fixed<'_>> {
        let request = self.encoded.as_deref()?;
        if self.endpoint.secure || self.keep_body || request.len() > FIXED_MAX {
            return None;
        }
        let head_only = self.head_only();
        Some(Fixed {
            addr: self.endpoint.addr,
            request,
            reader: Box::new(move || Box::new(Http1Answer::new(head_only, false))),
        })
    }
}

/// Reads more bytes into the connection's inbox; `Ok(0)` is end of stream.
async fn fill(c: &mut Http1Conn) -> Result<usize, CallError> {
    let space = c.inbox.space()?;
    let n = c.stream.read(space).await.map_err(super::tls::call_error)?;
    c.inbox.filled(n);
    Ok(n)
}

#[derive(Clone, Copy)]
enum Framing {
    Length(u64),
    Chunked,
    UntilClose,
}

#[derive(Clone, Copy)]
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

async fn read_response(c: &mut Http1Conn) -> Result<Reply, CallError> {
    let mut eof = false;
    loop {
        match c.answer.feed(c.inbox.unread(), eof)? {
            Fed::Done {
                used,
                reply,
                reusable,
            } => {
                c.inbox.used(used);
                c.reusable &= reusable;
                return Ok(reply);
            }
            Fed::More(used) => {
                c.inbox.used(used);
                eof = fill(c).await? == 0;
            }
        }
    }
}

/// One connection's answers, read as their bytes arrive, whoever reads them: the call's own
/// read loop above, or the load engine's ring (`Protocol::fixed`).
pub struct Http1Answer {
    head_only: bool,
    keep_body: bool,
    stage: Stage,
    status: u16,
    close: bool,
    total: u64,
    body: Option<Vec<u8>>,
    /// The last head read, its bytes and what they said. A server's heads are most often the
    /// same bytes answer after answer (nginx's change once a second, with their `Date`), and
    /// the same bytes read the same: compared, not parsed again, they cost a memcmp instead
    /// of httparse's pass and the header comparisons after it.
    last: Option<(Vec<u8>, Head)>,
}

enum Stage {
    Head,
    Length(u64),
    Chunked(Chunked),
    UntilClose,
}

impl Http1Answer {
    pub fn new(head_only: bool, keep_body: bool) -> Http1Answer {
        Http1Answer {
            head_only,
            keep_body,
            stage: Stage::Head,
            status: 0,
            close: false,
            total: 0,
            body: None,
            last: None,
        }
    }

    /// The head at the start of `bytes`: the last one again when it is the same bytes, else
    /// parsed (and remembered).
    fn head(&mut self, bytes: &[u8]) -> Result<Option<(Head, usize)>, CallError> {
        if let Some((seen, head)) = &self.last {
            if bytes.starts_with(seen) {
                return Ok(Some((*head, seen.len())));
            }
        }
        let parsed = parse_head(bytes, self.head_only)?;
        if let Some((head, n)) = parsed {
            let (seen, last) = self.last.get_or_insert_with(|| (Vec::new(), head));
            seen.clear();
            seen.extend_from_slice(&bytes[..n]);
            *last = head;
        }
        Ok(parsed)
    }

    /// After a framed body's bytes: the answer whole, the server gone before it was (`where_`
    /// it closed), or more to come.
    fn framed(
        &mut self,
        used: usize,
        whole: bool,
        eof: bool,
        where_: &str,
    ) -> Result<Fed, CallError> {
        if whole {
            Ok(self.finish(used, true))
        } else if eof {
            Err(CallError::Io(format!("connection closed {where_}")))
        } else {
            Ok(Fed::More(used))
        }
    }

    /// The answer is whole: its reply, and this reader ready for the next one.
    fn finish(&mut self, used: usize, framed: bool) -> Fed {
        let reply = Reply {
            class: Class::Http(self.status),
            items: 1,
            bytes: self.total,
            body: self.body.take().map(|b| vec![b]),
            detail: None,
            trailers: Vec::new(),
        };
        self.stage = Stage::Head;
        self.total = 0;
        Fed::Done {
            used,
            reply,
            reusable: framed && !self.close,
        }
    }
}

impl Answer for Http1Answer {
    fn feed(&mut self, bytes: &[u8], eof: bool) -> Result<Fed, CallError> {
        let mut used = 0;
        loop {
            let rest = &bytes[used..];
            match &mut self.stage {
                Stage::Head => {
                    let Some((head, n)) = self.head(rest)? else {
                        return if eof {
                            Err(CallError::Io("connection closed before a response".into()))
                        } else {
                            Ok(Fed::More(used))
                        };
                    };
                    used += n;
                    if (100..200).contains(&head.status) && head.status != 101 {
                        continue; // an interim response: the real one follows
                    }
                    self.status = head.status;
                    self.close = head.close;
                    self.body = self.keep_body.then(Vec::new);
                    self.stage = match head.framing {
                        Framing::Length(n) => Stage::Length(n),
                        Framing::Chunked => Stage::Chunked(Chunked::default()),
                        Framing::UntilClose => Stage::UntilClose,
                    };
                }
                Stage::Length(left) => {
                    let n = (rest.len() as u64).min(*left) as usize;
                    *left -= n as u64;
                    let whole = *left == 0;
                    take(&rest[..n], &mut self.body, &mut self.total)?;
                    return self.framed(used + n, whole, eof, "inside a response body");
                }
                Stage::Chunked(chunks) => {
                    used += chunks
                        .feed(rest, &mut self.body, &mut self.total)
                        .map_err(|e| CallError::Protocol(e.into()))?;
                    let whole = chunks.done();
                    super::kept_within(self.body.as_ref().map_or(0, Vec::len))?;
                    return self.framed(used, whole, eof, "inside a chunked body");
                }
                Stage::UntilClose => {
                    take(rest, &mut self.body, &mut self.total)?;
                    used = bytes.len();
                    return if eof {
                        Ok(self.finish(used, false))
                    } else {
                        Ok(Fed::More(used))
                    };
                }
            }
        }
    }
}

fn take(bytes: &[u8], body: &mut Option<Vec<u8>>, total: &mut u64) -> Result<(), CallError> {
    if let Some(b) = body {
        super::kept_within(b.len() + bytes.len())?;
        b.extend_from_slice(bytes);
    }
    *total += bytes.len() as u64;
    Ok(())
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

    /// Feeds `wire` to a fresh reader cut at `cut` (and the rest after), as an inbox would:
    /// unused bytes are offered again with the next ones. The reply, whether the connection
    /// is reusable, and the bytes of `wire` it left unread.
    fn read_cut(
        wire: &[u8],
        cut: usize,
        head_only: bool,
        eof_after: bool,
    ) -> Result<(Reply, bool, usize), CallError> {
        let mut a = Http1Answer::new(head_only, true);
        let mut start = 0;
        for (end, eof) in [(cut, false), (wire.len(), eof_after)] {
            match a.feed(&wire[start..end], eof)? {
                Fed::Done {
                    used,
                    reply,
                    reusable,
                } => return Ok((reply, reusable, wire.len() - start - used)),
                Fed::More(used) => start += used,
            }
        }
        panic!("no answer in {:?}", String::from_utf8_lossy(wire))
    }

    #[test]
    fn answers_read_alike_wherever_their_bytes_are_cut() {
        let body = |r: &Reply| r.body.as_ref().map(|b| b.concat()).unwrap_or_default();
        // wire, HEAD, the server closes after it; status, body, reusable, bytes left unread
        type Case = (&'static [u8], bool, bool, u16, &'static [u8], bool, usize);
        let cases: [Case; 6] = [
            (b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhelloNEXT", false, false, 200, b"hello", true, 4),
            (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhe\r\n3\r\nllo\r\n0\r\n\r\n", false, false, 200, b"hello", true, 0),
            (b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok", false, false, 201, b"ok", true, 0),
            (b"HTTP/1.0 200 OK\r\n\r\nuntil close", false, true, 200, b"until close", false, 0),
            (b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\nConnection: close\r\n\r\n", true, false, 200, b"", false, 0),
            (b"HTTP/1.1 204 No Content\r\n\r\n", false, false, 204, b"", true, 0),
        ];
        for (wire, head_only, eof, status, want, reusable, left) in cases {
            for cut in 0..=wire.len() {
                let (r, re, l) = read_cut(wire, cut, head_only, eof).unwrap();
                let what = format!("{} cut at {cut}", String::from_utf8_lossy(wire));
                assert_eq!(r.class, Class::Http(status), "{what}");
                assert_eq!(
                    (body(&r).as_slice(), r.bytes),
                    (want, want.len() as u64),
                    "{what}"
                );
                assert_eq!((re, l), (reusable, left), "{what}");
            }
        }
        // The server closing early is an error, named by where it closed.
        let early: [(&[u8], &str); 3] = [
            (b"HTTP/1.1 200 OK\r\nContent-Le", "before a response"),
            (
                b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nhel",
                "inside a response body",
            ),
            (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhe",
                "inside a chunked body",
            ),
        ];
        for (wire, said) in early {
            let e = read_cut(wire, wire.len() / 2, false, true).unwrap_err();
            assert!(e.to_string().contains(said), "{e}");
        }
    }

    #[test]
    fn a_head_read_again_says_what_it_said_and_a_changed_one_is_read_anew() {
        let mut a = Http1Answer::new(false, true);
        let read = |a: &mut Http1Answer, wire: &[u8]| match a.feed(wire, false).unwrap() {
            Fed::Done { used, reply, .. } => {
                let body = reply.body.map(|b| b.concat()).unwrap_or_default();
                (reply.class, body, used)
            }
            Fed::More(_) => panic!("no answer in {:?}", String::from_utf8_lossy(wire)),
        };
        let ok = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhelloNEXT";
        for _ in 0..3 {
            assert_eq!(
                read(&mut a, ok),
                (Class::Http(200), b"hello".to_vec(), ok.len() - 4)
            );
        }
        // Another length, another status, a head cut short, then the first again.
        let longer = b"HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\nhello!!";
        assert_eq!(
            read(&mut a, longer),
            (Class::Http(200), b"hello!!".to_vec(), longer.len())
        );
        let gone = b"HTTP/1.1 404 Not Found\r\nContent-Length: 3\r\n\r\nabc";
        assert_eq!(
            read(&mut a, gone),
            (Class::Http(404), b"abc".to_vec(), gone.len())
        );
        assert!(matches!(a.feed(&gone[..20], false), Ok(Fed::More(0))));
        assert_eq!(
            read(&mut a, gone),
            (Class::Http(404), b"abc".to_vec(), gone.len())
        );
        assert_eq!(
            read(&mut a, ok),
            (Class::Http(200), b"hello".to_vec(), ok.len() - 4)
        );
        // The same head ending the connection: read as such, not as the kept-alive one.
        let mut c = Http1Answer::new(false, false);
        let close = b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n";
        assert!(matches!(
            c.feed(ok, false),
            Ok(Fed::Done { reusable: true, .. })
        ));
        assert!(matches!(
            c.feed(close, false),
            Ok(Fed::Done {
                reusable: false,
                ..
            })
        ));
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
