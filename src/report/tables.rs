//! The report's tables and summary lines, computed from `Results` once for every exporter
//! (through [`super::analysis::Analysis`]): start-up per contender, and per scenario a table
//! in the style of seed 003 — `QPS (delta vs baseline)` and `p90 (delta)` per point — with
//! medians over the repetitions.

use super::table::{Data, Row, Table};
use super::{fmt_bytes, fmt_rate, fmt_us};
use crate::compat::CompatReport;
use crate::diagnose::Finding;
use crate::results::{PointId, Results, Run};
use crate::stats::Sample;

/// The answer first: same answers?, start-up, serving, findings — one line each.
pub(super) fn summary(
    r: &Results,
    compat: &[CompatReport],
    found: &[Finding],
    paired: &[super::verdicts::PointVerdicts],
) -> Vec<String> {
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
    out.extend(super::paired::summary(paired));
    for c in r.compared().filter(|_| paired.is_empty()) {
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
    out.extend(super::capacity::summary(r));
    if !found.is_empty() {
        out.push(format!(
            "**Findings:** {} (details below); first: {}",
            found.len(),
            found[0]
        ));
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

/// Median with the range, e.g. `1.23 ms (1.20–1.31)`; the range only when there are several.
fn med(values: &[f64], fmt: &dyn Fn(f64) -> String) -> String {
    match Sample::new(values.to_vec()) {
        Ok(s) if s.len() > 1 => format!("{} ({}–{})", fmt(s.median()), fmt(s.min()), fmt(s.max())),
        Ok(s) => fmt(s.median()),
        Err(_) => "—".into(),
    }
}

fn median(values: &[f64]) -> Option<f64> {
    Sample::new(values.to_vec()).ok().map(|s| s.median())
}

pub(super) fn startup(r: &Results) -> Table {
    let mut rows = Vec::new();
    let mut data = Data::default();
    for c in &r.contenders {
        let runs: Vec<&Run> = r.runs.iter().filter(|x| x.id.is(&c.name)).collect();
        let started: Vec<_> = runs.iter().filter_map(|x| x.startup.as_ref()).collect();
        let pick = |f: &dyn Fn(&Run) -> Option<f64>| -> Vec<f64> {
            runs.iter().filter_map(|x| f(x)).collect()
        };
        let of = |f: &dyn Fn(&crate::results::Startup) -> Option<f64>| -> Vec<f64> {
            started.iter().filter_map(|s| f(s)).collect()
        };
        data.row()
            .cell("contender", c.name.as_str())
            .cell("started", started.len())
            .cell("runs", runs.len())
            .stats("first_response", "s", &of(&|s| Some(s.first_response_s)))
            .stats("ready", "s", &of(&|s| Some(s.ready_s)))
            .stats("startup_cpu", "s", &of(&|s| s.cpu_s))
            .stats(
                "repetition_cpu",
                "s",
                &pick(&|x| x.usage.map(|u| u.cpu_user_s + u.cpu_system_s)),
            )
            .stats(
                "peak_rss",
                "bytes",
                &pick(&|x| x.usage.map(|u| u.peak_rss_bytes as f64)),
            )
            .stats(
                "disk_after_start",
                "bytes",
                &of(&|s| Some(s.disk_after_start_bytes as f64)),
            )
            .stats(
                "disk_at_end",
                "bytes",
                &pick(&|x| x.disk_end_bytes.map(|d| d as f64)),
            );
        let secs = |s: f64| fmt_us(s * 1e6);
        let bytes = |b: f64| fmt_bytes(b);
        rows.push(vec![
            c.name.clone(),
            format!("{}/{}", started.len(), runs.len()),
            med(
                &started
                    .iter()
                    .map(|s| s.first_response_s)
                    .collect::<Vec<_>>(),
                &secs,
            ),
            med(
                &started.iter().map(|s| s.ready_s).collect::<Vec<_>>(),
                &secs,
            ),
            med(
                &started.iter().filter_map(|s| s.cpu_s).collect::<Vec<_>>(),
                &secs,
            ),
            med(
                &pick(&|x| x.usage.map(|u| u.cpu_user_s + u.cpu_system_s)),
                &secs,
            ),
            med(&pick(&|x| x.usage.map(|u| u.peak_rss_bytes as f64)), &bytes),
            med(
                &started
                    .iter()
                    .map(|s| s.disk_after_start_bytes as f64)
                    .collect::<Vec<_>>(),
                &bytes,
            ),
            med(&pick(&|x| x.disk_end_bytes.map(|d| d as f64)), &bytes),
        ]);
    }
    Table {
        id: "startup".into(),
        title: match r
            .runs
            .iter()
            .filter_map(|x| x.startup.as_ref()?.first_response_resolution_s)
            .reduce(f64::max)
        {
            // The probes' pauses bound how precisely a first response is timed.
            Some(res) => format!(
                "Start-up (median of the repetitions, min–max; first responses timed to within {})",
                fmt_us(res * 1e6)
            ),
            None => "Start-up (median of the repetitions, min–max)".into(),
        },
        head: [
            "contender",
            "started",
            "first response",
            "ready",
            "start-up CPU",
            "repetition CPU",
            "peak RSS",
            "disk after start",
            "disk at end",
        ]
        .map(String::from)
        .to_vec(),
        rows,
        data: Some(data),
    }
}

/// Each member of a cluster: when it was started (a member with `after` waits for others)
/// and its own first response; none when no contender has several members.
pub(super) fn members(r: &Results) -> Option<Table> {
    let mut rows = Vec::new();
    let mut data = Data::default();
    for c in &r.contenders {
        let runs: Vec<&Run> = r.runs.iter().filter(|x| x.id.is(&c.name)).collect();
        for m in &c.members {
            let of = |f: &dyn Fn(&crate::results::MemberStartup) -> f64| -> Vec<f64> {
                runs.iter()
                    .filter_map(|x| x.startup.as_ref())
                    .flat_map(|s| &s.members)
                    .filter(|x| x.member == m.name)
                    .map(f)
                    .collect()
            };
            let first = of(&|x| x.first_response_s);
            if first.is_empty() {
                continue;
            }
            let secs = |s: f64| fmt_us(s * 1e6);
            data.row()
                .cell("contender", c.name.as_str())
                .cell("member", m.name.as_str())
                .stats("started", "s", &of(&|x| x.started_s))
                .stats("first_response", "s", &first);
            rows.push(vec![
                c.name.clone(),
                m.name.clone(),
                format!("+{}", med(&of(&|x| x.started_s), &secs)),
                med(&first, &secs),
            ]);
        }
    }
    (!rows.is_empty()).then(|| Table {
        id: "members".into(),
        title: "Members (median of the repetitions, min–max): started after the first member, first response after its own start".into(),
        head: ["contender", "member", "started", "first response"]
            .map(String::from)
            .to_vec(),
        rows,
        data: Some(data),
    })
}

pub(super) fn scenario(r: &Results, name: &str, call: &str) -> Option<Table> {
    let info = r.scenarios.iter().find(|s| s.name == name)?;
    let mut rows = Vec::new();
    let mut data = Data::default();
    let axes = Axes::of(info);
    let mut head = axes.head();
    head.extend(
        [
            "contender",
            "req/s (delta)",
            "req/s min–max",
            "p90 (delta)",
            "verdict",
            "failed",
            "p50",
            "p99",
            "items/s",
        ]
        .map(String::from),
    );
    for id in &info.points {
        for c in &r.contenders {
            let pts: Vec<_> = r.point_runs(&c.name, id).collect();
            if pts.is_empty() {
                continue;
            }
            let loads: Vec<_> = pts.iter().filter_map(|p| p.load.as_ref()).collect();
            let qps = median(&loads.iter().map(|l| l.requests_per_s).collect::<Vec<_>>());
            let p90 = median(
                &loads
                    .iter()
                    .map(|l| l.latency_us.p90 as f64)
                    .collect::<Vec<_>>(),
            );
            // A baseline that failed most calls here gives nothing to compare with.
            let base = c.baseline.as_deref().filter(|b| *b != c.name).filter(|b| {
                !r.point_runs(b, id)
                    .any(|p| p.load.as_ref().is_some_and(|l| l.mostly_failed()))
            });
            let base_of = |f: &dyn Fn(&crate::load::LoadResult) -> f64| -> Option<f64> {
                let b = base?;
                let v: Vec<f64> = r
                    .point_runs(b, id)
                    .filter_map(|p| p.load.as_ref().map(f))
                    .collect();
                median(&v)
            };
            let bq = base_of(&|l| l.requests_per_s);
            let verdict = base.map_or(String::new(), |b| verdict(r, id, b, &c.name));
            let bp = base_of(&|l| l.latency_us.p90 as f64);
            let failed: u64 = loads.iter().map(|l| l.failures).sum();
            let errors = pts.iter().filter(|p| p.error.is_some()).count();
            {
                let mostly = loads.iter().any(|l| l.mostly_failed());
                let of = |f: &dyn Fn(&crate::load::LoadResult) -> f64| figures(&loads, f);
                let mut d = data.row();
                axes.data(&mut d, id);
                d.cell("contender", c.name.as_str())
                    .cell("leaders", leaders(&pts).join(" "))
                    .stats("throughput", "rps", &of(&|l| l.requests_per_s))
                    .num("baseline_throughput_median_rps", bq.filter(|_| !mostly))
                    .stats("p50", "s", &of(&|l| l.latency_us.p50 as f64 / 1e6))
                    .stats("p90", "s", &of(&|l| l.latency_us.p90 as f64 / 1e6))
                    .stats("p99", "s", &of(&|l| l.latency_us.p99 as f64 / 1e6))
                    .num(
                        "baseline_p90_median_s",
                        bp.filter(|_| !mostly).map(|v| v / 1e6),
                    )
                    .cell("verdict", verdict.as_str())
                    .cell("failed", failed)
                    .cell("points_not_run", errors)
                    .stats("items", "per_s", &of(&|l| l.items_per_s));
            }
            let mut row = axes.cells(id);
            row.push(contender_cell(&c.name, &pts));
            // A point where most calls failed measured failures: no figure, no delta.
            if let Some(none) = mostly_failed_cell(&loads) {
                row.extend([
                    none.clone(),
                    "—".into(),
                    none,
                    String::new(),
                    failed.to_string(),
                ]);
                row.extend(["—".into(), "—".into(), "—".into()]);
                rows.push(row);
                continue;
            }
            row.push(with_delta(qps, bq, &|v| fmt_rate(v)));
            row.push(
                match Sample::new(loads.iter().map(|l| l.requests_per_s).collect()) {
                    Ok(s) if s.len() > 1 => format!("{}–{}", fmt_rate(s.min()), fmt_rate(s.max())),
                    _ => "—".into(),
                },
            );
            row.push(with_delta(p90, bp, &fmt_us));
            row.push(verdict);
            row.push(match (failed, errors) {
                (0, 0) => "0".into(),
                (f, 0) => f.to_string(),
                (f, e) => format!("{f} ({e} points did not run)"),
            });
            let ms = |q: &dyn Fn(&crate::load::LoadResult) -> u64| {
                median(&loads.iter().map(|l| q(l) as f64).collect::<Vec<_>>())
                    .map_or("—".into(), fmt_us)
            };
            row.push(ms(&|l| l.latency_us.p50));
            row.push(ms(&|l| l.latency_us.p99));
            row.push(
                median(&loads.iter().map(|l| l.items_per_s).collect::<Vec<_>>())
                    .map_or("—".into(), fmt_rate),
            );
            rows.push(row);
        }
    }
    Some(Table {
        id: serving_id(name),
        title: format!("{name} (`{call}`)"),
        head,
        rows,
        data: Some(data),
    })
}

/// The contender's name, with the member that led at a `target = "leader"` point (each
/// different one once, in the order the repetitions found them).
pub(super) fn contender_cell(name: &str, pts: &[&crate::results::PointRun]) -> String {
    let leaders = leaders(pts);
    if leaders.is_empty() {
        name.to_string()
    } else {
        format!("{name} (leader {})", leaders.join(", "))
    }
}

/// A figure of a point's loads, one per repetition; none when most calls failed there (its
/// figures would be of failures).
pub(super) fn figures(
    loads: &[&crate::load::LoadResult],
    f: &dyn Fn(&crate::load::LoadResult) -> f64,
) -> Vec<f64> {
    if loads.iter().any(|l| l.mostly_failed()) {
        Vec::new()
    } else {
        loads.iter().map(|l| f(l)).collect()
    }
}

/// The members that led at a `target = "leader"` point, each once, in the order found.
pub(super) fn leaders<'a>(pts: &[&'a crate::results::PointRun]) -> Vec<&'a str> {
    let mut out: Vec<&str> = Vec::new();
    for l in pts.iter().filter_map(|p| p.leader.as_deref()) {
        if !out.contains(&l) {
            out.push(l);
        }
    }
    out
}

