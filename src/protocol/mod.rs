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

pub use outcome::{CallError, Class, GrpcCode, Reply};

/// An answer kept to be compared or shown (`diff`, compat, `call`) may hold at most as many
/// bytes as a request may (`--max-body`, 64 MiB by default): past it the call is an error
/// that says so, instead of memory growing with whatever the server sends.
pub(crate) fn kept_within(kept: usize) -> Result<(), CallError> {
    let limit = template::max_len();
    if kept > limit {
        return Err(CallError::Protocol(format!(
            "the answer is larger than the {} MiB kept to compare it (raise --max-body SIZE)",
            limit >> 20
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
}
