//! Verdicts of paired runs: for every scenario point and every contender with a baseline,
//! the ratio contender / baseline of each figure with its interval, computed from the rounds
//! the two ran side by side (see `stats::paired` for the method, docs/verdicts.md for the
//! design). Only runs of one block (contenders that ran side by side) are paired.

use crate::results::{PointId, PointRun, Results};
use crate::stats::machines;
pub use crate::stats::notation::fmt_ratio;
use crate::stats::paired::{self, knows_its_error, Bands, Call, Ratio};

pub use super::figure::Figure;

/// One figure's paired ratio and what it proves.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    pub figure: Figure,
    pub ratio: Ratio,
    pub call: Call,
    /// The bands it was read against.
    pub bands: Bands,
    /// The two-sided p-value of "inside the noise band" ([`Ratio::p_different`]).
    pub p: f64,
    /// Its interval cleared the noise band, but the report's false discovery rate control
    /// did not let it through: it reads inconclusive.
    pub held_back: bool,
    /// The share of the interval's variance that comes from differences between fresh
    /// starts rather than between rounds (`None` below two repetitions): what more rounds
    /// cannot shrink.
    pub between: Option<f64>,
    /// Where the table's medians disagree with the paired estimate: why.
    pub trim: Option<super::trim::Trim>,
}

impl std::fmt::Display for Verdict {
    /// `1.34× (1.29×–1.40×) more CPU per request`; `≈ 1.00× (0.990×–1.01×) throughput equal
    /// within ±2%`; `? 1.03× (0.98×–1.08×) throughput inconclusive (±4.8%)`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.write(f, false)
    }
}

impl Verdict {
    /// The verdict as [`Display`](std::fmt::Display) writes it, its ratios as factors
    /// whatever their size when `factors` says so (a column of one notation).
    pub fn text(&self, factors: bool) -> String {
        struct In<'a>(&'a Verdict, bool);
        impl std::fmt::Display for In<'_> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                self.0.write(f, self.1)
            }
        }
        In(self, factors).to_string()
    }

    fn write(&self, f: &mut std::fmt::Formatter<'_>, factors: bool) -> std::fmt::Result {
        // Each end reads on the side of the band the call read it on.
        let (noise, eq) = (1.0 + self.bands.noise, 1.0 + self.bands.equivalence);
        let span = match self.call {
            Call::Higher => self.ratio.span_in(factors, |x| x > noise, |_| true),
            Call::Lower => self.ratio.span_in(factors, |_| true, |x| x < 1.0 / noise),
            _ => self.ratio.span_in(factors, |x| x >= 1.0 / eq, |x| x <= eq),
        };
        let (up, down) = self.figure.words();
        let name = self.figure.name();
        match self.call {
            Call::Higher => write!(f, "{span} {up}"),
            Call::Lower => write!(f, "{span} {down}"),
            Call::Equivalent => write!(
                f,
                "≈ {span} {name} equal within ±{}",
                pct(self.bands.equivalence)
            ),
            Call::Inconclusive if !knows_its_error(&self.ratio) => {
                write!(f, "? {span} {name} inconclusive (one round: no interval)")
            }
            Call::Inconclusive if self.ratio.repetitions < 2 => {
                write!(f, "? {span} {name} inconclusive (one start: no interval between starts)")
            }
            Call::Inconclusive if self.held_back => write!(
                f,
                "? {span} {name} inconclusive (clears the noise band alone, not under the report's error control)"
            ),
            // An interval wider than ±50 % is no reading at all: a ± of hundreds of percent
            // beside a ratio read as a number it is not.
            Call::Inconclusive if self.ratio.precision() > 0.5 => write!(
                f,
                "? {span} {name} inconclusive (no reading: the interval is wider than ±50%)"
            ),
            Call::Inconclusive => write!(
                f,
                "? {span} {name} inconclusive (±{})",
                pct(self.ratio.precision())
            ),
        }
    }
}

/// A share as a percentage with one decimal below 10 %: `2%`, `4.8%`, `12%`.
pub fn pct(x: f64) -> String {
    let v = x * 100.0;
    if (v - v.round()).abs() < 0.05 || v >= 10.0 {
        format!("{v:.0}%")
    } else {
        format!("{v:.1}%")
    }
}

