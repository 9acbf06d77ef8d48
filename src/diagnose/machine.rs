//! Findings about the machine and the setup rather than the contenders: CPU the hypervisor took, repetitions on different machines or too noisy to trust, a delay's proxy that was unused, unreachable or strained.

use super::*;

/// Throughput that varies across repetitions, per contender. Not for paired runs: there the
/// variation between repetitions is inside every verdict's interval (the bootstrap
/// resamples repetitions).
pub(super) fn noisy_repetitions(r: &Results, limits: Limits) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut rates: BTreeMap<String, BTreeMap<String, Vec<f64>>> = BTreeMap::new();
    for run in r.runs.iter().filter(|_| r.paired.is_none()) {
        for p in &run.points {
            if let Some(l) = &p.load {
                rates
                    .entry(run.id.subject())
                    .or_default()
                    .entry(p.id.to_string())
                    .or_default()
                    .push(l.requests_per_s);
            }
        }
    }
    for (c, points) in rates {
        let mut of = 0;
        let mut noisy: Vec<(String, f64, usize)> = Vec::new();
        for (place, v) in points {
            let Ok(s) = Sample::new(v) else { continue };
            if s.len() < 2 || s.median() <= 0.0 {
                continue;
            }
            of += 1;
            let spread = (s.max() - s.min()) / s.median();
            if spread > limits.noisy {
                noisy.push((place, spread * 100.0, s.len()));
            }
        }
        let Some((worst, spread_pct, _)) = noisy.iter().max_by(|a, b| a.1.total_cmp(&b.1)).cloned()
        else {
            continue;
        };
        out.push(Finding::NoisyRepetitions {
            contender: c.to_string(),
            repetitions: noisy.iter().map(|n| n.2).max().unwrap_or(0),
            places: noisy.into_iter().map(|n| n.0).collect(),
            of,
            worst,
            spread_pct,
        });
    }
    out
}

/// Delay variants: a proxy nobody used, one that could not reach its listener, or one that
/// could not keep its holds.
pub(super) fn edges(r: &Results) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for run in &r.runs {
        let Some(e) = &run.edge else { continue };
        let contender = run.id.subject();
        if !seen.insert(contender.clone()) {
            continue;
        }
        let busy = if e.wall_s > 0.0 {
            e.cpu_s / e.wall_s
        } else {
            0.0
        };
        if e.upstream_failures > 0 {
            out.push(Finding::EdgeUnreached {
                contender,
                port: e.port.clone(),
                failures: e.upstream_failures,
            });
        } else if e.connections == 0 && run.points.iter().any(|p| p.load.is_some()) {
            out.push(Finding::EdgeUnused {
                contender,
                port: e.port.clone(),
            });
        } else if busy > 0.8 || e.late_mean_us > 100.0 + 0.1 * e.hold_us as f64 {
            out.push(Finding::EdgeStrained {
                contender,
                port: e.port.clone(),
                busy,
                late_mean_us: e.late_mean_us,
                hold_us: e.hold_us,
            });
        }
    }
    out
}

/// Points and start-ups during which the hypervisor took at least `limits.stolen` of the
/// CPUs' time.
pub(super) fn stolen(r: &Results, limits: Limits) -> Option<Finding> {
    let (mut of, mut startups_of, mut slices_of) = (0, 0, 0);
    let (mut points, mut startups, mut slices) = (0, 0, 0);
    let mut hit: Vec<(f64, String)> = Vec::new();
    for run in &r.runs {
        let who = format!("{} #{}", run.id.subject(), run.id.repetition);
        if let Some(s) = run.startup.as_ref().and_then(|s| s.steal) {
            startups_of += 1;
            if s >= limits.stolen {
                startups += 1;
                hit.push((s, format!("{who}, start-up")));
            }
        }
        for p in &run.points {
            for x in &p.slices {
                slices_of += 1;
                if x.stolen() {
                    slices += 1;
                    let s = x.steal.unwrap_or(0.0);
                    hit.push((s, format!("{who}, {}, round {}", p.id, x.round + 1)));
                }
            }
            let Some(s) = p.steal else { continue };
            of += 1;
            if s >= limits.stolen {
                points += 1;
                hit.push((s, format!("{who}, {}", p.id)));
            }
        }
    }
    let (max_share, worst) = hit.iter().max_by(|a, b| a.0.total_cmp(&b.0))?.clone();
    Some(Finding::CpuStolen {
        points,
        of,
        startups,
        slices,
        slices_of,
        startups_of,
        max_share,
        worst,
        mean_share: hit.iter().map(|h| h.0).sum::<f64>() / hit.len() as f64,
    })
}

/// Repetitions whose recorded machine differs in host, CPU model or CPUs.
pub(super) fn machine_differs(r: &Results) -> Vec<Finding> {
    // Merged shards of a paired run: every verdict is made within one machine's blocks and
    // combined across machines; the Machines table says which ran what.
    if r.paired.is_some() && r.shards.as_ref().is_some_and(|s| s.have.len() > 1) {
        return Vec::new();
    }
    type Property = fn(&crate::results::env::Environment) -> String;
    let properties: [(&str, Property); 4] = [
        ("host", |e| e.hostname.clone()),
        ("CPU model", |e| e.cpu_model.clone()),
        ("CPUs online", |e| e.cpus_online.to_string()),
        ("CPUs allowed", |e| {
            let cpus: Vec<String> = e.cpus_allowed.iter().map(|c| c.to_string()).collect();
            format!("{} [{}]", cpus.len(), cpus.join(","))
        }),
    ];
    let mut out = Vec::new();
    for (what, property) in properties {
        let mut seen: Vec<Seen> = Vec::new();
        for run in &r.runs {
            let Some(env) = &run.environment else {
                continue;
            };
            let value = property(env);
            let name = format!("{} #{}", run.id.subject(), run.id.repetition);
            match seen.iter_mut().find(|s| s.value == value) {
                Some(s) => s.runs.push(name),
                None => seen.push(Seen {
                    value,
                    runs: vec![name],
                }),
            }
        }
        if seen.len() > 1 {
            out.push(Finding::MachineDiffers {
                what: what.to_string(),
                seen,
            });
        }
    }
    out
}
