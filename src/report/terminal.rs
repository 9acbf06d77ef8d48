//! The runner's events as lines on stderr, with a progress bar while a point runs on a TTY.

use std::io::Write as _;
use std::path::Path;

use super::{fmt_rate, fmt_us};
use crate::diagnose::Limits;
use crate::load::{LoadResult, Progress};
use crate::results::Startup;
use crate::runner::Reporter;

/// Prints each event as a line on stderr (and a progress bar while a point runs, on a TTY).
pub struct Terminal {
    bar: super::progress::Bar,
    /// Paired order: the run's points and the one in rounds now.
    paired: super::progress::Rounds,
}

impl Terminal {
    pub fn new(tty: bool) -> Terminal {
        Terminal {
            bar: super::progress::Bar::new(tty),
            paired: super::progress::Rounds::default(),
        }
    }
}

fn say(text: &str) {
    let mut e = std::io::stderr().lock();
    let _ = writeln!(e, "{text}");
}

impl Reporter for Terminal {
    fn run_started(&mut self, dir: &Path, steps: usize) {
        match steps {
            0 => say(&format!(
                "bakeoff: every contender start of {} is done already; its reports are written again",
                dir.display()
            )),
            n => say(&format!(
                "bakeoff: {}; results in {}",
                crate::units::count(n as u64, "contender start"),
                dir.display()
            )),
        }
    }
    fn warning(&mut self, text: &str) {
        say(&format!("warning: {text}"));
    }
    fn build_progress(&mut self, text: &str) {
        say(text);
    }
    fn contender_starting(&mut self, contender: &str, repetition: u32, step: usize, steps: usize) {
        say(&format!(
            "[{step}/{steps}] {contender}, repetition {repetition}: starting"
        ));
    }
    fn contender_ready(&mut self, contender: &str, s: &Startup) {
        say(&format!(
            "  {contender}: first response after {}, ready after {}",
            fmt_us(s.first_response_s * 1e6),
            fmt_us(s.ready_s * 1e6)
        ));
    }
    fn contender_failed(&mut self, contender: &str, error: &str) {
        self.bar.finish();
        say(&format!("  {contender} FAILED: {error}"));
    }
    fn point_started(&mut self, _contender: &str, _scenario: &str, _point: &str) {}
    fn load_progress(&mut self, p: Progress) {
        // A paired point's slices last 25 ms to 1 s: their own bar would restart many times a
        // second; the rounds' line stands instead.
        if !self.paired.in_point() {
            self.bar.update(p);
        }
    }
    fn more_repetitions(&mut self, repetition: u32, points: &[String]) {
        self.bar.finish();
        let n = points.len();
        say(&format!(
            "repetition {repetition}: {n} point{} still inconclusive, run again: {}",
            if n == 1 { "" } else { "s" },
            points.join(", ")
        ));
    }
    fn paired_points(&mut self, total: usize) {
        self.paired.total = total;
    }
    fn rounds_started(&mut self, scenario: &str, point: &str, max: u32) {
        self.paired
            .start(scenario, point, max, std::time::Instant::now());
    }
    fn rounds_limit(&mut self, max: u32) {
        self.paired.limit(max);
    }
    fn round_done(&mut self, round: u32) {
        let line = self.paired.round(round, std::time::Instant::now());
        self.bar.line(&line);
    }
    fn point_done(
        &mut self,
        contender: &str,
        scenario: &str,
        point: &str,
        r: &LoadResult,
        steal: Option<f64>,
    ) {
        self.bar.finish();
        let mut notes = if r.failures > 0 {
            format!(", {} failed", r.failures)
        } else {
            String::new()
        };
        if let Some(s) = steal.filter(|s| *s >= Limits::default().stolen) {
            notes.push_str(&format!(
                ", {:.0}% of the CPUs' time taken by the hypervisor",
                s * 100.0
            ));
        }
        say(&format!(
            "  {contender} · {scenario} [{point}]: {} req/s, p50 {}, p90 {}{notes}",
            fmt_rate(r.requests_per_s),
            fmt_us(r.latency_us.p50 as f64),
            fmt_us(r.latency_us.p90 as f64),
        ));
    }
    fn point_failed(&mut self, contender: &str, scenario: &str, point: &str, error: &str) {
        self.bar.finish();
        say(&format!(
            "  {contender} · {scenario} [{point}] FAILED: {error}"
        ));
    }
    fn rounds_done(&mut self, scenario: &str, point: &str, rounds: u32, precision: Option<f64>) {
        self.bar.finish();
        self.paired.done(std::time::Instant::now());
        let within = precision.map_or(String::new(), |p| {
            if p.is_finite() {
                format!(", main ratio within ±{:.1}%", p * 100.0)
            } else {
                // Fewer than two rounds left to pair (the host stole from the others).
                ", too few usable rounds to state the main ratio's precision".to_string()
            }
        });
        say(&format!(
            "  {scenario} [{point}]: {rounds} paired rounds{within}"
        ));
    }
    fn compat_done(&mut self, set: &str, cases: usize) {
        say(&format!(
            "  compat {set}: {} answered",
            super::count(cases as u64, "case")
        ));
    }
}
