//! The flags that aim `load` and `call` at a server: the target, the call, TLS, and what to send.

use super::*;

/// What to call and how: shared by `load` and `call`.
#[derive(Debug, Args)]
pub struct TargetArgs {
    /// The HTTP URL (http://host:port/path); for --jsonrpc, the JSON-RPC endpoint.
    #[arg(value_name = "URL")]
    pub url: Option<String>,
    /// HTTP method [default: GET, or POST when a body is given].
    #[arg(short = 'm', long = "method")]
    pub method: Option<String>,
    /// A request header, `Name: value` (repeatable).
    #[arg(short = 'H', long = "header", value_name = "HEADER")]
    pub headers: Vec<String>,
    /// Request body (a template: {seq}, {rand:A..B}, {line:FILE}, {b64:...}).
    #[arg(short = 'd', long = "data", conflicts_with = "data_file")]
    pub data: Option<String>,
    /// Read the request body (a template) from a file.
    #[arg(short = 'D', long = "data-file", value_name = "FILE")]
    pub data_file: Option<PathBuf>,
    /// Use HTTP/2 over cleartext (prior knowledge) instead of HTTP/1.1.
    #[arg(long = "h2")]
    pub h2: bool,
    /// gRPC server URL (http:// or https://host:port); needs --call; the request is -d JSON
    /// (a JSON array of messages for client-streaming and bidi calls). Messages are built
    /// from --proto files, or from what the server says through reflection without them.
    #[arg(long = "grpc", value_name = "URL", conflicts_with_all = ["url", "h2", "jsonrpc"])]
    pub grpc: Option<String>,
    /// A .proto file defining the service (repeatable).
    #[arg(long = "proto", value_name = "FILE")]
    pub protos: Vec<PathBuf>,
    /// An import root for .proto files (repeatable) [default: each file's folder].
    #[arg(short = 'I', long = "import-path", value_name = "DIR")]
    pub includes: Vec<PathBuf>,
    /// The gRPC method, `package.Service/Method`.
    #[arg(long = "call", value_name = "METHOD")]
    pub call: Option<String>,
    /// Call this JSON-RPC 2.0 method at URL.
    #[arg(long = "jsonrpc", value_name = "METHOD", conflicts_with = "h2")]
    pub jsonrpc: Option<String>,
    /// JSON-RPC params (a JSON array or object; a template).
    #[arg(long = "params", default_value = "[]", requires = "jsonrpc")]
    pub params: String,
    /// Seed for {rand:...} placeholders: the same seed sends the same requests.
    #[arg(long = "seed", default_value_t = 0)]
    pub seed: u64,
    /// Give up on a call after this long (e.g. 500ms, 20s).
    #[arg(long = "timeout", default_value = "20s", value_parser = parse_timeout)]
    pub timeout: Duration,
    /// Client-streaming and bidi gRPC calls: pause this long between messages sent.
    #[arg(long = "stream-interval", value_parser = parse_duration, requires = "grpc")]
    pub stream_interval: Option<Duration>,
    /// Bidi gRPC calls: end the call once this many messages arrived (for servers that
    /// keep the stream open, like etcd's Watch).
    #[arg(long = "replies", value_name = "N", requires = "grpc", value_parser = clap::value_parser!(u64).range(1..))]
    pub replies: Option<u64>,
    #[command(flatten)]
    pub tls: TlsArgs,
    #[command(flatten)]
    pub body: super::BodyArgs,
}

/// TLS flags, as ghz and curl spell them.
#[derive(Debug, Args, Default)]
pub struct TlsArgs {
    /// Trust the CA certificates in FILE (PEM) instead of the system's.
    #[arg(long = "cacert", value_name = "FILE")]
    pub cacert: Option<PathBuf>,
    /// Client certificate (PEM) for mutual TLS; needs --key.
    #[arg(long = "cert", value_name = "FILE", requires = "key")]
    pub cert: Option<PathBuf>,
    /// The client certificate's private key (PEM).
    #[arg(long = "key", value_name = "FILE", requires = "cert")]
    pub key: Option<PathBuf>,
    /// Do not verify the server's certificate.
    #[arg(short = 'k', long = "insecure")]
    pub insecure: bool,
    /// The name sent as SNI and verified, instead of the URL's host.
    #[arg(long = "servername", value_name = "NAME")]
    pub servername: Option<String>,
}

impl TlsArgs {
    pub fn options(&self) -> crate::protocol::tls::TlsOptions {
        crate::protocol::tls::TlsOptions {
            cacert: self.cacert.clone(),
            cert: self.cert.clone(),
            key: self.key.clone(),
            insecure: self.insecure,
            servername: self.servername.clone(),
        }
    }
}

