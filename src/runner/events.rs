//! Progress as events: the runner says what happens, a [`Reporter`] decides what to show.
//! Every method has a no-op default, so a quiet reporter is `struct Quiet; impl Reporter for Quiet {}`;
//! the terminal's is `report::terminal::Terminal`.

use std::path::Path;

use crate::load::{LoadResult, Progress};
use crate::results::Startup;

pub trait Reporter {
    /// A run begins: `steps` contender starts are left to make (none: a resumed run that
    /// had finished them all).
    fn run_started(&mut self, _dir: &Path, _steps: usize) {}
    fn warning(&mut self, _text: &str) {}
    fn contender_starting(
        &mut self,
        _contender: &str,
        _repetition: u32,
        _step: usize,
        _steps: usize,
    ) {
    }
    fn contender_ready(&mut self, _contender: &str, _startup: &Startup) {}
    fn contender_failed(&mut self, _contender: &str, _error: &str) {}
    fn point_started(&mut self, _contender: &str, _scenario: &str, _point: &str) {}
    fn load_progress(&mut self, _p: Progress) {}
    /// `steal`: share of the CPUs' time the hypervisor took during the point.
    fn point_done(
        &mut self,
        _contender: &str,
        _scenario: &str,
        _point: &str,
        _result: &LoadResult,
        _steal: Option<f64>,
    ) {
    }
    fn point_failed(&mut self, _contender: &str, _scenario: &str, _point: &str, _error: &str) {}
    /// Paired order: the rounds a point took, and how precise its main ratio came out
    /// within the repetition (±share), when it could be computed.
    fn rounds_done(
        &mut self,
        _scenario: &str,
        _point: &str,
        _rounds: u32,
        _precision: Option<f64>,
    ) {
    }
    /// Paired order, before the first block: how many paired points the run will measure
    /// (blocks × points), for an estimate of the time left.
    fn paired_points(&mut self, _total: usize) {}
    /// Paired order, after the plan's repetitions: repetition `repetition` runs again the
    /// `points` whose verdicts are still inconclusive (`max_repetitions`).
    fn more_repetitions(&mut self, _repetition: u32, _points: &[String]) {}
    /// Paired order: a point's rounds begin (at most `max` clean ones).
    fn rounds_started(&mut self, _scenario: &str, _point: &str, _max: u32) {}
    /// Paired order: an auto-sliced point chose its slice after its first round, and with it
    /// its limit of rounds.
    fn rounds_limit(&mut self, _max: u32) {}
    /// Paired order: `round` rounds of the point are done.
    fn round_done(&mut self, _round: u32) {}
    fn compat_done(&mut self, _set: &str, _cases: usize) {}
    /// A contender built from source: building, waiting, built, cached.
    fn build_progress(&mut self, _text: &str) {}
}

/// Shows nothing.
pub struct Quiet;

impl Reporter for Quiet {}
