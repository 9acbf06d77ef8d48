//! gRPC server reflection: when no `.proto` is given, ask the server for its services and the
//! files that define them (`grpc.reflection.v1.ServerReflection`, falling back to
//! `v1alpha`, which many servers still serve alone), and build the descriptor pool from what
//! it returns. The reflection messages are small enough to be written here by hand.

use std::collections::{BTreeMap, BTreeSet};

use prost::Message as _;
use prost_reflect::prost_types::{FileDescriptorProto, FileDescriptorSet};
use prost_reflect::DescriptorPool;

use super::http2::{self, H2Conn};
use super::target::Endpoint;
use super::CallError;
use super::{grpc, GrpcCode};

#[derive(Clone, PartialEq, prost::Message)]
struct Request {
    #[prost(string, tag = "1")]
    host: String,
    #[prost(oneof = "Ask", tags = "3, 4, 7")]
    ask: Option<Ask>,
}

#[derive(Clone, PartialEq, prost::Oneof)]
enum Ask {
    #[prost(string, tag = "3")]
    FileByFilename(String),
    #[prost(string, tag = "4")]
    FileContainingSymbol(String),
    #[prost(string, tag = "7")]
    ListServices(String),
}

#[derive(Clone, PartialEq, prost::Message)]
struct Response {
    #[prost(oneof = "Answer", tags = "4, 6, 7")]
    answer: Option<Answer>,
}

#[derive(Clone, PartialEq, prost::Oneof)]
enum Answer {
    #[prost(message, tag = "4")]
    Files(FileDescriptorResponse),
    #[prost(message, tag = "6")]
    Services(ListServiceResponse),
    #[prost(message, tag = "7")]
    Error(ErrorResponse),
}

#[derive(Clone, PartialEq, prost::Message)]
struct FileDescriptorResponse {
    #[prost(bytes = "vec", repeated, tag = "1")]
    file_descriptor_proto: Vec<Vec<u8>>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct ListServiceResponse {
    #[prost(message, repeated, tag = "1")]
    service: Vec<ServiceResponse>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct ServiceResponse {
    #[prost(string, tag = "1")]
    name: String,
}

#[derive(Clone, PartialEq, prost::Message)]
struct ErrorResponse {
    #[prost(int32, tag = "1")]
    error_code: i32,
    #[prost(string, tag = "2")]
    error_message: String,
}

const V1: &str = "grpc.reflection.v1.ServerReflection";
const V1ALPHA: &str = "grpc.reflection.v1alpha.ServerReflection";

/// Files a reflection client will fetch at most: a bound on what a server can make us ask.
const MAX_FILES: usize = 1000;

/// The most bytes of file descriptors one conversation takes in, in all. A decoded
/// descriptor can take a hundred times its wire size (a file of a million empty messages),
/// so the bound is on what arrives, well above any real service's files (etcd's, with
/// every import, are about 100 KB).
const MAX_DESCRIPTOR_BYTES: usize = 8 << 20;

/// One reflection conversation on one connection, with the version the server speaks.
struct Reflector<'a> {
    endpoint: &'a Endpoint,
    conn: H2Conn,
    service: &'static str,
    /// Descriptor bytes left of [`MAX_DESCRIPTOR_BYTES`].
    budget: usize,
}

impl Reflector<'_> {
    /// One request on its own stream; `Ok(None)` when the server does not serve this version.
    async fn ask_with(&mut self, service: &str, ask: Ask) -> Result<Option<Answer>, String> {
        let path = format!("/{service}/ServerReflectionInfo");
        let uri = http2::uri(self.endpoint, &path).map_err(|e| e.to_string())?;
        let mut req = http::Request::new(());
        *req.method_mut() = http::Method::POST;
        *req.uri_mut() = uri;
        *req.headers_mut() = grpc::metadata_headers(&[]).map_err(|e| e.to_string())?;
        let body = Request {
            host: String::new(),
            ask: Some(ask),
        }
        .encode_to_vec();
        let (head, mut stream) = http2::exchange(&mut self.conn, req, Some(grpc::frame(&body)))
            .await
            .map_err(|e| e.to_string())?;
        if head.status != http::StatusCode::OK {
            return Err(format!("reflection answered HTTP {}", head.status.as_u16()));
        }
        let mut frames = grpc::Deframer::keeping();
        let mut received = 0usize;
        let code = match grpc::status_of(&head.headers) {
            Some((code, _)) => code,
            None => {
                while let Some(d) = http2::next_data(&mut stream)
                    .await
                    .map_err(|e| e.to_string())?
                {
                    received += d.len();
                    if received > MAX_DESCRIPTOR_BYTES + (1 << 20) {
                        return Err(format!(
                            "reflection answer larger than {} MiB",
                            (MAX_DESCRIPTOR_BYTES >> 20) + 1
                        ));
                    }
                    frames.push(&d).map_err(|e| e.to_string())?;
                }
                let t = http2::trailers(&mut stream)
                    .await
                    .map_err(|e| e.to_string())?
                    .unwrap_or_default();
                grpc::status_of(&t).map_or(GrpcCode::Ok, |(code, _)| code)
            }
        };
        match code {
            GrpcCode::Ok => {}
            // Not this version (or no reflection at all).
            GrpcCode::Unimplemented => return Ok(None),
            c => return Err(format!("reflection failed with gRPC {}", c.name())),
        }
        if !frames.is_clean() {
            return Err("reflection answer ended inside its message".into());
        }
        let msg = frames
            .messages()
            .first()
            .ok_or("reflection sent no answer")?;
        let r =
            Response::decode(msg.as_slice()).map_err(|e| format!("bad reflection answer: {e}"))?;
        match r.answer {
            Some(Answer::Error(e)) => Err(format!(
                "reflection error {}: {}",
                e.error_code, e.error_message
            )),
            Some(a) => Ok(Some(a)),
            None => Err("reflection answer without content".into()),
        }
    }