/// The leading columns of a serving table: the point's axes (variables in plan order,
/// clients, and the target when the scenario has that axis).
pub(super) struct Axes {
    vars: Vec<String>,
    target: bool,
    rate: bool,
    stage: bool,
}

impl Axes {
    pub(super) fn of(info: &crate::results::ScenarioInfo) -> Axes {
        Axes {
            vars: info
                .points
                .first()
                .map(|p| p.vars.0.iter().map(|(k, _)| k.clone()).collect())
                .unwrap_or_default(),
            target: info.points.iter().any(|p| p.target.is_some()),
            rate: info.points.iter().any(|p| p.rate.is_some()),
            stage: info.points.iter().any(|p| p.stage.is_some()),
        }
    }

    pub(super) fn head(&self) -> Vec<String> {
        let mut head = self.vars.clone();
        if self.stage {
            head.push("stage".into());
        }
        head.push("clients".into());
        if self.target {
            head.push("target".into());
        }
        if self.rate {
            head.push("offered req/s".into());
        }
        head
    }

    /// The same columns, typed: variables as numbers where they are, clients, the target,
    /// the stage and the offered rate.
    pub(super) fn data(&self, row: &mut Row, id: &PointId) {
        for (k, v) in &id.vars.0 {
            match v.parse::<f64>() {
                Ok(x) if x.is_finite() => row.num(k, Some(x)),
                _ => row.cell(k, v.as_str()),
            };
        }
        if self.stage {
            row.cell("stage", id.stage);
        }
        row.cell("clients", id.clients);
        if self.target {
            row.cell("target", id.spread().as_str());
        }
        if self.rate {
            row.num("offered_rps", id.rate);
        }
    }

