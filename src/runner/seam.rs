//! The seam at the measurement boundary: what the paired rounds need of a contender that is
//! serving a point — a slice of load on its open session, its CPU time, whether it died — so
//! a fake stands in for processes (as hyperfine's `MockExecutor` does) and the round logic is
//! tested in milliseconds.

use crate::load::{LoadResult, Stop};
use crate::results::{ProfileRun, ServerCost};

use super::events::Reporter;

/// One slice of load as measured: the engine's result, the server's cost over exactly its
/// measured window, and the share of the CPUs' time the host stole meanwhile (with its
/// ticks).
pub(super) struct Sliced {
    pub(super) load: Result<LoadResult, String>,
    pub(super) cost: Option<ServerCost>,
    pub(super) steal: Option<(f64, u64)>,
}

/// A contender serving one point: its clients connected and warmed up (or why not).
pub(super) trait Serving {
    /// Why it cannot take part in the point's rounds (its setup or connections failed).
    fn failed(&self) -> Option<&str>;
    /// The member that led when the point began (`target = "leader"`), if it is a cluster.
    fn leader(&self) -> Option<String>;
    /// One slice of load on its open session, stopped by `stop` (the slice's length, or a
    /// count-stopped point's count).
    fn slice(&mut self, stop: Stop, rep: &mut dyn Reporter) -> Sliced;
    /// Its CPU time so far, in seconds (sampled).
    fn cpu_s(&mut self) -> f64;
    /// Whether it has died.
    fn exited(&mut self) -> bool;
    /// Starts its profile before the first round, when the scenario asks for one (a hook:
    /// nothing by default).
    fn start_profile(&mut self) {}
    /// Stops its profile, when one was recording over the rounds.
    fn stop_profile(&mut self) -> Option<ProfileRun> {
        None
    }
}
