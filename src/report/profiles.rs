//! Where each contender's time goes, for profiled scenarios (docs/profiles.md): a table of
//! the functions with the most self time (from results alone), and flame graphs drawn with
//! `inferno` from the folded stacks kept beside the results — on-CPU per contender and
//! point, a differential one against the baseline (red grew, blue shrank), and off-CPU.

use std::collections::BTreeMap;
use std::path::Path;

use super::table::{Cell, Table, Unit};
use crate::results::{PointId, ProfileRun, Results};

/// One flame graph: the file it is written to under `report/`, and its SVG.
pub struct Flame {
    pub scenario: String,
    pub file: String,
    pub title: String,
    pub svg: String,
}

/// (contender, point, its profiles over the repetitions) for every profiled point.
fn profiled<'a>(
    r: &'a Results,
    scenario: &str,
) -> Vec<(&'a str, &'a PointId, Vec<&'a ProfileRun>)> {
    let mut out = Vec::new();
    let Some(info) = r
        .scenarios
        .iter()
        .find(|s| s.name == scenario && s.profiled)
    else {
        return out;
    };
    for id in &info.points {
        for c in r.compared() {
            let runs: Vec<&ProfileRun> = r
                .point_runs(&c.name, id)
                .filter_map(|p| p.profile.as_ref())
                .collect();
            if !runs.is_empty() {
                out.push((c.name.as_str(), id, runs));
            }
        }
    }
    out
}

/// The table of a profiled scenario: per point and contender, the samples, the time off the
/// CPU and the functions with the most self time.
pub fn table(r: &Results, scenario: &str) -> Option<Table> {
    let rows_of = profiled(r, scenario);
    if rows_of.is_empty() {
        return None;
    }
    let head = ["point", "contender", "samples", "off-CPU", "most self time"]
        .map(String::from)
        .to_vec();
    let mut rows = Vec::new();
    for (c, id, runs) in rows_of {
        let samples: u64 = runs.iter().map(|p| p.samples).sum();
        let off: f64 = runs.iter().map(|p| p.off_cpu_ms).sum();
        let mut top: BTreeMap<&str, u64> = BTreeMap::new();
        for p in &runs {
            for (f, n) in &p.top {
                *top.entry(f.as_str()).or_default() += n;
            }
        }
        let mut top: Vec<(&str, u64)> = top.into_iter().collect();
        top.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        let share = |n: u64| 100.0 * n as f64 / samples.max(1) as f64;
        let errors: Vec<&str> = runs.iter().filter_map(|p| p.error.as_deref()).collect();
        let mut stripped: Vec<&str> = runs
            .iter()
            .flat_map(|p| p.stripped.iter().map(String::as_str))
            .collect();
        stripped.sort_unstable();
        stripped.dedup();
        let mut text = top
            .iter()
            .take(5)
            .map(|(f, n)| format!("`{}` {:.0}%", short(f), share(*n)))
            .collect::<Vec<_>>()
            .join(", ");
        if !stripped.is_empty() {
            text.push_str(&format!(
                " (no symbols in {}: stripped?)",
                stripped.join(", ")
            ));
        }
        if let Some(e) = errors.first() {
            text = if text.is_empty() {
                format!("not recorded: {e}")
            } else {
                format!("{text} ({e})")
            };
        }
        rows.push(vec![
            Cell::text("point", id.to_string()),
            Cell::text("contender", c),
            Cell::count("samples", samples),
            Cell::value("off_cpu", Unit::Seconds, Some(off / 1e3)),
            // One value per cell (CSV): `function samples` pairs, `;`-separated.
            Cell::with(
                text,
                vec![
                    (
                        "top_self".into(),
                        top.iter()
                            .take(15)
                            .map(|(f, n)| format!("{f} {n}"))
                            .collect::<Vec<_>>()
                            .join("; ")
                            .into(),
                    ),
                    ("stripped".into(), stripped.join(" ").into()),
                    ("errors".into(), errors.join("; ").into()),
                ],
            ),
        ]);
    }
    let hz = r
        .runs
        .iter()
        .flat_map(|x| &x.points)
        .find_map(|p| p.profile.as_ref().map(|p| p.frequency_hz))
        .unwrap_or(0);
    Some(Table {
        id: format!("profile-{}", crate::results::slug(scenario)),
        title: format!(
            "Where the time goes: {scenario} (profiled with perf, cpu-clock at {hz} Hz, DWARF stacks; these points' figures carry the profiler's cost)"
        ),
        head,
        rows,
    })
}

/// A function's name without its generic arguments' paths, short enough for a table cell.
fn short(f: &str) -> String {
    let s: String = f.chars().take(80).collect();
    if s.len() < f.len() {
        format!("{s}…")
    } else {
        s
    }
}

/// The most folded-stack text read for one profile (perf's folded output of a point is a few
/// MB; a larger file is not one bakeoff wrote).
const FOLDED_LIMIT: u64 = 256 << 20;

