//! Capacity ratios: a contender's capacity over its baseline's, paired repetition by
//! repetition (the same block of the machine's life in the paired order) and pooled as
//! every paired figure is pooled (`stats::paired::ratio`, each repetition one round): the
//! geometric mean of the per-repetition ratios with a bootstrap interval over repetitions.

use crate::results::{CapacityRun, PointId, Results};
use crate::stats::paired::{ratio, Bands, Ratio};

/// (repetition, search) for every repetition of the contender that searched this point.
pub fn capacities<'a>(
    r: &'a Results,
    contender: &str,
    id: &PointId,
) -> Vec<(u32, &'a CapacityRun)> {
    r.runs_of(contender)
        .flat_map(|x| {
            x.points
                .iter()
                .filter(|p| p.id == *id)
                .filter_map(move |p| Some((x.id.repetition, p.capacity.as_ref()?)))
        })
        .collect()
}

/// The run's bands, or the plan's defaults for a run that was not paired.
pub fn bands_of(r: &Results) -> Bands {
    r.paired.as_ref().map_or_else(
        || {
            let d = crate::plan::Paired::default();
            Bands {
                noise: d.noise,
                equivalence: d.equivalence,
            }
        },
        |p| p.bands(),
    )
}

/// The contender's capacities over its baseline's, repetition by repetition, pooled.
pub fn paired_ratio(r: &Results, id: &PointId, baseline: &str, contender: &str) -> Option<Ratio> {
    let base = capacities(r, baseline, id);
    let pairs: Vec<Vec<(f64, f64)>> = capacities(r, contender, id)
        .iter()
        .filter_map(|(rep, c)| {
            let (_, b) = base.iter().find(|(k, _)| k == rep)?;
            Some(vec![(b.rate?, c.rate?)])
        })
        .collect();
    let mut x = ratio(&pairs, 0)?;
    // A search finds each capacity only to within its precision (the highest passing rate
    // is at most that far below the lowest failing one): repetitions that found the very
    // same rates still leave the ratio that uncertain, never a zero-width interval.
    let precision = r
        .scenarios
        .iter()
        .find(|s| s.name == id.scenario)
        .and_then(|s| s.capacity.as_ref())
        .map_or(0.0, |g| g.precision);
    if precision > 0.0 {
        x.lo = x.lo.min(x.ratio / (1.0 + precision));
        x.hi = x.hi.max(x.ratio * (1.0 + precision));
    }
    Some(x)
}
