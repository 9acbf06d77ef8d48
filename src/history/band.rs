//! The night a step lands (docs/history.md, "Over time, side by side"): over a ratio series
//! — each night a paired ratio to a fixed reference with its own 95 % interval — a night
//! whose whole interval lies outside the band the nights before it span (since the last
//! step) is a step at once, without waiting for the nights after it that a change-point
//! test needs.

/// One night of a ratio series: the ratio and its interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Night {
    pub ratio: f64,
    pub lo: f64,
    pub hi: f64,
}

/// A step the band found: `index` is its first night.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Step {
    pub index: usize,
    /// The night's ratio over the median of the nights before it (since the last step),
    /// with the night's interval read the same way.
    pub ratio: f64,
    pub lo: f64,
    pub hi: f64,
    /// How many nights the band was made of.
    pub nights: usize,
}

/// The steps of `nights`, in order. The band of the nights since the last step runs from
/// the lowest lower end of their intervals to the highest upper end; a night whose interval
/// lies wholly above or below it is a step, and the band starts again from it. A night needs
/// at least one night before it. An interval that is not finite and positive counts as the
/// ratio alone.
pub fn steps(nights: &[Night]) -> Vec<Step> {
    let mut out = Vec::new();
    let mut start = 0;
    for i in 1..nights.len() {
        let before = &nights[start..i];
        let (band_lo, band_hi) = before
            .iter()
            .map(bounds)
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), (l, h)| {
                (lo.min(l), hi.max(h))
            });
        let (lo, hi) = bounds(&nights[i]);
        if lo > band_hi || hi < band_lo {
            let mut ratios: Vec<f64> = before.iter().map(|n| n.ratio).collect();
            ratios.sort_by(f64::total_cmp);
            let mid = ratios.len() / 2;
            let median = match ratios.len() % 2 {
                1 => ratios[mid],
                _ => (ratios[mid - 1] + ratios[mid]) / 2.0,
            };
            out.push(Step {
                index: i,
                ratio: nights[i].ratio / median,
                lo: lo / median,
                hi: hi / median,
                nights: before.len(),
            });
            start = i;
        }
    }
    out
}

/// A night's interval, or its ratio alone where the interval is not usable.
fn bounds(n: &Night) -> (f64, f64) {
    let ok = |x: f64| x.is_finite() && x > 0.0;
    match ok(n.lo) && ok(n.hi) && n.lo <= n.hi {
        true => (n.lo, n.hi),
        false => (n.ratio, n.ratio),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn night(ratio: f64, half: f64) -> Night {
        Night {
            ratio,
            lo: ratio * (1.0 - half),
            hi: ratio * (1.0 + half),
        }
    }

    /// Nights around `level` with a paired interval of ±1.5 % whose centres wander ±`wander`
    /// (a share) from night to night; `at` multiplies every night from it on.
    fn nights(seed: u64, n: usize, wander: f64, at: Option<(usize, f64)>) -> Vec<Night> {
        let mut rng = crate::rng::SplitMix64(seed);
        (0..n)
            .map(|i| {
                let step = at.filter(|(k, _)| i >= *k).map_or(1.0, |(_, x)| x);
                let r = 1.0 * step * (1.0 + wander * (2.0 * rng.float() - 1.0));
                night(r, 0.015)
            })
            .collect()
    }

    #[test]
    fn a_step_is_found_the_night_it_lands() {
        for seed in 1..=20 {
            let xs = nights(seed, 8, 0.005, Some((4, 1.05)));
            let got = steps(&xs);
            assert_eq!(got.len(), 1, "seed {seed}: {got:?}");
            assert_eq!(got[0].index, 4, "seed {seed}: {got:?}");
            assert!((got[0].ratio - 1.05).abs() < 0.015, "{got:?}");
            assert!(got[0].lo < got[0].ratio && got[0].ratio < got[0].hi);
        }
    }

    #[test]
    fn steady_nights_find_nothing_and_the_band_widens_with_them() {
        for seed in 1..=50 {
            let xs = nights(seed, 8, 0.005, None);
            assert!(steps(&xs).is_empty(), "seed {seed}: {:?}", steps(&xs));
        }
        // One night just past the first night's interval is a step; after a wider spread of
        // nights the same night is inside the band.
        let narrow = [night(1.0, 0.01), night(1.03, 0.01)];
        assert_eq!(steps(&narrow).len(), 1);
        let wide = [
            night(1.0, 0.01),
            night(1.02, 0.01),
            night(0.99, 0.01),
            night(1.03, 0.01),
        ];
        assert!(steps(&wide).is_empty(), "{:?}", steps(&wide));
    }

    #[test]
    fn a_step_down_and_back_up_is_two_steps() {
        let xs = [
            night(1.0, 0.01),
            night(1.0, 0.01),
            night(0.9, 0.01),
            night(0.9, 0.01),
            night(1.0, 0.01),
        ];
        let got: Vec<usize> = steps(&xs).iter().map(|s| s.index).collect();
        assert_eq!(got, [2, 4]);
        assert!(steps(&xs)[0].ratio < 1.0);
    }

    #[test]
    fn the_first_night_and_broken_intervals_raise_nothing() {
        assert!(steps(&[night(1.5, 0.01)]).is_empty());
        let broken = [
            Night {
                ratio: 1.0,
                lo: f64::NAN,
                hi: -3.0,
            },
            night(1.0, 0.01),
        ];
        assert!(steps(&broken).is_empty());
    }
}
