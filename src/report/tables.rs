//! The report's tables, computed from `Results` once for every exporter (through
//! [`super::analysis::Analysis`]): start-up per contender, and per scenario a table
//! in the style of seed 003 — `QPS (delta vs baseline)` and `p90 (delta)` per point — with
//! medians over the repetitions.

use super::cells::{
    contender_cell, figures, median, mostly_failed_cell, serving_id, verdict, Axes,
};
use super::table::{number, Cell, Table, Unit};
use super::{fmt_rate, fmt_us};
use crate::results::{Results, Run};
use crate::stats::Sample;

pub(super) fn startup(r: &Results) -> Table {
    let mut rows = Vec::new();
    for c in &r.contenders {
        let runs: Vec<&Run> = r.runs_of(&c.name).collect();
        let started: Vec<_> = runs.iter().filter_map(|x| x.startup.as_ref()).collect();
        let pick = |f: &dyn Fn(&Run) -> Option<f64>| -> Vec<f64> {
            runs.iter().filter_map(|x| f(x)).collect()
        };
        let of = |f: &dyn Fn(&crate::results::Startup) -> Option<f64>| -> Vec<f64> {
            started.iter().filter_map(|s| f(s)).collect()
        };
        rows.push(vec![
            Cell::text("contender", c.name.as_str()),
            Cell::count("started", started.len() as u64)
                .and("runs", runs.len())
                .reads(format!("{}/{}", started.len(), runs.len())),
            Cell::spread(
                "first_response",
                Unit::Seconds,
                &of(&|s| Some(s.first_response_s)),
            ),
            Cell::spread("ready", Unit::Seconds, &of(&|s| Some(s.ready_s))),
            Cell::spread("startup_cpu", Unit::Seconds, &of(&|s| s.cpu_s)),
            Cell::spread(
                "repetition_cpu",
                Unit::Seconds,
                &pick(&|x| x.usage.map(|u| u.cpu_user_s + u.cpu_system_s)),
            ),
            Cell::spread(
                "peak_rss",
                Unit::Bytes,
                &pick(&|x| x.usage.map(|u| u.peak_rss_bytes as f64)),
            ),
            Cell::spread(
                "disk_after_start",
                Unit::Bytes,
                &of(&|s| Some(s.disk_after_start_bytes as f64)),
            ),
            Cell::spread(
                "disk_at_end",
                Unit::Bytes,
                &pick(&|x| x.disk_end_bytes.map(|d| d as f64)),
            ),
        ]);
    }
    Table {
        id: "startup".into(),
        title: match r
            .runs
            .iter()
            .filter_map(|x| x.startup.as_ref()?.first_response_resolution_s)
            .reduce(f64::max)
        {
            // The probes' pauses bound how precisely a first response is timed.
            Some(res) => format!(
                "Start-up (median of the repetitions, min–max; first responses timed to within {})",
                fmt_us(res * 1e6)
            ),
            None => "Start-up (median of the repetitions, min–max)".into(),
        },
        head: [
            "contender",
            "started",
            "first response",
            "ready",
            "start-up CPU",
            "repetition CPU",
            "peak RSS",
            "disk after start",
            "disk at end",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    }
}

/// Each member of a cluster: when it was started (a member with `after` waits for others)
/// and its own first response; none when no contender has several members.
pub(super) fn members(r: &Results) -> Option<Table> {
    let mut rows = Vec::new();
    for c in &r.contenders {
        let runs: Vec<&Run> = r.runs_of(&c.name).collect();
        for m in &c.members {
            let of = |f: &dyn Fn(&crate::results::MemberStartup) -> f64| -> Vec<f64> {
                runs.iter()
                    .filter_map(|x| x.startup.as_ref())
                    .flat_map(|s| &s.members)
                    .filter(|x| x.member == m.name)
                    .map(f)
                    .collect()
            };
            let first = of(&|x| x.first_response_s);
            if first.is_empty() {
                continue;
            }
            let started = Cell::spread("started", Unit::Seconds, &of(&|x| x.started_s));
            rows.push(vec![
                Cell::text("contender", c.name.as_str()),
                Cell::text("member", m.name.as_str()),
                started.clone().reads(format!("+{}", started.text)),
                Cell::spread("first_response", Unit::Seconds, &first),
            ]);
        }
    }
    (!rows.is_empty()).then(|| Table {
        id: "members".into(),
        title: "Members (median of the repetitions, min–max): started after the first member, first response after its own start".into(),
        head: ["contender", "member", "started", "first response"]
            .map(String::from)
            .to_vec(),
        rows,
    })
}

pub(super) fn scenario(r: &Results, name: &str, call: &str) -> Option<Table> {
    let info = r.scenarios.iter().find(|s| s.name == name)?;
    let mut rows = Vec::new();
    let axes = Axes::of(info);
    let mut head = axes.head();
    head.extend(
        [
            "contender",
            "req/s (delta)",
            "req/s min–max",
            "p90 (delta)",
            "verdict",
            "failed",
            "p50",
            "p99",
            "items/s",
        ]
        .map(String::from),
    );
    for id in &info.points {
        for c in &r.contenders {
            rows.extend(scenario_row(r, &axes, id, c));
        }
    }
    Some(Table {
        id: serving_id(name),
        title: format!("{name} (`{call}`)"),
        head,
        rows,
    })
}

/// A contender's row at a point of a plain (unpaired) scenario; none when it did not run
/// there.
fn scenario_row(
    r: &Results,
    axes: &Axes,
    id: &crate::results::PointId,
    c: &crate::results::ContenderInfo,
) -> Option<Vec<Cell>> {
    let pts: Vec<_> = r.point_runs(&c.name, id).collect();
    if pts.is_empty() {
        return None;
    }
    let loads: Vec<_> = pts.iter().filter_map(|p| p.load.as_ref()).collect();
    let base = comparable_baseline(r, id, c);
    let base_of = |f: &dyn Fn(&crate::load::LoadResult) -> f64| -> Option<f64> {
        median(
            &r.point_runs(base?, id)
                .filter_map(|p| p.load.as_ref().map(f))
                .collect::<Vec<_>>(),
        )
    };
    // A point where most calls failed measured failures: no figure, no delta.
    let none = mostly_failed_cell(&loads);
    let of = |f: &dyn Fn(&crate::load::LoadResult) -> f64| figures(&loads, f);
    let secs = |q: &dyn Fn(&crate::load::LoadResult) -> u64| of(&|l| q(l) as f64 / 1e6);
    let rates = of(&|l| l.requests_per_s);
    let p90 = secs(&|l| l.latency_us.p90);
    let (bq, bp) = if none.is_some() {
        (None, None)
    } else {
        (
            base_of(&|l| l.requests_per_s),
            base_of(&|l| l.latency_us.p90 as f64 / 1e6),
        )
    };
    let failed: u64 = loads.iter().map(|l| l.failures).sum();
    let errors = pts.iter().filter(|p| p.error.is_some()).count();
    let mut row = axes.cells(id);
    row.push(contender_cell(&c.name, &pts));
    let throughput = Cell::spread("throughput", Unit::Rps, &rates)
        .and("baseline_throughput_median_rps", number(bq))
        .reads(with_delta(median(&rates), bq, &|v| fmt_rate(v)));
    let range = Cell::shown(match Sample::new(rates.clone()) {
        Ok(s) if s.len() > 1 => format!("{}–{}", fmt_rate(s.min()), fmt_rate(s.max())),
        _ => "—".into(),
    });
    let p90 = Cell::spread("p90", Unit::Seconds, &p90)
        .and("baseline_p90_median_s", number(bp))
        .reads(with_delta(
            median(&p90).map(|v| v * 1e6),
            bp.map(|v| v * 1e6),
            &fmt_us,
        ));
    let verdict = Cell::text(
        "verdict",
        base.map_or(String::new(), |b| verdict(r, id, b, &c.name)),
    );
    let failed = failed_cell(failed, errors);
    // Most calls failed: the figures measured failures. Those below have none (they read
    // `—`); the two with a delta say why, and there is no verdict.
    let (throughput, p90, verdict) = match &none {
        Some(why) => (
            throughput.reads(why.clone()),
            p90.reads(why.clone()),
            verdict.reads(""),
        ),
        None => (throughput, p90, verdict),
    };
    row.extend([
        throughput,
        range,
        p90,
        verdict,
        failed,
        Cell::median("p50", Unit::Seconds, &secs(&|l| l.latency_us.p50)),
        Cell::median("p99", Unit::Seconds, &secs(&|l| l.latency_us.p99)),
        Cell::median("items", Unit::PerSecond, &of(&|l| l.items_per_s)),
    ]);
    Some(row)
}

/// The contender's baseline at a point, unless it is itself or failed most calls there (then
/// there is nothing to compare with).
fn comparable_baseline<'a>(
    r: &Results,
    id: &crate::results::PointId,
    c: &'a crate::results::ContenderInfo,
) -> Option<&'a str> {
    c.baseline.as_deref().filter(|b| *b != c.name).filter(|b| {
        !r.point_runs(b, id)
            .any(|p| p.load.as_ref().is_some_and(|l| l.mostly_failed()))
    })
}

