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

    fn of(word: &str) -> Status {
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
}

impl Store {
    /// The change points of every series (of commits with ids), those Benjamini–Hochberg
    /// keeps at `fdr` over every series scanned, recorded (a known one keeps the status a
    /// confirmation gave it).
    pub fn detect(&mut self, s: Settings, fdr: f64) -> anyhow::Result<Vec<Found>> {
        let mut found = Vec::new();
        // The family: one p per change point, and a 1 for each series with none.
        let mut empty = 0;
        for series in self.series()? {
            let points: Vec<&super::SeriesPoint> = series
                .points
                .iter()
                .filter(|p| p.commit.is_some())
                .collect();
            let values: Vec<f64> = points.iter().map(|p| p.value).collect();
            let cps = detect::changes(&values, s);
            if cps.is_empty() {
                empty += 1;
            }
            for (k, c) in cps.iter().enumerate() {
                // Each side runs to the neighbouring change point.
                let start = k.checked_sub(1).map_or(0, |j| cps[j].index);
                let end = cps.get(k + 1).map_or(values.len(), |x| x.index);
                let (ratio, lo, hi) = step(&values[start..c.index], &values[c.index..end]);
                found.push(Found {
                    key: series.key.clone(),
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
                });
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
        let tx = self.conn.transaction()?;
        let now = crate::results::now_utc();
        for f in &mut found {
            let k = &f.key;
            let key = params![k.plan, k.contender, k.point, k.figure, k.env, f.first_bad];
            tx.execute(
                "INSERT INTO changes (plan_name, contender, point, figure, env_key, first_bad, last_good, ratio, lo, hi, p, status, detected_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)
                 ON CONFLICT (plan_name, contender, point, figure, env_key, first_bad) DO UPDATE SET
                     last_good = excluded.last_good, ratio = excluded.ratio, lo = excluded.lo,
                     hi = excluded.hi, p = excluded.p,
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
                            now
                        ])
                        .copied(),
                ),
            )?;
            let status: String = tx.query_row(
                "SELECT status FROM changes WHERE plan_name = ?1 AND contender = ?2 AND point = ?3
                 AND figure = ?4 AND env_key = ?5 AND first_bad = ?6",
                key,
                |r| r.get(0),
            )?;
            f.status = Status::of(&status);
        }
        tx.commit()?;
        Ok(found)
    }
}

/// After over before, with the 95 % interval of the difference of the means (pooled, as
/// the detector's t-test) read as a ratio.
fn step(before: &[f64], after: &[f64]) -> (f64, f64, f64) {
    let mean = |x: &[f64]| x.iter().sum::<f64>() / x.len() as f64;
    let (m1, m2) = (mean(before), mean(after));
    let var = |x: &[f64], m: f64| x.iter().map(|v| (v - m).powi(2)).sum::<f64>();
    let (n1, n2) = (before.len(), after.len());
    let df = (n1 + n2).saturating_sub(2).max(1);
    let pooled = (var(before, m1) + var(after, m2)) / df as f64;
    let se = (pooled * (1.0 / n1 as f64 + 1.0 / n2 as f64)).sqrt();
    let half = super::record::t975(df) * se;
    let d = m2 - m1;
    (m2 / m1, (m1 + d - half) / m1, (m1 + d + half) / m1)
}
