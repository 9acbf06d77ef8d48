//! Paired comparisons: the figure of a contender divided by its baseline's, measured in the
//! same seconds of the machine's life (one *round*: both ran a short slice back to back),
//! pooled over rounds and over fresh-state repetitions.
//!
//! The estimate is the geometric mean of the per-round ratios — trimmed: the tenth of rounds
//! at each end are left out, because a shared machine's hiccups (a neighbour's burst, a
//! migration) hit one slice and not its partner, and a mean of logs is not robust to that
//! (Wilcox, *Introduction to Robust Estimation and Hypothesis Testing*, 4th ed., 2017, §3.4,
//! for the trimmed mean and its bootstrap) — averaged per repetition first so every
//! repetition weighs the same however many rounds it took. The interval comes from
//! a two-stage bootstrap that resamples repetitions, then rounds within each chosen one, so
//! 3 repetitions of 20 rounds are not treated as 60 independent samples and the variation
//! between fresh starts stays in the interval (Davison & Hinkley, *Bootstrap Methods and
//! their Application*, 1997, §3.8 "multistage sampling"; Kalibera & Jones, "Rigorous
//! benchmarking in reasonable time", ISMM 2013, which applies it to benchmark ratios).
//!
//! With few repetitions the interval is at least Student's t over the repetitions' own
//! estimates: a cluster bootstrap of 2 or 3 clusters underestimates their spread, and a
//! calibration of 24-point A/A reports at 2 repetitions found "different" cells in half of
//! them before this floor.
//!
//! The verdict comes from the interval alone: a change is reported only when the whole
//! interval lies outside the noise band around 1 (for a band of 1 %: above 1.01 or below
//! 1/1.01). An interval that contains 1, or reaches into the band, reads `~`: on a shared
//! machine, the band — not α alone — is what keeps an A/A comparison quiet.

use super::notation::{fmt_divisor, fmt_factor, read_ratio};
use crate::rng::SplitMix64;

/// Bootstrap resamples; 2000 puts the 2.5 % and 97.5 % points within a few tenths of a
/// percent of where more resamples would.
const RESAMPLES: usize = 2000;

/// One repetition's rounds: each is (baseline's figure, contender's figure), both positive.
pub type Rounds = Vec<(f64, f64)>;

/// A ratio with its 95 % interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ratio {
    pub ratio: f64,
    pub lo: f64,
    pub hi: f64,
    /// Repetitions it rests on, and their log ratios: pairs of rounds balanced for position
    /// (a round where none could pair counts alone).
    pub repetitions: usize,
    pub rounds: usize,
    /// The Student floor's standard error (log scale) and degrees of freedom: the spread of
    /// the repetitions' (or machines') own estimates. The p-value reads its t tail too — the
    /// interval's normal reading alone would make that tail far too thin at two or three
    /// repetitions (t = 4.3, not 1.96, at 95 %; at the 0.05 % Benjamini–Hochberg can ask of a
    /// hundred verdicts, 31.6 against 3.5). `None` where there is no such floor.
    pub student: Option<(f64, usize)>,
}

/// The two bands a verdict is read against (docs/verdicts.md): a change counts only when the
/// whole interval clears the noise band; two figures are equal when the whole interval lies
/// inside the equivalence band. Shares: 0.01 = 1 %.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bands {
    pub noise: f64,
    pub equivalence: f64,
}

/// What a ratio's interval proves: *different* (higher or lower), *equivalent*, or
/// *inconclusive*.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Call {
    /// Different: the whole interval is above the noise band.
    Higher,
    /// Different: the whole interval is below the noise band.
    Lower,
    /// The whole interval lies inside the equivalence band: no change bigger than the band,
    /// proven (two one-sided tests, each at 2.5 %, read off the same interval).
    Equivalent,
    /// Neither: the data cannot tell. Also every ratio resting on one round (no interval).
    Inconclusive,
}

impl Call {
    /// The verdict's word in tables, JSON and CSV.
    pub fn word(self) -> &'static str {
        match self {
            Call::Higher | Call::Lower => "different",
            Call::Equivalent => "equivalent",
            Call::Inconclusive => "inconclusive",
        }
    }

    /// `higher` or `lower` for a difference, else empty.
    pub fn direction(self) -> &'static str {
        match self {
            Call::Higher => "higher",
            Call::Lower => "lower",
            _ => "",
        }
    }

    pub fn is_different(self) -> bool {
        matches!(self, Call::Higher | Call::Lower)
    }
}

impl Ratio {
    /// What the interval proves against `bands`. A ratio that does not know its error (one
    /// round, a zero-width interval) proves nothing.
    pub fn call(&self, bands: Bands) -> Call {
        if !knows_its_error(self) {
            Call::Inconclusive
        } else if self.lo > 1.0 + bands.noise {
            Call::Higher
        } else if self.hi < 1.0 / (1.0 + bands.noise) {
            Call::Lower
        } else if self.lo >= 1.0 / (1.0 + bands.equivalence) && self.hi <= 1.0 + bands.equivalence {
            Call::Equivalent
        } else {
            Call::Inconclusive
        }
    }

