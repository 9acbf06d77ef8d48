//! A distribution-free confidence interval for the median from order statistics.
//!
//! The number of observations below the true median is Binomial(n, ½), so the interval
//! [x₍ₖ₎, x₍ₙ₋ₖ₊₁₎] covers the median with probability 1 − 2·P(B ≤ k − 1). We take the
//! narrowest such interval whose coverage is at least the requested confidence (Conover,
//! *Practical Nonparametric Statistics*, 3rd ed., §3.2; the method behind benchstat's
//! intervals). With too few values no interval reaches the confidence; we say how many are
//! needed instead of inventing one.

use super::{Sample, StatsError};

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MedianCi {
    pub lo: f64,
    pub hi: f64,
    /// The coverage actually achieved (at least the one asked for).
    pub confidence: f64,
}

/// ln P(B = i) for B ~ Binomial(n, ½), for i = 0..=n, computed in log space so large n does
/// not underflow.
fn ln_pmf_half(n: usize) -> Vec<f64> {
    let mut out = Vec::with_capacity(n + 1);
    let mut ln_c = 0.0; // ln C(n, 0)
    let base = -(n as f64) * std::f64::consts::LN_2;
    for i in 0..=n {
        out.push(ln_c + base);
        if i < n {
            ln_c += ((n - i) as f64).ln() - ((i + 1) as f64).ln();
        }
    }
    out
}

/// The order-statistic confidence interval of the median at `confidence` (e.g. 0.95).
pub fn median_ci(s: &Sample, confidence: f64) -> Result<MedianCi, StatsError> {
    let n = s.len();
    let alpha = 1.0 - confidence;
    let pmf = ln_pmf_half(n);
    let mut cdf = 0.0;
    let mut best = None;
    for k in 1..=n.div_ceil(2) {
        cdf += pmf[k - 1].exp();
        if 2.0 * cdf <= alpha + 1e-12 {
            best = Some((k, 1.0 - 2.0 * cdf));
        } else {
            break;
        }
    }
    let (k, achieved) = best.ok_or(StatsError::NeedsMore {
        confidence: confidence * 100.0,
        needed: (2.0 / alpha).log2().ceil() as usize,
        have: n,
    })?;
    let v = s.sorted();
    Ok(MedianCi {
        lo: v[k - 1],
        hi: v[n - k],
        confidence: achieved,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix64 as Rng;

    #[test]
    fn known_small_cases() {
        // n = 5 reaches only 93.75 %, n = 6 reaches 96.875 % with the extreme values.
        let five = Sample::new(vec![1.0, 2.0, 3.0, 4.0, 5.0]).unwrap();
        assert_eq!(
            median_ci(&five, 0.95),
            Err(StatsError::NeedsMore {
                confidence: 95.0,
                needed: 6,
                have: 5
            })
        );
        let six = Sample::new((1..=6).map(f64::from).collect()).unwrap();
        let ci = median_ci(&six, 0.95).unwrap();
        assert_eq!((ci.lo, ci.hi), (1.0, 6.0));
        assert!((ci.confidence - 0.96875).abs() < 1e-12);
        // n = 20: k = 6 (P(B ≤ 5) = 0.0207), coverage 95.86 %.
        let twenty = Sample::new((1..=20).map(f64::from).collect()).unwrap();
        let ci = median_ci(&twenty, 0.95).unwrap();
        assert_eq!((ci.lo, ci.hi), (6.0, 15.0));
        assert!((ci.confidence - 0.958_610_5).abs() < 1e-6);
    }

    #[test]
    fn property_interval_contains_the_median_and_narrows_with_n() {
        let mut rng = Rng(7);
        for _ in 0..300 {
            let n = 6 + rng.below(200) as usize;
            let v: Vec<f64> = (0..n).map(|_| rng.float()).collect();
            let s = Sample::new(v).unwrap();
            let ci = median_ci(&s, 0.95).unwrap();
            assert!(ci.lo <= s.median() && s.median() <= ci.hi);
            assert!(ci.confidence >= 0.95);
            let lower = median_ci(&s, 0.80).unwrap();
            assert!(
                lower.lo >= ci.lo && lower.hi <= ci.hi,
                "lower confidence, narrower"
            );
        }
    }

    /// P(B ≤ j) for B ~ Binomial(n, ½), from the same log-space pmf median_ci sums.
    fn binom_half_cdf(n: usize, j: usize) -> f64 {
        ln_pmf_half(n)[..=j.min(n)].iter().map(|l| l.exp()).sum()
    }

    #[test]
    fn binomial_cdf_is_a_cdf_even_for_large_n() {
        assert!((binom_half_cdf(10, 10) - 1.0).abs() < 1e-12);
        assert!((binom_half_cdf(4, 1) - 5.0 / 16.0).abs() < 1e-15);
        assert!((binom_half_cdf(3000, 1500) - 0.507_283).abs() < 1e-5);
    }
}
