//! Readiness probes: try, wait, try again, until the probe passes, the member exits, the
//! user interrupts, or time runs out. Every attempt has its own timeout, because a server
//! may accept a call and hold it (a fresh etcd without a leader does).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::client::{Client, Descriptors, Options};
use crate::plan::{Call, Check, Probe};
use crate::protocol::target::Endpoint;
use crate::protocol::{Class, GrpcCode};

/// What a probe needs besides itself: the member's logs and the plan's `.proto` files.
pub struct ProbeEnv<'a> {
    pub logs: &'a [PathBuf],
    pub protos: &'a Descriptors,
    /// Endpoint used by a `grpc` probe that names none.
    pub endpoint: &'a str,
    /// The contender's state folder, for `{state}` in the probe's TLS settings.
    pub state: &'a std::path::Path,
    /// The start it belongs to: a `command` probe runs under a guard recorded in its
    /// results folder, like a member; its cancellation ends the wait.
    pub owner: &'a super::spawn::Owner,
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ProbeError {
    #[error("not ready after {waited:.1?} (last attempt: {last})")]
    Timeout { waited: Duration, last: String },
    #[error("{0}")]
    Exited(String),
    #[error("interrupted")]
    Interrupted,
    #[error("the probe cannot run: {0}")]
    Setup(String),
}

enum Prepared {
    Tcp(String),
    /// An HTTP GET that must answer this status (any 2xx when none is given).
    Http(Client, Option<u16>),
    /// A gRPC call that must answer OK.
    Grpc(Client),
    /// A JSON-RPC call that must answer with a result.
    JsonRpc(Client),
    /// The same, with the messages described by the server itself (no `.proto`).
    GrpcReflected(Box<(Call, Endpoint, Descriptors, Options)>),
    Log(regex_lite::Regex),
    Command {
        cmd: Vec<String>,
        owner: super::spawn::Owner,
    },
}

/// Waits until `probe` passes. `exited` is asked between attempts and returns a description
/// when a member has died, which ends the wait at once.
pub fn wait(
    probe: &Probe,
    env: &ProbeEnv,
    rt: &tokio::runtime::Runtime,
    exited: &mut dyn FnMut() -> Option<String>,
) -> Result<(), ProbeError> {
    let mut w = Waiter::new(probe, env)?;
    loop {
        if let Some(e) = exited() {
            return Err(ProbeError::Exited(e));
        }
        if env.owner.cancel.is_cancelled() {
            return Err(ProbeError::Interrupted);
        }
        if w.attempt(rt)? {
            return Ok(());
        }
        std::thread::sleep(w.next_at().saturating_duration_since(Instant::now()));
    }
}

/// One probe being waited for, an attempt at a time, so several members' probes can take
/// turns. The pause between attempts starts at 1 ms and doubles up to the probe's
/// `interval`, so a fast server's first answer is timed to about a millisecond, not to
/// the interval.
pub struct Waiter {
    prepared: Prepared,
    probe: Probe,
    logs: Vec<PathBuf>,
    start: Instant,
    next: Instant,
    pause: Duration,
    passed: bool,
    /// How precisely the pass is timed: the pause before the attempt that passed (from the
    /// end of the attempt before it, or the start) — the member may have been able to answer
    /// anywhere in it. (An attempt the server holds until it is ready ends when it is.)
    pub resolution: Duration,
    last_end: Instant,
    /// The command's cancellation.
    cancel: crate::cancel::Cancel,
}

impl Waiter {
    pub fn new(probe: &Probe, env: &ProbeEnv) -> Result<Waiter, ProbeError> {
        let now = Instant::now();
        Ok(Waiter {
            prepared: prepare(probe, env).map_err(ProbeError::Setup)?,
            probe: probe.clone(),
            logs: env.logs.to_vec(),
            start: now,
            next: now,
            pause: Duration::from_millis(1).min(probe.interval),
            passed: false,
            resolution: Duration::ZERO,
            last_end: now,
            cancel: env.owner.cancel.clone(),
        })
    }

