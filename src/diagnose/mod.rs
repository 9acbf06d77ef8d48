//! Findings computed from results — the problems people miss when they read a table:
//! a latency floor or tail near 40 ms (Nagle's algorithm meeting delayed ACKs: the server does
//! not set TCP_NODELAY), a load generator that was the bottleneck, repetitions too noisy
//! to compare, and repetitions that ran on different machines or CPUs. Findings never change
//! results; every report shows them. The rules are in docs/report.md.

use std::collections::BTreeMap;
use std::fmt;

use serde::Serialize;

#[cfg(test)]
use hdrhistogram::Histogram;

use crate::results::Results;
use crate::stats::Sample;

#[cfg(test)]
use crate::load::stall::stall_in;
pub use crate::load::stall::{stall_band, STALL_BAND_US};
mod contention;
mod machine;
mod words;
use contention::*;
use machine::*;

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Finding {
    /// Most calls of a point failed: its latency and throughput are of failures, which are
    /// often fast; they are left out of the comparisons.
    MostCallsFailed {
        contender: String,
        /// `scenario [point]` for each such point.
        places: Vec<String>,
        failed: u64,
        of: u64,
        /// The commonest failure (`connect error: …`).
        example: String,
    },
    /// Calls sit in the 40–50 ms band with (almost) nothing between the main mode and it.
    StallBand {
        contender: String,
        /// `scenario [point]` where it shows.
        places: Vec<String>,
        /// Share of the calls in the band, over those places.
        share: f64,
        /// The whole distribution sits there (a floor), not only a tail.
        floor: bool,
        /// The contender's CPU use over those points (cores; its CPU is measured over warm-up
        /// and measurement), when known.
        contender_cores: Option<f64>,
        /// What measuring a point again with TCP_NODELAY forced showed (plan `confirm`).
        #[serde(skip_serializing_if = "Option::is_none")]
        check: Option<StallCheck>,
    },
    /// The load generator's threads were busy (running or waiting for a CPU) most of the
    /// time: the figure measures it.
    GeneratorSaturated {
        contender: String,
        place: String,
        utilization: f64,
        /// The contender's CPU use over that point (cores), when known: low, it was waiting
        /// for the client.
        contender_cores: Option<f64>,
    },
    /// Throughput varied across repetitions by more than the threshold.
    /// Per contender: the points where throughput varied across repetitions by more than
    /// the threshold, `(max − min) / median`.
    NoisyRepetitions {
        contender: String,
        /// `scenario [point]`, each point whose spread is over the threshold.
        places: Vec<String>,
        /// Points of this contender measured more than once.
        of: usize,
        /// The point with the largest spread, and that spread.
        worst: String,
        spread_pct: f64,
        repetitions: usize,
    },
    /// The hypervisor took a share of the CPUs' time (steal) during some points: the figures
    /// vary with the host's other tenants, whatever the contenders do.
    CpuStolen {
        /// Points (over all contenders and repetitions) where the share reached the limit.
        points: usize,
        /// Points measured in all.
        of: usize,
        /// Start-ups (spawn to ready) where it did, and start-ups measured.
        startups: usize,
        startups_of: usize,
        /// Paired slices where it did (their rounds were run again and left out of the
        /// verdicts), and slices measured.
        slices: usize,
        slices_of: usize,
        /// The largest share, and where: `contender #N, scenario [point]` or `… start-up`.
        max_share: f64,
        worst: String,
        /// Mean share over the affected points and start-ups.
        mean_share: f64,
    },
    /// Repetitions ran on different machines or CPUs (a run resumed elsewhere, CPUs taken
    /// offline, another affinity): their figures mix the change with the machine.
    MachineDiffers {
        /// `host`, `CPU model`, `CPUs online` or `CPUs allowed`.
        what: String,
        /// Each value seen, with the repetitions that ran with it.
        seen: Vec<Seen>,
    },
    /// A merged run: at some points one machine's paired ratio is far from the others'
    /// (`stats::machines::odd_one_out`) — something about that machine, not the change.
    MachineDisagrees {
        contender: String,
        baseline: String,
        machine: String,
        /// The verdict's figure, e.g. `CPU per request`.
        figure: String,
        /// The ratio on that machine, and the others' combined (at the first place).
        there: f64,
        elsewhere: f64,
        places: Vec<String>,
    },
    /// The serving table's medians and a paired verdict's estimate disagree by more than
    /// 5 % (`analysis::trim::Trim`): the estimate's trimmed
    /// mean left out rounds that were bad for one side only (`whose`), or the medians weigh
    /// something the paired rounds do not.
    TrimmedAway {
        contender: String,
        baseline: String,
        figure: String,
        /// The table's ratio of medians, and the verdict's estimate with its interval (at
        /// the first place).
        table: f64,
        paired: String,
        whose: Option<String>,
        /// Trimmed rounds that were `whose`'s own (at the first place).
        rounds: usize,
        places: Vec<String>,
    },
    /// A delay variant's proxy saw no connection: the members that should connect to the
    /// edge's port ignored `{port:NAME}` (a port written into their configuration), so the
    /// delay measured nothing.
    EdgeUnused { contender: String, port: String },
    /// A delay variant's proxy could not reach the listener on the edge's real port: the
    /// member that should listen there does not (it ignores `{port:NAME}`, or it failed).
    EdgeUnreached {
        contender: String,
        port: String,
        failures: u64,
    },
    /// A delay variant's proxy was busy most of the time (or its holds ended late): its own
    /// limits, not the edge's hold, shaped the figures.
    EdgeStrained {
        contender: String,
        port: String,
        /// Its threads' CPU over its wall time (1.0 = a whole core).
        busy: f64,
        late_mean_us: f64,
        hold_us: u64,
    },
    /// Over its measured windows other processes used a contender's pinned CPUs a material
    /// share of the time (and its threads waited for a CPU meanwhile): the machine, not the
    /// change, moves its figures, and verdicts settle slowly there, if at all.
    Contention {
        contender: String,
        /// The point where it was worst.
        place: String,
        /// There, the share of its threads' runnable time spent waiting for a CPU.
        waited: f64,
        /// There, the share of its pinned CPUs' time other processes used (`None`: not
        /// pinned apart from the load, so not read).
        others: Option<f64>,
        /// Its pinned CPUs.
        cpus: Vec<usize>,
        /// Points where either share was material, of the points it served.
        points: usize,
        of: usize,
    },
    /// A repetition of a point served far more or less than the others (a throughput 5×
    /// another's): something happened to that one — a neighbour, a cold cache, a hiccup.
    OddRepetition {
        contender: String,
        place: String,
        repetition: u32,
        requests_per_s: f64,
        /// The other repetitions' throughput at that point.
        others: Vec<f64>,
        /// How far off the others' median, as a factor (≥ 1).
        factor: f64,
        /// Other such repetitions of the contender (at other points or the same).
        more: usize,
    },
}

