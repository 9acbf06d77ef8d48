//! The report's SVG charts: start-up bars, throughput against clients (or per point when a
//! scenario does not sweep clients) with min–max whiskers, latency percentile curves.

use std::fmt::Write as _;

use hdrhistogram::Histogram;

use super::esc;
use crate::report::scaling;
use crate::results::PointId;
use crate::results::Results;
mod curves;
pub(crate) use curves::*;

const COLORS: [&str; 6] = [
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b",
];

/// A chart's title as SVG text from (10, 18), wrapped onto a second line when it would not
/// fit `width` at font `size` (and cut with `…` past two lines, the whole of it kept as the
/// text's tooltip); with the y where the plot may begin under it.
fn title(text: &str, width: f64, size: f64) -> (String, f64) {
    let fits = ((width - 20.0) / (size * 0.56)).max(10.0) as usize;
    let mut lines: Vec<String> = vec![String::new()];
    for word in text.split(' ') {
        let last = lines.last_mut().expect("one line at least");
        if !last.is_empty() && last.chars().count() + 1 + word.chars().count() > fits {
            lines.push(word.to_string());
        } else {
            if !last.is_empty() {
                last.push(' ');
            }
            last.push_str(word);
        }
    }
    if lines.len() > 2 {
        let rest = lines[1..].join(" ");
        lines.truncate(1);
        lines.push(short(&rest, fits));
    }
    let mut out = format!(
        "<text x=\"10\" y=\"18\" font-size=\"{size}\"><title>{}</title>",
        esc(text)
    );
    for (i, l) in lines.iter().enumerate() {
        let dy = if i == 0 { 0.0 } else { size + 2.0 };
        let _ = write!(out, "<tspan x=\"10\" dy=\"{dy}\">{}</tspan>", esc(l));
    }
    out.push_str("</text>");
    (out, 18.0 + (lines.len() - 1) as f64 * (size + 2.0) + 12.0)
}

/// `text`, cut to `n` characters with `…`.
fn short(text: &str, n: usize) -> String {
    if text.chars().count() <= n {
        return text.to_string();
    }
    let mut t: String = text.chars().take(n.saturating_sub(1)).collect();
    t.push('…');
    t
}

/// Round values for a y axis from 0 up to `max`: steps of 1, 2 or 5 × 10ⁿ, at most five
/// above 0.
pub(crate) fn y_ticks(max: f64) -> Vec<f64> {
    if !(max > 0.0 && max.is_finite()) {
        return vec![0.0];
    }
    let raw = max / 5.0;
    let p = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * p)
        .find(|s| max / s <= 5.0)
        .unwrap_or(10.0 * p);
    (0..=5)
        .map(|k| k as f64 * step)
        .take_while(|v| *v <= max * 1.000_001)
        .collect()
}

/// Horizontal bars: median time to first response and to ready, per contender.
pub(super) fn startup(r: &Results) -> String {
    let rows: Vec<(String, f64, f64)> = r
        .contenders
        .iter()
        .filter_map(|c| {
            let (first, ready) = r.startup_medians(&c.name)?;
            Some((c.name.clone(), first, ready))
        })
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    let max = rows
        .iter()
        .map(|r| r.2.max(r.1))
        .fold(0.0, f64::max)
        .max(1e-6);
    let (w, bar) = (700.0, 14.0);
    let h = 30.0 + rows.len() as f64 * (2.0 * bar + 12.0);
    let mut out = format!("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" role=\"img\" aria-label=\"start-up\"><text x=\"10\" y=\"18\" font-size=\"13\">Start-up: first response (light) and ready (dark), seconds</text>");
    // The same colour per contender as in the other charts; noise instances in grey.
    let real: Vec<&str> = r.compared().map(|c| c.name.as_str()).collect();
    for (i, (name, first, ready)) in rows.iter().enumerate() {
        let y = 30.0 + i as f64 * (2.0 * bar + 12.0);
        let scale = |v: f64| v / max * (w - 260.0);
        let color = real
            .iter()
            .position(|n| n == name)
            .map_or("#999", |k| COLORS[k % COLORS.len()]);
        let _ = write!(
            out,
            "<text x=\"10\" y=\"{:.1}\" font-size=\"12\">{}</text>\
             <rect x=\"150\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{bar}\" fill=\"{color}\" opacity=\"0.45\"/>\
             <rect x=\"150\" y=\"{:.1}\" width=\"{:.1}\" height=\"{bar}\" fill=\"{color}\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\">{first:.3} / {ready:.3} s</text>",
            y + bar + 4.0,
            esc(name),
            scale(*first).max(1.0),
            y + bar,
            scale(*ready).max(1.0),
            155.0 + scale(*ready).max(*first),
            y + bar + 4.0
        );
    }
    out.push_str("</svg>");
    out
}