    /// Half the interval's width on the log scale, as a share: 0.02 = about ±2 %.
    pub fn precision(&self) -> f64 {
        ((self.hi / self.lo).ln() / 2.0).exp() - 1.0
    }

    /// The two-sided p-value of "the change lies inside the noise band `noise`", read off the
    /// interval: on each side the distance from the estimate to the interval's end is taken
    /// as 1.96 standard errors (the bootstrap distribution's tail toward the band, as a
    /// normal one), so p < 0.05 exactly when the 95 % interval clears the band — the
    /// interval and the p-value never disagree, and p has no floor at 1/resamples, which
    /// Benjamini–Hochberg over a hundred verdicts needs. 1 when the ratio does not know its
    /// error.
    pub fn p_different(&self, noise: f64) -> f64 {
        if !knows_its_error(self) {
            return 1.0;
        }
        let (e, d) = (self.ratio.ln(), (1.0 + noise).ln());
        let se = |half: f64| (half / 1.959_964).max(1e-12);
        let up = super::mannwhitney::normal_sf((e - d) / se(e - self.lo.ln()));
        let down = super::mannwhitney::normal_sf((-d - e) / se(self.hi.ln() - e));
        let normal = (2.0 * up.min(down)).min(1.0);
        // Where the interval is at least Student's t over the repetitions, so is the
        // p-value at every level: a different verdict at level α needs both intervals at
        // that level clear of the band.
        let student = match self.student {
            Some((se, df)) if se > 0.0 && df >= 1 => {
                let up = student_sf((e - d) / se, df);
                let down = student_sf((-d - e) / se, df);
                (2.0 * up.min(down)).min(1.0)
            }
            _ => 0.0,
        };
        normal.max(student)
    }

    /// `1.34× (1.29×–1.40×)`, in one notation: all three as divisors when the estimate is
    /// one (below 0.5) and the upper end is below 1 (`÷2.1 (÷2.2–÷1.96)`), else all as
    /// factors (`0.528× (0.497×–0.554×)`; `0.450× (0.400×–1.20×)`, never `÷0.83`).
    pub fn span(&self) -> String {
        self.span_against(|_| true, |_| true)
    }

    /// [`Ratio::span`], each end written with the digits it needs to read on the side of a
    /// band it is on: `lo_in` and `hi_in` say which side that is (`1.0204` is `1.0204×`, not
    /// `1.02×`, against a band that ends at 1.02).
    pub fn span_against(&self, lo_in: impl Fn(f64) -> bool, hi_in: impl Fn(f64) -> bool) -> String {
        self.span_in(false, lo_in, hi_in)
    }

    /// Whether [`Ratio::span`] writes it as divisors (`÷2.1 (÷2.2–÷1.96)`).
    pub fn reads_as_divisor(&self) -> bool {
        self.ratio > 0.0 && self.ratio < 0.5 && self.hi < 1.0
    }

    /// [`Ratio::span_against`], as factors whatever its size when `factors` says so: a
    /// column whose other cells cannot be divisors keeps one notation.
    pub fn span_in(
        &self,
        factors: bool,
        lo_in: impl Fn(f64) -> bool,
        hi_in: impl Fn(f64) -> bool,
    ) -> String {
        let divisor = !factors && self.reads_as_divisor();
        let f = if divisor { fmt_divisor } else { fmt_factor };
        let end = |x: f64, inside: &dyn Fn(f64) -> bool| {
            let mut text = f(x);
            for digits in 3..=6 {
                if !x.is_finite() || read_ratio(&text).is_none_or(|r| inside(r) == inside(x)) {
                    break;
                }
                text = match divisor {
                    true => format!("÷{:.digits$}", 1.0 / x),
                    false => format!("{x:.digits$}×"),
                };
            }
            text
        };
        format!(
            "{} ({}–{})",
            f(self.ratio),
            end(self.lo, &lo_in),
            end(self.hi, &hi_in)
        )
    }
}

/// Which of `p` Benjamini–Hochberg rejects at false discovery rate `q`: the largest k with
/// p₍ₖ₎ ≤ k·q/m, and every p up to it (Benjamini & Hochberg, "Controlling the false discovery
/// rate", *J. R. Stat. Soc. B* 57, 1995; valid under the positive dependence of figures
/// measured on the same slices, Benjamini & Yekutieli, *Ann. Statist.* 29, 2001).
pub fn benjamini_hochberg(p: &[f64], q: f64) -> Vec<bool> {
    let m = p.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| p[a].total_cmp(&p[b]));
    let k = (1..=m)
        .rev()
        .find(|&k| p[order[k - 1]] <= k as f64 * q / m as f64)
        .unwrap_or(0);
    let mut out = vec![false; m];
    for &i in &order[..k] {
        out[i] = true;
    }
    out
}

