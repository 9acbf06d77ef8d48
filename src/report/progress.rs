//! A one-line progress display on stderr, shown only on a terminal: nothing extra when piped.

use std::io::Write as _;

use crate::load::{Progress, Stop};

pub struct Bar {
    enabled: bool,
    drawn: bool,
}

impl Bar {
    pub fn new(enabled: bool) -> Bar {
        Bar {
            enabled,
            drawn: false,
        }
    }

    pub fn update(&mut self, p: Progress) {
        if !self.enabled {
            return;
        }
        let line = if p.warming_up {
            "  warming up…".to_string()
        } else {
            let (fraction, of) = match p.stop {
                Stop::Count(n) => (p.done as f64 / n as f64, format!("{}/{n} requests", p.done)),
                Stop::Duration(d) => (
                    p.elapsed.as_secs_f64() / d.as_secs_f64(),
                    format!(
                        "{} requests, {:.0}/{:.0} s",
                        p.done,
                        p.elapsed.as_secs_f64(),
                        d.as_secs_f64()
                    ),
                ),
            };
            let width = 30;
            let filled = ((fraction.clamp(0.0, 1.0)) * width as f64) as usize;
            format!(
                "  [{}{}] {of}",
                "#".repeat(filled),
                ".".repeat(width - filled)
            )
        };
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r\x1b[2K{line}");
        let _ = err.flush();
        self.drawn = true;
    }

    /// Draws `line` as the bar (on a terminal).
    pub fn line(&mut self, line: &str) {
        if !self.enabled {
            return;
        }
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r\x1b[2K{line}");
        let _ = err.flush();
        self.drawn = true;
    }

    pub fn finish(&mut self) {
        if self.drawn {
            let _ = write!(std::io::stderr().lock(), "\r\x1b[2K");
        }
    }
}

/// Where a paired run is: the point in rounds, its round, the points done of the run's, and
/// the time left, estimated from the points done so far (or, before any, from this point's
/// rounds at their most).
#[derive(Debug, Default)]
pub struct Rounds {
    /// Paired points the run measures (blocks × points); 0 when not told.
    pub total: usize,
    done: usize,
    /// Seconds the finished points took, together.
    spent: f64,
    now: Option<Current>,
}

#[derive(Debug)]
struct Current {
    label: String,
    max: u32,
    started: std::time::Instant,
}

impl Rounds {
    pub fn in_point(&self) -> bool {
        self.now.is_some()
    }

    pub fn start(&mut self, scenario: &str, point: &str, max: u32, at: std::time::Instant) {
        self.now = Some(Current {
            label: format!("{scenario} [{point}]"),
            max,
            started: at,
        });
    }

    /// The point's limit of rounds changed (an auto slice was chosen).
    pub fn limit(&mut self, max: u32) {
        if let Some(c) = &mut self.now {
            c.max = max;
        }
    }

    /// The line after `round` rounds: `s [clients=4]: round 3 of at most 30 · point 2 of 48
    /// · about 1 min 20 s left`.
    pub fn round(&self, round: u32, at: std::time::Instant) -> String {
        let Some(c) = &self.now else {
            return String::new();
        };
        let here = at.saturating_duration_since(c.started).as_secs_f64();
        let per_round = here / f64::from(round.max(1));
        // This point at its most, then every point left at the finished points' average
        // (this point's most, before any has finished).
        let this_left = per_round * f64::from(c.max.saturating_sub(round));
        let per_point = if self.done > 0 {
            self.spent / self.done as f64
        } else {
            per_round * f64::from(c.max)
        };
        let after = self.total.saturating_sub(self.done + 1) as f64 * per_point;
        let of = if self.total > 0 {
            format!(" · point {} of {}", self.done + 1, self.total)
        } else {
            String::new()
        };
        let left = if self.total > 0 {
            format!(" · at most about {} left", fmt_left(this_left + after))
        } else {
            String::new()
        };
        format!(
            "  {}: round {round} of at most {}{of}{left}",
            c.label, c.max
        )
    }

    pub fn done(&mut self, at: std::time::Instant) {
        if let Some(c) = self.now.take() {
            self.spent += at.saturating_duration_since(c.started).as_secs_f64();
            self.done += 1;
        }
    }
}

/// `45 s`, `3 min 20 s`, `1 h 05 min`.
fn fmt_left(s: f64) -> String {
    let s = s.max(0.0).round() as u64;
    match s {
        0..60 => format!("{s} s"),
        60..3600 => format!("{} min {:02} s", s / 60, s % 60),
        _ => format!("{} h {:02} min", s / 3600, (s % 3600) / 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    #[test]
    fn a_paired_run_says_its_point_round_and_time_left() {
        let t0 = Instant::now();
        let mut r = Rounds {
            total: 4,
            ..Default::default()
        };
        r.start("get", "clients=4", 30, t0);
        assert!(r.in_point());
        // 3 rounds in 0.6 s: this point at most 27 × 0.2 s more, and 3 more points of at
        // most 30 rounds each.
        let line = r.round(3, t0 + Duration::from_millis(600));
        assert_eq!(
            line,
            "  get [clients=4]: round 3 of at most 30 · point 1 of 4 · at most about 23 s left"
        );
        r.done(t0 + Duration::from_secs(2));
        assert!(!r.in_point());
        // The next point, estimated from the first (2 s each).
        r.start("get", "clients=16", 30, t0 + Duration::from_secs(2));
        let line = r.round(1, t0 + Duration::from_millis(2200));
        assert!(line.contains("point 2 of 4"), "{line}");
        assert!(line.ends_with("about 10 s left"), "{line}");
        // Its slice chosen after the first round: the limit it says follows.
        r.limit(120);
        let line = r.round(2, t0 + Duration::from_millis(2300));
        assert!(line.contains("round 2 of at most 120"), "{line}");
        assert_eq!(fmt_left(200.0), "3 min 20 s");
        assert_eq!(fmt_left(3900.0), "1 h 05 min");
    }
}
