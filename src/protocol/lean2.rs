//! A lean HTTP/2 client for the load engine: one stream at a time on a connection, driven by
//! the call waiting for it — no connection task, no channel between them, no wake-up but the
//! socket's — with each request's head encoded once ([`hpack::Head`]) and of each answer only
//! what a load run reads: the HTTP status, gRPC's status and message, and the DATA bytes,
//! handed over where they lie in the read buffer.
//!
//! It stands in for the `h2` crate where a call sends one body and reads the answer (plain
//! HTTP/2 requests, unary and server-streaming gRPC) and nothing of the answer is kept; calls
//! that keep answers (`call`, `diff`, compat) and client-streaming or bidi gRPC use `h2`.
//! `BAKEOFF_HTTP2_CLIENT=h2` sends every call through `h2`.
//!
//! Acknowledgements (of a PING, of the server's SETTINGS) wait for the next request to go in
//! the same write, or for one more read of a call still waiting, whichever comes first.

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::hpack::{self, Decoder, Head};
use super::target::{connect, Endpoint};
use super::tls::Stream;
use super::CallError;

/// What the client announces: its stream window (SETTINGS_INITIAL_WINDOW_SIZE) and the
/// connection window it opens at once, the same as the `h2` path (`http2::open`).
const STREAM_WINDOW: u32 = 4 << 20;
const CONN_WINDOW: u32 = 16 << 20;
/// The largest frame a server may send us: the default, never raised.
const MAX_FRAME: usize = 16_384;
/// A response's header block (with its CONTINUATIONs) may be at most this large.
const MAX_BLOCK: usize = 256 * 1024;
const READ_CHUNK: usize = 64 * 1024;

const DATA: u8 = 0x0;
const HEADERS: u8 = 0x1;
const RST_STREAM: u8 = 0x3;
const SETTINGS: u8 = 0x4;
const PUSH_PROMISE: u8 = 0x5;
const PING: u8 = 0x6;
const GOAWAY: u8 = 0x7;
const WINDOW_UPDATE: u8 = 0x8;
const CONTINUATION: u8 = 0x9;

const END_STREAM: u8 = 0x1;
const ACK: u8 = 0x1;
const END_HEADERS: u8 = 0x4;
const PADDED: u8 = 0x8;
const PRIORITY: u8 = 0x20;

/// The error code of a stream the server refused before processing it.
const REFUSED_STREAM: u32 = 0x7;

/// Whether `BAKEOFF_HTTP2_CLIENT=h2` asks for the `h2` crate everywhere.
pub fn disabled() -> bool {
    std::env::var("BAKEOFF_HTTP2_CLIENT").is_ok_and(|v| v == "h2")
}

/// What a call read of the answer.
#[derive(Debug, Default)]
pub struct Answer {
    pub status: u16,
    /// `grpc-status`, from the headers (trailers-only) or the trailers.
    pub grpc_status: Option<i64>,
    /// `grpc-message`, kept only when present and not empty (an error's text).
    pub grpc_message: Option<String>,
    /// DATA payload bytes, padding left out.
    pub bytes: u64,
}

pub struct Lean {
    io: Stream,
    /// Bytes read and not yet taken as frames: `rbuf[rpos..]`.
    rbuf: Vec<u8>,
    rpos: usize,
    /// Frames to write; `out[sent..]` is still to go.
    out: Vec<u8>,
    sent: usize,
    /// Whether what waits in `out` (acknowledgements) has already waited through one read.
    acks_waited: bool,
    hpack: Decoder,
    /// The request's header block as it is put together (kept for its allocation).
    request: Vec<u8>,
    /// A header block still waiting for its CONTINUATIONs: its stream and END_STREAM flag.
    block: Vec<u8>,
    block_of: Option<(u32, bool)>,
    next_id: u32,
    /// A call is in flight — or was cut short (its future dropped at a timeout), leaving the
    /// connection in the middle of an answer: then it takes no further call.
    busy: bool,
    /// Send windows: the connection's, and the server's initial one for a stream.
    conn_window: i64,
    initial_window: i64,
    max_frame: usize,
    /// The server's header table for our requests: its size, whether it shrank since we
    /// last said so, and whether our head is in it.
    table: usize,
    table_changed: bool,
    head_in_table: Option<usize>,
    /// DATA bytes taken since the last WINDOW_UPDATE for the connection.
    unacked: u32,
    /// Why no further call can be made: the server's GOAWAY, or the connection's end.
    closed: Option<String>,
}

