//! Change points in one series (docs/history.md, "Finding steps"): E-divisive means
//! (Matteson and James) with a Student t-test for significance, in sliding windows, then a
//! merge that drops the weakest points until every one left is significant and large enough
//! — the variant of Fleming et al. ("Hunter", MongoDB) that Apache Otava runs, so that its
//! answers can be checked against Otava's on the same CSV.

/// What the detector is told.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    /// Points per window of the split pass.
    pub window: usize,
    /// A change point is kept when its t-test's p is below this.
    pub max_p: f64,
    /// … and its relative change (the larger of before→after and after→before) above this.
    pub min_magnitude: f64,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            window: 50,
            max_p: 0.001,
            // Below it, flat noise of ±2 % gave a change point in 1 of 20 series.
            min_magnitude: 0.02,
        }
    }
}

/// A change point: `index` is the first point after the step.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Change {
    pub index: usize,
    pub p: f64,
    /// The means of the points between the previous change point and this one, and between
    /// this one and the next.
    pub before: f64,
    pub after: f64,
}

impl Change {
    /// The larger of the relative changes either way.
    pub fn magnitude(&self) -> f64 {
        let rel = |a: f64, b: f64| if a == 0.0 { 0.0 } else { (b / a - 1.0).abs() };
        rel(self.before, self.after).max(rel(self.after, self.before))
    }
}

/// The change points of `series`, in order.
pub fn changes(series: &[f64], s: Settings) -> Vec<Change> {
    // The split pass keeps weaker points ("weak change points"), which the merge then
    // holds to `max_p`.
    let weak_p = if s.max_p < 0.05 {
        s.max_p * 10.0
    } else if s.max_p < 0.5 {
        s.max_p * 2.0
    } else {
        s.max_p
    };
    let mut found = split(series, s.window.max(2), weak_p);
    found.sort_unstable();
    found.dedup();
    merge(series, found, s)
}

/// The split pass: E-divisive in windows of `window` points, moving by half a window (or
/// to the last point found), the points of every window together.
fn split(series: &[f64], window: usize, p: f64) -> Vec<usize> {
    let mut out = Vec::new();
    let mut start = 0;
    let step = (window / 2).max(1);
    while start < series.len() {
        let end = (start + window).min(series.len());
        let found: Vec<usize> = divisive(&series[start..end], p)
            .into_iter()
            .map(|i| i + start)
            .collect();
        let last = found.iter().copied().max().unwrap_or(0);
        out.extend(found);
        start = last.max(start + step);
    }
    out
}

/// E-divisive means over `xs`: the split that most separates the two sides of a segment
/// (the energy statistic q̂), kept while its t-test's p is below `p`, each segment split
/// again; the indices found.
fn divisive(xs: &[f64], p: f64) -> Vec<usize> {
    let mut cps: Vec<usize> = Vec::new();
    loop {
        let bounds = segments(&cps, xs.len());
        let best = bounds
            .iter()
            .filter_map(|&(a, b)| candidate(&xs[a..b]).map(|(i, q)| (a + i, q, a, b)))
            .max_by(|x, y| x.1.total_cmp(&y.1));
        let Some((at, _, a, b)) = best else {
            break;
        };
        if ttest(&xs[a..at], &xs[at..b]) < p {
            cps.push(at);
            cps.sort_unstable();
        } else {
            break;
        }
    }
    cps
}

/// The segments between change points `cps` (sorted) over `n` points.
fn segments(cps: &[usize], n: usize) -> Vec<(usize, usize)> {
    let mut edges = vec![0];
    edges.extend(cps);
    edges.push(n);
    edges.windows(2).map(|w| (w[0], w[1])).collect()
}

/// The point τ of `z` (0 < τ < len) and end κ that maximize
/// q̂(z[..τ], z[τ..κ]) = 2/(m+n)·Σ|x−y| − 2m/((m+n)(n−1))·Σ_{i<k}|x_i−x_k|
///                      − 2n/((m+n)(m−1))·Σ_{j<k}|y_j−y_k|
/// (n = τ, m = κ − τ; a term over one point is 0); `None` below two points.
fn candidate(z: &[f64]) -> Option<(usize, f64)> {
    let len = z.len();
    if len < 2 {
        return None;
    }
    let mut best: Option<(usize, f64)> = None;
    for tau in 1..len {
        let x = &z[..tau];
        let within_x: f64 = pairs(x);
        let mut cross = 0.0;
        let mut within_y = 0.0;
        for kappa in tau + 1..=len {
            let y_new = z[kappa - 1];
            cross += x.iter().map(|v| (v - y_new).abs()).sum::<f64>();
            within_y += z[tau..kappa - 1]
                .iter()
                .map(|v| (v - y_new).abs())
                .sum::<f64>();
            let (n, m) = (tau as f64, (kappa - tau) as f64);
            let a = 2.0 / (m + n) * cross;
            let b = if tau > 1 {
                2.0 * m / ((m + n) * (n - 1.0)) * within_x
            } else {
                0.0
            };
            let c = if kappa - tau > 1 {
                2.0 * n / ((m + n) * (m - 1.0)) * within_y
            } else {
                0.0
            };
            let q = a - b - c;
            if best.is_none_or(|(_, bq)| q > bq) {
                best = Some((tau, q));
            }
        }
    }
    best
}

/// Σ_{i<k} |x_i − x_k|.
fn pairs(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for (i, a) in x.iter().enumerate() {
        for b in &x[i + 1..] {
            s += (a - b).abs();
        }
    }
    s
}