/// A stall-band point measured again with TCP_NODELAY forced on the contender's sockets.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StallCheck {
    /// `Some(true)`: the band went away (Nagle + delayed ACK); `Some(false)`: it stayed
    /// (something else holds the answers); `None`: it could not be forced.
    pub confirmed: Option<bool>,
    /// The point it was measured again at.
    pub place: String,
    pub p50_before_us: u64,
    pub p50_after_us: Option<u64>,
    pub p99_before_us: u64,
    pub p99_after_us: Option<u64>,
    /// Sockets the option was set on (listening and established).
    pub sockets: usize,
    /// Established sockets the server had turned the option off on after accepting them.
    pub cleared_by_server: usize,
    /// Why it could not be forced, or the measurement's error.
    pub why: Option<String>,
}

/// One value of a machine property and the repetitions (`contender #N`) that saw it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Seen {
    pub value: String,
    pub runs: Vec<String>,
}

/// Thresholds for findings.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// A tail counts from this share of calls in the band.
    pub stall_share: f64,
    pub saturated: f64,
    /// (max − min) / median of requests/s across repetitions.
    pub noisy: f64,
    /// Share of the CPUs' time stolen by the hypervisor during a point or a start-up.
    pub stolen: f64,
    /// Share of a contender's runnable time waiting for a CPU, or of its pinned CPUs' time
    /// used by others, from which contention is named.
    pub contention: f64,
    /// How far (a factor) a repetition's throughput must be from the others' median.
    pub odd_repetition: f64,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            stall_share: 0.01,
            saturated: 0.9,
            noisy: 0.10,
            stolen: crate::results::STEAL_LIMIT,
            contention: 0.10,
            odd_repetition: 3.0,
        }
    }
}

/// The contender's CPU use at a point as a share of the CPUs it could use, when known.
fn contender_busy(
    r: &Results,
    run: &crate::results::Run,
    p: &crate::results::PointRun,
) -> Option<f64> {
    let l = p.load.as_ref()?;
    let secs = l.duration_s + l.warmup_s;
    let env = r.environment_of(run);
    let cpus = env
        .contender_cpus
        .as_ref()
        .map_or(env.cpus_allowed.len(), |c| c.len())
        .max(1);
    let cpu = p.contender_cpu_s?;
    (secs > 0.0).then(|| cpu / secs / cpus as f64)
}

