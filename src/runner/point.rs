//! The point floor: one plan point for every started contender of a block that serves it —
//! measured whole, one contender at a time (sequential and interleaved orders; capacity
//! searches and ramps, which follow each contender's own answers), or in paired rounds.

use super::ctx::Ctx;
use super::events::Reporter;
use super::live::{save, Live};
use super::measure::{report_point, whole, Serve};
use super::ramps::{capacity_point, stage_points};
use super::rounds::{self, Course};
use super::seam::Serving;
use crate::plan::{PointId, Scenario};
use crate::results::{PointRun, Results};

/// Which repetition a point is served in, and how many repetitions its paired rounds aim
/// their interval over: the plan's, or in a second stage as many as the point wants
/// (`max_repetitions`), so each of them stops as soon as that many will settle it.
#[derive(Debug, Clone, Copy)]
pub(super) struct At {
    pub(super) repetition: u32,
    pub(super) aim: u32,
}

/// Serves point `p` of scenario `s` with every contender in `lives` that serves it; in rounds
/// when `paired`. Records what each measured and whether it died meanwhile.
#[allow(clippy::too_many_arguments)]
pub(super) fn serve(
    ctx: &Ctx,
    lives: &mut [Live],
    paired: bool,
    at: At,
    s: &Scenario,
    p: &PointId,
    results: &mut Results,
    rep: &mut dyn Reporter,
) -> anyhow::Result<()> {
    let mut active = Vec::new();
    for (i, l) in lives.iter_mut().enumerate() {
        if l.serves_point(ctx.plan, results, p) && !l.died("before", s, p, results, rep) {
            active.push(i);
        }
    }
    for &i in &active {
        rep.point_started(lives[i].name(ctx.plan), &s.name, &p.label());
    }
    if !paired || !s.is_steady() {
        for &i in &active {
            let points = points_of(ctx, &mut lives[i], s, p, rep);
            for point in &points {
                report_point(rep, lives[i].name(ctx.plan), s, p, point);
            }
            lives[i].record_points(ctx.dir, points, results)?;
            lives[i].died("during", s, p, results, rep);
        }
        return Ok(());
    }
    if active.is_empty() {
        return Ok(());
    }
    let points = in_rounds(ctx, lives, &active, at, s, p, rep);
    for (&i, point) in active.iter().zip(points) {
        report_point(rep, lives[i].name(ctx.plan), s, p, &point);
        lives[i].add_points(vec![point], results);
    }
    save(ctx.dir, results)?;
    for &i in &active {
        lives[i].died("during", s, p, results, rep);
    }
    Ok(())
}

/// What a point records for one contender: one measured load, a capacity search, or a
/// ramp's stages.
fn points_of(
    ctx: &Ctx,
    live: &mut Live,
    s: &Scenario,
    p: &PointId,
    rep: &mut dyn Reporter,
) -> Vec<PointRun> {
    if s.capacity.is_some() {
        vec![capacity_point(ctx, live, s, p, rep)]
    } else if !s.stages.is_empty() {
        stage_points(ctx, live, s, p, rep)
    } else {
        vec![whole(ctx, live, s, p, rep)]
    }
}

/// The point in paired rounds for the contenders `active` (indices into `lives`): each
/// prepared and connected first; a `PointRun` per contender, in the order of `active`.
fn in_rounds(
    ctx: &Ctx,
    lives: &mut [Live],
    active: &[usize],
    at: At,
    s: &Scenario,
    p: &PointId,
    rep: &mut dyn Reporter,
) -> Vec<PointRun> {
    let paired = &ctx.plan.paired;
    let course = Course::of(s.stop, paired, at.repetition, at.aim.max(at.repetition));
    let names: Vec<&str> = active.iter().map(|&i| lives[i].name(ctx.plan)).collect();
    let baselines: Vec<(usize, usize)> = (0..names.len())
        .filter_map(|k| {
            let base = ctx.plan.baseline_of(names[k])?;
            Some((k, names.iter().position(|n| *n == base)?))
        })
        .collect();
    let id = p.clone();
    let mut serving: Vec<Serve> = lives
        .iter_mut()
        .enumerate()
        .filter(|(i, _)| active.contains(i))
        .map(|(_, l)| Serve::open(ctx, l, s, p, course.stop, &id, rep))
        .collect();
    let mut subjects: Vec<&mut dyn Serving> =
        serving.iter_mut().map(|x| x as &mut dyn Serving).collect();
    rep.rounds_started(&s.name, &p.label(), course.max);
    let done = rounds::run(&mut subjects, course, &baselines, &id, &ctx.cancel, rep);
    rep.rounds_done(&s.name, &p.label(), done.rounds, done.reached);
    done.points
}
