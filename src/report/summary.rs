//! The report's first lines: same answers?, start-up, serving (paired verdicts, capacity),
//! findings — one line each, computed once for every exporter.

use super::cells::{median, verdict};
use super::fmt_us;
use crate::compat::CompatReport;
use crate::diagnose::Finding;
use crate::results::Results;

/// The report's title: the plan's name, and the ref each contender built from a git source
/// was built at (`--ref` included), `nginx (old @ release-1.28.0, new @ release-1.29.0)`.
pub fn title(r: &Results) -> String {
    let refs: Vec<String> = r
        .compared()
        .filter(|c| c.variant.is_none())
        .filter_map(|c| {
            let s = c.source.as_ref()?;
            // A commit id named as the ref (a pull request's, a bisection's) is shortened:
            // the contenders table below has it whole.
            let at = s.reference.as_deref()?;
            let hex = at.len() > 12 && at.chars().all(|ch| ch.is_ascii_hexdigit());
            let at = if hex {
                crate::units::prefix(at, 10)
            } else {
                at
            };
            Some(format!("{} @ {}", c.name, at))
        })
        .collect();
    match refs.is_empty() {
        true => r.name.clone(),
        false => format!("{} ({})", r.name, refs.join(", ")),
    }
}

/// Contenders built from one clean commit the same way: what is compared is one build
/// against itself — said first, since a user who meant two refs gave one twice.
fn same_build(r: &Results) -> Option<String> {
    let built: Vec<(&str, &str, &str)> = r
        .compared()
        .filter(|c| c.variant.is_none())
        .filter_map(|c| {
            let s = c.source.as_ref().filter(|s| !s.dirty)?;
            Some((c.name.as_str(), s.commit.as_deref()?, s.key.as_str()))
        })
        .collect();
    let (a, b) = built.iter().enumerate().find_map(|(i, a)| {
        let b = built[i + 1..].iter().find(|b| (b.1, b.2) == (a.1, a.2))?;
        Some((a, b))
    })?;
    Some(format!(
        "**The same build:** `{}` and `{}` are both commit `{}`, built alike — a difference \
         between them is the machine's (check the refs if you meant two)",
        a.0,
        b.0,
        &a.1[..a.1.len().min(12)]
    ))
}

/// The answer first: same answers?, start-up, serving, findings — one line each.
pub(super) fn summary(
    r: &Results,
    compat: &[CompatReport],
    found: &[Finding],
    paired: &[crate::analysis::verdicts::PointVerdicts],
    family: Option<&crate::analysis::verdicts::Family>,
) -> Vec<String> {
    let mut out: Vec<String> = same_build(r).into_iter().collect();
    out.extend(same_answers(compat));
    let ready: Vec<(String, f64, f64)> = r
        .compared()
        .filter_map(|c| {
            let (first, ready) = r.startup_medians(&c.name)?;
            Some((c.name.clone(), first, ready))
        })
        .collect();
    if ready.len() > 1 {
        let parts: Vec<String> = ready
            .iter()
            .map(|(n, f, rd)| {
                format!(
                    "{n} answers after {}, is ready after {}",
                    fmt_us(f * 1e6),
                    fmt_us(rd * 1e6)
                )
            })
            .collect();
        out.push(format!("**Start-up:** {}", parts.join("; ")));
    }
    let mut serving = super::paired::summary(paired, family);
    // What is still open points at the machine when the machine is the reason.
    if let Some(c) = found
        .iter()
        .find(|f| matches!(f, Finding::Contention { .. }))
    {
        if let Some(open) = serving
            .iter_mut()
            .find(|l| l.starts_with("**Not settled:**"))
        {
            open.push_str(&format!(" — and the machine is busy: {c}"));
        }
    }
    out.extend(serving);
    out.extend(
        r.budget
            .as_ref()
            .and_then(|b| budget(b, r.repetitions, paired)),
    );
    if paired.is_empty() {
        out.extend(unpaired(r));
    }
    out.extend(super::capacity::summary(r));
    out.extend(
        super::edges::summary(r)
            .into_iter()
            .map(|l| format!("**What if slower:** {l}")),
    );
    if !found.is_empty() {
        out.push(format!(
            "**Findings:** {} (details below); first: {}",
            found.len(),
            found[0]
        ));
    }
    out
}

