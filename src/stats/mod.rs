//! Pure statistics for comparing runs: medians with order-statistic confidence intervals,
//! the Mann-Whitney U test, deltas against a baseline with their verdicts, and geometric
//! means. No I/O; every input invariant is checked once, in [`Sample::new`].

pub mod machines;
mod mannwhitney;
mod median;
pub mod notation;
pub mod paired;
pub mod slope;

pub use mannwhitney::{mann_whitney_u, min_two_sided_p, UTest};
pub use median::{median_ci, MedianCi};

/// A non-empty set of finite observations, kept sorted.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    sorted: Vec<f64>,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StatsError {
    #[error("a sample needs at least one value")]
    Empty,
    #[error("a sample value is not a finite number: {0}")]
    NotFinite(f64),
    #[error("a confidence interval of the median at {confidence}% needs at least {needed} values (have {have})")]
    NeedsMore {
        confidence: f64,
        needed: usize,
        have: usize,
    },
}

impl Sample {
    pub fn new(mut values: Vec<f64>) -> Result<Sample, StatsError> {
        if values.is_empty() {
            return Err(StatsError::Empty);
        }
        if let Some(&bad) = values.iter().find(|v| !v.is_finite()) {
            return Err(StatsError::NotFinite(bad));
        }
        values.sort_by(f64::total_cmp);
        Ok(Sample { sorted: values })
    }

    pub fn len(&self) -> usize {
        self.sorted.len()
    }

    /// Always false: [`Sample::new`] refuses an empty sample.
    pub fn is_empty(&self) -> bool {
        false
    }

    pub fn sorted(&self) -> &[f64] {
        &self.sorted
    }

    pub fn min(&self) -> f64 {
        self.sorted[0]
    }

    pub fn max(&self) -> f64 {
        self.sorted[self.sorted.len() - 1]
    }

    /// The median (mean of the two middle values for an even count).
    pub fn median(&self) -> f64 {
        let n = self.sorted.len();
        if n % 2 == 1 {
            self.sorted[n / 2]
        } else {
            (self.sorted[n / 2 - 1] + self.sorted[n / 2]) / 2.0
        }
    }
}

/// Which way is good for a metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    LowerIsBetter,
    HigherIsBetter,
}

impl Direction {
    /// The usual direction for a unit: rates (`…/s`, `ops`, `MB/s`) are better higher;
    /// times, bytes and counts per operation are better lower.
    pub fn for_unit(unit: &str) -> Direction {
        let u = unit.to_ascii_lowercase();
        if u.ends_with("/s")
            || u.ends_with("/sec")
            || u.starts_with("ops")
            || u == "qps"
            || u == "rps"
        {
            Direction::HigherIsBetter
        } else {
            Direction::LowerIsBetter
        }
    }
}

/// What a comparison says about new against old.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Better,
    Worse,
    /// Significant, but smaller than the noise band.
    WithinNoise,
    /// Not significant at α (`~`).
    NoChange,
    /// These sample sizes cannot reach significance at α at all (3 vs 3 never can).
    Underpowered,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Comparison {
    pub old_median: f64,
    pub new_median: f64,
    /// (new − old) / old in percent; `None` when old is 0.
    pub delta_pct: Option<f64>,
    pub p: f64,
    pub verdict: Verdict,
}

/// Settings of a comparison: significance level and noise band (both fractions).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Thresholds {
    pub alpha: f64,
    pub noise: f64,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            alpha: 0.05,
            noise: 0.01,
        }
    }
}

/// Compares `new` against `old`: delta of medians, two-sided Mann-Whitney U, verdict.
pub fn compare(old: &Sample, new: &Sample, direction: Direction, t: Thresholds) -> Comparison {
    let (om, nm) = (old.median(), new.median());
    let delta = (om != 0.0).then(|| (nm - om) / om.abs() * 100.0);
    let u = mann_whitney_u(old, new);
    let verdict = if min_two_sided_p(old.len(), new.len()) > t.alpha {
        Verdict::Underpowered
    } else if u.p > t.alpha {
        Verdict::NoChange
    } else if delta.is_some_and(|d| d.abs() < t.noise * 100.0) {
        Verdict::WithinNoise
    } else {
        let up = nm > om;
        match (direction, up) {
            (Direction::HigherIsBetter, true) | (Direction::LowerIsBetter, false) => {
                Verdict::Better
            }
            _ => Verdict::Worse,
        }
    };
    Comparison {
        old_median: om,
        new_median: nm,
        delta_pct: delta,
        p: u.p,
        verdict,
    }
}

