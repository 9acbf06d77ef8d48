//! What-if TCP_NODELAY in a run (docs/what-if.md): a point whose calls sat in the ~40 ms
//! band is measured again at the end of the repetition with the option forced on the
//! contender's sockets from outside, which turns "looks like Nagle" into confirmed or not.

use super::ctx::{Ctx, Shape};
use super::events::Reporter;
use super::live::Live;
use super::measure::{load_once, prepare_point, report_point};
use crate::load::stall::{band_gone, stall_band};
use crate::results::{Confirmation, Forcing, PointId, PointRun, Results};

/// After a contender's points in a repetition: each point whose calls sat in the stall
/// band (and that no earlier repetition of it confirmed) is measured again, alone, with
/// TCP_NODELAY forced on the contender's listening sockets and, once connected, on its
/// side of every connection. The band gone: confirmed; the band still there: not
/// confirmed (something else holds the answers); nothing forced: said why.
pub(super) fn confirm_stalls(
    ctx: &Ctx,
    live: &mut Live,
    results: &mut Results,
    rep: &mut dyn Reporter,
) -> anyhow::Result<()> {
    if !ctx.plan.confirm || live.forcing.is_some() {
        return Ok(()); // a +nodelay variant has the option on already
    }
    let run = &results.runs[live.idx];
    let confirmed_before = |id: &PointId| {
        results.runs[..live.idx].iter().any(|r| {
            r.id.contender == run.id.contender
                    && r.id.variant == run.id.variant // the same contender, as run
                    && r.confirmations.iter().any(|c| c.point == *id)
        })
    };
    let flagged: Vec<PointId> = run
        .points
        .iter()
        .filter(|p| {
            p.capacity.is_none()
                && p.id.stage.is_none()
                && p.load
                    .as_ref()
                    .is_some_and(|l| !l.mostly_failed() && stall_band(l).is_some())
        })
        .map(|p| p.id.clone())
        .filter(|id| !confirmed_before(id))
        .collect();
    if flagged.is_empty() {
        return Ok(());
    }
    let name = format!("{} (TCP_NODELAY forced)", run.id.subject());
    let listeners = live.running.force_nodelay(false);
    let mut first = Forcing::nodelay();
    super::live::count_forced(Some(&mut first), &listeners);
    for id in flagged {
        let Some((s, p)) = ctx.plan.scenarios.iter().find_map(|s| {
            let p = s.points.iter().find(|p| **p == id)?;
            Some((s, p))
        }) else {
            continue;
        };
        rep.point_started(&name, &s.name, &p.label());
        let mut out = PointRun::new(id.clone());
        live.forcing = Some(first.clone());
        if prepare_point(ctx, live, s, p, &mut out) {
            load_once(ctx, live, s, p, Shape::of(s, p), &mut out, rep);
        }
        // The listeners were set once, before the first of these points; each records them.
        let forced = live.forcing.take().unwrap_or_default();
        // Too few answered calls (a Ctrl-C, a failing server) confirm nothing.
        let confirmed = match band_gone(out.load.as_ref()) {
            _ if !forced.took() => None,
            Ok(gone) => Some(gone),
            Err(why) => {
                out.error.get_or_insert(why);
                None
            }
        };
        report_point(rep, &name, s, p, &out);
        let c = Confirmation {
            point: id,
            forced,
            load: out.load,
            error: out.error,
            confirmed,
        };
        live.record_confirmation(ctx.dir, c, results)?;
    }
    Ok(())
}
