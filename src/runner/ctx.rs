//! What every floor of a run shares — the plan, the results folder, the one compiled
//! `.proto` set, the pinning, the runtime, where it runs, the command's cancellation — and
//! the one place a point's clients and load configurations are built.

use std::path::Path;
use std::time::Duration;

use crate::client::{Client, Descriptors, Options};
use crate::load::{LoadConfig, Pacing, Stop};
use crate::plan::{Plan, PointId, Scenario};
use crate::protocol::target::Endpoint;
use crate::results;

pub(super) struct Ctx<'a> {
    pub(super) plan: &'a Plan,
    pub(super) dir: &'a Path,
    pub(super) protos: &'a Descriptors,
    pub(super) contender_cpus: Option<Vec<usize>>,
    pub(super) load_cpus: Vec<usize>,
    pub(super) rt: &'a tokio::runtime::Runtime,
    pub(super) here: results::env::Environment,
    pub(super) shard: Option<results::Shard>,
    /// The command's cancellation (Ctrl-C): handed to every launch and load.
    pub(super) cancel: crate::cancel::Cancel,
}

/// How one load of a point is shaped.
#[derive(Debug, Clone, Copy)]
pub(super) struct Shape {
    pub(super) pacing: Pacing,
    pub(super) stop: Stop,
    pub(super) warmup: Duration,
    pub(super) clients: usize,
}

impl Shape {
    /// The point as the plan shapes it: its pacing, the scenario's stop and warm-up.
    pub(super) fn of(s: &Scenario, p: &PointId) -> Shape {
        Shape {
            pacing: p.pacing(s.pacing),
            stop: s.stop,
            warmup: s.warmup,
            clients: p.clients,
        }
    }
}

impl Ctx<'_> {
    /// Where the threads writing members' logs run: every CPU but the contenders' (not
    /// pinned when the contenders are not).
    pub(super) fn log_cpus(&self) -> Option<Vec<usize>> {
        let contender = self.contender_cpus.as_ref()?;
        let rest: Vec<usize> = crate::sys::allowed_cpus()
            .into_iter()
            .filter(|c| !contender.contains(c))
            .collect();
        (!rest.is_empty()).then_some(rest)
    }

    /// The contenders' CPUs when they are pinned apart from the load (what else runs there
    /// is contention); empty otherwise.
    pub(super) fn pinned_apart(&self) -> &[usize] {
        match &self.contender_cpus {
            Some(c)
                if !self.load_cpus.is_empty() && !c.iter().any(|x| self.load_cpus.contains(x)) =>
            {
                c
            }
            _ => &[],
        }
    }

    /// The CPUs a point keeps busy: the contenders' and the load's when pinned, else all.
    pub(super) fn busy_cpus(&self) -> Vec<usize> {
        if self.load_cpus.is_empty() {
            return Vec::new();
        }
        let mut cpus = self.load_cpus.clone();
        cpus.extend(self.contender_cpus.iter().flatten());
        cpus.sort_unstable();
        cpus.dedup();
        cpus
    }

    /// The load configuration of every load a run sends: shaped by `how`, pinned to the
    /// load CPUs, cancelled with the run.
    pub(super) fn config(&self, s: &Scenario, how: Shape) -> Result<LoadConfig, String> {
        LoadConfig::new(
            how.pacing,
            how.stop,
            how.clients,
            self.load_cpus.len(),
            how.warmup,
            s.timeout,
        )
        .map(|c| {
            c.pin_to(self.load_cpus.clone())
                .cancelled_by(self.cancel.clone())
        })
        .map_err(|e| e.to_string())
    }

    /// The options of every client a point's scenario makes (TLS files under `state`).
    pub(super) fn options(&self, s: &Scenario, state: &Path) -> Result<Options, String> {
        Ok(Options {
            seed: self.plan.seed,
            keep_body: false,
            tls: s.tls.resolve(Some(state))?,
        })
    }

    /// The client of a point's load against `targets`.
    pub(super) fn client(
        &self,
        s: &Scenario,
        p: &PointId,
        targets: &[Endpoint],
        state: &Path,
    ) -> Result<Client, String> {
        let opts = self.options(s, state)?;
        Client::build(&s.call.with_vars(&p.vars.0), targets, self.protos, opts)
            .map_err(|e| format!("{e:#}"))
    }
}
