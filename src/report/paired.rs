//! The serving table and summary lines of a paired run: each point's figures per contender,
//! then the verdicts against the baseline as ratios with their intervals, the figure that
//! was stable on this machine first.

use super::table::{Cell, Table, Unit};
use crate::analysis::verdicts::{Family, Figure, PointVerdicts, Verdict};
use crate::results::{PointId, Results};
use crate::stats::paired::Call;

/// The figures in the order their intervals were narrowest over the whole run (the steady
/// ones first), each with its mean precision (±share).
pub fn stability(verdicts: &[PointVerdicts]) -> Vec<(Figure, f64)> {
    let mut out: Vec<(Figure, f64)> = Figure::ALL
        .iter()
        .filter_map(|&f| {
            let p: Vec<f64> = verdicts
                .iter()
                .filter_map(|v| v.get(f))
                .map(|v| v.ratio.precision())
                .filter(|p| p.is_finite())
                .collect();
            (!p.is_empty()).then(|| (f, p.iter().sum::<f64>() / p.len() as f64))
        })
        .collect();
    out.sort_by(|a, b| a.1.total_cmp(&b.1));
    out
}

/// The summary's serving lines: the verdicts that are still inconclusive first, with what
/// would settle them; per contender, how many points each verdict read what (counts of zero
/// left out); the error control over the report; and which figures were steady enough here
/// to decide on.
pub fn summary(verdicts: &[PointVerdicts], family: Option<&Family>) -> Vec<String> {
    let mut out = Vec::new();
    out.extend(unsettled(verdicts));
    // Each pair once, in the order first seen (points interleave the contenders).
    let mut names: Vec<(&str, &str)> = Vec::new();
    for v in verdicts {
        let pair = (v.contender.as_str(), v.baseline.as_str());
        if !names.contains(&pair) {
            names.push(pair);
        }
    }
    for (name, base) in names {
        out.extend(serving(verdicts, name, base));
    }
    out.extend(family.filter(|f| f.verdicts > 0).map(error_control));
    if let Some(f) = family.filter(|f| f.unjudged > 0) {
        out.push(format!(
            "**Not judged:** {} measured none of the figures `paired.judge` names ({}), so no verdict there; CPU per item is measured only where a call streams its answer",
            super::count(f.unjudged as u64, "comparison"),
            f.judged.iter().map(|x| x.name()).collect::<Vec<_>>().join(", ")
        ));
    }
    let st = stability(verdicts);
    if let Some(((best, p), rest)) = st.split_first() {
        let others: Vec<String> = rest
            .iter()
            .map(|(f, p)| format!("{} ±{:.1}%", f.name(), p * 100.0))
            .collect();
        out.push(format!(
            "**Steadiest here:** {} (intervals ±{:.1}% on average){}",
            best.name(),
            p * 100.0,
            if others.is_empty() {
                String::new()
            } else {
                format!("; then {}", others.join(", "))
            }
        ));
    }
    out
}

/// `**Serving:** new against old, paired over 3 repetitions, 2 points: CPU per request …;
/// throughput …` — CPU per request and throughput, or the main figure of a plan that judges
/// neither (`paired.judge`).
fn serving(verdicts: &[PointVerdicts], name: &str, base: &str) -> Option<String> {
    let mine: Vec<&PointVerdicts> = verdicts.iter().filter(|v| v.contender == name).collect();
    let mut leads = vec![Figure::CpuPerRequest, Figure::Throughput];
    if !mine
        .iter()
        .any(|v| leads.iter().any(|f| v.get(*f).is_some()))
    {
        leads = mine
            .iter()
            .filter_map(|v| v.main())
            .map(|v| v.figure)
            .take(1)
            .collect();
    }
    let mut parts = Vec::new();
    for figure in leads {
        let vs: Vec<&Verdict> = mine.iter().filter_map(|v| v.get(figure)).collect();
        if !vs.is_empty() {
            parts.push(format!("{} {}", figure.name(), counts(&vs)));
        }
    }
    // Points repeated past the plan's (`max_repetitions`) have more: a range.
    let reps: Vec<usize> = mine
        .iter()
        .filter_map(|v| v.main())
        .map(|v| v.ratio.repetitions)
        .collect();
    let (lo, hi) = (reps.iter().min()?, reps.iter().max()?);
    let over = if lo == hi {
        super::count(*lo as u64, "repetition")
    } else {
        format!("{lo}–{hi} repetitions")
    };
    Some(format!(
        "**Serving:** {name} against {base}, paired over {over}, {}: {}",
        super::count(mine.len() as u64, "point"),
        parts.join("; ")
    ))
}

