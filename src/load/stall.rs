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

/// The fewest answered calls a re-measurement with TCP_NODELAY forced needs before it may
/// say the band went or stayed: a handful of calls (or none, after Ctrl-C) proves nothing.
pub const CHECK_MIN_CALLS: u64 = 20;

/// What a re-measurement with TCP_NODELAY forced says: the band gone (`Ok(true)`), the band
/// still there (`Ok(false)`), or nothing, and why (`Err`).
pub fn band_gone(l: Option<&LoadResult>) -> Result<bool, String> {
    let Some(l) = l else {
        return Err("nothing was measured with the option forced".into());
    };
    let answered = l.successes;
    if l.interrupted {
        Err("the re-measurement was interrupted".into())
    } else if l.mostly_failed() {
        Err(format!(
            "{} of {} calls failed with the option forced",
            l.failures, l.requests
        ))
    } else if answered < CHECK_MIN_CALLS {
        Err(format!(
            "only {} answered with the option forced; a check needs at least {CHECK_MIN_CALLS}",
            crate::units::count(answered, "call")
        ))
    } else {
        Ok(stall_band(l).is_none())
    }
}

#[cfg(test)]
mod check_tests {
    use super::*;
    use crate::load::result::tests::part;

    fn load(latencies_us: &[u64], failures: u64) -> LoadResult {
        let n = latencies_us.len() as u64;
        let mut l = part(latencies_us, n + failures, 1.0);
        l.failures = failures;
        l.successes = n;
        l
    }

    #[test]
    fn too_few_calls_confirm_nothing() {
        // After Ctrl-C: no call at all was measured with the option forced.
        let none = band_gone(Some(&load(&[], 0))).unwrap_err();
        assert!(none.contains("only 0 calls"), "{none}");
        assert!(band_gone(None).is_err());
        assert!(band_gone(Some(&load(&[100; 5], 0))).is_err());
        let mut cut = load(&[100; 30], 0);
        cut.interrupted = true;
        assert!(band_gone(Some(&cut)).unwrap_err().contains("interrupted"));
        let failed = band_gone(Some(&load(&[100; 30], 40))).unwrap_err();
        assert!(failed.contains("failed"), "{failed}");
        assert_eq!(band_gone(Some(&load(&[100; 30], 0))), Ok(true));
        assert_eq!(band_gone(Some(&load(&[44_000; 30], 0))), Ok(false));
    }
}
