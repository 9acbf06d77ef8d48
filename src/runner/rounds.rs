//! Paired rounds (docs/verdicts.md): one point for every contender serving it, in rounds; in
//! a round every contender gets one short slice of load, in a balanced order (a Williams
//! design: A B, B A, …), so each round compares them in the same seconds of the machine's
//! life. Rounds are added until the main ratio (server CPU per request, else throughput) is
//! precise enough and decided (different or equivalent) within the repetition, or the limit. A round the host stole from is run
//! again. Written against the [`Serving`] seam, so it runs on fakes in its tests.

use super::events::Reporter;
use super::seam::Serving;
use crate::load::{LoadResult, Stop};
use crate::plan::{Paired, Rounds, SLICE_MIN, SLICE_MIN_CLOCKED, SLICE_PROBE};
use crate::results::{balanced_rounds, PointId, PointRun, ServerCost, Slice};
use crate::stats::paired::{across, round_precision, rounds_decide, williams, Bands};
use std::time::Duration;

/// How a point's rounds run: at least `min` clean ones, at most `max` (and never more than
/// half as many again counting stolen ones), stopping after an even number of rounds once
/// the main ratio is within `precision` (±share) *and* decided against `bands` — different
/// or equivalent — for every contender: an inconclusive point gets the rounds. Both are read
/// as the report will read them over `repetitions` ([`across`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Course {
    pub(super) min: u32,
    pub(super) max: u32,
    pub(super) precision: Option<f64>,
    pub(super) bands: Bands,
    /// The main ratio is server CPU per request (where measured): the plan judges it. Else
    /// throughput.
    pub(super) cpu: bool,
    /// Rotates the order by repetition too, so no contender always opens a repetition.
    pub(super) repetition: u32,
    /// The plan's repetitions, which the report's interval will be over.
    pub(super) repetitions: u32,
    /// What each slice runs: its length (under an auto slice, the probe until the first
    /// round's rates choose), or a count-stopped point's count.
    pub(super) stop: Stop,
    /// An auto slice: the scenario's duration and the plan's rounds, from which the slice
    /// and the limits are set again after the first round.
    pub(super) auto: Option<(Duration, Rounds)>,
    /// `rounds = "duration"`: each contender's share of the repetition's wall-clock — the
    /// scenario's duration, its slices' edges and the probe round included — which the
    /// rounds stop within, so a screen costs what each build alone would (docs/history.md).
    pub(super) wall: Option<Duration>,
}

impl Course {
    /// A count-stopped point is one round (its count is the point); a duration-stopped one
    /// gets at least enough rounds for its duration, and at least two, so A B is always
    /// followed by B A.
    pub(super) fn of(
        stop: Stop,
        paired: &crate::plan::Paired,
        repetition: u32,
        repetitions: u32,
    ) -> Course {
        let (slice, auto) = match (stop, paired.slice) {
            (Stop::Count(_), _) => (SLICE_PROBE, None),
            (Stop::Duration(_), Some(d)) => (d, None),
            (Stop::Duration(d), None) => (SLICE_PROBE, Some((d, paired.rounds))),
        };
        let (min, max, precision) = limits(stop, paired.rounds, slice);
        Course {
            min,
            max,
            precision,
            bands: Bands {
                noise: paired.noise,
                equivalence: paired.equivalence,
            },
            cpu: paired.judge.has("cpu_per_request"),
            repetition,
            repetitions,
            stop: match stop {
                Stop::Count(_) => stop,
                Stop::Duration(_) => Stop::Duration(slice),
            },
            auto,
            wall: match (stop, paired.rounds) {
                (Stop::Duration(d), Rounds::Duration) => Some(d),
                _ => None,
            },
        }
    }

    /// After an auto-sliced point's first round: its slices become the shortest that hold
    /// [`crate::plan::SLICE_CALLS`] calls of the slowest contender at the rate it served
    /// the probe with — down to [`SLICE_MIN_CLOCKED`] where the rounds are held to the
    /// clock, else [`SLICE_MIN`] — and its limits follow.
    fn sliced(self, slowest_per_s: Option<f64>) -> Course {
        let Some((duration, rounds)) = self.auto else {
            return self;
        };
        let shortest = match self.wall {
            Some(_) => SLICE_MIN_CLOCKED,
            None => SLICE_MIN,
        };
        let slice = Paired::auto_slice(slowest_per_s, shortest);
        let (min, max, precision) = limits(Stop::Duration(duration), rounds, slice);
        Course {
            min,
            max,
            precision,
            stop: Stop::Duration(slice),
            auto: None,
            ..self
        }
    }
}

