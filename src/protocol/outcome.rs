//! What a call ends in: a reply with its outcome class, or an error that costs the connection.

use std::fmt;

/// The class of an answer (or of a failure), counted per run. Ordered so reports list HTTP
/// statuses first, then gRPC codes, JSON-RPC errors and transport failures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Class {
    Http(u16),
    Grpc(GrpcCode),
    JsonRpcResult,
    JsonRpcError(i64),
    Connect,
    Timeout,
    Io,
    Protocol,
    Tls,
    /// The client could not build the request (a rendered template that does not fit the
    /// message type): bakeoff's side, not the server's.
    Request,
}

impl Class {
    /// Whether this outcome is a success: HTTP 2xx/3xx, gRPC OK, a JSON-RPC result.
    pub fn is_success(self) -> bool {
        match self {
            Class::Http(s) => (200..400).contains(&s),
            Class::Grpc(c) => c == GrpcCode::Ok,
            Class::JsonRpcResult => true,
            _ => false,
        }
    }

    /// Stable machine name of the class kind (`http`, `grpc`, `jsonrpc`, `connect`, ...).
    pub fn kind(self) -> &'static str {
        match self {
            Class::Http(_) => "http",
            Class::Grpc(_) => "grpc",
            Class::JsonRpcResult => "jsonrpc_result",
            Class::JsonRpcError(_) => "jsonrpc_error",
            Class::Connect => "connect_error",
            Class::Timeout => "timeout",
            Class::Io => "io_error",
            Class::Protocol => "protocol_error",
            Class::Tls => "tls_error",
            Class::Request => "request_error",
        }
    }

    /// The numeric code of the class, where it has one.
    pub fn code(self) -> Option<i64> {
        match self {
            Class::Http(s) => Some(i64::from(s)),
            Class::Grpc(c) => Some(c as i64),
            Class::JsonRpcError(c) => Some(c),
            _ => None,
        }
    }
}

impl fmt::Display for Class {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Class::Http(s) => write!(f, "HTTP {s}"),
            Class::Grpc(c) => write!(f, "gRPC {}", c.name()),
            Class::JsonRpcResult => f.write_str("JSON-RPC result"),
            Class::JsonRpcError(c) => write!(f, "JSON-RPC error {c}"),
            Class::Connect => f.write_str("connect error"),
            Class::Timeout => f.write_str("timeout"),
            Class::Io => f.write_str("connection error"),
            Class::Protocol => f.write_str("protocol error"),
            Class::Tls => f.write_str("TLS error"),
            Class::Request => f.write_str("request not built"),
        }
    }
}

/// gRPC status codes, named as in the gRPC specification (`doc/statuscodes.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum GrpcCode {
    Ok = 0,
    Cancelled = 1,
    Unknown = 2,
    InvalidArgument = 3,
    DeadlineExceeded = 4,
    NotFound = 5,
    AlreadyExists = 6,
    PermissionDenied = 7,
    ResourceExhausted = 8,
    FailedPrecondition = 9,
    Aborted = 10,
    OutOfRange = 11,
    Unimplemented = 12,
    Internal = 13,
    Unavailable = 14,
    DataLoss = 15,
    Unauthenticated = 16,
}

impl GrpcCode {
    const ALL: [GrpcCode; 17] = [
        GrpcCode::Ok,
        GrpcCode::Cancelled,
        GrpcCode::Unknown,
        GrpcCode::InvalidArgument,
        GrpcCode::DeadlineExceeded,
        GrpcCode::NotFound,
        GrpcCode::AlreadyExists,
        GrpcCode::PermissionDenied,
        GrpcCode::ResourceExhausted,
        GrpcCode::FailedPrecondition,
        GrpcCode::Aborted,
        GrpcCode::OutOfRange,
        GrpcCode::Unimplemented,
        GrpcCode::Internal,
        GrpcCode::Unavailable,
        GrpcCode::DataLoss,
        GrpcCode::Unauthenticated,
    ];

    /// Maps a numeric status; codes outside the specification are `UNKNOWN`, as the spec asks.
    pub fn from_i64(code: i64) -> GrpcCode {
        usize::try_from(code)
            .ok()
            .and_then(|i| GrpcCode::ALL.get(i).copied())
            .unwrap_or(GrpcCode::Unknown)
    }

