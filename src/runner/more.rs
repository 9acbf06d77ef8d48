//! A paired run's second stage (docs/verdicts.md, "The budget" and "More repetitions"):
//! after the plan's repetitions, further repetitions — every contender that serves, started
//! afresh, side by side — at the points whose verdicts are still inconclusive, as many as
//! the spread seen says would settle each, within what the budget has left.

use std::time::{Duration, Instant};

use super::ctx::Ctx;
use super::events::Reporter;
use super::options::{RunOptions, Unsettled};
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

/// After the plan's repetitions (which took `first_s`), the second stage where the run has
/// one: a paired plan with a budget or `max_repetitions`, on one machine (each machine of a
/// sharded run would number its own repetitions: the merge would hold two repetition 4s),
/// not interrupted.
pub(super) fn second_stage(
    ctx: &Ctx,
    schedule: &[(u32, usize)],
    opts: &RunOptions,
    first_s: f64,
    results: &mut Results,
    rep: &mut dyn Reporter,
) -> anyhow::Result<()> {
    let more = More {
        max: ctx.plan.paired.max_repetitions,
        budget: ctx.plan.budget,
    };
    let Some(judge) = &opts.unsettled else {
        return Ok(());
    };
    if ctx.plan.order != crate::plan::Order::Paired || !more.wanted() || ctx.cancel.is_cancelled() {
        return Ok(());
    }
    if ctx.shard.is_some() {
        if more.max.is_some() {
            rep.warning("a sharded run makes the plan's repetitions only (`paired.max_repetitions` is left for a run on one machine)");
        }
        return Ok(());
    }
    // A resumed run keeps what its first stage recorded, so it plans the same second stage.
    results.budget.get_or_insert(BudgetSpent {
        first_s,
        ..BudgetSpent::default()
    });
    serve_more(ctx, schedule, &more, judge, results, rep)
}

/// The second stage. `unsettled` reads the plan's repetitions (never the further ones, so
/// a resumed run plans the same) and names the points still inconclusive, each with the
/// repetitions it should have in all; after each further repetition it reads those counts
/// again from the spread over all the repetitions, never their estimate, and raises them
/// where it asks more (an internal pilot); with a budget, the most any point may get is the
/// largest count whose repetitions fit in what the budget has left — priced first by the
/// plan's repetitions, then, after each further one, by what the further ones have cost,
/// and cut again (by the clock alone). Then one further repetition at a time, of the points
/// that want it, without reading the verdicts again in between — none started that would
/// not fit in what is left. `schedule` is the planned one: its contenders, and the steps
/// counted so far. `results.budget` says what was bought.
fn serve_more(
    ctx: &Ctx,
    schedule: &[(u32, usize)],
    more: &More,
    unsettled: &Unsettled,
    results: &mut Results,
    rep: &mut dyn Reporter,
) -> anyhow::Result<()> {
    let started = Instant::now();
    let contenders = serving(ctx, schedule);
    let mut spent = results.budget.clone().unwrap_or_default();
    spent.budget_s = more.budget.map(|b| b.as_secs_f64());
    let mut price = Price::planned(spent.first_s, results.repetitions, paired_points(ctx));
    let cap = more.max.unwrap_or(MOST);
    let mut reachable: Wanted = (unsettled.first)(results, cap)
        .into_iter()
        .map(|(p, n)| (p, n.min(cap)))
        .collect();
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
    let before = spent.first_s + earlier_s;
    let so_far = || before + started.elapsed().as_secs_f64();
    let mut reached = results.repetitions.max(from - 1);
    for k in results.repetitions + 1..=reached {
        reachable = read_again(unsettled, results, k, &reachable, cap);
    }
    let mut wanted = price.afford(more.budget, so_far(), &reachable, reached);
    for repetition in from.. {
        let last = wanted.iter().map(|(_, n)| *n).max().unwrap_or(0);
        if repetition > last || ctx.cancel.is_cancelled() || contenders.is_empty() {
            break;
        }
        let only: Wanted = wanted
            .iter()
            .filter(|(_, n)| *n >= repetition)
            .cloned()
            .collect();
        let n = only.len();
        if more
            .budget
            .is_some_and(|b| so_far() + price.of(n) > b.as_secs_f64())
        {
            break;
        }
        let b = block(&contenders, steps, repetition, only, rep);
        total += n;
        rep.paired_points(total);
        steps += contenders.len();
        results.budget = Some(spent.clone());
        let t = Instant::now();
        serve_block(ctx, &b, steps, results, rep)?;
        price.paid(n, t.elapsed().as_secs_f64());
        reached = repetition;
        spent.more_s = earlier_s + started.elapsed().as_secs_f64();
        spent.more_repetitions = reached - results.repetitions;
        reachable = (unsettled.again)(results, &reachable, cap);
        wanted = price.afford(more.budget, so_far(), &reachable, reached);
    }
    spent.more_s = earlier_s + started.elapsed().as_secs_f64();
    bought(&mut spent, &reachable, reached, results.repetitions);
    results.budget = Some(spent);
    Ok(())
}