/// A scenario's points, and the contenders charted (noise instances are not).
fn points_and_contenders<'a>(r: &'a Results, scenario: &str) -> (Vec<PointId>, Vec<&'a str>) {
    let points = r
        .scenarios
        .iter()
        .find(|s| s.name == scenario)
        .map(|s| s.points.clone())
        .unwrap_or_default();
    let names = r.compared().map(|c| c.name.as_str()).collect();
    (points, names)
}

/// Grouped bars per scenario point: median requests/s per contender, min–max whiskers.
pub(super) fn throughput(r: &Results, scenario: &str) -> String {
    let (points, names) = points_and_contenders(r, scenario);
    let stats = |c: &str, p: &PointId| scaling::rate(r, c, p);
    let max = points
        .iter()
        .flat_map(|p| names.iter().filter_map(|c| stats(c, p)).map(|s| s.2))
        .fold(0.0, f64::max);
    if max <= 0.0 {
        return String::new();
    }
    // The legend gets its own column on the right, so it never covers a bar.
    let (w, h, left, bottom, key) = (520.0, 300.0, 60.0, 60.0, 140.0);
    let group = (w - left - key) / points.len().max(1) as f64;
    let bw = (group - 8.0) / names.len().max(1) as f64;
    let (head, top) = title(
        &format!("{scenario}: requests/s (median, min–max)"),
        w,
        13.0,
    );
    let y = |v: f64| h - bottom - v / max * (h - bottom - top);
    let mut out = format!("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" role=\"img\" aria-label=\"throughput\">{head}<line x1=\"{left}\" y1=\"{:.0}\" x2=\"{w}\" y2=\"{:.0}\" stroke=\"#888\"/>", h - bottom, h - bottom);
    for v in y_ticks(max) {
        let _ = write!(out, "<line x1=\"{left}\" y1=\"{0:.1}\" x2=\"{1:.0}\" y2=\"{0:.1}\" stroke=\"#eee\"/><text x=\"4\" y=\"{2:.1}\" font-size=\"10\">{3}</text>", y(v), w - key, y(v) + 3.0, crate::report::fmt_rate(v));
    }
    for (pi, p) in points.iter().enumerate() {
        let gx = left + pi as f64 * group + 4.0;
        for (ci, c) in names.iter().enumerate() {
            let Some((m, lo, hi)) = stats(c, p) else {
                continue;
            };
            let x = gx + ci as f64 * bw;
            let color = COLORS[ci % COLORS.len()];
            let _ = write!(
                out,
                "<rect x=\"{x:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"{color}\"><title>{} {}: {m:.0} req/s</title></rect>\
                 <line x1=\"{:.1}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" stroke=\"#000\"/>",
                y(m), (bw - 2.0).max(1.0), (h - bottom - y(m)).max(0.5), esc(c), esc(&p.label()),
                x + bw / 2.0 - 1.0, y(hi), x + bw / 2.0 - 1.0, y(lo)
            );
        }
        // Rotated labels have the bottom margin to themselves: cut past it, whole in the
        // tooltip.
        let label = p.label();
        let _ = write!(out, "<text x=\"{gx:.1}\" y=\"{:.0}\" font-size=\"9\" transform=\"rotate(20 {gx:.1},{:.0})\"><title>{}</title>{}</text>", h - bottom + 14.0, h - bottom + 14.0, esc(&label), esc(&short(&label, 26)));
    }
    legend(&mut out, &names, w - key + 10.0, 30.0);
    out.push_str("</svg>");
    out
}

