//! What a bisection keeps in its folder (`bisect.json`), written after every build and
//! step so that `--resume` goes on without measuring a finished step again, and the report
//! can be written from it at any time.

use std::path::Path;

use anyhow::{bail, Context as _};
use serde::{Deserialize, Serialize};

use super::{Answer, Hunt, Kind, Pair};
use crate::build::history::Commit;

/// The version of `bisect.json`'s shape.
pub const SCHEMA: u32 = 1;

/// The most a `bisect.json` may hold (its steps' verdicts, the commits' subjects).
const LIMIT: u64 = 64 << 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Running,
    Interrupted,
    Done,
}

/// A bisection: what was asked, what was built and measured, what it found.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Record {
    pub schema: u32,
    pub bakeoff: String,
    pub started_at: String,
    pub status: Status,
    /// The plan file, absolute.
    pub plan: String,
    pub plan_name: String,
    pub contender: String,
    pub good: String,
    pub bad: String,
    /// `cpu-per-request`, `throughput`, `p50` or `p99`; none: the plan's main figure.
    pub figure: Option<String>,
    /// `--scenario`: the scenarios measured (none: every one).
    #[serde(default)]
    pub scenarios: Vec<String>,
    /// `--effect`, a share; none: half of what the endpoints measured.
    pub effect: Option<f64>,
    pub ways: usize,
    /// `--budget` as given (none: the plan's).
    pub budget: Option<String>,
    /// `good` first, `bad` last.
    pub commits: Vec<Commit>,
    pub builds: Vec<Build>,
    pub steps: Vec<Step>,
    pub hunt: Option<Hunt>,
    pub answer: Option<Answer>,
    /// The contender's `incremental = true`: each commit built in one work tree kept in
    /// the cache (false in records from before it was kept).
    #[serde(default)]
    pub incremental: bool,
    /// The contender's repository on this machine, where `bakeoff check` reads the working
    /// tree (none in records from before it was kept).
    #[serde(default)]
    pub repo: Option<String>,
}

/// A commit built (or found in the cache, or not built).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Build {
    pub commit: usize,
    pub built: bool,
    pub cached: bool,
    pub seconds: f64,
    /// Why it did not build: the error and the log's last lines.
    pub error: Option<String>,
}

/// A paired run of the bisection, and what it read.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Step {
    pub kind: Kind,
    pub at: Vec<usize>,
    /// Its results folder, under the bisection's.
    pub dir: String,
    /// Wall-clock seconds it took, starts included.
    pub seconds: f64,
    pub pairs: Vec<Pair>,
}

impl Record {
    pub fn save(&self, dir: &Path) -> anyhow::Result<()> {
        let text = serde_json::to_vec_pretty(self)?;
        let file = dir.join("bisect.json");
        crate::results::write_atomic(&file, &text)
            .with_context(|| format!("writing `{}`", file.display()))
    }

    pub fn load(dir: &Path) -> anyhow::Result<Record> {
        let file = dir.join("bisect.json");
        let text = crate::sys::read_bounded(&file, LIMIT).with_context(|| {
            format!(
                "`{}` is not a bisection's folder (no readable bisect.json)",
                dir.display()
            )
        })?;
        let v: serde_json::Value = serde_json::from_str(&text)
            .with_context(|| format!("`{}` is not JSON", file.display()))?;
        match v.get("schema").and_then(|s| s.as_u64()) {
            Some(s) if s == u64::from(SCHEMA) => {}
            Some(s) => bail!(
                "`{}` has schema {s}; this bakeoff reads schema {SCHEMA} (written by bakeoff {})",
                file.display(),
                v.get("bakeoff").and_then(|b| b.as_str()).unwrap_or("?")
            ),
            None => bail!("`{}` is not a bisection's record", file.display()),
        }
        let r: Record =
            serde_json::from_value(v).with_context(|| format!("reading `{}`", file.display()))?;
        r.check()
            .map_err(|why| anyhow::anyhow!("`{}` cannot be resumed: {why}", file.display()))?;
        Ok(r)
    }