/// Each repetition's log ratios contender / baseline, over the rounds where both figures are
/// positive; repetitions with fewer than `at_least` such rounds are left out.
fn log_ratios(reps: &[Rounds], at_least: usize) -> Vec<Vec<f64>> {
    reps.iter()
        .map(|r| {
            r.iter()
                .filter(|(b, c)| *b > 0.0 && *c > 0.0 && b.is_finite() && c.is_finite())
                .map(|(b, c)| (c / b).ln())
                .collect::<Vec<f64>>()
        })
        .filter(|r| r.len() >= at_least)
        .collect()
}

/// The pooled ratio contender / baseline over `reps` (each a repetition's rounds); `None`
/// when no round has two positive figures.
pub fn ratio(reps: &[Rounds], seed: u64) -> Option<Ratio> {
    let logs = log_ratios(reps, 1);
    if logs.is_empty() {
        return None;
    }
    // Each repetition's trimmed mean log ratio, then their mean: every repetition weighs
    // the same.
    let point = logs.iter().map(|r| trimmed_mean(r)).sum::<f64>() / logs.len() as f64;
    let mut rng = SplitMix64(seed ^ 0x6261_6b65_6f66_6621);
    let (j, mut draws) = (logs.len() as u64, Vec::with_capacity(RESAMPLES));
    for _ in 0..RESAMPLES {
        let mut total = 0.0;
        for _ in 0..logs.len() {
            let r = &logs[rng.below(j) as usize];
            let k = r.len() as u64;
            let draw: Vec<f64> = (0..r.len()).map(|_| r[rng.below(k) as usize]).collect();
            total += trimmed_mean(&draw);
        }
        draws.push(total / logs.len() as f64);
    }
    draws.sort_by(f64::total_cmp);
    let at = |q: f64| draws[((q * (RESAMPLES - 1) as f64).round() as usize).min(RESAMPLES - 1)];
    let (mut lo, mut hi) = (at(0.025).min(point), at(0.975).max(point));
    // Few repetitions: the bootstrap cannot see how much fresh starts differ (resampling 2
    // or 3 of them, it takes their spread for smaller than it is), so the interval is at
    // least Student's t over the repetitions' own estimates — exact for normal repetition
    // means however few, and what an instance-to-instance difference needs.
    let j = logs.len();
    let mut student = None;
    if j >= 2 {
        let means: Vec<f64> = logs.iter().map(|r| trimmed_mean(r)).collect();
        let sd = (means.iter().map(|m| (m - point).powi(2)).sum::<f64>() / (j - 1) as f64).sqrt();
        let se = sd / (j as f64).sqrt();
        let half = t975(j - 1) * se;
        lo = lo.min(point - half);
        hi = hi.max(point + half);
        student = Some((se, j - 1));
    }
    Some(Ratio {
        ratio: point.exp(),
        lo: lo.exp(),
        hi: hi.exp(),
        repetitions: j,
        rounds: logs.iter().map(Vec::len).sum(),
        student,
    })
}

/// The share of a pooled ratio's variance that comes from differences between repetitions
/// (fresh starts) rather than between rounds: one-way random-effects variance components of
/// the per-round log ratios, by the method of moments (between-repetition variance of the
/// means less what the rounds' own spread explains). More rounds shrink only the rest.
/// `None` below two repetitions with two usable rounds each.
pub fn between_share(reps: &[Rounds]) -> Option<f64> {
    let logs = log_ratios(reps, 2);
    if logs.len() < 2 {
        return None;
    }
    let (mut ss, mut df) = (0.0, 0.0);
    for r in &logs {
        let m = mean(r);
        ss += r.iter().map(|x| (x - m).powi(2)).sum::<f64>();
        df += (r.len() - 1) as f64;
    }
    let within = ss / df;
    let per_rep = logs.iter().map(Vec::len).sum::<usize>() as f64 / logs.len() as f64;
    let means: Vec<f64> = logs.iter().map(|r| mean(r)).collect();
    let mm = mean(&means);
    let var_means = means.iter().map(|x| (x - mm).powi(2)).sum::<f64>() / (means.len() - 1) as f64;
    let between = (var_means - within / per_rep).max(0.0);
    let total = between + within / per_rep;
    Some(if total > 0.0 { between / total } else { 0.0 })
}

/// Whether a ratio's interval says how precise it is: it rests on two rounds or more.
pub fn knows_its_error(r: &Ratio) -> bool {
    r.rounds >= 2 && r.hi > r.lo
}