/// (index of the point in its series, (median, min, max) requests/s).
type Curve = Vec<(usize, (f64, f64, f64))>;

/// Requests/s against clients, one chart per series of a clients sweep: a line through each
/// contender's medians, with min–max whiskers. Empty when the scenario does not sweep clients.
pub(super) fn scaling(r: &Results, scenario: &str) -> String {
    let (_, names) = points_and_contenders(r, scenario);
    let mut out = String::new();
    for s in scaling::series(r, scenario) {
        let curves: Vec<(usize, Curve)> = names
            .iter()
            .enumerate()
            .map(|(ci, c)| {
                let pts = s
                    .points
                    .iter()
                    .enumerate()
                    .filter_map(|(i, p)| Some((i, scaling::rate(r, c, p)?)))
                    .collect();
                (ci, pts)
            })
            .filter(|(_, pts): &(usize, Vec<_>)| !pts.is_empty())
            .collect();
        let max = curves
            .iter()
            .flat_map(|(_, pts)| pts.iter().map(|p| p.1 .2))
            .fold(0.0, f64::max);
        if max <= 0.0 {
            continue;
        }
        let (w, h, left, bottom) = (440.0, 260.0, 60.0, 40.0);
        let n = s.points.len();
        // Client counts are usually powers of two: evenly spaced reads as a log axis.
        let x = |i: usize| left + 10.0 + i as f64 * (w - left - 140.0) / (n - 1).max(1) as f64;
        let name = if s.key.is_empty() {
            scenario.to_string()
        } else {
            format!("{scenario} — {}", s.key)
        };
        let (head, plot_top) = title(
            &format!("{name}: requests/s by clients (median, min–max)"),
            w,
            12.0,
        );
        let y = |v: f64| h - bottom - v / max * (h - bottom - plot_top);
        let (axis, right, top) = (h - bottom, w - 130.0, y(max));
        let _ = write!(
            out,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" role=\"img\" aria-label=\"throughput by clients\">{head}\
             <line x1=\"{left}\" y1=\"{axis:.0}\" x2=\"{right:.0}\" y2=\"{axis:.0}\" stroke=\"#888\"/><line x1=\"{left}\" y1=\"{axis:.0}\" x2=\"{left}\" y2=\"{top:.0}\" stroke=\"#888\"/>",
        );
        for v in y_ticks(max) {
            let _ = write!(out, "<line x1=\"{left}\" y1=\"{0:.1}\" x2=\"{right:.0}\" y2=\"{0:.1}\" stroke=\"#eee\"/><text x=\"4\" y=\"{1:.1}\" font-size=\"10\">{2}</text>", y(v), y(v) + 3.0, crate::report::fmt_rate(v));
        }
        for (i, clients) in s.points.iter().map(|p| p.clients).enumerate() {
            let _ = write!(
                out,
                "<text x=\"{:.1}\" y=\"{:.0}\" font-size=\"10\" text-anchor=\"middle\">{clients}</text>",
                x(i),
                h - bottom + 14.0
            );
        }
        let _ = write!(
            out,
            "<text x=\"{:.0}\" y=\"{:.0}\" font-size=\"10\" text-anchor=\"middle\">clients</text>",
            (left + w - 130.0) / 2.0,
            h - 6.0
        );
        for (ci, pts) in &curves {
            let clients = |i: usize| s.points[i].clients;
            scaling_curve(
                &mut out,
                (&x, &y),
                COLORS[ci % COLORS.len()],
                names[*ci],
                pts,
                &clients,
            );
        }
        let shown: Vec<&str> = curves.iter().map(|(i, _)| names[*i]).collect();
        legend(&mut out, &shown, w - 120.0, 44.0);
        out.push_str("</svg>");
    }
    out
}