    /// Whether the record holds together, before anything is measured from it: two commits
    /// or more, each a commit id; every build, step, pair and culprit naming commits it has;
    /// a step's commits in order; two ways or more.
    fn check(&self) -> Result<(), String> {
        let n = self.commits.len();
        if n < 2 {
            return Err(format!("it lists {n} commits; a bisection has two or more"));
        }
        if let Some(c) = self
            .commits
            .iter()
            .find(|c| !crate::build::history::is_commit_id(&c.id))
        {
            return Err(format!("{:?} is not a commit id", c.id));
        }
        if !(2..=8).contains(&self.ways) {
            return Err(format!("`ways` is {}; 2 to 8", self.ways));
        }
        let out = |i: usize| i >= n;
        if let Some(b) = self.builds.iter().find(|b| out(b.commit)) {
            return Err(format!(
                "a build of commit {}, past its {n} commits",
                b.commit
            ));
        }
        for s in &self.steps {
            let ordered = s.at.windows(2).all(|w| w[0] < w[1]);
            if s.at.len() < 2 || !ordered || s.at.iter().any(|&i| out(i)) {
                return Err(format!(
                    "a step at commits {:?}, not two or more in order among its {n}",
                    s.at
                ));
            }
            if let Some(p) = s.pairs.iter().find(|p| p.from >= p.to || out(p.to)) {
                return Err(format!("a pair {} → {} among {n} commits", p.from, p.to));
            }
        }
        if let Some(Answer::Culprits { blames }) = &self.answer {
            if let Some(b) = blames.iter().find(|b| b.from >= b.to || out(b.to)) {
                return Err(format!("a culprit {}–{} among {n} commits", b.from, b.to));
            }
        }
        Ok(())
    }

    /// The step measured at `at` for `kind`, when one was finished.
    pub fn step(&self, kind: Kind, at: &[usize]) -> Option<&Step> {
        self.steps.iter().find(|s| s.kind == kind && s.at == at)
    }

    pub fn build(&self, commit: usize) -> Option<&Build> {
        self.builds.iter().find(|b| b.commit == commit)
    }

    /// `abc1234567` for commit `i`.
    pub fn short(&self, i: usize) -> &str {
        self.commits[i].short()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(commits: usize) -> Record {
        Record {
            schema: SCHEMA,
            bakeoff: "0.1.0".into(),
            started_at: "2026-12-07T00:00:00Z".into(),
            status: Status::Interrupted,
            plan: "/p/plan.toml".into(),
            plan_name: "p".into(),
            contender: "s".into(),
            good: "a".into(),
            bad: "b".into(),
            figure: None,
            scenarios: Vec::new(),
            effect: None,
            ways: 2,
            budget: None,
            commits: (0..commits)
                .map(|k| Commit {
                    id: format!("{k:040x}"),
                    subject: format!("commit {k}"),
                })
                .collect(),
            builds: Vec::new(),
            steps: Vec::new(),
            hunt: None,
            answer: None,
            incremental: false,
            repo: None,
        }
    }

    /// Issue 68 item 11: a tampered bisect.json is refused with the reason when it is read,
    /// not by a panic after minutes of measuring.
    #[test]
    fn a_tampered_record_is_refused_when_read() {
        let dir = std::env::temp_dir().join(format!("bakeoff-bisect-rec-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fine = record(5);
        fine.save(&dir).unwrap();
        assert!(Record::load(&dir).is_ok());
        let step = |at: Vec<usize>, from: usize, to: usize| Step {
            kind: Kind::Step,
            at,
            dir: "steps/02-step".into(),
            seconds: 1.0,
            pairs: vec![Pair {
                from,
                to,
                points: Vec::new(),
            }],
        };
        let cases: Vec<(Record, &str)> = vec![
            (record(0), "0 commits"),
            (record(1), "1 commits"),
            (
                Record {
                    builds: vec![Build {
                        commit: 9,
                        built: true,
                        cached: false,
                        seconds: 0.1,
                        error: None,
                    }],
                    ..record(5)
                },
                "a build of commit 9",
            ),
            (
                Record {
                    steps: vec![step(vec![0, 7], 0, 7)],
                    ..record(5)
                },
                "a step at commits [0, 7]",
            ),
            (
                Record {
                    steps: vec![step(vec![0, 2, 4], 2, 9)],
                    ..record(5)
                },
                "a pair 2 → 9",
            ),
            (
                Record {
                    answer: Some(Answer::Culprits {
                        blames: vec![super::super::Blame {
                            from: 3,
                            to: 12,
                            why: super::super::Why::Confirmed,
                        }],
                    }),
                    ..record(5)
                },
                "a culprit 3–12",
            ),
            (
                Record {
                    ways: 0,
                    ..record(5)
                },
                "`ways` is 0",
            ),
        ];
        for (bad, says) in cases {
            bad.save(&dir).unwrap();
            let e = format!("{:#}", Record::load(&dir).unwrap_err());
            assert!(
                e.contains("cannot be resumed") && e.contains(says),
                "{says}: {e}"
            );
        }
        let mut odd = record(3);
        odd.commits[1].id = "--output=/tmp/x".into();
        odd.save(&dir).unwrap();
        let e = format!("{:#}", Record::load(&dir).unwrap_err());
        assert!(e.contains("is not a commit id"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
