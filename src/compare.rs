//! `bakeoff compare`: lines up benchmarks of several inputs (the first is the baseline),
//! compares each against the baseline with [`crate::stats::compare`], and marks the rows that
//! are significantly worse than a threshold. One table per unit, as benchstat prints them.

use serde::Serialize;

use crate::import::{BenchSet, Format};
use crate::stats::{self, Comparison, Direction, Sample, Thresholds, Verdict};

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Options {
    pub thresholds: Thresholds,
    /// Fail (in percent) when a row is significantly worse by more than this.
    pub fail_above_pct: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub inputs: Vec<Input>,
    pub alpha: f64,
    pub noise_pct: f64,
    pub threshold_pct: Option<f64>,
    pub tables: Vec<Table>,
    /// Benchmarks (with unit) that some input lacks, by input.
    pub missing: Vec<Missing>,
    /// Rows significantly worse than the threshold.
    pub tripped: usize,
    /// Things that make the comparison less fair, e.g. inputs measured on different CPUs.
    pub warnings: Vec<String>,
    /// How rows were paired (`rows paired by name`, … see [`pair`]).
    pub pairing: String,
    /// The builds each bakeoff results file measured (contenders built from source):
    /// `run0: base = repo @ v1 (abc…), new = …`.
    #[serde(default)]
    pub builds: Vec<String>,
}

/// Which commits each input's contenders were built from, when they were built from source.
fn builds(sets: &[BenchSet]) -> Vec<String> {
    sets.iter()
        .filter_map(|s| {
            let built: Vec<String> = s
                .config
                .iter()
                .filter_map(|(k, v)| Some(format!("{} = {v}", k.strip_prefix("source ")?)))
                .collect();
            (!built.is_empty()).then(|| format!("{}: {}", s.label, built.join(", ")))
        })
        .collect()
}