/// One contender's line through its medians, with a min–max whisker and a dot (its
/// tooltip the figures) at each point.
fn scaling_curve(
    out: &mut String,
    (x, y): (&dyn Fn(usize) -> f64, &dyn Fn(f64) -> f64),
    color: &str,
    name: &str,
    pts: &Curve,
    clients: &dyn Fn(usize) -> usize,
) {
    let line: Vec<String> = pts
        .iter()
        .map(|(i, (m, _, _))| format!("{:.1},{:.1}", x(*i), y(*m)))
        .collect();
    let _ = write!(
        out,
        "<polyline fill=\"none\" stroke=\"{color}\" stroke-width=\"2\" points=\"{}\"/>",
        line.join(" ")
    );
    for (i, (m, lo, hi)) in pts {
        let px = x(*i);
        let _ = write!(
            out,
            "<line x1=\"{px:.1}\" y1=\"{:.1}\" x2=\"{px:.1}\" y2=\"{:.1}\" stroke=\"{color}\"/>\
             <line x1=\"{:.1}\" y1=\"{1:.1}\" x2=\"{:.1}\" y2=\"{1:.1}\" stroke=\"{color}\"/>\
             <line x1=\"{2:.1}\" y1=\"{0:.1}\" x2=\"{3:.1}\" y2=\"{0:.1}\" stroke=\"{color}\"/>\
             <circle cx=\"{px:.1}\" cy=\"{:.1}\" r=\"3\" fill=\"{color}\"><title>{}, {} clients: {m:.0} req/s ({lo:.0}–{hi:.0})</title></circle>",
            y(*hi),
            y(*lo),
            px - 4.0,
            px + 4.0,
            y(*m),
            esc(name),
            clients(*i),
        );
    }
}

/// Latency against percentile (log scale), one curve per contender, one chart per point;
/// each contender's histograms over its repetitions are merged.
pub(super) fn latency(r: &Results, scenario: &str) -> String {
    const Q: [f64; 7] = [0.5, 0.75, 0.9, 0.95, 0.99, 0.999, 0.9999];
    let (points, names) = points_and_contenders(r, scenario);
    let mut out = String::new();
    for p in &points {
        let curves: Vec<(usize, Vec<f64>)> = names
            .iter()
            .enumerate()
            .filter_map(|(i, c)| Some((i, quantiles_ms(r, c, p, &Q)?)))
            .collect();
        if curves.is_empty() {
            continue;
        }
        let (w, h, left, bottom) = (400.0, 240.0, 50.0, 40.0);
        let (lo, hi) = decades(curves.iter().flat_map(|c| c.1.iter().copied()));
        let y =
            |ms: f64| h - bottom - (ms.max(1e-3).log10() - lo) / (hi - lo) * (h - bottom - 30.0);
        // The last label (p99.99) is centred on its tick: leave it room on the right.
        let x = |i: usize| left + i as f64 * (w - left - 40.0) / (Q.len() - 1) as f64;
        let _ = write!(out, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" role=\"img\" aria-label=\"latency\">{}", title(&format!("latency (ms, log) by percentile — {}", p.label()), w, 12.0).0);
        for d in (lo as i32)..=(hi as i32) {
            let v = 10f64.powi(d);
            let _ = write!(out, "<line x1=\"{left}\" y1=\"{0:.1}\" x2=\"{1}\" y2=\"{0:.1}\" stroke=\"#eee\"/><text x=\"4\" y=\"{2:.1}\" font-size=\"9\">{v}</text>", y(v), w - 20.0, y(v) + 3.0);
        }
        for (i, q) in Q.iter().enumerate() {
            let _ = write!(
                out,
                "<text x=\"{:.1}\" y=\"{:.0}\" font-size=\"9\" text-anchor=\"middle\">p{}</text>",
                x(i),
                h - bottom + 14.0,
                q * 100.0
            );
        }
        for (ci, vals) in &curves {
            let pts: Vec<String> = vals
                .iter()
                .enumerate()
                .map(|(i, v)| format!("{:.1},{:.1}", x(i), y(*v)))
                .collect();
            let _ = write!(
                out,
                "<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"2\" points=\"{}\"/>",
                COLORS[ci % COLORS.len()],
                pts.join(" ")
            );
        }
        let shown: Vec<&str> = curves.iter().map(|(i, _)| names[*i]).collect();
        legend(&mut out, &shown, w - 120.0, 30.0);
        out.push_str("</svg>");
    }
    out
}