/// The counts `reachable` read again after further repetition `k` (a resumed run reads each
/// of its further repetitions so, one by one, as they were read, and sizes the same).
fn read_again(
    unsettled: &Unsettled,
    results: &Results,
    k: u32,
    reachable: &Wanted,
    cap: u32,
) -> Wanted {
    let mut upto = results.clone();
    upto.runs.retain(|x| x.id.repetition <= k);
    (unsettled.again)(&upto, reachable, cap)
}

/// What the stage bought, up to repetition `reached` past the plan's `planned`: the points
/// given further repetitions, and the ones cut short of their counts (the report reads which
/// of those are still inconclusive).
fn bought(spent: &mut BudgetSpent, reachable: &Wanted, reached: u32, planned: u32) {
    spent.points = reachable
        .iter()
        .filter(|(_, n)| (*n).min(reached) > planned)
        .count() as u32;
    spent.cut = reachable
        .iter()
        .filter(|(_, n)| *n > reached)
        .map(|(p, _)| p.to_string())
        .collect();
    spent.left = spent.cut.len() as u32;
}

/// The contenders that serve (noise instances only answer compat cases), once each.
fn serving(ctx: &Ctx, schedule: &[(u32, usize)]) -> Vec<usize> {
    let mut contenders: Vec<usize> = Vec::new();
    for &(_, ci) in schedule {
        if ctx.plan.contenders[ci].noise_of.is_none() && !contenders.contains(&ci) {
            contenders.push(ci);
        }
    }
    contenders
}

/// Further repetition `repetition` of `contenders` (their steps counted on from `steps`),
/// serving the points `only`; said as it begins.
fn block(
    contenders: &[usize],
    steps: usize,
    repetition: u32,
    only: Wanted,
    rep: &mut dyn Reporter,
) -> Block {
    let labels: Vec<String> = only.iter().map(|(p, _)| p.to_string()).collect();
    rep.more_repetitions(repetition, &labels);
    Block {
        repetition,
        members: contenders
            .iter()
            .enumerate()
            .map(|(k, &ci)| (ci, steps + k + 1))
            .collect(),
        paired: true,
        only: Some(only),
    }
}

/// What further repetitions cost. A repetition of `k` points costs `(1 + k)` units, its
/// start-ups and compat weighing about a point. A unit is priced first by the plan's
/// repetitions; once further ones have run, by what they cost — often less: a point that
/// wants many repetitions asks few rounds of each, where the plan's ran theirs to the limit.
struct Price {
    unit: f64,
    /// Units served in this stage, and the seconds they took.
    units: f64,
    seconds: f64,
}

impl Price {
    /// Priced by the plan's `repetitions` of `points` points, which took `first_s`.
    fn planned(first_s: f64, repetitions: u32, points: usize) -> Price {
        Price {
            unit: first_s / f64::from(repetitions.max(1)) / (1 + points) as f64,
            units: 0.0,
            seconds: 0.0,
        }
    }

    fn of(&self, k: usize) -> f64 {
        self.unit * (1 + k) as f64
    }

