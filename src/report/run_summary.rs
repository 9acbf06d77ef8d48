//! The short summary `bakeoff run` prints at the end: start-up per contender, then one table
//! per scenario in the style of seed 003 — `QPS (delta vs baseline)` and `p90 ms (delta)` per
//! point — with medians over the repetitions. Full reports are `bakeoff report`'s job.

use std::fmt::Write as _;

use super::{fmt_bytes, fmt_rate, fmt_us};
use crate::results::{Results, Run};
use crate::stats::Sample;

pub fn render(r: &Results) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# {}\n", r.name);
    if r.smoke {
        let _ = writeln!(out, "_Smoke run: one repetition, short scenarios — check the plan, do not compare these numbers._\n");
    }
    startup(r, &mut out);
    out.push_str(&super::compat::markdown(&super::compat::from_results(r)));
    for s in &r.scenarios {
        scenario(r, &s.name, &s.call, &mut out);
    }
    let found = crate::diagnose::findings(r, crate::diagnose::Limits::default());
    if !found.is_empty() {
        let _ = writeln!(out, "## Findings\n");
        for f in &found {
            let _ = writeln!(out, "- {f}");
        }
        out.push('\n');
    }
    let failed: Vec<&Run> = r.runs.iter().filter(|x| x.error.is_some()).collect();
    if !failed.is_empty() {
        let _ = writeln!(out, "## Failures\n");
        for f in failed {
            let first_line = f
                .error
                .as_deref()
                .unwrap_or_default()
                .lines()
                .next()
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "- {} repetition {}: {first_line}",
                f.contender, f.repetition
            );
        }
        out.push('\n');
    }
    if !r.warnings.is_empty() {
        let _ = writeln!(out, "## Warnings\n");
        for w in &r.warnings {
            let _ = writeln!(out, "- {w}");
        }
        out.push('\n');
    }
    out
}

/// Median with the range, e.g. `1.23 ms (1.20–1.31)`; the range only when there are several.
fn med(values: &[f64], fmt: &dyn Fn(f64) -> String) -> String {
    match Sample::new(values.to_vec()) {
        Ok(s) if s.len() > 1 => format!("{} ({}–{})", fmt(s.median()), fmt(s.min()), fmt(s.max())),
        Ok(s) => fmt(s.median()),
        Err(_) => "—".into(),
    }
}

fn median(values: &[f64]) -> Option<f64> {
    Sample::new(values.to_vec()).ok().map(|s| s.median())
}

fn startup(r: &Results, out: &mut String) {
    let _ = writeln!(out, "## Start-up (median of the repetitions, min–max)\n");
    let _ = writeln!(out, "| contender | started | first response | ready | CPU time | peak RSS | disk after start | disk at end |");
    let _ = writeln!(out, "|---|---|---|---|---|---|---|---|");
    for c in &r.contenders {
        let runs: Vec<&Run> = r.runs.iter().filter(|x| x.contender == c.name).collect();
        let started: Vec<_> = runs.iter().filter_map(|x| x.startup).collect();
        let pick = |f: &dyn Fn(&Run) -> Option<f64>| -> Vec<f64> {
            runs.iter().filter_map(|x| f(x)).collect()
        };
        let secs = |s: f64| fmt_us(s * 1e6);
        let bytes = |b: f64| fmt_bytes(b);
        let _ = writeln!(
            out,
            "| {} | {}/{} | {} | {} | {} | {} | {} | {} |",
            c.name,
            started.len(),
            runs.len(),
            med(
                &started
                    .iter()
                    .map(|s| s.first_response_s)
                    .collect::<Vec<_>>(),
                &secs
            ),
            med(
                &started.iter().map(|s| s.ready_s).collect::<Vec<_>>(),
                &secs
            ),
            med(
                &pick(&|x| x.usage.map(|u| u.cpu_user_s + u.cpu_system_s)),
                &secs
            ),
            med(&pick(&|x| x.usage.map(|u| u.peak_rss_bytes as f64)), &bytes),
            med(
                &started
                    .iter()
                    .map(|s| s.disk_after_start_bytes as f64)
                    .collect::<Vec<_>>(),
                &bytes
            ),
            med(&pick(&|x| x.disk_end_bytes.map(|d| d as f64)), &bytes),
        );
    }
    out.push('\n');
}

