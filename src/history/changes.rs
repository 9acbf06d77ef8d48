//! `bakeoff history detect` (docs/history.md, "Finding steps"): the change points of every
//! series, held together to a false discovery rate, kept in the history's `changes` table
//! with their status.

use rusqlite::params;

use super::detect::{self, Settings};
use super::{SeriesKey, Store};

/// Where a change point stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Fewer than [`PENDING`] commits after it: its after side is too short to judge.
    Pending,
    /// Found; not yet measured again side by side.
    Candidate,
    Confirmed,
    Rejected,
    Inconclusive,
}

impl Status {
    pub fn word(self) -> &'static str {
        match self {
            Status::Pending => "pending",
            Status::Candidate => "candidate",
            Status::Confirmed => "confirmed",
            Status::Rejected => "rejected",
            Status::Inconclusive => "inconclusive",
        }
    }

    pub fn of(word: &str) -> Status {
        match word {
            "pending" => Status::Pending,
            "confirmed" => Status::Confirmed,
            "rejected" => Status::Rejected,
            "inconclusive" => Status::Inconclusive,
            _ => Status::Candidate,
        }
    }
}

/// A change point within this many commits of a series' end is pending.
pub const PENDING: usize = 3;

/// Which rule found a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// E-divisive means with a t-test, over a series' points (its p is the t-test's).
    EDivisive,
    /// A ratio series' night outside the band of the nights before it ([`super::band`]).
    Band,
}

impl Rule {
    pub fn word(self) -> &'static str {
        match self {
            Rule::EDivisive => "e-divisive",
            Rule::Band => "band",
        }
    }

    pub fn of(word: &str) -> Rule {
        match word {
            "band" => Rule::Band,
            _ => Rule::EDivisive,
        }
    }
}

/// A step found in a series.
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    pub key: SeriesKey,
    pub last_good: String,
    pub first_bad: String,
    /// After over before (the two sides' means), with its 95 % interval.
    pub ratio: f64,
    pub lo: f64,
    pub hi: f64,
    pub p: f64,
    pub status: Status,
    pub rule: Rule,
}

impl Store {
    /// The steps of every series (of commits with ids): E-divisive's change points, those
    /// Benjamini–Hochberg keeps at `fdr` over every series scanned, and in a ratio series
    /// also each night outside the band of the nights before it; recorded (a known one keeps
    /// the status a confirmation gave it). A ratio series is scanned in stretches of one
    /// reference commit; an absolute series is left out where its ratio series has a
    /// stretch of two nights or more (docs/history.md, "Over time, side by side").
    pub fn detect(&mut self, s: Settings, fdr: f64) -> anyhow::Result<Vec<Change>> {
        let all = self.series()?;
        // The absolute series a ratio series stands in for: read once, not for each series.
        let paired: std::collections::BTreeSet<SeriesKey> = all
            .iter()
            .filter(|r| r.key.against.is_some())
            .filter(|r| stretches(&r.points).iter().any(|x| x.len() >= 2))
            .map(|r| SeriesKey {
                against: None,
                ..r.key.clone()
            })
            .collect();
        let paired = |k: &SeriesKey| paired.contains(k);
        let mut found = Vec::new();
        let mut banded = Vec::new();
        // The family: one p per change point, and a 1 for each stretch with none.
        let mut empty = 0;
        for series in all
            .iter()
            .filter(|x| x.key.against.is_some() || !paired(&x.key))
        {
            for points in stretches(&series.points) {
                let before = found.len();
                found.extend(divisive(&series.key, &points, s));
                if found.len() == before {
                    empty += 1;
                }
                if series.key.against.is_some() {
                    banded.extend(band(&series.key, &points));
                }
            }
        }
        let mut family: Vec<f64> = found.iter().map(|f| f.p).collect();
        family.extend(std::iter::repeat_n(1.0, empty));
        let kept = crate::stats::paired::benjamini_hochberg(&family, fdr);
        let mut k = 0;
        found.retain(|_| {
            k += 1;
            kept[k - 1]
        });
        // A step both rules found is the band's: it was found the night it landed.
        found.retain(|f| {
            !banded
                .iter()
                .any(|b: &Found| b.key == f.key && b.first_bad == f.first_bad)
        });
        found.extend(banded);
        let tx = self.conn.transaction()?;
        let now = crate::results::now_utc();
        let mut out = Vec::new();
        for f in found {
            out.push(upsert(&tx, f, &now)?);
        }
        tx.commit()?;
        Ok(out)
    }
}

/// A series' points with a commit, cut where the reference's commit changes: a ratio to one
/// reference is not a ratio to another, so no step is found across the move.
fn stretches(points: &[super::SeriesPoint]) -> Vec<Vec<&super::SeriesPoint>> {
    let mut out: Vec<Vec<&super::SeriesPoint>> = Vec::new();
    for p in points.iter().filter(|p| p.commit.is_some()) {
        match out.last_mut() {
            Some(last) if last[0].reference == p.reference => last.push(p),
            _ => out.push(vec![p]),
        }
    }
    out
}

