//! The `.proto` descriptors gRPC clients call by: a plan's files compiled once, or what a
//! server says about itself through reflection, asked once per server.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use prost_reflect::{DescriptorPool, MethodDescriptor};

use crate::protocol::grpc::{self, GrpcSetupError};
use crate::protocol::reflection::{self, Reflected};
use crate::protocol::target::Endpoint;

/// The `.proto` files of a plan (or of `--proto` flags), compiled the first time a gRPC
/// client needs them and shared by every client after that; without files, what each server
/// says about itself through reflection, asked once per server. Cheap to clone.
#[derive(Clone, Default)]
pub struct Descriptors(Arc<Sources>);

#[derive(Default)]
struct Sources {
    files: Vec<PathBuf>,
    includes: Vec<PathBuf>,
    /// A compile error is kept as its message: every client that asks gets the same one.
    pool: OnceLock<Result<DescriptorPool, String>>,
    /// By `scheme://authority`; failures are not kept (the server may not be up yet).
    reflected: Mutex<HashMap<String, Arc<Reflected>>>,
    /// How long one reflection conversation may take.
    reflect_within: Duration,
}

/// How long a reflection conversation may take unless told otherwise (`--timeout`).
pub const REFLECTION_TIMEOUT: Duration = Duration::from_secs(20);

impl Descriptors {
    pub fn new(files: Vec<PathBuf>, includes: Vec<PathBuf>) -> Descriptors {
        Descriptors::within(files, includes, REFLECTION_TIMEOUT)
    }

    /// As [`Descriptors::new`], with reflection given at most `timeout` (a command's
    /// `--timeout`).
    pub fn within(files: Vec<PathBuf>, includes: Vec<PathBuf>, timeout: Duration) -> Descriptors {
        Descriptors(Arc::new(Sources {
            files,
            includes,
            pool: OnceLock::new(),
            reflected: Mutex::new(HashMap::new()),
            reflect_within: timeout,
        }))
    }

    /// What the server at `endpoint` says about itself through reflection (asked once).
    pub fn reflect(&self, endpoint: &Endpoint) -> Result<Arc<Reflected>, GrpcSetupError> {
        let key = format!("{}://{}", endpoint.scheme(), endpoint.authority);
        if let Some(r) = self.0.reflected.lock().expect("not poisoned").get(&key) {
            return Ok(r.clone());
        }
        let r = Arc::new(
            reflection::reflect_blocking(endpoint, self.0.reflect_within)
                .map_err(GrpcSetupError::Proto)?,
        );
        self.0
            .reflected
            .lock()
            .expect("not poisoned")
            .insert(key, r.clone());
        Ok(r)
    }

    /// The pool for calls to `endpoint`: the compiled files, or else reflection.
    pub fn pool_for(&self, endpoint: &Endpoint) -> Result<DescriptorPool, GrpcSetupError> {
        if self.is_empty() {
            Ok(self.reflect(endpoint)?.pool.clone())
        } else {
            self.pool().cloned()
        }
    }

    /// Whether any `.proto` file was given.
    pub fn is_empty(&self) -> bool {
        self.0.files.is_empty()
    }

    /// The compiled pool (compiled on first use).
    pub fn pool(&self) -> Result<&DescriptorPool, GrpcSetupError> {
        self.0
            .pool
            .get_or_init(|| {
                grpc::compile(&self.0.files, &self.0.includes).map_err(|e| e.to_string())
            })
            .as_ref()
            .map_err(|e| GrpcSetupError::Proto(e.clone()))
    }

    /// `package.Service/Method` in the compiled files, or as `endpoint` describes it.
    pub fn method(
        &self,
        call: &str,
        endpoint: &Endpoint,
    ) -> Result<MethodDescriptor, GrpcSetupError> {
        grpc::find_method(&self.pool_for(endpoint)?, call)
    }
}

impl std::fmt::Debug for Descriptors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Descriptors")
            .field("files", &self.0.files)
            .field("includes", &self.0.includes)
            .finish()
    }
}