/// Per contender: (places, failed calls, calls, count by failure) of its mostly-failed points.
type Failing = (Vec<String>, u64, u64, BTreeMap<String, u64>);

pub fn findings(r: &Results, limits: Limits) -> Vec<Finding> {
    let mut out = most_calls_failed(r);
    stalls_and_saturation(r, limits, &mut out);
    out.extend(stolen(r, limits));
    out.extend(noisy_repetitions(r, limits));
    out.extend(machine_differs(r));
    out.extend(edges(r));
    out.extend(contention(r, limits));
    out.extend(odd_repetitions(r, limits));
    out
}

/// Points where most calls failed, per contender, with the commonest failure.
fn most_calls_failed(r: &Results) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut failing: BTreeMap<String, Failing> = BTreeMap::new();
    for run in &r.runs {
        for p in &run.points {
            let Some(l) = p.load.as_ref().filter(|l| l.mostly_failed()) else {
                continue;
            };
            let e = failing.entry(run.id.subject()).or_default();
            let place = p.id.to_string();
            if !e.0.contains(&place) {
                e.0.push(place);
            }
            e.1 += l.failures;
            e.2 += l.requests;
            for o in l.outcomes.iter().filter(|o| !o.success) {
                let what = match &o.example {
                    Some(x) => format!("{}: {x}", o.label),
                    None => o.label.clone(),
                };
                *e.3.entry(what).or_default() += o.count;
            }
        }
    }
    for (c, (places, failed, of, kinds)) in failing {
        let example = kinds
            .into_iter()
            .max_by_key(|(_, n)| *n)
            .map(|(k, _)| k)
            .unwrap_or_default();
        out.push(Finding::MostCallsFailed {
            contender: c.to_string(),
            places,
            failed,
            of,
            example,
        });
    }
    out
}

/// The 40 ms band, per contender over all its points (put first), and points where the load
/// generator was saturated (after what `out` holds).
fn stalls_and_saturation(r: &Results, limits: Limits, out: &mut Vec<Finding>) {
    let mut per: BTreeMap<String, Stalls> = BTreeMap::new();
    for run in &r.runs {
        // A +nodelay variant has the option forced: a band there is no missing TCP_NODELAY
        // (its contender's own finding, and its confirmation, say what it is).
        let forced = run.id.variant == Some(crate::plan::WhatIf::NoDelay);
        for p in &run.points {
            let Some(l) = &p.load else { continue };
            let place = p.id.to_string();
            // Nagle's stall leaves the server idle; a busy one is queueing, which explains
            // 40 ms without it.
            let idle = contender_busy(r, run, p).is_none_or(|b| b < 0.5);
            if let Some((band, total)) = stall_band(l).filter(|_| idle && !forced) {
                let share = band as f64 / total as f64;
                if share >= limits.stall_share {
                    let e = per.entry(run.id.subject()).or_insert(Stalls {
                        floor: true,
                        ..Stalls::default()
                    });
                    e.band += band;
                    e.total += total;
                    if !e.places.contains(&place) {
                        e.places.push(place.clone());
                    }
                    e.cpu_s += p.contender_cpu_s.unwrap_or(0.0);
                    e.secs += l.duration_s + l.warmup_s;
                    e.floor &= l.latency_us.p50 >= STALL_BAND_US.0;
                }
            }
            if l.generator.utilization >= limits.saturated {
                let f = Finding::GeneratorSaturated {
                    contender: run.id.subject(),
                    place,
                    utilization: l.generator.utilization,
                    contender_cores: p
                        .contender_cpu_s
                        .filter(|_| l.duration_s > 0.0)
                        .map(|c| c / (l.duration_s + l.warmup_s)),
                };
                if !out.iter().any(|o| same_place(o, &f)) {
                    out.push(f);
                }
            }
        }
    }
    for (c, s) in per {
        out.insert(
            0,
            Finding::StallBand {
                contender: c.to_string(),
                share: s.band as f64 / s.total as f64,
                floor: s.floor,
                contender_cores: (s.secs > 0.0 && s.cpu_s > 0.0).then(|| s.cpu_s / s.secs),
                check: stall_check(r, &c),
                places: s.places,
            },
        );
    }
}

