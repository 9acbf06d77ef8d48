//! Charts of latency against what was varied: the offered rate (a rate axis or a ramp) and the hold added on a slowed edge.

use super::*;

/// A point of a rate curve: its place on the axis, p50 and p99 (ms), the rate achieved.
pub(super) type RatePoint = (usize, f64, f64, f64);

/// Groups of points that differ only in rate (and stage), in plan order, each named by
/// what its points share.
pub(super) fn rate_groups(points: &[PointId]) -> Vec<(String, Vec<&PointId>)> {
    let mut groups: Vec<(String, Vec<&PointId>)> = Vec::new();
    for p in points.iter().filter(|p| p.rate.is_some()) {
        let key = PointId {
            rate: None,
            stage: None,
            ..(*p).clone()
        }
        .label();
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, g)) => g.push(p),
            None => groups.push((key, vec![p])),
        }
    }
    groups
}

/// Per contender with any (its index in `names`): each point of `group` as (its place,
/// p50 ms, p99 ms, achieved req/s), medians over the repetitions.
pub(super) fn rate_points(
    r: &Results,
    names: &[&str],
    group: &[&PointId],
) -> Vec<(usize, Vec<RatePoint>)> {
    let median = |v: Vec<f64>| crate::stats::Sample::new(v).ok().map(|s| s.median());
    names
        .iter()
        .enumerate()
        .map(|(ci, c)| {
            let pts = group
                .iter()
                .enumerate()
                .filter_map(|(i, p)| {
                    let loads: Vec<_> =
                        r.point_runs(c, p).filter_map(|x| x.load.as_ref()).collect();
                    let m = |f: &dyn Fn(&crate::load::LoadResult) -> f64| {
                        median(loads.iter().map(|l| f(l)).collect())
                    };
                    Some((
                        i,
                        m(&|l| l.latency_us.p50 as f64 / 1e3)?,
                        m(&|l| l.latency_us.p99 as f64 / 1e3)?,
                        m(&|l| l.requests_per_s)?,
                    ))
                })
                .collect();
            (ci, pts)
        })
        .filter(|(_, pts): &(usize, Vec<_>)| !pts.is_empty())
        .collect()
}

/// Latency against offered rate (a `rate = [..]` axis, or a ramp's stages): p50 (solid) and
/// p99 (dashed) per contender on a log scale, one chart per group of points that differ only
/// in rate, each dot's tooltip with the rate the contender actually achieved.
pub(crate) fn rate_curves(r: &Results, scenario: &str) -> String {
    let (points, names) = points_and_contenders(r, scenario);
    let groups = rate_groups(&points);
    let mut out = String::new();
    for (key, mut group) in groups.into_iter().filter(|(_, g)| g.len() > 1) {
        group.sort_by(|a, b| a.rate.unwrap_or(0.0).total_cmp(&b.rate.unwrap_or(0.0)));
        group.dedup_by(|a, b| a.rate == b.rate);
        let curves = rate_points(r, &names, &group);
        if curves.is_empty() {
            continue;
        }
        let (lo, hi) = decades(
            curves
                .iter()
                .flat_map(|(_, p)| p.iter().flat_map(|x| [x.1, x.2])),
        );
        let (w, h, left, bottom) = (460.0, 260.0, 50.0, 40.0);
        let n = group.len();
        let x = |i: usize| left + 10.0 + i as f64 * (w - left - 150.0) / (n - 1).max(1) as f64;
        let y =
            |ms: f64| h - bottom - (ms.max(1e-3).log10() - lo) / (hi - lo) * (h - bottom - 30.0);
        let name = format!("{scenario} — {key}");
        let _ = write!(
            out,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" role=\"img\" aria-label=\"latency by offered rate\">{}",
            title(&format!("{name}: p50 — and p99 - - (ms, log) by offered req/s"), w, 12.0).0
        );
        for d in (lo as i32)..=(hi as i32) {
            let v = 10f64.powi(d);
            let _ = write!(out, "<line x1=\"{left}\" y1=\"{0:.1}\" x2=\"{1}\" y2=\"{0:.1}\" stroke=\"#eee\"/><text x=\"4\" y=\"{2:.1}\" font-size=\"9\">{v}</text>", y(v), w - 140.0, y(v) + 3.0);
        }
        for (i, p) in group.iter().enumerate() {
            let _ = write!(
                out,
                "<text x=\"{:.1}\" y=\"{:.0}\" font-size=\"10\" text-anchor=\"middle\">{}</text>",
                x(i),
                h - bottom + 14.0,
                crate::report::fmt_rate(p.rate.unwrap_or(0.0))
            );
        }
        let _ = write!(
            out,
            "<text x=\"{:.0}\" y=\"{:.0}\" font-size=\"10\" text-anchor=\"middle\">offered req/s</text>",
            (left + w - 140.0) / 2.0,
            h - 6.0
        );
        for (ci, pts) in &curves {
            let color = COLORS[ci % COLORS.len()];
            for (dash, pick) in [("", 1usize), (" stroke-dasharray=\"5,3\"", 2)] {
                let line: Vec<String> = pts
                    .iter()
                    .map(|p| format!("{:.1},{:.1}", x(p.0), y(if pick == 1 { p.1 } else { p.2 })))
                    .collect();
                let _ = write!(
                    out,
                    "<polyline fill=\"none\" stroke=\"{color}\" stroke-width=\"2\"{dash} points=\"{}\"/>",
                    line.join(" ")
                );
            }
            for (i, p50, p99, achieved) in pts {
                let _ = write!(
                    out,
                    "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"3\" fill=\"{color}\"><title>{}, offered {} req/s: achieved {} req/s, p50 {p50:.2} ms, p99 {p99:.2} ms</title></circle>",
                    x(*i),
                    y(*p99),
                    esc(names[*ci]),
                    crate::report::fmt_rate(group[*i].rate.unwrap_or(0.0)),
                    crate::report::fmt_rate(*achieved),
                );
            }
        }
        let shown: Vec<&str> = curves.iter().map(|(i, _)| names[*i]).collect();
        legend(&mut out, &shown, w - 130.0, 44.0);
        out.push_str("</svg>");
    }
    out
}