/// `**Error control:** 8 verdicts over 2 comparisons — "different" held to a false discovery
/// rate of 5% (Benjamini–Hochberg): 8 different`.
fn error_control(f: &Family) -> String {
    let held = match f.held_back {
        0 => String::new(),
        n => format!(
            "; {} cleared the noise band alone and {} held back",
            super::count(n as u64, "verdict"),
            if n == 1 { "was" } else { "were" }
        ),
    };
    let words: Vec<String> = [
        (f.different, "different"),
        (f.equivalent, "equivalent"),
        (f.inconclusive, "inconclusive"),
    ]
    .iter()
    .filter(|(n, _)| *n > 0)
    .map(|(n, w)| format!("{n} {w}"))
    .collect();
    // A plan that names the figures it judges says so: the family is those only.
    let of = match f.judged.as_slice() {
        [] => String::new(),
        j => format!(
            " of {} (`paired.judge`)",
            j.iter().map(|x| x.name()).collect::<Vec<_>>().join(", ")
        ),
    };
    format!(
        "**Error control:** {}{of} over {} — \"different\" held to a false discovery rate of {} (Benjamini–Hochberg): {}{held}",
        super::count(f.verdicts as u64, "verdict"),
        super::count(f.comparisons as u64, "comparison"),
        crate::analysis::verdicts::pct(f.fdr),
        words.join(", ")
    )
}

/// `lower at 9 of 12 points (0.70× to 0.80×), equivalent at 2, inconclusive at 1`: each
/// word's count, zeros left out, the range of the different ones' estimates.
fn counts(vs: &[&Verdict]) -> String {
    let range = |call: Call| {
        let r: Vec<f64> = vs
            .iter()
            .filter(|v| v.call == call)
            .map(|v| v.ratio.ratio)
            .collect();
        let lo = r.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = r.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        // One notation for both ends (`÷2.1 to ÷1.83`, not `÷2.1 to 0.547×`).
        let (a, b) = crate::stats::notation::fmt_range(lo, hi);
        match r.len() {
            0 => String::new(),
            _ if a == b => format!(" ({a})"),
            _ => format!(" ({a} to {b})"),
        }
    };
    let n = |call: Call| vs.iter().filter(|v| v.call == call).count();
    let mut parts: Vec<String> = Vec::new();
    for (call, word) in [
        (Call::Higher, "higher"),
        (Call::Lower, "lower"),
        (Call::Equivalent, "equivalent"),
        (Call::Inconclusive, "inconclusive"),
    ] {
        let k = n(call);
        if k == 0 {
            continue;
        }
        let of = if parts.is_empty() {
            format!(" of {}", super::count(vs.len() as u64, "point"))
        } else {
            String::new()
        };
        let span = if call.is_different() {
            range(call)
        } else {
            String::new()
        };
        parts.push(format!("{word} at {k}{of}{span}"));
    }
    parts.join(", ")
}

/// `**Not settled:** …`: the comparisons whose main figure is inconclusive, each with its
/// half-width and what would settle it (at most five named).
fn unsettled(verdicts: &[PointVerdicts]) -> Option<String> {
    let open: Vec<String> = verdicts
        .iter()
        .filter_map(|v| {
            let x = v.main()?;
            let how = x.settle(v.round_limit)?;
            Some(format!(
                "{} at {} ({} ±{}; {how})",
                v.contender,
                v.point,
                x.figure.name(),
                crate::analysis::verdicts::pct(x.ratio.precision())
            ))
        })
        .collect();
    if open.is_empty() {
        return None;
    }
    let shown = open.len().min(5);
    let more = match open.len() - shown {
        0 => String::new(),
        n => format!("; and {n} more (see the tables)"),
    };
    Some(format!(
        "**Not settled:** {} inconclusive — {}{more}",
        super::count(open.len() as u64, "comparison"),
        open[..shown].join("; ")
    ))
}