/// The least and most rounds, and the precision to stop at, of a point stopped by `stop`
/// whose slices last `slice`.
fn limits(stop: Stop, rounds: Rounds, slice: Duration) -> (u32, u32, Option<f64>) {
    // Enough rounds for the duration, and at least two, in pairs: A B is followed by B A.
    let cover = |d: Duration| {
        let wanted = (d.as_secs_f64() / slice.as_secs_f64()).ceil() as u32;
        wanted.max(2).div_ceil(2) * 2
    };
    match (stop, rounds) {
        (Stop::Count(_), _) => (1, 1, None),
        (Stop::Duration(_), Rounds::Fixed(n)) => (n, n, None),
        (Stop::Duration(d), Rounds::Auto { max, precision }) => {
            let max = Paired::round_limit(max, slice);
            (cover(d).min(max), max, Some(precision))
        }
        (Stop::Duration(d), Rounds::Duration) => (cover(d), cover(d), None),
    }
}

/// The slowest calls per second among `outs`' slices of round `round` (`None` when one of
/// them answered nothing, or none served).
fn slowest(outs: &[PointRun], round: u32) -> Option<f64> {
    let rates: Vec<f64> = outs
        .iter()
        .filter_map(|o| o.slices.iter().find(|x| x.round == round))
        .map(|x| x.requests_per_s)
        .collect();
    if rates.is_empty() || rates.iter().any(|r| r.is_nan() || *r <= 0.0) {
        return None;
    }
    rates.into_iter().reduce(f64::min)
}

/// What the rounds of a point left: a `PointRun` per contender (in the order given), the
/// rounds run, and the precision reached (when it could be computed).
pub(super) struct Done {
    pub(super) points: Vec<PointRun>,
    pub(super) rounds: u32,
    pub(super) reached: Option<f64>,
}

/// Runs the rounds of point `id` for `subjects`; `baselines` pairs each contender with its
/// baseline's index among them (for the precision stop).
pub(super) fn run(
    subjects: &mut [&mut dyn Serving],
    course: Course,
    baselines: &[(usize, usize)],
    id: &PointId,
    cancel: &crate::cancel::Cancel,
    rep: &mut dyn Reporter,
) -> Done {
    let n = subjects.len();
    let mut outs: Vec<PointRun> = subjects
        .iter()
        .map(|x| {
            let mut o = PointRun::new(id.clone());
            o.leader = x.leader();
            o.error = x.failed().map(str::to_string);
            o
        })
        .collect();
    let mut serving: Vec<bool> = subjects.iter().map(|x| x.failed().is_none()).collect();
    let mut parts: Vec<Vec<LoadResult>> = vec![Vec::new(); n];
    for (x, _) in subjects.iter_mut().zip(&serving).filter(|(_, on)| **on) {
        x.start_profile();
    }
    let cpu0: Vec<f64> = subjects.iter_mut().map(|x| x.cpu_s()).collect();
    let mut course = course;
    // `round` counts every round run, `clean` those the host did not steal from: a round
    // with a stolen slice is run again (it is left out of the verdicts), up to half as
    // many rounds again as `max`, so a stormy host cannot hold a point forever.
    let (mut round, mut clean) = (0, 0);
    let mut reached = None;
    let began = std::time::Instant::now();
    while clean < course.max
        && round < course.max + course.max / 2
        && !cancel.is_cancelled()
        && serving.contains(&true)
    {
        let order = williams(n, round as usize + course.repetition as usize - 1);
        for (position, &k) in order.iter().enumerate() {
            if !serving[k] {
                continue;
            }
            let m = subjects[k].slice(course.stop, rep);
            match m.load {
                Ok(load) => {
                    outs[k]
                        .slices
                        .push(slice_of(&load, round, position, m.cost, m.steal));
                    parts[k].push(load);
                }
                Err(e) => {
                    outs[k].error = Some(e);
                    serving[k] = false;
                }
            }
            if subjects[k].exited() {
                serving[k] = false;
            }
        }
        let stolen = outs
            .iter()
            .any(|o| o.slices.iter().any(|x| x.round == round && x.stolen()));
        if round == 0 && course.auto.is_some() {
            course = course.sliced(slowest(&outs, 0));
            rep.rounds_limit(course.max);
        }
        round += 1;
        if !stolen {
            clean += 1;
        }
        rep.round_done(round);
        if out_of_time(&course, n, began.elapsed(), round, clean) {
            break;
        }
        if clean >= course.min && round % 2 == 0 {
            if let Some(target) = course.precision {
                reached = worst_precision(&outs, baselines, &course);
                if reached.is_some_and(|r| r <= target) && decided(&outs, baselines, &course) {
                    break;
                }
            }
        }
    }
    if course.precision.is_some() && reached.is_none() {
        reached = worst_precision(&outs, baselines, &course);
    }
    for (k, out) in outs.iter_mut().enumerate() {
        out.round_limit = course.precision.map(|_| course.max);
        out.profile = subjects[k].stop_profile();
        out.contender_cpu_s = Some((subjects[k].cpu_s() - cpu0[k]).max(0.0));
        out.load = LoadResult::merge(&parts[k]);
        out.cost = sum_costs(&out.slices);
        let steals: Vec<f64> = out.slices.iter().filter_map(|x| x.steal).collect();
        out.steal = (!steals.is_empty()).then(|| steals.iter().sum::<f64>() / steals.len() as f64);
    }
    Done {
        points: outs,
        rounds: round,
        reached,
    }
}

