//! One measured load of a started contender: what a point needs before its load (the
//! leader, the setup steps), the load itself with the server's exact cost over its measured
//! window, and the contender serving a point in paired rounds ([`Serve`], the real side of
//! the seam).

use std::time::Duration;

use super::ctx::{Ctx, Shape};
use super::events::Reporter;
use super::live::Live;
use super::profiles;
use super::seam::{Serving, Sliced};
use crate::contender::Running;
use crate::load::{Edge, Flow, LoadError, LoadResult, Progress, Runs, Stop};
use crate::plan::{PointId, Scenario};
use crate::results::{self, PointRun, ProfileRun, ServerCost};

/// What one load run measured: the engine's result and the server's cost over exactly its
/// measured window.
pub(super) struct Measured {
    pub(super) load: Result<LoadResult, LoadError>,
    pub(super) cost: Option<ServerCost>,
}

/// Runs load against a running contender (`run` is given the progress callback), reading
/// the contender's exact cost at the edges of the measured window — and, when its CPUs are
/// `pinned` apart from the load, what the machine ran on them — and stops sending as soon
/// as the contender is seen dead: the rest would only count refused connections.
pub(super) fn measure(
    running: &mut Running,
    pinned: &[usize],
    rep: &mut dyn Reporter,
    run: impl FnOnce(&mut dyn FnMut(Progress) -> Flow) -> Result<LoadResult, LoadError>,
) -> Measured {
    let (mut opened, mut closed) = (None, None);
    let ticks = || (!pinned.is_empty()).then(crate::sys::cpu_ticks);
    let load = run(&mut |pr| {
        match pr.edge {
            Some(Edge::Opens) => opened = Some((running.cost(), ticks())),
            Some(Edge::Closes) => closed = Some((running.cost(), ticks())),
            None => {}
        }
        rep.load_progress(pr);
        if running.exited().is_some() {
            Flow::Stop
        } else {
            Flow::Continue
        }
    });
    let cost = opened.zip(closed).map(|((a, ta), (b, tb))| {
        let spent = a.until(b);
        let cpu_s = spent.cpu_ns as f64 / 1e9;
        let busy = ta
            .zip(tb)
            .and_then(|(ta, tb)| crate::sys::busy_seconds(&ta, &tb, pinned));
        ServerCost {
            cpu_s,
            voluntary_switches: spent.voluntary_switches,
            involuntary_switches: spent.involuntary_switches,
            wait_s: spent.wait_ns as f64 / 1e9,
            others_s: busy.map(|b| (b - cpu_s).max(0.0)),
        }
    });
    Measured { load, cost }
}

/// The leader (for a `target = "leader"` point) and the setup steps, before a point's
/// load; the error is the point's.
pub(super) fn prepare_point(
    ctx: &Ctx,
    live: &mut Live,
    s: &Scenario,
    p: &PointId,
    out: &mut PointRun,
) -> bool {
    match live.find_leader(p, ctx.rt) {
        Ok(leader) => out.leader = leader,
        Err(e) => {
            out.error = Some(e);
            return false;
        }
    }
    if let Err(e) = setup_steps(ctx, live, s, p) {
        out.error = Some(e);
        return false;
    }
    true
}

/// A scenario's setup steps against the point's first endpoint; every call must succeed.
fn setup_steps(ctx: &Ctx, live: &Live, s: &Scenario, p: &PointId) -> Result<(), String> {
    let opts = ctx.options(s, &live.state)?;
    for step in &s.setup {
        crate::client::run_step(
            step,
            &p.vars.0,
            &live.targets(p)[0],
            ctx.protos,
            opts.clone(),
            s.timeout,
            &ctx.load_cpus,
        )
        .map_err(|e| format!("{e:#}"))?;
    }
    Ok(())
}

/// One measured load of a point, shaped by `how`, recorded in `out`.
pub(super) fn load_once(
    ctx: &Ctx,
    live: &mut Live,
    s: &Scenario,
    p: &PointId,
    how: Shape,
    out: &mut PointRun,
    rep: &mut dyn Reporter,
) {
    let built = ctx
        .client(s, p, live.targets(p), &live.state)
        .and_then(|c| Ok((c, ctx.config(s, how)?)));
    let (driver, cfg) = match built {
        Ok(b) => b,
        Err(e) => {
            out.error = Some(e);
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
                live.running
                    .wait_accepted(cfg.clients(), Duration::from_secs(2));
                let f = live.running.force_nodelay(true);
                super::live::count_forced(live.forcing.as_mut(), &f);
                measure(&mut live.running, ctx.pinned_apart(), rep, |pr| {
                    session.run(how.stop, how.warmup, pr)
                })
            }
            Err(e) => Measured {
                load: Err(e),
                cost: None,
            },
        }
    } else {
        measure(&mut live.running, ctx.pinned_apart(), rep, |pr| {
            driver.run(&cfg, pr)
        })
    };
    out.contender_cpu_s = Some((live.running.usage().cpu_s() - cpu0).max(0.0));
    out.steal = crate::sys::steal_share(&ticks0, &crate::sys::cpu_ticks(), &ctx.busy_cpus());
    out.cost = measured.cost;
    match measured.load {
        Ok(r) => out.load = Some(r),
        Err(e) => out.error = Some(e.to_string()),
    }
}