    async fn ask(&mut self, ask: Ask) -> Result<Answer, String> {
        self.ask_with(self.service, ask)
            .await?
            .ok_or_else(|| format!("{} stopped answering", self.service))
    }

    async fn files(&mut self, ask: Ask) -> Result<Vec<FileDescriptorProto>, String> {
        match self.ask(ask).await? {
            Answer::Files(f) => decode_files(&f.file_descriptor_proto, &mut self.budget),
            _ => Err("reflection answered with something else than files".into()),
        }
    }
}

/// Decodes the file descriptors of one answer, each counted against `budget` (bytes left)
/// before it is decoded.
fn decode_files(raw: &[Vec<u8>], budget: &mut usize) -> Result<Vec<FileDescriptorProto>, String> {
    raw.iter()
        .map(|b| {
            *budget = budget.checked_sub(b.len()).ok_or_else(|| {
                format!(
                    "reflection sent more than {} MiB of file descriptors; pass the service's \
                     .proto files with --proto FILE (`protos` in a plan)",
                    MAX_DESCRIPTOR_BYTES >> 20
                )
            })?;
            FileDescriptorProto::decode(b.as_slice())
                .map_err(|e| format!("bad file descriptor from reflection: {e}"))
        })
        .collect()
}

/// What a server told about itself: its services (reflection's own left out) and a pool
/// with every file that defines them.
pub struct Reflected {
    pub services: Vec<String>,
    pub pool: DescriptorPool,
}

/// Asks the server at `endpoint` (its TLS settings attached) for every service it offers.
pub async fn reflect(endpoint: &Endpoint) -> Result<Reflected, String> {
    let url = endpoint.url();
    let conn = http2::open(endpoint).await.map_err(|e: CallError| {
        format!(
            "no --proto given, and the server at {url} cannot be asked for its services by \
             reflection: {e}"
        )
    })?;
    let mut r = Reflector {
        endpoint,
        conn,
        service: V1,
        budget: MAX_DESCRIPTOR_BYTES,
    };
    let list = Ask::ListServices("*".into());
    let first = match r.ask_with(V1, list.clone()).await? {
        Some(a) => a,
        None => {
            r.service = V1ALPHA;
            r.ask_with(V1ALPHA, list).await?.ok_or_else(|| {
                format!(
                    "the server at {url} offers no reflection ({V1} and {V1ALPHA} answered \
                     UNIMPLEMENTED); pass the service's .proto with --proto FILE \
                     (`protos` in a plan)"
                )
            })?
        }
    };
    let Answer::Services(list) = first else {
        return Err("reflection answered a list request with something else".into());
    };
    let services: Vec<String> = list
        .service
        .into_iter()
        .map(|s| s.name)
        .filter(|n| !n.starts_with("grpc.reflection."))
        .collect();
    let mut files: BTreeMap<String, FileDescriptorProto> = BTreeMap::new();
    for s in &services {
        for f in r.files(Ask::FileContainingSymbol(s.clone())).await? {
            files.entry(f.name().to_string()).or_insert(f);
        }
    }
    // Dependencies the server did not send with them.
    loop {
        let missing: BTreeSet<String> = files
            .values()
            .flat_map(|f| f.dependency.iter().cloned())
            .filter(|d| !files.contains_key(d))
            .collect();
        if missing.is_empty() {
            break;
        }
        if files.len() > MAX_FILES {
            return Err(format!("reflection named more than {MAX_FILES} files"));
        }
        for d in missing {
            let got = r.files(Ask::FileByFilename(d.clone())).await?;
            if !got.iter().any(|f| f.name() == d) {
                return Err(format!("reflection has no file `{d}`"));
            }
            for f in got {
                files.entry(f.name().to_string()).or_insert(f);
            }
        }
    }
    let pool = DescriptorPool::from_file_descriptor_set(FileDescriptorSet {
        file: in_dependency_order(files),
    })
    .map_err(|e| format!("the files reflection returned do not fit together: {e}"))?;
    Ok(Reflected { services, pool })
}

