//! The figures a verdict can be about, and how each is read from a point or a slice.

use crate::results::{PointRun, Slice};

/// What a verdict is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Figure {
    /// The server's CPU time per request: steady on a shared machine.
    CpuPerRequest,
    /// The server's CPU time per streamed message (server-streaming calls only).
    CpuPerItem,
    Throughput,
    P50,
    P99,
}

impl Figure {
    pub const ALL: [Figure; 5] = [
        Figure::CpuPerRequest,
        Figure::CpuPerItem,
        Figure::Throughput,
        Figure::P50,
        Figure::P99,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Figure::CpuPerRequest => "CPU per request",
            Figure::CpuPerItem => "CPU per item",
            Figure::Throughput => "throughput",
            Figure::P50 => "p50",
            Figure::P99 => "p99",
        }
    }

    /// Its name for tools and plans (`paired.judge`): [`crate::plan::FIGURES`] lists them
    /// in [`Figure::ALL`]'s order.
    pub fn key(self) -> &'static str {
        crate::plan::FIGURES[self as usize]
    }

    /// The figure over a whole point (all its slices), as the serving table shows it.
    pub fn of_point(self, p: &PointRun) -> Option<f64> {
        let load = p.load.as_ref()?;
        match self {
            Figure::CpuPerRequest => p.cost?.cpu_us_per(load.requests),
            Figure::CpuPerItem => (load.items > load.requests)
                .then(|| p.cost?.cpu_us_per(load.items))
                .flatten(),
            Figure::Throughput => Some(load.requests_per_s),
            Figure::P50 => Some(load.latency_us.p50 as f64),
            Figure::P99 => Some(load.latency_us.p99 as f64),
        }
    }

    /// The figure over one slice of a paired round.
    pub(super) fn of(self, s: &Slice) -> Option<f64> {
        match self {
            Figure::CpuPerRequest => s.cpu_us_per_request(),
            Figure::CpuPerItem => s.cpu_us_per_item(),
            Figure::Throughput => Some(s.requests_per_s),
            Figure::P50 => Some(s.p50_us as f64),
            Figure::P99 => Some(s.p99_us as f64),
        }
    }

    /// The words for a change: (when the ratio is above 1, below 1).
    pub(super) fn words(self) -> (&'static str, &'static str) {
        match self {
            Figure::CpuPerRequest => ("more CPU per request", "less CPU per request"),
            Figure::CpuPerItem => ("more CPU per item", "less CPU per item"),
            Figure::Throughput => ("more throughput", "less throughput"),
            Figure::P50 => ("higher p50", "lower p50"),
            Figure::P99 => ("higher p99", "lower p99"),
        }
    }
}
