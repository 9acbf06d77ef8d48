//! `bakeoff bisect` (docs/bisect.md): which commit between a good and a bad one made the
//! change, found by measuring neighbours side by side, paired, at every step.
//!
//! The search is here, apart from how a step is measured ([`Bench`]): the endpoints first,
//! then each range cut at K−1 commits measured together with its ends, the range moved to
//! the pairs that read *different* in the change's direction, a culprit confirmed against its
//! parent. What it cannot narrow without guessing it answers as a range.

pub mod record;
pub mod report;
#[cfg(test)]
mod tests;

use serde::{Deserialize, Serialize};

/// A verdict's call, as a bisection keeps it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Call {
    Higher,
    Lower,
    Equivalent,
    Inconclusive,
}

impl Call {
    fn differs(self) -> bool {
        matches!(self, Call::Higher | Call::Lower)
    }
}

/// One judged point of a pair: the later commit against the earlier one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PointRead {
    pub point: String,
    pub call: Call,
    pub ratio: f64,
    pub lo: f64,
    pub hi: f64,
    /// The verdict as the report words it.
    pub text: String,
}

/// Two commits measured side by side: `to` against `from` (indices into the range's
/// commits, `from` < `to`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pair {
    pub from: usize,
    pub to: usize,
    /// Empty when the pair has no verdict (a contender that failed to start or stay up).
    pub points: Vec<PointRead>,
}

/// What a measured run was for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// `good` against `bad`.
    Endpoints,
    /// A range's ends and the commits between them that cut it.
    Step,
    /// A culprit against its parent, measured again with more repetitions.
    Confirm,
}

/// The fewest repetitions a step (and the endpoints) runs. A step's rounds stop once its
/// interval over the repetitions is decided and within the effect, and for a given number
/// of rounds that interval's half-width follows the t-quantile of the repetitions less one
/// — 4.30 over three, 2.78 over five — so five reach it with about (2.78 / 4.30)² = 0.42 of
/// the rounds three need, while seven would save only another fifth and start every
/// contender twice more. The five share the plan's durations (`Plan::spread_over`): the
/// least a step measures is what the plan's repetitions measure together (docs/bisect.md).
pub const STEP_REPETITIONS: u32 = 5;

impl Kind {
    /// How many repetitions this kind of run measures, for a plan of `plan`: a step and the
    /// endpoints at least [`STEP_REPETITIONS`]; the confirmation twice the plan's, and more
    /// than a step's.
    pub fn repetitions(self, plan: u32) -> u32 {
        let step = plan.max(STEP_REPETITIONS);
        match self {
            Kind::Endpoints | Kind::Step => step,
            Kind::Confirm => (2 * plan).max(step + 1),
        }
    }

    pub fn word(self) -> &'static str {
        match self {
            Kind::Endpoints => "endpoints",
            Kind::Step => "step",
            Kind::Confirm => "confirm",
        }
    }
}

/// What a pair says of the change hunted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Reading {
    /// *Different* in the change's direction, and not proven smaller than the effect.
    Toward,
    /// Proven smaller than the effect (its whole interval inside ±effect) at every point.
    Small,
    /// *Different* the other way.
    Away,
    /// Neither.
    Inconclusive,
}

/// The change hunted: its direction on the judged figure, and the smallest change worth a
/// culprit (a share: 0.1 = 10 %).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Hunt {
    pub higher: bool,
    pub effect: f64,
}

impl Hunt {
    /// The change the endpoints measured, when they read *different*: its direction from the
    /// point that changed most, the effect `effect` or else half of that change (on the log
    /// scale). `None` when no point reads *different*.
    pub fn of(endpoints: &Pair, effect: Option<f64>) -> Option<Hunt> {
        let most = endpoints
            .points
            .iter()
            .filter(|p| p.call.differs())
            .max_by(|a, b| a.ratio.ln().abs().total_cmp(&b.ratio.ln().abs()))?;
        Some(Hunt {
            higher: most.call == Call::Higher,
            effect: effect.unwrap_or_else(|| (most.ratio.ln().abs() / 2.0).exp() - 1.0),
        })
    }