/// Every file after the files it imports.
fn in_dependency_order(
    mut files: BTreeMap<String, FileDescriptorProto>,
) -> Vec<FileDescriptorProto> {
    let mut out = Vec::with_capacity(files.len());
    let mut done = BTreeSet::new();
    while !files.is_empty() {
        let ready: Vec<String> = files
            .iter()
            .filter(|(_, f)| {
                f.dependency
                    .iter()
                    .all(|d| done.contains(d) || !files.contains_key(d))
            })
            .map(|(n, _)| n.clone())
            .collect();
        // A cycle cannot be ordered; hand the rest over as it is and let the pool say why.
        let take = if ready.is_empty() {
            files.keys().cloned().collect()
        } else {
            ready
        };
        for n in take {
            if let Some(f) = files.remove(&n) {
                done.insert(n);
                out.push(f);
            }
        }
    }
    out
}

/// Runs [`reflect`] to completion from synchronous code, whether or not the caller is
/// inside a runtime (a thread of its own with a runtime of its own), giving up after
/// `within`.
pub fn reflect_blocking(
    endpoint: &Endpoint,
    within: std::time::Duration,
) -> Result<Reflected, String> {
    std::thread::scope(|s| {
        s.spawn(|| {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| e.to_string())?;
            let local = tokio::task::LocalSet::new();
            local.block_on(&rt, async {
                tokio::time::timeout(within, reflect(endpoint))
                    .await
                    .unwrap_or_else(|_| {
                        Err(format!(
                            "reflection gave no answer within {}",
                            crate::units::fmt_us(within.as_secs_f64() * 1e6)
                        ))
                    })
            })
        })
        .join()
        .unwrap_or_else(|_| Err("the reflection thread panicked".into()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(name: &str, deps: &[&str]) -> FileDescriptorProto {
        FileDescriptorProto {
            name: Some(name.into()),
            dependency: deps.iter().map(|d| d.to_string()).collect(),
            ..Default::default()
        }
    }

    #[test]
    fn descriptors_are_counted_before_they_are_decoded() {
        let one = file("a.proto", &[]).encode_to_vec();
        let mut budget = 3 * one.len();
        let got = decode_files(&[one.clone(), one.clone()], &mut budget).unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!(budget, one.len());
        let e = decode_files(&[one.clone(), one.clone()], &mut budget).unwrap_err();
        assert!(e.contains("more than 8 MiB of file descriptors"), "{e}");
        assert!(e.contains("--proto FILE"), "{e}");
    }

    #[test]
    fn files_come_after_their_imports() {
        let files: BTreeMap<String, FileDescriptorProto> = [
            file("a.proto", &["c.proto", "b.proto"]),
            file("b.proto", &["c.proto"]),
            file("c.proto", &["google/protobuf/empty.proto"]),
        ]
        .into_iter()
        .map(|f| (f.name().to_string(), f))
        .collect();
        let order: Vec<String> = in_dependency_order(files)
            .iter()
            .map(|f| f.name().to_string())
            .collect();
        assert_eq!(order, ["c.proto", "b.proto", "a.proto"]);
    }

    #[test]
    fn reflection_requests_encode_as_the_protocol_says() {
        // host = "" is not sent; list_services (field 7) = "*".
        let b = Request {
            host: String::new(),
            ask: Some(Ask::ListServices("*".into())),
        }
        .encode_to_vec();
        assert_eq!(b, [0x3a, 1, b'*']);
    }
}
