//! What would settle an inconclusive verdict: the repetitions its spread says it needs to
//! clear the noise band or fit inside the equivalence band, said in the report, and the
//! second stage of a paired run that measures them (docs/verdicts.md, "More repetitions").

use super::verdicts::{all, pct, PointVerdicts, Verdict};
use crate::results::{PointId, Results};
use crate::stats::paired::{self, knows_its_error, Call};

impl Verdict {
    /// The interval's log half-width as its spread alone makes it: where the interval rests
    /// on Student's t over few repetitions, 1.96 standard errors instead of t's. t(1) = 12.7
    /// widens two repetitions' interval 6.5-fold, and the next repetitions undo that first,
    /// so measured against the interval itself an estimate 4 % past the noise band read as
    /// one on its edge (`tests/budget.rs`, 2026-12-07: ±768 % over two repetitions).
    fn spread_half_width(&self) -> f64 {
        let r = &self.ratio;
        let now = (r.hi / r.lo).ln() / 2.0;
        match r.student {
            Some((se, df)) if paired::t975(df) * se >= 0.99 * now => 1.959_964 * se,
            _ => now,
        }
    }

    /// The log half-width that would settle a verdict at its estimate: to clear the noise
    /// band or to fit inside the equivalence band, whichever edge is farther. Between two
    /// distinct bands it is at least half the gap between them; it nears 0 only where the
    /// bands coincide and the estimate sits on them.
    fn distance(&self) -> f64 {
        let e = self.ratio.ratio.ln().abs();
        let to_equal = (1.0 + self.bands.equivalence).ln() - e;
        let to_differ = e - (1.0 + self.bands.noise).ln();
        to_equal.max(to_differ)
    }

    /// The log half-width an inconclusive verdict needs ([`Verdict::distance`]). `None` when
    /// it is out of reach: on a band's edge, or narrower than a tenth of the half-width its
    /// spread makes ([`Verdict::spread_half_width`]) — a hundred times the data it has.
    fn needs(&self) -> Option<f64> {
        let need = self.distance();
        (need >= 0.1 * self.spread_half_width() && need >= 0.0005).then_some(need)
    }

    /// The log half-width a second stage aims an inconclusive verdict's interval at, to
    /// settle it `share` of the time were its estimate the truth: `share` of what it
    /// [needs](Verdict::needs), but never narrower than half the gap between the noise band
    /// and the equivalence band. An interval that narrow settles wherever its estimate lands
    /// — to reach past the equivalence band and into the noise band at once it would have to
    /// span the gap — so narrower only costs repetitions: from an estimate midway between
    /// the bands, (1 / 0.7)² = 2.04 times as many.
    fn aimed(&self, share: f64) -> Option<f64> {
        let gap = (1.0 + self.bands.equivalence).ln() - (1.0 + self.bands.noise).ln();
        self.needs().map(|need| (need * share).max(gap / 2.0))
    }

    /// The interval's log half-width with `n` repetitions like those it has. Where it rests
    /// on Student's t over the repetitions (few of them) t shrinks too — 4.3 at three, 2.6
    /// at six — so six repetitions do more than the root of 6/3 would say; a bootstrap
    /// interval narrows as one over the root of their number.
    fn half_width_with(&self, n: usize) -> f64 {
        let r = &self.ratio;
        let now = (r.hi / r.lo).ln() / 2.0;
        let reps = r.repetitions.max(1);
        match r.student {
            Some((se, df)) if paired::t975(df) * se >= 0.99 * now => {
                let sd = se * (reps as f64).sqrt();
                paired::t975(n - 1) * sd / (n as f64).sqrt()
            }
            _ => now * (reps as f64 / n as f64).sqrt(),
        }
    }

