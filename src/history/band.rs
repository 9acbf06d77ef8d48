//! The night a step lands (docs/history.md, "Over time, side by side"): over a ratio series
//! — each night a paired ratio to a fixed reference with its own 95 % interval — a night
//! whose whole interval lies outside the band the nights before it span (since the last
//! step) is a step at once, without waiting for the nights after it that a change-point
//! test needs.

/// One night of a ratio series: the ratio, its interval, and the spread of its repetitions
/// where it was recorded.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Night {
    pub ratio: f64,
    pub lo: f64,
    pub hi: f64,
    pub spread: Option<Spread>,
}

/// A night's repetitions: the mean and standard deviation of their log ratios (each
/// repetition's figure over the reference's in the same repetition), and how many.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spread {
    pub mean: f64,
    pub sd: f64,
    pub n: usize,
}

impl Spread {
    /// The spread of the ratios of `of` to `to`, repetition by repetition: `None` unless both
    /// have the same two or more positive, finite figures.
    pub fn of(of: &[f64], to: &[f64]) -> Option<Spread> {
        let ok = |x: &f64| x.is_finite() && *x > 0.0;
        if of.len() != to.len() || of.len() < 2 || !of.iter().chain(to).all(ok) {
            return None;
        }
        let logs: Vec<f64> = of.iter().zip(to).map(|(a, b)| (a / b).ln()).collect();
        let n = logs.len();
        let mean = logs.iter().sum::<f64>() / n as f64;
        let ss: f64 = logs.iter().map(|x| (x - mean).powi(2)).sum();
        Some(Spread {
            mean,
            sd: (ss / (n - 1) as f64).sqrt(),
            n,
        })
    }
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
///
/// Where every night of the stretch (since the last step, up to the night judged) has its
/// repetitions' spread, each night is read again from its repetitions, with the spread
/// pooled over them ([`pooled`]): a night of three repetitions reads its interval on
/// Student's t at 2 degrees of freedom (4.3), a stretch of eight nights on 16 (2.1).
pub fn steps(nights: &[Night]) -> Vec<Step> {
    let mut out = Vec::new();
    let mut start = 0;
    for i in 1..nights.len() {
        let stretch = &nights[start..=i];
        let read = pooled(stretch).unwrap_or_else(|| stretch.iter().map(bounds).collect());
        let Some((&(ratio, lo, hi), before)) = read.split_last() else {
            continue;
        };
        let (band_lo, band_hi) = before.iter().fold(
            (f64::INFINITY, f64::NEG_INFINITY),
            |(lo, hi), &(_, l, h)| (lo.min(l), hi.max(h)),
        );
        if lo > band_hi || hi < band_lo {
            let mut ratios: Vec<f64> = before.iter().map(|r| r.0).collect();
            ratios.sort_by(f64::total_cmp);
            let mid = ratios.len() / 2;
            let median = match ratios.len() % 2 {
                1 => ratios[mid],
                _ => (ratios[mid - 1] + ratios[mid]) / 2.0,
            };
            out.push(Step {
                index: i,
                ratio: ratio / median,
                lo: lo / median,
                hi: hi / median,
                nights: before.len(),
            });
            start = i;
        }
    }
    out
}

/// `nights` read from their repetitions — each night's ratio the geometric mean of its
/// repetitions' ratios, its interval from the spread of their log ratios pooled (the root of
/// their squared deviations from each night's own mean over their degrees of freedom,
/// Student's t on all of those): `None` unless every night has a usable spread and they are
/// [`POOLED_DF`] degrees or more. The centre is the repetitions' own, not the run's ratio:
/// a tail's run ratio (p99 over slices) is a noisier figure than the repetitions'
/// spread measures.
fn pooled(nights: &[Night]) -> Option<Vec<(f64, f64, f64)>> {
    let mut ss = 0.0;
    let mut df = 0;
    let mut read = Vec::with_capacity(nights.len());
    for n in nights {
        let s = n
            .spread
            .filter(|s| s.sd.is_finite() && s.mean.is_finite() && s.n >= 2)?;
        ss += s.sd * s.sd * (s.n - 1) as f64;
        df += s.n - 1;
        read.push((s.mean.exp(), s.n));
    }
    if df < POOLED_DF {
        return None;
    }
    let t_sd = crate::stats::paired::t975(df) * (ss / df as f64).sqrt();
    Some(
        read.into_iter()
            .map(|(ratio, n)| {
                let half = t_sd / (n as f64).sqrt();
                (ratio, ratio * (-half).exp(), ratio * half.exp())
            })
            .collect(),
    )
}

/// The fewest degrees of freedom a pooled spread is read on — three nights of three
/// repetitions: two nights' four leave the spread itself uncertain by half.
const POOLED_DF: usize = 6;

/// A night's ratio and interval, or its ratio alone where the interval is not usable.
fn bounds(n: &Night) -> (f64, f64, f64) {
    let ok = |x: f64| x.is_finite() && x > 0.0;
    match ok(n.lo) && ok(n.hi) && n.lo <= n.hi {
        true => (n.ratio, n.lo, n.hi),
        false => (n.ratio, n.ratio, n.ratio),
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
            spread: None,
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

    /// Screened nights: three repetitions each, their log ratios spread `sd` around the
    /// night's level (1, times `step` from night `at`), each night's own interval on t(2) —
    /// and their spread recorded. A normal deviate from twelve uniforms.
    fn screened(seed: u64, sd: f64, at: Option<(usize, f64)>) -> Vec<Night> {
        let mut rng = crate::rng::SplitMix64(seed);
        (0..8)
            .map(|i| {
                let level = at.filter(|(k, _)| i >= *k).map_or(1.0, |(_, x)| x);
                let reps: Vec<f64> = (0..3)
                    .map(|_| {
                        let z: f64 = (0..12).map(|_| rng.float()).sum::<f64>() - 6.0;
                        level * (sd * z).exp()
                    })
                    .collect();
                let spread = Spread::of(&reps, &[1.0; 3]).unwrap();
                let mean = reps.iter().map(|x| x.ln()).sum::<f64>() / 3.0;
                let half = 4.303 * spread.sd / 3f64.sqrt();
                Night {
                    ratio: mean.exp(),
                    lo: (mean - half).exp(),
                    hi: (mean + half).exp(),
                    spread: Some(spread),
                }
            })
            .collect()
    }

    #[test]
    fn the_spread_pooled_over_the_nights_finds_a_step_their_own_intervals_hide() {
        // Repetitions 1.5 % apart: a night's own interval is about ±3.7 %, wider than a 5 %
        // step can clear; pooled over the stretch, t(2) = 4.3 falls to about 2.1.
        let (mut own, mut pooled) = (0, 0);
        for seed in 1..=20 {
            let xs = screened(seed, 0.015, Some((4, 1.05)));
            let alone: Vec<Night> = xs.iter().map(|n| Night { spread: None, ..*n }).collect();
            own += usize::from(steps(&alone).first().is_some_and(|s| s.index == 4));
            let got = steps(&xs);
            pooled += usize::from(got.first().is_some_and(|s| s.index == 4));
            assert!(got.iter().all(|s| s.index >= 4), "seed {seed}: {got:?}");
        }
        // 11 of 20 against 2 of 20 (these seeds): the band spans the nights' own spread
        // besides each interval, so a step of 3.3 × the spread is still a coin's toss.
        assert!(
            pooled >= 10,
            "pooled found {pooled} of 20 the night it landed"
        );
        assert!(own <= 4, "own intervals found {own} of 20");
        // The counts docs/history.md gives.
        assert_eq!((pooled, own), (11, 2));
        // Repetitions 1 % apart: nearly always.
        let tight = (1..=20)
            .filter(|&seed| {
                let got = steps(&screened(seed, 0.01, Some((4, 1.05))));
                got.first().is_some_and(|s| s.index == 4)
            })
            .count();
        assert!(tight >= 18, "pooled found {tight} of 20 at 1 %");
    }

    #[test]
    fn pooled_nights_with_no_step_raise_no_more_than_their_own_intervals() {
        let (mut own, mut pooled) = (0, 0);
        for seed in 1..=200 {
            let xs = screened(seed, 0.015, None);
            let alone: Vec<Night> = xs.iter().map(|n| Night { spread: None, ..*n }).collect();
            own += steps(&alone).len();
            pooled += steps(&xs).len();
        }
        // No more than the nights' own intervals raise (one in 1,600 nights: a second night
        // whose three repetitions happened to agree, read on its own interval).
        assert!(
            pooled <= own && own <= 2,
            "own {own}, pooled {pooled} in 1,600 nights"
        );
        assert_eq!((pooled, own), (1, 1), "the counts docs/history.md gives");
        // A night without its spread (recorded before it was kept) reads every night of its
        // stretch on its own interval.
        let mut xs = screened(7, 0.015, Some((4, 1.05)));
        xs[2].spread = None;
        let alone: Vec<Night> = xs.iter().map(|n| Night { spread: None, ..*n }).collect();
        assert_eq!(steps(&xs[..5]), steps(&alone[..5]));
    }

    /// A run's ratio of a tail (p99 over slices) can sit far from its repetitions' (p99 over
    /// each repetition): a night is read from its repetitions, as its spread is — here an A/A
    /// history whose fifth night's run read p99 1.25× while its repetitions read 1.05×, as
    /// one did live (docs/history.md, "The spread pooled").
    #[test]
    fn a_pooled_night_is_centred_on_its_repetitions_not_the_runs_ratio() {
        let reps = [
            [1.035, 0.971, 1.024],
            [1.056, 0.977, 1.030],
            [0.975, 0.968, 1.000],
            [1.047, 0.920, 1.057],
            [1.030, 1.038, 1.077],
        ];
        let mut xs: Vec<Night> = reps
            .iter()
            .map(|r| {
                let spread = Spread::of(r, &[1.0; 3]).unwrap();
                Night {
                    ratio: spread.mean.exp(),
                    lo: 0.6,
                    hi: 1.8,
                    spread: Some(spread),
                }
            })
            .collect();
        xs[4].ratio = 1.2476;
        assert!(steps(&xs).is_empty(), "{:?}", steps(&xs));
        // A real step is still found, and sized from the repetitions.
        xs[4].spread = Spread::of(&[1.15, 1.16, 1.14], &[1.0; 3]);
        let got = steps(&xs);
        assert_eq!(got.len(), 1, "{got:?}");
        assert!((got[0].ratio - 1.15 / 1.009).abs() < 0.03, "{got:?}");
    }

    #[test]
    fn a_spread_needs_two_paired_repetitions() {
        let s = Spread::of(&[2.0, 2.2, 1.8], &[1.0, 1.1, 0.9]).unwrap();
        assert_eq!(s.n, 3);
        assert!(s.sd < 1e-12, "{s:?}");
        let s = Spread::of(&[1.0, 1.1], &[1.0, 1.0]).unwrap();
        assert!((s.sd - (1.1f64.ln() / 2f64.sqrt())).abs() < 1e-12, "{s:?}");
        assert_eq!(Spread::of(&[1.0], &[1.0]), None);
        assert_eq!(Spread::of(&[1.0, 2.0], &[1.0]), None);
        assert_eq!(Spread::of(&[1.0, 0.0], &[1.0, 1.0]), None);
        assert_eq!(Spread::of(&[1.0, f64::NAN], &[1.0, 1.0]), None);
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
                spread: None,
            },
            night(1.0, 0.01),
        ];
        assert!(steps(&broken).is_empty());
    }
}