/// A frame found whole in the read buffer: its type, flags, stream, and where its payload
/// starts and ends.
type Frame = (u8, u8, u32, usize, usize);

/// One call's progress on its stream.
struct Call<'a> {
    id: u32,
    body: &'a [u8],
    /// Bytes of `body` framed so far, and the stream's send window.
    framed: usize,
    window: i64,
    unacked: u32,
    answer: Answer,
    got_head: bool,
    done: bool,
}

/// Marks the connection unusable and returns the error that says why.
fn failed(closed: &mut Option<String>, why: String) -> CallError {
    *closed = Some(why.clone());
    CallError::Protocol(why)
}

fn io_error(e: std::io::Error) -> CallError {
    match super::tls::explain_io(&e) {
        Some(why) => CallError::Tls(why),
        None => CallError::Io(e.to_string()),
    }
}

fn frame_head(out: &mut Vec<u8>, len: usize, kind: u8, flags: u8, stream: u32) {
    out.extend_from_slice(&(len as u32).to_be_bytes()[1..]);
    out.extend_from_slice(&[kind, flags]);
    out.extend_from_slice(&stream.to_be_bytes());
}

fn window_update(out: &mut Vec<u8>, stream: u32, n: u32) {
    frame_head(out, 4, WINDOW_UPDATE, 0, stream);
    out.extend_from_slice(&n.to_be_bytes());
}

/// The payload of a HEADERS or DATA frame without its padding (and priority fields).
fn unpadded(kind: u8, flags: u8, payload: &[u8]) -> Result<&[u8], CallError> {
    let bad = || CallError::Protocol("a frame's padding is longer than the frame".into());
    let mut p = payload;
    let mut pad = 0;
    if flags & PADDED != 0 {
        let (&n, rest) = p.split_first().ok_or_else(bad)?;
        pad = n as usize;
        p = rest;
    }
    if kind == HEADERS && flags & PRIORITY != 0 {
        p = p.get(5..).ok_or_else(bad)?;
    }
    p.get(..p.len().checked_sub(pad).ok_or_else(bad)?)
        .ok_or_else(bad)
}

impl Lean {
    /// Opens a connection and sends the preface, our SETTINGS and the connection window,
    /// without waiting for the server's (they are read with the first answer).
    pub async fn open(endpoint: &Endpoint) -> Result<Lean, CallError> {
        let io = connect(endpoint).await?.expect_h2();
        let mut out = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
        frame_head(&mut out, 12, SETTINGS, 0, 0);
        for (id, v) in [(0x2u16, 0u32), (0x4, STREAM_WINDOW)] {
            out.extend_from_slice(&id.to_be_bytes());
            out.extend_from_slice(&v.to_be_bytes());
        }
        window_update(&mut out, 0, CONN_WINDOW - 65_535);
        let mut lean = Lean {
            io,
            rbuf: Vec::with_capacity(READ_CHUNK),
            rpos: 0,
            out,
            sent: 0,
            acks_waited: false,
            hpack: Decoder::default(),
            request: Vec::new(),
            block: Vec::new(),
            block_of: None,
            next_id: 1,
            busy: false,
            conn_window: 65_535,
            initial_window: 65_535,
            max_frame: MAX_FRAME,
            table: hpack::DEFAULT_TABLE,
            table_changed: false,
            head_in_table: None,
            unacked: 0,
            closed: None,
        };
        lean.flush().await?;
        Ok(lean)
    }

