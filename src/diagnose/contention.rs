//! Findings that say why verdicts may not settle on this machine (docs/report.md,
//! "Contention"): a contender whose threads waited for a CPU, or whose pinned CPUs other
//! processes were using, over its measured windows; and a repetition far from the others.

use super::*;

/// Per contender: the worst point where other processes used its pinned CPUs for
/// `limits.contention` or more of their time, with how long its threads waited for a CPU
/// there — summed over every repetition's measured windows (a paired point's slices, a
/// whole point's load). Waiting alone is no finding: a server with more busy threads than
/// CPUs waits for itself, which is its own cost. Contenders not pinned apart from the load
/// are not read (the load would count as "others").
pub(super) fn contention(r: &Results, limits: Limits) -> Vec<Finding> {
    let cpus = r.environment.contender_cpus.clone().unwrap_or_default();
    // contender → point → (cpu, wait, others, window seconds)
    let mut sums: BTreeMap<String, BTreeMap<String, [f64; 4]>> = BTreeMap::new();
    for run in &r.runs {
        for p in &run.points {
            let Some(c) = &p.cost else { continue };
            let window = if p.slices.is_empty() {
                p.load.as_ref().map_or(0.0, |l| l.duration_s)
            } else {
                p.slices.iter().map(|s| s.duration_s).sum()
            };
            let s = sums
                .entry(run.id.subject())
                .or_default()
                .entry(p.id.to_string())
                .or_insert([0.0; 4]);
            s[0] += c.cpu_s;
            s[1] += c.wait_s;
            s[2] += c.others_s.unwrap_or(f64::NAN);
            s[3] += window;
        }
    }
    let mut out = Vec::new();
    for (contender, points) in sums {
        let shares: Vec<(String, f64, Option<f64>)> = points
            .into_iter()
            .map(|(place, [cpu, wait, others, window])| {
                let waited = if cpu + wait > 0.0 {
                    wait / (cpu + wait)
                } else {
                    0.0
                };
                let held = window * cpus.len() as f64;
                let others = (others.is_finite() && held > 0.0).then(|| others / held);
                (place, waited, others)
            })
            .collect();
        let worse = |x: &(String, f64, Option<f64>)| x.2.unwrap_or(0.0);
        let material: Vec<&(String, f64, Option<f64>)> = shares
            .iter()
            .filter(|x| worse(x) >= limits.contention)
            .collect();
        let Some(worst) = material.iter().max_by(|a, b| worse(a).total_cmp(&worse(b))) else {
            continue;
        };
        out.push(Finding::Contention {
            contender,
            place: worst.0.clone(),
            waited: worst.1,
            others: worst.2,
            cpus: cpus.clone(),
            points: material.len(),
            of: shares.len(),
        });
    }
    out
}

