//! Verdicts of paired runs: for every scenario point and every contender with a baseline,
//! the ratio contender / baseline of each figure with its interval, computed from the rounds
//! the two ran side by side (see `stats::paired` for the method, docs/verdicts.md for the
//! design). Only runs of one block (contenders that ran side by side) are paired.

use crate::results::{PointId, PointRun, Results, Slice};
pub use crate::stats::paired::fmt_ratio;
use crate::stats::paired::{self, Call, Ratio};

/// What a verdict is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Figure {
    /// The server's CPU time per request: steady on a shared machine.
    CpuPerRequest,
    /// The server's CPU time per streamed message (server-streaming calls only).
    CpuPerItem,
    Throughput,
    P50,
    P99,
}

impl Figure {
    pub const ALL: [Figure; 5] = [
        Figure::CpuPerRequest,
        Figure::CpuPerItem,
        Figure::Throughput,
        Figure::P50,
        Figure::P99,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Figure::CpuPerRequest => "CPU per request",
            Figure::CpuPerItem => "CPU per item",
            Figure::Throughput => "throughput",
            Figure::P50 => "p50",
            Figure::P99 => "p99",
        }
    }

    fn of(self, s: &Slice) -> Option<f64> {
        match self {
            Figure::CpuPerRequest => s.cpu_us_per_request(),
            Figure::CpuPerItem => s.cpu_us_per_item(),
            Figure::Throughput => Some(s.requests_per_s),
            Figure::P50 => Some(s.p50_us as f64),
            Figure::P99 => Some(s.p99_us as f64),
        }
    }

    /// The words for a change: (when the ratio is above 1, below 1).
    fn words(self) -> (&'static str, &'static str) {
        match self {
            Figure::CpuPerRequest => ("more CPU per request", "less CPU per request"),
            Figure::CpuPerItem => ("more CPU per item", "less CPU per item"),
            Figure::Throughput => ("more throughput", "less throughput"),
            Figure::P50 => ("higher p50", "lower p50"),
            Figure::P99 => ("higher p99", "lower p99"),
        }
    }
}

/// One figure's paired ratio and what it says.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Verdict {
    pub figure: Figure,
    pub ratio: Ratio,
    pub call: Call,
}

impl std::fmt::Display for Verdict {
    /// `1.34× (1.29–1.40) more CPU per request`; `~ 1.01× (0.98–1.03) throughput`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let r = &self.ratio;
        let span = format!(
            "{} ({}–{})",
            fmt_ratio(r.ratio),
            fmt_ratio(r.lo),
            fmt_ratio(r.hi)
        );
        let (up, down) = self.figure.words();
        match self.call {
            Call::Higher => write!(f, "{span} {up}"),
            Call::Lower => write!(f, "{span} {down}"),
            Call::Same => write!(f, "~ {span} {}", self.figure.name()),
        }
    }
}

/// A contender against its baseline at one point.
#[derive(Debug, Clone, PartialEq)]
pub struct PointVerdicts {
    pub point: PointId,
    pub contender: String,
    pub baseline: String,
    /// In [`Figure::ALL`] order; a figure that was not measured is left out.
    pub verdicts: Vec<Verdict>,
    /// A merged run whose blocks ran on several machines: each machine's own verdicts (as
    /// `verdicts`, from its blocks only), which `verdicts` combines. Empty on one machine.
    pub machines: Vec<(String, Vec<Verdict>)>,
}

impl PointVerdicts {
    pub fn get(&self, figure: Figure) -> Option<&Verdict> {
        self.verdicts.iter().find(|v| v.figure == figure)
    }

    /// The verdict to lead with: CPU per request where measured, else throughput.
    pub fn main(&self) -> Option<&Verdict> {
        self.get(Figure::CpuPerRequest)
            .or_else(|| self.get(Figure::Throughput))
    }
}

/// Every paired comparison in `r`, in plan order (points, then contenders); empty for runs
/// that were not paired.
pub fn all(r: &Results, noise: f64) -> Vec<PointVerdicts> {
    let mut out = Vec::new();
    for s in &r.scenarios {
        for point in &s.points {
            for c in r.compared() {
                let Some(base) = c.baseline.as_deref().filter(|b| *b != c.name) else {
                    continue;
                };
                let (verdicts, machines) = compare(r, point, base, &c.name, noise);
                if !verdicts.is_empty() {
                    out.push(PointVerdicts {
                        point: point.clone(),
                        contender: c.name.clone(),
                        baseline: base.to_string(),
                        verdicts,
                        machines,
                    });
                }
            }
        }
    }
    out
}