/// A contender's latency at each quantile in `q` (ms), its histograms over the point's
/// repetitions merged; none when it has no answers there.
fn quantiles_ms(r: &Results, c: &str, p: &PointId, q: &[f64]) -> Option<Vec<f64>> {
    let mut merged: Option<Histogram<u64>> = None;
    for x in r.point_runs(c, p) {
        let Some(h) = x.load.as_ref().and_then(|l| l.latency_us.histogram().ok()) else {
            continue;
        };
        match &mut merged {
            None => merged = Some(h),
            Some(m) => {
                let _ = m.add(&h);
            }
        }
    }
    let h = merged.filter(|h| !h.is_empty())?;
    Some(
        q.iter()
            .map(|q| h.value_at_quantile(*q).max(1) as f64 / 1e3)
            .collect(),
    )
}

/// The decades (log10, whole) a log axis spans to hold `values` (ms, at least 1 µs): at
/// least one.
fn decades(values: impl Iterator<Item = f64> + Clone) -> (f64, f64) {
    let lo = values
        .clone()
        .fold(f64::MAX, f64::min)
        .max(1e-3)
        .log10()
        .floor();
    let hi = values
        .fold(0.0, f64::max)
        .max(1e-3)
        .log10()
        .ceil()
        .max(lo + 1.0);
    (lo, hi)
}

fn legend(out: &mut String, names: &[&str], x: f64, y: f64) {
    for (i, n) in names.iter().enumerate() {
        let yy = y + i as f64 * 14.0;
        let _ = write!(out, "<rect x=\"{x:.0}\" y=\"{:.0}\" width=\"10\" height=\"10\" fill=\"{}\"/><text x=\"{:.0}\" y=\"{:.0}\" font-size=\"11\">{}</text>", yy - 9.0, COLORS[i % COLORS.len()], x + 14.0, yy, esc(n));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_titles_wrap_and_axes_get_round_ticks() {
        let (one, top) = title("short: requests/s", 520.0, 13.0);
        assert_eq!(one.matches("<tspan").count(), 1);
        assert_eq!(top, 30.0);
        let long = "key_size=64 target=leader — a scenario with a long name: requests/s by clients (median, min–max)";
        let (two, top) = title(long, 440.0, 12.0);
        assert_eq!(two.matches("<tspan").count(), 2, "{two}");
        assert!(top > 30.0);
        // Every word is there, across the two lines.
        assert!(
            two.contains("min–max)") && two.contains("key_size=64"),
            "{two}"
        );
        let (cut, _) = title(&"word ".repeat(80), 300.0, 12.0);
        assert_eq!(cut.matches("<tspan").count(), 2);
        assert!(cut.contains('…'));
        assert_eq!(short("abcdef", 4), "abc…");
        assert_eq!(short("abc", 4), "abc");
        assert_eq!(
            y_ticks(94_696.0),
            [0.0, 20_000.0, 40_000.0, 60_000.0, 80_000.0]
        );
        assert_eq!(y_ticks(5.0), [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
        assert_eq!(y_ticks(23.8), [0.0, 5.0, 10.0, 15.0, 20.0]);
        assert_eq!(y_ticks(0.0), [0.0]);
    }
}