/// Per contender and point (of three repetitions or more): a repetition whose throughput is
/// `limits.odd_repetition` times the median of the point's or more, or that much less (a repetition served 2,456 req/s
/// where the others served 12,079 and 11,890): something happened to that one.
pub(super) fn odd_repetitions(r: &Results, limits: Limits) -> Vec<Finding> {
    let mut rates: BTreeMap<String, BTreeMap<String, Vec<(u32, f64)>>> = BTreeMap::new();
    for run in &r.runs {
        for p in &run.points {
            if let Some(l) = p.load.as_ref().filter(|l| l.requests_per_s > 0.0) {
                rates
                    .entry(run.id.subject())
                    .or_default()
                    .entry(p.id.to_string())
                    .or_default()
                    .push((run.id.repetition, l.requests_per_s));
            }
        }
    }
    let mut out = Vec::new();
    for (contender, points) in rates {
        let mut found: Vec<(String, u32, f64, Vec<f64>, f64)> = Vec::new();
        for (place, reps) in points.into_iter().filter(|(_, v)| v.len() >= 3) {
            // Against the median of all of them: with three, the median of the two others
            // would be pulled halfway to the odd one.
            let Ok(all) = Sample::new(reps.iter().map(|x| x.1).collect()) else {
                continue;
            };
            let median = all.median();
            for (i, &(repetition, rate)) in reps.iter().enumerate() {
                let others: Vec<f64> = reps
                    .iter()
                    .enumerate()
                    .filter(|(j, _)| *j != i)
                    .map(|(_, x)| x.1)
                    .collect();
                let factor = (rate / median).max(median / rate);
                if factor >= limits.odd_repetition {
                    found.push((place.clone(), repetition, rate, others, factor));
                }
            }
        }
        let Some((place, repetition, rate, others, factor)) =
            found.iter().max_by(|a, b| a.4.total_cmp(&b.4)).cloned()
        else {
            continue;
        };
        out.push(Finding::OddRepetition {
            contender,
            place,
            repetition,
            requests_per_s: rate,
            others,
            factor,
            more: found.len() - 1,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::ServerCost;

    mod fixtures {
        use crate::results::{PointRun, Results, Run, RunId, Status};

        /// A run per (contender, repetition), each with one point served at that rate for a
        /// second.
        pub fn results_with_points(list: &[(&str, u32, f64)]) -> Results {
            let mut r: Results = serde_json::from_value(serde_json::json!({
                "schema_version": 2, "tool": "t", "name": "n", "plan_path": "p", "status": "complete",
                "smoke": false, "started_at": "", "finished_at": null,
                "environment": crate::results::env::Environment::detect(),
                "baseline": null, "repetitions": 3, "order": "paired",
                "contenders": [], "scenarios": [], "runs": [], "warnings": []
            }))
            .unwrap();
            for &(c, repetition, rate) in list {
                let mut p = PointRun::new(crate::plan::PointId::at(1));
                p.load = Some(crate::load::result::tests::part(
                    &[100; 10],
                    rate as u64,
                    1.0,
                ));
                r.runs.push(Run {
                    id: RunId::new(c, repetition),
                    status: Status::Complete,
                    error: None,
                    started_at: String::new(),
                    startup: None,
                    points: vec![p],
                    usage: None,
                    disk_end_bytes: None,
                    exits: Vec::new(),
                    logs: Vec::new(),
                    compat: Vec::new(),
                    environment: None,
                    block: None,
                    tool: None,
                    what_if: None,
                    confirmations: Vec::new(),
                    edge: None,
                });
            }
            r
        }
    }

    fn cost(cpu_s: f64, wait_s: f64, others_s: Option<f64>) -> ServerCost {
        ServerCost {
            cpu_s,
            voluntary_switches: 0,
            involuntary_switches: 0,
            wait_s,
            others_s,
        }
    }

    #[test]
    fn contention_is_found_where_a_contender_waited_or_others_used_its_cpus() {
        let mut r = fixtures::results_with_points(&[("a", 1, 1000.0), ("a", 2, 1000.0)]);
        r.environment.contender_cpus = Some(vec![1]);
        // One second measured each: 0.6 s of CPU, 0.4 s waiting, others 0.35 s of CPU 1.
        for run in &mut r.runs {
            run.points[0].cost = Some(cost(0.6, 0.4, Some(0.35)));
        }
        let f = contention(&r, Limits::default());
        assert_eq!(f.len(), 1, "{f:?}");
        let Finding::Contention { waited, others, .. } = &f[0] else {
            panic!("{f:?}")
        };
        assert!((waited - 0.4).abs() < 1e-9 && (others.unwrap() - 0.35).abs() < 1e-9);
        let text = f[0].to_string();
        assert!(
            text.contains("waited for a CPU 40% of the time") && text.contains("CPU 1 for 35%"),
            "{text}"
        );
        // A quiet machine: nothing; nor a server waiting for its own threads.
        for (wait, others) in [(0.01, Some(0.02)), (0.4, Some(0.02)), (0.4, None)] {
            for run in &mut r.runs {
                run.points[0].cost = Some(cost(0.6, wait, others));
            }
            assert!(
                contention(&r, Limits::default()).is_empty(),
                "{wait} {others:?}"
            );
        }
    }

    #[test]
    fn a_repetition_far_from_the_others_is_named_with_its_numbers() {
        let r = fixtures::results_with_points(&[
            ("a", 1, 12_079.0),
            ("a", 2, 2_456.0),
            ("a", 3, 2_389.0),
            ("b", 1, 1000.0),
            ("b", 2, 1100.0),
            ("b", 3, 950.0),
        ]);
        let f = odd_repetitions(&r, Limits::default());
        assert_eq!(f.len(), 1, "{f:?}");
        let text = f[0].to_string();
        assert!(
            text.starts_with("a, s [clients=1]: repetition 1 served 12079 requests/s, 4.9× the others (2456 and 2389) — "),
            "{text}"
        );
    }
}
