//! `bakeoff history report` (docs/history.md, "The dashboard"): one self-contained HTML page
//! — inline CSS and SVG, no script, nothing fetched — with the steps first (confirmed, then
//! those still open, then the rejected) and per series a chart of its figure over commits,
//! each point's interval drawn, the steps marked by status.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context as _;

use super::changes::{Change, Status};
use super::{Series, Store};
use crate::report::html::charts::y_ticks;
use crate::report::html::esc;

/// Writes the page as `out/index.html` and the latest night's badge as `out/badge.svg`;
/// the page's path.
pub fn write(store: &Store, out: &Path) -> anyhow::Result<PathBuf> {
    let series = store.series()?;
    let changes = store.changes(&[])?;
    let mut urls = BTreeMap::new();
    for s in &series {
        if !urls.contains_key(&s.key.plan) {
            urls.insert(s.key.plan.clone(), store.plan_of(&s.key.plan)?.1);
        }
    }
    let page = render(&store.path, &series, &changes, &urls);
    std::fs::create_dir_all(out).with_context(|| format!("making `{}`", out.display()))?;
    let file = out.join("index.html");
    crate::results::write_atomic(&file, page.as_bytes())
        .with_context(|| format!("writing `{}`", file.display()))?;
    let badge = out.join("badge.svg");
    let svg = super::badge::svg(&super::badge::latest(&series, &changes));
    crate::results::write_atomic(&badge, svg.as_bytes())
        .with_context(|| format!("writing `{}`", badge.display()))?;
    Ok(file)
}

/// Status colours, as the page's legend shows them.
fn colour(s: Status) -> &'static str {
    match s {
        Status::Confirmed => "#d62728",
        Status::Candidate => "#ff7f0e",
        Status::Pending => "#999999",
        Status::Inconclusive => "#9467bd",
        Status::Rejected => "#2ca02c",
    }
}

/// Where a status's steps are listed: confirmed first, the rejected last.
fn rank(s: Status) -> u8 {
    match s {
        Status::Confirmed => 0,
        Status::Candidate => 1,
        Status::Inconclusive => 2,
        Status::Pending => 3,
        Status::Rejected => 4,
    }
}

/// A commit id, short, linked to its page when the plan's `[history] commit_url` gives a
/// safe one ([`super::commit_link`]).
fn commit(id: &str, url: Option<&String>) -> String {
    let short = esc(crate::units::prefix(id, 10));
    match url.and_then(|u| super::commit_link(u, id)) {
        Some(link) => format!("<a href=\"{}\"><code>{short}</code></a>", esc(&link)),
        None => format!("<code>{short}</code>"),
    }
}

