//! The bake-off: for every repetition, start each contender from fresh state and time its
//! start-up; then serve every scenario point — paired (`paired.rs`: the repetition's
//! contenders side by side, in rounds of slices) or one contender at a time (interleaved or
//! in sequence) — stop them, and write `results.json` after each of those steps. A contender
//! that fails is recorded as failed and the others go on; Ctrl-C stops after the step in
//! progress.

pub mod events;
mod paired;
mod preflight;
mod profiles;
mod ramps;
mod setup;
mod whatif;

use std::path::{Path, PathBuf};

use anyhow::Context as _;

use crate::client::{self, Client, Descriptors, Options};
use crate::contender::{self, Launch, Running};
use crate::load::{Edge, Flow, LoadConfig};
use crate::plan::{Order, Plan, Point, Scenario, Spread};
use crate::protocol::target::Endpoint;
use crate::results::{self, PointRun, Results, Run};
pub use events::Reporter;
use ramps::Shape;
use setup::{ask_references, fresh, pinning, resume, schedule};

/// Per compat call: a server that holds a request longer is recorded as timed out.
pub(crate) const COMPAT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Where results go [default: `bakeoff-results/<timestamp>-<name>`].
    pub out: Option<PathBuf>,
    /// Continue the run in this results directory.
    pub resume: Option<PathBuf>,
    /// One repetition, every point at one request per client.
    pub smoke: bool,
    /// `--repetitions N`: instead of the plan's.
    pub repetitions: Option<u32>,
    /// `--only A,B`: these contenders (and their noise instances) only.
    pub only: Vec<String>,
    /// `--scenario S`: these scenarios only.
    pub scenarios: Vec<String>,
    /// `--shard K/N`: only the repetitions of shard K (docs/scale-out.md).
    pub shard: Option<results::Shard>,
    /// `--what-if nodelay`: a variant of every contender compared (docs/what-if.md).
    pub what_if: Vec<String>,
    /// `--profile`: every plain scenario is profiled (docs/profiles.md).
    pub profile: bool,
    /// The command's cancellation: set by Ctrl-C or SIGTERM, the run stops after the step in
    /// progress and keeps what it measured.
    pub cancel: crate::cancel::Cancel,
}

/// What a finished (or interrupted) bake-off leaves: its directory and results.
pub struct Finished {
    pub dir: PathBuf,
    pub results: Results,
}