#[derive(Debug, Clone, Serialize)]
pub struct Input {
    pub label: String,
    pub format: Format,
    pub config: Vec<(String, String)>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Missing {
    pub input: String,
    /// `name (unit)` present in another input but not in this one.
    pub benchmarks: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Table {
    pub unit: String,
    pub direction: Direction,
    pub rows: Vec<Row>,
    /// Per compared input: the geometric mean of new/old over rows where both are positive,
    /// as a change in percent.
    pub geomean_delta_pct: Vec<Option<f64>>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub name: String,
    pub base: Summary,
    /// One per compared input, `None` when that input lacks the row.
    pub cells: Vec<Option<Cell>>,
}

#[derive(Debug, Clone, Copy, Serialize)]
pub struct Summary {
    pub n: usize,
    pub median: f64,
    pub min: f64,
    pub max: f64,
    /// 95 % order-statistic interval of the median, when there are enough samples.
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
    /// Otherwise: how many samples an interval needs.
    pub ci_needs: Option<usize>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Cell {
    pub summary: Summary,
    pub delta_pct: Option<f64>,
    pub p: f64,
    pub verdict: Verdict,
    /// Significantly worse by more than the threshold.
    pub tripped: bool,
}

fn summary(s: &Sample) -> Summary {
    let ci = stats::median_ci(s, 0.95);
    Summary {
        n: s.len(),
        median: s.median(),
        min: s.min(),
        max: s.max(),
        ci_low: ci.as_ref().ok().map(|c| c.lo),
        ci_high: ci.as_ref().ok().map(|c| c.hi),
        ci_needs: match ci {
            Err(stats::StatsError::NeedsMore { needed, .. }) => Some(needed),
            _ => None,
        },
    }
}

/// The rows of one unit, every input after the first against the first; `tripped` counts
/// the cells past `--fail-above`.
fn table(sets: &[BenchSet], unit: &str, opts: Options, tripped: &mut usize) -> Table {
    let base = &sets[0];
    let direction = base.direction(unit);
    let mut rows = Vec::new();
    let mut ratios: Vec<Vec<f64>> = vec![Vec::new(); sets.len() - 1];
    for r in base.rows.iter().filter(|r| r.unit == unit) {
        let Ok(old) = Sample::new(r.values.clone()) else {
            continue;
        };
        let mut cells = Vec::new();
        for (k, other) in sets[1..].iter().enumerate() {
            let found = other
                .rows
                .iter()
                .find(|o| o.name == r.name && o.unit == unit);
            let Some(new) = found.and_then(|o| Sample::new(o.values.clone()).ok()) else {
                cells.push(None);
                continue;
            };
            let c: Comparison = stats::compare(&old, &new, direction, opts.thresholds);
            let trip = c.verdict == Verdict::Worse
                && opts
                    .fail_above_pct
                    .is_some_and(|t| c.delta_pct.is_some_and(|d| d.abs() > t));
            *tripped += usize::from(trip);
            if c.old_median > 0.0 && c.new_median > 0.0 {
                ratios[k].push(c.new_median / c.old_median);
            }
            cells.push(Some(Cell {
                summary: summary(&new),
                delta_pct: c.delta_pct,
                p: c.p,
                verdict: c.verdict,
                tripped: trip,
            }));
        }
        rows.push(Row {
            name: r.name.clone(),
            base: summary(&old),
            cells,
        });
    }
    let geomean_delta_pct = ratios
        .iter()
        .map(|r| stats::geomean(r).map(|g| (g - 1.0) * 100.0))
        .collect();
    Table {
        unit: unit.to_string(),
        direction,
        rows,
        geomean_delta_pct,
    }
}

/// Compares every input after the first against the first.
pub fn compare(sets: &[BenchSet], opts: Options) -> Report {
    let base = &sets[0];
    let mut units: Vec<&str> = Vec::new();
    for r in &base.rows {
        if !units.contains(&r.unit.as_str()) {
            units.push(&r.unit);
        }
    }
    let mut tripped = 0;
    let tables = units
        .into_iter()
        .map(|unit| table(sets, unit, opts, &mut tripped))
        .collect();
    Report {
        inputs: sets
            .iter()
            .map(|s| Input {
                label: s.label.clone(),
                format: s.format,
                config: s.config.clone(),
            })
            .collect(),
        alpha: opts.thresholds.alpha,
        noise_pct: opts.thresholds.noise * 100.0,
        threshold_pct: opts.fail_above_pct,
        tables,
        missing: missing(sets),
        tripped,
        warnings: environment_differs(sets),
        pairing: "rows paired by name".into(),
        builds: builds(sets),
    }
}

/// How the rows of the inputs are paired, when it is not by name across files.
#[derive(Debug, Clone, Default)]
pub struct Pairing {
    /// One file: the benchmark the others in it are compared against (its first by default).
    pub baseline: Option<String>,
    /// `OLD=NEW`: a benchmark of the baseline file named OLD is the one named NEW elsewhere.
    pub rename: Vec<(String, String)>,
    /// Pair the rows of each input with the baseline's by position.
    pub by_position: bool,
}

/// Lines the inputs up for [`compare`] and says how: one file becomes one input per
/// benchmark (hyperfine's `hyperfine 'old/foo' 'new/foo'`), each a single row named after
/// the baseline; several files are paired by name, after `rename`, or by position.
pub fn pair(mut sets: Vec<BenchSet>, how: &Pairing) -> Result<(Vec<BenchSet>, String), String> {
    if sets.len() == 1 {
        let set = sets.remove(0);
        let names: Vec<&str> = {
            let mut v: Vec<&str> = Vec::new();
            for r in &set.rows {
                if !v.contains(&r.name.as_str()) {
                    v.push(&r.name);
                }
            }
            v
        };
        if names.len() < 2 {
            return Err(format!(
                "`{}` holds one benchmark; give a second input to compare it with",
                set.label
            ));
        }
        let base = match &how.baseline {
            Some(b) if names.contains(&b.as_str()) => b.clone(),
            Some(b) => {
                return Err(format!(
                    "--baseline `{b}` is not a benchmark of `{}`; it has: {}",
                    set.label,
                    names.join(", ")
                ))
            }
            None => names[0].to_string(),
        };
        let mut order = vec![base.clone()];
        order.extend(names.iter().filter(|n| **n != base).map(|n| n.to_string()));
        let out = order
            .iter()
            .map(|name| {
                let mut s = set.clone();
                s.label = name.clone();
                s.rows = set
                    .rows
                    .iter()
                    .filter(|r| &r.name == name)
                    .map(|r| crate::import::Row {
                        name: base.clone(),
                        ..r.clone()
                    })
                    .collect();
                s
            })
            .collect();
        return Ok((
            out,
            format!("benchmarks of one file, each against `{base}`"),
        ));
    }
    if how.by_position {
        let base_names: Vec<String> = sets[0].rows.iter().map(|r| r.name.clone()).collect();
        for s in &mut sets[1..] {
            for (i, r) in s.rows.iter_mut().enumerate() {
                if let Some(n) = base_names.get(i) {
                    r.name = n.clone();
                }
            }
        }
        return Ok((sets, "rows paired by position".into()));
    }
    if !how.rename.is_empty() {
        for s in &mut sets[1..] {
            for r in &mut s.rows {
                if let Some((old, _)) = how.rename.iter().find(|(_, new)| *new == r.name) {
                    r.name = old.clone();
                }
            }
        }
        let map: Vec<String> = how.rename.iter().map(|(o, n)| format!("{o}={n}")).collect();
        return Ok((
            sets,
            format!("rows paired by name, with {}", map.join(", ")),
        ));
    }
    Ok((sets, "rows paired by name".into()))
}

/// Inputs whose `cpu`, `cpus` (bakeoff results: online and allowed), `goos`, `goarch` or
/// `kernel` configuration differ were measured on different machines: their deltas mix the
/// change with the machine.
fn environment_differs(sets: &[BenchSet]) -> Vec<String> {
    let mut out = Vec::new();
    for s in sets {
        if s.config.iter().any(|(k, v)| k == "run" && v == "smoke") {
            out.push(format!(
                "`{}` is a --smoke run (one repetition, one request per client): its figures check a plan, they are not for comparing",
                s.label
            ));
        }
    }
    for key in ["cpu", "cpus", "goos", "goarch", "kernel"] {
        let values: Vec<(&str, &str)> = sets
            .iter()
            .filter_map(|s| {
                s.config
                    .iter()
                    .find(|(k, _)| k == key)
                    .map(|(_, v)| (s.label.as_str(), v.as_str()))
            })
            .collect();
        if values.iter().any(|(_, v)| *v != values[0].1) {
            let list: Vec<String> = values.iter().map(|(l, v)| format!("{l}: {v}")).collect();
            out.push(format!(
                "the inputs were measured with different `{key}` ({})",
                list.join("; ")
            ));
        }
    }
    out
}

/// For each input, the benchmarks another input has and it lacks.
fn missing(sets: &[BenchSet]) -> Vec<Missing> {
    let key = |r: &crate::import::Row| format!("{} ({})", r.name, r.unit);
    let mut out = Vec::new();
    for (i, s) in sets.iter().enumerate() {
        let mut lacks = Vec::new();
        for (j, o) in sets.iter().enumerate() {
            if i == j {
                continue;
            }
            for r in &o.rows {
                let k = key(r);
                if !s.rows.iter().any(|x| x.name == r.name && x.unit == r.unit)
                    && !lacks.contains(&k)
                {
                    lacks.push(k);
                }
            }
        }
        if !lacks.is_empty() {
            out.push(Missing {
                input: s.label.clone(),
                benchmarks: lacks,
            });
        }
    }
    out
}