impl Verdict {
    pub(crate) fn new(figure: Figure, ratio: Ratio, bands: Bands, between: Option<f64>) -> Verdict {
        // One fresh start says nothing of how much another would differ: its rounds can
        // tell these two processes apart, not the two builds (docs/verdicts.md, "Few
        // repetitions").
        let one_start = ratio.repetitions < 2;
        Verdict {
            figure,
            ratio,
            call: if one_start {
                Call::Inconclusive
            } else {
                ratio.call(bands)
            },
            bands,
            p: if one_start {
                1.0
            } else {
                ratio.p_different(bands.noise)
            },
            held_back: false,
            between,
            trim: None,
        }
    }
}

/// A contender against its baseline at one point.
#[derive(Debug, Clone, PartialEq)]
pub struct PointVerdicts {
    pub point: PointId,
    pub contender: String,
    pub baseline: String,
    /// In [`Figure::ALL`] order; a figure that was not measured, or that the plan does not
    /// judge (`paired.judge`), is left out.
    pub verdicts: Vec<Verdict>,
    /// A merged run whose blocks ran on several machines: each machine's own verdicts (as
    /// `verdicts`, from its blocks only), which `verdicts` combines. Empty on one machine.
    pub machines: Vec<(String, Vec<Verdict>)>,
    /// The most rounds a repetition of the point could get (`rounds = "auto"`): what an
    /// inconclusive verdict's estimate of the rounds it needs is held to.
    pub round_limit: Option<u32>,
}

impl PointVerdicts {
    pub fn get(&self, figure: Figure) -> Option<&Verdict> {
        self.verdicts.iter().find(|v| v.figure == figure)
    }

    /// The verdict to lead with: CPU per request where measured (and judged), else
    /// throughput, else the first figure the plan judges.
    pub fn main(&self) -> Option<&Verdict> {
        self.get(Figure::CpuPerRequest)
            .or_else(|| self.get(Figure::Throughput))
            .or_else(|| self.verdicts.first())
    }
}

/// The family of a report's verdicts and the error control over it (docs/verdicts.md).
#[derive(Debug, Clone, PartialEq)]
pub struct Family {
    /// Comparisons (contender × point) and verdicts (× figures) in the family.
    pub comparisons: usize,
    pub verdicts: usize,
    /// The false discovery rate the "different" verdicts are held to.
    pub fdr: f64,
    pub different: usize,
    pub equivalent: usize,
    pub inconclusive: usize,
    /// Verdicts whose interval cleared the noise band alone but not under the control.
    pub held_back: usize,
    /// The figures judged when the plan named them (`paired.judge`); empty: all.
    pub judged: Vec<Figure>,
    /// Comparisons measured, but at none of the judged figures (CPU per item judged alone
    /// where a call does not stream): no verdict there, and not in the family.
    pub unjudged: usize,
}

/// Every paired comparison in `r`, in plan order (points, then contenders), with the
/// report's false discovery rate control applied; empty for runs that were not paired.
pub fn all(r: &Results) -> (Vec<PointVerdicts>, Option<Family>) {
    let Some(settings) = &r.paired else {
        return (Vec::new(), None);
    };
    let bands = settings.bands();
    let judged: Vec<Figure> = Figure::ALL
        .into_iter()
        .filter(|f| settings.judges(f.key()))
        .collect();
    let mut out = Vec::new();
    let mut unjudged = 0;
    for s in &r.scenarios {
        for point in &s.points {
            for c in r.compared() {
                let Some(base) = c.baseline.as_deref().filter(|b| *b != c.name) else {
                    continue;
                };
                let (verdicts, machines) = compare(r, point, base, &c.name, bands, &judged);
                if verdicts.is_empty() {
                    // Measured, only not at a figure the plan judges?
                    if settings.judge.is_some()
                        && !compare(r, point, base, &c.name, bands, &Figure::ALL)
                            .0
                            .is_empty()
                    {
                        unjudged += 1;
                    }
                } else {
                    out.push(PointVerdicts {
                        point: point.clone(),
                        contender: c.name.clone(),
                        baseline: base.to_string(),
                        verdicts,
                        machines,
                        round_limit: round_limit(r, &c.name, point),
                    });
                }
            }
        }
    }
    let mut family = control(&mut out, settings.fdr);
    if settings.judge.is_some() {
        family.judged = judged;
    }
    family.unjudged = unjudged;
    (out, Some(family))
}