/// E-divisive's change points of a stretch.
fn divisive(key: &SeriesKey, points: &[&super::SeriesPoint], s: Settings) -> Vec<Found> {
    let values: Vec<f64> = points.iter().map(|p| p.value).collect();
    let cps = detect::changes(&values, s);
    cps.iter()
        .enumerate()
        .map(|(k, c)| {
            // Each side runs to the neighbouring change point.
            let start = k.checked_sub(1).map_or(0, |j| cps[j].index);
            let end = cps.get(k + 1).map_or(values.len(), |x| x.index);
            let (ratio, lo, hi) = step(&values[start..c.index], &values[c.index..end]);
            Found {
                key: key.clone(),
                last_good: points[c.index - 1].commit.clone().expect("filtered"),
                first_bad: points[c.index].commit.clone().expect("filtered"),
                ratio,
                lo,
                hi,
                p: c.p,
                status: match values.len() - c.index < PENDING {
                    true => Status::Pending,
                    false => Status::Candidate,
                },
                rule: Rule::EDivisive,
            }
        })
        .collect()
}

/// The band's steps of a stretch of a ratio series: candidates at once.
fn band(key: &SeriesKey, points: &[&super::SeriesPoint]) -> Vec<Found> {
    let nights: Vec<super::band::Night> = points
        .iter()
        .map(|p| super::band::Night {
            ratio: p.value,
            lo: p.lo.unwrap_or(f64::NAN),
            hi: p.hi.unwrap_or(f64::NAN),
            spread: p.spread,
        })
        .collect();
    super::band::steps(&nights)
        .into_iter()
        .map(|b| Found {
            key: key.clone(),
            last_good: points[b.index - 1].commit.clone().expect("filtered"),
            first_bad: points[b.index].commit.clone().expect("filtered"),
            ratio: b.ratio,
            lo: b.lo,
            hi: b.hi,
            p: 0.0,
            status: Status::Candidate,
            rule: Rule::Band,
        })
        .collect()
}

/// A step found, into the `changes` table (a known one keeps the status a confirmation gave
/// it); as the table now has it.
fn upsert(tx: &rusqlite::Transaction, mut f: Found, now: &str) -> anyhow::Result<Change> {
    let k = &f.key;
    let against = k.against.clone().unwrap_or_default();
    let key = params![
        k.plan,
        k.contender,
        k.point,
        k.figure,
        k.env,
        against,
        f.first_bad
    ];
    tx.execute(
        "INSERT INTO changes (plan_name, contender, point, figure, env_key, against, first_bad, last_good, ratio, lo, hi, p, status, detected_at, rule)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)
         ON CONFLICT (plan_name, contender, point, figure, env_key, against, first_bad) DO UPDATE SET
             last_good = excluded.last_good, p = excluded.p, rule = excluded.rule,
             ratio = CASE WHEN status = 'confirmed' THEN ratio ELSE excluded.ratio END,
             lo = CASE WHEN status = 'confirmed' THEN lo ELSE excluded.lo END,
             hi = CASE WHEN status = 'confirmed' THEN hi ELSE excluded.hi END,
             status = CASE WHEN status IN ('confirmed', 'rejected', 'inconclusive')
                           THEN status ELSE excluded.status END",
        rusqlite::params_from_iter(
            key.iter()
                .chain(params![
                    f.last_good,
                    f.ratio,
                    f.lo,
                    f.hi,
                    f.p,
                    f.status.word(),
                    now,
                    f.rule.word()
                ])
                .copied(),
        ),
    )?;
    let (id, status, verdict, confirm_dir): (i64, String, _, _) = tx.query_row(
        "SELECT id, status, verdict, confirm_dir FROM changes WHERE plan_name = ?1
         AND contender = ?2 AND point = ?3 AND figure = ?4 AND env_key = ?5 AND against = ?6
         AND first_bad = ?7",
        key,
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
    )?;
    f.status = Status::of(&status);
    Ok(Change {
        id,
        found: f,
        verdict,
        confirm_dir,
    })
}

/// A change point as the `changes` table keeps it.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    pub id: i64,
    pub found: Found,
    /// What its confirmation read, in words.
    pub verdict: Option<String>,
    /// The results folder of its confirmation.
    pub confirm_dir: Option<String>,
}

