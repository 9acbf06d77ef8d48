//! Turning measurements into text for people: the `load` summary and the progress bar.

pub mod analysis;
mod capacity;
mod cells;
pub mod compare_table;
pub mod compat;
pub mod edges;
pub mod export;
pub mod html;
pub mod load_summary;
pub mod machines;
pub mod markdown;
pub mod paired;
pub mod profiles;
pub mod progress;
pub mod scaling;
mod summary;
pub mod table;
pub mod tables;
pub mod terminal;
pub mod verdict;

pub use crate::units::{count, fmt_us};

/// A relative change in whole percent, `+12%`, `-5%`; a change that rounds to nothing is
/// `±0%`, never `-0%`.
pub fn fmt_delta(share_percent: f64) -> String {
    if share_percent.abs() < 0.5 {
        "±0%".into()
    } else {
        format!("{share_percent:+.0}%")
    }
}

/// Formats a count per second with thousands grouped by magnitude.
pub fn fmt_rate(r: f64) -> String {
    if r >= 100.0 {
        format!("{r:.0}")
    } else {
        format!("{r:.1}")
    }
}

pub fn fmt_bytes(b: f64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b;
    let mut i = 0;
    while v >= 1024.0 && i < UNITS.len() - 1 {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{v:.0} {}", UNITS[i])
    } else {
        format!("{v:.1} {}", UNITS[i])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_scale() {
        assert_eq!(fmt_us(612.0), "612 µs");
        assert_eq!(fmt_us(1_234.0), "1.23 ms");
        assert_eq!(fmt_us(44_100.0), "44.1 ms");
        assert_eq!(fmt_us(2_500_000.0), "2.50 s");
        assert_eq!(fmt_bytes(2048.0), "2.0 KiB");
        assert_eq!(fmt_rate(23_753.4), "23753");
    }
}

#[cfg(test)]
mod words {
    #[test]
    fn counts_and_deltas_read_as_people_write_them() {
        assert_eq!(super::count(1u64, "repetition"), "1 repetition");
        assert_eq!(super::count(3u64, "repetition"), "3 repetitions");
        assert_eq!(super::count(2u64, "entry"), "2 entries");
        assert_eq!(super::fmt_delta(-0.3), "±0%");
        assert_eq!(super::fmt_delta(0.2), "±0%");
        assert_eq!(super::fmt_delta(-5.4), "-5%");
        assert_eq!(super::fmt_delta(12.0), "+12%");
    }
}