/// Runs the plan at `plan_path` (or resumes `opts.resume`).
pub fn run(
    plan_path: Option<&Path>,
    opts: &RunOptions,
    rep: &mut dyn Reporter,
) -> anyhow::Result<Finished> {
    let (plan, dir, mut results) = match &opts.resume {
        Some(dir) => resume(dir)?,
        None => {
            let path = plan_path.context("give a plan file")?;
            fresh(path, opts)?
        }
    };
    // Compiled once here; every client and probe of the run shares it. A fresh run was
    // checked before its folder was made.
    let protos = Descriptors::new(plan.protos.clone(), plan.includes.clone());
    if opts.resume.is_some() {
        preflight::check(&plan, &protos)?;
    }
    let (contender_cpus, load_cpus) = pinning(&plan, &mut results.warnings);
    for w in &results.warnings {
        rep.warning(w);
    }
    // Where this invocation runs, detected before bakeoff pins itself; every repetition it
    // runs records it. The top-level environment stays where the run began.
    let mut here = crate::results::env::Environment::detect();
    here.contender_cpus = contender_cpus.clone();
    here.load_cpus = load_cpus.clone();
    if opts.resume.is_none() {
        results.environment = here.clone();
    }
    results.save(&dir).context("writing results.json")?;

    let shard = results.shards.as_ref().and_then(|s| match s.have[..] {
        [k] => Some(results::Shard { k, n: s.of }),
        _ => None,
    });
    let schedule = schedule(&plan, shard);
    rep.run_started(&dir, schedule.len());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    if results.compat_reference.is_empty() {
        ask_references(&plan, &protos, &rt, &mut results, rep);
        results.save(&dir).context("writing results.json")?;
    }
    // bakeoff's own threads (probes, the sampler) stay off the contenders' CPUs; contenders
    // that are not pinned get every CPU back.
    let allowed = crate::sys::allowed_cpus();
    if let Some(l) = &load_cpus {
        crate::sys::pin_current_thread(l).context("pinning bakeoff to the load CPUs")?;
    }
    let ctx = Ctx {
        plan: &plan,
        dir: &dir,
        protos: &protos,
        contender_cpus: contender_cpus.or_else(|| Some(allowed.clone())),
        load_cpus: load_cpus.unwrap_or_default(),
        rt: &rt,
        here,
        shard,
        cancel: opts.cancel.clone(),
    };
    let done = |results: &Results, repetition: u32, ci: usize| {
        let name = &plan.contenders[ci].name;
        results
            .runs
            .iter()
            .any(|r| r.id.is(name) && r.id.repetition == repetition)
    };
    if plan.order == Order::Paired {
        for repetition in 1..=plan.repetitions {
            if shard.is_some_and(|s| !s.runs(repetition)) {
                continue;
            }
            if opts.cancel.is_cancelled() {
                break;
            }
            let (cis, earlier): (Vec<_>, Vec<_>) = schedule
                .iter()
                .filter(|&&(r, _)| r <= repetition)
                .partition(|&&(r, ci)| r == repetition && !done(&results, r, ci));
            let cis: Vec<usize> = cis.into_iter().map(|&(_, ci)| ci).collect();
            let mut step = earlier.len();
            if !cis.is_empty() {
                ctx.paired_repetition(
                    &cis,
                    repetition,
                    &mut results,
                    rep,
                    &mut step,
                    schedule.len(),
                )?;
            }
        }
    } else {
        for (step, &(repetition, ci)) in schedule.iter().enumerate() {
            if done(&results, repetition, ci) {
                continue;
            }
            if opts.cancel.is_cancelled() {
                break;
            }
            let name = &plan.contenders[ci].name;
            rep.contender_starting(name, repetition, step + 1, schedule.len());
            ctx.repetition(ci, repetition, &mut results, rep)?;
        }
    }
    let _ = crate::sys::pin_current_thread(&allowed);
    results.status = if opts.cancel.is_cancelled() {
        "interrupted"
    } else {
        "complete"
    }
    .into();
    results.finished_at = Some(results::now_utc());
    results.save(&dir).context("writing results.json")?;
    Ok(Finished { dir, results })
}

struct Ctx<'a> {
    plan: &'a Plan,
    dir: &'a Path,
    protos: &'a Descriptors,
    contender_cpus: Option<Vec<usize>>,
    load_cpus: Vec<usize>,
    rt: &'a tokio::runtime::Runtime,
    here: crate::results::env::Environment,
    shard: Option<results::Shard>,
    /// The command's cancellation (Ctrl-C): handed to every launch and load.
    cancel: crate::cancel::Cancel,
}

