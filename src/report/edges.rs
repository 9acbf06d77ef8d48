//! What if an edge between members were slower (docs/what-if.md): a contender's delay
//! variants (`NAME+rpc+0ms`, `NAME+rpc+1ms`, …), each call's median latency at every hold,
//! and the slope through them — milliseconds of p50 per added millisecond, which is about
//! the number of round trips a call makes over that edge one after another.
//!
//! At each hold the median comes with its distribution-free interval (the order statistics
//! around the middle of its latency histogram: `stats::slope::quantile_ranks`), pooled over
//! repetitions (never narrower than their own spread); the slope is a weighted
//! least-squares line through the holds above zero (`stats::slope::fit`). The `+0ms` variant
//! is the proxy alone: it sets the proxy's own cost apart (the contender without any proxy is
//! shown beside it), and it stays out of the line when two holds above zero are there, since
//! a call that first waits long enough for its CPU to go idle pays a wake-up once.

use super::table::{number, Cell, Table, Unit};
use crate::plan::WhatIf;
use crate::results::{PointId, Results};
use crate::stats::slope::{fit, quantile_ranks, Level, Slope};
use crate::units::fmt_us;

/// One call of one contender, over the holds on one edge.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// The contender the variants are of.
    pub contender: String,
    pub port: String,
    pub point: PointId,
    /// Per hold with a measurement: (hold in ms, p50 µs, its 95 % interval).
    pub levels: Vec<(f64, f64, f64, f64)>,
    /// The contender's own p50 there, with no proxy.
    pub direct_us: Option<f64>,
    /// µs of p50 per ms of hold.
    pub slope: Option<Slope>,
    /// How long the listener took to answer each forwarded chunk at the proxy alone (mean
    /// over its repetitions), µs.
    pub answer_us: Option<f64>,
}

/// What a slope says, from its interval: clear round trips, a flat edge, or neither.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Reading {
    /// About this many round trips per call (the slope in ms per ms).
    RoundTrips(f64),
    /// The interval lies within ±0.1 ms per ms: the edge does not matter for this call.
    Flat,
    /// Neither: the interval is too wide to tell.
    Unclear,
}

impl Series {
    /// The slope in ms of p50 per ms of hold, with its interval.
    pub fn per_ms(&self) -> Option<(f64, f64, f64)> {
        self.slope
            .map(|s| (s.per_unit / 1e3, s.lo / 1e3, s.hi / 1e3))
    }

    pub fn reading(&self) -> Option<Reading> {
        let (s, lo, hi) = self.per_ms()?;
        Some(if lo > 0.1 {
            Reading::RoundTrips(s)
        } else if lo > -0.1 && hi < 0.1 {
            Reading::Flat
        } else {
            Reading::Unclear
        })
    }

    /// The words of the reading, for the table and the summary.
    pub fn words(&self) -> String {
        match self.reading() {
            Some(Reading::RoundTrips(s)) if s >= 0.75 => {
                let n = s.round();
                format!(
                    "about {n} round trip{} per call",
                    if n == 1.0 { "" } else { "s" }
                )
            }
            Some(Reading::RoundTrips(_)) => {
                "under one round trip per call (some calls wait on it)".into()
            }
            Some(Reading::Flat) => "flat: the edge does not matter here".into(),
            Some(Reading::Unclear) => "unclear: the interval is too wide to tell".into(),
            None => "—".into(),
        }
    }
}

/// The delay variants in the results: (contender, port, hold in ms, the variant's what-if).
fn variants(r: &Results) -> Vec<(String, String, f64, WhatIf)> {
    let mut out: Vec<(String, String, f64, WhatIf)> = r
        .contenders
        .iter()
        .filter_map(|c| {
            let v = c.variant.as_ref()?;
            let WhatIf::Delay { port, hold_us } = &v.what else {
                return None;
            };
            Some((
                v.of.clone(),
                port.clone(),
                *hold_us as f64 / 1e3,
                v.what.clone(),
            ))
        })
        .collect();
    out.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)).then(a.2.total_cmp(&b.2)));
    out
}

