//! The order floor: a run's contenders in blocks — one contender at a time (sequential and
//! interleaved orders) or every contender of a repetition side by side (paired) — and the
//! one loop that serves a block, whatever the order: start each, serve every point, confirm
//! stall findings, stop each.

use super::ctx::Ctx;
use super::events::Reporter;
use super::live::Live;
use crate::plan::{Order, PointId};
use crate::results::Results;

/// Contenders that run together from start to stop: `(contender, step)` pairs, the step
/// counting from 1 over the whole schedule (for progress).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Block {
    pub(super) repetition: u32,
    pub(super) members: Vec<(usize, usize)>,
    /// Its contenders serve side by side in rounds (the paired order).
    pub(super) paired: bool,
    /// Only these points, each with the repetitions it is to reach (a repetition past the
    /// plan's, for points still inconclusive); `None`: every point, to the plan's.
    pub(super) only: Option<Vec<(PointId, u32)>>,
}

impl Block {
    /// The repetitions point `p`'s rounds aim their interval over in this block: the plan's
    /// (`planned`), or in a second stage as many as the point was found to want; `None`
    /// when the block does not serve it.
    pub(super) fn aim(&self, p: &PointId, planned: u32) -> Option<u32> {
        match &self.only {
            None => Some(planned),
            Some(only) => only.iter().find(|(q, _)| q == p).map(|&(_, n)| n),
        }
    }
}

/// The blocks of a run: `schedule` is (repetition, contender) in the order they run; `done`
/// says which a resumed run has already.
pub(super) fn blocks(
    order: Order,
    schedule: &[(u32, usize)],
    done: &dyn Fn(u32, usize) -> bool,
) -> Vec<Block> {
    if order != Order::Paired {
        return schedule
            .iter()
            .enumerate()
            .filter(|(_, &(r, ci))| !done(r, ci))
            .map(|(step, &(repetition, ci))| Block {
                repetition,
                members: vec![(ci, step + 1)],
                paired: false,
                only: None,
            })
            .collect();
    }
    let mut repetitions: Vec<u32> = schedule.iter().map(|&(r, _)| r).collect();
    repetitions.dedup();
    repetitions
        .into_iter()
        .filter_map(|repetition| {
            let (todo, earlier): (Vec<_>, Vec<_>) = schedule
                .iter()
                .filter(|&&(r, _)| r <= repetition)
                .partition(|&&(r, ci)| r == repetition && !done(r, ci));
            let members: Vec<(usize, usize)> = todo
                .iter()
                .enumerate()
                .map(|(j, &&(_, ci))| (ci, earlier.len() + j + 1))
                .collect();
            (!members.is_empty()).then_some(Block {
                repetition,
                members,
                paired: true,
                only: None,
            })
        })
        .collect()
}

/// Serves every block in turn until the run is cancelled.
pub(super) fn serve_all(
    ctx: &Ctx,
    blocks: &[Block],
    steps: usize,
    results: &mut Results,
    rep: &mut dyn Reporter,
) -> anyhow::Result<()> {
    let paired = blocks.iter().filter(|b| b.paired).count();
    if paired > 0 {
        rep.paired_points(paired * paired_points(ctx));
    }
    for b in blocks {
        if ctx.cancel.is_cancelled() {
            break;
        }
        serve_block(ctx, b, steps, results, rep)?;
    }
    Ok(())
}

/// The points a paired block serves in rounds: capacity searches and ramps follow each
/// contender alone.
pub(super) fn paired_points(ctx: &Ctx) -> usize {
    ctx.plan
        .scenarios
        .iter()
        .filter(|s| s.is_steady())
        .map(|s| s.points.len())
        .sum()
}

