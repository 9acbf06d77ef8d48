//! Cells every table shares: a contender's name with the member that led, a point's
//! figures (none where most calls failed), the leading axis columns, medians with their
//! range, a serving table's id.

use super::table::{number, Cell};
use crate::results::{PointId, Results};
use crate::stats::Sample;

pub(super) fn median(values: &[f64]) -> Option<f64> {
    Sample::new(values.to_vec()).ok().map(|s| s.median())
}

/// The contender's name, with the member that led at a `target = "leader"` point (each
/// different one once, in the order the repetitions found them); for tools the name and the
/// leaders.
pub(super) fn contender_cell(name: &str, pts: &[&crate::results::PointRun]) -> Cell {
    let leaders = leaders(pts);
    let text = if leaders.is_empty() {
        name.to_string()
    } else {
        format!("{name} (leader {})", leaders.join(", "))
    };
    Cell::text("contender", name)
        .and("leaders", leaders.join(" "))
        .reads(text)
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

    /// The point's cells: variables (numbers for tools where they are), the stage, clients,
    /// the target and the offered rate.
    pub(super) fn cells(&self, id: &PointId) -> Vec<Cell> {
        let mut row: Vec<Cell> = id
            .vars
            .0
            .iter()
            .map(|(k, v)| match v.parse::<f64>() {
                Ok(x) if x.is_finite() => {
                    Cell::with(v.as_str(), vec![(k.clone(), number(Some(x)))])
                }
                _ => Cell::text(k, v.as_str()),
            })
            .collect();
        if self.stage {
            row.push(Cell::with(
                id.stage.map_or("—".into(), |k| k.to_string()),
                vec![("stage".into(), id.stage.into())],
            ));
        }
        row.push(Cell::count("clients", id.clients as u64));
        if self.target {
            row.push(Cell::text("target", id.spread().as_str()));
        }
        if self.rate {
            row.push(Cell::with(
                id.rate.map_or("—".into(), |r| format!("{r}")),
                vec![("offered_rps".into(), number(id.rate))],
            ));
        }
        row
    }
}

/// A paired verdict of one figure, `key` its name for tools (`cpu_per_request`): the verdict
/// as people read it (`1.34× (1.29×–1.40×) more CPU per request`, `≈ …`, `? …`), styled by
/// what it proved; for tools the ratio, its interval, p, the verdict and its direction.
pub(super) fn verdict_cell(key: &str, x: Option<&crate::analysis::verdicts::Verdict>) -> Cell {
    verdict_cell_in(key, x, false)
}

/// [`verdict_cell`], its ratios as factors whatever their size when `factors` says so: the
/// notation of its column.
pub(super) fn verdict_cell_in(
    key: &str,
    x: Option<&crate::analysis::verdicts::Verdict>,
    factors: bool,
) -> Cell {
    use super::table::Reading;
    use crate::stats::paired::Call;
    let values = vec![
        (format!("{key}_ratio"), number(x.map(|x| x.ratio.ratio))),
        (format!("{key}_ratio_lo"), number(x.map(|x| x.ratio.lo))),
        (format!("{key}_ratio_hi"), number(x.map(|x| x.ratio.hi))),
        (format!("{key}_p"), number(x.map(|x| x.p))),
        (
            format!("{key}_verdict"),
            x.map_or("", |x| x.call.word()).into(),
        ),
        (
            format!("{key}_call"),
            x.map_or("", |x| x.call.direction()).into(),
        ),
    ];
    let cell = Cell::with(x.map_or(String::new(), |x| x.text(factors)), values);
    match x.map(|x| x.call) {
        None => cell,
        Some(Call::Equivalent) => cell.reading(Reading::Equivalent),
        Some(Call::Inconclusive) => cell.reading(Reading::Inconclusive),
        Some(_) => cell.reading(Reading::Different),
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
pub(super) fn verdict(r: &Results, point: &PointId, base: &str, name: &str) -> String {
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