/// The first confirmation of `contender`'s stall points, against that point's own figures:
/// one that confirmed first, else one that did not, else one that could not be checked.
fn stall_check(r: &Results, contender: &str) -> Option<StallCheck> {
    let mut all = Vec::new();
    for run in r.runs_of(contender) {
        for c in &run.confirmations {
            let Some(before) = run
                .points
                .iter()
                .find(|p| p.id == c.point)
                .and_then(|p| p.load.as_ref())
            else {
                continue;
            };
            let after = c.load.as_ref();
            // A file from before the rule may hold a "confirmed" measured on no calls.
            let check = crate::load::stall::band_gone(after);
            let why = c
                .error
                .clone()
                .or_else(|| (!c.forced.took()).then(|| c.forced.problems.join("; ")))
                .or_else(|| check.clone().err());
            all.push(StallCheck {
                confirmed: c.confirmed.filter(|_| check.is_ok()),
                place: c.point.to_string(),
                p50_before_us: before.latency_us.p50,
                p50_after_us: after.map(|l| l.latency_us.p50),
                p99_before_us: before.latency_us.p99,
                p99_after_us: after.map(|l| l.latency_us.p99),
                sockets: c.forced.listeners + c.forced.established,
                cleared_by_server: c.forced.cleared_by_server,
                why: why.filter(|w| !w.is_empty()),
            });
        }
    }
    let rank = |c: &StallCheck| match c.confirmed {
        Some(true) => 0,
        Some(false) => 1,
        None => 2,
    };
    all.into_iter().min_by_key(rank)
}

/// Calls in the stall band for one contender, summed over the points where they show.
#[derive(Default)]
struct Stalls {
    band: u64,
    total: u64,
    places: Vec<String>,
    cpu_s: f64,
    secs: f64,
    /// Every such point has its median in the band.
    floor: bool,
}

fn same_place(a: &Finding, b: &Finding) -> bool {
    matches!((a, b), (Finding::GeneratorSaturated { contender: c1, place: p1, .. }, Finding::GeneratorSaturated { contender: c2, place: p2, .. }) if c1 == c2 && p1 == p2)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hist(values: &[(u64, u64)]) -> Histogram<u64> {
        let mut h = Histogram::<u64>::new(3).unwrap();
        for &(v, n) in values {
            h.record_n(v, n).unwrap();
        }
        h
    }

    /// Issue 71: what a short window cannot read is not said as a figure, and a run of
    /// hundreds of repetitions is not listed on one line.
    #[test]
    fn findings_say_only_what_was_read() {
        let saturated = |cores| {
            Finding::GeneratorSaturated {
                contender: "a".into(),
                place: "get".into(),
                utilization: 0.99,
                contender_cores: Some(cores),
            }
            .to_string()
        };
        assert!(!saturated(0.0).contains("of a core"), "{}", saturated(0.0));
        assert!(saturated(0.4).contains("used 40% of a core"));
        let contention = |others| {
            Finding::Contention {
                contender: "a".into(),
                place: "get".into(),
                waited: 0.5,
                others: Some(others),
                cpus: vec![1],
                points: 1,
                of: 1,
            }
            .to_string()
        };
        assert!(
            contention(1.66).contains("CPU 1 for all of their time"),
            "{}",
            contention(1.66)
        );
        assert!(contention(0.3).contains("CPU 1 for 30% of their time"));
        let odd = Finding::OddRepetition {
            contender: "a".into(),
            place: "get".into(),
            repetition: 7,
            requests_per_s: 900.0,
            others: (0..230).map(|i| 4000.0 + f64::from(i)).collect(),
            factor: 4.6,
            more: 0,
        }
        .to_string();
        assert!(
            odd.contains("(230 others, 4000 to 4229, median 4115)"),
            "{odd}"
        );
        assert!(odd.len() < 400, "{odd}");
    }

    #[test]
    fn a_stall_band_must_stand_apart_from_the_main_mode() {
        // Nagle's tail: fast calls and a few at 44 ms, nothing between.
        assert_eq!(
            stall_in(&hist(&[(120, 950), (44_000, 50)])),
            Some((50, 1000))
        );
        // Nagle's floor: nearly every call at 44 ms.
        assert_eq!(
            stall_in(&hist(&[(44_000, 980), (300, 20)])),
            Some((980, 1000))
        );
        // A tail with calls all along the way up to it is not a stall.
        assert_eq!(
            stall_in(&hist(&[(120, 900), (20_000, 50), (44_000, 50)])),
            None
        );
        // A queueing server: the body itself runs from 10 to 70 ms.
        let queue: Vec<(u64, u64)> = (10..70).map(|ms| (ms * 1000, 10)).collect();
        assert_eq!(stall_in(&hist(&queue)), None);
        // Median 28 ms, some calls at 40-50 ms: the band is the body's upper side.
        assert_eq!(
            stall_in(&hist(&[(28_000, 600), (45_000, 150), (20_000, 250)])),
            None
        );
        assert_eq!(stall_in(&hist(&[])), None);
    }
}