/// Every flame graph of the profiled scenarios, drawn from the folded stacks under `dir`
/// (files named by the results are read only inside `dir`).
pub fn flames(dir: &Path, r: &Results) -> Vec<Flame> {
    let mut out = Vec::new();
    for s in r.scenarios.iter().filter(|s| s.profiled) {
        let all = profiled(r, &s.name);
        let stacks = |runs: &[&ProfileRun], off: bool| -> BTreeMap<String, u64> {
            let mut m = BTreeMap::new();
            for p in runs {
                let file = if off { &p.off_cpu } else { &p.on_cpu };
                let Some(text) = file
                    .as_ref()
                    .and_then(|f: &String| crate::results::inside(dir, f))
                    .and_then(|f| crate::sys::read_bounded(&f, FOLDED_LIMIT).ok())
                else {
                    continue;
                };
                for line in text.lines() {
                    if let Some((stack, n)) = line.rsplit_once(' ') {
                        *m.entry(stack.to_string()).or_default() += n.parse::<u64>().unwrap_or(0);
                    }
                }
            }
            m
        };
        // Each on-CPU profile read once: a baseline's is drawn and compared with others.
        let on_cpu: Vec<BTreeMap<String, u64>> =
            all.iter().map(|(_, _, runs)| stacks(runs, false)).collect();
        for ((c, id, runs), on) in all.iter().zip(&on_cpu) {
            let stem = format!(
                "{}.{}",
                crate::results::slug(c),
                crate::results::slug(&id.to_string())
            );
            let samples: u64 = on.values().sum();
            if let Some(svg) = draw(on, &format!("{c} · {id}: on-CPU"), "samples", "rust") {
                out.push(Flame {
                    scenario: s.name.clone(),
                    file: format!("flame-{stem}.svg"),
                    title: format!("{c} at {id}: on the CPU ({samples} samples)"),
                    svg,
                });
            }
            let base = r
                .contenders
                .iter()
                .find(|x| x.name == *c)
                .and_then(|x| x.baseline.as_deref())
                .filter(|b| b != c);
            let before = base.and_then(|b| {
                let at = all.iter().position(|(x, i, _)| *x == b && *i == *id)?;
                Some((b, &on_cpu[at]))
            });
            if let Some((b, before)) = before {
                if let Some(svg) = differential(before, on, &format!("{c} against {b} · {id}")) {
                    out.push(Flame {
                        scenario: s.name.clone(),
                        file: format!("flame-diff-{stem}.svg"),
                        title: format!("{c} against {b} at {id}: red grew, blue shrank (normalized to the same total)"),
                        svg,
                    });
                }
            }
            let off = stacks(runs, true);
            let ms = off.values().sum::<u64>() as f64 / 1e3;
            if let Some(svg) = draw(&off, &format!("{c} · {id}: off-CPU (µs)"), "µs", "io") {
                out.push(Flame {
                    scenario: s.name.clone(),
                    file: format!("offcpu-{stem}.svg"),
                    title: format!("{c} at {id}: off the CPU, where its threads waited ({ms:.0} ms over all threads)"),
                    svg,
                });
            }
        }
    }
    out
}

fn options(title: &str, count: &str, palette: &str) -> inferno::flamegraph::Options<'static> {
    use std::str::FromStr as _;
    let mut o = inferno::flamegraph::Options::default();
    o.title = title.to_string();
    o.count_name = count.to_string();
    // A report is one self-contained page without scripts.
    o.no_javascript = true;
    o.deterministic = true;
    o.hash = true;
    o.image_width = Some(1100);
    if let Ok(p) = inferno::flamegraph::color::Palette::from_str(palette) {
        o.colors = p;
    }
    o
}

fn draw(stacks: &BTreeMap<String, u64>, title: &str, count: &str, palette: &str) -> Option<String> {
    if stacks.values().all(|n| *n == 0) {
        return None;
    }
    let lines: Vec<String> = stacks
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(s, n)| format!("{s} {n}"))
        .collect();
    let mut svg = Vec::new();
    let mut o = options(title, count, palette);
    inferno::flamegraph::from_lines(&mut o, lines.iter().map(String::as_str), &mut svg).ok()?;
    String::from_utf8(svg).ok().map(|s| without_script(&s))
}

/// inferno writes a `<script>` of settings and an `onload` handler even without its
/// JavaScript; a report page has no script, so both go (the graph is static SVG).
fn without_script(svg: &str) -> String {
    let mut s = svg.replace(" onload=\"init(evt)\"", "");
    while let (Some(a), Some(b)) = (s.find("<script"), s.find("</script>")) {
        if b < a {
            break;
        }
        s.replace_range(a..b + "</script>".len(), "");
    }
    s
}

fn differential(
    before: &BTreeMap<String, u64>,
    after: &BTreeMap<String, u64>,
    title: &str,
) -> Option<String> {
    if before.is_empty() || after.is_empty() {
        return None;
    }
    let text = |m: &BTreeMap<String, u64>| crate::contender::profile::Profile::folded(m);
    let (b, a) = (text(before), text(after));
    let mut diff = Vec::new();
    let opt = inferno::differential::Options {
        normalize: true,
        ..Default::default()
    };
    inferno::differential::from_readers(opt, b.as_bytes(), a.as_bytes(), &mut diff).ok()?;
    let diff = String::from_utf8(diff).ok()?;
    let mut svg = Vec::new();
    let mut o = options(title, "samples", "hot");
    inferno::flamegraph::from_lines(&mut o, diff.lines(), &mut svg).ok()?;
    String::from_utf8(svg).ok().map(|s| without_script(&s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flame_graphs_are_drawn_without_scripts() {
        let mut m = BTreeMap::new();
        m.insert("server;main;serve;parse".to_string(), 30u64);
        m.insert("server;main;serve;write".to_string(), 10u64);
        let svg = draw(&m, "t", "samples", "rust").unwrap();
        assert!(svg.contains("<svg") && svg.contains("serve"), "{svg}");
        assert!(
            !svg.contains("<script") && !svg.contains("onload"),
            "no script in a report"
        );
        let mut after = m.clone();
        after.insert("server;main;serve;parse".to_string(), 60);
        let d = differential(&m, &after, "diff").unwrap();
        assert!(d.contains("<svg") && d.contains("parse"));
        assert!(draw(&BTreeMap::new(), "t", "samples", "rust").is_none());
    }
}
