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
        serde_json::from_value(v).with_context(|| format!("reading `{}`", file.display()))
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