/// The most rounds a repetition of `contender` at `point` could get: the limit its runs
/// recorded (an auto slice sets it per point), else the plan's `max_rounds`.
pub fn round_limit(r: &Results, contender: &str, point: &PointId) -> Option<u32> {
    r.point_runs(contender, point)
        .filter_map(|p| p.round_limit)
        .max()
        .or_else(|| r.paired.as_ref().and_then(|p| p.max_rounds))
}

/// Holds the "different" verdicts of `all` to false discovery rate `fdr`: Benjamini–Hochberg
/// over the p-values of every verdict in the report (all points, contenders and figures); a
/// verdict whose interval clears the noise band but that the procedure does not reject reads
/// inconclusive, marked as held back.
pub fn control(all: &mut [PointVerdicts], fdr: f64) -> Family {
    let p: Vec<f64> = all
        .iter()
        .flat_map(|v| v.verdicts.iter().map(|x| x.p))
        .collect();
    let keep = paired::benjamini_hochberg(&p, fdr);
    let mut k = keep.iter();
    let mut held_back = 0;
    for x in all.iter_mut().flat_map(|v| v.verdicts.iter_mut()) {
        let kept = *k.next().expect("one decision per verdict");
        if x.call.is_different() && !kept {
            x.call = Call::Inconclusive;
            x.held_back = true;
            held_back += 1;
        }
    }
    let count = |c: &dyn Fn(Call) -> bool| {
        all.iter()
            .flat_map(|v| &v.verdicts)
            .filter(|x| c(x.call))
            .count()
    };
    Family {
        comparisons: all.len(),
        verdicts: p.len(),
        fdr,
        different: count(&|c| c.is_different()),
        equivalent: count(&|c| c == Call::Equivalent),
        inconclusive: count(&|c| c == Call::Inconclusive),
        held_back,
        judged: Vec::new(),
        unjudged: 0,
    }
}

/// The verdicts of the `judged` figures of (baseline, contender) over all blocks, and per
/// machine when the blocks ran on several (a merged run): each machine's from its own
/// blocks, combined across machines with [`machines::combine`] (docs/scale-out.md).
fn compare(
    r: &Results,
    point: &PointId,
    base: &str,
    name: &str,
    bands: Bands,
    judged: &[Figure],
) -> (Vec<Verdict>, Vec<(String, Vec<Verdict>)>) {
    let blocks = blocks(r, point, base, name);
    // A block where either side failed most calls compares failures: no verdict from it.
    let failed = |p: &PointRun| p.load.as_ref().is_some_and(|l| l.mostly_failed());
    if blocks.is_empty() || blocks.iter().any(|(_, b, c)| failed(b) || failed(c)) {
        return (Vec::new(), Vec::new());
    }
    let mut machines: Vec<&str> = Vec::new();
    for (m, _, _) in &blocks {
        if !machines.contains(m) {
            machines.push(m);
        }
    }
    // Seeded by the point, so a report of the same results is the same report.
    let seed = point
        .to_string()
        .bytes()
        .fold(0, |h, b| crate::rng::mix(h ^ u64::from(b)));
    let on = |machine: Option<&str>| -> Vec<Verdict> {
        judged
            .iter()
            .filter_map(|&figure| {
                let mine: Vec<(&PointRun, &PointRun)> = blocks
                    .iter()
                    .filter(|(m, _, _)| machine.is_none_or(|x| x == *m))
                    .map(|(_, b, c)| (*b, *c))
                    .collect();
                let reps: Vec<paired::Rounds> =
                    mine.iter().map(|(b, c)| rounds(b, c, figure)).collect();
                let ratio = paired::ratio(&reps, seed)?;
                let mut v = Verdict::new(figure, ratio, bands, paired::between_share(&reps));
                // Percentiles of a whole point's merged histogram are not those of its
                // slices; the totals (CPU, calls) are, so only those are held to agree.
                if !matches!(figure, Figure::P50 | Figure::P99) {
                    let median =
                        |v: Vec<f64>| crate::stats::Sample::new(v).ok().map(|s| s.median());
                    let side = |c: bool| {
                        median(
                            mine.iter()
                                .filter_map(|(b, x)| figure.of_point(if c { x } else { b }))
                                .collect(),
                        )
                    };
                    if let (Some(b), Some(c)) = (side(false), side(true)) {
                        v.trim = super::trim::trim(
                            c / b,
                            &reps,
                            (&ratio, v.call),
                            bands.noise,
                            (base, name),
                        );
                    }
                }
                Some(v)
            })
            .collect()
    };
    if machines.len() < 2 {
        return (on(None), Vec::new());
    }
    let parts: Vec<(String, Vec<Verdict>)> = machines
        .iter()
        .map(|m| (m.to_string(), on(Some(m))))
        .collect();
    (combined(&parts, judged, bands), parts)
}