/// A point's p50 over the repetitions of one run name, with its standard error and 95 %
/// interval: (p50, se, lo, hi) in µs.
fn median_of(
    r: &Results,
    contender: &str,
    variant: Option<&WhatIf>,
    point: &PointId,
) -> Option<(f64, f64, f64, f64)> {
    let mut each = Vec::new();
    for run in r.runs.iter().filter(|x| x.id.is(contender, variant)) {
        let Some(l) = run
            .points
            .iter()
            .find(|p| p.id == *point)
            .and_then(|p| p.load.as_ref())
            .filter(|l| !l.mostly_failed())
        else {
            continue;
        };
        let Ok(h) = l.latency_us.histogram() else {
            continue;
        };
        if h.is_empty() {
            continue;
        }
        let (ql, qh) = quantile_ranks(0.5, h.len());
        let (lo, hi) = (
            h.value_at_quantile(ql) as f64,
            h.value_at_quantile(qh) as f64,
        );
        each.push((h.value_at_quantile(0.5) as f64, (hi - lo) / 3.92));
    }
    if each.is_empty() {
        return None;
    }
    let k = each.len() as f64;
    let y = each.iter().map(|e| e.0).sum::<f64>() / k;
    let mut se = each.iter().map(|e| e.1 * e.1).sum::<f64>().sqrt() / k;
    if each.len() >= 2 {
        let sd = (each.iter().map(|e| (e.0 - y).powi(2)).sum::<f64>() / (k - 1.0)).sqrt();
        se = se.max(sd / k.sqrt());
    }
    Some((y, se, y - 1.96 * se, y + 1.96 * se))
}

/// Every call of `scenario` of every contender with delay variants.
pub fn series(r: &Results, scenario: &str) -> Vec<Series> {
    let Some(s) = r.scenarios.iter().find(|s| s.name == scenario) else {
        return Vec::new();
    };
    let vs = variants(r);
    let mut groups: Vec<(&str, &str)> = vs.iter().map(|v| (v.0.as_str(), v.1.as_str())).collect();
    groups.dedup();
    let mut out = Vec::new();
    for (of, port) in groups {
        let holds: Vec<&(String, String, f64, WhatIf)> =
            vs.iter().filter(|v| v.0 == of && v.1 == port).collect();
        for point in &s.points {
            let mut levels = Vec::new();
            let mut fitted = Vec::new();
            for v in &holds {
                if let Some((y, se, lo, hi)) = median_of(r, of, Some(&v.3), point) {
                    levels.push((v.2, y, lo, hi));
                    fitted.push(Level { x: v.2, y, se });
                }
            }
            if levels.is_empty() {
                continue;
            }
            let zero = holds.iter().find(|v| v.2 == 0.0).map(|v| &v.3);
            // Over every repetition of the proxy alone, weighed by the answers each timed.
            let (timed, answers) = r
                .runs
                .iter()
                .filter(|x| x.id.is(of, zero))
                .filter_map(|x| x.edge.as_ref())
                .fold((0.0, 0u64), |(t, n), e| {
                    (t + e.answer_mean_us * e.answers as f64, n + e.answers)
                });
            let answer_us = (answers > 0).then(|| timed / answers as f64);
            // The line goes through the holds above zero when there are two: between no
            // hold and the first, a call that now waits long enough for its CPU to go idle
            // pays the wake-up once (hundreds of µs on a VM) — the machine's, not the edge's;
            // from the first hold on, each added millisecond is only the edge's.
            let held: Vec<Level> = fitted.iter().copied().filter(|l| l.x > 0.0).collect();
            let through = if held.len() >= 2 { &held } else { &fitted };
            out.push(Series {
                contender: of.to_string(),
                port: port.to_string(),
                point: point.clone(),
                levels,
                direct_us: median_of(r, of, None, point).map(|m| m.0),
                slope: fit(through),
                answer_us,
            });
        }
    }
    out
}

/// Every hold measured in `all`, smallest first, once each (ms).
pub fn holds(all: &[Series]) -> Vec<f64> {
    let mut holds: Vec<f64> = all
        .iter()
        .flat_map(|s| s.levels.iter().map(|l| l.0))
        .collect();
    holds.sort_by(f64::total_cmp);
    holds.dedup();
    holds
}