    /// The fewest repetitions like those it has — more than it has, at most
    /// [`MOST_REPETITIONS`] — whose interval would have the half-width `need`.
    fn repetitions_for(&self, need: f64) -> Option<u32> {
        let reps = self.ratio.repetitions.max(1);
        let most = MOST_REPETITIONS as usize;
        let fits = |n: usize| self.half_width_with(n) <= need;
        if reps >= most || !fits(most) {
            return None;
        }
        // The half-width falls with n: the first n narrow enough, by halving.
        let (mut lo, mut hi) = (reps, most);
        while hi - lo > 1 {
            let mid = (lo + hi) / 2;
            if fits(mid) {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        Some(hi as u32)
    }

    /// What would settle an inconclusive verdict, from the spread seen: the half-width it
    /// needs (to clear the noise band or to fit inside the equivalence band, whichever is
    /// nearer), and about how many rounds per repetition — or, when more rounds cannot get
    /// there (the spread is between fresh starts, or past `max_rounds`), how many
    /// repetitions. `None` when the verdict is settled.
    pub fn settle(&self, max_rounds: Option<u32>) -> Option<String> {
        if self.call != Call::Inconclusive || self.held_back {
            return None;
        }
        let r = &self.ratio;
        if !knows_its_error(r) {
            return Some("one round is no interval: measure at least two rounds".into());
        }
        if r.repetitions < 2 {
            return Some(
                "one start says nothing of the next: run three repetitions or more".into(),
            );
        }
        let Some(need) = self.needs() else {
            let need = self.distance();
            return Some(if need >= 0.0005 {
                format!(
                    "needs ±{}: more than a hundred times the data it has",
                    pct(need.exp() - 1.0)
                )
            } else {
                "its estimate sits on a band's edge: more data may not settle it".into()
            });
        };
        let now = (r.hi / r.lo).ln() / 2.0;
        let factor = (now / need).powi(2);
        let reps = r.repetitions.max(1);
        // The ratio rests on pairs of rounds (one run first, one second), so a repetition's
        // rounds are twice its pairs — what the table's `rounds` column and `max_rounds`
        // count.
        let per_rep = 2.0 * r.rounds as f64 / reps as f64;
        let b = self.between.unwrap_or(0.0);
        let rounds = (1.0 / factor > b).then(|| (per_rep * (1.0 - b) / (1.0 / factor - b)).ceil());
        let head = format!("needs ±{}", pct(need.exp() - 1.0));
        if let Some(n) = rounds.filter(|&n| max_rounds.is_none_or(|m| n <= f64::from(m))) {
            return Some(format!("{head}: about {n:.0} rounds per repetition"));
        }
        let at_estimate = self.repetitions_for(need);
        let said = match at_estimate {
            Some(n) => format!("{head}: about {n} repetitions of {per_rep:.0} rounds"),
            None => {
                format!("{head}: more than {MOST_REPETITIONS} repetitions of {per_rep:.0} rounds")
            }
        };
        // An estimate that wandered between the bands asks much of the next starts; were
        // the two the same, fewer would prove it (what an equivalence gate wants to know).
        Some(match self.repetitions_if_no_change(true) {
            Some(n) if at_estimate.is_none_or(|m| n < m) => format!(
                "{said}; were there no change, about {n} would prove it equal within ±{}",
                pct(self.bands.equivalence)
            ),
            _ => said,
        })
    }

    /// About how many repetitions like those it has would settle an inconclusive verdict,
    /// from the spread seen ([`Verdict::half_width_with`]); a verdict held back by the
    /// report's error control, twice as many. `Some(0)`: settled. `None`: no count up to
    /// [`MOST_REPETITIONS`] would, or none can be read — one round of one repetition, an
    /// estimate on a band's edge.
    ///
    /// "Would settle" at even odds: the interval's half-width is aimed at the whole distance
    /// from the estimate to the band's edge, so if the estimate is the truth the interval
    /// lands on either side of the edge alike. [`Verdict::repetitions_to_settle_surely`]
    /// aims at four times in five.
    pub fn repetitions_to_settle(&self) -> Option<u32> {
        self.repetitions_aimed(1.0)
    }

    /// As [`Verdict::repetitions_to_settle`], but enough to settle it four times in five if
    /// its estimate is the truth: the half-width aimed at [`POWER_AIM`] of the distance to
    /// the band's edge — about twice the repetitions — or at half the gap between the bands,
    /// where that is wider and settles it surely ([`Verdict::aimed`]). What a second stage
    /// sizes itself by.
    pub fn repetitions_to_settle_surely(&self) -> Option<u32> {
        self.repetitions_aimed(POWER_AIM)
    }

    /// How many repetitions in all a second stage of at most `max` gives this verdict, which
    /// has `have`: `None` when it gets none — settled, already at `max`, or out of reach
    /// both ways. Where its interval still holds 1 and `max` or fewer would prove it equal
    /// at even odds were there no change ([`Verdict::repetitions_if_no_change`]), as many as
    /// would four times in five, and its estimate is not read: from a few starts it says
    /// little, and one that wandered between the bands would ask hundreds. Otherwise, in
    /// reach at even odds if its estimate is the truth: as many as that would take four
    /// times in five, at most `max`. One repetition says nothing of the spread between
    /// starts: `max`; nor do two that would put it out of reach.
    pub fn second_stage(&self, have: u32, max: u32) -> Option<u32> {
        self.second_stage_sized(have, max).map(|(n, _)| n)
    }

    /// [`Verdict::second_stage`]'s count, with the log half-width it aims the interval at
    /// (four times in five), where it aims at one: not where it has one repetition, nor where
    /// the error control held it back (it wants as many again).
    fn second_stage_sized(&self, have: u32, max: u32) -> Option<(u32, Option<f64>)> {
        let at_estimate = self.repetitions_to_settle();
        if at_estimate == Some(0) || have >= max {
            return None;
        }
        if have <= 1 {
            return Some((max, None));
        }
        let within = |n: Option<u32>| n.filter(|&n| n > 0 && n <= max);
        if let Some(n) = within(self.repetitions_if_no_change(false)) {
            let surely = self.repetitions_if_no_change(true).unwrap_or(max);
            let equal = EQUAL_AIM_SURELY * (1.0 + self.bands.equivalence).ln();
            return Some((surely.clamp(n, max), Some(equal)));
        }
        // Two starts read the spread between starts on one degree of freedom — its root
        // anywhere from half to thirty times the truth — too little to give a point up on,
        // unless no interval could settle it (its estimate on a band's edge, or between bands
        // that leave no room: `tests/verdicts.rs`).
        let Some(n) = within(at_estimate) else {
            return (have == 2 && self.distance() >= 0.0005).then_some((max, None));
        };
        let surely = self.repetitions_to_settle_surely().unwrap_or(max);
        // Held back, it wants as many again: no half-width.
        let aim = (!self.held_back).then(|| self.aimed(POWER_AIM)).flatten();
        Some((surely.clamp(n, max), aim))
    }

    /// About how many repetitions like those it has would prove an inconclusive verdict
    /// *equivalent* if the two were in truth the same — even odds, or with `surely` four
    /// times in five — whatever its estimate reads now. `None` where no change is already
    /// ruled out (the interval leaves 1 out, or it cleared the noise band and was held
    /// back), where no count up to [`MOST_REPETITIONS`] would, or where none can be read.
    ///
    /// Why not from the estimate alone: the interval has to fit inside the band *around
    /// wherever the next estimate lands*, so for two equal builds the half-width is aimed at
    /// [`EQUAL_AIM`] (or [`EQUAL_AIM_SURELY`]) of the band — two one-sided tests sized at a
    /// nil difference. Aimed from an estimate that wandered to 1.5 % between bands of 1 % and
    /// 2 %, the same A/A point would want a hundred repetitions.
    pub fn repetitions_if_no_change(&self, surely: bool) -> Option<u32> {
        if self.call != Call::Inconclusive {
            return Some(0);
        }
        let r = &self.ratio;
        if !knows_its_error(r) || self.held_back || !(r.lo <= 1.0 && 1.0 <= r.hi) {
            return None;
        }
        let aim = if surely { EQUAL_AIM_SURELY } else { EQUAL_AIM };
        self.repetitions_for(aim * (1.0 + self.bands.equivalence).ln())
    }

    fn repetitions_aimed(&self, aim: f64) -> Option<u32> {
        if self.call != Call::Inconclusive {
            return Some(0);
        }
        let r = &self.ratio;
        if !knows_its_error(r) {
            return None;
        }
        if self.held_back {
            // It cleared the noise band alone; the control asks a smaller p-value, which
            // as many repetitions again would give a real change.
            return Some(2 * r.repetitions.max(1) as u32);
        }
        self.repetitions_for(self.aimed(aim)?)
    }
}

/// The share of the distance between an estimate and a band's edge that a second stage aims
/// its interval's half-width at: z(97.5 %) / (z(97.5 %) + z(80 %)) = 1.96 / (1.96 + 0.84), so
/// that a change as large as its estimate settles four times in five (80 % power; Cohen
/// 1988), not one time in two.
pub const POWER_AIM: f64 = 0.7;

/// The share of the equivalence band that an interval's half-width is aimed at so that two
/// equal figures read *equivalent* at even odds: the interval (1.96 standard errors a side)
/// must fit inside the band around an estimate that lands anywhere, |d| ≤ m − 1.96 se, half
/// the time when m = (1.96 + 0.674) se — so 1.96 / 2.634.
pub const EQUAL_AIM: f64 = 1.96 / (1.96 + 0.674);

/// As [`EQUAL_AIM`], four times in five: m = (1.96 + 1.282) se, the sample size of two
/// one-sided tests when the true difference is nil (Chow, Shao & Wang, *Sample Size
/// Calculations in Clinical Research*, 2nd ed., 2008, ch. 3).
pub const EQUAL_AIM_SURELY: f64 = 1.96 / (1.96 + 1.282);

/// The second stage of a paired run with `max_repetitions` (docs/verdicts.md, "More
/// repetitions"): read off the plan's repetitions only, the points where a contender's main
/// verdict is inconclusive and about `max` repetitions or fewer would settle it at even
/// odds, if its estimate is the truth or if there is no change — or it has only one, which
/// tells nothing of the spread between fresh starts — each with the repetitions it should
/// have in all ([`Verdict::second_stage`]: enough to settle it four times in five, at most
/// `max`; the most any of its contenders wants). In plan order.
pub fn unsettled(r: &Results, max: u32) -> Vec<(PointId, u32)> {
    // A resumed second stage reads the same first stage, so it plans the same.
    let mut first = r.clone();
    first.runs.retain(|x| x.id.repetition <= r.repetitions);
    let (all, _) = all(&first);
    let mut out: Vec<(PointId, u32)> = Vec::new();
    for pv in &all {
        let Some(v) = pv.main() else { continue };
        let have = first
            .point_runs(&pv.contender, &pv.point)
            .filter(|p| p.load.is_some())
            .count() as u32;
        let Some(want) = v.second_stage(have, max) else {
            continue;
        };
        match out.iter_mut().find(|(p, _)| *p == pv.point) {
            Some((_, n)) => *n = (*n).max(want),
            None => out.push((pv.point.clone(), want)),
        }
    }
    out
}

/// The second stage's counts `wanted` (each point with the repetitions it should have in
/// all, at most `max`), read again after a further repetition — an internal pilot
/// (docs/verdicts.md, "The count re-read as the repetitions come"): what each point's
/// interval aims at is the first stage's ([`unsettled`]), the count that reaches it is read
/// from the spread over all the repetitions in `r`, never from their estimate. A count
/// follows that spread up and down but never below what the first stage gave, nor past
/// `max`; a point whose interval is as narrow as it aims wants no more than the first stage
/// gave; one whose spread now says no count up to [`MOST_REPETITIONS`] would reach it keeps
/// its count. In the order of `wanted`.
pub fn resized(r: &Results, wanted: &[(PointId, u32)], max: u32) -> Vec<(PointId, u32)> {
    let mut first = r.clone();
    first.runs.retain(|x| x.id.repetition <= r.repetitions);
    let (then, _) = all(&first);
    let (now, _) = all(r);
    let have = |pv: &PointVerdicts| {
        first
            .point_runs(&pv.contender, &pv.point)
            .filter(|p| p.load.is_some())
            .count() as u32
    };
    reread(&then, have, &now, wanted, max)
}

/// [`resized`] once the verdicts are read: `then`, the first stage's (each with the
/// repetitions `have` says it had), sizes what each point aims at and the least it gets;
/// `now`, over all the repetitions, only says how far apart they are. A point's count is
/// the most any of its contenders wants.
fn reread(
    then: &[PointVerdicts],
    have: impl Fn(&PointVerdicts) -> u32,
    now: &[PointVerdicts],
    wanted: &[(PointId, u32)],
    max: u32,
) -> Vec<(PointId, u32)> {
    let mut out = wanted.to_vec();
    for (point, n) in out.iter_mut() {
        let wants = then.iter().filter(|pv| pv.point == *point).map(|pv| {
            let Some(v) = pv.main() else { return 0 };
            let Some((least, aim)) = v.second_stage_sized(have(pv), max) else {
                return 0;
            };
            let again = now
                .iter()
                .find(|x| x.contender == pv.contender && x.point == pv.point)
                .and_then(|x| x.main());
            let (Some(aim), Some(again)) = (aim, again) else {
                return *n;
            };
            // Already as narrow as aimed: nothing more to reach (`repetitions_for` counts
            // past what a verdict has, so asking it would add one a repetition, forever).
            if (again.ratio.hi / again.ratio.lo).ln() / 2.0 <= aim {
                return least;
            }
            again
                .repetitions_for(aim)
                .map_or(*n, |m| least.max(m.min(max)))
        });
        *n = wants.max().unwrap_or(*n);
    }
    out
}

/// The most repetitions an estimate of what would settle a verdict counts to (the most a
/// plan may ask for).
pub const MOST_REPETITIONS: u32 = 1000;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::verdicts::fixtures::*;
    use crate::analysis::verdicts::Figure;

    #[test]
    fn a_count_is_read_again_from_the_spread_never_below_the_first_stages() {
        // The first stage: an A/A point at 1.00 ± 2.6 % over 3 repetitions. Were there no
        // change, ±0.605 × 2 % would prove it equal four times in five: (ln(1.026) /
        // (0.605 ln 1.02))² × 3 = 13.6 → 14 (the fixtures' interval narrows as 1/√n).
        let then = vec![at(
            1,
            vec![v(Figure::CpuPerRequest, 1.0, 1.0 / 1.026, 1.026)],
        )];
        let first = then[0].main().unwrap().second_stage(3, 100);
        assert_eq!(first, Some(14));
        let now_at = |half: f64, reps: usize| {
            let mut x = v(Figure::CpuPerRequest, 1.01, 1.01 / half, 1.01 * half);
            x.ratio.repetitions = reps;
            vec![at(1, vec![x])]
        };
        let given = |n: u32| vec![(then[0].point.clone(), n)];
        let again = |now: &[PointVerdicts], n: u32, max: u32| {
            reread(&then, |_| 3, now, &given(n), max)[0].1
        };
        // Eight repetitions later, ±2.6 % still: the first three underestimated the spread
        // (at three, this one reads ±5 %), so (ln 1.026 / (0.605 ln 1.02))² × 11 = 50.6 → 51.
        assert_eq!(again(&now_at(1.026, 11), 14, 100), 51);
        // Never past the most allowed.
        assert_eq!(again(&now_at(1.026, 11), 14, 30), 30);
        // Nine later, ±1.6 % over twenty: 20 × (ln 1.016 / (0.605 ln 1.02))² = 35.1 → 36,
        // fewer than the 51 it was given — the count follows the spread down as well.
        assert_eq!(again(&now_at(1.016, 20), 51, 100), 36);
        // As narrow as aimed (±1.2 %): no more than the first stage gave, so a point given
        // 51 that reached its aim at twenty stops there; one that reached it sooner still
        // gets the first stage's 14. The estimate (here 1.01) is never read: the same
        // spread around 0.99 asks the same.
        assert_eq!(again(&now_at(1.011, 20), 51, 100), 14);
        assert_eq!(again(&now_at(1.005, 11), 14, 100), 14);
        assert_eq!(again(&now_at(1.005, 40), 14, 100), 14);
        let mut low = now_at(1.026, 11);
        low[0].verdicts[0].ratio.ratio = 0.99;
        assert_eq!(again(&low, 14, 100), 51);
        // A spread no count up to a thousand would narrow enough: left as it was.
        assert_eq!(again(&now_at(1.5, 11), 14, 10_000), 14);
        assert_eq!(again(&now_at(1.5, 11), 40, 10_000), 40);
        // A point held back by the error control wants as many again, not a half-width.
        let mut held = then.clone();
        held[0].verdicts[0].held_back = true;
        assert_eq!(
            reread(&held, |_| 3, &now_at(1.026, 11), &given(14), 100)[0].1,
            14
        );
        // A point the first stage gave none is not given any.
        assert_eq!(reread(&then, |_| 3, &now_at(1.026, 11), &[], 100), vec![]);
        // Two contenders at one point: the count is the most either wants — one as narrow
        // as aimed does not stop the other.
        let mut both = then.clone();
        both.push(then[0].clone());
        both[1].contender = "v3".into();
        let mut now = now_at(1.011, 20);
        let mut other = now_at(1.026, 20)[0].clone();
        other.contender = "v3".into();
        now.push(other);
        let n = reread(&both, |_| 3, &now, &given(51), 100)[0].1;
        assert_eq!(n, 92, "20 × (ln 1.026 / (0.605 ln 1.02))² = 91.98");
    }

    #[test]
    fn a_count_read_again_aims_no_narrower_than_half_the_gap_between_the_bands() {
        // Midway between the bands, leaving 1 out over six repetitions: the first stage gives
        // 35, aimed at half the gap, (ln 1.02 − ln 1.01) / 2 = 0.004926.
        let mut off = v(Figure::CpuPerRequest, 1.015, 1.003, 1.027);
        off.ratio.repetitions = 6;
        let then = vec![at(1, vec![off])];
        assert_eq!(then[0].main().unwrap().second_stage(6, 1000), Some(35));
        // Forty repetitions later it reads ±0.45 %: inside that aim, so no more than the 35
        // given — aimed at 0.7 of the way to the nearer edge (0.003457), it would have asked
        // 40 × (ln 1.0045 / 0.003457)² = 67.5 → 68.
        let mut x = v(Figure::CpuPerRequest, 1.015, 1.015 / 1.0045, 1.015 * 1.0045);
        x.ratio.repetitions = 40;
        let now = vec![at(1, vec![x])];
        let given = vec![(then[0].point.clone(), 35)];
        assert_eq!(reread(&then, |_| 6, &now, &given, 1000)[0].1, 35);
    }
}
