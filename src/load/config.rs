//! A load's configuration, checked once when it is made: clients, pacing, stop, warm-up,
//! timeout, the CPUs its threads are pinned to, and the cancel it stops on.

use std::time::Duration;

use super::pacing::{Pacing, Stop};
use crate::sys;

/// The longest an open loop bounded by a count may take at its rate.
const MAX_OPEN_LOOP: Duration = Duration::from_secs(30 * 86_400);

/// The most clients one load runs (a plan's `clients` has the same bound).
pub const MAX_CLIENTS: usize = 100_000;

/// A checked load configuration; build it with [`LoadConfig::new`].
#[derive(Debug, Clone)]
pub struct LoadConfig {
    pub(super) pacing: Pacing,
    pub(super) stop: Stop,
    pub(super) clients: usize,
    pub(super) threads: usize,
    pub(super) warmup: Duration,
    pub(super) timeout: Duration,
    pub(super) cpus: Vec<usize>,
    /// The command's cancellation: a cancelled load stops sending and reports what it has.
    pub(super) cancel: crate::cancel::Cancel,
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum LoadError {
    #[error("{0}")]
    Config(String),
    #[error("cannot reach the target: {0}")]
    Unreachable(String),
    #[error("a load worker failed: {0}")]
    Worker(String),
    /// Stopped (Ctrl-C, SIGTERM) before a connection was made: nothing was sent.
    #[error("interrupted before any load was sent")]
    Interrupted,
}

impl LoadConfig {
    /// Checks the combination once: at least one client, a positive finite rate, a non-zero
    /// bound, a timeout. `threads` 0 means one per allowed CPU (at most one per client).
    pub fn new(
        pacing: Pacing,
        stop: Stop,
        clients: usize,
        threads: usize,
        warmup: Duration,
        timeout: Duration,
    ) -> Result<LoadConfig, LoadError> {
        let bad = |m: &str| Err(LoadError::Config(m.to_string()));
        if clients == 0 {
            return bad("-c/--clients must be at least 1");
        }
        if clients > MAX_CLIENTS {
            return Err(LoadError::Config(format!(
                "-c/--clients {clients}: at most {MAX_CLIENTS} (one connection each)"
            )));
        }
        // A closed loop of N requests keeps at most N clients busy: more would only open
        // connections that never send.
        let clients = match (pacing, stop) {
            (Pacing::Closed, Stop::Count(n)) if n > 0 => {
                clients.min(n.min(usize::MAX as u64) as usize)
            }
            _ => clients,
        };
        if let Pacing::Open { rate } = pacing {
            if !(rate.is_finite() && rate > 0.0) {
                return bad("-q/--rate must be a positive number of requests per second");
            }
            // Rates whose interval does not fit the run would never send (or overflow).
            let every = 1.0 / rate;
            let fits = |d: Duration| every <= d.as_secs_f64();
            match stop {
                Stop::Duration(d) if !fits(d) => {
                    return Err(LoadError::Config(format!(
                        "-q/--rate {rate}: one request every {every:.3e} s does not fit in the \
                         {:?} duration",
                        d
                    )))
                }
                Stop::Count(n) if n as f64 * every > MAX_OPEN_LOOP.as_secs_f64() => {
                    return Err(LoadError::Config(format!(
                        "-q/--rate {rate}: {n} requests would take {:.3e} s, more than {} days",
                        n as f64 * every,
                        MAX_OPEN_LOOP.as_secs() / 86_400
                    )))
                }
                _ => {}
            }
            if !warmup.is_zero() && !fits(warmup) {
                return Err(LoadError::Config(format!(
                    "-q/--rate {rate}: one request every {every:.3e} s does not fit in the \
                     {warmup:?} warm-up"
                )));
            }
        }
        match stop {
            Stop::Count(0) => return bad("-n/--requests must be at least 1"),
            Stop::Duration(d) if d.is_zero() => return bad("-z/--duration must be longer than 0"),
            _ => {}
        }
        if timeout.is_zero() {
            return bad("--timeout must be longer than 0");
        }
        let threads = if threads == 0 {
            sys::allowed_cpus().len().max(1)
        } else {
            threads
        };
        Ok(LoadConfig {
            pacing,
            stop,
            clients,
            threads: threads.min(clients),
            warmup,
            timeout,
            cpus: Vec::new(),
            cancel: crate::cancel::Cancel::new(),
        })
    }

    /// The clients it runs (`-c`, at most one per request of a closed-loop count).
    pub fn clients(&self) -> usize {
        self.clients
    }

    /// Stops sending once `cancel` is set (Ctrl-C), keeping what was measured.
    pub fn cancelled_by(mut self, cancel: crate::cancel::Cancel) -> LoadConfig {
        self.cancel = cancel;
        self
    }

    /// Pins worker thread `i` to `cpus[i % len]`.
    pub fn pin_to(mut self, cpus: Vec<usize>) -> LoadConfig {
        self.cpus = cpus;
        self
    }
}