/// The scenario's table of delay variants; `None` when it has none.
pub fn table(r: &Results, scenario: &str) -> Option<Table> {
    let all = series(r, scenario);
    if all.is_empty() {
        return None;
    }
    let holds = holds(&all);
    let mut head: Vec<String> = ["point", "contender", "edge", "p50, no proxy"]
        .map(String::from)
        .to_vec();
    head.extend(holds.iter().map(|h| format!("p50 +{h} ms")));
    head.extend(["p50 per added ms".to_string(), "reading".to_string()]);
    let mut rows = Vec::new();
    for s in &all {
        let mut row = vec![
            Cell::text("point", s.point.label()),
            Cell::text("contender", s.contender.clone()),
            Cell::text("edge", s.port.clone()).reads(format!("`{}`", s.port)),
            Cell::value("p50_no_proxy", Unit::Seconds, s.direct_us.map(|u| u / 1e6)),
        ];
        for h in &holds {
            let l = s.levels.iter().find(|l| l.0 == *h);
            row.push(Cell::value(
                &format!("p50_hold_{h}ms"),
                Unit::Seconds,
                l.map(|l| l.1 / 1e6),
            ));
        }
        let pm = s.per_ms();
        row.push(Cell::with(
            pm.map_or("—".into(), |(m, lo, hi)| {
                format!("{m:.2} ms ({lo:.2}–{hi:.2})")
            }),
            vec![
                ("p50_per_added_ms".into(), number(pm.map(|p| p.0))),
                ("p50_per_added_ms_lo".into(), number(pm.map(|p| p.1))),
                ("p50_per_added_ms_hi".into(), number(pm.map(|p| p.2))),
            ],
        ));
        row.push(Cell::with(
            s.words(),
            vec![(
                "reading".into(),
                match s.reading() {
                    Some(Reading::RoundTrips(_)) => "round_trips",
                    Some(Reading::Flat) => "flat",
                    Some(Reading::Unclear) => "unclear",
                    None => "none",
                }
                .into(),
            )],
        ));
        rows.push(row);
    }
    Some(Table {
        id: format!("edges-{}", crate::results::slug(scenario).to_lowercase()),
        title: format!("{scenario}: what if an edge were slower (p50 by hold on the edge; the slope is its round trips per call)"),
        head,
        rows,
    })
}

/// Summary lines: what each slowed edge is worth to each call, clearest first (at most 4).
pub fn summary(r: &Results) -> Vec<String> {
    let mut out = Vec::new();
    for sc in &r.scenarios {
        for s in series(r, &sc.name) {
            let Some((m, lo, hi)) = s.per_ms() else {
                continue;
            };
            let at = s.point.to_string();
            let proxy = match (s.direct_us, s.levels.iter().find(|l| l.0 == 0.0)) {
                (Some(d), Some(z)) if z.1 > d => {
                    format!("; the proxy alone added {} to it", fmt_us(z.1 - d))
                }
                (Some(_), Some(_)) => "; the proxy alone added nothing measurable".into(),
                _ => String::new(),
            };
            let line = match s.reading() {
                Some(Reading::RoundTrips(_)) => {
                    let share = match (s.answer_us, s.levels.iter().find(|l| l.0 == 0.0)) {
                        (Some(a), Some(z)) if z.1 > 0.0 => format!(
                            "; its answers ({} each, as the proxy saw them) make up about {:.0}% of the p50 at +0 ms",
                            fmt_us(a),
                            (m * a / z.1 * 100.0).min(100.0)
                        ),
                        _ => String::new(),
                    };
                    format!(
                        "each +1 ms on {}'s `{}` adds {m:.2} ms ({lo:.2}–{hi:.2}) to the p50 of {at}: {}{share}{proxy}",
                        s.contender,
                        s.port,
                        s.words()
                    )
                }
                Some(Reading::Flat) => format!(
                    "{}'s `{}` does not matter for {at}: its p50 moves {m:.2} ms ({lo:.2}–{hi:.2}) per added ms{proxy}",
                    s.contender, s.port
                ),
                _ => continue,
            };
            out.push(line);
        }
    }
    out.truncate(4);
    out
}