/// One block: its contenders started one at a time (start-up is only timed cleanly alone),
/// every point served, stall findings confirmed, then each stopped.
pub(super) fn serve_block(
    ctx: &Ctx,
    b: &Block,
    steps: usize,
    results: &mut Results,
    rep: &mut dyn Reporter,
) -> anyhow::Result<()> {
    // Paired blocks are numbered so merged shards keep each machine's blocks apart.
    let number = b.paired.then(|| {
        results
            .runs
            .iter()
            .filter_map(|r| r.block)
            .max()
            .unwrap_or(0)
            + 1
    });
    let mut lives: Vec<Live> = Vec::new();
    for &(ci, step) in &b.members {
        if ctx.cancel.is_cancelled() {
            break;
        }
        rep.contender_starting(&ctx.plan.contenders[ci].name, b.repetition, step, steps);
        let Some(live) = super::startup::start(ctx, ci, b.repetition, number, results, rep)? else {
            continue;
        };
        // A noise instance only answers compat; it does not stay up while others serve.
        if live.serves(ctx.plan, results) {
            lives.push(live);
        } else {
            live.finish(ctx, results)?;
        }
    }
    let served = serve_points(ctx, &mut lives, b, results, rep);
    // Confirming a stall forces an option on that contender for good: last, one contender
    // at a time, after every point of the block.
    for live in &mut lives {
        if served.is_ok() && live.serves(ctx.plan, results) {
            super::whatif::confirm_stalls(ctx, live, results, rep)?;
        }
    }
    for live in lives {
        live.finish(ctx, results)?;
    }
    served
}

fn serve_points(
    ctx: &Ctx,
    lives: &mut [Live],
    b: &Block,
    results: &mut Results,
    rep: &mut dyn Reporter,
) -> anyhow::Result<()> {
    for s in &ctx.plan.scenarios {
        for p in &s.points {
            if ctx.cancel.is_cancelled() || lives.is_empty() {
                return Ok(());
            }
            let Some(aim) = b.aim(p, ctx.plan.repetitions) else {
                continue;
            };
            let at = super::point::At {
                repetition: b.repetition,
                aim,
            };
            super::point::serve(ctx, lives, b.paired, at, s, p, results, rep)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCHEDULE: [(u32, usize); 6] = [(1, 0), (1, 1), (1, 2), (2, 0), (2, 1), (3, 0)];

    #[test]
    fn one_contender_a_block_in_the_other_orders() {
        let b = blocks(Order::Interleaved, &SCHEDULE, &|r, ci| r == 1 && ci == 1);
        let members: Vec<_> = b
            .iter()
            .map(|b| (b.repetition, b.members.clone()))
            .collect();
        assert_eq!(
            members,
            [
                (1, vec![(0, 1)]),
                (1, vec![(2, 3)]),
                (2, vec![(0, 4)]),
                (2, vec![(1, 5)]),
                (3, vec![(0, 6)])
            ]
        );
        assert!(b.iter().all(|b| !b.paired));
    }

    #[test]
    fn a_repetition_a_block_in_the_paired_order() {
        // Resumed: contender 0 of repetition 2 was done, repetition 1 entirely.
        let done = |r: u32, ci: usize| r == 1 || (r == 2 && ci == 0);
        let b = blocks(Order::Paired, &SCHEDULE, &done);
        assert_eq!(
            b,
            [
                Block {
                    repetition: 2,
                    members: vec![(1, 5)],
                    paired: true,
                    only: None
                },
                Block {
                    repetition: 3,
                    members: vec![(0, 6)],
                    paired: true,
                    only: None
                }
            ]
        );
        let all = blocks(Order::Paired, &SCHEDULE, &|_, _| false);
        assert_eq!(all[0].members, [(0, 1), (1, 2), (2, 3)]);
    }

    #[test]
    fn a_second_stage_block_aims_each_point_at_the_repetitions_it_wants() {
        let point = PointId::at;
        let mut b = blocks(Order::Paired, &SCHEDULE, &|_, _| false).remove(0);
        // The plan's repetitions: every point, aimed at the plan's count.
        assert_eq!(b.aim(&point(1), 3), Some(3));
        // Repetition 4 of a second stage: a point wanting 8 aims at 8, not at 4 or 3; a
        // point not named is not served.
        b.repetition = 4;
        b.only = Some(vec![(point(1), 8), (point(4), 5)]);
        assert_eq!(b.aim(&point(1), 3), Some(8));
        assert_eq!(b.aim(&point(4), 3), Some(5));
        assert_eq!(b.aim(&point(2), 3), None);
    }
}
