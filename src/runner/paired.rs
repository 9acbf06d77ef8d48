//! Paired order (docs/verdicts.md): the contenders of a repetition are started one at a
//! time (start-up is only timed cleanly alone), then serve side by side, pinned to the same
//! CPUs. Each scenario point is measured in rounds; in a round every contender gets one
//! short slice of load, in a balanced order (a Williams design: A B, B A, …), so each round
//! compares them in the same seconds of the machine's life. Rounds are added until the main
//! ratio (server CPU per request, else throughput) is precise enough within the repetition,
//! or the plan's limit.

use std::time::Duration;

use anyhow::Context as _;

use super::{measure, report_point, Ctx, Live, Reporter};
use crate::client::{Client, Options};
use crate::load::{LoadConfig, LoadResult, Runs, Stop};
use crate::plan::{Point, Rounds, Scenario, Spread};
use crate::results::{self, balanced_rounds, PointRun, Results, ServerCost, Slice};
use crate::stats::paired::{round_precision, williams};

impl Ctx<'_> {
    /// One paired repetition of the contenders `cis` (those not yet run in it).
    pub(super) fn paired_repetition(
        &self,
        cis: &[usize],
        repetition: u32,
        results: &mut Results,
        rep: &mut dyn Reporter,
        step: &mut usize,
        steps: usize,
    ) -> anyhow::Result<()> {
        let block = results
            .runs
            .iter()
            .filter_map(|r| r.block)
            .max()
            .unwrap_or(0)
            + 1;
        let mut lives = Vec::new();
        for &ci in cis {
            if self.cancel.is_cancelled() {
                break;
            }
            *step += 1;
            rep.contender_starting(&self.plan.contenders[ci].name, repetition, *step, steps);
            let Some(live) = self.start(ci, repetition, Some(block), results, rep)? else {
                continue;
            };
            // A noise instance only answers compat; it does not stay up while others serve.
            if live.serves(self.plan, results) {
                lives.push(live);
            } else {
                self.finish(live, results)?;
            }
        }
        let served = self.serve_paired(&mut lives, repetition, results, rep);
        // Confirming a stall forces an option on that contender for good: last, one
        // contender at a time, after every paired point of the repetition.
        for live in &mut lives {
            if served.is_ok() && live.serves(self.plan, results) {
                self.confirm_stalls(live, results, rep)?;
            }
        }
        for live in lives {
            self.finish(live, results)?;
        }
        served
    }

    fn serve_paired(
        &self,
        lives: &mut [Live],
        repetition: u32,
        results: &mut Results,
        rep: &mut dyn Reporter,
    ) -> anyhow::Result<()> {
        for s in &self.plan.scenarios {
            for p in &s.points {
                if self.cancel.is_cancelled() {
                    return Ok(());
                }
                let mut active = Vec::new();
                for (i, l) in lives.iter_mut().enumerate() {
                    let skip = p.spread() == Spread::All && l.endpoints.len() == 1;
                    if l.serves(self.plan, results)
                        && !l.died("before", s, p, results, rep)
                        && !skip
                    {
                        active.push(i);
                    }
                }
                if active.is_empty() {
                    continue;
                }
                for &i in &active {
                    let name = &self.plan.contenders[lives[i].ci].name;
                    rep.point_started(name, &s.name, &p.label);
                }
                // A capacity search and a ramp follow each contender's own answers: one
                // contender at a time, compared afterwards by ratio like any other figure.
                if s.capacity.is_some() || !s.stages.is_empty() {
                    for &i in &active {
                        let name = self.plan.contenders[lives[i].ci].name.clone();
                        for point in self.points_of(&mut lives[i], s, p, rep) {
                            super::report_point(rep, &name, s, p, &point);
                            results.runs[lives[i].idx].points.push(point);
                        }
                        results.save(self.dir).context("writing results.json")?;
                        lives[i].died("during", s, p, results, rep);
                    }
                    continue;
                }
                let points = self.paired_point(lives, &active, repetition, s, p, rep);
                for (&i, point) in active.iter().zip(points) {
                    let name = self.plan.contenders[lives[i].ci].name.clone();
                    report_point(rep, &name, s, p, &point);
                    results.runs[lives[i].idx].points.push(point);
                }
                results.save(self.dir).context("writing results.json")?;
                for &i in &active {
                    lives[i].died("during", s, p, results, rep);
                }
            }
        }
        Ok(())
    }

    /// One point for every active contender, in rounds; a `PointRun` per contender, in the
    /// order of `active`.
    fn paired_point(
        &self,
        lives: &mut [Live],
        active: &[usize],
        repetition: u32,
        s: &Scenario,
        p: &Point,
        rep: &mut dyn Reporter,
    ) -> Vec<PointRun> {
        let mut outs: Vec<PointRun> = active
            .iter()
            .map(|_| PointRun::new(results::point_id(s, p)))
            .collect();
        let paired = &self.plan.paired;
        let slice_stop = match s.stop {
            Stop::Count(_) => s.stop,
            Stop::Duration(_) => Stop::Duration(paired.slice),
        };
        // Per contender: setup steps, its clients' connections (kept open for every slice),
        // the warm-up. One that fails them sits the rounds out.
        let mut sessions: Vec<Option<Box<dyn Runs>>> = Vec::new();
        for (k, &i) in active.iter().enumerate() {
            let leader = lives[i].find_leader(p, self.rt);
            if let Ok(l) = &leader {
                outs[k].leader = l.clone();
            }
            let opened = leader
                .and_then(|_| self.setup_steps(&lives[i], s, p))
                .and_then(|()| {
                    let cfg = self.config(s, p, slice_stop)?;
                    let mut session = self
                        .client(&lives[i], s, p)?
                        .open(&cfg)
                        .map_err(|e| e.to_string())?;
                    if lives[i].forcing.is_some() {
                        let f = lives[i].running.force_nodelay(true);
                        super::whatif::count(lives[i].forcing.as_mut(), &f);
                    }
                    if !s.warmup.is_zero() {
                        let warm = Stop::Duration(s.warmup);
                        measure(&mut lives[i].running, rep, |pr| {
                            session.run(warm, Duration::ZERO, pr)
                        })
                        .load
                        .map_err(|e| e.to_string())?;
                    }
                    Ok(session)
                });
            match opened {
                Ok(session) => sessions.push(Some(session)),
                Err(e) => {
                    outs[k].error = Some(e);
                    sessions.push(None);
                }
            }
        }
        let (min, max, precision) = rounds(s.stop, paired.slice, paired.rounds);
        // Each contender's profile spans all the rounds: perf follows its own threads, so
        // it records what they did in that contender's slices.
        let mut recordings: Vec<Option<super::profiles::Started>> = active
            .iter()
            .enumerate()
            .map(|(k, &i)| {
                (s.profile && sessions[k].is_some())
                    .then(|| self.start_profile(&lives[i], &outs[k].id))
            })
            .collect();
        let mut parts: Vec<Vec<LoadResult>> = vec![Vec::new(); active.len()];
        let cpu0: Vec<f64> = active
            .iter()
            .map(|&i| lives[i].running.usage().cpu_s())
            .collect();
        // `round` counts every round run, `clean` those the host did not steal from: a round
        // with a stolen slice is run again (it is left out of the verdicts), up to half as
        // many rounds again as `max`, so a stormy host cannot hold a point forever.
        let (mut round, mut clean) = (0, 0);
        let mut reached = None;
        while clean < max
            && round < max + max / 2
            && !self.cancel.is_cancelled()
            && sessions.iter().any(Option::is_some)
        {
            // Rotated by repetition too, so no contender always opens a repetition's rounds.
            let order = williams(active.len(), round as usize + repetition as usize - 1);
            for (position, &k) in order.iter().enumerate() {
                let i = active[k];
                let Some(session) = sessions[k].as_mut() else {
                    continue;
                };
                let ticks0 = crate::sys::cpu_ticks();
                let m = measure(&mut lives[i].running, rep, |pr| {
                    session.run(slice_stop, Duration::ZERO, pr)
                });
                let steal =
                    crate::sys::steal_share(&ticks0, &crate::sys::cpu_ticks(), &self.busy_cpus());
                match m.load.map(|l| (l, m.cost, steal)) {
                    Ok((load, cost, steal)) => {
                        outs[k].slices.push(Slice {
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
                            steal,
                        });
                        parts[k].push(load);
                    }
                    Err(e) => {
                        outs[k].error = Some(e.to_string());
                        sessions[k] = None;
                    }
                }
                if lives[i].running.exited().is_some() {
                    sessions[k] = None;
                }
            }
            let stolen = outs
                .iter()
                .any(|o| o.slices.iter().any(|x| x.round == round && x.stolen()));
            round += 1;
            if !stolen {
                clean += 1;
            }
            if clean >= min && round % 2 == 0 {
                if let Some(target) = precision {
                    reached = self.precision(lives, active, &outs);
                    if reached.is_some_and(|r| r <= target) {
                        break;
                    }
                }
            }
        }
        if precision.is_some() && reached.is_none() {
            reached = self.precision(lives, active, &outs);
        }
        rep.rounds_done(&s.name, &p.label, round, reached);
        for (k, out) in outs.iter_mut().enumerate() {
            let i = active[k];
            if let Some(r) = recordings[k].take() {
                out.profile = Some(self.stop_profile(r));
            }
            out.contender_cpu_s = Some((lives[i].running.usage().cpu_s() - cpu0[k]).max(0.0));
            out.load = LoadResult::merge(&parts[k]);
            out.cost = sum_costs(&out.slices);
            let steals: Vec<f64> = out.slices.iter().filter_map(|x| x.steal).collect();
            out.steal =
                (!steals.is_empty()).then(|| steals.iter().sum::<f64>() / steals.len() as f64);
        }
        outs
    }

    /// The widest within-repetition interval (±share) of the main ratio over the active
    /// contenders that have their baseline active too; `None` when no pair is there yet.
    fn precision(&self, lives: &[Live], active: &[usize], outs: &[PointRun]) -> Option<f64> {
        let name = |k: usize| self.plan.contenders[lives[active[k]].ci].name.as_str();
        let mut worst: Option<f64> = None;
        for k in 0..active.len() {
            let Some(base) = self.plan.baseline_of(name(k)) else {
                continue;
            };
            let Some(b) = (0..active.len()).find(|&j| name(j) == base) else {
                continue;
            };
            let pairs = main_pairs(&outs[b].slices, &outs[k].slices);
            let p = round_precision(&pairs).unwrap_or(f64::INFINITY);
            worst = Some(worst.map_or(p, |w: f64| w.max(p)));
        }
        worst
    }

    fn config(&self, s: &Scenario, p: &Point, stop: Stop) -> Result<LoadConfig, String> {
        let threads = self.load_cpus.len();
        LoadConfig::new(
            p.pacing(s.pacing),
            stop,
            p.clients,
            threads,
            Duration::ZERO,
            s.timeout,
        )
        .map(|c| {
            c.pin_to(self.load_cpus.clone())
                .cancelled_by(self.cancel.clone())
        })
        .map_err(|e| e.to_string())
    }

    fn client(&self, live: &Live, s: &Scenario, p: &Point) -> Result<Client, String> {
        let opts = Options {
            seed: self.plan.seed,
            keep_body: false,
            tls: s.tls.resolve(Some(&live.state))?,
        };
        Client::build(
            &s.call.with_vars(&p.vars),
            live.targets(p),
            self.protos,
            opts,
        )
        .map_err(|e| format!("{e:#}"))
    }
}