fn mean(x: &[f64]) -> f64 {
    x.iter().sum::<f64>() / x.len() as f64
}

/// The population standard deviation (0 below two points).
fn sd(x: &[f64]) -> f64 {
    if x.len() < 2 {
        return 0.0;
    }
    let m = mean(x);
    (x.iter().map(|v| (v - m).powi(2)).sum::<f64>() / x.len() as f64).sqrt()
}

/// The two-sided p of Student's t-test between `a` and `b` with pooled variance, each
/// side's spread taken as its population standard deviation (as Otava computes it, so
/// the two agree); 1 when either side is empty or there are no degrees of freedom.
fn ttest(a: &[f64], b: &[f64]) -> f64 {
    let (n1, n2) = (a.len(), b.len());
    if n1 == 0 || n2 == 0 || n1 + n2 <= 2 {
        return 1.0;
    }
    let df = n1 + n2 - 2;
    let (s1, s2) = (sd(a), sd(b));
    let pooled = ((n1 - 1) as f64 * s1 * s1 + (n2 - 1) as f64 * s2 * s2) / df as f64;
    let se = (pooled * (1.0 / n1 as f64 + 1.0 / n2 as f64)).sqrt();
    let diff = mean(a) - mean(b);
    if se == 0.0 {
        return if diff == 0.0 { 1.0 } else { 0.0 };
    }
    let t = (diff / se).abs();
    (2.0 * crate::stats::paired::student_sf(t, df)).min(1.0)
}

/// Each point's test against its neighbours: the points between the previous change point
/// and it, and between it and the next.
fn stats(series: &[f64], cps: &[usize]) -> Vec<Change> {
    let bounds = segments(cps, series.len());
    cps.iter()
        .enumerate()
        .map(|(k, &i)| {
            let (before, after) = (&series[bounds[k].0..i], &series[i..bounds[k + 1].1]);
            Change {
                index: i,
                p: ttest(before, after),
                before: mean(before),
                after: mean(after),
            }
        })
        .collect()
}

/// The merge pass: while some point is not significant at `max_p`, or (all being so) the
/// smallest is not above `min_magnitude`, that point goes and its neighbours are tested
/// again.
fn merge(series: &[f64], mut cps: Vec<usize>, s: Settings) -> Vec<Change> {
    loop {
        let all = stats(series, &cps);
        let Some(weakest) = all.iter().max_by(|a, b| a.p.total_cmp(&b.p)) else {
            return all;
        };
        let gone = if weakest.p < s.max_p {
            let smallest = all
                .iter()
                .min_by(|a, b| a.magnitude().total_cmp(&b.magnitude()))
                .expect("not empty");
            if smallest.magnitude() > s.min_magnitude {
                return all;
            }
            smallest.index
        } else {
            weakest.index
        };
        cps.retain(|&i| i != gone);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `n` points around 100 with ±`noise` (a share) uniform noise, times `at` steps.
    fn series(seed: u64, n: usize, noise: f64, steps: &[(usize, f64)]) -> Vec<f64> {
        let mut rng = crate::rng::SplitMix64(seed);
        (0..n)
            .map(|i| {
                let level: f64 = steps
                    .iter()
                    .filter(|(at, _)| i >= *at)
                    .map(|(_, x)| *x)
                    .product();
                100.0 * level * (1.0 + noise * (2.0 * rng.float() - 1.0))
            })
            .collect()
    }

    #[test]
    fn one_step_is_found_where_it_is() {
        for seed in 1..=10 {
            let xs = series(seed, 120, 0.02, &[(60, 1.08)]);
            let got = changes(&xs, Settings::default());
            assert_eq!(got.len(), 1, "seed {seed}: {got:?}");
            assert!(got[0].index.abs_diff(60) <= 1, "seed {seed}: {got:?}");
            assert!(
                (got[0].after / got[0].before - 1.08).abs() < 0.01,
                "{got:?}"
            );
        }
    }

    #[test]
    fn no_step_finds_none() {
        for seed in 1..=20 {
            let xs = series(seed, 120, 0.02, &[]);
            let got = changes(&xs, Settings::default());
            assert!(got.is_empty(), "seed {seed}: {got:?}");
        }
    }

    #[test]
    fn two_steps_are_both_found() {
        for seed in 1..=10 {
            let xs = series(seed, 150, 0.02, &[(40, 1.08), (100, 0.9)]);
            let got: Vec<usize> = changes(&xs, Settings::default())
                .iter()
                .map(|c| c.index)
                .collect();
            assert_eq!(got.len(), 2, "seed {seed}: {got:?}");
            assert!(
                got[0].abs_diff(40) <= 1 && got[1].abs_diff(100) <= 1,
                "{got:?}"
            );
        }
    }

    #[test]
    fn a_step_smaller_than_the_least_magnitude_is_dropped() {
        let xs = series(3, 120, 0.005, &[(60, 1.03)]);
        assert_eq!(changes(&xs, Settings::default()).len(), 1);
        let s = Settings {
            min_magnitude: 0.05,
            ..Settings::default()
        };
        assert!(changes(&xs, s).is_empty());
    }

    #[test]
    fn the_t_test_reads_as_scipy() {
        // scipy.stats.ttest_ind_from_stats(2.5, pstdev([1, 2, 3, 4]), 4, 4.5,
        // pstdev([3, 4, 5, 6]), 4): t = -2.530, p = 0.04469.
        let p = ttest(&[1.0, 2.0, 3.0, 4.0], &[3.0, 4.0, 5.0, 6.0]);
        assert!((p - 0.04469).abs() < 0.0001, "{p}");
    }
}