    /// A further repetition of `k` points took `seconds`: the unit is what the stage's own
    /// repetitions have cost so far.
    fn paid(&mut self, k: usize, seconds: f64) {
        self.units += (1 + k) as f64;
        self.seconds += seconds;
        self.unit = self.seconds / self.units;
    }

    /// What the repetitions `wanted` asks for past the `had` each point has.
    fn total(&self, wanted: &Wanted, had: u32) -> f64 {
        let last = wanted.iter().map(|(_, n)| *n).max().unwrap_or(0);
        (had + 1..=last)
            .map(|r| self.of(wanted.iter().filter(|(_, n)| *n >= r).count()))
            .sum()
    }

    /// The largest count (from `had`, which buys nothing, to the most any point wants) that
    /// every point of `wanted` can be given, cut there, for `left` seconds or less: a binary
    /// search, the cost growing with the count.
    fn most_within(&self, left: f64, wanted: &Wanted, had: u32) -> u32 {
        let top = wanted.iter().map(|(_, n)| *n).max().unwrap_or(0);
        let (mut lo, mut hi) = (had, top.max(had));
        while lo < hi {
            let mid = lo + (hi - lo).div_ceil(2);
            if self.total(&cut(wanted, mid), had) <= left {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        lo
    }

    /// The points of `reachable`, each cut to what the budget (if any) has left after
    /// `so_far` seconds can buy past the `had` repetitions run.
    fn afford(
        &self,
        budget: Option<Duration>,
        so_far: f64,
        reachable: &Wanted,
        had: u32,
    ) -> Wanted {
        match budget {
            None => reachable.clone(),
            Some(b) => cut(
                reachable,
                self.most_within(b.as_secs_f64() - so_far, reachable, had),
            ),
        }
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
        let price = Price::planned(90.0, 3, 3);
        // Point a wants 9 repetitions in all, b 20.
        let wanted = vec![(point("a"), 9), (point("b"), 20)];
        assert_eq!(
            price.total(&cut(&wanted, 3), 3),
            0.0,
            "the plan's repetitions cost nothing more"
        );
        // To 4: one repetition of both, 22.5 s.
        assert_eq!(price.most_within(22.5, &wanted, 3), 4);
        assert_eq!(price.most_within(22.4, &wanted, 3), 3);
        // To 9: six of both (135 s); to 10, one more of b alone (15 s).
        assert_eq!(price.most_within(135.0, &wanted, 3), 9);
        assert_eq!(price.most_within(150.0, &wanted, 3), 10);
        // Never past what the points want, nor below what they have.
        assert_eq!(price.most_within(1e9, &wanted, 3), 20);
        assert_eq!(price.most_within(-5.0, &wanted, 3), 3);
        assert_eq!(price.most_within(-5.0, &wanted, 7), 7);
        // From 7 on, to 9 is two of both (45 s).
        assert_eq!(price.most_within(45.0, &wanted, 7), 9);
        assert_eq!(cut(&wanted, 10), vec![(point("a"), 9), (point("b"), 10)]);
    }

    #[test]
    fn further_repetitions_cheaper_than_the_plans_buy_more() {
        // The plan's repetitions ran their rounds to the limit (30 s each); the further ones,
        // at points that want many, stop at a few rounds: 9 s for both points.
        let mut price = Price::planned(90.0, 3, 3);
        let wanted = vec![(point("a"), 40), (point("b"), 40)];
        let budget = Some(Duration::from_secs(300));
        // 210 s left at 22.5 s a repetition of both: 9 more.
        let first = price.afford(budget, 90.0, &wanted, 3);
        assert_eq!(first, cut(&wanted, 12));
        price.paid(2, 9.0);
        // 201 s left at 9 s: 22 more, past the 4 had: 26.
        let again = price.afford(budget, 99.0, &wanted, 4);
        assert_eq!(again, cut(&wanted, 26));
        // Dearer than planned cuts the count instead, never below what each point has.
        price.paid(2, 200.0);
        assert_eq!(price.afford(budget, 299.0, &wanted, 5), cut(&wanted, 5));
        // Without a budget, what each point wants.
        assert_eq!(price.afford(None, 1e9, &wanted, 5), wanted);
    }
}