/// Whether a `rounds = "duration"` point stops here: after an even number of rounds (A B
/// is followed by B A) and two clean ones, when two more rounds at the pace so far would
/// carry the repetition past every contender's share of its wall-clock.
fn out_of_time(c: &Course, contenders: usize, spent: Duration, round: u32, clean: u32) -> bool {
    let Some(share) = c.wall else {
        return false;
    };
    let pace = spent / round.max(1);
    round % 2 == 0 && clean >= 2 && spent + pace * 2 > share * contenders as u32
}

fn slice_of(
    load: &LoadResult,
    round: u32,
    position: usize,
    cost: Option<ServerCost>,
    steal: Option<(f64, u64)>,
) -> Slice {
    Slice {
        round,
        position: position as u32,
        requests: load.requests,
        failures: load.failures,
        items: load.items,
        duration_s: load.duration_s,
        requests_per_s: load.requests_per_s,
        items_per_s: load.items_per_s,
        p50_us: load.latency_us.p50,
        p90_us: load.latency_us.p90,
        p99_us: load.latency_us.p99,
        cost,
        steal: steal.map(|s| s.0),
        steal_ticks: steal.map(|s| s.1),
    }
}

/// The widest interval (±share) of the main ratio over the contenders whose baseline is
/// among them, from this repetition's rounds as the report will read it over the plan's
/// repetitions ([`across`]); `None` when no pair is there yet.
fn worst_precision(outs: &[PointRun], baselines: &[(usize, usize)], c: &Course) -> Option<f64> {
    let j = c.repetitions as usize;
    baselines
        .iter()
        .map(|&(k, b)| {
            let pairs = main_pairs(&outs[b].slices, &outs[k].slices, c.cpu);
            round_precision(&pairs, across(j, pairs.len())).unwrap_or(f64::INFINITY)
        })
        .reduce(f64::max)
}

/// Whether every contender's main ratio against its baseline, from this repetition's rounds
/// so far as the report will read it over the plan's repetitions, is decided: different or
/// equivalent against the course's bands ([`rounds_decide`]).
fn decided(outs: &[PointRun], baselines: &[(usize, usize)], c: &Course) -> bool {
    let j = c.repetitions as usize;
    baselines.iter().all(|&(k, b)| {
        let pairs = main_pairs(&outs[b].slices, &outs[k].slices, c.cpu);
        rounds_decide(&pairs, c.bands, across(j, pairs.len()))
    })
}

/// The round-by-round pairs (baseline, contender) of the main figure, balanced for
/// position: server CPU per request where both slices measured it and `cpu` (the plan
/// judges it), else requests/s.
pub fn main_pairs(base: &[Slice], other: &[Slice], cpu: bool) -> Vec<(f64, f64)> {
    if cpu {
        let pairs = balanced_rounds(base, other, &|x| x.cpu_us_per_request());
        if !pairs.is_empty() {
            return pairs;
        }
    }
    balanced_rounds(base, other, &|x| Some(x.requests_per_s))
}

fn sum_costs(slices: &[Slice]) -> Option<ServerCost> {
    slices.iter().try_fold(
        ServerCost {
            cpu_s: 0.0,
            voluntary_switches: 0,
            involuntary_switches: 0,
            wait_s: 0.0,
            others_s: Some(0.0),
        },
        |a, x| {
            let c = x.cost?;
            Some(ServerCost {
                cpu_s: a.cpu_s + c.cpu_s,
                voluntary_switches: a.voluntary_switches + c.voluntary_switches,
                involuntary_switches: a.involuntary_switches + c.involuntary_switches,
                wait_s: a.wait_s + c.wait_s,
                others_s: a.others_s.zip(c.others_s).map(|(a, b)| a + b),
            })
        },
    )
}

#[cfg(test)]
#[path = "rounds_tests.rs"]
mod tests;
