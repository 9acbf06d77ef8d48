//! A finished run into the history (docs/history.md, "What is recorded"): the run and its
//! environment, each contender's commit, each figure's estimate with its interval and
//! per-repetition values, the paired verdicts — in one transaction, once per run.

use std::path::Path;

use anyhow::Context as _;
use rusqlite::{params, OptionalExtension as _};

use super::store::Store;
use crate::analysis::verdicts::{Figure, PointVerdicts};
use crate::build::history::Details;
use crate::cancel::Cancel;
use crate::results::Results;

/// What recording a run did.
#[derive(Debug, Clone, PartialEq)]
pub struct Recorded {
    pub run: i64,
    /// False when the history had the run already (the same plan, start and measurements).
    pub new: bool,
    pub figures: usize,
    pub verdicts: usize,
}

/// The environment a series belongs to: what makes figures comparable — the CPU model,
/// the CPUs, the kernel, the pinning, bakeoff's version — in words, and its key.
pub fn environment(r: &Results) -> (String, String) {
    let e = &r.environment;
    let pins = |c: &Option<Vec<usize>>| match c {
        Some(c) => format!("{c:?}"),
        None => "unpinned".into(),
    };
    let words = format!(
        "{} · {} CPUs · {} · contenders {} load {} · {}",
        e.cpu_model,
        e.cpus_online,
        e.kernel,
        pins(&e.contender_cpus),
        pins(&e.load_cpus),
        r.tool
    );
    (super::fnv(words.bytes())[..12].to_string(), words)
}

/// Records `results` (its folder `dir`, the verdicts its report read) in `store`; `given`
/// is the commit of a contender that names none (`history import --commit`).
pub fn record(
    store: &mut Store,
    results: &Results,
    dir: &Path,
    verdicts: &[PointVerdicts],
    given: Option<&Details>,
    cancel: &Cancel,
) -> anyhow::Result<Recorded> {
    check_commits(results, dir)?;
    let hash = results.plan_hash.clone().unwrap_or_default();
    let print = fingerprint(results)?;
    let known: Option<i64> = store
        .conn
        .query_row(
            "SELECT id FROM runs WHERE fingerprint = ?1",
            [&print],
            |r| r.get(0),
        )
        .optional()?;
    if let Some(run) = known {
        return Ok(Recorded {
            run,
            new: false,
            figures: 0,
            verdicts: 0,
        });
    }
    let (key, words) = environment(results);
    let plan_dir = Path::new(&results.plan_path)
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let commits: Vec<(String, Option<Commit>)> = results
        .contenders
        .iter()
        .map(|c| {
            let at = commit_of(c, &plan_dir, cancel).or_else(|| given.map(Commit::from));
            (c.name.clone(), at)
        })
        .collect();
    let figures = figures(results);
    let wants = Wants::of(dir);
    let tx = store.conn.transaction()?;
    tx.execute(
        "INSERT INTO runs (plan_name, plan_hash, started_at, recorded_at, results_dir, bakeoff, env_key, env, fingerprint, plan_path, commit_url)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
        params![
            results.name,
            hash,
            results.started_at,
            crate::results::now_utc(),
            dir.to_string_lossy(),
            results.tool,
            key,
            words,
            print,
            results.plan_path,
            wants.commit_url
        ],
    )?;
    let run = tx.last_insert_rowid();
    for (name, c) in &commits {
        let c = c.clone().unwrap_or_default();
        tx.execute(
            "INSERT INTO contenders (run_id, name, commit_id, branch, commit_time, subject, dirty, depth)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            params![run, name, c.id, c.branch, c.time, c.subject, c.dirty, c.depth],
        )?;
    }
    insert_figures(&tx, run, &figures)?;
    let n = insert_verdicts(&tx, run, verdicts)?;
    tx.commit().context("recording the run")?;
    Ok(Recorded {
        run,
        new: true,
        figures: figures.len(),
        verdicts: n,
    })
}

/// What a run's plan says of the history (`[history]`, read from the `plan.toml` its
/// results folder keeps; nothing when it has none or it does not parse).
#[derive(Debug, Default, PartialEq)]
pub struct Wants {
    pub record: bool,
    pub commit_url: Option<String>,
}

