//! Concurrency scaling: a scenario that sweeps clients read as one curve per contender for
//! each combination of its other axes (variables, target) — where throughput stops growing.

use super::fmt_rate;
use super::table::{number, Cell, Table};
use crate::results::{PointId, Results};
use crate::stats::Sample;

/// Points of a scenario that differ only in their number of clients.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// The points' label without `clients=N` (empty when clients is the only axis).
    pub key: String,
    /// Fewest clients first.
    pub points: Vec<PointId>,
}

/// The scenario's measured points grouped into series, in plan order; only series with two
/// or more client counts (no sweep, no curve).
pub fn series(r: &Results, scenario: &str) -> Vec<Series> {
    let Some(info) = r.scenarios.iter().find(|s| s.name == scenario) else {
        return Vec::new();
    };
    let measured = |id: &PointId| r.runs.iter().flat_map(|x| &x.points).any(|p| p.id == *id);
    let mut out: Vec<Series> = Vec::new();
    for id in info.points.iter().filter(|id| measured(id)) {
        match out.iter_mut().find(|s| s.points[0].same_but_clients(id)) {
            Some(s) => s.points.push(id.clone()),
            None => out.push(Series {
                key: id.label_without_clients(),
                points: vec![id.clone()],
            }),
        }
    }
    for s in &mut out {
        s.points.sort_by_key(|p| p.clients);
    }
    out.retain(|s| s.points.len() > 1);
    out
}

/// Median, min and max requests/s of a contender at a point over its repetitions.
pub fn rate(r: &Results, contender: &str, point: &PointId) -> Option<(f64, f64, f64)> {
    let s = Sample::new(r.rates(contender, point)).ok()?;
    Some((s.median(), s.min(), s.max()))
}

/// Median requests/s per number of clients, with the factor over the fewest clients:
/// `8450 (×7.0)`. None when the scenario does not sweep clients.
pub fn table(r: &Results, scenario: &str) -> Option<Table> {
    let series = series(r, scenario);
    if series.is_empty() {
        return None;
    }
    let mut clients: Vec<usize> = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.clients))
        .collect();
    clients.sort_unstable();
    clients.dedup();
    let keyed = series.iter().any(|s| !s.key.is_empty());
    let mut head = Vec::new();
    if keyed {
        head.push("point".to_string());
    }
    head.push("contender".into());
    head.extend(clients.iter().map(|n| match n {
        1 => "1 client".to_string(),
        n => format!("{n} clients"),
    }));
    let mut rows = Vec::new();
    for s in &series {
        for c in r.compared() {
            let rates: Vec<Option<f64>> = clients
                .iter()
                .map(|n| {
                    s.points
                        .iter()
                        .find(|p| p.clients == *n)
                        .and_then(|p| rate(r, &c.name, p))
                        .map(|x| x.0)
                })
                .collect();
            if rates.iter().all(Option::is_none) {
                continue;
            }
            let first = s
                .points
                .iter()
                .find_map(|p| rate(r, &c.name, p))
                .map(|x| x.0);
            let mut row = Vec::new();
            if keyed {
                row.push(Cell::text("point", s.key.as_str()));
            }
            row.push(Cell::text("contender", c.name.as_str()));
            for (n, v) in clients.iter().zip(&rates) {
                row.push(Cell::with(
                    match (*v, first) {
                        (None, _) => "—".into(),
                        (Some(v), Some(f)) if f > 0.0 && v != f => {
                            format!("{} (×{:.1})", fmt_rate(v), v / f)
                        }
                        (Some(v), _) => fmt_rate(v),
                    },
                    vec![(format!("throughput_median_rps_at_{n}_clients"), number(*v))],
                ));
            }
            rows.push(row);
        }
    }
    Some(Table {
        id: format!("scaling-{}", crate::results::slug(scenario).to_lowercase()),
        title: format!("{scenario}: requests/s by clients (median; × the fewest clients)"),
        head,
        rows,
    })
}
