//! The slope of a figure over an added delay (the delay what-if, docs/what-if.md): a line
//! fitted through one estimate per hold, each with its own standard error, by weighted least
//! squares (weights 1/se²), with a 95 % interval on the slope. When the estimates scatter
//! about the line more than their errors allow (a machine noisier than the estimates know,
//! or a curve that is not a line), the interval is widened by that excess (the residual
//! chi-square over its degrees of freedom — the Birge ratio): it never claims less scatter
//! than the points show.

/// One hold and the figure measured at it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Level {
    /// The hold, in the unit the slope is per (milliseconds).
    pub x: f64,
    pub y: f64,
    /// The standard error of `y`.
    pub se: f64,
}

/// A fitted line: `y = intercept + per_unit · x`, with the 95 % interval of `per_unit`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Slope {
    pub per_unit: f64,
    pub lo: f64,
    pub hi: f64,
    pub intercept: f64,
}

/// The line through `levels`; `None` below two distinct holds.
pub fn fit(levels: &[Level]) -> Option<Slope> {
    let xs: Vec<f64> = levels.iter().map(|l| l.x).collect();
    if levels.len() < 2 || xs.iter().all(|&x| x == xs[0]) {
        return None;
    }
    // A zero error (one sample, a histogram of one value) would take all the weight: floor
    // each at a thousandth of the largest, and at an absolute epsilon.
    let top = levels.iter().map(|l| l.se).fold(0.0, f64::max);
    let floor = (top * 1e-3).max(1e-9);
    let w: Vec<f64> = levels
        .iter()
        .map(|l| 1.0 / l.se.max(floor).powi(2))
        .collect();
    let sw: f64 = w.iter().sum();
    let mx = levels.iter().zip(&w).map(|(l, w)| w * l.x).sum::<f64>() / sw;
    let my = levels.iter().zip(&w).map(|(l, w)| w * l.y).sum::<f64>() / sw;
    let sxx: f64 = levels
        .iter()
        .zip(&w)
        .map(|(l, w)| w * (l.x - mx).powi(2))
        .sum();
    let sxy: f64 = levels
        .iter()
        .zip(&w)
        .map(|(l, w)| w * (l.x - mx) * (l.y - my))
        .sum();
    let b = sxy / sxx;
    let a = my - b * mx;
    let mut var = 1.0 / sxx;
    let df = levels.len().saturating_sub(2);
    if df > 0 {
        let chi2: f64 = levels
            .iter()
            .zip(&w)
            .map(|(l, w)| w * (l.y - a - b * l.x).powi(2))
            .sum();
        var *= (chi2 / df as f64).max(1.0);
    }
    // The normal's 1.96 on the widened variance (the Birge ratio's use: Birge, "The
    // calculation of errors by the method of least squares", Phys. Rev. 40:207, 1932). The
    // estimates' own errors rest on hundreds of calls each; the few holds only say how much
    // wider the scatter is, and Student's t on one or two degrees of freedom (12.7, 4.3)
    // would make three holds prove nothing.
    let half = 1.96 * var.sqrt();
    Some(Slope {
        per_unit: b,
        lo: b - half,
        hi: b + half,
        intercept: a,
    })
}

/// The distribution-free 95 % interval of a sample's `q` quantile from `n` values: the
/// ranks (as quantiles) between which it lies, by the normal approximation to the binomial
/// (Conover, *Practical Nonparametric Statistics*, 3rd ed., 1999, §3.2).
pub fn quantile_ranks(q: f64, n: u64) -> (f64, f64) {
    let n = n.max(1) as f64;
    let half = 1.96 * (n * q * (1.0 - q)).sqrt();
    (
        ((n * q - half).floor() / n).clamp(0.0, 1.0),
        ((n * q + half).ceil() / n).clamp(0.0, 1.0),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lv(x: f64, y: f64, se: f64) -> Level {
        Level { x, y, se }
    }

    #[test]
    fn a_line_is_found_with_an_interval_that_holds_it() {
        // Three round trips per call: +3 ms of figure per ms of hold, noise of 0.05.
        let l = [
            lv(0.0, 0.60, 0.05),
            lv(1.0, 3.62, 0.05),
            lv(2.0, 6.58, 0.05),
            lv(4.0, 12.61, 0.05),
        ];
        let s = fit(&l).unwrap();
        assert!((s.per_unit - 3.0).abs() < 0.03, "{s:?}");
        assert!(s.lo < 3.0 && s.hi > 3.0 && s.hi - s.lo < 0.2, "{s:?}");
        assert!((s.intercept - 0.6).abs() < 0.05, "{s:?}");
    }

    #[test]
    fn a_flat_edge_reads_flat_and_scatter_widens_the_interval() {
        let flat = fit(&[lv(0.0, 1.0, 0.01), lv(1.0, 1.01, 0.01), lv(2.0, 0.99, 0.01)]).unwrap();
        assert!(
            flat.lo < 0.0 && flat.hi > 0.0 && flat.hi - flat.lo < 0.5,
            "{flat:?}"
        );
        // The same holds, but the points scatter far past their stated errors.
        let wild = fit(&[lv(0.0, 1.0, 0.01), lv(1.0, 2.0, 0.01), lv(2.0, 0.5, 0.01)]).unwrap();
        assert!(wild.hi - wild.lo > 1.0, "{wild:?}");
        assert_eq!(fit(&[lv(1.0, 1.0, 0.1), lv(1.0, 2.0, 0.1)]), None);
        assert_eq!(fit(&[lv(1.0, 1.0, 0.1)]), None);
    }

    #[test]
    fn quantile_ranks_bracket_the_median() {
        let (lo, hi) = quantile_ranks(0.5, 100);
        assert!(
            (lo - 0.40).abs() < 0.011 && (hi - 0.60).abs() < 0.011,
            "{lo} {hi}"
        );
        let (lo, hi) = quantile_ranks(0.5, 1);
        assert_eq!((lo, hi), (0.0, 1.0));
    }
}