/// (fewest rounds, most rounds, precision to stop at) for a point. A count-stopped point is
/// one round (its count is the point); a duration-stopped one gets at least enough rounds
/// for its duration, and at least two, so A B is always followed by B A.
fn rounds(stop: Stop, slice: Duration, rounds: Rounds) -> (u32, u32, Option<f64>) {
    let Stop::Duration(d) = stop else {
        return (1, 1, None);
    };
    match rounds {
        Rounds::Fixed(n) => (n, n, None),
        Rounds::Auto { max, precision } => {
            let wanted = (d.as_secs_f64() / slice.as_secs_f64()).ceil() as u32;
            let min = (wanted.max(2).div_ceil(2) * 2).min(max);
            (min, max, Some(precision))
        }
    }
}

/// The round-by-round pairs (baseline, contender) of the main figure, balanced for
/// position: server CPU per request where both slices measured it, else requests/s.
pub fn main_pairs(base: &[Slice], other: &[Slice]) -> Vec<(f64, f64)> {
    let cpu = balanced_rounds(base, other, &|x| x.cpu_us_per_request());
    if !cpu.is_empty() {
        return cpu;
    }
    balanced_rounds(base, other, &|x| Some(x.requests_per_s))
}

fn sum_costs(slices: &[Slice]) -> Option<ServerCost> {
    slices.iter().try_fold(
        ServerCost {
            cpu_s: 0.0,
            voluntary_switches: 0,
            involuntary_switches: 0,
        },
        |a, x| {
            let c = x.cost?;
            Some(ServerCost {
                cpu_s: a.cpu_s + c.cpu_s,
                voluntary_switches: a.voluntary_switches + c.voluntary_switches,
                involuntary_switches: a.involuntary_switches + c.involuntary_switches,
            })
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_cover_the_duration_in_pairs() {
        let auto = Rounds::Auto {
            max: 30,
            precision: 0.02,
        };
        let s = Duration::from_secs(1);
        assert_eq!(
            rounds(Stop::Duration(Duration::from_secs(5)), s, auto),
            (6, 30, Some(0.02))
        );
        assert_eq!(
            rounds(Stop::Duration(Duration::from_millis(300)), s, auto),
            (2, 30, Some(0.02))
        );
        assert_eq!(rounds(Stop::Count(100), s, auto), (1, 1, None));
        assert_eq!(rounds(Stop::Duration(s), s, Rounds::Fixed(7)), (7, 7, None));
        let few = Rounds::Auto {
            max: 4,
            precision: 0.02,
        };
        assert_eq!(
            rounds(Stop::Duration(Duration::from_secs(9)), s, few),
            (4, 4, Some(0.02))
        );
    }
}