    pub(super) fn cells(&self, id: &PointId) -> Vec<String> {
        let mut row: Vec<String> = id.vars.0.iter().map(|(_, v)| v.clone()).collect();
        if self.stage {
            row.push(id.stage.map_or("—".into(), |k| k.to_string()));
        }
        row.push(id.clients.to_string());
        if self.target {
            row.push(id.spread().as_str().into());
        }
        if self.rate {
            row.push(id.rate.map_or("—".into(), |r| format!("{r}")));
        }
        row
    }
}

/// `— (N% of calls failed)`, the cell that stands for a figure when most calls of a point
/// failed (its figures are of failures); `None` otherwise.
pub(super) fn mostly_failed_cell(loads: &[&crate::load::LoadResult]) -> Option<String> {
    if !loads.iter().any(|l| l.mostly_failed()) {
        return None;
    }
    let failed: u64 = loads.iter().map(|l| l.failures).sum();
    let requests: u64 = loads.iter().map(|l| l.requests).sum();
    let share = failed as f64 * 100.0 / requests.max(1) as f64;
    Some(format!("— ({share:.0}% of calls failed)"))
}

/// The id (and CSV file name) of a scenario's serving table.
pub(super) fn serving_id(scenario: &str) -> String {
    format!("serving-{}", crate::results::slug(scenario).to_lowercase())
}

