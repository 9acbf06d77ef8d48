//! What a report's verdicts are held to: the gates of `--fail-on-regression` and
//! `--fail-unless-equivalent` (docs/verdicts.md, "The gates"), and the findings drawn from
//! verdicts — a machine that disagrees, rounds that trimming left out.

use super::verdicts::{pct, Figure, PointVerdicts, Verdict};
use crate::results::Results;
use crate::stats::paired::{self, Bands, Call, Ratio};

/// The gate of `--fail-on-regression PCT`: verdicts that read *different* and worse, with
/// the whole interval past `limit` (0.05 = 5 %): more CPU per request or item, higher p50
/// or p99 (ratio above 1 + limit), or less throughput (below 1 / (1 + limit)). A cell held
/// back by the report's error control is not different. Each as a sentence.
pub fn regressions(verdicts: &[PointVerdicts], limit: f64) -> Vec<String> {
    let mut out = Vec::new();
    for v in verdicts {
        for x in &v.verdicts {
            let worse = match x.figure {
                Figure::Throughput => x.call == Call::Lower && x.ratio.hi < 1.0 / (1.0 + limit),
                _ => x.call == Call::Higher && x.ratio.lo > 1.0 + limit,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::verdicts::fixtures::*;
    use crate::analysis::verdicts::Verdict;

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
                v(Figure::CpuPerRequest, 1.06, 1.03, 1.09), // interval reaches inside 5 %
                v(Figure::Throughput, 1.5, 1.4, 1.6),       // better
                v(Figure::P99, 0.5, 0.4, 0.6),              // better
            ],
        );
        assert!(regressions(&[borderline], 0.05).is_empty());
        // Held back by the report's error control: not different, so no regression.
        let mut held = worse.clone();
        held.verdicts[0].call = Call::Inconclusive;
        held.verdicts[0].held_back = true;
        assert_eq!(regressions(&[held], 0.05).len(), 1);
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