    /// When the next attempt is due.
    pub fn next_at(&self) -> Instant {
        self.next
    }

    /// Makes one attempt: `Ok(true)` once the probe passed, `Ok(false)` to try again at
    /// [`Waiter::next_at`], an error once it has timed out.
    pub fn attempt(&mut self, rt: &tokio::runtime::Runtime) -> Result<bool, ProbeError> {
        if self.passed {
            return Ok(true);
        }
        let began = Instant::now();
        let outcome = attempt(&self.prepared, &self.probe, &self.logs, rt);
        let ended = Instant::now();
        let since = std::mem::replace(&mut self.last_end, ended);
        let last = match outcome {
            Ok(()) => {
                self.passed = true;
                self.resolution = began.saturating_duration_since(since);
                return Ok(true);
            }
            Err(e) => e,
        };
        let waited = self.start.elapsed();
        if waited >= self.probe.timeout {
            return Err(ProbeError::Timeout { waited, last });
        }
        let left = self.probe.timeout - waited;
        self.next = Instant::now() + self.pause.min(left);
        self.pause = (self.pause * 2).min(self.probe.interval);
        Ok(false)
    }
}

/// Waits for one probe on a thread of its own, with its own runtime, until it passes (how
/// precisely: [`Waiter::resolution`]), times out, or `stop` is set (then `Interrupted`).
pub fn wait_alone(mut w: Waiter, stop: &crate::cancel::Cancel) -> Result<Duration, ProbeError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| ProbeError::Setup(e.to_string()))?;
    loop {
        if stop.is_cancelled() || w.cancel.is_cancelled() {
            return Err(ProbeError::Interrupted);
        }
        if w.attempt(&rt)? {
            return Ok(w.resolution);
        }
        // Short naps, so a stop is seen within 20 ms even during a long pause.
        let until = w.next_at();
        while Instant::now() < until && !stop.is_cancelled() && !w.cancel.is_cancelled() {
            std::thread::sleep(
                until
                    .saturating_duration_since(Instant::now())
                    .min(Duration::from_millis(20)),
            );
        }
    }
}

/// Asks a probe once (for a contender's `leader` probe, of each member in turn).
pub fn ask(probe: &Probe, env: &ProbeEnv, rt: &tokio::runtime::Runtime) -> Result<(), String> {
    let prepared = prepare(probe, env)?;
    attempt(&prepared, probe, env.logs, rt)
}

fn prepare(probe: &Probe, env: &ProbeEnv) -> Result<Prepared, String> {
    let opts = || -> Result<Options, String> {
        Ok(Options {
            tls: probe.tls.resolve(Some(env.state))?,
            // A check on the answer needs its body.
            keep_body: probe.expect.is_some(),
            ..Options::default()
        })
    };
    Ok(match &probe.check {
        Check::Tcp(addr) => Prepared::Tcp(addr.clone()),
        Check::Http {
            url,
            status,
            method,
            body,
        } => {
            let ep = Endpoint::parse(url).map_err(|e| e.to_string())?;
            let call = Call::Http {
                method: method.clone(),
                path: ep.path.clone(),
                headers: Vec::new(),
                body: body.clone(),
                h2: false,
            };
            Prepared::Http(client(&call, ep, env.protos, opts()?)?, *status)
        }
        Check::JsonRpc {
            method,
            params,
            endpoint,
        } => {
            let ep = Endpoint::parse(endpoint.as_deref().unwrap_or(env.endpoint))
                .map_err(|e| e.to_string())?;
            let call = Call::JsonRpc {
                method: method.clone(),
                path: ep.path.clone(),
                params: params.clone(),
                headers: Vec::new(),
            };
            Prepared::JsonRpc(client(&call, ep, env.protos, opts()?)?)
        }
        Check::Grpc {
            call,
            body,
            endpoint,
        } => {
            let ep = Endpoint::parse(endpoint.as_deref().unwrap_or(env.endpoint))
                .map_err(|e| e.to_string())?;
            let call = Call::Grpc {
                method: call.clone(),
                body: body.clone(),
                shape: Default::default(),
            };
            if env.protos.is_empty() {
                // Reflection asks the server itself, so it is asked on every attempt until
                // the server answers.
                Prepared::GrpcReflected(Box::new((call, ep, env.protos.clone(), opts()?)))
            } else {
                Prepared::Grpc(client(&call, ep, env.protos, opts()?)?)
            }
        }
        Check::Log(re) => Prepared::Log(regex_lite::Regex::new(re).map_err(|e| e.to_string())?),
        Check::Command(cmd) => Prepared::Command {
            cmd: cmd.clone(),
            owner: env.owner.clone(),
        },
    })
}