/// A scenario's table in paired order; `None` when no contender measured it.
pub fn table(r: &Results, name: &str, call: &str, verdicts: &[PointVerdicts]) -> Option<Table> {
    let info = r.scenarios.iter().find(|s| s.name == name)?;
    // A column for every figure judged: the summary counts each verdict a table shows.
    let order: Vec<Figure> = stability(verdicts).into_iter().map(|x| x.0).collect();
    let factors = factor_columns(&order, verdicts);
    let axes = super::cells::Axes::of(info);
    // A streaming call's headline figure is items/s (blocks of a range, say): its column
    // comes after req/s.
    let streams = info.points.iter().any(|id| {
        r.contenders.iter().any(|c| {
            r.point_runs(&c.name, id)
                .filter_map(|p| p.load.as_ref())
                .any(|l| l.items != l.requests)
        })
    });
    let mut head = axes.head();
    head.push("contender".into());
    head.push("req/s".into());
    if streams {
        head.push("items/s".into());
    }
    head.extend(["CPU/req", "p50", "p99", "failed"].map(String::from));
    head.extend(order.iter().map(|f| format!("{} ×", f.name())));
    head.push("rounds".into());
    let mut rows = Vec::new();
    for id in &info.points {
        for c in &r.contenders {
            let pts: Vec<_> = r.point_runs(&c.name, id).collect();
            if pts.is_empty() {
                continue;
            }
            let loads: Vec<_> = pts.iter().filter_map(|p| p.load.as_ref()).collect();
            let v = verdicts
                .iter()
                .find(|v| v.contender == c.name && v.point == *id);
            // Figures of failures would read as a fast contender: none, and no verdict.
            let none = super::cells::mostly_failed_cell(&loads);
            let mut row = axes.cells(id);
            row.push(super::cells::contender_cell(&c.name, &pts));
            row.extend(figures(&pts, streams, none.as_deref()));
            for f in &order {
                let x = v.and_then(|v| v.get(*f)).filter(|_| none.is_none());
                let factors = factors.contains(f);
                row.push(super::cells::verdict_cell_in(
                    &f.name().replace(' ', "_"),
                    x,
                    factors,
                ));
            }
            let n: Vec<usize> = pts
                .iter()
                .map(|p| p.slices.len())
                .filter(|n| *n > 0)
                .collect();
            let limit = crate::analysis::verdicts::round_limit(r, &c.name, id);
            row.push(
                Cell::count("repetitions", n.len() as u64)
                    .and("rounds_min", n.iter().min().copied())
                    .and("rounds_max", n.iter().max().copied())
                    .reads(if none.is_some() {
                        String::new()
                    } else {
                        rounds(r, &c.name, id, limit)
                    }),
            );
            rows.push(row);
        }
    }
    Some(Table {
        id: super::cells::serving_id(name),
        title: format!("{name} (`{call}`), paired: ratio to the baseline (95% interval)"),
        head,
        rows,
    })
}

/// The columns written in factors only, for one notation a column: where one small ratio's
/// interval reaches past 1 (a factor, never `÷0.83`), the column's other small ratios are
/// factors too.
fn factor_columns(order: &[Figure], verdicts: &[PointVerdicts]) -> Vec<Figure> {
    order
        .iter()
        .copied()
        .filter(|f| {
            verdicts.iter().filter_map(|v| v.get(*f)).any(|x| {
                let r = &x.ratio;
                r.ratio > 0.0 && r.ratio < 0.5 && !r.reads_as_divisor()
            })
        })
        .collect()
}