fn render(
    path: &Path,
    series: &[Series],
    changes: &[Change],
    urls: &BTreeMap<String, Option<String>>,
) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>bakeoff history</title>\n<style>\
         body{{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:1100px;color:#222}}\
         table{{border-collapse:collapse;margin:.5em 0 1.5em}}td,th{{border:1px solid #ccc;padding:3px 8px;text-align:left}}\
         th{{background:#f4f4f4}}svg{{background:#fff;border:1px solid #ddd}}.env{{color:#666;font-size:12px}}\
         .confirmed{{color:#d62728;font-weight:600}}.rejected{{color:#2ca02c}}.inconclusive{{color:#9467bd}}\
         .candidate{{color:#ff7f0e}}.pending{{color:#999}}\
         </style></head><body>\n<h1>bakeoff history</h1>\n<p class=\"env\">{} · {} · written {}</p>\n",
        esc(&path.display().to_string()),
        crate::units::count(series.len() as u64, "series"),
        esc(&crate::results::now_utc())
    );
    steps_table(&mut out, changes, urls);
    // The series a step is read in first: ratios to a reference, then the contenders'
    // absolute figures, the reference's own last.
    let references: std::collections::BTreeSet<&str> = series
        .iter()
        .filter_map(|s| s.key.against.as_deref())
        .collect();
    let mut ordered: Vec<&Series> = series.iter().collect();
    ordered.sort_by_key(|s| {
        let reference = references.contains(s.key.contender.as_str());
        (s.key.against.is_none(), reference)
    });
    for s in ordered {
        let url = urls.get(&s.key.plan).and_then(Option::as_ref);
        let mine: Vec<&Change> = changes.iter().filter(|c| c.found.key == s.key).collect();
        let _ = write!(
            out,
            "<h2 id=\"s-{}\">{}</h2>\n<p class=\"env\">series <code>{}</code> · {}</p>\n",
            s.key.id(),
            esc(&s.key.words()),
            s.key.id(),
            esc(&s.env_words)
        );
        out.push_str(&chart(s, &mine));
        points_table(&mut out, s, url);
    }
    out.push_str("</body></html>\n");
    out
}

/// Every step, confirmed first.
fn steps_table(out: &mut String, changes: &[Change], urls: &BTreeMap<String, Option<String>>) {
    out.push_str("<h2>Steps</h2>\n");
    if changes.is_empty() {
        out.push_str(
            "<p>None found yet: <code>bakeoff history detect</code> looks for them.</p>\n",
        );
        return;
    }
    let mut sorted: Vec<&Change> = changes.iter().collect();
    sorted.sort_by_key(|c| (rank(c.found.status), c.id));
    out.push_str("<table><tr><th>step</th><th>status</th><th>series</th><th>last good</th><th>first bad</th><th>size (95 %)</th><th>measured again</th></tr>\n");
    for c in sorted {
        let f = &c.found;
        let url = urls.get(&f.key.plan).and_then(Option::as_ref);
        let r = crate::stats::notation::fmt_ratio;
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td class=\"{}\">{}</td><td><a href=\"#s-{}\">{}</a></td><td>{}</td><td>{}</td><td>{} ({}–{})</td><td>{}</td></tr>",
            c.id,
            f.status.word(),
            f.status.word(),
            f.key.id(),
            esc(&f.key.words()),
            commit(&f.last_good, url),
            commit(&f.first_bad, url),
            r(f.ratio),
            r(f.lo),
            r(f.hi),
            esc(c.verdict.as_deref().unwrap_or("–"))
        );
    }
    out.push_str("</table>\n");
}

/// Where a chart puts a commit's index and a value.
struct Scale {
    n: usize,
    top_value: f64,
    /// The axis' lowest value: 0 for a figure, near the data for a ratio series.
    bottom_value: f64,
}

impl Scale {
    const W: f64 = 1000.0;
    const H: f64 = 260.0;
    const LEFT: f64 = 70.0;
    const RIGHT: f64 = 20.0;
    const TOP: f64 = 20.0;
    const BOTTOM: f64 = 40.0;

    fn x(&self, i: f64) -> f64 {
        Self::LEFT + (Self::W - Self::LEFT - Self::RIGHT) * (i + 0.5) / self.n as f64
    }

    fn y(&self, v: f64) -> f64 {
        let span = (self.top_value - self.bottom_value).max(f64::MIN_POSITIVE);
        Self::TOP + (Self::H - Self::TOP - Self::BOTTOM) * (1.0 - (v - self.bottom_value) / span)
    }
}

/// A ratio axis over `lo`..`hi`, padded: its ticks at a round step (at most about five), its
/// bottom and top.
fn ratio_axis(lo: f64, hi: f64) -> (Vec<f64>, f64, f64) {
    let pad = ((hi - lo) * 0.1).max(0.01);
    let (lo, hi) = (lo - pad, hi + pad);
    let step = [0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0]
        .into_iter()
        .find(|st| (hi - lo) / st <= 5.0)
        .unwrap_or(10.0);
    let bottom = (lo / step).floor() * step;
    let top = (hi / step).ceil() * step;
    let ticks = (0..)
        .map(|k| bottom + step * f64::from(k))
        .take_while(|t| *t <= top + step / 2.0)
        .filter(|t| *t > 0.0)
        .collect();
    (ticks, bottom.max(0.0), top)
}

/// The figure over the series' commits: each point with its interval, each step a dashed
/// line between its last good and first bad commits in its status's colour.
fn chart(s: &Series, steps: &[&Change]) -> String {
    let max = s
        .points
        .iter()
        .map(|p| p.hi.unwrap_or(p.value).max(p.value))
        .fold(0.0, f64::max);
    let (ticks, sc) = match s.key.against.is_some() {
        // A ratio series moves by percents around 1: its axis spans its intervals, or a
        // 4 % step would be a pixel's rise on an axis from 0.
        true => {
            let min = s
                .points
                .iter()
                .map(|p| p.lo.unwrap_or(p.value).min(p.value))
                .fold(f64::INFINITY, f64::min);
            let (ticks, bottom, top) = ratio_axis(min.min(1.0), max.max(1.0));
            let sc = Scale {
                n: s.points.len().max(1),
                top_value: top,
                bottom_value: bottom,
            };
            (ticks, sc)
        }
        false => {
            let ticks = y_ticks(max);
            let sc = Scale {
                n: s.points.len().max(1),
                top_value: ticks
                    .last()
                    .copied()
                    .unwrap_or(1.0)
                    .max(max)
                    .max(f64::MIN_POSITIVE),
                bottom_value: 0.0,
            };
            (ticks, sc)
        }
    };
    let (w, h, left, right) = (Scale::W, Scale::H, Scale::LEFT, Scale::RIGHT);
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" role=\"img\" aria-label=\"{}\">",
        esc(&s.key.words())
    );
    for t in &ticks {
        let _ = write!(
            svg,
            "<line x1=\"{left}\" x2=\"{}\" y1=\"{y:.1}\" y2=\"{y:.1}\" stroke=\"#eee\"/><text x=\"{}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"end\">{}</text>",
            w - right,
            left - 6.0,
            sc.y(*t) + 4.0,
            esc(&tick(s, *t)),
            y = sc.y(*t)
        );
    }
    step_marks(&mut svg, s, steps, &sc);
    reference_marks(&mut svg, s, &sc);
    point_marks(&mut svg, s, steps, &sc);
    let b = h - Scale::BOTTOM;
    let _ = writeln!(
        svg,
        "<line x1=\"{left}\" x2=\"{}\" y1=\"{b}\" y2=\"{b}\" stroke=\"#888\"/></svg>",
        w - right
    );
    svg
}

/// Each step: a dashed line between its two commits, its status's colour, a hover title.
fn step_marks(svg: &mut String, s: &Series, steps: &[&Change], sc: &Scale) {
    for st in steps {
        let Some(at) = s
            .points
            .iter()
            .position(|p| p.commit.as_deref() == Some(st.found.first_bad.as_str()))
        else {
            continue;
        };
        let sx = (sc.x(at as f64 - 1.0) + sc.x(at as f64)) / 2.0;
        let _ = write!(
            svg,
            "<line class=\"step {status}\" x1=\"{sx:.1}\" x2=\"{sx:.1}\" y1=\"{}\" y2=\"{:.1}\" stroke=\"{}\" stroke-width=\"2\" stroke-dasharray=\"6 3\"><title>step {}: {status}, {}</title></line>",
            Scale::TOP,
            Scale::H - Scale::BOTTOM,
            colour(st.found.status),
            st.id,
            crate::stats::notation::fmt_ratio(st.found.ratio),
            status = st.found.status.word()
        );
    }
}

/// A y-axis tick's label, short enough for the axis's margin: thousands of requests a second
/// as `100k req/s` (`100000 req/s` was clipped to `00000 req/s`).
fn tick(s: &Series, v: f64) -> String {
    match (s.key.against.is_none(), s.key.figure.as_str()) {
        (true, "throughput") if v >= 10_000.0 => format!("{}k req/s", v / 1000.0),
        _ => s.key.value(v),
    }
}

/// In a ratio series, a dotted grey line where the reference moved: the ratios on either
/// side are to different builds, and no step is found across it.
fn reference_marks(svg: &mut String, s: &Series, sc: &Scale) {
    for (i, w) in s.points.windows(2).enumerate() {
        if s.key.against.is_none() || w[0].reference == w[1].reference {
            continue;
        }
        let sx = (sc.x(i as f64) + sc.x(i as f64 + 1.0)) / 2.0;
        let to = w[1].reference.as_deref().unwrap_or("–");
        let _ = write!(
            svg,
            "<line class=\"moved\" x1=\"{sx:.1}\" x2=\"{sx:.1}\" y1=\"{}\" y2=\"{:.1}\" stroke=\"#999\" stroke-dasharray=\"2 3\"><title>the reference moved to {}</title></line>",
            Scale::TOP,
            Scale::H - Scale::BOTTOM,
            esc(crate::units::prefix(to, 10))
        );
    }
}

/// Each point with its interval, and a few commit ids under the axis: the last, and about
/// eight before it.
fn point_marks(svg: &mut String, s: &Series, steps: &[&Change], sc: &Scale) {
    let n = s.points.len();
    let every = n.div_ceil(8).max(1);
    // The two commits on either side of each step are always named under the axis.
    let around: Vec<usize> = steps
        .iter()
        .filter_map(|st| {
            s.points
                .iter()
                .position(|p| p.commit.as_deref() == Some(st.found.first_bad.as_str()))
        })
        .flat_map(|i| [i.saturating_sub(1), i])
        .collect();
    for (i, p) in s.points.iter().enumerate() {
        let px = sc.x(i as f64);
        if let (Some(lo), Some(hi)) = (p.lo, p.hi) {
            let _ = write!(
                svg,
                "<line x1=\"{px:.1}\" x2=\"{px:.1}\" y1=\"{:.1}\" y2=\"{:.1}\" stroke=\"#1f77b4\" stroke-opacity=\".5\"/>",
                sc.y(lo.max(0.0)),
                sc.y(hi)
            );
        }
        let label = p
            .commit
            .as_deref()
            .map_or("–", |c| crate::units::prefix(c, 10));
        let _ = write!(
            svg,
            "<circle class=\"point\" cx=\"{px:.1}\" cy=\"{:.1}\" r=\"3\" fill=\"#1f77b4\"><title>{} {}</title></circle>",
            sc.y(p.value),
            esc(label),
            esc(&s.key.value(p.value))
        );
        // The last id and those around a step always; another only where it does not run
        // into the last.
        if i + 1 == n || around.contains(&i) || (i % every == 0 && n - 1 - i >= every.div_ceil(2)) {
            let _ = write!(
                svg,
                "<text x=\"{px:.1}\" y=\"{}\" font-size=\"10\" text-anchor=\"middle\" font-family=\"monospace\">{}</text>",
                Scale::H - Scale::BOTTOM + 14.0,
                esc(crate::units::prefix(label, 7))
            );
        }
    }
}

/// The series' points, folded away under the chart.
fn points_table(out: &mut String, s: &Series, url: Option<&String>) {
    let _ = writeln!(
        out,
        "<details><summary>{}</summary><table><tr><th>commit</th><th>subject</th><th>value</th><th>interval</th><th>runs</th></tr>",
        crate::units::count(s.points.len() as u64, "commit")
    );
    for p in &s.points {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            p.commit.as_deref().map_or("–".into(), |c| commit(c, url)),
            esc(p.subject.as_deref().unwrap_or("")),
            esc(&s.key.value(p.value)),
            match (p.lo, p.hi) {
                (Some(lo), Some(hi)) => esc(&format!("{}–{}", s.key.value(lo), s.key.value(hi))),
                _ => String::new(),
            },
            p.runs
        );
    }
    out.push_str("</table></details>\n");
}

#[cfg(test)]
mod tests {
    /// A ratio series' axis spans its data (a 4 % step is a quarter of the chart, not a
    /// pixel over an axis from 0), with 1× on it and a handful of round ticks.
    #[test]
    fn a_ratio_axis_spans_its_data() {
        let (ticks, bottom, top) = super::ratio_axis(0.985, 1.085);
        assert!(bottom < 0.985 && bottom > 0.9, "{bottom}");
        assert!(top > 1.085 && top < 1.2, "{top}");
        assert!(ticks.len() >= 3 && ticks.len() <= 7, "{ticks:?}");
        assert!(ticks.iter().any(|t| (t - 1.0).abs() < 1e-9), "{ticks:?}");
        let (wide, _, _) = super::ratio_axis(0.5, 3.0);
        assert!(wide.len() <= 7, "{wide:?}");
    }

    use super::commit;

    /// Issue 68: only `http:` and `https:` links are written, after `{commit}` is filled in.
    #[test]
    fn only_http_links_are_written() {
        let id = "0123456789abcdef";
        for bad in [
            "javascript:alert(1)//{commit}",
            "JavaScript:alert(1)//{commit}",
            "data:text/html,<script>x</script>{commit}",
            " https://example.com/{commit}",
            "HTTPS://example.com/{commit}",
            "https://example.com/{commit}\u{7}",
            "{commit}",
        ] {
            let html = commit(id, Some(&bad.to_string()));
            assert!(!html.contains("href"), "{bad:?} became {html}");
            assert!(html.contains("<code>0123456789</code>"), "{html}");
        }
        // A commit id that is itself a URL, filled into a template that is only `{commit}`.
        let html = commit("javascript:alert(1)", Some(&"{commit}".to_string()));
        assert!(!html.contains("href"), "{html}");
        let ok = commit(id, Some(&"https://example.com/c/{commit}".to_string()));
        assert!(
            ok.contains("href=\"https://example.com/c/0123456789abcdef\""),
            "{ok}"
        );
        // Shortened by characters, never inside one.
        assert!(commit("abcdefghiéjk", None).contains("abcdefghié"));
    }

    /// Issue 71: an axis label fits its margin (`100000 req/s` was clipped).
    #[test]
    fn throughput_ticks_are_short() {
        let series = crate::history::Series {
            key: crate::history::SeriesKey {
                plan: "p".into(),
                contender: "a".into(),
                point: "get".into(),
                figure: "throughput".into(),
                env: "e".into(),
                against: None,
            },
            env_words: String::new(),
            points: Vec::new(),
        };
        assert_eq!(super::tick(&series, 100_000.0), "100k req/s");
        assert_eq!(super::tick(&series, 12_500.0), "12.5k req/s");
        assert_eq!(super::tick(&series, 5_000.0), "5000 req/s");
    }
}
