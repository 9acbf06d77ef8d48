//! The figures of a results file are checked when it is read: it may come from another
//! machine (a shard) or have been changed by hand, and a rate of −100 or 1e308, or a p50 of
//! 18,446,744,073,709 s, would be shown as it is and carried into a merge. Only what bakeoff
//! itself could have written passes: finite, not negative, latencies under a day.

use super::{Results, ServerCost, Slice};
use crate::load::{Latency, LoadResult};

/// The largest latency bakeoff records, in microseconds: a day (its longest timeout is far
/// shorter).
const MOST_US: u64 = 86_400_000_000;

/// A rate, a duration or a share: finite and not negative.
fn number(what: &str, v: f64) -> Result<(), String> {
    if (0.0..=1e15).contains(&v) {
        Ok(())
    } else {
        // `{:e}` past a number a reader can take in: 1e308, not 309 digits.
        let v = match v.abs() < 1e15 {
            true => v.to_string(),
            false => format!("{v:e}"),
        };
        Err(format!("`{what}` is {v}, not a figure bakeoff writes"))
    }
}

fn latency(what: &str, l: &Latency) -> Result<(), String> {
    for (k, v) in [
        ("min", l.min),
        ("p50", l.p50),
        ("p90", l.p90),
        ("p99", l.p99),
        ("p99_9", l.p99_9),
        ("max", l.max),
    ] {
        if v > MOST_US {
            return Err(format!("`{what}.{k}` is {v} µs, more than a day"));
        }
    }
    number(&format!("{what}.mean"), l.mean)?;
    number(&format!("{what}.stdev"), l.stdev)
}

fn load(l: &LoadResult) -> Result<(), String> {
    for (k, v) in [
        ("duration_s", l.duration_s),
        ("warmup_s", l.warmup_s),
        ("requests_per_s", l.requests_per_s),
        ("items_per_s", l.items_per_s),
        ("bytes_per_s", l.bytes_per_s),
    ] {
        number(k, v)?;
    }
    if l.failures > l.requests || l.successes > l.requests {
        return Err(format!(
            "{} successes and {} failures of {} requests",
            l.successes, l.failures, l.requests
        ));
    }
    latency("latency_us", &l.latency_us)?;
    match &l.service_time_us {
        Some(s) => latency("service_time_us", s),
        None => Ok(()),
    }
}

fn cost(c: &ServerCost) -> Result<(), String> {
    number("cost.cpu_s", c.cpu_s)?;
    number("cost.wait_s", c.wait_s)?;
    c.others_s.map_or(Ok(()), |o| number("cost.others_s", o))
}

fn slice(s: &Slice) -> Result<(), String> {
    number("duration_s", s.duration_s)?;
    number("requests_per_s", s.requests_per_s)?;
    number("items_per_s", s.items_per_s)?;
    for (k, v) in [
        ("p50_us", s.p50_us),
        ("p90_us", s.p90_us),
        ("p99_us", s.p99_us),
    ] {
        if v > MOST_US {
            return Err(format!("`{k}` is {v} µs, more than a day"));
        }
    }
    s.cost.as_ref().map_or(Ok(()), cost)
}

impl Results {
    /// Every measured figure is one bakeoff could have written; the first that is not, where.
    pub fn check_figures(&self) -> Result<(), String> {
        for run in &self.runs {
            for p in &run.points {
                let at = |e: String| format!("run {}, {}: {e}", run.id, p.id);
                p.load.as_ref().map_or(Ok(()), load).map_err(at)?;
                p.cost.as_ref().map_or(Ok(()), cost).map_err(at)?;
                for (k, s) in p.slices.iter().enumerate() {
                    slice(s).map_err(|e| at(format!("slice {}: {e}", k + 1)))?;
                }
            }
        }
        Ok(())
    }
}