#[derive(Debug, Args)]
pub struct LoadArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    /// Number of requests to send [default: 200 unless -z is given].
    #[arg(short = 'n', long = "requests", conflicts_with = "duration")]
    pub requests: Option<u64>,
    /// Send for this long instead of a count (e.g. 10s, 1m).
    #[arg(short = 'z', long = "duration", value_parser = parse_duration)]
    pub duration: Option<Duration>,
    /// Concurrent clients, one connection each.
    #[arg(short = 'c', long = "clients", default_value_t = 50)]
    pub clients: usize,
    /// Open loop: send at this total rate (requests/s) whatever the server does; latency is
    /// then corrected for coordinated omission.
    #[arg(short = 'q', long = "rate")]
    pub rate: Option<f64>,
    /// Worker threads [default: one per CPU this process may use, at most one per client].
    #[arg(
        short = 't',
        long = "threads",
        default_value_t = 0,
        hide_default_value = true
    )]
    pub threads: usize,
    /// Pin worker threads to these CPUs (e.g. 0 or 0,1).
    #[arg(long = "cpus", value_delimiter = ',')]
    pub cpus: Vec<usize>,
    /// Send load for this long first and leave it out of the results.
    #[arg(long = "warmup", value_parser = parse_duration)]
    pub warmup: Option<Duration>,
    /// Print the result as JSON (schema version inside) instead of a summary.
    #[arg(long = "json")]
    pub json: bool,
    /// Exit 2 if any call failed (without it: only when no call succeeded).
    #[arg(long = "fail-on-error", conflicts_with = "max_failures")]
    pub fail_on_error: bool,
    /// Exit 2 if more than this share of calls failed, e.g. 1% (for CI, like k6's
    /// `http_req_failed: rate<0.01`).
    #[arg(long = "max-failures", value_name = "SHARE", value_parser = parse_share_arg)]
    pub max_failures: Option<f64>,
    /// What if the server set TCP_NODELAY: force it on the sockets of --pid from outside
    /// (its listening socket on the target's port, and its side of each connection once
    /// the clients have connected, before anything is sent), then measure.
    #[arg(long = "what-if", value_name = "WHAT", value_enum, requires = "pid")]
    pub what_if: Option<WhatIfArg>,
    /// The server's process for --what-if (and its children): only a PID you name.
    #[arg(long = "pid", value_name = "PID", requires = "what_if")]
    pub pid: Option<i32>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum WhatIfArg {
    /// TCP_NODELAY on: no Nagle delay of small writes.
    Nodelay,
}

impl From<WhatIfArg> for crate::plan::WhatIf {
    fn from(w: WhatIfArg) -> crate::plan::WhatIf {
        match w {
            WhatIfArg::Nodelay => crate::plan::WhatIf::NoDelay,
        }
    }
}

#[derive(Debug, Args)]
pub struct CallArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    /// List the gRPC server's services and methods (from --proto, else reflection).
    #[arg(long = "list", requires = "grpc", conflicts_with_all = ["call", "describe"])]
    pub list: bool,
    /// Show the request of a gRPC method as JSON with every field at its default.
    #[arg(
        long = "describe",
        value_name = "METHOD",
        requires = "grpc",
        conflicts_with = "call"
    )]
    pub describe: Option<String>,
    /// Print the answer as one JSON object (outcome and messages).
    #[arg(long = "json")]
    pub json: bool,
}

/// A call's timeout: a duration above zero (a zero timeout would end every call before it
/// is sent, or read as "none").
pub(super) fn parse_timeout(s: &str) -> Result<Duration, String> {
    match parse_duration(s)? {
        d if d.is_zero() => Err(format!(
            "`{s}`: a call needs time to answer; give a timeout above 0"
        )),
        d => Ok(d),
    }
}

impl TargetArgs {
    pub(super) fn headers(&self) -> anyhow::Result<Vec<(String, String)>> {
        self.headers
            .iter()
            .map(|h| match h.split_once(':') {
                Some((k, v)) if !k.trim().is_empty() => {
                    Ok((k.trim().to_string(), v.trim().to_string()))
                }
                _ => bail!("-H `{h}`: a header is written `Name: value`"),
            })
            .collect()
    }

    pub(super) fn body(&self) -> anyhow::Result<Option<String>> {
        match (&self.data, &self.data_file) {
            (Some(d), _) => Ok(Some(d.clone())),
            (None, Some(f)) => {
                crate::sys::read_bounded(f, crate::protocol::template::max_len() as u64).map(Some)
            }
            .with_context(|| format!("-D: cannot read `{}`", f.display())),
            (None, None) => Ok(None),
        }
    }

