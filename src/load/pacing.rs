//! When each request may go: a *pacing* (closed loop, or open loop at a fixed total rate)
//! combined with a *stop condition* (a count or a duration), handed out as tickets by one
//! shared dispenser. Every client runs the same loop; the dispenser alone knows the mode.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Pacing {
    /// Each client sends its next request as soon as the previous one is answered.
    Closed,
    /// Requests are due at `rate` per second in total, whatever the server does; latency is
    /// measured from when a request was due, which corrects for coordinated omission.
    Open { rate: f64 },
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Stop {
    Count(u64),
    Duration(Duration),
}

/// Permission to send request `seq`. `due` is the intended send time in an open loop.
#[derive(Debug, Clone, Copy)]
pub struct Ticket {
    pub seq: u64,
    pub due: Option<Instant>,
    pub warmup: bool,
}

pub struct Dispenser {
    pacing: Pacing,
    stop: Stop,
    warmup: Duration,
    start: OnceLock<Instant>,
    issued: AtomicU64,
    measured: AtomicU64,
    /// Measured tickets handed out in an open loop.
    handed: AtomicU64,
    cancelled: AtomicBool,
    /// The command's cancellation (Ctrl-C): stop issuing tickets, finish what is in flight.
    external: crate::cancel::Cancel,
    /// Wakes what waits in [`Dispenser::stopped`] when it is cancelled.
    stop_seen: tokio::sync::Notify,
}

impl Dispenser {
    pub fn new(pacing: Pacing, stop: Stop, warmup: Duration) -> Dispenser {
        Dispenser {
            pacing,
            stop,
            warmup,
            start: OnceLock::new(),
            issued: AtomicU64::new(0),
            measured: AtomicU64::new(0),
            handed: AtomicU64::new(0),
            cancelled: AtomicBool::new(false),
            external: crate::cancel::Cancel::new(),
            stop_seen: tokio::sync::Notify::new(),
        }
    }

    /// Stops issuing tickets, too, once `cancel` is set.
    pub fn watching(mut self, cancel: crate::cancel::Cancel) -> Dispenser {
        self.external = cancel;
        self
    }

    /// Fixes the start of the run; tickets are handed out only after this.
    pub fn start(&self, at: Instant) {
        let _ = self.start.set(at);
    }

    /// Stops issuing tickets, and wakes what waits in [`Dispenser::stopped`]. The session
    /// calls it, too, when it sees the command cancelled (it looks five times a second).
    pub fn cancel(&self) {
        self.cancelled.store(true, Relaxed);
        self.stop_seen.notify_waiters();
    }

    /// Returns once the dispenser is cancelled (by [`Dispenser::cancel`]; the command's
    /// cancellation reaches it through the session): a wait with no timer of its own, so
    /// nothing a request.
    pub async fn stopped(&self) {
        let mut seen = std::pin::pin!(self.stop_seen.notified());
        // Registered before the flag is read: a cancel between the two still wakes it.
        seen.as_mut().enable();
        if self.is_cancelled() {
            return;
        }
        seen.await;
    }

    /// Whether it stopped issuing tickets early: cancelled, or the command was.
    pub fn is_cancelled(&self) -> bool {
        self.cancelled.load(Relaxed) || self.external.is_cancelled()
    }

    fn started(&self) -> Instant {
        *self.start.get().expect("dispenser used before start")
    }

    /// Number of warm-up tickets in an open loop.
    fn warm_tickets(&self, rate: f64) -> u64 {
        (self.warmup.as_secs_f64() * rate).ceil() as u64
    }

    /// When a duration-stopped run ends, on the wall clock.
    pub fn deadline(&self) -> Option<Instant> {
        match self.stop {
            Stop::Duration(d) => Some(self.measure_start() + d),
            Stop::Count(_) => None,
        }
    }

    /// Open loop with a duration: requests that fell due in the measured window but were
    /// never sent, because every client was still busy when the window closed (the
    /// generator or the server could not keep up; k6 calls them dropped iterations).
    pub fn dropped(&self) -> u64 {
        match (self.pacing, self.stop) {
            (Pacing::Open { rate }, Stop::Duration(d)) => {
                let due = (d.as_secs_f64() * rate).ceil() as u64;
                due.saturating_sub(self.handed.load(Relaxed))
            }
            _ => 0,
        }
    }

    /// When measuring begins: the end of the warm-up.
    pub fn measure_start(&self) -> Instant {
        match self.pacing {
            Pacing::Closed => self.started() + self.warmup,
            Pacing::Open { rate } => {
                self.started() + Duration::from_secs_f64(self.warm_tickets(rate) as f64 / rate)
            }
        }
    }

    #[cfg(test)]
    pub fn next(&self) -> Option<Ticket> {
        self.next_at(Instant::now())
    }