/// Each judged figure's verdicts on several machines combined into one.
fn combined(parts: &[(String, Vec<Verdict>)], judged: &[Figure], bands: Bands) -> Vec<Verdict> {
    judged
        .iter()
        .filter_map(|&figure| {
            let ratios: Vec<Ratio> = parts
                .iter()
                .filter_map(|(_, v)| v.iter().find(|v| v.figure == figure))
                .map(|v| v.ratio)
                .collect();
            let ratio = machines::combine(&ratios)?;
            Some(Verdict::new(figure, ratio, bands, None))
        })
        .collect()
}

/// (machine, baseline's point, contender's point) of every block in which both ran the
/// point in rounds. The machine is the contender's run's (`BAKEOFF_MACHINE` or host name).
fn blocks<'a>(
    r: &'a Results,
    point: &PointId,
    base: &str,
    name: &str,
) -> Vec<(&'a str, &'a PointRun, &'a PointRun)> {
    let find = |who: &str, block: u32| {
        r.runs_of(who)
            .filter(|x| x.block == Some(block))
            .find_map(|x| {
                let p = x
                    .points
                    .iter()
                    .find(|p| p.id == *point && !p.slices.is_empty())?;
                let env = r.environment_of(x);
                Some((env.machine(), p))
            })
    };
    let mut ids: Vec<u32> = r.runs.iter().filter_map(|x| x.block).collect();
    ids.sort_unstable();
    ids.dedup();
    ids.into_iter()
        .filter_map(|b| {
            let (_, bp) = find(base, b)?;
            let (m, cp) = find(name, b)?;
            Some((m, bp, cp))
        })
        .collect()
}

/// The rounds both ran, as (baseline's figure, contender's figure), balanced for position.
fn rounds(base: &PointRun, other: &PointRun, figure: Figure) -> paired::Rounds {
    crate::results::balanced_rounds(&base.slices, &other.slices, &|s| figure.of(s))
}

/// Verdicts made by hand, for the tests of the report's layers over them.
#[cfg(test)]
pub(crate) mod fixtures {
    use super::*;

    pub const BANDS: Bands = Bands {
        noise: 0.01,
        equivalence: 0.02,
    };

    pub fn ratio(r: f64, lo: f64, hi: f64) -> Ratio {
        Ratio {
            ratio: r,
            lo,
            hi,
            repetitions: 3,
            rounds: 18,
            student: None,
        }
    }

    pub fn v(figure: Figure, r: f64, lo: f64, hi: f64) -> Verdict {
        Verdict::new(figure, ratio(r, lo, hi), BANDS, Some(0.0))
    }

