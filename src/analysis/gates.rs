//! What a report's verdicts are held to: the gates of `--fail-on-regression` and
//! `--fail-unless-equivalent` (docs/verdicts.md, "The gates"), and the findings drawn from
//! verdicts — a machine that disagrees, rounds that trimming left out.

use super::verdicts::{pct, Figure, PointVerdicts, Verdict};
use crate::results::Results;
use crate::stats::machines;
use crate::stats::paired::{Bands, Call, Ratio};

/// The gate of `--fail-on-regression PCT` (docs/verdicts.md, "The gates"): verdicts that
/// read *different* and worse, with the estimate past `limit` (0.05 = 5 %): more CPU per
/// request or item, higher p50 or p99 (ratio above 1 + limit), or less throughput (below
/// 1 / (1 + limit)). *Different* is the report's, after its error control: a cell held back
/// is not different, so two identical builds cannot trip it. Each as a sentence.
pub fn regressions(verdicts: &[PointVerdicts], limit: f64) -> Vec<String> {
    let mut out = Vec::new();
    for v in verdicts {
        for x in v.verdicts.iter().filter(|x| regressed(x, limit)) {
            out.push(format!(
                "{} against {} at {}: {x}",
                v.contender, v.baseline, v.point
            ));
        }
    }
    out
}

/// Whether `x` trips the regression gate at `limit`.
fn regressed(x: &Verdict, limit: f64) -> bool {
    match x.figure {
        Figure::Throughput => x.call == Call::Lower && x.ratio.ratio < 1.0 / (1.0 + limit),
        _ => x.call == Call::Higher && x.ratio.ratio > 1.0 + limit,
    }
}

/// The smallest regression of `x`'s figure that an interval as wide as `x`'s would have
/// caught four times in five (a share: 0.062 = 6.2 %): its estimate past `limit`, and its
/// interval clear of the noise band — in log terms max(ln(1 + noise) + half-width,
/// ln(1 + limit)) plus 0.84 standard errors (the z of 80 % power). The standard error is the
/// repetitions' own where the interval has one, else the half-width over 1.96. `None` for an
/// interval that is not finite.
pub fn smallest_caught(x: &Verdict, limit: f64) -> Option<f64> {
    let r = &x.ratio;
    let half = (r.hi / r.lo).ln() / 2.0;
    let se = r.student.map_or(half / 1.96, |(se, _)| se);
    let edge = ((1.0 + x.bands.noise).ln() + half).max((1.0 + limit).ln());
    let caught = (edge + 0.84 * se).exp() - 1.0;
    caught.is_finite().then_some(caught)
}

/// What `--fail-on-regression PCT` read: the verdicts it judged, those that tripped it,
/// and the smallest regression each point's main figure could have caught.
#[derive(Debug, Clone, PartialEq)]
pub struct RegressionGate {
    pub limit: f64,
    pub judged: usize,
    pub tripped: Vec<String>,
    /// The least and the most, over the points, of [`smallest_caught`] for the main figure.
    pub reach: Option<(f64, f64)>,
}

impl RegressionGate {
    pub fn of(verdicts: &[PointVerdicts], limit: f64) -> RegressionGate {
        let caught: Vec<f64> = verdicts
            .iter()
            .filter_map(PointVerdicts::main)
            .filter_map(|x| smallest_caught(x, limit))
            .collect();
        let lo = caught.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = caught.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        RegressionGate {
            limit,
            judged: verdicts.iter().map(|v| v.verdicts.len()).sum(),
            tripped: regressions(verdicts, limit),
            reach: (!caught.is_empty()).then_some((lo, hi)),
        }
    }

