//! Points whose load follows the contender's own answers, run one contender at a time: a
//! capacity search (the highest open-loop rate under a latency goal) and a staged ramp.

use std::time::Duration;

use super::ctx::{Ctx, Shape};
use super::events::Reporter;
use super::live::Live;
use super::measure::{load_once, prepare_point};
use crate::load::{LoadResult, Pacing, Stop};
use crate::plan::{Capacity, PointId, Scenario};
use crate::results::{CapacityRun, CapacityStep, PointRun};

/// A capacity search at one point; the point's `load` is the step at the rate found.
pub(super) fn capacity_point(
    ctx: &Ctx,
    live: &mut Live,
    s: &Scenario,
    p: &PointId,
    rep: &mut dyn Reporter,
) -> PointRun {
    let cap = s.capacity.as_ref().expect("a capacity scenario");
    let mut out = PointRun::new(p.clone());
    if !prepare_point(ctx, live, s, p, &mut out) {
        return out;
    }
    let (mut cpu, mut best): (f64, Option<PointRun>) = (0.0, None);
    let mut error = None;
    let found = search(cap, &mut |rate| {
        if ctx.cancel.is_cancelled() {
            return None;
        }
        let mut step = PointRun::new(out.id.clone());
        let how = Shape {
            pacing: Pacing::Open { rate },
            stop: Stop::Duration(cap.step),
            // At a rate too low for one request in the warm-up, there is none.
            warmup: if 1.0 / rate <= cap.step_warmup.as_secs_f64() {
                cap.step_warmup
            } else {
                Duration::ZERO
            },
            clients: p.clients,
        };
        load_once(ctx, live, s, p, how, &mut step, rep);
        cpu += step.contender_cpu_s.unwrap_or(0.0);
        let judged = match &step.load {
            Some(l) => judge(cap, rate, l),
            None => {
                error = step.error.clone();
                return None;
            }
        };
        if judged.passed
            && best
                .as_ref()
                .is_none_or(|b| b.load.as_ref().is_some_and(|l| l.rate < Some(rate)))
        {
            best = Some(step);
        }
        Some(judged)
    });
    out.contender_cpu_s = Some(cpu);
    if let Some(b) = best {
        out.load = b.load;
        out.cost = b.cost;
        out.steal = b.steal;
    }
    if found.steps.is_empty() {
        out.error = error.or(Some("the capacity search ran no step".into()));
    } else if let Some(e) = error {
        // A step that could not run ends the search; what it found so far stays.
        out.error = Some(format!("the search stopped early: {e}"));
    }
    out.capacity = Some(found);
    out
}

/// A staged ramp at one point: each stage measured in turn, one result per stage.
pub(super) fn stage_points(
    ctx: &Ctx,
    live: &mut Live,
    s: &Scenario,
    p: &PointId,
    rep: &mut dyn Reporter,
) -> Vec<PointRun> {
    let mut first = PointRun::new(p.stage(0, &s.stages[0]));
    if !prepare_point(ctx, live, s, p, &mut first) {
        return vec![first];
    }
    let leader = first.leader.clone();
    let mut outs = Vec::new();
    for (k, st) in s.stages.iter().enumerate() {
        if ctx.cancel.is_cancelled() || live.running.exited().is_some() {
            break;
        }
        let mut out = PointRun::new(p.stage(k, st));
        out.leader = leader.clone();
        let how = Shape {
            pacing: st
                .rate
                .map_or(p.pacing(s.pacing), |rate| Pacing::Open { rate }),
            stop: Stop::Duration(st.duration),
            warmup: if k == 0 { s.warmup } else { Duration::ZERO },
            clients: st.clients.unwrap_or(p.clients),
        };
        load_once(ctx, live, s, p, how, &mut out, rep);
        outs.push(out);
    }
    outs
}

/// Whether a step held: every call answered well, none unsent or unfinished, and the
/// latency at the goal's percentile (from when each call was due) within the goal.
pub(super) fn judge(cap: &Capacity, rate: f64, l: &LoadResult) -> CapacityStep {
    let latency = cap.percentile.of(&l.latency_us);
    let goal_us = cap.goal.as_secs_f64() * 1e6;
    let unsent = l.dropped + l.unfinished;
    let why = if l.successes == 0 {
        Some("no call succeeded".to_string())
    } else if l.requests < crate::plan::MIN_STEP_CALLS {
        Some(format!(
            "only {} calls; a step is judged on at least {}",
            l.requests,
            crate::plan::MIN_STEP_CALLS
        ))
    } else if l.failures > 0 {
        Some(format!("{} of {} calls failed", l.failures, l.requests))
    } else if unsent > 0 {
        Some(format!(
            "{unsent} calls could not be sent on time or did not finish"
        ))
    } else if latency as f64 > goal_us {
        Some(format!(
            "{} {} > {}",
            cap.percentile.as_str(),
            ms(latency as f64),
            ms(goal_us)
        ))
    } else {
        None
    };
    CapacityStep {
        rate,
        achieved_rps: l.requests_per_s,
        latency_us: latency,
        failures: l.failures,
        unsent,
        passed: why.is_none(),
        why,
    }
}