/// `**Budget:**` what a paired run's second stage bought (docs/verdicts.md, "The budget"):
/// `budget 10 min: the plan's 3 repetitions took 1 min 40 s; 5 more at 2 points, 2 min 10 s`,
/// and what it could not buy — the points cut short of the repetitions sized for them that
/// are still inconclusive in `paired` (a count alone in files before the points were kept);
/// nothing when every point was decided at the plan's.
fn budget(
    b: &crate::results::BudgetSpent,
    planned: u32,
    paired: &[crate::analysis::verdicts::PointVerdicts],
) -> Option<String> {
    let open = |name: &String| {
        paired.iter().any(|pv| {
            pv.point.to_string() == *name
                && pv
                    .main()
                    .is_some_and(|v| v.call == crate::stats::paired::Call::Inconclusive)
        })
    };
    let still = match b.cut.is_empty() {
        true => b.left,
        false => b.cut.iter().filter(|n| open(n)).count() as u32,
    };
    if b.more_repetitions == 0 && still == 0 {
        return None;
    }
    let minutes = crate::units::duration;
    let head = match b.budget_s {
        Some(s) => format!("{} budget", minutes(s)),
        None => "no budget (`paired.max_repetitions` alone)".into(),
    };
    let first = format!(
        "the plan's {} took {}",
        super::count(u64::from(planned), "repetition"),
        minutes(b.first_s)
    );
    let more = match b.more_repetitions {
        0 => "; no further repetition fitted in what was left".to_string(),
        n => format!(
            "; {} more at {}, {}",
            n,
            super::count(u64::from(b.points), "point"),
            minutes(b.more_s)
        ),
    };
    let left = match still {
        0 => String::new(),
        n => format!(
            "; the budget ran out with {} still inconclusive that more repetitions could settle (a larger `budget`, or `--budget`)",
            super::count(u64::from(n), "point")
        ),
    };
    Some(format!("**Budget:** {head}: {first}{more}{left}"))
}

/// `**Same answers?**`: per contender, the cases that answer like the baseline, and the
/// commonest kinds of difference.
fn same_answers(compat: &[CompatReport]) -> Vec<String> {
    let mut out = Vec::new();
    for rep in compat {
        for (i, c) in rep
            .sets
            .first()
            .map(|s| s.contenders.clone())
            .unwrap_or_default()
            .iter()
            .enumerate()
        {
            let (mut same, mut total) = (0, 0);
            let mut classes: Vec<(usize, String)> = Vec::new();
            for s in &rep.sets {
                let x = &s.contenders[i];
                same += x.identical + x.same_failure;
                total += x.compared;
                // One kind of difference found at several calls is counted once, summed.
                for k in x.classes.iter().filter(|k| k.kind != "both_failed") {
                    match classes.iter_mut().find(|(_, c)| *c == k.class) {
                        Some((n, _)) => *n += k.cases,
                        None => classes.push((k.cases, k.class.clone())),
                    }
                }
            }
            classes.sort_by_key(|c| std::cmp::Reverse(c.0));
            let why: Vec<String> = classes
                .iter()
                .take(3)
                .map(|(n, k)| format!("{n} × {k}"))
                .collect();
            out.push(format!(
                "**Same answers?** {}: {same} of {total} cases answer like {}{}",
                c.contender,
                rep.baseline,
                if why.is_empty() {
                    String::new()
                } else {
                    format!("; differences: {}", why.join(", "))
                }
            ));
        }
    }
    out
}

/// `**Serving:**` for runs that were not paired: per contender, where it had more and less
/// throughput than its baseline, and how many of those differences are significant.
fn unpaired(r: &Results) -> Vec<String> {
    let mut out = Vec::new();
    for c in r.compared() {
        let Some(base) = c.baseline.as_deref().filter(|b| *b != c.name) else {
            continue;
        };
        // Throughput deltas (%) at the points where it was faster and where it was slower.
        let (mut faster, mut slower): (Vec<f64>, Vec<f64>) = (Vec::new(), Vec::new());
        let (mut significant, mut points) = (0, 0);
        // Capacity scenarios have their own line (below).
        for s in r.scenarios.iter().filter(|s| s.capacity.is_none()) {
            for p in &s.points {
                let rate = |who: &str| median(&r.rates(who, p));
                let (Some(a), Some(b)) = (rate(base), rate(&c.name)) else {
                    continue;
                };
                points += 1;
                if a > 0.0 && b > a {
                    faster.push((b - a) / a * 100.0);
                } else if a > 0.0 && b < a {
                    slower.push((b - a) / a * 100.0);
                }
                let v = verdict(r, p, base, &c.name);
                if v == "faster" || v == "slower" {
                    significant += 1;
                }
            }
        }
        if points > 0 {
            out.push(format!(
                "**Serving:** {} has more throughput than {base} at {} of {points} points{} and less at {}{}; {significant} of those differences are significant (Mann-Whitney U over the repetitions)",
                c.name,
                faster.len(),
                delta_range(&faster),
                slower.len(),
                delta_range(&slower),
            ));
        }
    }
    out
}