impl Wants {
    pub fn of(dir: &Path) -> Wants {
        let Ok(text) = crate::sys::read_bounded(&dir.join("plan.toml"), crate::sys::PLAN_LIMIT)
        else {
            return Wants::default();
        };
        let Ok(v) = text.parse::<toml::Table>() else {
            return Wants::default();
        };
        let h = v.get("history").and_then(|h| h.as_table());
        Wants {
            record: h
                .and_then(|h| h.get("record"))
                .and_then(|r| r.as_bool())
                .unwrap_or(false),
            commit_url: h
                .and_then(|h| h.get("commit_url"))
                .and_then(|u| u.as_str())
                .map(str::to_string),
        }
    }
}

/// Each figure's row.
fn insert_figures(tx: &rusqlite::Transaction, run: i64, figures: &[Values]) -> anyhow::Result<()> {
    for f in figures {
        let (lo, hi) = f.interval().unzip();
        tx.execute(
            "INSERT INTO figures (run_id, contender, point, figure, estimate, lo, hi, per_repetition)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            params![
                run,
                f.contender,
                f.point,
                f.figure.key(),
                f.estimate(),
                lo,
                hi,
                serde_json::to_string(&f.values)?
            ],
        )?;
    }
    Ok(())
}

/// Each paired verdict's row; how many.
fn insert_verdicts(
    tx: &rusqlite::Transaction,
    run: i64,
    verdicts: &[PointVerdicts],
) -> anyhow::Result<usize> {
    let mut n = 0;
    for v in verdicts {
        for x in &v.verdicts {
            tx.execute(
                "INSERT INTO verdicts (run_id, contender, baseline, point, figure, call, ratio, lo, hi, noise, equivalence)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
                params![
                    run,
                    v.contender,
                    v.baseline,
                    v.point.to_string(),
                    x.figure.key(),
                    match x.call.direction() {
                        "" => x.call.word(),
                        d => d,
                    },
                    x.ratio.ratio,
                    x.ratio.lo,
                    x.ratio.hi,
                    x.bands.noise,
                    x.bands.equivalence
                ],
            )?;
            n += 1;
        }
    }
    Ok(n)
}

/// What makes a run this run: a hash of its plan, start and measurements (two runs of one
/// plan may start in the same second; a folder recorded twice is the same run).
fn fingerprint(r: &Results) -> anyhow::Result<String> {
    let runs = serde_json::to_vec(&r.runs)?;
    let plan = r.plan_hash.as_deref().unwrap_or("");
    Ok(super::fnv(
        plan.bytes().chain(r.started_at.bytes()).chain(runs),
    ))
}

/// Refuses results (from folder `dir`) whose contender names a commit that is not a commit
/// id: from a file, it could be anything (`--output=FILE`, which git would take for an option).
fn check_commits(results: &Results, dir: &Path) -> anyhow::Result<()> {
    for c in &results.contenders {
        if let Some(id) = c.source.as_ref().and_then(|s| s.commit.as_deref()) {
            if !crate::build::history::is_commit_id(id) {
                anyhow::bail!(
                "{}: contender `{}` names the commit {:?}, which is not a commit id (4 to 64 hex digits): nothing recorded",
                dir.join("results.json").display(),
                c.name.escape_debug(),
                id
            );
            }
        }
    }
    Ok(())
}

/// A contender's commit, as recorded.
#[derive(Debug, Clone, Default)]
struct Commit {
    id: Option<String>,
    branch: Option<String>,
    time: Option<i64>,
    subject: Option<String>,
    dirty: bool,
    depth: Option<i64>,
}

/// A contender's commit: its `source` provenance (time and subject from its repository when
/// that is a folder here), else the `HEAD` of the repository the plan is in.
fn commit_of(
    c: &crate::results::ContenderInfo,
    plan_dir: &Path,
    cancel: &Cancel,
) -> Option<Commit> {
    let details = |repo: &Path, rev: &str| crate::build::history::details(repo, rev, cancel);
    match &c.source {
        Some(s) => {
            let id = s.commit.clone()?;
            let repo = plan_dir.join(&s.repository);
            let d = repo.is_dir().then(|| details(&repo, &id)).flatten();
            Some(Commit {
                id: Some(id),
                branch: s.reference.clone(),
                time: d.as_ref().map(|d| d.time),
                depth: d.as_ref().and_then(|d| d.depth),
                subject: d.map(|d| d.subject),
                dirty: s.dirty,
            })
        }
        None => Some(Commit::from(&details(plan_dir, "HEAD")?)),
    }
}