/// One call's p50 through its holds, with a whisker and a dot at each, and its fitted slope
/// dashed.
pub(super) fn edge_line(
    out: &mut String,
    (x, y): (&dyn Fn(f64) -> f64, &dyn Fn(f64) -> f64),
    color: &str,
    s: &crate::report::edges::Series,
    (max_x, max_y): (f64, f64),
) {
    let line: Vec<String> = s
        .levels
        .iter()
        .map(|l| format!("{:.1},{:.1}", x(l.0), y(l.1 / 1e3)))
        .collect();
    let _ = write!(
        out,
        "<polyline points=\"{}\" fill=\"none\" stroke=\"{color}\" stroke-width=\"1.5\"/>",
        line.join(" ")
    );
    for l in &s.levels {
        let _ = write!(
            out,
            "<line x1=\"{0:.1}\" y1=\"{1:.1}\" x2=\"{0:.1}\" y2=\"{2:.1}\" stroke=\"{color}\"/><circle cx=\"{0:.1}\" cy=\"{3:.1}\" r=\"2.5\" fill=\"{color}\"><title>+{4} ms: p50 {5}</title></circle>",
            x(l.0),
            y(l.2.max(0.0) / 1e3),
            y(l.3 / 1e3),
            y(l.1 / 1e3),
            l.0,
            crate::units::fmt_us(l.1)
        );
    }
    if let Some(f) = s.slope {
        let (y0, y1) = (f.intercept / 1e3, (f.intercept + f.per_unit * max_x) / 1e3);
        let _ = write!(
            out,
            "<line x1=\"{:.1}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" stroke=\"{color}\" stroke-dasharray=\"4 3\"/>",
            x(0.0),
            y(y0.clamp(0.0, max_y)),
            x(max_x),
            y(y1.clamp(0.0, max_y))
        );
    }
}

/// p50 against the hold added on a slowed edge (the delay what-if): one line per call and
/// contender through its holds, each with its 95 % interval as a whisker, and the fitted
/// slope as a dashed line. Empty when the scenario has no delay variants.
pub(crate) fn edges(r: &Results, scenario: &str) -> String {
    let all = crate::report::edges::series(r, scenario);
    if all.is_empty() {
        return String::new();
    }
    let max_x = all
        .iter()
        .flat_map(|s| s.levels.iter().map(|l| l.0))
        .fold(0.0, f64::max)
        .max(1e-9);
    let max_y = all
        .iter()
        .flat_map(|s| s.levels.iter().map(|l| l.3 / 1e3))
        .fold(0.0, f64::max);
    if max_y <= 0.0 {
        return String::new();
    }
    let (w, h, left, bottom) = (440.0, 260.0, 60.0, 40.0);
    let (head, plot_top) = title(
        &format!(
            "{scenario}: p50 (ms) by the hold added on the edge (ms); dashed: the fitted slope"
        ),
        w,
        12.0,
    );
    let right = w - 130.0;
    let x = |v: f64| left + 10.0 + v / max_x * (right - left - 10.0);
    let y = |v: f64| h - bottom - v / max_y * (h - bottom - plot_top);
    let axis = h - bottom;
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" role=\"img\" aria-label=\"p50 by added delay\">{head}\
         <line x1=\"{left}\" y1=\"{axis:.0}\" x2=\"{right:.0}\" y2=\"{axis:.0}\" stroke=\"#888\"/><line x1=\"{left}\" y1=\"{axis:.0}\" x2=\"{left}\" y2=\"{:.0}\" stroke=\"#888\"/>",
        y(max_y)
    );
    for v in y_ticks(max_y) {
        let _ = write!(out, "<line x1=\"{left}\" y1=\"{0:.1}\" x2=\"{right:.0}\" y2=\"{0:.1}\" stroke=\"#eee\"/><text x=\"4\" y=\"{1:.1}\" font-size=\"10\">{v}</text>", y(v), y(v) + 3.0);
    }
    let holds = crate::report::edges::holds(&all);
    for hold in &holds {
        let _ = write!(
            out,
            "<text x=\"{:.1}\" y=\"{:.0}\" font-size=\"10\" text-anchor=\"middle\">+{hold}</text>",
            x(*hold),
            axis + 14.0
        );
    }
    let _ = write!(
        out,
        "<text x=\"{:.0}\" y=\"{:.0}\" font-size=\"10\" text-anchor=\"middle\">added hold, ms</text>",
        (left + right) / 2.0,
        h - 6.0
    );
    let mut names = Vec::new();
    for (i, s) in all.iter().enumerate() {
        edge_line(
            &mut out,
            (&x, &y),
            COLORS[i % COLORS.len()],
            s,
            (max_x, max_y),
        );
        names.push(format!("{} ({}) {}", s.contender, s.port, s.point.label()));
    }
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    legend(&mut out, &refs, right + 6.0, plot_top + 10.0);
    out.push_str("</svg>");
    out
}
