//! A paired run's second stage (docs/verdicts.md, "The budget" and "More repetitions"):
//! after the plan's repetitions, further repetitions — every contender that serves, started
//! afresh, side by side — at the points whose verdicts are still inconclusive, as many as
//! the spread seen says would settle each, within what the budget has left.

use std::time::{Duration, Instant};

use super::ctx::Ctx;
use super::events::Reporter;
use super::options::Judge;
use super::order::{paired_points, serve_block, Block};
use crate::plan::PointId;
use crate::results::{BudgetSpent, Results};

/// The most repetitions a point may get in all, `max_repetitions` or not (the plan's
/// limit for it).
const MOST: u32 = 1000;

/// What bounds the second stage.
pub(super) struct More {
    /// `paired.max_repetitions`: the most repetitions in all.
    pub(super) max: Option<u32>,
    /// The budget: the most the run may spend measuring, the plan's repetitions included.
    pub(super) budget: Option<Duration>,
}

impl More {
    /// Whether there is a second stage at all.
    pub(super) fn wanted(&self) -> bool {
        self.max.is_some() || self.budget.is_some()
    }
}

/// The points wanting repetitions past the plan's, each with how many in all.
type Wanted = Vec<(PointId, u32)>;

/// The second stage. `unsettled` reads the plan's repetitions (never the further ones, so
/// a resumed run plans the same) and names the points still inconclusive, each with the
/// repetitions it should have in all; with a budget, the most any point may get is the
/// largest count whose repetitions fit in what the budget has left. Then one further
/// repetition at a time, of the points that want it, without reading the verdicts again in
/// between — none started that would not fit in what is left. `schedule` is the planned
/// one: its contenders, and the steps counted so far. `results.budget` says what was
/// bought.
pub(super) fn serve_more(
    ctx: &Ctx,
    schedule: &[(u32, usize)],
    more: &More,
    unsettled: &Judge,
    results: &mut Results,
    rep: &mut dyn Reporter,
) -> anyhow::Result<()> {
    let started = Instant::now();
    let mut contenders: Vec<usize> = Vec::new();
    for &(_, ci) in schedule {
        if ctx.plan.contenders[ci].noise_of.is_none() && !contenders.contains(&ci) {
            contenders.push(ci);
        }
    }
    let mut spent = results.budget.clone().unwrap_or(BudgetSpent {
        budget_s: None,
        first_s: 0.0,
        more_s: 0.0,
        more_repetitions: 0,
        points: 0,
        left: 0,
    });
    spent.budget_s = more.budget.map(|b| b.as_secs_f64());
    let price = Price {
        per_repetition: spent.first_s / f64::from(results.repetitions.max(1)),
        points: paired_points(ctx),
        planned: results.repetitions,
    };
    let cap = more.max.unwrap_or(MOST);
    let plan_of = |max: u32| -> Wanted {
        unsettled(results, max)
            .into_iter()
            .map(|(p, n)| (p, n.min(max)))
            .collect()
    };
    let reachable = plan_of(cap);
    // With a budget, each point's count is cut at the most the budget can buy them all.
    let wanted = match more.budget {
        None => reachable.clone(),
        Some(b) => {
            let most = price.most_within(b.as_secs_f64() - spent.first_s, &reachable);
            cut(&reachable, most)
        }
    };
    let last = wanted.iter().map(|(_, n)| *n).max().unwrap_or(0);
    // A resumed run goes on from the last repetition it has.
    let from = results
        .runs
        .iter()
        .map(|r| r.id.repetition)
        .max()
        .unwrap_or(0)
        + 1;
    let mut steps = schedule.len();
    let mut total =
        paired_points(ctx) * schedule.iter().map(|&(r, _)| r).max().unwrap_or(0) as usize;
    let earlier_s = spent.more_s;
    let mut reached = results.repetitions.max(from - 1);
    for repetition in from..=last {
        if ctx.cancel.is_cancelled() || contenders.is_empty() {
            break;
        }
        let only: Wanted = wanted
            .iter()
            .filter(|(_, n)| *n >= repetition)
            .cloned()
            .collect();
        let so_far = spent.first_s + earlier_s + started.elapsed().as_secs_f64();
        if more
            .budget
            .is_some_and(|b| so_far + price.of(only.len()) > b.as_secs_f64())
        {
            break;
        }
        let labels: Vec<String> = only
            .iter()
            .map(|(p, _)| format!("{} [{}]", p.scenario, p.label()))
            .collect();
        rep.more_repetitions(repetition, &labels);
        total += only.len();
        rep.paired_points(total);
        let members = contenders
            .iter()
            .enumerate()
            .map(|(k, &ci)| (ci, steps + k + 1))
            .collect();
        steps += contenders.len();
        let b = Block {
            repetition,
            members,
            paired: true,
            only: Some(only),
        };
        results.budget = Some(spent.clone());
        serve_block(ctx, &b, steps, results, rep)?;
        reached = repetition;
        spent.more_s = earlier_s + started.elapsed().as_secs_f64();
        spent.more_repetitions = reached - results.repetitions;
    }
    spent.more_s = earlier_s + started.elapsed().as_secs_f64();
    spent.points = wanted
        .iter()
        .filter(|(_, n)| *n > results.repetitions)
        .count() as u32;
    // What more repetitions could have settled and the run did not reach.
    spent.left = reachable.iter().filter(|(_, n)| *n > reached).count() as u32;
    results.budget = Some(spent);
    Ok(())
}

