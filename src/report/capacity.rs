//! A capacity scenario's table: per point and contender, the highest rate that held the
//! latency goal with no errors (median over repetitions, min–max), its ratio to the
//! baseline's with an interval, the latency at that rate and the search's steps.
//!
//! The ratio pairs the two contenders' capacities repetition by repetition (the same block
//! of the machine's life in the paired order) and pools them as every paired figure is
//! pooled (`stats::paired::ratio`, each repetition one round): the geometric mean of the
//! per-repetition ratios with a bootstrap interval over repetitions.

use super::table::{number, Cell, Table, Unit};
use super::{fmt_rate, fmt_us};
use crate::analysis::capacity::{bands_of, capacities, paired_ratio};
use crate::results::{CapacityRun, PointId, Results};
use crate::stats::paired::Call;
use crate::stats::Sample;

pub(super) fn table(r: &Results, name: &str, call: &str) -> Option<Table> {
    let info = r.scenarios.iter().find(|s| s.name == name)?;
    let goal = info.capacity.as_ref()?;
    let axes = super::cells::Axes::of(info);
    let mut head = axes.head();
    head.extend([
        "contender".to_string(),
        "capacity req/s".into(),
        "vs baseline".into(),
        format!("{} at capacity", goal.percentile.as_str()),
        "search (repetition 1)".into(),
    ]);
    let bands = bands_of(r);
    let mut rows = Vec::new();
    for id in &info.points {
        for c in r.compared() {
            let found = capacities(r, &c.name, id);
            let rates: Vec<f64> = found.iter().filter_map(|(_, x)| x.rate).collect();
            if found.is_empty() {
                continue;
            }
            let base = c.baseline.as_deref().filter(|b| *b != c.name);
            let mut row = axes.cells(id);
            row.push(super::cells::contender_cell(
                &c.name,
                &r.point_runs(&c.name, id).collect::<Vec<_>>(),
            ));
            row.push(
                Cell::spread("capacity", Unit::Rps, &rates)
                    .and(
                        "at_least_max_rate",
                        found
                            .iter()
                            .any(|(_, c)| c.failed_at.is_none() && c.rate.is_some()),
                    )
                    .reads(capacity_cell(&found, goal.max_rate)),
            );
            let x = base.and_then(|b| paired_ratio(r, id, b, &c.name));
            row.push(Cell::with(
                base.map_or(String::new(), |b| versus(r, id, b, &c.name, bands)),
                vec![
                    ("capacity_ratio".into(), number(x.map(|x| x.ratio))),
                    ("capacity_ratio_lo".into(), number(x.map(|x| x.lo))),
                    ("capacity_ratio_hi".into(), number(x.map(|x| x.hi))),
                ],
            ));
            let at: Vec<f64> = r
                .point_runs(&c.name, id)
                .filter_map(|p| Some(goal.percentile.of(&p.load.as_ref()?.latency_us) as f64 / 1e6))
                .collect();
            row.push(Cell::median(
                &format!("{}_at_capacity", goal.percentile.as_str().replace('.', "_")),
                Unit::Seconds,
                &at,
            ));
            row.push(Cell::with(
                found.first().map_or(String::new(), |(_, run)| steps(run)),
                vec![(
                    "steps".into(),
                    found
                        .iter()
                        .map(|(_, c)| c.steps.len())
                        .sum::<usize>()
                        .into(),
                )],
            ));
            rows.push(row);
        }
    }
    Some(Table {
        id: super::cells::serving_id(name),
        title: format!(
            "{name} (`{call}`): capacity at {} ≤ {}, no errors (median of the repetitions, min–max)",
            goal.percentile.as_str(),
            fmt_us(goal.goal_us)
        ),
        head,
        rows,
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
/// `1.85× (1.70×–2.02×) more capacity`, or `? …` when the interval does not settle it.
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
            crate::analysis::verdicts::pct(bands.equivalence)
        ),
        Call::Inconclusive => format!("? {span} capacity inconclusive{tail}"),
    }
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
