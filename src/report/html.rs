//! `report.html`: one self-contained page (inline CSS and SVG, no script, nothing fetched at
//! view time) with the summary's tables and charts — start-up bars, throughput per scenario
//! point with min–max whiskers, latency percentile curves per contender.

use std::fmt::Write as _;

use hdrhistogram::Histogram;

use super::table::Table;
use crate::results::Results;
use crate::stats::Sample;

const COLORS: [&str; 6] = [
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b",
];

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

pub fn render(r: &Results) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title>\n<style>\
         body{{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:1100px;color:#222}}\
         table{{border-collapse:collapse;margin:.5em 0 1.5em}}td,th{{border:1px solid #ccc;padding:3px 8px;text-align:right}}\
         td:first-child,th:first-child{{text-align:left}}th{{background:#f4f4f4}}\
         .charts{{display:flex;flex-wrap:wrap;gap:16px}}svg{{background:#fff;border:1px solid #ddd}}\
         .finding{{background:#fff6e0;border-left:4px solid #f0a000;padding:4px 8px;margin:4px 0}}\
         </style></head><body>\n<h1>{}</h1>\n",
        esc(&r.name),
        esc(&r.name)
    );
    let bullets = super::run_summary::summary(r);
    if !bullets.is_empty() {
        out.push_str("<h2>Summary</h2><ul>");
        for b in bullets {
            let html = esc(&b).replacen("**", "<b>", 1).replacen("**", "</b>", 1);
            let _ = write!(out, "<li>{html}</li>");
        }
        out.push_str("</ul>\n");
    }
    let found = crate::diagnose::findings(r, crate::diagnose::Limits::default());
    if !found.is_empty() {
        out.push_str("<h2>Findings</h2>\n");
        for f in &found {
            let _ = writeln!(out, "<div class=\"finding\">{}</div>", esc(&f.to_string()));
        }
    }
    let tables = super::run_summary::tables(r);
    out.push_str(&table_html(&tables[0]));
    out.push_str(&startup_chart(r));
    for rep in super::compat::from_results(r) {
        let _ = writeln!(out, "<h2>Compatibility against {}</h2>", esc(&rep.baseline));
        let names: Vec<String> = rep
            .sets
            .first()
            .map(|s| s.contenders.iter().map(|c| c.contender.clone()).collect())
            .unwrap_or_default();
        let _ = write!(out, "<table><tr><th>call</th><th>cases</th>");
        for n in &names {
            let _ = write!(out, "<th>{}</th>", esc(n));
        }
        out.push_str("</tr>\n");
        for s in &rep.sets {
            let _ = write!(out, "<tr><td>{}</td><td>{}</td>", esc(&s.name), s.cases);
            for c in &s.contenders {
                let share = if c.compared > 0 {
                    (c.identical + c.same_failure) as f64 / c.compared as f64
                } else {
                    1.0
                };
                let bg = if share >= 1.0 { "#e6f4e6" } else { "#fde8e8" };
                let _ = write!(
                    out,
                    "<td style=\"background:{bg}\">{}/{} identical</td>",
                    c.identical, c.compared
                );
            }
            out.push_str("</tr>\n");
        }
        out.push_str("</table>\n");
    }
    for (t, s) in tables[1..].iter().zip(&r.scenarios) {
        out.push_str(&table_html(t));
        out.push_str("<div class=\"charts\">");
        out.push_str(&throughput_chart(r, &s.name));
        out.push_str(&latency_charts(r, &s.name));
        out.push_str("</div>\n");
    }
    let _ = write!(
        out,
        "<h2>Environment</h2><p>{} · {} · {} CPUs · {}</p>\n</body></html>\n",
        esc(&r.environment.cpu_model),
        esc(&r.environment.kernel),
        r.environment.cpus_online,
        esc(&r.tool)
    );
    out
}

fn table_html(t: &Table) -> String {
    let mut out = format!("<h2>{}</h2>\n<table><tr>", esc(&t.title));
    for h in &t.head {
        let _ = write!(out, "<th>{}</th>", esc(h));
    }
    out.push_str("</tr>\n");
    for row in &t.rows {
        out.push_str("<tr>");
        for c in row {
            let _ = write!(out, "<td>{}</td>", esc(c));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table>\n");
    out
}

/// Horizontal bars: median time to first response and to ready, per contender.
fn startup_chart(r: &Results) -> String {
    let rows: Vec<(String, f64, f64)> = r
        .contenders
        .iter()
        .filter_map(|c| {
            let s: Vec<_> = r
                .runs
                .iter()
                .filter(|x| x.contender == c.name)
                .filter_map(|x| x.startup)
                .collect();
            let first = Sample::new(s.iter().map(|x| x.first_response_s).collect()).ok()?;
            let ready = Sample::new(s.iter().map(|x| x.ready_s).collect()).ok()?;
            Some((c.name.clone(), first.median(), ready.median()))
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
    let real: Vec<&str> = r
        .contenders
        .iter()
        .filter(|c| c.noise_of.is_none())
        .map(|c| c.name.as_str())
        .collect();
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
fn points_and_contenders<'a>(r: &'a Results, scenario: &str) -> (Vec<String>, Vec<&'a str>) {
    let points = r
        .scenarios
        .iter()
        .find(|s| s.name == scenario)
        .map(|s| s.points.clone())
        .unwrap_or_default();
    let names = r
        .contenders
        .iter()
        .filter(|c| c.noise_of.is_none())
        .map(|c| c.name.as_str())
        .collect();
    (points, names)
}

/// Grouped bars per scenario point: median requests/s per contender, min–max whiskers.
fn throughput_chart(r: &Results, scenario: &str) -> String {
    let (points, names) = points_and_contenders(r, scenario);
    let stats = |c: &str, p: &str| -> Option<(f64, f64, f64)> {
        let s = Sample::new(r.rates(c, scenario, p)).ok()?;
        Some((s.median(), s.min(), s.max()))
    };
    let max = points
        .iter()
        .flat_map(|p| names.iter().filter_map(|c| stats(c, p)).map(|s| s.2))
        .fold(0.0, f64::max);
    if max <= 0.0 {
        return String::new();
    }
    let (w, h, left, bottom) = (520.0, 300.0, 60.0, 60.0);
    let group = (w - left - 10.0) / points.len().max(1) as f64;
    let bw = (group - 8.0) / names.len().max(1) as f64;
    let y = |v: f64| h - bottom - v / max * (h - bottom - 30.0);
    let mut out = format!("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" role=\"img\" aria-label=\"throughput\"><text x=\"10\" y=\"18\" font-size=\"13\">{}: requests/s (median, min–max)</text><text x=\"4\" y=\"{:.0}\" font-size=\"10\">{max:.0}</text><line x1=\"{left}\" y1=\"{:.0}\" x2=\"{w}\" y2=\"{:.0}\" stroke=\"#888\"/>", esc(scenario), y(max) + 4.0, h - bottom, h - bottom);
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
                y(m), (bw - 2.0).max(1.0), (h - bottom - y(m)).max(0.5), esc(c), esc(p),
                x + bw / 2.0 - 1.0, y(hi), x + bw / 2.0 - 1.0, y(lo)
            );
        }
        let _ = write!(out, "<text x=\"{gx:.1}\" y=\"{:.0}\" font-size=\"9\" transform=\"rotate(20 {gx:.1},{:.0})\">{}</text>", h - bottom + 14.0, h - bottom + 14.0, esc(p));
    }
    legend(&mut out, &names, w - 150.0, 30.0);
    out.push_str("</svg>");
    out
}

/// Latency against percentile (log scale), one curve per contender, one chart per point;
/// each contender's histograms over its repetitions are merged.
fn latency_charts(r: &Results, scenario: &str) -> String {
    const Q: [f64; 7] = [0.5, 0.75, 0.9, 0.95, 0.99, 0.999, 0.9999];
    let (points, names) = points_and_contenders(r, scenario);
    let mut out = String::new();
    for p in &points {
        let curves: Vec<(usize, Vec<f64>)> = names
            .iter()
            .enumerate()
            .filter_map(|(i, c)| {
                let mut merged: Option<Histogram<u64>> = None;
                for x in r.point_runs(c, scenario, p) {
                    let Some(h) = x.load.as_ref().and_then(|l| l.latency_us.histogram().ok())
                    else {
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
                Some((
                    i,
                    Q.iter()
                        .map(|q| h.value_at_quantile(*q).max(1) as f64 / 1e3)
                        .collect(),
                ))
            })
            .collect();
        if curves.is_empty() {
            continue;
        }
        let (w, h, left, bottom) = (380.0, 240.0, 50.0, 40.0);
        let lo = curves
            .iter()
            .flat_map(|c| c.1.iter().copied())
            .fold(f64::MAX, f64::min)
            .max(1e-3)
            .log10()
            .floor();
        let hi = curves
            .iter()
            .flat_map(|c| c.1.iter().copied())
            .fold(0.0, f64::max)
            .max(1e-3)
            .log10()
            .ceil()
            .max(lo + 1.0);
        let y =
            |ms: f64| h - bottom - (ms.max(1e-3).log10() - lo) / (hi - lo) * (h - bottom - 30.0);
        let x = |i: usize| left + i as f64 * (w - left - 20.0) / (Q.len() - 1) as f64;
        let _ = write!(out, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" role=\"img\" aria-label=\"latency\"><text x=\"10\" y=\"18\" font-size=\"12\">latency (ms, log) by percentile — {}</text>", esc(p));
        for d in (lo as i32)..=(hi as i32) {
            let v = 10f64.powi(d);
            let _ = write!(out, "<line x1=\"{left}\" y1=\"{0:.1}\" x2=\"{1}\" y2=\"{0:.1}\" stroke=\"#eee\"/><text x=\"4\" y=\"{2:.1}\" font-size=\"9\">{v}</text>", y(v), w - 20.0, y(v) + 3.0);
        }
        for (i, q) in Q.iter().enumerate() {
            let _ = write!(
                out,
                "<text x=\"{:.1}\" y=\"{:.0}\" font-size=\"9\">p{}</text>",
                x(i) - 8.0,
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

fn legend(out: &mut String, names: &[&str], x: f64, y: f64) {
    for (i, n) in names.iter().enumerate() {
        let yy = y + i as f64 * 14.0;
        let _ = write!(out, "<rect x=\"{x:.0}\" y=\"{:.0}\" width=\"10\" height=\"10\" fill=\"{}\"/><text x=\"{:.0}\" y=\"{:.0}\" font-size=\"11\">{}</text>", yy - 9.0, COLORS[i % COLORS.len()], x + 14.0, yy, esc(n));
    }
}