    /// How a pair reads for this hunt: *toward* when any point is, *small* when every point
    /// is, else *inconclusive* when any point is, else *away*. A pair without verdicts is
    /// inconclusive.
    pub fn read(&self, pair: &Pair) -> Reading {
        let each: Vec<Reading> = pair.points.iter().map(|p| self.read_point(p)).collect();
        if each.is_empty() {
            Reading::Inconclusive
        } else if each.contains(&Reading::Toward) {
            Reading::Toward
        } else if each.iter().all(|r| *r == Reading::Small) {
            Reading::Small
        } else if each.contains(&Reading::Inconclusive) {
            Reading::Inconclusive
        } else {
            Reading::Away
        }
    }

    fn read_point(&self, p: &PointRead) -> Reading {
        let band = 1.0 + self.effect;
        let toward = if self.higher {
            Call::Higher
        } else {
            Call::Lower
        };
        // The interval's end in the hunted direction, as a ratio above 1.
        let far = if self.higher { p.hi } else { 1.0 / p.lo };
        if p.call == toward && far > band {
            Reading::Toward
        } else if p.lo >= 1.0 / band && p.hi <= band {
            Reading::Small
        } else if p.call.differs() && p.call != toward {
            Reading::Away
        } else {
            Reading::Inconclusive
        }
    }
}

/// How a step, or the whole bisection, is measured: commit `i` built, commits measured side
/// by side. `Ok(None)`: interrupted.
pub trait Bench {
    /// Whether commit `i` builds (built now, or known from before).
    fn builds(&mut self, i: usize) -> anyhow::Result<Option<bool>>;
    /// Commits `at` (ascending) measured in one paired run, each against the one before it.
    /// `hunt` is the change hunted (none at the endpoints).
    fn measure(
        &mut self,
        kind: Kind,
        at: &[usize],
        hunt: Option<Hunt>,
    ) -> anyhow::Result<Option<Vec<Pair>>>;
    /// A line of progress: the step, the range left.
    fn progress(&mut self, _line: &str) {}
}

/// Why a range is the answer rather than one commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Why {
    /// One commit, and measured again against its parent it read *different* the same way.
    Confirmed,
    /// One commit, but measured again against its parent it did not read *different* the
    /// same way.
    NotConfirmed,
    /// Every commit between the ends did not build.
    Unbuilt,
    /// A pair still inconclusive after its budget: narrowing further would be a guess.
    Inconclusive,
    /// Every pair between the ends proven smaller than the effect: the change is spread over
    /// several commits, or came and went.
    Spread,
    /// The bisection's limit of steps was reached.
    Limit,
}

/// A culprit: the commits `from`+1 ..= `to` (one commit when `to` = `from` + 1), and why it
/// is no narrower.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Blame {
    pub from: usize,
    pub to: usize,
    pub why: Why,
}

/// What a bisection found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Answer {
    /// `good` and `bad` are proven equal within the band (or the change is smaller than
    /// `--effect`).
    NotReproduced,
    /// `good` against `bad` is still inconclusive after the budget.
    Undecided,
    /// The culprits, oldest first.
    Culprits { blames: Vec<Blame> },
}

impl Answer {
    /// Whether it names confirmed commits only (or that there was nothing to find).
    pub fn settled(&self) -> bool {
        match self {
            Answer::NotReproduced => true,
            Answer::Undecided => false,
            Answer::Culprits { blames } => blames.iter().all(|b| b.why == Why::Confirmed),
        }
    }
}

