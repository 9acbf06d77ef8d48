//! The live floor: a started contender of a repetition — its running process tree, parsed
//! endpoints and state — and the only writer of its run record in `results.json` (and the
//! only place the runner saves results), so what a run records about a contender is written
//! in one file.

use std::path::{Path, PathBuf};

use anyhow::Context as _;

use super::ctx::Ctx;
use super::events::Reporter;
use crate::contender::{self, Running};
use crate::plan::{Plan, PointId, Scenario, Spread};
use crate::protocol::target::Endpoint;
use crate::results::{self, PointRun, Results, Run, Status};

/// Writes `results` to `dir` atomically: every step of a run ends here.
pub(super) fn save(dir: &Path, results: &Results) -> anyhow::Result<()> {
    results
        .save(dir)
        .with_context(|| format!("writing `{}`", dir.join("results.json").display()))
}

/// A started contender of this repetition: its entry in the results, the running process
/// tree and its parsed endpoints (empty when it never became ready).
pub(super) struct Live {
    pub(super) ci: usize,
    /// Its run record's index in `results.runs`.
    pub(super) idx: usize,
    pub(super) running: Running,
    pub(super) endpoints: Vec<Endpoint>,
    pub(super) state: PathBuf,
    /// The member the `leader` probe found leading before the current point.
    pub(super) leader: Option<usize>,
    /// Set while TCP_NODELAY is forced on it (a `+nodelay` variant, or confirming a stall):
    /// what forcing did so far.
    pub(super) forcing: Option<results::Forcing>,
}

impl Live {
    /// Its name in the plan (a variant's with its `+what`).
    pub(super) fn name<'p>(&self, plan: &'p Plan) -> &'p str {
        &plan.contenders[self.ci].name
    }

    /// Its run record.
    pub(super) fn run<'r>(&self, results: &'r Results) -> &'r Run {
        &results.runs[self.idx]
    }

    /// For a `target = "leader"` point: asks the contender's `leader` probe which member
    /// leads now (leadership can move between points) and returns its name.
    pub(super) fn find_leader(
        &mut self,
        p: &PointId,
        rt: &tokio::runtime::Runtime,
    ) -> Result<Option<String>, String> {
        if p.spread() != Spread::Leader {
            return Ok(None);
        }
        let i = self.running.leader(rt)?;
        self.leader = Some(i);
        // A single process leads itself: nothing to record.
        let names = self.running.member_names();
        Ok((names.len() > 1).then(|| names[i].clone()))
    }

    /// Whether it is to serve scenarios: ready, still running, and not a noise instance.
    pub(super) fn serves(&self, plan: &Plan, results: &Results) -> bool {
        plan.contenders[self.ci].noise_of.is_none()
            && self.run(results).status == Status::Running
            && !self.endpoints.is_empty()
    }

    /// Whether it serves point `p` ("all members" of a single process is "first": not run
    /// twice).
    pub(super) fn serves_point(&self, plan: &Plan, results: &Results, p: &PointId) -> bool {
        self.serves(plan, results) && !(p.spread() == Spread::All && self.endpoints.len() == 1)
    }

    /// The endpoints a point's load goes to.
    pub(super) fn targets(&self, p: &PointId) -> &[Endpoint] {
        match p.spread() {
            Spread::First => &self.endpoints[..1],
            Spread::All => &self.endpoints,
            Spread::Leader => {
                let i = self.leader.unwrap_or(0);
                &self.endpoints[i..i + 1]
            }
        }
    }

    /// Records the contender as failed, and says so, when it has died; `when` is `before`
    /// or `during` point `p`.
    pub(super) fn died(
        &mut self,
        when: &str,
        s: &Scenario,
        p: &PointId,
        results: &mut Results,
        rep: &mut dyn Reporter,
    ) -> bool {
        match self.running.exited() {
            Some(died) => {
                let error = format!("died {when} scenario `{}` [{}]: {died}", s.name, p.label());
                fail(&mut results.runs[self.idx], error, rep);
                true
            }
            None => false,
        }
    }

    /// Records the points it measured at one plan point and saves.
    pub(super) fn record_points(
        &self,
        dir: &Path,
        points: Vec<PointRun>,
        results: &mut Results,
    ) -> anyhow::Result<()> {
        self.add_points(points, results);
        save(dir, results)
    }

    /// Records points it measured, to be saved with the others' (paired points).
    pub(super) fn add_points(&self, points: Vec<PointRun>, results: &mut Results) {
        results.runs[self.idx].points.extend(points);
    }

    /// Records a stall confirmation and saves.
    pub(super) fn record_confirmation(
        &self,
        dir: &Path,
        c: results::Confirmation,
        results: &mut Results,
    ) -> anyhow::Result<()> {
        results.runs[self.idx].confirmations.push(c);
        save(dir, results)
    }

    /// Stops it and records how it ended and what it cost.
    pub(super) fn finish(self, ctx: &Ctx, results: &mut Results) -> anyhow::Result<()> {
        let edge = self.running.edge_stats();
        let (exits, usage, mut problems) = self.running.stop();
        let run = &mut results.runs[self.idx];
        if let Some(w) = self.forcing {
            problems.extend(w.problems.iter().map(|p| format!("what-if nodelay: {p}")));
            run.what_if = Some(w);
        }
        run.exits = exits;
        run.edge = edge;
        run.usage = Some(results::Usage {
            cpu_user_s: usage.cpu_user_s,
            cpu_system_s: usage.cpu_system_s,
            peak_rss_bytes: usage.peak_rss_bytes,
        });
        run.disk_end_bytes = Some(contender::usage::disk_usage(&self.state));
        if run.status == Status::Running {
            run.status = if ctx.cancel.is_cancelled() {
                Status::Interrupted
            } else {
                Status::Complete
            };
        }
        let id = run.id.clone();
        for p in problems {
            results.warnings.push(results::Warning::Stop {
                run: id.clone(),
                problem: p,
            });
        }
        let _ = std::fs::remove_dir_all(&self.state);
        let _ = std::fs::remove_dir(ctx.dir.join("state")); // only when empty
        save(ctx.dir, results)
    }
}

