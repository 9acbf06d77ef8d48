//! What a paired point records per slice — its figures, the server's exact cost, the share
//! the host stole — and the one way two contenders' slices are joined into rounds.

use serde::{Deserialize, Serialize};

/// The server's own cost over a measured window.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
pub struct ServerCost {
    /// CPU seconds of every thread of the contender's process tree (from each thread's
    /// `schedstat`, nanosecond resolution).
    pub cpu_s: f64,
    /// Times its threads gave up the CPU (waiting) and had it taken away (preempted).
    pub voluntary_switches: u64,
    pub involuntary_switches: u64,
    /// Seconds its threads waited for a CPU while runnable (each thread's `schedstat`,
    /// second field), over the same window (0 in results from before it was read).
    #[serde(default)]
    pub wait_s: f64,
    /// CPU seconds something other than this contender used on its pinned CPUs over the
    /// window (their `/proc/stat` busy time less its own); `None` where the contenders are
    /// not pinned apart from the load, and in older results.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub others_s: Option<f64>,
}

impl ServerCost {
    /// CPU microseconds per measured call; `None` without calls, or without CPU time read: a
    /// server that answered used some, and a window shorter than the clock's tick (a
    /// `--smoke` slice) reads none — `0 µs` and a ratio of ÷199 would be figures it is not.
    pub fn cpu_us_per(&self, calls: u64) -> Option<f64> {
        (calls > 0 && self.cpu_s > 0.0).then(|| self.cpu_s * 1e6 / calls as f64)
    }
}

/// One contender's turn in one round of a paired point.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Slice {
    /// From 0.
    pub round: u32,
    /// Position in the round (0 = first to run).
    pub position: u32,
    pub requests: u64,
    pub failures: u64,
    /// Messages received: one per answer, one per message of a stream.
    #[serde(default)]
    pub items: u64,
    /// Measured seconds.
    pub duration_s: f64,
    pub requests_per_s: f64,
    pub items_per_s: f64,
    pub p50_us: u64,
    pub p90_us: u64,
    pub p99_us: u64,
    pub cost: Option<ServerCost>,
    /// Share of the busy CPUs' time the hypervisor took during the slice, 0..1.
    pub steal: Option<f64>,
    /// The clock ticks (1/100 s of one CPU, from /proc/stat) of that steal: a 25 ms slice
    /// on two CPUs spans five ticks, so one tick is 20 % and may be a tick's edge.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steal_ticks: Option<u64>,
}

/// A share of the CPUs' time taken by the hypervisor from which a measurement is no longer
/// the contenders' alone: 5 %. Paired rounds with a slice past it are run again and left out
/// of the verdicts; the steal finding counts points and start-ups past it.
pub const STEAL_LIMIT: f64 = 0.05;

/// The least steal, in /proc/stat's ticks, that marks a slice stolen: one tick is where the
/// 10 ms sampling happened to fall as much as what the host took.
pub const STEAL_TICKS: u64 = 2;

impl Slice {
    pub fn cpu_us_per_request(&self) -> Option<f64> {
        self.cost?.cpu_us_per(self.requests)
    }

    /// CPU microseconds per streamed message; `None` for unary calls (one item per call:
    /// the figure would be CPU per request again).
    pub fn cpu_us_per_item(&self) -> Option<f64> {
        (self.items > self.requests).then(|| self.cost?.cpu_us_per(self.items))?
    }

    /// The host took [`STEAL_LIMIT`] or more of the CPUs' time during this slice, over at
    /// least [`STEAL_TICKS`] ticks (slices recorded before ticks were: the share alone).
    pub fn stolen(&self) -> bool {
        self.steal.is_some_and(|s| s >= STEAL_LIMIT)
            && self.steal_ticks.is_none_or(|t| t >= STEAL_TICKS)
    }
}

/// The rounds two contenders ran side by side, as (baseline's figure, other's figure), made
/// balanced for position: a round in which `other` ran after the baseline is joined with the
/// next one in which it ran before, and the two count as one (geometric means), so whatever
/// running first or second does to a slice (the scheduler placing a server beside the load,
/// a cache warmed by the slice before) cancels. Rounds left without a partner are dropped —
/// unless no pair formed at all (a single round), when the rounds are used as they are.
/// Rounds in which the host stole past [`STEAL_LIMIT`] from either slice are left out, unless
/// every round was.
pub fn balanced_rounds(
    base: &[Slice],
    other: &[Slice],
    figure: &dyn Fn(&Slice) -> Option<f64>,
) -> Vec<(f64, f64)> {
    let all: Vec<(bool, bool, f64, f64)> = base
        .iter()
        .filter_map(|b| {
            let o = other.iter().find(|o| o.round == b.round)?;
            let (x, y) = (figure(b)?, figure(o)?);
            let stolen = b.stolen() || o.stolen();
            (x > 0.0 && y > 0.0).then_some((stolen, o.position > b.position, x, y))
        })
        .collect();
    let clean = all.iter().any(|r| !r.0);
    let rounds: Vec<(bool, f64, f64)> = all
        .into_iter()
        .filter(|r| !(clean && r.0))
        .map(|r| (r.1, r.2, r.3))
        .collect();
    let mut waiting: Vec<(bool, f64, f64)> = Vec::new();
    let mut out = Vec::new();
    for r in &rounds {
        match waiting.iter().position(|w| w.0 != r.0) {
            Some(i) => {
                let w = waiting.remove(i);
                out.push(((w.1 * r.1).sqrt(), (w.2 * r.2).sqrt()));
            }
            None => waiting.push(*r),
        }
    }
    if out.is_empty() {
        return rounds.iter().map(|r| (r.1, r.2)).collect();
    }
    out
}

#[cfg(test)]
mod cost_tests {
    use super::ServerCost;

    #[test]
    fn no_cpu_time_read_is_no_figure() {
        let cost = |cpu_s| ServerCost {
            cpu_s,
            voluntary_switches: 0,
            involuntary_switches: 0,
            wait_s: 0.0,
            others_s: None,
        };
        let none = cost(0.0);
        assert_eq!(none.cpu_us_per(1385), None);
        let some = cost(0.02);
        assert_eq!(some.cpu_us_per(1000), Some(20.0));
        assert_eq!(some.cpu_us_per(0), None);
    }
}