    pub fn at(clients: usize, verdicts: Vec<Verdict>) -> PointVerdicts {
        PointVerdicts {
            point: crate::results::PointId::at(clients),
            contender: "v2".into(),
            baseline: "v1".into(),
            round_limit: None,
            verdicts,
            machines: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::fixtures::*;
    use super::*;

    #[test]
    fn ratios_keep_their_digits_and_large_ones_read_as_factors() {
        assert_eq!(fmt_ratio(0.905), "0.905×");
        assert_eq!(fmt_ratio(1.344), "1.34×");
        assert_eq!(fmt_ratio(1.0), "1.00×");
        assert_eq!(fmt_ratio(472.4), "472×");
        assert_eq!(fmt_ratio(3.21), "3.2×");
        assert_eq!(fmt_ratio(1.0 / 260.0), "÷260");
        assert_eq!(fmt_ratio(0.3), "÷3.3");
        assert_eq!(fmt_ratio(0.0), "—");
        assert_eq!(pct(0.02), "2%");
        assert_eq!(pct(0.048), "4.8%");
        assert_eq!(pct(0.123), "12%");
    }

    #[test]
    fn a_verdict_says_which_of_three_it_is() {
        assert_eq!(
            v(Figure::CpuPerRequest, 1.344, 1.29, 1.40).to_string(),
            "1.34× (1.29×–1.40×) more CPU per request"
        );
        assert_eq!(
            v(Figure::Throughput, 0.905, 0.842, 0.972).to_string(),
            "0.905× (0.842×–0.972×) less throughput"
        );
        assert_eq!(
            v(Figure::Throughput, 1.002, 0.99, 1.012).to_string(),
            "≈ 1.00× (0.990×–1.01×) throughput equal within ±2%"
        );
        assert_eq!(
            v(Figure::Throughput, 1.03, 0.98, 1.08).to_string(),
            "? 1.03× (0.980×–1.08×) throughput inconclusive (±5%)"
        );
        // An interval of ÷15 to 3.2× is no reading: no "±601%" beside it (issue 71).
        let wide = v(Figure::Throughput, 0.458, 0.065, 3.2).to_string();
        assert!(
            wide.ends_with("throughput inconclusive (no reading: the interval is wider than ±50%)"),
            "{wide}"
        );
        assert_eq!(
            v(Figure::P50, 1.0 / 500.0, 1.0 / 520.0, 1.0 / 480.0).to_string(),
            "÷500 (÷520–÷480) lower p50"
        );
        let one = Verdict::new(
            Figure::CpuPerRequest,
            Ratio {
                rounds: 1,
                repetitions: 1,
                ..ratio(0.93, 0.93, 0.93)
            },
            BANDS,
            None,
        );
        assert_eq!(one.call, Call::Inconclusive);
        assert_eq!(
            one.to_string(),
            "? 0.930× (0.930×–0.930×) CPU per request inconclusive (one round: no interval)"
        );
    }

    #[test]
    fn error_control_holds_back_a_lone_edge_among_many_and_keeps_clear_changes() {
        // 40 comparisons: one clear change, one that just clears the band, the rest A/A.
        let mut all: Vec<PointVerdicts> = (0..40)
            .map(|k| at(k, vec![v(Figure::CpuPerRequest, 1.0, 0.98, 1.02)]))
            .collect();
        all[0].verdicts[0] = v(Figure::CpuPerRequest, 1.30, 1.25, 1.35);
        all[1].verdicts[0] = v(Figure::CpuPerRequest, 1.03, 1.011, 1.05);
        assert_eq!(
            all[1].verdicts[0].call,
            Call::Higher,
            "alone it is different"
        );
        let f = control(&mut all, 0.05);
        assert_eq!(all[0].verdicts[0].call, Call::Higher);
        assert_eq!(all[1].verdicts[0].call, Call::Inconclusive);
        assert!(all[1].verdicts[0].held_back);
        assert!(all[1].verdicts[0].to_string().contains("error control"));
        assert_eq!(
            (f.verdicts, f.comparisons, f.different, f.held_back),
            (40, 40, 1, 1)
        );
        assert_eq!(f.equivalent + f.inconclusive + f.different, 40);
        // Alone, the same edge stays different: the control is over the family.
        let mut one = vec![at(1, vec![v(Figure::CpuPerRequest, 1.03, 1.011, 1.05)])];
        assert_eq!(control(&mut one, 0.05).different, 1);
    }

    #[test]
    fn a_plan_that_judges_one_figure_holds_it_to_the_whole_rate() {
        // A one-point report's four figures: CPU per request just clears the band (p ≈ 0.02),
        // the rest are equal. Over four, Benjamini–Hochberg asks p < 0.05/4 of a lone change.
        let edge = v(Figure::CpuPerRequest, 1.03, 1.011, 1.05);
        assert!(edge.p > 0.0125 && edge.p < 0.05, "{}", edge.p);
        let equal = |f| v(f, 1.0, 0.99, 1.01);
        let mut four = vec![at(
            1,
            vec![
                edge.clone(),
                equal(Figure::Throughput),
                equal(Figure::P50),
                equal(Figure::P99),
            ],
        )];
        let f = control(&mut four, 0.05);
        assert_eq!((f.verdicts, f.different, f.held_back), (4, 0, 1));
        // `paired.judge = ["cpu_per_request"]`: the family is that figure alone.
        let mut one = vec![at(1, vec![edge])];
        let f = control(&mut one, 0.05);
        assert_eq!((f.verdicts, f.different, f.held_back), (1, 1, 0));
        assert_eq!(one[0].verdicts[0].call, Call::Higher);
        // The keys a plan names are the figures' own, in the same order.
        let keys: Vec<&str> = Figure::ALL.iter().map(|f| f.key()).collect();
        assert_eq!(keys, crate::plan::FIGURES);
    }

    #[test]
    fn an_inconclusive_verdict_says_what_would_settle_it() {
        // ±5 % around 1.00, all spread within repetitions: equal within 2 % needs ±2 %, a
        // (ln 1.05 / ln 1.02)² = 6.1-fold variance cut. The ratio rests on 18 pairs of rounds
        // over 3 repetitions, 12 rounds each: about 6.1 × 12 = 73 rounds per repetition.
        let x = v(Figure::CpuPerRequest, 1.0, 1.0 / 1.05, 1.05);
        let s = x.settle(Some(100)).unwrap();
        assert!(s.starts_with("needs ±2%: about 73 rounds"), "{s}");
        assert!(s.contains("rounds per repetition"), "{s}");
        // Past max_rounds, or spread between fresh starts: repetitions instead.
        let s = x.settle(Some(30)).unwrap();
        assert!(s.contains("repetitions of 12 rounds"), "{s}");
        let mut starts = x.clone();
        starts.between = Some(0.9);
        assert!(starts.settle(None).unwrap().contains("repetitions"));
        // Between the bands: ±0.5 % would tell 1.5 % from both 1 % and 2 %.
        let between = v(Figure::CpuPerRequest, 1.015, 0.99, 1.04);
        assert!(between.settle(None).unwrap().starts_with("needs ±0.5%"));
        // On a band's edge (here both bands are 1 %): more data may never settle it.
        let mut edge = v(Figure::CpuPerRequest, 1.01, 0.99, 1.03);
        edge.bands.equivalence = 0.01;
        assert!(edge.settle(None).unwrap().contains("edge"), "{edge}");
        assert_eq!(v(Figure::CpuPerRequest, 1.3, 1.2, 1.4).settle(None), None);
        // Two repetitions far apart (tests/budget.rs on CI, 2026-12-07): 1.05× over t(1) =
        // 12.7 is 0.12×–9.1×. The estimate is 3.9 % past the noise band, not on its edge:
        // the spread alone (1.96 standard errors) is ±0.33 in logs, not ±2.2.
        let se: f64 = 0.17;
        let mut two = v(
            Figure::CpuPerRequest,
            1.05,
            1.05 * (-12.706 * se).exp(),
            1.05 * (12.706 * se).exp(),
        );
        two.ratio.repetitions = 2;
        two.ratio.student = Some((se, 1));
        two.between = Some(0.9);
        let s = two.settle(None).unwrap();
        assert!(s.starts_with("needs ±4%: about 1"), "{s}");
        assert!(s.ends_with(" repetitions of 18 rounds"), "{s}");
        assert!(two.second_stage(2, 1000).is_some_and(|n| n > 100), "{s}");
        // Twice the spread: past a hundred times the data. Read off two starts that is not
        // worth giving up on — a second stage gives it what it may; from three, it would.
        two.ratio.student = Some((2.0 * se, 1));
        let s = two.settle(None).unwrap();
        assert!(
            s.ends_with("more than a hundred times the data it has"),
            "{s}"
        );
        assert_eq!(two.second_stage(2, 1000), Some(1000));
        // Unless no interval could settle it: between bands that leave no room.
        let mut stuck = two.clone();
        stuck.bands.noise = 0.99;
        stuck.bands.equivalence = 0.0001;
        assert_eq!(stuck.second_stage(2, 4), None);
        two.ratio.repetitions = 3;
        two.ratio.student = Some((2.0 * se, 2));
        assert_eq!(two.second_stage(3, 1000), None);
    }

    #[test]
    fn one_fresh_start_proves_nothing_about_the_builds() {
        let mut r = ratio(1.5, 1.3, 1.7);
        r.repetitions = 1;
        let v = Verdict::new(Figure::P99, r, BANDS, None);
        assert_eq!(v.call, Call::Inconclusive);
        assert_eq!(v.p, 1.0);
        assert!(v.to_string().contains("one start"), "{v}");
        assert!(v.settle(None).unwrap().contains("three repetitions"));
        r.repetitions = 2;
        assert_eq!(Verdict::new(Figure::P99, r, BANDS, None).call, Call::Higher);
    }

    #[test]
    fn a_second_stage_also_reaches_for_no_change() {
        // Two equal builds whose estimate wandered to 0.985× between bands of 1 % and 2 %,
        // ±2.4 % over six repetitions (an A/A point of the 24-point calibration, 21:47 UTC):
        // from its estimate, ±0.5 % would settle it — 128 repetitions, out of any reach.
        let mut x = v(Figure::CpuPerRequest, 0.985, 0.963, 1.01);
        x.ratio.repetitions = 6;
        assert_eq!(x.repetitions_to_settle(), Some(128));
        // Were they the same, an interval of ±0.744 × 2 % would land inside the band half
        // the time: (ln(1.01/0.963)/2 / (0.744 ln 1.02))² × 6 = 15.7 → 16; four times in
        // five, ±0.605 × 2 %: 23.8 → 24.
        assert_eq!(x.repetitions_if_no_change(false), Some(16));
        assert_eq!(x.repetitions_if_no_change(true), Some(24));
        assert_eq!(x.second_stage(6, 12), None);
        assert_eq!(x.second_stage(6, 24), Some(24));
        assert_eq!(x.second_stage(6, 20), Some(20));
        assert_eq!(x.second_stage(24, 24), None);
        assert_eq!(x.second_stage(1, 24), Some(24));
        // With room for a thousand, still 24: where the interval holds 1, no change sizes
        // the count, and the estimate that wandered (128 from there) is not read.
        assert_eq!(x.second_stage(6, 1000), Some(24));
        // Its spread between fresh starts: more rounds would not do, repetitions would.
        x.between = Some(0.9);
        let s = x.settle(None).unwrap();
        assert!(
            s.ends_with("about 128 repetitions of 6 rounds; were there no change, about 24 would prove it equal within ±2%"),
            "{s}"
        );
        // An interval that leaves 1 out has ruled no change out: its estimate alone sizes it.
        let mut off = v(Figure::CpuPerRequest, 1.015, 1.003, 1.027);
        off.ratio.repetitions = 6;
        off.between = Some(0.9);
        assert_eq!(off.repetitions_if_no_change(false), None);
        assert!(!off.settle(None).unwrap().contains("no change"));
        // Midway between the bands it needs ±0.49 % (ln 1.015 − ln 1.01), and 0.7 of that
        // would ask 6 × (ln(1.027/1.003)/2 / (0.7 × 0.004938))² = 70.2 → 71; but an
        // interval of half the bands' gap, (ln 1.02 − ln 1.01)/2 = 0.004926, reads
        // *different* or *equivalent* wherever the next estimate lands: 34.6 → 35.
        assert_eq!(off.repetitions_to_settle(), Some(35));
        assert_eq!(off.repetitions_to_settle_surely(), Some(35));
        assert_eq!(off.second_stage(6, 1000), Some(35));
        // Nearer a band's edge, 0.7 of the way there is the wider aim and sizes it.
        let mut nearer = v(Figure::CpuPerRequest, 1.012, 1.0005, 1.0237);
        nearer.ratio.repetitions = 6;
        assert_eq!(nearer.second_stage(6, 1000), Some(26));
        // Centred on 1.00 (±2.6 %), its estimate asked 21 for four times in five; an
        // equivalence has to fit around wherever the next estimate lands, so 28.
        let mut centred = v(Figure::CpuPerRequest, 1.0, 0.975, 1.026);
        centred.ratio.repetitions = 6;
        assert_eq!(centred.repetitions_to_settle_surely(), Some(21));
        assert_eq!(centred.second_stage(6, 100), Some(28));
        // Settled: none.
        assert_eq!(
            v(Figure::CpuPerRequest, 1.0, 0.99, 1.01).second_stage(3, 12),
            None
        );
    }

    #[test]
    fn repetitions_to_settle_follow_the_spread_seen() {
        // ±5 % around 1.00 over 3 repetitions; equal within 2 % needs a 6.1-fold variance
        // cut: about 19 repetitions, whatever share of the spread is between starts.
        let x = v(Figure::CpuPerRequest, 1.0, 1.0 / 1.05, 1.05);
        assert_eq!(x.repetitions_to_settle(), Some(19));
        let mut starts = x.clone();
        starts.between = Some(0.9);
        assert_eq!(starts.repetitions_to_settle(), Some(19));
        // Nearly there: ±2.2 % around 1.00 needs (ln 1.022 / ln 1.02)² × 3 = 3.3 → 4.
        let near = v(Figure::CpuPerRequest, 1.0, 1.0 / 1.022, 1.022);
        assert_eq!(near.repetitions_to_settle(), Some(4));
        assert_eq!(
            v(Figure::CpuPerRequest, 1.3, 1.2, 1.4).repetitions_to_settle(),
            Some(0)
        );
        assert_eq!(
            v(Figure::CpuPerRequest, 1.0, 0.99, 1.01).repetitions_to_settle(),
            Some(0)
        );
        let mut edge = v(Figure::CpuPerRequest, 1.01, 0.99, 1.03);
        edge.bands.equivalence = 0.01;
        assert_eq!(edge.repetitions_to_settle(), None);
        // Resting on Student's t over three repetitions (se 1 %: ±4.4 %), t shrinks as
        // repetitions come: ±2 % at six (t(5) = 2.57 over √6), not the 14 the root of their
        // number alone would say.
        let h = 4.303 * 0.01f64;
        let mut few = x.clone();
        few.ratio.lo = (-h).exp();
        few.ratio.hi = h.exp();
        few.ratio.student = Some((0.01, 2));
        assert_eq!(few.repetitions_to_settle(), Some(6));
        assert!(
            few.settle(Some(4)).unwrap().contains("about 6 repetitions"),
            "{:?}",
            few.settle(Some(4))
        );
        let mut held = v(Figure::CpuPerRequest, 1.03, 1.011, 1.05);
        held.call = Call::Inconclusive;
        held.held_back = true;
        assert_eq!(held.repetitions_to_settle(), Some(6));
        // Four times in five: the half-width aimed at 0.7 of the way to the band's edge,
        // (ln 1.05 / (0.7 ln 1.02))² × 3 = 37.2 → 38 and (ln 1.022 / (0.7 ln 1.02))² × 3 =
        // 7.4 → 8 — about twice the even odds; held back, the same doubling as before.
        assert_eq!(x.repetitions_to_settle_surely(), Some(38));
        assert_eq!(near.repetitions_to_settle_surely(), Some(8));
        assert_eq!(held.repetitions_to_settle_surely(), Some(6));
        assert_eq!(
            v(Figure::CpuPerRequest, 1.3, 1.2, 1.4).repetitions_to_settle_surely(),
            Some(0)
        );
    }
}