/// Failed calls, with the points that did not run at all.
fn failed_cell(failed: u64, errors: usize) -> Cell {
    Cell::count("failed", failed)
        .and("points_not_run", errors)
        .reads(match (failed, errors) {
            (0, 0) => "0".into(),
            (f, 0) => f.to_string(),
            (f, e) => format!("{f} ({e} points did not run)"),
        })
}

/// `2804 (-5%)`, or the bare value for the baseline itself. A change of 2× or more reads as
/// a factor, `37907 (×1654)` or `38 µs (÷1260)`, never `+165254%` or `-100%`.
pub fn with_delta(v: Option<f64>, base: Option<f64>, fmt: &dyn Fn(f64) -> String) -> String {
    match (v, base) {
        (None, _) => "—".into(),
        (Some(v), Some(b)) if b > 0.0 && v > 0.0 && (v / b >= 2.0 || v / b <= 0.5) => {
            let f = crate::analysis::verdicts::fmt_ratio(v / b);
            format!(
                "{} ({})",
                fmt(v),
                if f.starts_with('÷') {
                    f
                } else {
                    format!("×{}", f.trim_end_matches('×'))
                }
            )
        }
        (Some(v), Some(b)) if b > 0.0 => {
            format!("{} ({})", fmt(v), super::fmt_delta((v - b) / b * 100.0))
        }
        (Some(v), _) => fmt(v),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deltas_read_like_seed_003() {
        assert_eq!(
            with_delta(Some(2804.0), Some(2951.0), &|v| fmt_rate(v)),
            "2804 (-5%)"
        );
        assert_eq!(
            with_delta(Some(0.4), Some(0.4), &|v| format!("{v:.1}")),
            "0.4 (±0%)"
        );
        assert_eq!(with_delta(Some(7.0), None, &|v| format!("{v:.0}")), "7");
        assert_eq!(
            with_delta(Some(37907.0), Some(22.92), &|v| fmt_rate(v)),
            "37907 (×1654)"
        );
        assert_eq!(
            with_delta(Some(38.0), Some(47_880.0), &fmt_us),
            "38 µs (÷1260)"
        );
        assert_eq!(with_delta(None, Some(1.0), &|v| format!("{v}")), "—");
    }
}