    /// Whether another call can go on this connection.
    pub fn reusable(&self) -> bool {
        self.closed.is_none() && self.next_id < (1 << 31)
    }

    /// Sends a request — `extra` fields (already encoded: a `:path` that changes per
    /// request), then `head`, then `body` — and reads its answer, handing each piece of DATA
    /// to `data` as it arrives.
    pub async fn call(
        &mut self,
        head: &Head,
        extra: &[u8],
        body: &[u8],
        data: &mut dyn FnMut(&[u8]) -> Result<(), CallError>,
    ) -> Result<Answer, CallError> {
        if let Some(why) = &self.closed {
            return Err(CallError::Io(why.clone()));
        }
        if self.busy {
            // The load engine drops a connection whose call failed; a caller that did not
            // is told so here, and gets nothing half-read.
            let why = "the connection's last call was cut short".to_string();
            self.closed = Some(why.clone());
            return Err(CallError::Io(why));
        }
        self.busy = true;
        let id = self.next_id;
        self.next_id += 2;
        self.request_head(id, head, extra, body.is_empty());
        let mut call = Call {
            id,
            body,
            framed: 0,
            window: self.initial_window,
            unacked: 0,
            answer: Answer::default(),
            got_head: false,
            done: false,
        };
        self.frame_body(&mut call);
        self.flush().await?;
        let result = self.answer(&mut call, data).await;
        self.busy = false;
        result.map(|()| call.answer)
    }

    /// Queues the HEADERS frame (and CONTINUATIONs past the server's frame size).
    fn request_head(&mut self, id: u32, head: &Head, extra: &[u8], end: bool) {
        let mut block = std::mem::take(&mut self.request);
        block.clear();
        if self.table_changed {
            hpack::put_integer(&mut block, 0x20, 5, self.table);
            self.table_changed = false;
            self.head_in_table = None;
        }
        let fields = match self.head_in_table {
            Some(h) if h == head as *const Head as usize => &head.steady,
            _ if head.table <= self.table => {
                self.head_in_table = Some(head as *const Head as usize);
                &head.first
            }
            _ => &head.plain,
        };
        // `extra` first: a `:path` must come before the head's regular fields.
        block.extend_from_slice(extra);
        block.extend_from_slice(fields);
        let mut chunks = block.chunks(self.max_frame).peekable();
        let mut kind = HEADERS;
        let first_flags = if end { END_STREAM } else { 0 };
        while let Some(chunk) = chunks.next() {
            let mut flags = if kind == HEADERS { first_flags } else { 0 };
            if chunks.peek().is_none() {
                flags |= END_HEADERS;
            }
            frame_head(&mut self.out, chunk.len(), kind, flags, id);
            self.out.extend_from_slice(chunk);
            kind = CONTINUATION;
        }
        if block.is_empty() {
            frame_head(&mut self.out, 0, HEADERS, first_flags | END_HEADERS, id);
        }
        self.request = block;
    }

    /// Queues as much of the body as the send windows allow.
    fn frame_body(&mut self, call: &mut Call<'_>) {
        while call.framed < call.body.len() {
            let room = call.window.min(self.conn_window).min(self.max_frame as i64);
            if room <= 0 {
                return;
            }
            let n = (call.body.len() - call.framed).min(room as usize);
            let end = call.framed + n == call.body.len();
            frame_head(
                &mut self.out,
                n,
                DATA,
                if end { END_STREAM } else { 0 },
                call.id,
            );
            self.out
                .extend_from_slice(&call.body[call.framed..call.framed + n]);
            call.framed += n;
            call.window -= n as i64;
            self.conn_window -= n as i64;
        }
    }

    async fn flush(&mut self) -> Result<(), CallError> {
        while self.sent < self.out.len() {
            let n = self
                .io
                .write(&self.out[self.sent..])
                .await
                .map_err(io_error)?;
            if n == 0 {
                return Err(CallError::Io("the connection closed while writing".into()));
            }
            self.sent += n;
        }
        self.out.clear();
        self.sent = 0;
        self.acks_waited = false;
        self.io.flush().await.map_err(io_error)
    }