/// Geometric mean of positive ratios (new/old over all comparable metrics); `None` when
/// there is none or one is not positive.
pub fn geomean(ratios: &[f64]) -> Option<f64> {
    if ratios.is_empty() || ratios.iter().any(|r| !(r.is_finite() && *r > 0.0)) {
        return None;
    }
    Some((ratios.iter().map(|r| r.ln()).sum::<f64>() / ratios.len() as f64).exp())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix64 as Rng;

    fn s(v: &[f64]) -> Sample {
        Sample::new(v.to_vec()).unwrap()
    }

    #[test]
    fn samples_reject_empty_and_nan() {
        assert_eq!(Sample::new(vec![]), Err(StatsError::Empty));
        assert!(matches!(
            Sample::new(vec![1.0, f64::NAN]),
            Err(StatsError::NotFinite(_))
        ));
        let x = s(&[3.0, 1.0, 2.0, 10.0]);
        assert_eq!((x.min(), x.median(), x.max()), (1.0, 2.5, 10.0));
    }

    #[test]
    fn property_median_lies_between_min_and_max_and_ignores_order() {
        let mut rng = Rng(1);
        for _ in 0..500 {
            let n = 1 + rng.below(30) as usize;
            let v: Vec<f64> = (0..n).map(|_| rng.float() * 100.0 - 50.0).collect();
            let a = s(&v);
            let mut rev = v.clone();
            rev.reverse();
            assert_eq!(a.median(), s(&rev).median());
            assert!(a.min() <= a.median() && a.median() <= a.max());
            let below = v.iter().filter(|&&x| x < a.median()).count();
            let above = v.iter().filter(|&&x| x > a.median()).count();
            assert!(below <= n / 2 && above <= n / 2);
        }
    }

    #[test]
    fn directions_follow_units() {
        assert_eq!(Direction::for_unit("ns/op"), Direction::LowerIsBetter);
        assert_eq!(Direction::for_unit("B/op"), Direction::LowerIsBetter);
        assert_eq!(Direction::for_unit("MB/s"), Direction::HigherIsBetter);
        assert_eq!(Direction::for_unit("req/s"), Direction::HigherIsBetter);
        assert_eq!(Direction::for_unit("ops/s"), Direction::HigherIsBetter);
    }

    #[test]
    fn verdicts() {
        let t = Thresholds::default();
        // 3 vs 3 can never be significant at 0.05: the smallest two-sided p is 0.1.
        let c = compare(
            &s(&[1.0, 2.0, 3.0]),
            &s(&[10.0, 11.0, 12.0]),
            Direction::LowerIsBetter,
            t,
        );
        assert_eq!(c.verdict, Verdict::Underpowered);
        let old: Vec<f64> = (0..10).map(|i| 100.0 + i as f64).collect();
        let slower: Vec<f64> = (0..10).map(|i| 150.0 + i as f64).collect();
        let c = compare(&s(&old), &s(&slower), Direction::LowerIsBetter, t);
        assert_eq!(c.verdict, Verdict::Worse);
        assert!((c.delta_pct.unwrap() - 50.0 / 104.5 * 100.0).abs() < 1e-9);
        let c = compare(&s(&old), &s(&slower), Direction::HigherIsBetter, t);
        assert_eq!(c.verdict, Verdict::Better);
        let same = compare(&s(&old), &s(&old), Direction::LowerIsBetter, t);
        assert_eq!(same.verdict, Verdict::NoChange);
        // A consistent but tiny shift: significant, yet inside the 1 % noise band.
        let shifted: Vec<f64> = (0..10).map(|i| 1000.0 + i as f64 * 0.1).collect();
        let nudged: Vec<f64> = shifted.iter().map(|x| x + 5.0).collect();
        let c = compare(&s(&shifted), &s(&nudged), Direction::LowerIsBetter, t);
        assert_eq!(c.verdict, Verdict::WithinNoise, "{c:?}");
    }

    #[test]
    fn geomean_of_ratios() {
        assert!((geomean(&[2.0, 0.5]).unwrap() - 1.0).abs() < 1e-12);
        assert!((geomean(&[4.0, 1.0]).unwrap() - 2.0).abs() < 1e-12);
        assert_eq!(geomean(&[]), None);
        assert_eq!(geomean(&[1.0, 0.0]), None);
    }
}