    pub fn name(self) -> &'static str {
        match self {
            GrpcCode::Ok => "OK",
            GrpcCode::Cancelled => "CANCELLED",
            GrpcCode::Unknown => "UNKNOWN",
            GrpcCode::InvalidArgument => "INVALID_ARGUMENT",
            GrpcCode::DeadlineExceeded => "DEADLINE_EXCEEDED",
            GrpcCode::NotFound => "NOT_FOUND",
            GrpcCode::AlreadyExists => "ALREADY_EXISTS",
            GrpcCode::PermissionDenied => "PERMISSION_DENIED",
            GrpcCode::ResourceExhausted => "RESOURCE_EXHAUSTED",
            GrpcCode::FailedPrecondition => "FAILED_PRECONDITION",
            GrpcCode::Aborted => "ABORTED",
            GrpcCode::OutOfRange => "OUT_OF_RANGE",
            GrpcCode::Unimplemented => "UNIMPLEMENTED",
            GrpcCode::Internal => "INTERNAL",
            GrpcCode::Unavailable => "UNAVAILABLE",
            GrpcCode::DataLoss => "DATA_LOSS",
            GrpcCode::Unauthenticated => "UNAUTHENTICATED",
        }
    }
}

/// A complete answer. `items` counts streamed messages (1 for a unary call or a plain HTTP
/// response); `bytes` is the size of the response body as received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    pub class: Class,
    pub items: u64,
    pub bytes: u64,
    /// The body (or, for gRPC, each message), kept only when the caller asked for it.
    pub body: Option<Vec<Vec<u8>>>,
    /// A detail for non-success outcomes, e.g. the gRPC status message.
    pub detail: Option<String>,
    /// gRPC trailers other than the status, kept with the body (for compat).
    pub trailers: Vec<(String, String)>,
}

/// A call that produced no answer. The connection it was made on is dropped and reopened.
#[derive(Debug, Clone, thiserror::Error)]
pub enum CallError {
    #[error("cannot connect to {addr}: {reason}")]
    Connect { addr: String, reason: String },
    #[error("no answer within {0:?}")]
    Timeout(std::time::Duration),
    #[error("connection failed: {0}")]
    Io(String),
    /// The server said it did not process the request (RFC 9113 §8.7: a GOAWAY naming an
    /// earlier stream as its last, or `REFUSED_STREAM`): safe to send again on a new
    /// connection, which the load engine does once. Counted as a connection failure if that
    /// one is refused too.
    #[error("connection failed: {0}; the request was not processed")]
    Unprocessed(String),
    #[error("protocol error: {0}")]
    Protocol(String),
    /// A TLS failure, already explained (`TLS: …`).
    #[error("{0}")]
    Tls(String),
    /// The request could not be built on the client's side.
    #[error("the request could not be built: {0}")]
    Request(String),
}

impl CallError {
    pub fn class(&self) -> Class {
        match self {
            CallError::Connect { .. } => Class::Connect,
            CallError::Timeout(_) => Class::Timeout,
            CallError::Io(_) | CallError::Unprocessed(_) => Class::Io,
            CallError::Protocol(_) => Class::Protocol,
            CallError::Tls(_) => Class::Tls,
            CallError::Request(_) => Class::Request,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grpc_codes_map_by_number_and_unknowns_become_unknown() {
        assert_eq!(GrpcCode::from_i64(5), GrpcCode::NotFound);
        assert_eq!(GrpcCode::from_i64(16).name(), "UNAUTHENTICATED");
        assert_eq!(GrpcCode::from_i64(99), GrpcCode::Unknown);
        assert_eq!(GrpcCode::from_i64(-1), GrpcCode::Unknown);
        for (i, c) in GrpcCode::ALL.iter().enumerate() {
            assert_eq!(*c as usize, i);
        }
    }

    #[test]
    fn success_is_2xx_3xx_or_grpc_ok() {
        assert!(Class::Http(204).is_success());
        assert!(!Class::Http(404).is_success());
        assert!(Class::Grpc(GrpcCode::Ok).is_success());
        assert!(!Class::Grpc(GrpcCode::Internal).is_success());
        assert!(!Class::JsonRpcError(-32601).is_success());
        assert_eq!(
            Class::Grpc(GrpcCode::NotFound).to_string(),
            "gRPC NOT_FOUND"
        );
    }
}