    /// Reads frames until the call's answer is complete.
    async fn answer(
        &mut self,
        call: &mut Call<'_>,
        data: &mut dyn FnMut(&[u8]) -> Result<(), CallError>,
    ) -> Result<(), CallError> {
        loop {
            let mut urgent = false;
            // Every whole frame read is taken, those after the answer's end too: a GOAWAY
            // sent with the last answer is seen before another request goes.
            while let Some((kind, flags, stream, start, end)) = self.next_frame()? {
                self.rpos = end;
                urgent |= self.frame(call, data, kind, flags, stream, start, end)?;
            }
            if call.done {
                // Window updates go now; acknowledgements ride with the next request.
                if urgent {
                    self.flush().await?;
                }
                return Ok(());
            }
            if call.framed < call.body.len() {
                let before = self.out.len();
                self.frame_body(call);
                urgent |= self.out.len() > before;
            }
            if urgent || (self.acks_waited && !self.out.is_empty()) {
                self.flush().await?;
            } else if !self.out.is_empty() {
                // Acknowledgements wait one read for the next request to ride with (a PING
                // gRPC-Go sends on receiving the request, answered with the next one); a
                // call still waiting after that read sends them on their own.
                self.acks_waited = true;
            }
            self.fill().await?;
        }
    }

    /// The next whole frame in the read buffer: its type, flags, stream and payload's range.
    fn next_frame(&mut self) -> Result<Option<Frame>, CallError> {
        let b = &self.rbuf[self.rpos..];
        if b.len() < 9 {
            return Ok(None);
        }
        let len = u32::from_be_bytes([0, b[0], b[1], b[2]]) as usize;
        if len > MAX_FRAME {
            return Err(failed(
                &mut self.closed,
                format!("the server sent a frame of {len} bytes, over the {MAX_FRAME} allowed"),
            ));
        }
        if b.len() < 9 + len {
            return Ok(None);
        }
        let stream = u32::from_be_bytes([b[5], b[6], b[7], b[8]]) & 0x7fff_ffff;
        let start = self.rpos + 9;
        Ok(Some((b[3], b[4], stream, start, start + len)))
    }

    /// Reads more bytes; the connection's end is an error, as it ends the call.
    async fn fill(&mut self) -> Result<(), CallError> {
        if self.rpos > 0 {
            self.rbuf.drain(..self.rpos);
            self.rpos = 0;
        }
        self.rbuf.reserve(READ_CHUNK);
        let n = self.io.read_buf(&mut self.rbuf).await.map_err(|e| {
            self.closed = Some(e.to_string());
            io_error(e)
        })?;
        if n == 0 {
            let why = "the server closed the connection".to_string();
            self.closed = Some(why.clone());
            return Err(CallError::Io(why));
        }
        Ok(())
    }