impl From<&Details> for Commit {
    fn from(d: &Details) -> Commit {
        Commit {
            id: Some(d.id.clone()),
            branch: d.branch.clone(),
            time: Some(d.time),
            subject: Some(d.subject.clone()),
            dirty: false,
            depth: d.depth,
        }
    }
}

/// One figure of one contender at one point over a run's repetitions.
struct Values {
    contender: String,
    point: String,
    figure: Figure,
    values: Vec<f64>,
}

impl Values {
    fn estimate(&self) -> f64 {
        self.values.iter().sum::<f64>() / self.values.len() as f64
    }

    /// The mean's 95 % interval (none below two repetitions): Student's on the log scale,
    /// so a positive figure's interval stays positive (over three runs the plain one read
    /// "-9919 req/s–53467 req/s"), widened to hold the estimate.
    fn interval(&self) -> Option<(f64, f64)> {
        let (lo, hi) = log_interval(&self.values)?;
        let m = self.estimate();
        Some((lo.min(m), hi.max(m)))
    }
}

/// The 95 % Student interval of the geometric mean of `values` (all positive, two or
/// more): exp(mean(ln x) ± t·se); `None` for fewer than two, or a value that is not
/// positive.
pub(super) fn log_interval(values: &[f64]) -> Option<(f64, f64)> {
    let n = values.len();
    if n < 2 || values.iter().any(|v| !(*v > 0.0 && v.is_finite())) {
        return None;
    }
    let logs: Vec<f64> = values.iter().map(|v| v.ln()).collect();
    let m = logs.iter().sum::<f64>() / n as f64;
    let var = logs.iter().map(|l| (l - m).powi(2)).sum::<f64>() / (n - 1) as f64;
    let half = t975(n - 1) * (var / n as f64).sqrt();
    Some(((m - half).exp(), (m + half).exp()))
}

/// The 97.5 % quantile of Student's t with `df` degrees of freedom.
pub(super) fn t975(df: usize) -> f64 {
    let (mut lo, mut hi) = (0.0, 700.0);
    for _ in 0..100 {
        let mid = (lo + hi) / 2.0;
        if crate::stats::paired::student_sf(mid, df) > 0.025 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    (lo + hi) / 2.0
}

/// Every figure of every contender at every point, over the run's finished repetitions.
fn figures(r: &Results) -> Vec<Values> {
    let mut out: Vec<Values> = Vec::new();
    for run in r.runs.iter().filter(|x| x.error.is_none()) {
        let name = match &run.id.variant {
            Some(v) => format!("{}+{v}", run.id.contender),
            None => run.id.contender.clone(),
        };
        for p in run.points.iter().filter(|p| p.error.is_none()) {
            let point = p.id.to_string();
            for f in Figure::ALL {
                let Some(v) = f.of_point(p).filter(|v| v.is_finite()) else {
                    continue;
                };
                match out
                    .iter_mut()
                    .find(|x| x.contender == name && x.point == point && x.figure == f)
                {
                    Some(x) => x.values.push(v),
                    None => out.push(Values {
                        contender: name.clone(),
                        point: point.clone(),
                        figure: f,
                        values: vec![v],
                    }),
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    /// Issue 68 item 8: a positive figure's interval over three wild runs stays positive.
    #[test]
    fn a_positive_figure_keeps_a_positive_interval() {
        let v = super::Values {
            contender: "a".into(),
            point: "p".into(),
            figure: crate::analysis::verdicts::Figure::Throughput,
            values: vec![1000.0, 30000.0, 25000.0],
        };
        let (lo, hi) = v.interval().unwrap();
        assert!(
            lo > 0.0 && lo <= v.estimate() && v.estimate() <= hi,
            "{lo} {hi}"
        );
        let zero = super::Values {
            values: vec![0.0, 1.0],
            ..v
        };
        assert_eq!(zero.interval(), None);
    }

    #[test]
    fn t_quantiles() {
        assert!((super::t975(1) - 12.706).abs() < 0.01);
        assert!((super::t975(2) - 4.303).abs() < 0.01);
        assert!((super::t975(30) - 2.042).abs() < 0.01);
    }
}