    /// The gate's outcome on one line, passed or not: `gate: no regression past 5% — 12
    /// verdicts, none different and worse past it; a regression of 6.1%–9.8% or more would
    /// have tripped it, four times in five`.
    pub fn line(&self) -> String {
        let verdicts = crate::units::count(self.judged as u64, "verdict");
        let reach = match self.reach {
            Some((lo, hi)) if (hi - lo).abs() < 0.0005 => format!(
                "; a regression of {} or more would have tripped it, four times in five",
                pct(lo)
            ),
            Some((lo, hi)) => format!(
                "; by each point's interval a regression of {}–{} or more would have tripped it, four times in five",
                pct(lo),
                pct(hi)
            ),
            None => String::new(),
        };
        match self.tripped.len() {
            0 if self.judged == 0 => format!(
                "gate: no regression past {} found — but no paired verdict to judge",
                pct(self.limit)
            ),
            0 => format!(
                "gate: no regression past {} — {verdicts}, none different and worse past it{reach}",
                pct(self.limit)
            ),
            n => format!(
                "gate: {} past {} ({n} of {verdicts} different and worse past it){reach}",
                crate::units::count(n as u64, "regression"),
                pct(self.limit)
            ),
        }
    }
}

/// The gate of `--fail-unless-equivalent PCT`, for changes that must not change
/// performance: every comparison whose main figure (CPU per request where measured, else
/// throughput) is not proven equal within `band` — its whole interval inside 1 ± band — each
/// as a sentence (with [`unverdicted`], which names the contenders nothing was proven for).
pub fn not_equivalent(verdicts: &[PointVerdicts], band: f64) -> Vec<String> {
    let mut out = Vec::new();
    for v in verdicts {
        let Some(x) = v.main() else { continue };
        let bands = Bands {
            noise: x.bands.noise,
            equivalence: band,
        };
        if x.ratio.call(bands) != Call::Equivalent {
            out.push(format!(
                "{} against {} at {}: {x}, not within ±{}",
                v.contender,
                v.baseline,
                v.point,
                pct(band)
            ));
        }
    }
    out
}

/// The equivalence gate's outcome on one line, passed or not: `gate: every comparison
/// equivalent within ±2% (12)`, or how many are not.
pub fn equivalence_line(verdicts: &[PointVerdicts], failing: usize, band: f64) -> String {
    let comparisons = verdicts.iter().filter(|v| v.main().is_some()).count();
    match failing {
        0 => format!(
            "gate: every comparison equivalent within ±{} ({comparisons})",
            pct(band)
        ),
        n => format!(
            "gate: {n} of {} not proven equivalent within ±{}",
            crate::units::count(comparisons.max(n) as u64, "comparison"),
            pct(band)
        ),
    }
}

/// For the equivalence gate: when some comparisons it names could not tell (their main
/// figure *inconclusive* against `band`, not shown to differ) in a paired run on one machine
/// whose plan gave no `paired.max_repetitions`, a line saying what would let them settle —
/// read off the spread each showed, since what settles one plan does not settle another.
/// On one point, three starts proved two identical builds equal within ±2 % 3 times in 20
/// here and six with a second stage of up to twelve 17 in 20; on 24 short points whose
/// rounds hit `max_rounds`, the second stage settled few (BENCHMARKS.md, docs/verdicts.md).
pub fn settle_hint(r: &Results, verdicts: &[PointVerdicts], band: f64) -> Option<String> {
    let paired = r.paired.as_ref()?;
    if paired.max_repetitions.is_some() || r.shards.is_some() {
        return None;
    }
    let bands = |noise| Bands {
        noise,
        equivalence: band,
    };
    let open: Vec<_> = verdicts
        .iter()
        .filter_map(PointVerdicts::main)
        .filter(|x| x.ratio.call(bands(x.bands.noise)) == Call::Inconclusive)
        .collect();
    if open.is_empty() {
        return None;
    }
    // Six repetitions cost what three do (each one's rounds stop sooner); then twice the
    // plan's at most.
    let (setting, most) = match r.repetitions {
        0..=5 => (
            "`repetitions = 6` and `paired = { max_repetitions = 12 }`".to_string(),
            12,
        ),
        n => {
            let most = (2 * n).min(1000);
            (format!("`paired = {{ max_repetitions = {most} }}`"), most)
        }
    };
    // How many repetitions each would want against the gate's band, from its spread.
    let settles = open
        .iter()
        .filter(|x| {
            let at_gate = Verdict::new(x.figure, x.ratio, bands(x.bands.noise), x.between);
            let have = x.ratio.repetitions as u32;
            at_gate.second_stage(have, most).is_some()
        })
        .count();
    let could = crate::units::count(open.len() as u64, "comparison");
    Some(if settles == 0 {
        format!(
            "{could} of these could not tell (inconclusive), and by the spread seen none would settle within {most} repetitions: the summary's *Not settled* lines say what each needs — more rounds per repetition (`paired.max_rounds`) where the spread is within a start, else more repetitions (docs/verdicts.md, \"More repetitions\")"
        )
    } else {
        format!(
            "{could} of these could not tell (inconclusive), and by the spread seen {settles} would settle within {most} repetitions: with {setting} in the plan, such points get more fresh starts, as many as their spread says would settle them (docs/verdicts.md, \"More repetitions\")"
        )
    })
}