fn scenario(r: &Results, name: &str, call: &str, out: &mut String) {
    let Some(info) = r.scenarios.iter().find(|s| s.name == name) else {
        return;
    };
    let _ = writeln!(out, "## {name} (`{call}`)\n");
    let sample_point = r
        .runs
        .iter()
        .flat_map(|x| &x.points)
        .find(|p| p.scenario == name);
    let var_names: Vec<String> = sample_point
        .map(|p| p.vars.keys().cloned().collect())
        .unwrap_or_default();
    let has_target = info.points.iter().any(|p| p.contains("target="));
    let mut head: Vec<String> = var_names.clone();
    head.push("clients".into());
    if has_target {
        head.push("target".into());
    }
    head.extend(["contender", "req/s (delta)", "p90 ms (delta)", "failed"].map(String::from));
    let _ = writeln!(out, "| {} |", head.join(" | "));
    let _ = writeln!(out, "|{}", "---|".repeat(head.len()));
    for label in &info.points {
        for c in &r.contenders {
            let pts: Vec<_> = r
                .runs
                .iter()
                .filter(|x| x.contender == c.name)
                .flat_map(|x| &x.points)
                .filter(|p| p.scenario == name && &p.point == label)
                .collect();
            let Some(first) = pts.first() else { continue };
            let loads: Vec<_> = pts.iter().filter_map(|p| p.load.as_ref()).collect();
            let qps = median(&loads.iter().map(|l| l.requests_per_s).collect::<Vec<_>>());
            let p90 = median(
                &loads
                    .iter()
                    .map(|l| l.latency_us.p90 as f64 / 1e3)
                    .collect::<Vec<_>>(),
            );
            let base = c.baseline.as_deref().filter(|b| *b != c.name);
            let base_of = |f: &dyn Fn(&crate::load::LoadResult) -> f64| -> Option<f64> {
                let b = base?;
                let v: Vec<f64> = r
                    .runs
                    .iter()
                    .filter(|x| x.contender == b)
                    .flat_map(|x| &x.points)
                    .filter(|p| p.scenario == name && &p.point == label)
                    .filter_map(|p| p.load.as_ref().map(f))
                    .collect();
                median(&v)
            };
            let bq = base_of(&|l| l.requests_per_s);
            let bp = base_of(&|l| l.latency_us.p90 as f64 / 1e3);
            let failed: u64 = loads.iter().map(|l| l.failures).sum();
            let errors = pts.iter().filter(|p| p.error.is_some()).count();
            let mut row: Vec<String> = first.vars.values().cloned().collect();
            row.push(first.clients.to_string());
            if has_target {
                row.push(first.target.clone());
            }
            row.push(c.name.clone());
            row.push(with_delta(qps, bq, &|v| fmt_rate(v)));
            row.push(with_delta(p90, bp, &|v| format!("{v:.2}")));
            row.push(match (failed, errors) {
                (0, 0) => "0".into(),
                (f, 0) => f.to_string(),
                (f, e) => format!("{f} ({e} points did not run)"),
            });
            let _ = writeln!(out, "| {} |", row.join(" | "));
        }
    }
    out.push('\n');
}

/// `2804 (-5%)`, or the bare value for the baseline itself.
pub fn with_delta(v: Option<f64>, base: Option<f64>, fmt: &dyn Fn(f64) -> String) -> String {
    match (v, base) {
        (None, _) => "—".into(),
        (Some(v), Some(b)) if b > 0.0 => format!("{} ({:+.0}%)", fmt(v), (v - b) / b * 100.0),
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
            "0.4 (+0%)"
        );
        assert_eq!(with_delta(Some(7.0), None, &|v| format!("{v:.0}")), "7");
        assert_eq!(with_delta(None, Some(1.0), &|v| format!("{v}")), "—");
    }
}
