//! A capacity scenario's table: per point and contender, the highest rate that held the
//! latency goal with no errors (median over repetitions, min–max), its ratio to the
//! baseline's with an interval, the latency at that rate and the search's steps.
//!
//! The ratio pairs the two contenders' capacities repetition by repetition (the same block
//! of the machine's life in the paired order) and pools them as every paired figure is
//! pooled (`stats::paired::ratio`, each repetition one round): the geometric mean of the
//! per-repetition ratios with a bootstrap interval over repetitions.

use super::table::Table;
use super::{fmt_rate, fmt_us};
use crate::results::{CapacityRun, PointId, Results};
use crate::stats::paired::{ratio, Call};
use crate::stats::Sample;

pub(super) fn table(r: &Results, name: &str, call: &str) -> Option<Table> {
    let info = r.scenarios.iter().find(|s| s.name == name)?;
    let goal = info.capacity.as_ref()?;
    let axes = super::cells::Axes::of(info);
    let mut head = axes.head();
    let pct = goal.percentile.as_str();
    head.extend(
        [
            "contender",
            "capacity req/s",
            "vs baseline",
            &format!("{pct} at capacity"),
            "search (repetition 1)",
        ]
        .map(String::from),
    );
    let bands = bands_of(r);
    let mut rows = Vec::new();
    let mut data = super::table::Data::default();
    for id in &info.points {
        for c in r.compared() {
            let found = capacities(r, &c.name, id);
            if found.is_empty() {
                continue;
            }
            {
                let rates: Vec<f64> = found.iter().filter_map(|(_, x)| x.rate).collect();
                let at: Vec<f64> = r
                    .point_runs(&c.name, id)
                    .filter_map(|p| p.load.as_ref())
                    .map(|l| goal.percentile.of(&l.latency_us) as f64 / 1e6)
                    .collect();
                let x = c
                    .baseline
                    .as_deref()
                    .filter(|b| *b != c.name)
                    .and_then(|b| paired_ratio(r, id, b, &c.name));
                let mut d = data.row();
                axes.data(&mut d, id);
                d.cell("contender", c.name.as_str())
                    .stats("capacity", "rps", &rates)
                    .cell(
                        "at_least_max_rate",
                        found
                            .iter()
                            .any(|(_, c)| c.failed_at.is_none() && c.rate.is_some()),
                    )
                    .num("capacity_ratio", x.map(|x| x.ratio))
                    .num("capacity_ratio_lo", x.map(|x| x.lo))
                    .num("capacity_ratio_hi", x.map(|x| x.hi))
                    .stats(
                        &format!("{}_at_capacity", goal.percentile.as_str().replace('.', "_")),
                        "s",
                        &at,
                    )
                    .cell(
                        "steps",
                        found.iter().map(|(_, c)| c.steps.len()).sum::<usize>(),
                    );
            }
            let mut row = axes.cells(id);
            row.push(super::cells::contender_cell(
                &c.name,
                &r.point_runs(&c.name, id).collect::<Vec<_>>(),
            ));
            row.push(capacity_cell(&found, goal.max_rate));
            let vs = c
                .baseline
                .as_deref()
                .filter(|b| *b != c.name)
                .map_or(String::new(), |b| versus(r, id, b, &c.name, bands));
            row.push(vs);
            let at: Vec<f64> = r
                .point_runs(&c.name, id)
                .filter_map(|p| p.load.as_ref())
                .map(|l| goal.percentile.of(&l.latency_us) as f64)
                .collect();
            row.push(Sample::new(at).map_or("—".into(), |s| fmt_us(s.median())));
            row.push(found.first().map_or(String::new(), |(_, run)| steps(run)));
            rows.push(row);
        }
    }
    Some(Table {
        id: super::cells::serving_id(name),
        title: format!(
            "{name} (`{call}`): capacity at {pct} ≤ {}, no errors (median of the repetitions, min–max)",
            fmt_us(goal.goal_us)
        ),
        head,
        rows,
        data: Some(data),
    })
}