impl Ctx<'_> {
    /// The CPUs a point keeps busy: the contenders' and the load's when pinned, else all.
    /// Where the threads writing members' logs run: every CPU but the contenders' (not
    /// pinned when the contenders are not).
    fn log_cpus(&self) -> Option<Vec<usize>> {
        let contender = self.contender_cpus.as_ref()?;
        let rest: Vec<usize> = crate::sys::allowed_cpus()
            .into_iter()
            .filter(|c| !contender.contains(c))
            .collect();
        (!rest.is_empty()).then_some(rest)
    }

    fn busy_cpus(&self) -> Vec<usize> {
        if self.load_cpus.is_empty() {
            return Vec::new();
        }
        let mut cpus = self.load_cpus.clone();
        cpus.extend(self.contender_cpus.iter().flatten());
        cpus.sort_unstable();
        cpus.dedup();
        cpus
    }

    /// One contender, one repetition: start, time, serve every point, stop, measure.
    fn repetition(
        &self,
        ci: usize,
        repetition: u32,
        results: &mut Results,
        rep: &mut dyn Reporter,
    ) -> anyhow::Result<()> {
        let Some(mut live) = self.start(ci, repetition, None, results, rep)? else {
            return Ok(());
        };
        if live.serves(self.plan, results) {
            self.serve(&mut live, results, rep)?;
            self.confirm_stalls(&mut live, results, rep)?;
        }
        self.finish(live, results)
    }

    /// Starts a contender for a repetition and records its start-up (and, in repetition 1,
    /// its compat answers). `None` when it did not start at all (recorded as failed);
    /// otherwise the caller must [`Ctx::finish`] it, whether it became ready or not.
    fn start(
        &self,
        ci: usize,
        repetition: u32,
        block: Option<u32>,
        results: &mut Results,
        rep: &mut dyn Reporter,
    ) -> anyhow::Result<Option<Live>> {
        let c = &self.plan.contenders[ci];
        let prefix = format!("{}.r{repetition}", contender::slug(&c.name));
        let state = self.dir.join("state").join(&prefix);
        let _ = std::fs::remove_dir_all(&state);
        results.runs.push(Run {
            id: results::RunId {
                shard: self.shard.map(|s| s.k),
                variant: c.variant.as_ref().map(|v| v.what.clone()),
                ..results::RunId::new(c.variant.as_ref().map_or(&c.name, |v| &v.of), repetition)
            },
            status: "running".into(),
            error: None,
            started_at: results::now_utc(),
            startup: None,
            points: Vec::new(),
            usage: None,
            disk_end_bytes: None,
            exits: Vec::new(),
            logs: Vec::new(),
            compat: Vec::new(),
            environment: Some(self.here.clone()),
            block,
            tool: Some(results::tool()),
            what_if: None,
            confirmations: Vec::new(),
        });
        let idx = results.runs.len() - 1;
        let save = |results: &Results| results.save(self.dir).context("writing results.json");
        save(results)?;

        let launch = Launch {
            contender: c,
            state: state.clone(),
            logs: self.dir.join("logs"),
            log_prefix: prefix,
            cpus: self.contender_cpus.clone(),
            log_cpus: self.log_cpus(),
            log_limit: self.plan.log_limit,
            protos: self.protos,
            cancel: self.cancel.clone(),
        };
        let ticks0 = crate::sys::cpu_ticks();
        let mut running = match contender::start(&launch) {
            Ok(r) => r,
            Err(e) => {
                let run = &mut results.runs[idx];
                // A setup command cut short by Ctrl-C is redone on --resume, not a failure.
                run.status = if self.cancel.is_cancelled() {
                    "interrupted"
                } else {
                    "failed"
                }
                .into();
                run.error = Some(format!("did not start: {e}"));
                rep.contender_failed(&c.name, &e.to_string());
                let _ = std::fs::remove_dir_all(&state);
                save(results)?;
                return Ok(None);
            }
        };
        results.runs[idx].logs = running
            .logs
            .iter()
            .map(|l| l.strip_prefix(self.dir).unwrap_or(l).display().to_string())
            .collect();
        let mut endpoints = Vec::new();
        match running.wait_ready(self.rt) {
            Ok(s) => {
                let startup = results::Startup {
                    first_response_s: s.first_response.as_secs_f64(),
                    ready_s: s.ready.as_secs_f64(),
                    disk_after_start_bytes: contender::usage::disk_usage(&state),
                    steal: crate::sys::steal_share(
                        &ticks0,
                        &crate::sys::cpu_ticks(),
                        &self.busy_cpus(),
                    ),
                    // On the scheduler's clock (nanoseconds): a start-up of a few
                    // milliseconds is below the sampled ticks' 10 ms.
                    cpu_s: Some(running.cost().cpu_ns as f64 / 1e9),
                    first_response_resolution_s: Some(s.resolution.as_secs_f64()),
                    members: if s.members.len() > 1 {
                        s.members
                            .iter()
                            .map(|m| results::MemberStartup {
                                member: m.name.clone(),
                                started_s: m.started.as_secs_f64(),
                                first_response_s: m.first_response.as_secs_f64(),
                            })
                            .collect()
                    } else {
                        Vec::new()
                    },
                };
                rep.contender_ready(&c.name, &startup);
                results.runs[idx].startup = Some(startup.clone());
                save(results)?;
                // Parsed and resolved once; every client of this repetition uses them.
                match client::endpoints(&running.endpoints) {
                    Ok(eps) => {
                        if repetition == 1 && !self.plan.compat.is_empty() {
                            self.compat(&eps, &state, results, idx, rep)?;
                            self.member_references(&running, &state, results, rep)?;
                        }
                        endpoints = eps;
                    }
                    Err(e) => fail(&mut results.runs[idx], format!("{e:#}"), rep)?,
                }
            }
            Err((first, e)) => {
                let text = match first {
                    Some(f) => {
                        format!("answered after {f:.1?} but its ready condition failed: {e}")
                    }
                    None => format!("never became ready: {e}"),
                };
                let run = &mut results.runs[idx];
                run.status = if matches!(e, contender::ProbeError::Interrupted) {
                    "interrupted"
                } else {
                    "failed"
                }
                .into();
                run.error = Some(text.clone());
                rep.contender_failed(&c.name, &text);
            }
        }
        // A what-if variant: the option forced on its listening sockets once it is ready
        // (after its compat answers, before any load), then on each connection before load
        // is sent.
        let forcing = match &c.variant {
            Some(v) if v.what == "nodelay" && !endpoints.is_empty() => {
                let mut w = results::WhatIf::nodelay();
                whatif::count(Some(&mut w), &running.force_nodelay(false));
                if !w.took() {
                    let why = w.problems.join("; ");
                    rep.warning(&format!(
                        "{}: what-if nodelay: nothing forced: {why}",
                        c.name
                    ));
                }
                Some(w)
            }
            _ => None,
        };
        Ok(Some(Live {
            ci,
            idx,
            running,
            endpoints,
            state,
            leader: None,
            forcing,
        }))
    }

    /// Stops a started contender and records how it ended and what it cost.
    fn finish(&self, live: Live, results: &mut Results) -> anyhow::Result<()> {
        let (exits, usage, mut problems) = live.running.stop();
        let run = &mut results.runs[live.idx];
        if let Some(w) = live.forcing {
            problems.extend(w.problems.iter().map(|p| format!("what-if nodelay: {p}")));
            run.what_if = Some(w);
        }
        run.exits = exits;
        run.usage = Some(results::Usage {
            cpu_user_s: usage.cpu_user_s,
            cpu_system_s: usage.cpu_system_s,
            peak_rss_bytes: usage.peak_rss_bytes,
        });
        run.disk_end_bytes = Some(contender::usage::disk_usage(&live.state));
        if run.status == "running" {
            run.status = if self.cancel.is_cancelled() {
                "interrupted"
            } else {
                "complete"
            }
            .into();
        }
        let id = run.id.clone();
        for p in problems {
            results.warnings.push(format!("{id}: {p}"));
        }
        let _ = std::fs::remove_dir_all(&live.state);
        let _ = std::fs::remove_dir(self.dir.join("state")); // only when empty
        results.save(self.dir).context("writing results.json")
    }

    /// The compat references that are members of this running contender: each asked every
    /// case of its set, at that member, its answers kept as the reference's.
    fn member_references(
        &self,
        running: &Running,
        state: &std::path::Path,
        results: &mut Results,
        rep: &mut dyn Reporter,
    ) -> anyhow::Result<()> {
        for set in &self.plan.compat {
            let Some(r) = &set.reference else { continue };
            let Some((who, member)) = &r.member else {
                continue;
            };
            if *who != running.name || results.compat_reference.iter().any(|a| a.set == set.name) {
                continue;
            }
            let answers = match running.fill_for(member, &r.endpoint) {
                Ok(at) => (0..set.cases.len())
                    .map(|i| {
                        crate::compat::ask_reference_at(
                            set,
                            i,
                            &at,
                            Some(state),
                            self.protos,
                            COMPAT_TIMEOUT,
                            self.rt,
                        )
                    })
                    .collect(),
                Err(e) => {
                    let w = format!(
                        "compat `{}`: cannot ask the reference, member `{member}` of `{who}`: {e}",
                        set.name
                    );
                    rep.warning(&w);
                    results.warnings.push(w);
                    continue;
                }
            };
            setup::record_reference(
                set,
                &format!("member `{member}` of `{who}`"),
                answers,
                results,
                rep,
            );
            results.save(self.dir).context("writing results.json")?;
        }
        Ok(())
    }

    /// Every compat case against the contender's first member; answers kept in the run.
    fn compat(
        &self,
        endpoints: &[Endpoint],
        state: &std::path::Path,
        results: &mut Results,
        idx: usize,
        rep: &mut dyn Reporter,
    ) -> anyhow::Result<()> {
        for set in &self.plan.compat {
            if self.cancel.is_cancelled() {
                return Ok(());
            }
            let answers = crate::compat::run_set(
                set,
                &endpoints[0],
                Some(state),
                self.protos,
                COMPAT_TIMEOUT,
                self.rt,
            );
            match answers {
                Ok(a) => {
                    rep.compat_done(&set.name, a.len());
                    results.runs[idx].compat.extend(a);
                }
                Err(e) => {
                    rep.point_failed(
                        &results.runs[idx].id.subject(),
                        &set.name,
                        "compat setup",
                        &e,
                    );
                    results
                        .warnings
                        .push(format!("{}: {e}", results.runs[idx].id));
                }
            }
            results.save(self.dir).context("writing results.json")?;
        }
        Ok(())
    }

    /// Every scenario point against a running contender. Stops at the first sign that the
    /// contender died, recording where.
    fn serve(
        &self,
        live: &mut Live,
        results: &mut Results,
        rep: &mut dyn Reporter,
    ) -> anyhow::Result<()> {
        let name = self.plan.contenders[live.ci].name.clone();
        for s in &self.plan.scenarios {
            for p in &s.points {
                if self.cancel.is_cancelled() {
                    return Ok(());
                }
                if live.died("before", s, p, results, rep) {
                    return Ok(());
                }
                if p.spread() == Spread::All && live.endpoints.len() == 1 {
                    continue; // "all members" of a single process is "first"; not run twice.
                }
                rep.point_started(&name, &s.name, &p.label);
                for point in self.points_of(live, s, p, rep) {
                    report_point(rep, &name, s, p, &point);
                    results.runs[live.idx].points.push(point);
                }
                results.save(self.dir).context("writing results.json")?;
                if live.died("during", s, p, results, rep) {
                    return Ok(());
                }
            }
        }
        Ok(())
    }

    /// What a point records: one measured load, a capacity search, or a ramp's stages.
    fn points_of(
        &self,
        live: &mut Live,
        s: &Scenario,
        p: &Point,
        rep: &mut dyn Reporter,
    ) -> Vec<PointRun> {
        if s.capacity.is_some() {
            vec![self.capacity_point(live, s, p, rep)]
        } else if !s.stages.is_empty() {
            self.stage_points(live, s, p, rep)
        } else {
            vec![self.point(live, s, p, rep)]
        }
    }

    /// The leader (for a `target = "leader"` point) and the setup steps, before a point's
    /// load; the error is the point's.
    fn prepare_point(&self, live: &mut Live, s: &Scenario, p: &Point, out: &mut PointRun) -> bool {
        match live.find_leader(p, self.rt) {
            Ok(leader) => out.leader = leader,
            Err(e) => {
                out.error = Some(e);
                return false;
            }
        }
        if let Err(e) = self.setup_steps(live, s, p) {
            out.error = Some(e);
            return false;
        }
        true
    }

    fn point(&self, live: &mut Live, s: &Scenario, p: &Point, rep: &mut dyn Reporter) -> PointRun {
        let mut out = PointRun::new(results::point_id(s, p));
        if self.prepare_point(live, s, p, &mut out) {
            let recording = s.profile.then(|| self.start_profile(live, &out.id));
            self.load_once(live, s, p, Shape::of(s, p), &mut out, rep);
            out.profile = recording.map(|r| self.stop_profile(r));
        }
        out
    }

    /// One measured load of a point, shaped by `how`, recorded in `out`.
    fn load_once(
        &self,
        live: &mut Live,
        s: &Scenario,
        p: &Point,
        how: Shape,
        out: &mut PointRun,
        rep: &mut dyn Reporter,
    ) {
        let endpoints = live.targets(p);
        let built = s
            .tls
            .resolve(Some(&live.state))
            .map_err(anyhow::Error::msg)
            .and_then(|tls| {
                let opts = Options {
                    seed: self.plan.seed,
                    keep_body: false,
                    tls,
                };
                Client::build(&s.call.with_vars(&p.vars), endpoints, self.protos, opts)
            });
        let threads = self.load_cpus.len();
        let cfg = LoadConfig::new(
            how.pacing,
            how.stop,
            how.clients,
            threads,
            how.warmup,
            s.timeout,
        )
        .map(|c| {
            c.pin_to(self.load_cpus.clone())
                .cancelled_by(self.cancel.clone())
        });
        let (driver, cfg) = match (built, cfg) {
            (Ok(d), Ok(c)) => (d, c),
            (Err(e), _) => {
                out.error = Some(format!("{e:#}"));
                return;
            }
            (_, Err(e)) => {
                out.error = Some(e.to_string());
                return;
            }
        };
        let cpu0 = live.running.usage().cpu_s();
        let ticks0 = crate::sys::cpu_ticks();
        let measured = if live.forcing.is_some() {
            // What-if TCP_NODELAY: connect first, then set the option on the server's side
            // of every connection (for servers that clear it after accepting), then send.
            match driver.open(&cfg) {
                Ok(mut session) => {
                    let f = live.running.force_nodelay(true);
                    whatif::count(live.forcing.as_mut(), &f);
                    measure(&mut live.running, rep, |pr| {
                        session.run(how.stop, how.warmup, pr)
                    })
                }
                Err(e) => Measured {
                    load: Err(e),
                    cost: None,
                },
            }
        } else {
            measure(&mut live.running, rep, |pr| driver.run(&cfg, pr))
        };
        out.contender_cpu_s = Some((live.running.usage().cpu_s() - cpu0).max(0.0));
        out.steal = crate::sys::steal_share(&ticks0, &crate::sys::cpu_ticks(), &self.busy_cpus());
        out.cost = measured.cost;
        match measured.load {
            Ok(r) => out.load = Some(r),
            Err(e) => out.error = Some(e.to_string()),
        }
    }

    /// A scenario's setup steps against the point's first endpoint; every call must succeed.
    fn setup_steps(&self, live: &Live, s: &Scenario, p: &Point) -> Result<(), String> {
        let opts = Options {
            seed: self.plan.seed,
            keep_body: false,
            tls: s.tls.resolve(Some(&live.state))?,
        };
        for step in &s.setup {
            client::run_step(
                step,
                &p.vars,
                &live.targets(p)[0],
                self.protos,
                opts.clone(),
                s.timeout,
                &self.load_cpus,
            )
            .map_err(|e| format!("{e:#}"))?;
        }
        Ok(())
    }
}