    /// Takes one frame. Returns whether it queued something that must go before the next
    /// read (a window update, or more of the body).
    #[allow(clippy::too_many_arguments)]
    fn frame(
        &mut self,
        call: &mut Call<'_>,
        data: &mut dyn FnMut(&[u8]) -> Result<(), CallError>,
        kind: u8,
        flags: u8,
        stream: u32,
        start: usize,
        end: usize,
    ) -> Result<bool, CallError> {
        let len = end - start;
        if self.block_of.is_some() && kind != CONTINUATION {
            return Err(failed(
                &mut self.closed,
                "a header block was interrupted by another frame".into(),
            ));
        }
        let ours = stream == call.id;
        match kind {
            DATA => {
                let mut urgent = false;
                self.unacked += len as u32;
                if self.unacked >= CONN_WINDOW / 2 {
                    window_update(&mut self.out, 0, std::mem::take(&mut self.unacked));
                    urgent = true;
                }
                if !ours {
                    return Ok(urgent);
                }
                if !call.got_head {
                    return Err(failed(
                        &mut self.closed,
                        "DATA came before the answer's headers".into(),
                    ));
                }
                let payload = match unpadded(kind, flags, &self.rbuf[start..end]) {
                    Ok(p) => p,
                    Err(e) => {
                        self.closed = Some(e.to_string());
                        return Err(e);
                    }
                };
                call.answer.bytes += payload.len() as u64;
                data(payload)?;
                if flags & END_STREAM != 0 {
                    call.done = true;
                } else {
                    call.unacked += len as u32;
                    if call.unacked >= STREAM_WINDOW / 2 {
                        window_update(&mut self.out, call.id, std::mem::take(&mut call.unacked));
                        urgent = true;
                    }
                }
                Ok(urgent)
            }
            HEADERS | CONTINUATION => {
                let (stream, end_stream) = match (kind, self.block_of) {
                    (HEADERS, _) => (stream, flags & END_STREAM != 0),
                    (_, Some((s, e))) if s == stream => (s, e),
                    _ => {
                        return Err(failed(
                            &mut self.closed,
                            "a CONTINUATION frame out of place".into(),
                        ))
                    }
                };
                let fragment = match kind {
                    HEADERS => unpadded(kind, flags, &self.rbuf[start..end])?,
                    _ => &self.rbuf[start..end],
                };
                if self.block.len() + fragment.len() > MAX_BLOCK {
                    return Err(failed(
                        &mut self.closed,
                        format!(
                            "an answer's headers are larger than {} KiB",
                            MAX_BLOCK >> 10
                        ),
                    ));
                }
                if flags & END_HEADERS == 0 {
                    self.block.extend_from_slice(fragment);
                    self.block_of = Some((stream, end_stream));
                    return Ok(false);
                }
                self.block_of = None;
                // Every block is decoded, ours or not: the table must stay in step.
                let (mut status, id) = (None, call.id);
                let a = &mut call.answer;
                let mut field = |n: &[u8], v: &[u8]| match n {
                    b":status" => status = std::str::from_utf8(v).ok().and_then(|s| s.parse().ok()),
                    b"grpc-status" if stream == id => {
                        a.grpc_status = std::str::from_utf8(v)
                            .ok()
                            .and_then(|s| s.trim().parse().ok())
                    }
                    b"grpc-message" if stream == id && !v.is_empty() => {
                        a.grpc_message = Some(String::from_utf8_lossy(v).into_owned())
                    }
                    _ => {}
                };
                let decoded = if self.block.is_empty() {
                    self.hpack.decode(fragment, read, &mut field)
                } else {
                    self.block.extend_from_slice(fragment);
                    let r = self.hpack.decode(&self.block, read, &mut field);
                    self.block.clear();
                    r
                };
                decoded.map_err(|why| failed(&mut self.closed, format!("HPACK: {why}")))?;
                if stream != call.id {
                    return Ok(false);
                }
                if !call.got_head {
                    match status {
                        // 1xx: an interim answer; the real one follows.
                        Some(s) if (100..200).contains(&s) && !end_stream => return Ok(false),
                        Some(s) => call.answer.status = s,
                        None => {
                            return Err(failed(
                                &mut self.closed,
                                "an answer without :status".into(),
                            ));
                        }
                    }
                    call.got_head = true;
                }
                if end_stream {
                    call.done = true;
                }
                Ok(false)
            }
            RST_STREAM if ours => {
                let code = self.rbuf[start..end]
                    .get(..4)
                    .map(|c| u32::from_be_bytes([c[0], c[1], c[2], c[3]]));
                let why = format!(
                    "the server reset the stream ({})",
                    code.map_or("no code".into(), reason)
                );
                Err(match code {
                    Some(REFUSED_STREAM) => CallError::Unprocessed(why),
                    _ => CallError::Protocol(why),
                })
            }
            SETTINGS if flags & ACK == 0 => {
                if len % 6 != 0 {
                    return Err(failed(
                        &mut self.closed,
                        "a SETTINGS frame of a bad length".into(),
                    ));
                }
                for s in self.rbuf[start..end].chunks(6) {
                    let v = u32::from_be_bytes([s[2], s[3], s[4], s[5]]);
                    match u16::from_be_bytes([s[0], s[1]]) {
                        0x1 => {
                            let size = (v as usize).min(hpack::DEFAULT_TABLE);
                            if size != self.table {
                                self.table = size;
                                self.table_changed = true;
                            }
                        }
                        0x4 => {
                            let delta = v as i64 - self.initial_window;
                            self.initial_window = v as i64;
                            call.window += delta;
                        }
                        0x5 => self.max_frame = (v as usize).clamp(MAX_FRAME, 1 << 24),
                        _ => {}
                    }
                }
                // A window it opened is used by the read loop's framing of the body.
                frame_head(&mut self.out, 0, SETTINGS, ACK, 0);
                Ok(false)
            }
            PING if flags & ACK == 0 => {
                if len != 8 {
                    return Err(failed(
                        &mut self.closed,
                        "a PING frame of a bad length".into(),
                    ));
                }
                frame_head(&mut self.out, 8, PING, ACK, 0);
                let payload: [u8; 8] = self.rbuf[start..end].try_into().expect("eight bytes");
                self.out.extend_from_slice(&payload);
                Ok(false)
            }
            GOAWAY => {
                let p = &self.rbuf[start..end];
                if p.len() < 8 {
                    return Err(failed(
                        &mut self.closed,
                        "a GOAWAY frame of a bad length".into(),
                    ));
                }
                let last = u32::from_be_bytes([p[0], p[1], p[2], p[3]]) & 0x7fff_ffff;
                let code = u32::from_be_bytes([p[4], p[5], p[6], p[7]]);
                let why = format!(
                    "the server is closing the connection (GOAWAY, {})",
                    reason(code)
                );
                self.closed = Some(why.clone());
                // The call in flight is answered only if the server says it will be; if not,
                // the server has not processed it.
                if call.id > last {
                    return Err(CallError::Unprocessed(why));
                }
                Ok(false)
            }
            WINDOW_UPDATE => {
                let p = &self.rbuf[start..end];
                if p.len() != 4 {
                    return Err(failed(
                        &mut self.closed,
                        "a WINDOW_UPDATE frame of a bad length".into(),
                    ));
                }
                let n = (u32::from_be_bytes([p[0], p[1], p[2], p[3]]) & 0x7fff_ffff) as i64;
                match stream {
                    0 => self.conn_window += n,
                    s if s == call.id => call.window += n,
                    _ => {}
                }
                Ok(false)
            }
            PUSH_PROMISE => Err(failed(
                &mut self.closed,
                "the server pushed a stream, which was refused".into(),
            )),
            // PRIORITY, acknowledgements, another stream's RST_STREAM, unknown types.
            _ => Ok(false),
        }
    }
}

/// The fields a call reads; the values of others sent without indexing are not decoded.
fn read(name: &[u8]) -> bool {
    matches!(name, b":status" | b"grpc-status" | b"grpc-message")
}

/// An HTTP/2 error code's name (RFC 9113 §7).
fn reason(code: u32) -> String {
    const NAMES: [&str; 14] = [
        "NO_ERROR",
        "PROTOCOL_ERROR",
        "INTERNAL_ERROR",
        "FLOW_CONTROL_ERROR",
        "SETTINGS_TIMEOUT",
        "STREAM_CLOSED",
        "FRAME_SIZE_ERROR",
        "REFUSED_STREAM",
        "CANCEL",
        "COMPRESSION_ERROR",
        "CONNECT_ERROR",
        "ENHANCE_YOUR_CALM",
        "INADEQUATE_SECURITY",
        "HTTP_1_1_REQUIRED",
    ];
    match NAMES.get(code as usize) {
        Some(n) => n.to_string(),
        None => format!("error code {code}"),
    }
}