/// Compared contenders without a single paired verdict against their baseline (not run,
/// failed every point, or a run that was not paired), each as a sentence.
pub fn unverdicted(r: &Results, verdicts: &[PointVerdicts]) -> Vec<String> {
    let mut out = Vec::new();
    for c in r.compared() {
        let compared = c.baseline.as_deref().is_some_and(|b| b != c.name);
        if compared && !verdicts.iter().any(|v| v.contender == c.name) {
            out.push(format!(
                "{}: no paired verdict against {} (not run, failed, or not paired)",
                c.name,
                c.baseline.as_deref().unwrap_or_default()
            ));
        }
    }
    out
}

/// The rounds left out of verdicts' estimates that were one contender's own (see [`Trim`]):
/// one finding per contender and figure, with the places.
pub fn trim_findings(verdicts: &[PointVerdicts]) -> Vec<crate::diagnose::Finding> {
    let mut out: Vec<crate::diagnose::Finding> = Vec::new();
    for v in verdicts {
        for x in &v.verdicts {
            let Some(t) = &x.trim else { continue };
            let place = v.point.to_string();
            let whose = t.whose.as_ref().map(|w| w.0.clone());
            let same = out.iter_mut().find_map(|f| match f {
                crate::diagnose::Finding::TrimmedAway {
                    contender,
                    figure,
                    whose: w,
                    places,
                    ..
                } if *contender == v.contender && figure == x.figure.name() && *w == whose => {
                    Some(places)
                }
                _ => None,
            });
            match same {
                Some(places) => places.push(place),
                None => out.push(crate::diagnose::Finding::TrimmedAway {
                    contender: v.contender.clone(),
                    baseline: v.baseline.clone(),
                    figure: x.figure.name().to_string(),
                    table: t.table,
                    paired: x.ratio.span(),
                    whose,
                    rounds: t.whose.as_ref().map_or(0, |w| w.1),
                    places: vec![place],
                }),
            }
        }
    }
    out
}