/// A contender's figures at a point (medians over the repetitions): req/s, items/s for a
/// stream, CPU per request, p50, p99 and the failures; `none` stands for them when most
/// calls failed.
fn figures(pts: &[&crate::results::PointRun], streams: bool, none: Option<&str>) -> Vec<Cell> {
    let loads: Vec<_> = pts.iter().filter_map(|p| p.load.as_ref()).collect();
    let of = |f: &dyn Fn(&crate::load::LoadResult) -> f64| super::cells::figures(&loads, f);
    let cpus: Vec<f64> = if none.is_some() {
        Vec::new()
    } else {
        pts.iter()
            .filter_map(|p| p.cost?.cpu_us_per(p.load.as_ref()?.requests))
            .map(|us| us / 1e6)
            .collect()
    };
    let mut cells = vec![Cell::median(
        "throughput",
        Unit::Rps,
        &of(&|l| l.requests_per_s),
    )];
    if streams {
        cells.push(Cell::median(
            "items",
            Unit::PerSecond,
            &of(&|l| l.items_per_s),
        ));
    }
    cells.push(Cell::median("cpu_per_request", Unit::Seconds, &cpus));
    cells.push(Cell::median(
        "p50",
        Unit::Seconds,
        &of(&|l| l.latency_us.p50 as f64 / 1e6),
    ));
    cells.push(Cell::median(
        "p99",
        Unit::Seconds,
        &of(&|l| l.latency_us.p99 as f64 / 1e6),
    ));
    if let Some(none) = none {
        cells[0].text = none.to_string();
    }
    let failed: u64 = loads.iter().map(|l| l.failures).sum();
    let errors = pts.iter().filter(|p| p.error.is_some()).count();
    cells.push(
        Cell::count("failed", failed)
            .and("points_not_run", errors)
            .reads(match errors {
                0 => failed.to_string(),
                e => format!("{failed} ({e} points did not run)"),
            }),
    );
    cells
}