/// `14.2 ms`, `850 µs`.
fn ms(us: f64) -> String {
    if us >= 1000.0 {
        format!("{:.1} ms", us / 1000.0)
    } else {
        format!("{us:.0} µs")
    }
}

/// The search: the rate doubles from `min_rate` until a step fails (or `max_rate` passed),
/// then the interval between the highest passing and the lowest failing rate is halved at
/// its geometric midpoint until they are within `precision`, or `max_steps` were run.
/// `step` measures one rate; `None` means it could not run, which ends the search.
pub(super) fn search(
    cap: &Capacity,
    step: &mut dyn FnMut(f64) -> Option<CapacityStep>,
) -> CapacityRun {
    let (mut lo, mut hi): (Option<f64>, Option<f64>) = (None, None);
    let mut steps = Vec::new();
    let mut rate = cap.min_rate;
    while steps.len() < cap.max_steps as usize {
        let Some(s) = step(rate) else { break };
        let passed = s.passed;
        steps.push(s);
        if passed {
            lo = Some(rate);
        } else {
            hi = Some(rate);
        }
        rate = match (lo, hi) {
            (None, Some(_)) => break, // not even the lowest rate holds
            (Some(l), None) if l >= cap.max_rate => break,
            (Some(l), None) => (l * 2.0).min(cap.max_rate),
            (Some(l), Some(h)) if h / l <= 1.0 + cap.precision => break,
            (Some(l), Some(h)) => (l * h).sqrt(),
            (None, None) => unreachable!("a step was judged"),
        };
    }
    CapacityRun {
        rate: lo,
        failed_at: hi,
        steps,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cap(min: f64, max: f64) -> Capacity {
        Capacity {
            percentile: crate::plan::Percentile::P99,
            goal: Duration::from_millis(10),
            min_rate: min,
            max_rate: max,
            step: Duration::from_secs(1),
            step_warmup: Duration::ZERO,
            precision: 0.05,
            max_steps: 20,
        }
    }

    /// A server that holds up to `limit` requests/s.
    fn limited(limit: f64) -> impl FnMut(f64) -> Option<CapacityStep> {
        move |rate| {
            Some(CapacityStep {
                rate,
                achieved_rps: rate.min(limit),
                latency_us: if rate <= limit { 500 } else { 50_000 },
                failures: 0,
                unsent: 0,
                passed: rate <= limit,
                why: None,
            })
        }
    }

    #[test]
    fn the_search_lands_within_its_precision_of_the_limit() {
        for limit in [130.0, 1234.0, 4999.0, 77_777.0] {
            let r = search(&cap(10.0, 200_000.0), &mut limited(limit));
            let (lo, hi) = (r.rate.unwrap(), r.failed_at.unwrap());
            assert!(lo <= limit && limit < hi, "{limit}: {lo}..{hi}");
            assert!(hi / lo <= 1.05, "{limit}: {lo}..{hi}");
            assert!(r.steps.len() <= 20, "{}", r.steps.len());
            assert!(r.steps.iter().all(|s| s.passed == (s.rate <= limit)));
        }
    }

    #[test]
    fn the_search_says_when_the_bound_is_not_reached_or_nothing_holds() {
        let r = search(&cap(10.0, 1000.0), &mut limited(1e9));
        assert_eq!((r.rate, r.failed_at), (Some(1000.0), None));
        assert_eq!(r.steps.last().unwrap().rate, 1000.0);
        let r = search(&cap(10.0, 1000.0), &mut limited(5.0));
        assert_eq!((r.rate, r.failed_at), (None, Some(10.0)));
        assert_eq!(r.steps.len(), 1);
        // A step that cannot run ends the search with what was found.
        let mut n = 0;
        let r = search(&cap(10.0, 1000.0), &mut |rate| {
            n += 1;
            (n < 3).then(|| limited(1e9)(rate)).flatten()
        });
        assert_eq!((r.rate, r.steps.len()), (Some(20.0), 2));
    }

    #[test]
    fn a_step_fails_on_errors_unsent_calls_or_latency() {
        let c = cap(10.0, 1000.0);
        let mut l = crate::load::result::tests::part(&[100, 200], 10, 1.0);
        l.latency_us.p99 = 9_000;
        // Ten calls decide nothing (one stall of the host could).
        let few = judge(&c, 100.0, &l);
        assert!(!few.passed && few.why.unwrap().contains("only 10 calls"));
        l.requests = 100;
        l.successes = 100;
        assert!(judge(&c, 100.0, &l).passed);
        l.latency_us.p99 = 11_000;
        assert!(judge(&c, 100.0, &l).why.unwrap().starts_with("p99 11"));
        l.latency_us.p99 = 9_000;
        l.dropped = 3;
        assert!(!judge(&c, 100.0, &l).passed);
        l.dropped = 0;
        l.failures = 1;
        assert!(judge(&c, 100.0, &l).why.unwrap().contains("failed"));
    }
}