/// The verdicts over all blocks, and per machine when the blocks ran on several (a
/// merged run): each machine's from its own blocks, combined across machines with
/// [`paired::combine`] (docs/scale-out.md).
fn compare(
    r: &Results,
    point: &PointId,
    base: &str,
    name: &str,
    noise: f64,
) -> (Vec<Verdict>, Vec<(String, Vec<Verdict>)>) {
    let blocks = blocks(r, point, base, name);
    // A block where either side failed most calls compares failures: no verdict from it.
    let failed = |p: &PointRun| p.load.as_ref().is_some_and(|l| l.mostly_failed());
    if blocks.is_empty() || blocks.iter().any(|(_, b, c)| failed(b) || failed(c)) {
        return (Vec::new(), Vec::new());
    }
    let mut machines: Vec<&str> = Vec::new();
    for (m, _, _) in &blocks {
        if !machines.contains(m) {
            machines.push(m);
        }
    }
    // Seeded by the point, so a report of the same results is the same report.
    let seed = point
        .to_string()
        .bytes()
        .fold(0, |h, b| crate::rng::mix(h ^ u64::from(b)));
    let on = |machine: Option<&str>| -> Vec<Verdict> {
        Figure::ALL
            .iter()
            .filter_map(|&figure| {
                let reps: Vec<paired::Rounds> = blocks
                    .iter()
                    .filter(|(m, _, _)| machine.is_none_or(|x| x == *m))
                    .map(|(_, b, c)| rounds(b, c, figure))
                    .collect();
                let ratio = paired::ratio(&reps, seed)?;
                Some(Verdict {
                    figure,
                    ratio,
                    call: ratio.call(noise),
                })
            })
            .collect()
    };
    if machines.len() < 2 {
        return (on(None), Vec::new());
    }
    let parts: Vec<(String, Vec<Verdict>)> = machines
        .iter()
        .map(|m| (m.to_string(), on(Some(m))))
        .collect();
    let combined = Figure::ALL
        .iter()
        .filter_map(|&figure| {
            let ratios: Vec<Ratio> = parts
                .iter()
                .filter_map(|(_, v)| v.iter().find(|v| v.figure == figure))
                .map(|v| v.ratio)
                .collect();
            let ratio = paired::combine(&ratios)?;
            Some(Verdict {
                figure,
                ratio,
                call: ratio.call(noise),
            })
        })
        .collect();
    (combined, parts)
}

/// (machine, baseline's point, contender's point) of every block in which both ran the
/// point in rounds. The machine is the contender's run's (`BAKEOFF_MACHINE` or host name).
fn blocks<'a>(
    r: &'a Results,
    point: &PointId,
    base: &str,
    name: &str,
) -> Vec<(&'a str, &'a PointRun, &'a PointRun)> {
    let find = |who: &str, block: u32| {
        r.runs
            .iter()
            .filter(|x| x.id.is(who) && x.block == Some(block))
            .find_map(|x| {
                let p = x
                    .points
                    .iter()
                    .find(|p| p.id == *point && !p.slices.is_empty())?;
                let env = r.environment_of(x);
                Some((env.machine(), p))
            })
    };
    let mut ids: Vec<u32> = r.runs.iter().filter_map(|x| x.block).collect();
    ids.sort_unstable();
    ids.dedup();
    ids.into_iter()
        .filter_map(|b| {
            let (_, bp) = find(base, b)?;
            let (m, cp) = find(name, b)?;
            Some((m, bp, cp))
        })
        .collect()
}

/// Verdicts that a contender got worse than its baseline by more than `limit` (0.05 = 5 %),
/// the whole interval past it: more CPU per request or item, higher p50 or p99 (ratio
/// above 1 + limit), or less throughput (below 1 / (1 + limit)). Each as a sentence.
pub fn regressions(verdicts: &[PointVerdicts], limit: f64) -> Vec<String> {
    let mut out = Vec::new();
    for v in verdicts {
        for x in &v.verdicts {
            let worse = match x.figure {
                Figure::Throughput => x.ratio.hi < 1.0 / (1.0 + limit),
                _ => x.ratio.lo > 1.0 + limit,
            };
            if worse {
                out.push(format!(
                    "{} against {} at {}: {x}",
                    v.contender, v.baseline, v.point
                ));
            }
        }
    }
    out
}