/// One line per capacity scenario point and compared contender:
/// `**Capacity at p99 ≤ 50.0 ms** (get): fast 993 req/s against slow's 295 — 3.4× (…) more capacity`.
pub(super) fn summary(r: &Results) -> Vec<String> {
    let mut out = Vec::new();
    let bands = bands_of(r);
    for info in &r.scenarios {
        let Some(goal) = &info.capacity else { continue };
        for id in &info.points {
            for c in r.compared() {
                let Some(base) = c.baseline.as_deref().filter(|b| *b != c.name) else {
                    continue;
                };
                let median = |who: &str| {
                    Sample::new(
                        capacities(r, who, id)
                            .iter()
                            .filter_map(|(_, x)| x.rate)
                            .collect(),
                    )
                    .ok()
                    .map(|s| fmt_rate(s.median()))
                };
                let (Some(a), Some(b)) = (median(&c.name), median(base)) else {
                    continue;
                };
                let at = if info.points.len() > 1 {
                    format!(" [{}]", id.label())
                } else {
                    String::new()
                };
                out.push(format!(
                    "**Capacity at {} ≤ {}** ({}{at}): {} {a} req/s against {base}'s {b} — {}",
                    goal.percentile.as_str(),
                    fmt_us(goal.goal_us),
                    info.name,
                    c.name,
                    versus(r, id, base, &c.name, bands)
                ));
            }
        }
    }
    out
}

/// (repetition, search) for every repetition of the contender that searched this point.
fn capacities<'a>(r: &'a Results, contender: &str, id: &PointId) -> Vec<(u32, &'a CapacityRun)> {
    r.runs
        .iter()
        .filter(|x| x.id.is(contender))
        .flat_map(|x| {
            x.points
                .iter()
                .filter(|p| p.id == *id)
                .filter_map(move |p| Some((x.id.repetition, p.capacity.as_ref()?)))
        })
        .collect()
}

/// `4870 (4610–5020)`; `≥ 200000` when a repetition passed at `max_rate`; `—` when nothing held.
fn capacity_cell(found: &[(u32, &CapacityRun)], max_rate: f64) -> String {
    let rates: Vec<f64> = found.iter().filter_map(|(_, c)| c.rate).collect();
    let Ok(s) = Sample::new(rates) else {
        return "— (not even the lowest rate held)".into();
    };
    let capped = found
        .iter()
        .any(|(_, c)| c.failed_at.is_none() && c.rate.is_some());
    let at_least = if capped { "≥ " } else { "" };
    if s.len() > 1 {
        format!(
            "{at_least}{} ({}–{})",
            fmt_rate(s.median()),
            fmt_rate(s.min()),
            fmt_rate(s.max())
        )
    } else if capped {
        format!("≥ {} (max_rate)", fmt_rate(max_rate.min(s.median())))
    } else {
        fmt_rate(s.median())
    }
}

/// The contender's capacity over its baseline's, paired by repetition:
/// `1.85× (1.70×–2.02×) more capacity`, or `~ …` when the interval does not clear the band.
/// The run's bands, or the plan's defaults for a run that was not paired.
fn bands_of(r: &Results) -> crate::stats::paired::Bands {
    r.paired.as_ref().map_or_else(
        || {
            let d = crate::plan::Paired::default();
            crate::stats::paired::Bands {
                noise: d.noise,
                equivalence: d.equivalence,
            }
        },
        |p| p.bands(),
    )
}

fn versus(
    r: &Results,
    id: &PointId,
    baseline: &str,
    contender: &str,
    bands: crate::stats::paired::Bands,
) -> String {
    let Some(x) = paired_ratio(r, id, baseline, contender) else {
        return "—".into();
    };
    let span = x.span();
    let tail = if x.repetitions < 2 {
        " (one repetition: no interval)"
    } else {
        ""
    };
    match x.call(bands) {
        Call::Higher => format!("{span} more capacity{tail}"),
        Call::Lower => format!("{span} less capacity{tail}"),
        Call::Equivalent => format!(
            "≈ {span} capacity equal within ±{}{tail}",
            super::verdicts::pct(bands.equivalence)
        ),
        Call::Inconclusive => format!("? {span} capacity inconclusive{tail}"),
    }
}

/// The contender's capacities over its baseline's, repetition by repetition, pooled.
fn paired_ratio(
    r: &Results,
    id: &PointId,
    baseline: &str,
    contender: &str,
) -> Option<crate::stats::paired::Ratio> {
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

/// `100 ✓ · 200 ✓ · 400 ✗ (p99 14 ms > 10 ms) · 283 ✓`.
fn steps(run: &CapacityRun) -> String {
    run.steps
        .iter()
        .map(|s| {
            if s.passed {
                format!("{} ✓", fmt_rate(s.rate))
            } else {
                format!(
                    "{} ✗ ({})",
                    fmt_rate(s.rate),
                    s.why.as_deref().unwrap_or("failed")
                )
            }
        })
        .collect::<Vec<_>>()
        .join(" · ")
}