    /// A `{word:…}` in -d or --params that is not a placeholder is sent as written: says so.
    pub(super) fn warn_unknown_placeholders(&self, body: Option<&str>) {
        let texts = [("-d", body), ("--params", Some(self.params.as_str()))];
        for (flag, text) in texts {
            for w in crate::protocol::template::unknown_keywords(text.unwrap_or_default()) {
                eprintln!(
                    "bakeoff: warning: `{{{w}:…}}` in {flag} is not a placeholder bakeoff knows \
                     ({}); it is sent as written",
                    crate::protocol::template::KEYWORDS.join(", ")
                );
            }
        }
    }

    /// The call the flags describe and the endpoint it goes to.
    pub fn call(&self) -> anyhow::Result<(Call, Endpoint)> {
        let headers = self.headers()?;
        let body = self.body()?;
        // Checked here too, so a mistake names the flag it came from.
        if let Some(b) = &body {
            Template::parse(b).context("-d")?;
        }
        self.warn_unknown_placeholders(body.as_deref());
        if let Some(url) = &self.grpc {
            let endpoint = Endpoint::parse(url).context("--grpc")?;
            let method = self
                .call
                .clone()
                .context("--grpc needs --call package.Service/Method (or --list to see them)")?;
            let body = body.unwrap_or_else(|| "{}".into());
            let shape = crate::protocol::grpc::CallShape {
                metadata: headers,
                interval: self.stream_interval,
                replies: self.replies,
            };
            return Ok((
                Call::Grpc {
                    method,
                    body,
                    shape,
                },
                endpoint,
            ));
        }
        let url = self
            .url
            .as_deref()
            .context("give a URL to call (or --grpc URL for gRPC)")?;
        let endpoint =
            Endpoint::parse(url).with_context(|| format!("URL `{}`", Endpoint::redact(url)))?;
        let path = endpoint.path.clone();
        Template::parse(&path).context("URL path")?;
        if let Some(method) = &self.jsonrpc {
            if body.is_some() {
                bail!(
                    "--jsonrpc builds the body itself; give the arguments with --params, not -d/-D"
                );
            }
            let call = Call::JsonRpc {
                method: method.clone(),
                path,
                params: self.params.clone(),
                headers,
            };
            return Ok((call, endpoint));
        }
        if self.call.is_some() || !self.protos.is_empty() {
            bail!("--call and --proto are for gRPC; give the server with --grpc URL");
        }
        let method = self
            .method
            .clone()
            .unwrap_or_else(|| if body.is_some() { "POST" } else { "GET" }.to_string());
        if method.is_empty() || !method.bytes().all(|b| b.is_ascii_alphabetic()) {
            bail!("-m `{method}` is not an HTTP method");
        }
        let call = Call::Http {
            method,
            path,
            headers,
            body,
            h2: self.h2,
        };
        Ok((call, endpoint))
    }

    /// The gRPC endpoint and .proto files of `--grpc`, for `--list` and `--describe`.
    pub fn grpc_target(&self) -> anyhow::Result<(Endpoint, Descriptors)> {
        let url = self
            .grpc
            .as_deref()
            .context("--list and --describe need --grpc URL")?;
        let endpoint = Endpoint::parse(url).context("--grpc")?;
        Ok((
            endpoint,
            Descriptors::within(self.protos.clone(), self.includes.clone(), self.timeout),
        ))
    }

    /// Builds the protocol client the flags describe. `keep_body` keeps answers for printing.
    pub fn build(&self, keep_body: bool) -> anyhow::Result<Client> {
        let (call, endpoint) = self.call()?;
        let protos = Descriptors::within(self.protos.clone(), self.includes.clone(), self.timeout);
        let opts = Options {
            seed: self.seed,
            keep_body,
            tls: self.tls.options(),
        };
        Client::build(&call, &[endpoint], &protos, opts)
    }
}

impl LoadArgs {
    pub fn stop(&self) -> Stop {
        match (self.requests, self.duration) {
            (Some(n), _) => Stop::Count(n),
            (None, Some(d)) => Stop::Duration(d),
            (None, None) => Stop::Count(200),
        }
    }

    pub fn warmup(&self) -> Duration {
        self.warmup.unwrap_or(Duration::ZERO)
    }

    pub fn config(&self) -> anyhow::Result<LoadConfig> {
        let stop = self.stop();
        let pacing = match self.rate {
            Some(rate) => Pacing::Open { rate },
            None => Pacing::Closed,
        };
        let allowed = crate::sys::allowed_cpus();
        if let Some(c) = self.cpus.iter().find(|c| !allowed.contains(c)) {
            bail!("--cpus: CPU {c} is not available to this process (it may use {allowed:?})");
        }
        let warmup = self.warmup();
        let threads = if self.threads == 0 && !self.cpus.is_empty() {
            self.cpus.len()
        } else {
            self.threads
        };
        let cfg = LoadConfig::new(
            pacing,
            stop,
            self.clients,
            threads,
            warmup,
            self.target.timeout,
        )?;
        Ok(cfg.pin_to(self.cpus.clone()))
    }
}
