//! The Mann-Whitney U test (Wilcoxon rank-sum), two-sided — the test benchstat uses.
//!
//! Exact null distribution when there are no ties and the samples are small (counted with the
//! recurrence of Mann & Whitney, 1947: c(m, n, u) = c(m−1, n, u−n) + c(m, n−1, u)); otherwise
//! the normal approximation with tie correction and continuity correction, as in SciPy's
//! `mannwhitneyu(..., method="asymptotic")`.

use super::Sample;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct UTest {
    /// U of the first sample: the number of (x, y) pairs with x > y, ties counting ½.
    pub u: f64,
    pub p: f64,
    pub exact: bool,
}

/// Largest total size for which the exact distribution is used (when there are no ties).
const EXACT_MAX: usize = 50;

pub fn mann_whitney_u(x: &Sample, y: &Sample) -> UTest {
    let (n1, n2) = (x.len(), y.len());
    let mut all: Vec<(f64, bool)> = x
        .sorted()
        .iter()
        .map(|&v| (v, true))
        .chain(y.sorted().iter().map(|&v| (v, false)))
        .collect();
    all.sort_by(|a, b| a.0.total_cmp(&b.0));
    // Mid-ranks for ties; collect tie group sizes for the variance correction.
    let mut r1 = 0.0;
    let mut tie_term = 0.0;
    let mut i = 0;
    while i < all.len() {
        let mut j = i;
        while j + 1 < all.len() && all[j + 1].0 == all[i].0 {
            j += 1;
        }
        let rank = (i + j) as f64 / 2.0 + 1.0;
        let t = (j - i + 1) as f64;
        tie_term += t * t * t - t;
        r1 += all[i..=j].iter().filter(|e| e.1).count() as f64 * rank;
        i = j + 1;
    }
    let u1 = r1 - (n1 * (n1 + 1)) as f64 / 2.0;
    let (nf1, nf2) = (n1 as f64, n2 as f64);
    let u_big = u1.max(nf1 * nf2 - u1);
    if tie_term == 0.0 && n1 + n2 <= EXACT_MAX {
        let p = (2.0 * exact_sf(n1, n2, u_big)).min(1.0);
        return UTest {
            u: u1,
            p,
            exact: true,
        };
    }
    let n = nf1 + nf2;
    let mu = nf1 * nf2 / 2.0;
    let var = nf1 * nf2 / 12.0 * ((n + 1.0) - tie_term / (n * (n - 1.0)));
    let p = if var <= 0.0 {
        1.0
    } else {
        let z = (u_big - mu - 0.5) / var.sqrt();
        (2.0 * normal_sf(z)).min(1.0)
    };
    UTest {
        u: u1,
        p,
        exact: false,
    }
}

/// P(U ≥ u) under the null for sizes m, n (no ties).
fn exact_sf(m: usize, n: usize, u: f64) -> f64 {
    let counts = u_counts(m, n);
    let total: f64 = counts.iter().sum();
    let from = u.ceil() as usize;
    counts.iter().skip(from).sum::<f64>() / total
}

/// Number of orderings giving each U = 0..=m·n.
fn u_counts(m: usize, n: usize) -> Vec<f64> {
    // table[i][j] is the distribution for sizes (i, j); built up row by row.
    let mut prev: Vec<Vec<f64>> = (0..=n).map(|_| vec![1.0]).collect(); // i = 0
    for i in 1..=m {
        let mut cur: Vec<Vec<f64>> = Vec::with_capacity(n + 1);
        cur.push(vec![1.0]); // j = 0
        for j in 1..=n {
            let mut d = vec![0.0; i * j + 1];
            for (u, c) in prev[j].iter().enumerate() {
                d[u + j] += c; // the largest value is from x: it beats all j values of y
            }
            for (u, c) in cur[j - 1].iter().enumerate() {
                d[u] += c; // the largest value is from y
            }
            cur.push(d);
        }
        prev = cur;
    }
    prev.swap_remove(n)
}

/// The smallest two-sided p-value any data can give for sizes n1, n2: 2 / C(n1+n2, n1).
pub fn min_two_sided_p(n1: usize, n2: usize) -> f64 {
    let mut c = 1.0;
    for k in 0..n1.min(n2) {
        c = c * (n1 + n2 - k) as f64 / (k + 1) as f64;
    }
    (2.0 / c).min(1.0)
}

/// Upper tail of the standard normal, via erfc.
pub(crate) fn normal_sf(z: f64) -> f64 {
    0.5 * erfc(z / std::f64::consts::SQRT_2)
}

/// erfc with fractional error below 1.2e-7 everywhere: `erfcc` from Numerical Recipes in C,
/// 2nd ed. (Press et al., 1992), §6.2, a Chebyshev-based fit.
fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let r = t
        * (-z * z - 1.265_512_23
            + t * (1.000_023_68
                + t * (0.374_091_96
                    + t * (0.096_784_18
                        + t * (-0.186_288_06
                            + t * (0.278_868_07
                                + t * (-1.135_203_98
                                    + t * (1.488_515_87
                                        + t * (-0.822_152_23 + t * 0.170_872_77)))))))))
            .exp();
    if x >= 0.0 {
        r
    } else {
        2.0 - r
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix64 as Rng;

    fn s(v: &[f64]) -> Sample {
        Sample::new(v.to_vec()).unwrap()
    }

    #[test]
    fn exact_small_cases_match_hand_counts() {
        // Complete separation of 3 vs 3: one ordering in C(6,3) = 20 each way → p = 0.1.
        let t = mann_whitney_u(&s(&[1.0, 2.0, 3.0]), &s(&[4.0, 5.0, 6.0]));
        assert!(t.exact);
        assert_eq!(t.u, 0.0);
        assert!((t.p - 0.1).abs() < 1e-12);
        assert!((min_two_sided_p(3, 3) - 0.1).abs() < 1e-12);
        assert!((min_two_sided_p(5, 5) - 2.0 / 252.0).abs() < 1e-12);
        let counts = u_counts(3, 3);
        assert_eq!(counts, [1.0, 1.0, 2.0, 3.0, 3.0, 3.0, 3.0, 2.0, 1.0, 1.0]);
    }

    #[test]
    fn property_symmetric_and_bounded() {
        let mut rng = Rng(3);
        for _ in 0..300 {
            let (n1, n2) = (1 + rng.below(15) as usize, 1 + rng.below(15) as usize);
            // Integers so ties occur sometimes, exercising both branches.
            let x: Vec<f64> = (0..n1).map(|_| rng.below(40) as f64).collect();
            let y: Vec<f64> = (0..n2).map(|_| rng.below(40) as f64).collect();
            let a = mann_whitney_u(&s(&x), &s(&y));
            let b = mann_whitney_u(&s(&y), &s(&x));
            assert!((a.p - b.p).abs() < 1e-12, "p is symmetric");
            assert!(
                (a.u + b.u - (n1 * n2) as f64).abs() < 1e-9,
                "U1 + U2 = n1·n2"
            );
            assert!(a.p > 0.0 && a.p <= 1.0);
            if a.exact {
                assert!(a.p >= min_two_sided_p(n1, n2) - 1e-12);
            }
        }
    }

    #[test]
    fn erfc_is_accurate() {
        assert!((erfc(0.0) - 1.0).abs() < 1e-7);
        assert!((erfc(1.0) - 0.157_299_207).abs() < 1e-7);
        assert!((erfc(-1.0) - 1.842_700_793).abs() < 1e-7);
        assert!((normal_sf(1.959_963_985) - 0.025).abs() < 1e-7);
    }
}
