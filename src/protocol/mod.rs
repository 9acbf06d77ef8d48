//! Wire clients behind one small trait, so the load engine never knows which protocol it
//! drives: HTTP/1.1 (pre-encoded requests, `httparse`), HTTP/2, gRPC with messages built at
//! run time from `.proto` files or server reflection, and JSON-RPC 2.0 over HTTP/1.1; each
//! plaintext or over TLS (`tls`).

pub mod grpc;
pub mod hpack;
pub mod http1;
pub mod http2;
pub mod jsonrpc;
pub mod lean2;
pub mod outcome;
pub mod reflection;
pub mod roundrobin;
pub mod target;
pub mod template;
pub mod tls;

use std::future::Future;
use std::net::SocketAddr;

pub use outcome::{CallError, Class, GrpcCode, Reply};

/// An answer kept to be compared or shown (`diff`, compat, `call`) may hold at most as many
/// bytes as a request may (`--max-body`, 64 MiB by default): past it the call is an error
/// that says so, instead of memory growing with whatever the server sends.
pub(crate) fn kept_within(kept: usize) -> Result<(), CallError> {
    let limit = template::max_len();
    if kept > limit {
        return Err(CallError::Protocol(format!(
            "the answer is larger than the {} kept to compare it (raise --max-body SIZE)",
            crate::units::size(limit as u64)
        )));
    }
    Ok(())
}

/// One protocol client. `connect` opens one connection (one per load client); `call` sends
/// request number `seq` on it and waits for the whole answer.
///
/// The futures need not be `Send`: every load worker runs its own single-threaded runtime, so
/// connections never move between threads.
pub trait Protocol: Send + Sync + 'static {
    type Conn: 'static;

    fn connect(&self) -> impl Future<Output = Result<Self::Conn, CallError>>;

    fn call(
        &self,
        conn: &mut Self::Conn,
        seq: u64,
    ) -> impl Future<Output = Result<Reply, CallError>>;

    /// A short human description, e.g. `HTTP/1.1 GET http://127.0.0.1:8080/`.
    fn describe(&self) -> String;

    /// Whether `conn` can carry another call (false after the server said it closes it).
    fn reusable(&self, _conn: &Self::Conn) -> bool {
        true
    }

    /// Items the last call on `conn` received before it was cut short (a stream's messages
    /// up to its timeout): counted, though the call itself is a timeout.
    fn partial_items(&self, _conn: &Self::Conn) -> u64 {
        0
    }

    /// What the TLS handshake negotiated, once one was made.
    fn tls(&self) -> Option<String> {
        None
    }

    /// When every call is the same bytes on a plain TCP connection, answered by something a
    /// parser can read as it arrives (HTTP/1.1 without placeholders or TLS): those bytes and
    /// that parser, so the load engine can drive the calls itself, many to a system call
    /// (`load::ring`). `None` (the default): only [`Protocol::call`] makes calls.
    fn fixed(&self) -> Option<Fixed<'_>> {
        None
    }
}

/// One fixed call: where it goes, its bytes, and a reader of its answers (one a connection).
pub struct Fixed<'a> {
    pub addr: SocketAddr,
    pub request: &'a [u8],
    pub reader: Box<dyn Fn() -> Box<dyn Answer> + 'a>,
}

/// A reader of one connection's answers, fed the bytes as they arrive.
pub trait Answer {
    /// Reads from `bytes` (what arrived and was not used yet); `eof` when the server closed
    /// its side after them. An answer's head must arrive whole before it is used, so
    /// `Fed::More(0)` asks for more bytes after the same ones.
    fn feed(&mut self, bytes: &[u8], eof: bool) -> Result<Fed, CallError>;
}

/// How far a [`Answer::feed`] got.
pub enum Fed {
    /// Used this many bytes; the answer is not complete.
    More(usize),
    /// Used this many bytes and completed the answer; `reusable` when the connection can
    /// carry another call.
    Done {
        used: usize,
        reply: Reply,
        reusable: bool,
    },
}

/// The unread bytes of a connection: what arrived, less what an [`Answer`] used; the space
/// grows (up to 1 MiB) only while an answer's head does not fit.
pub struct Inbox {
    buf: Vec<u8>,
    start: usize,
    end: usize,
}

impl Inbox {
    const FIRST: usize = 64 * 1024;
    const MAX: usize = 1024 * 1024;

    pub fn new() -> Inbox {
        Inbox {
            buf: vec![0; Inbox::FIRST],
            start: 0,
            end: 0,
        }
    }

    /// What arrived and was not used yet.
    pub fn unread(&self) -> &[u8] {
        &self.buf[self.start..self.end]
    }

    pub fn used(&mut self, n: usize) {
        self.start += n;
    }

    /// Where the next bytes go: never empty; an error when the unread bytes already fill
    /// the largest buffer (an answer's head larger than 1 MiB).
    pub fn space(&mut self) -> Result<&mut [u8], CallError> {
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        } else if self.end == self.buf.len() {
            if self.start > 0 {
                self.buf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.start = 0;
            } else if self.buf.len() < Inbox::MAX {
                self.buf.resize(self.buf.len() * 2, 0);
            } else {
                return Err(CallError::Protocol(
                    "response head larger than 1 MiB".into(),
                ));
            }
        }
        Ok(&mut self.buf[self.end..])
    }

    /// `n` bytes arrived in the last [`Inbox::space`].
    pub fn filled(&mut self, n: usize) {
        self.end += n;
    }

    /// Forgets what was not read (a broken connection's leftovers).
    pub fn clear(&mut self) {
        self.start = 0;
        self.end = 0;
    }
}

impl Default for Inbox {
    fn default() -> Inbox {
        Inbox::new()
    }
}