/// A new run record for a contender starting, saved at once.
pub(super) fn open_record(
    ctx: &Ctx,
    ci: usize,
    repetition: u32,
    block: Option<u32>,
    results: &mut Results,
) -> anyhow::Result<usize> {
    let c = &ctx.plan.contenders[ci];
    let (of, variant) = c.runs_as();
    results.runs.push(Run {
        id: results::RunId {
            shard: ctx.shard.map(|s| s.k),
            variant: variant.cloned(),
            ..results::RunId::new(of, repetition)
        },
        status: Status::Running,
        error: None,
        started_at: results::now_utc(),
        startup: None,
        points: Vec::new(),
        usage: None,
        disk_end_bytes: None,
        exits: Vec::new(),
        logs: Vec::new(),
        compat: Vec::new(),
        environment: Some(ctx.here.clone()),
        block,
        tool: Some(results::tool()),
        what_if: None,
        confirmations: Vec::new(),
        edge: None,
    });
    save(ctx.dir, results)?;
    Ok(results.runs.len() - 1)
}

/// Marks a run failed (or interrupted, when the run was cut short) with its error.
pub(super) fn fail(run: &mut Run, error: String, rep: &mut dyn Reporter) {
    rep.contender_failed(&run.id.subject(), &error);
    run.status = Status::Failed;
    run.error = Some(error);
}

/// Adds one forcing to what a contender's forcing did so far.
pub(super) fn count_forced(
    into: Option<&mut results::Forcing>,
    f: &crate::contender::nodelay::Forced,
) {
    if let Some(w) = into {
        let established = f.sockets.len() - f.listeners();
        w.add(
            f.listeners(),
            established,
            f.cleared_by_server(),
            &f.problems,
        );
    }
}