impl Store {
    /// Every change point kept, newest first (`ids` empty), or those named.
    pub fn changes(&self, ids: &[i64]) -> anyhow::Result<Vec<Change>> {
        let mut q = self.conn.prepare(
            "SELECT id, plan_name, contender, point, figure, env_key, last_good, first_bad,
                    ratio, lo, hi, p, status, verdict, confirm_dir, against, rule
             FROM changes ORDER BY id DESC",
        )?;
        let all = q.query_map([], |r| {
            Ok(Change {
                id: r.get(0)?,
                found: Found {
                    key: SeriesKey {
                        plan: r.get(1)?,
                        contender: r.get(2)?,
                        point: r.get(3)?,
                        figure: r.get(4)?,
                        env: r.get(5)?,
                        against: Some(r.get::<_, String>(15)?).filter(|a| !a.is_empty()),
                    },
                    last_good: r.get(6)?,
                    first_bad: r.get(7)?,
                    ratio: r.get(8)?,
                    // A step's ratio is positive, and so is its interval's low end (one
                    // recorded before it was on the log scale may not be).
                    lo: r
                        .get::<_, Option<f64>>(9)?
                        .filter(|l| *l > 0.0)
                        .unwrap_or(f64::NAN),
                    hi: r.get::<_, Option<f64>>(10)?.unwrap_or(f64::NAN),
                    p: r.get(11)?,
                    status: Status::of(&r.get::<_, String>(12)?),
                    rule: Rule::of(&r.get::<_, String>(16)?),
                },
                verdict: r.get(13)?,
                confirm_dir: r.get(14)?,
            })
        })?;
        let mut out = Vec::new();
        for c in all {
            let c = c?;
            if ids.is_empty() || ids.contains(&c.id) {
                out.push(c);
            }
        }
        if let Some(missing) = ids.iter().find(|i| !out.iter().any(|c| c.id == **i)) {
            anyhow::bail!(
                "no step {missing} in `{}`; `bakeoff history detect` lists them",
                self.path.display()
            );
        }
        Ok(out)
    }

    /// Sets a step's status after its confirmation: what it read, where its results are,
    /// and for a confirmed step its size as measured side by side (ratio, low, high).
    pub fn confirmed(
        &mut self,
        id: i64,
        status: Status,
        verdict: &str,
        dir: &std::path::Path,
        size: Option<(f64, f64, f64)>,
    ) -> anyhow::Result<()> {
        self.conn.execute(
            "UPDATE changes SET status = ?2, verdict = ?3, confirm_dir = ?4, confirmed_at = ?5
             WHERE id = ?1",
            params![
                id,
                status.word(),
                verdict,
                dir.to_string_lossy(),
                crate::results::now_utc()
            ],
        )?;
        if let Some((ratio, lo, hi)) = size {
            self.conn.execute(
                "UPDATE changes SET ratio = ?2, lo = ?3, hi = ?4 WHERE id = ?1",
                params![id, ratio, lo, hi],
            )?;
        }
        Ok(())
    }

    /// The plan file the latest recorded run of plan `name` ran from, and the commit URL
    /// its `[history]` gave.
    pub fn plan_of(&self, name: &str) -> anyhow::Result<(Option<String>, Option<String>)> {
        use rusqlite::OptionalExtension as _;
        Ok(self
            .conn
            .query_row(
                "SELECT plan_path, commit_url FROM runs WHERE plan_name = ?1 ORDER BY id DESC LIMIT 1",
                [name],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?
            .unwrap_or_default())
    }
}

/// After over before, with a 95 % interval that stays positive: the difference of the
/// sides' mean logs (pooled, as the detector's t-test) read as a ratio, widened to hold the
/// ratio of the means; on a side with a value that is not positive, the difference of the
/// means, its low end held above 0.
fn step(before: &[f64], after: &[f64]) -> (f64, f64, f64) {
    let positive = |x: &[f64]| x.iter().all(|v| *v > 0.0 && v.is_finite());
    if positive(before) && positive(after) {
        let ln = |x: &[f64]| x.iter().map(|v| v.ln()).collect::<Vec<f64>>();
        let (_, lo, hi) = plain_step(&ln(before), &ln(after), true);
        let mean = |x: &[f64]| x.iter().sum::<f64>() / x.len() as f64;
        let ratio = mean(after) / mean(before);
        return (ratio, lo.min(ratio), hi.max(ratio));
    }
    let (ratio, lo, hi) = plain_step(before, after, false);
    (ratio, lo.max(f64::MIN_POSITIVE), hi)
}

/// After over before from the sides' means and the pooled interval of their difference;
/// `logs`: the sides are logs, and the ratio is exp of the difference.
fn plain_step(before: &[f64], after: &[f64], logs: bool) -> (f64, f64, f64) {
    let mean = |x: &[f64]| x.iter().sum::<f64>() / x.len() as f64;
    let (m1, m2) = (mean(before), mean(after));
    let var = |x: &[f64], m: f64| x.iter().map(|v| (v - m).powi(2)).sum::<f64>();
    let (n1, n2) = (before.len(), after.len());
    let df = (n1 + n2).saturating_sub(2).max(1);
    let pooled = (var(before, m1) + var(after, m2)) / df as f64;
    let se = (pooled * (1.0 / n1 as f64 + 1.0 / n2 as f64)).sqrt();
    let half = super::record::t975(df) * se;
    let d = m2 - m1;
    match logs {
        true => (d.exp(), (d - half).exp(), (d + half).exp()),
        false => (m2 / m1, (m1 + d - half) / m1, (m1 + d + half) / m1),
    }
}
