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

    pub fn finish(&mut self) {
        if self.drawn {
            let _ = write!(std::io::stderr().lock(), "\r\x1b[2K");
        }
    }
}