/// How much wider the report's interval over `j` repetitions is than one repetition's own
/// 95 % t-interval over `n` rounds, were fresh starts to agree: the report's interval is at
/// least Student's t over the repetitions' estimates (see [`ratio`]), t(j − 1)·s/√j, where
/// one repetition's is t(n − 1)·s. Below 1 from five repetitions on (each repetition needs
/// less), above it at two and three (t = 12.7 and 4.3). 1 for one repetition.
pub fn across(j: usize, n: usize) -> f64 {
    if j < 2 || n < 2 {
        return 1.0;
    }
    t975(j - 1) / (t975(n - 1) * (j as f64).sqrt())
}

/// Within one repetition: the half-width (as a share, 0.02 = ±2 %) of a 95 % t-interval on
/// the mean log ratio of its rounds so far, widened by `across` (what the report's interval
/// over the plan's repetitions makes of it) — what adaptive rounds stop on. `None` before
/// two rounds.
pub fn round_precision(rounds: &[(f64, f64)], across: f64) -> Option<f64> {
    round_interval(rounds).map(|(_, half)| (half * across).exp() - 1.0)
}

/// Within one repetition: whether its rounds so far decide the figure — their 95 %
/// t-interval, widened by `across`, clears the noise band (different) or lies inside the
/// equivalence band (equivalent). `false` before two rounds.
pub fn rounds_decide(rounds: &[(f64, f64)], bands: Bands, across: f64) -> bool {
    let Some((m, half)) = round_interval(rounds) else {
        return false;
    };
    let half = half * across;
    let (noise, equal) = ((1.0 + bands.noise).ln(), (1.0 + bands.equivalence).ln());
    m - half > noise || m + half < -noise || m.abs() + half <= equal
}

