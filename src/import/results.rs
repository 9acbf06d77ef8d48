//! bakeoff's own `results.json`: each repetition is a sample. Rows are named
//! `contender/scenario [point]` (throughput and latency percentiles) and `contender/start-up`.

use serde_json::Value;

use super::{error, BenchSet, Format, ImportError};
use crate::results::Results;

pub fn parse(label: &str, v: &Value) -> Result<BenchSet, ImportError> {
    let r = Results::from_json(v.clone()).map_err(|e| error(label, None, format!("{e:#}")))?;
    let mut set = BenchSet::new(label, Format::BakeoffResults);
    set.config = config(&r);
    for run in &r.runs {
        let c = run.id.subject();
        if let Some(s) = &run.startup {
            set.push(
                &format!("{c}/start-up"),
                "first response s",
                s.first_response_s,
            );
            set.push(&format!("{c}/start-up"), "ready s", s.ready_s);
            if let Some(cpu) = s.cpu_s {
                set.push(&format!("{c}/start-up"), "CPU s", cpu);
            }
        }
        // The whole repetition's (start-up and every scenario), named for what it is.
        if let Some(u) = &run.usage {
            set.push(
                &format!("{c}/repetition"),
                "CPU s",
                u.cpu_user_s + u.cpu_system_s,
            );
            set.push(
                &format!("{c}/repetition"),
                "peak RSS B",
                u.peak_rss_bytes as f64,
            );
        }
        for p in &run.points {
            let Some(l) = &p.load else { continue };
            let name = format!("{c}/{}", p.id);
            set.push(&name, "req/s", l.requests_per_s);
            set.push(&name, "p50 µs", l.latency_us.p50 as f64);
            set.push(&name, "p90 µs", l.latency_us.p90 as f64);
            set.push(&name, "p99 µs", l.latency_us.p99 as f64);
        }
    }
    if set.rows.is_empty() {
        return Err(error(label, None, "no measured runs in this results.json"));
    }
    Ok(set)
}

/// Where the results were measured (CPU, kernel, CPUs, a smoke run) and what each contender
/// built from source was built from: `compare` says which commits it compares.
fn config(r: &Results) -> Vec<(String, String)> {
    let mut out = vec![
        ("cpu".into(), r.environment.cpu_model.clone()),
        ("kernel".into(), r.environment.kernel.clone()),
        (
            "cpus".into(),
            format!(
                "{} online, {} allowed",
                r.environment.cpus_online,
                r.environment.cpus_allowed.len()
            ),
        ),
    ];
    if r.smoke {
        out.push(("run".into(), "smoke".into()));
    }
    for c in r
        .contenders
        .iter()
        .filter(|c| c.variant.is_none() && c.noise_of.is_none())
    {
        if let Some(s) = &c.source {
            let at = s.commit.as_deref().map_or("a folder".to_string(), |x| {
                format!(
                    "{}{}",
                    crate::units::prefix(x, 12),
                    if s.dirty { ", dirty" } else { "" }
                )
            });
            out.push((
                format!("source {}", c.name),
                format!(
                    "{} @ {} ({at})",
                    s.repository,
                    s.reference.as_deref().unwrap_or("working tree")
                ),
            ));
        }
    }
    out
}