/// The search, over commits `0` (good) ..= `n` (bad), cutting each range at `ways` − 1
/// commits, at most `limit` steps after the endpoints. `Ok(None)`: interrupted.
pub fn search(
    bench: &mut dyn Bench,
    n: usize,
    ways: usize,
    effect: Option<f64>,
    limit: usize,
) -> anyhow::Result<Option<(Option<Hunt>, Answer)>> {
    // Numbered as the report's table numbers its runs: the endpoints are the first.
    bench.progress(&format!(
        "step 1, the endpoints: {} commits apart, measured side by side",
        n
    ));
    let Some(ends) = bench.measure(Kind::Endpoints, &[0, n], None)? else {
        return Ok(None);
    };
    let Some(end) = ends.first() else {
        return Ok(Some((None, Answer::Undecided)));
    };
    let Some(hunt) = Hunt::of(end, effect) else {
        let equal = !end.points.is_empty() && end.points.iter().all(|p| p.call == Call::Equivalent);
        let answer = if equal {
            Answer::NotReproduced
        } else {
            Answer::Undecided
        };
        return Ok(Some((None, answer)));
    };
    if hunt.read(end) != Reading::Toward {
        // *Different*, but proven smaller than `--effect`.
        return Ok(Some((Some(hunt), Answer::NotReproduced)));
    }
    let mut open = vec![(0, n)];
    let mut blames = Vec::new();
    let mut steps = 0;
    while let Some((lo, hi)) = open.pop() {
        if hi == lo + 1 {
            blames.push(Blame {
                from: lo,
                to: hi,
                why: Why::NotConfirmed,
            });
            continue;
        }
        if steps == limit {
            blames.push(Blame {
                from: lo,
                to: hi,
                why: Why::Limit,
            });
            continue;
        }
        let Some(cuts) = cuts(bench, lo, hi, ways)? else {
            return Ok(None);
        };
        if cuts.is_empty() {
            blames.push(Blame {
                from: lo,
                to: hi,
                why: Why::Unbuilt,
            });
            continue;
        }
        steps += 1;
        let mut at = vec![lo];
        at.extend(&cuts);
        at.push(hi);
        bench.progress(&format!(
            "step {} of about {}: {} commits left between {lo} and {hi}, measuring {}",
            steps + 1,
            // The endpoints, these steps, those still to come, and a confirmation.
            steps + about(hi - lo, ways) + open.len() + 1,
            hi - lo,
            at.iter()
                .map(|i| i.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ));
        let Some(pairs) = bench.measure(Kind::Step, &at, Some(hunt))? else {
            return Ok(None);
        };
        let read: Vec<(usize, usize, Reading)> =
            pairs.iter().map(|p| (p.from, p.to, hunt.read(p))).collect();
        let toward: Vec<(usize, usize)> = read
            .iter()
            .filter(|r| r.2 == Reading::Toward)
            .map(|r| (r.0, r.1))
            .collect();
        if !toward.is_empty() {
            // Oldest last on the stack, so the oldest range is narrowed first.
            open.extend(toward.into_iter().rev());
        } else if read.iter().any(|r| r.2 == Reading::Inconclusive) {
            // The pairs proven small are not where the change is.
            let open: Vec<&(usize, usize, Reading)> =
                read.iter().filter(|r| r.2 != Reading::Small).collect();
            blames.push(Blame {
                from: open.first().map_or(lo, |r| r.0),
                to: open.last().map_or(hi, |r| r.1),
                why: Why::Inconclusive,
            });
        } else {
            blames.push(Blame {
                from: lo,
                to: hi,
                why: Why::Spread,
            });
        }
    }
    // The endpoints and the steps so far.
    let mut measured = steps + 1;
    for b in blames.iter_mut().filter(|b| b.to == b.from + 1) {
        measured += 1;
        bench.progress(&format!(
            "step {measured}: confirming commit {} against its parent",
            b.to
        ));
        let Some(again) = bench.measure(Kind::Confirm, &[b.from, b.to], Some(hunt))? else {
            return Ok(None);
        };
        if again.first().map(|p| hunt.read(p)) == Some(Reading::Toward) {
            b.why = Why::Confirmed;
        }
    }
    blames.sort_by_key(|b| b.from);
    Ok(Some((Some(hunt), Answer::Culprits { blames })))
}

/// About how many steps a range of `span` commits takes, cut `ways` ways each step.
pub fn about(span: usize, ways: usize) -> usize {
    let mut left = span;
    let mut k = 0usize;
    while left > 1 {
        left = left.div_ceil(ways);
        k += 1;
    }
    k
}

/// The `ways` − 1 commits that cut `lo`..`hi` evenly, each moved to the nearest commit
/// between them that builds (and is not already taken); fewer, or none, when too few build.
fn cuts(
    bench: &mut dyn Bench,
    lo: usize,
    hi: usize,
    ways: usize,
) -> anyhow::Result<Option<Vec<usize>>> {
    let mut taken: Vec<usize> = Vec::new();
    for j in 1..ways {
        let want = lo + ((hi - lo) * j + ways / 2) / ways;
        // Nearest first; of two as near, the older.
        let mut near: Vec<usize> = (lo + 1..hi).filter(|q| !taken.contains(q)).collect();
        near.sort_by_key(|&q| (q.abs_diff(want), q));
        let mut found = None;
        for q in near {
            match bench.builds(q)? {
                None => return Ok(None),
                Some(true) => {
                    found = Some(q);
                    break;
                }
                Some(false) => {}
            }
        }
        taken.extend(found);
    }
    taken.sort_unstable();
    taken.dedup();
    Ok(Some(taken))
}