/// `3 × 6`: repetitions × rounds (a range when repetitions took different numbers), and
/// `(limit)` when a repetition ran the most rounds allowed without reaching its precision.
fn rounds(r: &Results, contender: &str, id: &PointId, limit: Option<u32>) -> String {
    let n: Vec<usize> = r
        .point_runs(contender, id)
        .map(|p| p.slices.len())
        .filter(|n| *n > 0)
        .collect();
    let (lo, hi) = (n.iter().min(), n.iter().max());
    let hit = match (limit, hi) {
        (Some(m), Some(h)) if *h >= m as usize => " (limit)",
        _ => "",
    };
    match (lo, hi) {
        (Some(l), Some(h)) if l == h => format!("{} × {l}{hit}", n.len()),
        (Some(l), Some(h)) => format!("{} × {l}–{h}{hit}", n.len()),
        _ => "—".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::PointId;
    use crate::stats::paired::{Bands, Ratio};

    const BANDS: Bands = Bands {
        noise: 0.01,
        equivalence: 0.02,
    };

    fn with(contender: &str, clients: usize, r: (f64, f64, f64)) -> PointVerdicts {
        let ratio = Ratio {
            ratio: r.0,
            lo: r.1,
            hi: r.2,
            repetitions: 3,
            rounds: 30,
            student: None,
        };
        PointVerdicts {
            point: PointId::at(clients),
            contender: contender.into(),
            baseline: if contender == "b" { "a" } else { "x" }.into(),
            verdicts: vec![Verdict::new(Figure::CpuPerRequest, ratio, BANDS, Some(0.0))],
            machines: Vec::new(),
            round_limit: None,
        }
    }

    fn at(contender: &str, _baseline: &str, clients: usize) -> PointVerdicts {
        with(contender, clients, (0.5, 0.45, 0.55))
    }

    #[test]
    fn each_pair_gets_one_serving_line_however_the_points_interleave_them() {
        let v = [
            at("b", "a", 1),
            at("y", "x", 1),
            at("b", "a", 8),
            at("y", "x", 8),
        ];
        let lines = summary(&v, None);
        let serving: Vec<&String> = lines
            .iter()
            .filter(|l| l.starts_with("**Serving:**"))
            .collect();
        assert_eq!(serving.len(), 2, "{lines:?}");
        assert!(
            serving[0].contains("b against a") && serving[0].contains("2 points"),
            "{lines:?}"
        );
        assert!(serving[1].contains("y against x"), "{lines:?}");
        assert!(
            serving[0].contains("paired over 3 repetitions"),
            "{lines:?}"
        );
        // A point given more repetitions (`max_repetitions`): the line says the range.
        let mut more = v.to_vec();
        more[2].verdicts[0].ratio.repetitions = 7;
        let lines = summary(&more, None);
        assert!(
            lines
                .iter()
                .any(|l| l.contains("b against a, paired over 3–7 repetitions")),
            "{lines:?}"
        );
    }

    #[test]
    fn the_summary_leaves_out_zero_counts_and_puts_what_is_unsettled_first() {
        let mut v: Vec<PointVerdicts> = (1..=9).map(|k| with("b", k, (0.75, 0.72, 0.78))).collect();
        v.push(with("b", 10, (1.0, 0.995, 1.01)));
        v.push(with("b", 11, (1.0, 0.99, 1.012)));
        v.push(with("b", 12, (1.03, 0.98, 1.08)));
        for x in &mut v {
            x.round_limit = Some(30);
        }
        let family = crate::analysis::verdicts::control(&mut v, 0.05);
        let lines = summary(&v, Some(&family));
        let serving = lines
            .iter()
            .find(|l| l.starts_with("**Serving:**"))
            .unwrap();
        assert!(
            serving.ends_with(
                "CPU per request lower at 9 of 12 points (0.750×), equivalent at 2, inconclusive at 1"
            ),
            "{serving}"
        );
        assert!(!serving.contains("at 0"), "{serving}");
        assert!(
            lines[0].starts_with("**Not settled:** 1 comparison inconclusive — b at s [clients=12] (CPU per request ±5"),
            "{lines:?}"
        );
        let control = lines
            .iter()
            .find(|l| l.starts_with("**Error control:**"))
            .unwrap();
        assert!(
            control.contains("12 verdicts over 12 comparisons")
                && control.contains("false discovery rate of 5%")
                && control.contains("9 different, 2 equivalent, 1 inconclusive"),
            "{control}"
        );
    }

    #[test]
    fn a_range_of_estimates_keeps_one_notation() {
        // The demo's two points: 0.476× and 0.547× less CPU per request. Each alone would be
        // written ÷2.1 and 0.547×; a range of them is written in one notation.
        let mut v = vec![
            with("b", 1, (0.476, 0.45, 0.50)),
            with("b", 8, (0.547, 0.52, 0.57)),
        ];
        let family = crate::analysis::verdicts::control(&mut v, 0.05);
        let lines = summary(&v, Some(&family));
        assert!(
            lines
                .iter()
                .any(|l| l.ends_with("lower at 2 of 2 points (÷2.1 to ÷1.83)")),
            "{lines:?}"
        );
        // Above one half both ends are factors; across 1, factors too.
        assert_eq!(
            crate::stats::notation::fmt_range(0.6, 0.7),
            ("0.600×".to_string(), "0.700×".to_string())
        );
        assert_eq!(
            crate::stats::notation::fmt_range(0.3, 1.5),
            ("0.300×".to_string(), "1.50×".to_string())
        );
    }

    #[test]
    fn a_plan_judging_p99_alone_leads_with_it_and_names_its_family() {
        let mut v: Vec<PointVerdicts> = (1..=2).map(|k| with("b", k, (0.75, 0.72, 0.78))).collect();
        for x in &mut v {
            x.verdicts[0].figure = Figure::P99;
        }
        let mut family = crate::analysis::verdicts::control(&mut v, 0.05);
        family.judged = vec![Figure::P99];
        let lines = summary(&v, Some(&family));
        assert!(
            lines
                .iter()
                .any(|l| l.ends_with("2 points: p99 lower at 2 of 2 points (0.750×)")),
            "{lines:?}"
        );
        assert!(
            lines
                .iter()
                .any(|l| l.contains("2 verdicts of p99 (`paired.judge`) over 2 comparisons")),
            "{lines:?}"
        );
    }
}
