//! The ~40 ms band where a Nagle + delayed-ACK stall lands, read from a load's histogram:
//! `diagnose` names it as a finding, the runner re-measures such points with TCP_NODELAY
//! forced to confirm it.

use hdrhistogram::Histogram;

use super::LoadResult;

/// The band where a Nagle + delayed-ACK stall lands: Linux's delayed-ACK minimum is 40 ms,
/// ~44 ms seen on this machine; a little either side for scheduling.
pub const STALL_BAND_US: (u64, u64) = (38_000, 52_000);

/// Calls in the stall band and calls in all, when the band stands apart: either a floor (the
/// median in the band with at least half the calls) or a tail separated from the main mode
/// by a (nearly) empty gap. A distribution whose body reaches the band — a server queueing
/// under load — is neither.
pub fn stall_band(l: &LoadResult) -> Option<(u64, u64)> {
    stall_in(&l.latency_us.histogram().ok()?)
}

pub fn stall_in(h: &Histogram<u64>) -> Option<(u64, u64)> {
    if h.is_empty() {
        return None;
    }
    let (lo, hi) = STALL_BAND_US;
    let band = h.count_between(lo, hi);
    let p50 = h.value_at_quantile(0.5);
    if p50 >= lo {
        return (p50 <= hi && band * 2 >= h.len()).then_some((band, h.len()));
    }
    // The gap: from twice the median (or 10 ms, whichever is larger) up to the band.
    let gap_lo = (2 * p50).max(10_000);
    if gap_lo >= lo {
        return None;
    }
    let gap = h.count_between(gap_lo, lo - 1);
    (band > 0 && gap * 4 <= band).then_some((band, h.len()))
}