fn client(
    call: &Call,
    ep: Endpoint,
    protos: &Descriptors,
    opts: Options,
) -> Result<Client, String> {
    Client::build(call, &[ep], protos, opts).map_err(|e| format!("{e:#}"))
}

fn attempt(
    p: &Prepared,
    probe: &Probe,
    logs: &[PathBuf],
    rt: &tokio::runtime::Runtime,
) -> Result<(), String> {
    let limit = probe.attempt_timeout;
    let expect = |c: &Client, r: &crate::protocol::Reply| match &probe.expect {
        None => Ok(()),
        Some(e) => e.check(&c.messages(r)),
    };
    match p {
        Prepared::Tcp(addr) => timed(rt, limit, async move {
            tokio::net::TcpStream::connect(addr.as_str())
                .await
                .map(drop)
                .map_err(|e| format!("connect to {addr}: {e}"))
        }),
        Prepared::Http(c, want) => {
            let r = rt.block_on(c.once(limit)).map_err(|e| e.to_string())?;
            match (r.class, want) {
                (Class::Http(s), Some(w)) if s == *w => expect(c, &r),
                (Class::Http(s), None) if (200..300).contains(&s) => expect(c, &r),
                (c, Some(w)) => Err(format!("{c}, waiting for HTTP {w}")),
                (c, None) => Err(c.to_string()),
            }
        }
        Prepared::JsonRpc(c) => {
            let r = rt.block_on(c.once(limit)).map_err(|e| e.to_string())?;
            match r.class {
                Class::JsonRpcResult => expect(c, &r),
                c => Err(format!(
                    "{c}{}",
                    r.detail.map(|d| format!(": {d}")).unwrap_or_default()
                )),
            }
        }
        Prepared::GrpcReflected(how) => {
            let (call, ep, protos, opts) = &**how;
            let c = client(call, ep.clone(), protos, opts.clone())?;
            attempt(&Prepared::Grpc(c), probe, logs, rt)
        }
        Prepared::Grpc(c) => {
            let r = rt.block_on(c.once(limit)).map_err(|e| e.to_string())?;
            match r.class {
                Class::Grpc(GrpcCode::Ok) => expect(c, &r),
                c => Err(format!(
                    "{c}{}",
                    r.detail.map(|d| format!(": {d}")).unwrap_or_default()
                )),
            }
        }
        Prepared::Log(re) => {
            if logs.iter().any(|f| log_matches(f, re)) {
                Ok(())
            } else {
                Err(format!("no log line matches `{}`", re.as_str()))
            }
        }
        Prepared::Command { cmd, owner } => super::spawn::run_guarded(&super::spawn::Oneshot {
            cmd,
            dir: None,
            owner,
            env: &[],
            log: None,
            limit,
        }),
    }
}

fn timed(
    rt: &tokio::runtime::Runtime,
    limit: Duration,
    fut: impl std::future::Future<Output = Result<(), String>>,
) -> Result<(), String> {
    rt.block_on(async { tokio::time::timeout(limit, fut).await })
        .unwrap_or_else(|_| Err(format!("no answer within {limit:?}")))
}

fn log_matches(file: &Path, re: &regex_lite::Regex) -> bool {
    std::fs::read(file)
        .map(|b| String::from_utf8_lossy(&b).lines().any(|l| re.is_match(l)))
        .unwrap_or(false)
}