/// Whether throughput differs for real between a contender and its baseline at one point:
/// Mann-Whitney U over the repetitions (see `stats`).
fn verdict(r: &Results, point: &PointId, base: &str, name: &str) -> String {
    use crate::stats::{compare, min_two_sided_p, Direction, Thresholds, Verdict};
    let rates = |c: &str| Sample::new(r.rates(c, point)).ok();
    let (Some(b), Some(c)) = (rates(base), rates(name)) else {
        return String::new();
    };
    let t = Thresholds::default();
    match compare(&b, &c, Direction::HigherIsBetter, t).verdict {
        Verdict::Better => "faster".into(),
        Verdict::Worse => "slower".into(),
        Verdict::WithinNoise => "within noise".into(),
        Verdict::NoChange => "~".into(),
        Verdict::Underpowered => {
            let needs = (2..64)
                .find(|&n| min_two_sided_p(n, n) <= t.alpha)
                .unwrap_or(64);
            format!(
                "too few runs ({}+{}, needs {needs}+{needs})",
                b.len(),
                c.len()
            )
        }
    }
}

/// `2804 (-5%)`, or the bare value for the baseline itself. A change of 2× or more reads as
/// a factor, `37907 (×1654)` or `38 µs (÷1260)`, never `+165254%` or `-100%`.
pub fn with_delta(v: Option<f64>, base: Option<f64>, fmt: &dyn Fn(f64) -> String) -> String {
    match (v, base) {
        (None, _) => "—".into(),
        (Some(v), Some(b)) if b > 0.0 && v > 0.0 && (v / b >= 2.0 || v / b <= 0.5) => {
            let f = super::verdicts::fmt_ratio(v / b);
            format!(
                "{} ({})",
                fmt(v),
                if f.starts_with('÷') {
                    f
                } else {
                    format!("×{}", f.trim_end_matches('×'))
                }
            )
        }
        (Some(v), Some(b)) if b > 0.0 => {
            format!("{} ({})", fmt(v), super::fmt_delta((v - b) / b * 100.0))
        }
        (Some(v), _) => fmt(v),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let lines = summary(&r, &[rep], &[], &[]);
        assert_eq!(
            lines[0],
            "**Same answers?** b: 13 of 20 cases answer like a; differences: 7 × differs at header.revision"
        );
    }

    #[test]
    fn deltas_read_like_seed_003() {
        assert_eq!(
            with_delta(Some(2804.0), Some(2951.0), &|v| fmt_rate(v)),
            "2804 (-5%)"
        );
        assert_eq!(
            with_delta(Some(0.4), Some(0.4), &|v| format!("{v:.1}")),
            "0.4 (±0%)"
        );
        assert_eq!(with_delta(Some(7.0), None, &|v| format!("{v:.0}")), "7");
        assert_eq!(
            with_delta(Some(37907.0), Some(22.92), &|v| fmt_rate(v)),
            "37907 (×1654)"
        );
        assert_eq!(
            with_delta(Some(38.0), Some(47_880.0), &fmt_us),
            "38 µs (÷1260)"
        );
        assert_eq!(with_delta(None, Some(1.0), &|v| format!("{v}")), "—");
    }
}