/// The mean log ratio of `rounds` and the half-width of its 95 % t-interval.
fn round_interval(rounds: &[(f64, f64)]) -> Option<(f64, f64)> {
    let logs: Vec<f64> = rounds
        .iter()
        .filter(|(b, c)| *b > 0.0 && *c > 0.0)
        .map(|(b, c)| (c / b).ln())
        .collect();
    let n = logs.len();
    if n < 2 {
        return None;
    }
    let m = mean(&logs);
    let sd = (logs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt();
    Some((m, t975(n - 1) * sd / (n as f64).sqrt()))
}

pub(super) fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

/// The mean of `v` without its lowest and highest tenth (none left out below 10 values).
pub fn trimmed_mean(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let cut = s.len() / 10;
    mean(&s[cut..s.len() - cut])
}

/// P(T > t) for Student's t with `df` degrees of freedom, exact for whole degrees of freedom
/// (Abramowitz & Stegun 26.7.3 and 26.7.4: a finite series in θ = atan(t/√df)).
pub fn student_sf(t: f64, df: usize) -> f64 {
    if t.is_nan() || df == 0 {
        return 0.5;
    }
    if t < 0.0 {
        return 1.0 - student_sf(-t, df);
    }
    if t.is_infinite() {
        return 0.0;
    }
    let theta = (t / (df as f64).sqrt()).atan();
    let (s, c2) = (theta.sin(), theta.cos().powi(2));
    // A = P(|T| ≤ t).
    let a = if df % 2 == 1 {
        let mut sum = 0.0;
        if df > 1 {
            let (mut term, mut k) = (1.0, 1);
            sum = 1.0;
            while k + 2 < df {
                term *= c2 * (k + 1) as f64 / (k + 2) as f64;
                sum += term;
                k += 2;
            }
        }
        2.0 / std::f64::consts::PI * (theta + s * theta.cos() * sum)
    } else {
        let (mut term, mut sum, mut k) = (1.0, 1.0, 1);
        while k + 1 < df {
            term *= c2 * k as f64 / (k + 1) as f64;
            sum += term;
            k += 2;
        }
        s * sum
    };
    ((1.0 - a) / 2.0).clamp(0.0, 0.5)
}

/// The 97.5 % point of Student's t with `df` degrees of freedom (tables to 30, then the
/// Cornish-Fisher expansion around the normal's 1.96; both within 0.1 %).
pub fn t975(df: usize) -> f64 {
    const T: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    match df {
        0 => f64::INFINITY,
        1..=30 => T[df - 1],
        _ => {
            let (z, n) = (1.959_964f64, df as f64);
            z + (z.powi(3) + z) / (4.0 * n)
                + (5.0 * z.powi(5) + 16.0 * z.powi(3) + 3.0 * z) / (96.0 * n * n)
        }
    }
}

/// The order contenders run in, in round `round` (from 0): a Williams design, so over its
/// rows every contender runs in every position equally often and follows every other
/// equally often (Williams, "Experimental designs balanced for the estimation of residual
/// effects of treatments", Aust. J. Sci. Res. 1949). For two contenders: A B, B A, A B, …
/// (A B B A A B …). Odd counts need twice the rows: the square and its mirror.
pub fn williams(n: usize, round: usize) -> Vec<usize> {
    if n <= 1 {
        return (0..n).collect();
    }
    // First row 0, 1, n-1, 2, n-2, …; row r adds r to each (mod n).
    let mut first = Vec::with_capacity(n);
    let (mut lo, mut hi) = (0usize, n);
    for i in 0..n {
        if i % 2 == 0 {
            first.push(lo);
            lo += 1;
        } else {
            hi -= 1;
            first.push(hi);
        }
    }
    let rows = if n % 2 == 0 { n } else { 2 * n };
    let r = round % rows;
    let mut row: Vec<usize> = first.iter().map(|x| (x + r) % n).collect();
    if r >= n {
        row.reverse();
    }
    row
}

#[cfg(test)]
mod tests {
    use super::*;

    const BANDS: Bands = Bands {
        noise: 0.01,
        equivalence: 0.02,
    };

    fn rounds(pairs: &[(f64, f64)]) -> Rounds {
        pairs.to_vec()
    }

    #[test]
    fn a_steady_ratio_is_found_with_a_narrow_interval() {
        // The machine's speed swings 2x between rounds; the contender is always 10 % dearer.
        let reps: Vec<Rounds> = (0..3)
            .map(|j| {
                (0..12)
                    .map(|k| {
                        let speed = 1.0 + ((j * 12 + k) % 5) as f64 * 0.25;
                        let wobble = 1.0 + ((k * 7 + j) % 3) as f64 * 0.002;
                        (10.0 * speed, 11.0 * speed * wobble)
                    })
                    .collect()
            })
            .collect();
        let r = ratio(&reps, 1).unwrap();
        assert!((r.ratio - 1.102).abs() < 0.005, "{r:?}");
        assert!(r.lo > 1.09 && r.hi < 1.115, "{r:?}");
        assert_eq!((r.repetitions, r.rounds), (3, 36));
        assert_eq!(r.call(BANDS), Call::Higher);
        assert!(r.precision() < 0.01, "{r:?}");
    }

    #[test]
    fn an_a_a_comparison_reads_the_same() {
        let mut rng = SplitMix64(7);
        let reps: Vec<Rounds> = (0..3)
            .map(|_| {
                (0..10)
                    .map(|_| {
                        let speed = 0.5 + rng.float();
                        (
                            speed * (1.0 + 0.03 * rng.float()),
                            speed * (1.0 + 0.03 * rng.float()),
                        )
                    })
                    .collect()
            })
            .collect();
        let r = ratio(&reps, 1).unwrap();
        assert!(r.lo < 1.0 && r.hi > 1.0, "{r:?}");
        assert!(!r.call(BANDS).is_different(), "{r:?}");
    }

    #[test]
    fn repetitions_that_disagree_widen_the_interval() {
        // Each repetition is tight on its own, but the fresh starts disagree by 10 %: the
        // interval must show that, not the rounds' small spread.
        let rep = |level: f64| rounds(&[(1.0, level), (1.0, level * 1.001), (1.0, level * 0.999)]);
        let tight = ratio(&[rep(1.05), rep(1.05), rep(1.05)], 3).unwrap();
        let spread = ratio(&[rep(1.0), rep(1.05), rep(1.10)], 3).unwrap();
        assert!(tight.precision() < 0.002, "{tight:?}");
        assert!(spread.lo < 1.02 && spread.hi > 1.08, "{spread:?}");
        assert_eq!(spread.call(BANDS), Call::Inconclusive);
    }

    #[test]
    fn two_fresh_starts_that_disagree_prove_nothing() {
        // Two repetitions, each steady on its own (+3 % and +5 %): resampling two cannot
        // tell how much a third start would differ, so the interval is Student's t on two
        // estimates (t = 12.7), not the bootstrap's [1.03, 1.05].
        let rep = |level: f64| -> Rounds {
            (0..20)
                .map(|k| (1.0, level * (1.0 + 0.001 * (k % 3) as f64)))
                .collect()
        };
        let r = ratio(&[rep(1.03), rep(1.05)], 1).unwrap();
        assert!(r.lo < 1.0 && r.hi > 1.1, "{r:?}");
        assert_eq!(r.call(BANDS), Call::Inconclusive);
        // Starts that agree keep a narrow interval.
        let r = ratio(&[rep(1.05), rep(1.05), rep(1.05)], 1).unwrap();
        assert!(r.precision() < 0.005, "{r:?}");
        assert_eq!(r.call(BANDS), Call::Higher);
    }

    #[test]
    fn lower_is_found_and_nothing_is_none() {
        let r = ratio(&[rounds(&[(2.0, 1.0), (4.0, 2.1), (3.0, 1.4)])], 0).unwrap();
        assert_eq!(r.call(BANDS), Call::Lower);
        assert!(ratio(&[rounds(&[(0.0, 1.0)])], 0).is_none());
        assert!(ratio(&[], 0).is_none());
        // The same data, the same seed: the same interval.
        let a = ratio(&[rounds(&[(2.0, 1.0), (4.0, 2.1)])], 5);
        assert_eq!(a, ratio(&[rounds(&[(2.0, 1.0), (4.0, 2.1)])], 5));
    }

    #[test]
    fn one_hiccup_does_not_move_the_estimate() {
        let mut r: Rounds = (0..20)
            .map(|k| (1.0, 1.05 + 0.001 * (k % 3) as f64))
            .collect();
        let clean = ratio(&[r.clone()], 2).unwrap();
        r[7].1 = 1.6; // one slice caught a neighbour's burst
        r[13].0 = 1.5;
        let hit = ratio(&[r], 2).unwrap();
        assert!(
            (hit.ratio - clean.ratio).abs() < 0.003,
            "{hit:?} vs {clean:?}"
        );
        assert_eq!(hit.call(BANDS), Call::Higher, "{hit:?}");
        assert_eq!(trimmed_mean(&[1.0, 2.0, 3.0]), 2.0);
        let ten: Vec<f64> = (0..10).map(f64::from).chain([1000.0]).collect();
        assert_eq!(trimmed_mean(&ten), 5.0);
    }

    #[test]
    fn three_verdicts_read_off_one_interval() {
        let r = |ratio, lo, hi, rounds| Ratio {
            ratio,
            lo,
            hi,
            repetitions: 2,
            rounds,
            student: None,
        };
        assert_eq!(r(1.05, 1.02, 1.08, 20).call(BANDS), Call::Higher);
        assert_eq!(r(0.95, 0.93, 0.98, 20).call(BANDS), Call::Lower);
        // Inside ±2 %: proven equal within the band.
        assert_eq!(r(1.0, 0.99, 1.012, 20).call(BANDS), Call::Equivalent);
        // Straddling the band's edge, or too wide: cannot tell.
        assert_eq!(r(1.01, 0.995, 1.03, 20).call(BANDS), Call::Inconclusive);
        assert_eq!(r(1.0, 0.95, 1.05, 20).call(BANDS), Call::Inconclusive);
        // Clear of 1 but inside the noise band: not a change worth the name, nor proven equal
        // when it reaches past the equivalence band.
        assert_eq!(r(1.008, 1.004, 1.012, 20).call(BANDS), Call::Equivalent);
        // One round, or a zero-width interval, is no interval: nothing proven either way.
        assert_eq!(r(0.93, 0.93, 0.93, 1).call(BANDS), Call::Inconclusive);
        assert_eq!(r(0.93, 0.93, 0.93, 12).call(BANDS), Call::Inconclusive);
        assert_eq!(r(1.0, 1.0, 1.0, 1).call(BANDS), Call::Inconclusive);
        assert_eq!(Call::Lower.word(), "different");
        assert_eq!(Call::Equivalent.direction(), "");
    }

    #[test]
    fn the_p_value_agrees_with_the_interval() {
        let r = |ratio: f64, lo: f64, hi: f64| Ratio {
            ratio,
            lo,
            hi,
            repetitions: 3,
            rounds: 30,
            student: None,
        };
        // The interval's end exactly on the band's edge: p = 0.05.
        let edge = r(1.05, 1.01, 1.09).p_different(0.01);
        assert!((edge - 0.05).abs() < 1e-6, "{edge}");
        let edge = r(0.95, 0.90, 1.0 / 1.01).p_different(0.01);
        assert!((edge - 0.05).abs() < 1e-6, "{edge}");
        // Clear of the band: below 0.05, the clearer the smaller; inside it: large.
        let clear = r(1.10, 1.08, 1.12).p_different(0.01);
        assert!(clear < 1e-6, "{clear}");
        assert!(r(1.05, 1.02, 1.08).p_different(0.01) < 0.05);
        assert!(r(1.01, 0.99, 1.03).p_different(0.01) > 0.5);
        assert_eq!(r(1.2, 1.2, 1.2).p_different(0.01), 1.0);
    }

    #[test]
    fn benjamini_hochberg_rejects_up_to_the_largest_p_under_its_line() {
        // m = 5, q = 0.05: lines 0.01, 0.02, 0.03, 0.04, 0.05. p₍₃₎ = 0.029 ≤ 0.03 carries
        // p₍₂₎ = 0.021 (above its own line 0.02) along.
        let p = [0.029, 0.2, 0.004, 0.021, 0.9];
        assert_eq!(
            benjamini_hochberg(&p, 0.05),
            [true, false, true, true, false]
        );
        assert_eq!(benjamini_hochberg(&[0.04, 0.5], 0.05), [false, false]);
        assert_eq!(benjamini_hochberg(&[0.04], 0.05), [true]);
        assert!(benjamini_hochberg(&[], 0.05).is_empty());
    }

    #[test]
    fn an_interval_keeps_one_notation() {
        let r = |ratio, lo, hi| Ratio {
            ratio,
            lo,
            hi,
            repetitions: 3,
            rounds: 30,
            student: None,
        };
        assert_eq!(r(0.528, 0.497, 0.554).span(), "0.528× (0.497×–0.554×)");
        assert_eq!(r(0.476, 0.455, 0.511).span(), "÷2.1 (÷2.2–÷1.96)");
        assert_eq!(r(1.344, 1.29, 1.40).span(), "1.34× (1.29×–1.40×)");
        assert_eq!(r(441.0, 414.0, 479.0).span(), "441× (414×–479×)");
        assert_eq!(r(1.9, 1.8, 2.1).span(), "1.90× (1.80×–2.1×)");
        // A small estimate whose interval reaches past 1: factors, not `÷2.2 (÷2.5–÷0.83)`.
        assert_eq!(r(0.45, 0.40, 1.2).span(), "0.450× (0.400×–1.20×)");
        // And a column that holds it writes its other small ratios as factors too.
        let any = |_: f64| true;
        assert_eq!(
            r(0.101, 0.08, 0.12).span_in(true, any, any),
            "0.101× (0.080×–0.120×)"
        );
        // Against a band of ±2 %: an end just past it is not rounded onto it.
        let band = |x: f64| (1.0 / 1.02..=1.02).contains(&x);
        assert_eq!(
            r(1.01, 0.998, 1.0204).span_against(band, band),
            "1.01× (0.998×–1.0204×)"
        );
        assert_eq!(
            r(1.0, 0.98031, 1.0196).span_against(band, band),
            "1.00× (0.980×–1.02×)"
        );
        assert_eq!(
            r(0.99, 0.98042, 1.01).span_against(band, band),
            "0.990× (0.9804×–1.01×)"
        );
    }

    #[test]
    fn a_repetition_decides_when_its_interval_clears_a_band() {
        let at =
            |logs: &[f64]| -> Vec<(f64, f64)> { logs.iter().map(|l| (1.0, l.exp())).collect() };
        // +10 % steady: different.
        assert!(rounds_decide(&at(&[0.1, 0.1, 0.101, 0.099]), BANDS, 1.0));
        // Within ±0.2 % of 1: equal within 2 %.
        assert!(rounds_decide(
            &at(&[0.002, -0.002, 0.001, -0.001]),
            BANDS,
            1.0
        ));
        // ±5 % spread around +1.5 %: neither yet.
        assert!(!rounds_decide(
            &at(&[0.065, -0.035, 0.065, -0.035]),
            BANDS,
            1.0
        ));
        assert!(!rounds_decide(&at(&[0.1]), BANDS, 1.0));
        // Within ±1.2 % of 1 (sd 1.4 %, n 4: ±2.2 % alone): not yet equal within 2 % for
        // one repetition, but equal as five repetitions of such rounds would read it.
        let wide = at(&[0.012, -0.012, 0.012, -0.012]);
        assert!(!rounds_decide(&wide, BANDS, 1.0));
        assert!(rounds_decide(&wide, BANDS, across(5, 4)));
        // And a +10 % (±22 % a round, 30 rounds) that one repetition proves, three
        // repetitions of such rounds do not yet.
        let logs: Vec<f64> = (0..30)
            .map(|k| if k % 2 == 0 { 0.32 } else { -0.12 })
            .collect();
        let spread = at(&logs);
        assert!(rounds_decide(&spread, BANDS, 1.0));
        assert!(!rounds_decide(&spread, BANDS, across(3, 30)));
    }

    #[test]
    fn student_tails_match_scipy() {
        // scipy.stats.t.sf(t, df), SciPy 1.x.
        let cases = [
            (0.5, 1, 0.35241638234956674),
            (2.0, 1, 0.14758361765043326),
            (7.7, 2, 0.00822559813808545),
            (3.0, 2, 0.04773298313335456),
            (2.5, 3, 0.04385332350403278),
            (4.0, 4, 0.008065044950046273),
            (1.0, 5, 0.18160873382456144),
            (3.5, 9, 0.0033617578815294796),
            (2.0, 29, 0.027471818591483586),
            (5.0, 200, 6.250990638857704e-07),
        ];
        for (t, df, want) in cases {
            let got = student_sf(t, df);
            assert!(
                (got - want).abs() <= 1e-9 * want.max(1e-3),
                "t={t} df={df}: {got} vs {want}"
            );
            assert!((student_sf(-t, df) - (1.0 - want)).abs() < 1e-9);
        }
        assert!((student_sf(t975(4), 4) - 0.025).abs() < 1e-4);
    }

    #[test]
    fn a_p_value_over_few_repetitions_reads_the_t_tail() {
        // Three repetitions agreeing on +7 % within ±0.93 % (their standard error): the 95 %
        // interval (t = 4.3) is +3 %…+11 %, clear of a 1 % band, so p < 0.05 — but not the
        // 0.0003 the interval's normal reading would give (z = 2.9): t(2) = 6.5 leaves 0.023.
        let se = 0.0093;
        let half = t975(2) * se;
        let e = 1.07f64.ln();
        let r = Ratio {
            ratio: e.exp(),
            lo: (e - half).exp(),
            hi: (e + half).exp(),
            repetitions: 3,
            rounds: 360,
            student: Some((se, 2)),
        };
        let p = r.p_different(0.01);
        let t = (e - 1.01f64.ln()) / se;
        assert!((p - 2.0 * student_sf(t, 2)).abs() < 1e-12, "{p}");
        assert!(p > 0.01 && p < 0.05, "{p}");
        let normal = Ratio { student: None, ..r }.p_different(0.01);
        assert!(normal < 0.005, "{normal}");
        // So Benjamini–Hochberg over a 96-verdict report lets it through no more.
        let mut ps = vec![0.5; 95];
        ps.push(p);
        assert!(!benjamini_hochberg(&ps, 0.05)[95]);
    }

    #[test]
    fn the_report_over_few_repetitions_needs_more_of_each() {
        // Student's t over the repetitions against one repetition's own t.
        assert_eq!(across(1, 30), 1.0);
        assert_eq!(across(5, 1), 1.0);
        let two = across(2, 30);
        assert!((two - 12.706 / (2.045 * 2f64.sqrt())).abs() < 1e-3, "{two}");
        assert!(across(3, 30) > 1.0 && across(3, 30) < two);
        assert!(across(5, 30) < 1.0, "{}", across(5, 30));
        assert!(across(10, 30) < across(5, 30));
    }

    #[test]
    fn the_spread_between_fresh_starts_is_told_from_the_rounds() {
        let wobble = |level: f64| -> Rounds {
            (0..10)
                .map(|k| (1.0, level * if k % 2 == 0 { 1.01 } else { 0.99 }))
                .collect()
        };
        // Repetitions that agree: the spread is all rounds.
        let same = between_share(&[wobble(1.0), wobble(1.0), wobble(1.0)]).unwrap();
        assert!(same < 0.01, "{same}");
        // Repetitions 10 % apart, rounds tight: the spread is all between starts.
        let apart = between_share(&[wobble(1.0), wobble(1.1), wobble(1.2)]).unwrap();
        assert!(apart > 0.9, "{apart}");
        assert_eq!(between_share(&[wobble(1.0)]), None);
    }

    #[test]
    fn round_precision_is_a_t_interval() {
        assert_eq!(round_precision(&[(1.0, 1.1)], 1.0), None);
        let p = round_precision(&[(1.0, 1.1), (1.0, 1.1), (1.0, 1.1)], 1.0).unwrap();
        assert!(p.abs() < 1e-12, "{p}");
        // log ratios +/- 0.01 around 0: sd 0.01, n = 4, t = 3.182 → ±1.6 %.
        let p = round_precision(
            &[
                (1.0, 0.01f64.exp()),
                (1.0, (-0.01f64).exp()),
                (1.0, 0.01f64.exp()),
                (1.0, (-0.01f64).exp()),
            ],
            1.0,
        )
        .unwrap();
        assert!(
            (p - (3.182f64 * 0.011_547 / 2.0).exp() + 1.0).abs() < 1e-4,
            "{p}"
        );
        // Widened as the report over two repetitions would read it (t(1) = 12.7).
        let two = round_precision(
            &[
                (1.0, 0.01f64.exp()),
                (1.0, (-0.01f64).exp()),
                (1.0, 0.01f64.exp()),
                (1.0, (-0.01f64).exp()),
            ],
            across(2, 4),
        )
        .unwrap();
        assert!(two > 2.0 * p, "{two} {p}");
        assert!((t975(1000) - 1.962).abs() < 0.001);
        assert!((t975(30) - 2.042).abs() < 1e-9);
        assert!((t975(40) - 2.021).abs() < 0.001);
    }

    #[test]
    fn williams_rows_balance_position_and_order() {
        assert_eq!(williams(2, 0), [0, 1]);
        assert_eq!(williams(2, 1), [1, 0]);
        assert_eq!(williams(2, 2), [0, 1]);
        for n in 2..=5 {
            let rows = if n % 2 == 0 { n } else { 2 * n };
            let mut position = vec![vec![0; n]; n];
            let mut follows = vec![vec![0; n]; n];
            for r in 0..rows {
                let row = williams(n, r);
                let mut sorted = row.clone();
                sorted.sort();
                assert_eq!(sorted, (0..n).collect::<Vec<_>>(), "n={n} row {r}");
                for (p, &c) in row.iter().enumerate() {
                    position[c][p] += 1;
                }
                for w in row.windows(2) {
                    follows[w[0]][w[1]] += 1;
                }
            }
            let per = rows / n;
            assert!(
                position.iter().flatten().all(|&x| x == per),
                "n={n} {position:?}"
            );
            for (a, row) in follows.iter().enumerate() {
                for (b, &x) in row.iter().enumerate() {
                    if a != b {
                        assert_eq!(x, rows * (n - 1) / (n * (n - 1)), "n={n} {a}->{b}");
                    }
                }
            }
        }
    }
}