/// A plain point measured whole (no rounds), with its profile when the scenario asks.
pub(super) fn whole(
    ctx: &Ctx,
    live: &mut Live,
    s: &Scenario,
    p: &PointId,
    rep: &mut dyn Reporter,
) -> PointRun {
    let mut out = PointRun::new(p.clone());
    if prepare_point(ctx, live, s, p, &mut out) {
        let recording = s.profile.then(|| profiles::start(ctx, live, &out.id));
        load_once(ctx, live, s, p, Shape::of(s, p), &mut out, rep);
        out.profile = recording.map(|r| profiles::stop(ctx, r));
    }
    out
}

/// A contender serving one point in paired rounds: its setup done, its clients connected
/// (kept open for every slice) and warmed up, its profile recording over the rounds.
pub(super) struct Serve<'c, 'l> {
    ctx: &'c Ctx<'c>,
    live: &'l mut Live,
    session: Option<Box<dyn Runs>>,
    leader: Option<String>,
    error: Option<String>,
    /// Whether the scenario is profiled, and the recording once it started.
    profiled: Option<results::PointId>,
    recording: Option<profiles::Started>,
}

impl<'c, 'l> Serve<'c, 'l> {
    /// Prepares `live` for point `p` and opens its session; what fails is kept as the
    /// reason it sits the rounds out.
    pub(super) fn open(
        ctx: &'c Ctx<'c>,
        live: &'l mut Live,
        s: &Scenario,
        p: &PointId,
        slice_stop: Stop,
        id: &results::PointId,
        rep: &mut dyn Reporter,
    ) -> Serve<'c, 'l> {
        let mut out = PointRun::new(id.clone());
        let session = if prepare_point(ctx, live, s, p, &mut out) {
            connect(ctx, live, s, p, slice_stop, rep).map_err(|e| out.error = Some(e))
        } else {
            Err(())
        };
        Serve {
            ctx,
            live,
            session: session.ok(),
            leader: out.leader,
            error: out.error,
            profiled: s.profile.then(|| id.clone()),
            recording: None,
        }
    }
}

/// Its clients connected (with the what-if forcing on their connections) and warmed up.
fn connect(
    ctx: &Ctx,
    live: &mut Live,
    s: &Scenario,
    p: &PointId,
    slice_stop: Stop,
    rep: &mut dyn Reporter,
) -> Result<Box<dyn Runs>, String> {
    let how = Shape {
        stop: slice_stop,
        warmup: Duration::ZERO,
        ..Shape::of(s, p)
    };
    let cfg = ctx.config(s, how)?;
    let mut session = ctx
        .client(s, p, live.targets(p), &live.state)?
        .open(&cfg)
        .map_err(|e| e.to_string())?;
    if live.forcing.is_some() {
        live.running
            .wait_accepted(cfg.clients(), Duration::from_secs(2));
        let f = live.running.force_nodelay(true);
        super::live::count_forced(live.forcing.as_mut(), &f);
    }
    if !s.warmup.is_zero() {
        let warm = Stop::Duration(s.warmup);
        measure(&mut live.running, &[], rep, |pr| {
            session.run(warm, Duration::ZERO, pr)
        })
        .load
        .map_err(|e| e.to_string())?;
    }
    Ok(session)
}

impl Serving for Serve<'_, '_> {
    fn failed(&self) -> Option<&str> {
        match &self.session {
            Some(_) => None,
            None => Some(self.error.as_deref().unwrap_or("not connected")),
        }
    }

    fn leader(&self) -> Option<String> {
        self.leader.clone()
    }

    fn slice(&mut self, stop: Stop, rep: &mut dyn Reporter) -> Sliced {
        let Some(session) = self.session.as_mut() else {
            return Sliced {
                load: Err("not connected".into()),
                cost: None,
                steal: None,
            };
        };
        let ticks0 = crate::sys::cpu_ticks();
        let m = measure(&mut self.live.running, self.ctx.pinned_apart(), rep, |pr| {
            session.run(stop, Duration::ZERO, pr)
        });
        let steal =
            crate::sys::stolen_ticks(&ticks0, &crate::sys::cpu_ticks(), &self.ctx.busy_cpus());
        Sliced {
            load: m.load.map_err(|e| e.to_string()),
            cost: m.cost,
            steal,
        }
    }

    fn cpu_s(&mut self) -> f64 {
        self.live.running.usage().cpu_s()
    }

    fn exited(&mut self) -> bool {
        self.live.running.exited().is_some()
    }

    /// Each contender's profile spans all the rounds: perf follows its own threads, so it
    /// records what they did in that contender's slices.
    fn start_profile(&mut self) {
        if let Some(id) = &self.profiled {
            self.recording = Some(profiles::start(self.ctx, self.live, id));
        }
    }

    fn stop_profile(&mut self) -> Option<ProfileRun> {
        self.recording.take().map(|r| profiles::stop(self.ctx, r))
    }
}

/// Says how a point went.
pub(super) fn report_point(
    rep: &mut dyn Reporter,
    who: &str,
    s: &Scenario,
    p: &PointId,
    point: &PointRun,
) {
    match (&point.load, &point.error) {
        (Some(l), _) => rep.point_done(who, &s.name, &p.label(), l, point.steal),
        (None, Some(e)) => rep.point_failed(who, &s.name, &p.label(), e),
        (None, None) => {}
    }
}