/// What further repetitions cost, priced by the plan's: a repetition of `k` points costs
/// `(1 + k) / (1 + points)` of one of the plan's, its start-ups and compat weighing about a
/// point.
struct Price {
    per_repetition: f64,
    points: usize,
    planned: u32,
}

impl Price {
    fn of(&self, k: usize) -> f64 {
        self.per_repetition * (1 + k) as f64 / (1 + self.points) as f64
    }

    /// What the repetitions `wanted` asks for past the plan's cost.
    fn total(&self, wanted: &Wanted) -> f64 {
        let last = wanted.iter().map(|(_, n)| *n).max().unwrap_or(0);
        (self.planned + 1..=last)
            .map(|r| self.of(wanted.iter().filter(|(_, n)| *n >= r).count()))
            .sum()
    }

    /// The largest count (from the plan's, which buys nothing, to the most any point
    /// wants) that every point of `wanted` can be given, cut there, for `left` seconds or
    /// less: a binary search, the cost growing with the count.
    fn most_within(&self, left: f64, wanted: &Wanted) -> u32 {
        let top = wanted.iter().map(|(_, n)| *n).max().unwrap_or(0);
        let (mut lo, mut hi) = (self.planned, top.max(self.planned));
        while lo < hi {
            let mid = lo + (hi - lo).div_ceil(2);
            if self.total(&cut(wanted, mid)) <= left {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        lo
    }
}

/// Each point's count, at most `most`.
fn cut(wanted: &Wanted, most: u32) -> Wanted {
    wanted
        .iter()
        .map(|(p, n)| (p.clone(), (*n).min(most)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(n: &str) -> PointId {
        PointId {
            scenario: n.into(),
            ..PointId::at(1)
        }
    }

    #[test]
    fn a_budget_buys_the_most_repetitions_whose_cost_fits() {
        // Plan of 3 repetitions, 3 points, 30 s a repetition: a point-repetition costs
        // 30 × 2/4 = 15 s, two at once 30 × 3/4 = 22.5 s.
        let price = Price {
            per_repetition: 30.0,
            points: 3,
            planned: 3,
        };
        // Point a wants 9 repetitions in all, b 20.
        let wanted = vec![(point("a"), 9), (point("b"), 20)];
        assert_eq!(
            price.total(&cut(&wanted, 3)),
            0.0,
            "the plan's repetitions cost nothing more"
        );
        // To 4: one repetition of both, 22.5 s.
        assert_eq!(price.most_within(22.5, &wanted), 4);
        assert_eq!(price.most_within(22.4, &wanted), 3);
        // To 9: six of both (135 s); to 10, one more of b alone (15 s).
        assert_eq!(price.most_within(135.0, &wanted), 9);
        assert_eq!(price.most_within(150.0, &wanted), 10);
        // Never past what the points want, nor below the plan's.
        assert_eq!(price.most_within(1e9, &wanted), 20);
        assert_eq!(price.most_within(-5.0, &wanted), 3);
        assert_eq!(cut(&wanted, 10), vec![(point("a"), 9), (point("b"), 10)]);
    }
}
