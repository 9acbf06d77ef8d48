//! What a caller asks of a run, and what a run leaves.

use std::path::PathBuf;

use crate::results::{self, PointId, Results};

#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Where results go [default: `bakeoff-results/<timestamp>-<name>`].
    pub out: Option<PathBuf>,
    /// Continue the run in this results directory.
    pub resume: Option<PathBuf>,
    /// One repetition, every point at one request per client.
    pub smoke: bool,
    /// `--repetitions N`: instead of the plan's.
    pub repetitions: Option<u32>,
    /// `--only A,B`: these contenders (and their noise instances) only.
    pub only: Vec<String>,
    /// `--scenario S`: these scenarios only.
    pub scenarios: Vec<String>,
    /// Only these points (as a point's id reads, `get [clients=16]`) of the kept scenarios:
    /// a confirmation measures a step's own points; empty: every point.
    pub points: Vec<String>,
    /// `--shard K/N`: only the repetitions of shard K (docs/scale-out.md).
    pub shard: Option<results::Shard>,
    /// `--what-if nodelay`: a variant of every contender compared (docs/what-if.md).
    pub what_if: Vec<crate::plan::WhatIf>,
    /// `--profile`: every plain scenario is profiled (docs/profiles.md).
    pub profile: bool,
    /// `--ref NAME=REF`: contender NAME's git source at REF (docs/from-source.md).
    pub refs: Vec<(String, String)>,
    /// `--rebuild`: build contenders from source again even when the cache has them.
    pub rebuild: bool,
    /// `bakeoff check` and `bakeoff bisect`: the plan cut to one contender at several
    /// commits.
    pub cut: Option<Cut>,
    /// `--budget`: instead of the plan's (`Some(None)`: off).
    pub budget: Option<Option<std::time::Duration>>,
    /// The command's cancellation: set by Ctrl-C or SIGTERM, the run stops after the step in
    /// progress and keeps what it measured.
    pub cancel: crate::cancel::Cancel,
    /// Which points are worth another repetition, for a paired plan's `max_repetitions`;
    /// without it a run makes the plan's repetitions only.
    pub unsettled: Option<Unsettled>,
}

/// The plan cut to one contender built from its git source at several states, each compared
/// with the one before it (docs/bisect.md).
#[derive(Debug, Clone)]
pub enum Cut {
    /// `bakeoff check --contender NAME --against REF`: NAME at REF against NAME's working
    /// tree (`Plan::for_check`).
    Check { contender: String, against: String },
    /// A step of `bakeoff bisect` or a `history confirm`: NAME at each commit, named by the
    /// label beside it, judged on these figures (none: CPU per request, else throughput),
    /// sized for the smallest change it must tell (`Plan::for_commits`); with `spread`,
    /// the run's `--repetitions` share the plan's durations (`Plan::spread_over`).
    Commits {
        contender: String,
        commits: Vec<(String, String)>,
        judge: Vec<&'static str>,
        effect: Option<f64>,
        spread: bool,
    },
}

/// Reads a run's first stage (its plan's repetitions) and names the points whose verdicts
/// more repetitions could settle, each with the repetitions it should have in all, given
/// the most it may have; then, after each further repetition, reads those counts again from
/// the spread over all the repetitions (never the estimate) and raises them where it asks
/// more. The verdicts are read above the runner (`analysis`), so the caller hands the
/// readings in.
#[derive(Clone)]
pub struct Unsettled {
    pub first: std::sync::Arc<Judge>,
    pub again: std::sync::Arc<Again>,
}

impl Unsettled {
    pub fn new(
        first: impl Fn(&Results, u32) -> Vec<(PointId, u32)> + Send + Sync + 'static,
        again: impl Fn(&Results, &[(PointId, u32)], u32) -> Vec<(PointId, u32)> + Send + Sync + 'static,
    ) -> Unsettled {
        Unsettled {
            first: std::sync::Arc::new(first),
            again: std::sync::Arc::new(again),
        }
    }
}

/// The first reading [`Unsettled`] holds: the results and `max_repetitions` in; points,
/// each with the repetitions it wants in all, out.
pub type Judge = dyn Fn(&Results, u32) -> Vec<(PointId, u32)> + Send + Sync;

/// The reading again: the results, the counts so far and `max_repetitions` in; the counts,
/// each as large or larger, out.
pub type Again = dyn Fn(&Results, &[(PointId, u32)], u32) -> Vec<(PointId, u32)> + Send + Sync;

impl std::fmt::Debug for Unsettled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Unsettled(..)")
    }
}

/// What a finished (or interrupted) bake-off leaves: its directory and results.
pub struct Finished {
    pub dir: PathBuf,
    pub results: Results,
}

/// Per compat call: a server that holds a request longer is recorded as timed out.
pub(crate) const COMPAT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);