    /// The next ticket, or `None` when the load is over; `now` is the caller's reading of
    /// the clock (a client reads it once per request, for this and for its send time).
    pub fn next_at(&self, now: Instant) -> Option<Ticket> {
        if self.is_cancelled() {
            return None;
        }
        match self.pacing {
            Pacing::Closed => {
                let measure_start = self.measure_start();
                if now < measure_start {
                    let seq = self.issued.fetch_add(1, Relaxed);
                    return Some(Ticket {
                        seq,
                        due: None,
                        warmup: true,
                    });
                }
                let m = self.measured.fetch_add(1, Relaxed);
                let done = match self.stop {
                    Stop::Count(n) => m >= n,
                    Stop::Duration(d) => now >= measure_start + d,
                };
                (!done).then(|| Ticket {
                    seq: self.issued.fetch_add(1, Relaxed),
                    due: None,
                    warmup: false,
                })
            }
            Pacing::Open { rate } => {
                let seq = self.issued.fetch_add(1, Relaxed);
                let due = self.started() + Duration::from_secs_f64(seq as f64 / rate);
                let warm = self.warm_tickets(rate);
                if seq < warm {
                    return Some(Ticket {
                        seq,
                        due: Some(due),
                        warmup: true,
                    });
                }
                // A duration is wall-clock: nothing is sent after the window closes, even
                // when requests due before then are still waiting for a free client.
                let done = match self.stop {
                    Stop::Count(n) => seq - warm >= n,
                    Stop::Duration(d) => {
                        let end = self.measure_start() + d;
                        due >= end || now >= end
                    }
                };
                if done {
                    return None;
                }
                self.handed.fetch_add(1, Relaxed);
                Some(Ticket {
                    seq,
                    due: Some(due),
                    warmup: false,
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(d: &Dispenser) -> Vec<Ticket> {
        std::iter::from_fn(|| d.next()).collect()
    }

    #[test]
    fn closed_count_issues_exactly_n() {
        let d = Dispenser::new(Pacing::Closed, Stop::Count(5), Duration::ZERO);
        d.start(Instant::now());
        let t = drain(&d);
        assert_eq!(t.len(), 5);
        assert!(t.iter().all(|t| !t.warmup && t.due.is_none()));
        assert_eq!(t.iter().map(|t| t.seq).collect::<Vec<_>>(), [0, 1, 2, 3, 4]);
        assert!(d.next().is_none(), "stays stopped");
    }

    #[test]
    fn open_loop_schedule_is_evenly_spaced_and_counts_after_warmup() {
        let d = Dispenser::new(
            Pacing::Open { rate: 100.0 },
            Stop::Count(10),
            Duration::from_millis(50),
        );
        let t0 = Instant::now();
        d.start(t0);
        let t = drain(&d);
        assert_eq!(t.iter().filter(|t| t.warmup).count(), 5);
        assert_eq!(t.iter().filter(|t| !t.warmup).count(), 10);
        for (i, tk) in t.iter().enumerate() {
            assert_eq!(tk.due.unwrap() - t0, Duration::from_millis(10 * i as u64));
        }
        assert_eq!(d.measure_start() - t0, Duration::from_millis(50));
    }

    #[test]
    fn open_loop_duration_stops_at_the_schedule_end() {
        let d = Dispenser::new(
            Pacing::Open { rate: 1000.0 },
            Stop::Duration(Duration::from_millis(20)),
            Duration::ZERO,
        );
        d.start(Instant::now());
        assert_eq!(drain(&d).len(), 20);
    }

    #[test]
    fn what_waits_for_a_stop_wakes_at_the_cancel_and_not_before() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        let d = std::sync::Arc::new(Dispenser::new(
            Pacing::Closed,
            Stop::Count(10),
            Duration::ZERO,
        ));
        // Not cancelled: still waiting when a bound runs out.
        let waited = rt
            .block_on(async { tokio::time::timeout(Duration::from_millis(50), d.stopped()).await });
        assert!(waited.is_err(), "woke without a cancel");
        // Cancelled from another thread while it waits: it wakes.
        let other = d.clone();
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            other.cancel();
        });
        let waited =
            rt.block_on(async { tokio::time::timeout(Duration::from_secs(30), d.stopped()).await });
        t.join().unwrap();
        assert!(waited.is_ok(), "a cancel did not wake it");
        // Already cancelled: it returns at once.
        let waited =
            rt.block_on(async { tokio::time::timeout(Duration::from_secs(30), d.stopped()).await });
        assert!(waited.is_ok());
    }

    #[test]
    fn cancel_stops_issuing() {
        let d = Dispenser::new(Pacing::Closed, Stop::Count(1_000), Duration::ZERO);
        d.start(Instant::now());
        assert!(d.next().is_some());
        d.cancel();
        assert!(d.next().is_none());
    }

    #[test]
    fn a_duration_ends_by_the_clock_reading_it_is_given() {
        // The client passes the reading it also sends by; the window's end and the
        // warm-up's are judged by it, not by a reading of the dispenser's own.
        let d = Dispenser::new(
            Pacing::Closed,
            Stop::Duration(Duration::from_secs(10)),
            Duration::from_secs(1),
        );
        let t0 = Instant::now();
        d.start(t0);
        assert!(d.next_at(t0).is_some_and(|t| t.warmup));
        let inside = d.next_at(t0 + Duration::from_secs(5));
        assert!(inside.is_some_and(|t| !t.warmup));
        assert!(d.next_at(t0 + Duration::from_secs(12)).is_none());
        let open = Dispenser::new(
            Pacing::Open { rate: 1.0 },
            Stop::Duration(Duration::from_secs(100)),
            Duration::ZERO,
        );
        open.start(t0);
        assert!(open.next_at(t0).is_some());
        assert!(open.next_at(t0 + Duration::from_secs(101)).is_none());
    }
}