/// Where one machine's verdicts disagree with the others' (three machines or more): per
/// contender, baseline and figure, the points where [`machines::odd_one_out`] names a machine.
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
        let Some((i, _)) = machines::odd_one_out(&ratios) else {
            continue;
        };
        let others: Vec<Ratio> = ratios
            .iter()
            .enumerate()
            .filter(|(j, _)| *j != i)
            .map(|(_, r)| *r)
            .collect();
        let elsewhere = machines::combine(&others).map_or(f64::NAN, |r| r.ratio);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::verdicts::fixtures::*;
    use crate::analysis::verdicts::Verdict;
    use crate::stats::paired;

    #[test]
    fn regressions_are_different_and_worse_by_more_than_the_limit() {
        let worse = at(
            1,
            vec![
                v(Figure::CpuPerRequest, 1.10, 1.07, 1.13), // more CPU, clear of 5 %
                v(Figure::Throughput, 0.90, 0.88, 0.93),    // less throughput, clear of 5 %
            ],
        );
        let r = regressions(std::slice::from_ref(&worse), 0.05);
        assert_eq!(r.len(), 2, "{r:?}");
        assert_eq!(
            r[0],
            "v2 against v1 at s [clients=1]: 1.10× (1.07×–1.13×) more CPU per request"
        );
        let borderline = at(
            1,
            vec![
                v(Figure::CpuPerRequest, 1.04, 1.02, 1.06), // different, estimate inside 5 %
                v(Figure::Throughput, 1.5, 1.4, 1.6),       // better
                v(Figure::P99, 0.5, 0.4, 0.6),              // better
            ],
        );
        assert!(regressions(&[borderline], 0.05).is_empty());
        // The estimate past 5 %, the interval reaching inside it: a regression past 5 %.
        let past = at(1, vec![v(Figure::CpuPerRequest, 1.06, 1.03, 1.09)]);
        assert_eq!(regressions(&[past], 0.05).len(), 1);
        // Held back by the report's error control: not different, so no regression.
        let mut held = worse.clone();
        held.verdicts[0].call = Call::Inconclusive;
        held.verdicts[0].held_back = true;
        assert_eq!(regressions(&[held], 0.05).len(), 1);
    }

    #[test]
    fn the_regression_gate_says_its_outcome_and_its_reach_either_way() {
        // ±3 % around 1: different needs 1 % + 3 %, past the gate 5 %; + 0.84 × 3/1.96.
        let same = at(1, vec![v(Figure::CpuPerRequest, 1.0, 1.0 / 1.03, 1.03)]);
        let g = RegressionGate::of(std::slice::from_ref(&same), 0.05);
        assert!(g.tripped.is_empty());
        let (lo, hi) = g.reach.unwrap();
        let want = ((1.05f64).ln() + 0.84 * (1.03f64).ln() / 1.96).exp() - 1.0;
        assert!((lo - want).abs() < 1e-9 && lo == hi, "{lo} {want}");
        assert_eq!(
            g.line(),
            "gate: no regression past 5% — 1 verdict, none different and worse past it; a regression of 6.3% or more would have tripped it, four times in five"
        );
        // A wide interval: the noise band and the half-width set the reach, not the gate.
        let wide = at(8, vec![v(Figure::CpuPerRequest, 1.0, 1.0 / 1.08, 1.08)]);
        let worse = at(16, vec![v(Figure::CpuPerRequest, 1.10, 1.07, 1.13)]);
        let g = RegressionGate::of(&[same, wide, worse], 0.05);
        assert_eq!(g.tripped.len(), 1);
        let line = g.line();
        assert!(
            line.starts_with("gate: 1 regression past 5% (1 of 3 verdicts different and worse past it); by each point's interval a regression of "),
            "{line}"
        );
        assert!(g.reach.unwrap().1 > 0.12, "{:?}", g.reach);
    }

    #[test]
    fn the_equivalence_gate_needs_every_main_figure_inside_its_band() {
        let equal = at(1, vec![v(Figure::CpuPerRequest, 1.0, 0.99, 1.012)]);
        let wide = at(8, vec![v(Figure::CpuPerRequest, 1.0, 0.95, 1.05)]);
        assert!(not_equivalent(std::slice::from_ref(&equal), 0.02).is_empty());
        let out = not_equivalent(&[equal.clone(), wide], 0.02);
        assert_eq!(out.len(), 1, "{out:?}");
        assert!(out[0].contains("clients=8") && out[0].contains("not within ±2%"));
        // A wider band of the gate's own admits it.
        assert!(not_equivalent(&[equal], 0.005).len() == 1);
    }

    #[test]
    fn the_equivalence_gate_names_the_second_stage_where_points_could_not_tell() {
        let results = |repetitions: u32, max: Option<u32>| -> Results {
            serde_json::from_value(serde_json::json!({
                "schema_version": 2, "tool": "t", "name": "n", "plan_path": "p",
                "status": "complete", "smoke": false, "started_at": "", "finished_at": null,
                "environment": crate::results::env::Environment::detect(),
                "baseline": "v1", "repetitions": repetitions, "order": "paired",
                "paired": {
                    "rounds": "auto", "noise": 0.01, "equivalence": 0.02, "fdr": 0.05,
                    "max_repetitions": max
                },
                "contenders": [], "scenarios": [], "runs": [], "warnings": []
            }))
            .unwrap()
        };
        // ±2.5 % at three repetitions: about five would fit it inside ±2 %; ±5 %, about
        // nineteen (the interval narrows as one over the root of their number).
        let near = at(4, vec![v(Figure::CpuPerRequest, 1.0, 0.975, 1.025)]);
        let wide = at(8, vec![v(Figure::CpuPerRequest, 1.0, 0.95, 1.05)]);
        let apart = at(1, vec![v(Figure::CpuPerRequest, 1.10, 1.07, 1.13)]);
        let hint = settle_hint(
            &results(3, None),
            &[near.clone(), wide.clone(), apart.clone()],
            0.02,
        )
        .expect("two comparisons could not tell");
        assert!(
            hint.starts_with(
                "2 comparisons of these could not tell (inconclusive), and by the spread seen 1 would settle within 12 repetitions: with `repetitions = 6` and `paired = { max_repetitions = 12 }` in"
            ),
            "{hint}"
        );
        // A plan of six or more already: twice its repetitions.
        let more = settle_hint(&results(8, None), std::slice::from_ref(&near), 0.02).unwrap();
        assert!(
            more.contains(
                "1 would settle within 16 repetitions: with `paired = { max_repetitions = 16 }` in"
            ),
            "{more}"
        );
        // None that the setting would settle: the hint says so, and where to look instead.
        let none = settle_hint(&results(3, None), std::slice::from_ref(&wide), 0.02).unwrap();
        assert!(
            none.contains("none would settle within 12 repetitions: the summary's *Not settled*"),
            "{none}"
        );
        assert!(!none.contains("max_repetitions"), "{none}");
        // The gate's own band counts, not the plan's: inside ±10 % the wide one is settled.
        assert_eq!(
            settle_hint(&results(3, None), std::slice::from_ref(&wide), 0.10),
            None
        );
        // The setting given already, or nothing inconclusive: nothing to say.
        assert_eq!(settle_hint(&results(3, Some(10)), &[wide], 0.02), None);
        assert_eq!(settle_hint(&results(3, None), &[apart], 0.02), None);
    }

    #[test]
    fn a_stall_of_one_side_that_trimming_hid_is_named() {
        // Twenty rounds, two of them a stall of the contender alone (a tenth of its usual
        // throughput): the trimmed estimate leaves both out and reads 1.00×, while the
        // table's whole-point figures read 0.8×.
        let mut rounds: paired::Rounds = (0..20)
            .map(|k| (1000.0, 1000.0 * (1.0 + 0.001 * (k % 3) as f64)))
            .collect();
        rounds[4].1 = 100.0;
        rounds[11].1 = 100.0;
        let ratio = paired::ratio(std::slice::from_ref(&rounds), 1).unwrap();
        assert!((ratio.ratio - 1.0).abs() < 0.01, "{ratio:?}");
        // The table's medians: 1000 and 800 req/s.
        let t = crate::analysis::trim::trim(
            0.8,
            std::slice::from_ref(&rounds),
            (&ratio, ratio.call(BANDS)),
            0.01,
            ("v1", "v2"),
        )
        .expect("the table and the estimate disagree");
        assert!((t.table - 0.8).abs() < 1e-9);
        assert_eq!(t.whose, Some(("v2".to_string(), 2)));
        // The table agreeing with the estimate: nothing to say.
        assert_eq!(
            crate::analysis::trim::trim(
                1.0,
                std::slice::from_ref(&rounds),
                (&ratio, ratio.call(BANDS)),
                0.01,
                ("v1", "v2")
            ),
            None
        );
        // A verdict different the way the table points hides nothing, however far apart.
        let gap = Ratio {
            ratio: 248.0,
            lo: 212.0,
            hi: 301.0,
            ..ratio
        };
        assert_eq!(
            crate::analysis::trim::trim(176.0, &[rounds], (&gap, Call::Higher), 0.01, ("v1", "v2")),
            None
        );
        // As a finding, once per contender and figure, with its places.
        let mut x = Verdict::new(Figure::Throughput, ratio, BANDS, None);
        x.trim = Some(t);
        let f = trim_findings(&[at(1, vec![x.clone()]), at(16, vec![x])]);
        assert_eq!(f.len(), 1, "{f:?}");
        let text = f[0].to_string();
        assert!(
            text.contains("v2's throughput against v1: the table's medians say 0.800×"),
            "{text}"
        );
        assert!(
            text.contains("2 of the rounds the estimate trims away were v2's own"),
            "{text}"
        );
        assert!(text.contains("s [clients=1], s [clients=16]"), "{text}");
    }
}