/// Where one machine's verdicts disagree with the others' (three machines or more): per
/// contender, baseline and figure, the points where [`paired::odd_one_out`] names a machine.
pub fn machine_findings(verdicts: &[PointVerdicts]) -> Vec<crate::diagnose::Finding> {
    let mut out: Vec<crate::diagnose::Finding> = Vec::new();
    for v in verdicts.iter().filter(|v| v.machines.len() >= 3) {
        let Some(main) = v.main() else { continue };
        let figure = main.figure;
        let ratios: Vec<Ratio> = v
            .machines
            .iter()
            .filter_map(|(_, vs)| vs.iter().find(|x| x.figure == figure))
            .map(|x| x.ratio)
            .collect();
        if ratios.len() != v.machines.len() {
            continue;
        }
        let Some((i, _)) = paired::odd_one_out(&ratios) else {
            continue;
        };
        let others: Vec<Ratio> = ratios
            .iter()
            .enumerate()
            .filter(|(j, _)| *j != i)
            .map(|(_, r)| *r)
            .collect();
        let elsewhere = paired::combine(&others).map_or(f64::NAN, |r| r.ratio);
        let place = v.point.to_string();
        let machine = v.machines[i].0.clone();
        let same = out.iter_mut().find_map(|f| match f {
            crate::diagnose::Finding::MachineDisagrees {
                contender,
                machine: m,
                figure: fg,
                places,
                ..
            } if *contender == v.contender && *m == machine && fg == figure.name() => Some(places),
            _ => None,
        });
        match same {
            Some(places) => places.push(place),
            None => out.push(crate::diagnose::Finding::MachineDisagrees {
                contender: v.contender.clone(),
                baseline: v.baseline.clone(),
                machine,
                figure: figure.name().to_string(),
                there: ratios[i].ratio,
                elsewhere,
                places: vec![place],
            }),
        }
    }
    out
}

/// The rounds both ran, as (baseline's figure, contender's figure), balanced for position.
fn rounds(base: &PointRun, other: &PointRun, figure: Figure) -> paired::Rounds {
    crate::results::balanced_rounds(&base.slices, &other.slices, &|s| figure.of(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratios_keep_their_digits_and_large_ones_read_as_factors() {
        assert_eq!(fmt_ratio(0.905), "0.905×");
        assert_eq!(fmt_ratio(1.344), "1.34×");
        assert_eq!(fmt_ratio(1.0), "1.00×");
        assert_eq!(fmt_ratio(472.4), "472×");
        assert_eq!(fmt_ratio(3.21), "3.2×");
        assert_eq!(fmt_ratio(1.0 / 260.0), "÷260");
        assert_eq!(fmt_ratio(0.3), "÷3.3");
        assert_eq!(fmt_ratio(0.0), "—");
    }

    #[test]
    fn regressions_are_worse_by_more_than_the_limit_with_the_whole_interval() {
        let v = |figure, r: f64, lo: f64, hi: f64| Verdict {
            figure,
            ratio: Ratio {
                ratio: r,
                lo,
                hi,
                repetitions: 3,
                rounds: 18,
            },
            call: Ratio {
                ratio: r,
                lo,
                hi,
                repetitions: 3,
                rounds: 18,
            }
            .call(0.01),
        };
        let at = |verdicts| PointVerdicts {
            point: crate::results::PointId {
                scenario: "s".into(),
                vars: crate::results::Vars(Vec::new()),
                clients: 1,
                target: None,
                rate: None,
                stage: None,
            },
            contender: "v2".into(),
            baseline: "v1".into(),
            verdicts,
            machines: Vec::new(),
        };
        let worse = at(vec![
            v(Figure::CpuPerRequest, 1.10, 1.07, 1.13), // more CPU, clear of 5 %
            v(Figure::Throughput, 0.90, 0.88, 0.93),    // less throughput, clear of 5 %
        ]);
        let r = regressions(&[worse], 0.05);
        assert_eq!(r.len(), 2, "{r:?}");
        assert_eq!(
            r[0],
            "v2 against v1 at s [clients=1]: 1.10× (1.07×–1.13×) more CPU per request"
        );
        let borderline = at(vec![
            v(Figure::CpuPerRequest, 1.06, 1.03, 1.09), // interval reaches inside 5 %
            v(Figure::Throughput, 1.5, 1.4, 1.6),       // better
            v(Figure::P99, 0.5, 0.4, 0.6),              // better
        ]);
        assert!(regressions(&[borderline], 0.05).is_empty());
    }

    #[test]
    fn a_verdict_names_its_ratio_and_interval() {
        let ratio = |r, lo, hi| Ratio {
            ratio: r,
            lo,
            hi,
            repetitions: 3,
            rounds: 18,
        };
        let v = |figure, r: Ratio| Verdict {
            figure,
            ratio: r,
            call: r.call(0.01),
        };
        assert_eq!(
            v(Figure::CpuPerRequest, ratio(1.344, 1.29, 1.40)).to_string(),
            "1.34× (1.29×–1.40×) more CPU per request"
        );
        assert_eq!(
            v(Figure::Throughput, ratio(0.905, 0.842, 0.972)).to_string(),
            "0.905× (0.842×–0.972×) less throughput"
        );
        assert_eq!(
            v(Figure::Throughput, ratio(1.005, 0.99, 1.03)).to_string(),
            "~ 1.00× (0.990×–1.03×) throughput"
        );
        assert_eq!(
            v(Figure::P50, ratio(1.0 / 500.0, 1.0 / 520.0, 1.0 / 480.0)).to_string(),
            "÷500 (÷520–÷480) lower p50"
        );
    }
}