/// Every check `run` makes before it starts anything (the plan itself, then the programs
/// and every client its scenarios need), for `bakeoff plan check`.
pub fn check_plan(path: &std::path::Path) -> anyhow::Result<Plan> {
    let plan = Plan::load(path)?;
    let protos = Descriptors::new(plan.protos.clone(), plan.includes.clone());
    preflight::check(&plan, &protos)?;
    Ok(plan)
}

/// A started contender of this repetition: its entry in the results, the running process
/// tree and its parsed endpoints (empty when it never became ready).
struct Live {
    ci: usize,
    idx: usize,
    running: Running,
    endpoints: Vec<Endpoint>,
    state: PathBuf,
    /// The member the `leader` probe found leading before the current point.
    leader: Option<usize>,
    /// Set while TCP_NODELAY is forced on it (a `+nodelay` variant, or confirming a stall):
    /// what forcing did so far.
    forcing: Option<results::WhatIf>,
}

impl Live {
    /// For a `target = "leader"` point: asks the contender's `leader` probe which member
    /// leads now (leadership can move between points) and returns its name.
    fn find_leader(
        &mut self,
        p: &Point,
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
    fn serves(&self, plan: &Plan, results: &Results) -> bool {
        plan.contenders[self.ci].noise_of.is_none()
            && results.runs[self.idx].status == "running"
            && !self.endpoints.is_empty()
    }

    /// The endpoints a point's load goes to.
    fn targets(&self, p: &Point) -> &[Endpoint] {
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
    fn died(
        &mut self,
        when: &str,
        s: &Scenario,
        p: &Point,
        results: &mut Results,
        rep: &mut dyn Reporter,
    ) -> bool {
        match self.running.exited() {
            Some(died) => {
                let error = format!("died {when} scenario `{}` [{}]: {died}", s.name, p.label);
                let _ = fail(&mut results.runs[self.idx], error, rep);
                true
            }
            None => false,
        }
    }
}

/// What one load run measured: the engine's result and the server's cost over exactly its
/// measured window.
struct Measured {
    load: Result<crate::load::LoadResult, crate::load::LoadError>,
    cost: Option<results::ServerCost>,
}

/// Runs load against a running contender (`run` is given the progress callback), reading
/// the contender's exact cost at the edges of the measured window, and stops sending as soon
/// as the contender is seen dead: the rest would only count refused connections.
fn measure(
    running: &mut Running,
    rep: &mut dyn Reporter,
    run: impl FnOnce(
        &mut dyn FnMut(crate::load::Progress) -> Flow,
    ) -> Result<crate::load::LoadResult, crate::load::LoadError>,
) -> Measured {
    let (mut opened, mut closed) = (None, None);
    let load = run(&mut |pr| {
        match pr.edge {
            Some(Edge::Opens) => opened = Some(running.cost()),
            Some(Edge::Closes) => closed = Some(running.cost()),
            None => {}
        }
        rep.load_progress(pr);
        if running.exited().is_some() {
            Flow::Stop
        } else {
            Flow::Continue
        }
    });
    let cost = opened.zip(closed).map(|(a, b)| {
        let spent = a.until(b);
        results::ServerCost {
            cpu_s: spent.cpu_ns as f64 / 1e9,
            voluntary_switches: spent.voluntary_switches,
            involuntary_switches: spent.involuntary_switches,
        }
    });
    Measured { load, cost }
}

fn report_point(rep: &mut dyn Reporter, who: &str, s: &Scenario, p: &Point, point: &PointRun) {
    match (&point.load, &point.error) {
        (Some(l), _) => rep.point_done(who, &s.name, &p.label, l, point.steal),
        (None, Some(e)) => rep.point_failed(who, &s.name, &p.label, e),
        (None, None) => {}
    }
}

fn fail(run: &mut Run, error: String, rep: &mut dyn Reporter) -> anyhow::Result<()> {
    rep.contender_failed(&run.id.subject(), &error);
    run.status = "failed".into();
    run.error = Some(error);
    Ok(())
}