/// ` (+12%)` or ` (+3% to +40%)` for a set of deltas in percent; empty for none. When a gain
/// reaches 100 %, the range reads as factors: ` (1.40× to 525×)`.
fn delta_range(deltas: &[f64]) -> String {
    let lo = deltas.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = deltas.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let show = |d: f64| {
        if hi < 100.0 {
            format!("{d:+.0}%")
        } else {
            let f = 1.0 + d / 100.0;
            if f < 2.0 {
                format!("{f:.2}×")
            } else if f < 10.0 {
                format!("{f:.1}×")
            } else {
                format!("{f:.0}×")
            }
        }
    };
    match deltas.len() {
        0 => String::new(),
        _ if show(lo) == show(hi) => format!(" ({})", show(lo)),
        _ => format!(" ({} to {})", show(lo), show(hi)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_line_counts_only_cut_points_still_open_at_the_end() {
        use crate::analysis::verdicts::{fixtures::*, Figure};
        let spent = crate::results::BudgetSpent {
            budget_s: Some(600.0),
            first_s: 60.0,
            more_s: 540.0,
            more_repetitions: 90,
            points: 2,
            left: 2,
            cut: vec!["s [clients=4]".into(), "s [clients=16]".into()],
        };
        let mut at4 = at(4, vec![v(Figure::CpuPerRequest, 1.0, 0.99, 1.01)]);
        at4.point.scenario = "s".into();
        let mut at16 = at(16, vec![v(Figure::CpuPerRequest, 1.0, 0.97, 1.03)]);
        at16.point.scenario = "s".into();
        // Both cut short; the one at 4 clients settled all the same (equivalent).
        let line = budget(&spent, 3, &[at4.clone(), at16.clone()]).unwrap();
        assert!(
            line.contains("90 more at 2 points")
                && line.contains("the budget ran out with 1 point still inconclusive"),
            "{line}"
        );
        // Both settled: the budget bought them, nothing ran out.
        at16.verdicts[0] = v(Figure::CpuPerRequest, 1.0, 0.99, 1.01);
        let line = budget(&spent, 3, &[at4, at16]).unwrap();
        assert!(!line.contains("ran out"), "{line}");
        // A file from before the points were kept: its count as written.
        let old = crate::results::BudgetSpent {
            cut: Vec::new(),
            ..spent
        };
        assert!(budget(&old, 3, &[])
            .unwrap()
            .contains("ran out with 2 points"));
    }

    #[test]
    fn delta_ranges_read_as_one_figure_or_a_span() {
        assert_eq!(delta_range(&[]), "");
        assert_eq!(delta_range(&[12.2]), " (+12%)");
        assert_eq!(delta_range(&[40.0, 3.4, 12.0]), " (+3% to +40%)");
        assert_eq!(delta_range(&[-5.0, -20.4]), " (-20% to -5%)");
        assert_eq!(delta_range(&[52441.0, 53650.0]), " (525× to 538×)");
        assert_eq!(delta_range(&[40.0, 150.0]), " (1.40× to 2.5×)");
    }

    #[test]
    fn one_kind_of_difference_at_several_calls_is_summed_once() {
        use crate::compat::analyze::*;
        let class = |cases: usize| ClassReport {
            kind: "value_differs".into(),
            class: "differs at header.revision".into(),
            cases,
            example: Example {
                case: 0,
                origin: "requests[0]".into(),
                request: "{}".into(),
                baseline: serde_json::Value::Null,
                other: serde_json::Value::Null,
                diff: Vec::new(),
            },
        };
        let set = |name: &str, cases: usize| SetReport {
            name: name.into(),
            call: name.into(),
            mode: crate::plan::CompatMode::MustMatch,
            cases: 10,
            noise_fields: Vec::new(),
            noisy_cases: 0,
            contenders: vec![ContenderReport {
                contender: "b".into(),
                identical: 10 - cases,
                same_failure: 0,
                compared: 10,
                classes: vec![class(cases)],
            }],
            reference: Vec::new(),
        };
        let rep = CompatReport {
            baseline: "a".into(),
            noise_instances: Vec::new(),
            sets: vec![set("Range", 3), set("Put", 4)],
            differences: 7,
            changing_noise: Vec::new(),
        };
        let r: Results = serde_json::from_value(serde_json::json!({
            "schema_version": 2, "tool": "t", "name": "n", "plan_path": "p", "status": "complete",
            "smoke": false, "started_at": "", "finished_at": null,
            "environment": crate::results::env::Environment::detect(),
            "baseline": null, "repetitions": 1, "order": "interleaved",
            "contenders": [], "scenarios": [], "runs": [], "warnings": []
        }))
        .unwrap();
        let lines = summary(&r, &[rep], &[], &[], None);
        assert_eq!(
            lines[0],
            "**Same answers?** b: 13 of 20 cases answer like a; differences: 7 × differs at header.revision"
        );
    }
}
