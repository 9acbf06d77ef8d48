//! How a ratio is written for a reader: three significant digits near 1 (`0.905×`), whole
//! factors when large (`472×`), a divisor when small (`÷260`), and a range in one notation.

/// A ratio as a reader takes it in: three significant digits near 1 (`0.905×`, `1.34×`),
/// whole factors when large (`472×`), and a divisor when small (`÷260`).
pub fn fmt_ratio(x: f64) -> String {
    if x > 0.0 && x < 0.5 {
        fmt_divisor(x)
    } else {
        fmt_factor(x)
    }
}

/// The two ends of a range of ratios in one notation, as [`Ratio::span`](super::paired::Ratio::span) writes an
/// interval: divisors when the smaller is written as one (below 0.5) and neither end is above
/// 1 (`÷2.1`, `÷1.83`), else factors (`0.481×`, `0.547×`) — never `÷2.1 to 0.547×`.
pub fn fmt_range(lo: f64, hi: f64) -> (String, String) {
    if lo > 0.0 && lo < 0.5 && hi < 1.0 {
        (fmt_divisor(lo), fmt_divisor(hi))
    } else {
        (fmt_factor(lo), fmt_factor(hi))
    }
}

/// `x` as a factor whatever its size: `0.481×`, `1.34×`, `472×`.
pub(super) fn fmt_factor(x: f64) -> String {
    if !x.is_finite() || x <= 0.0 {
        return "—".into();
    }
    if x >= 2.0 {
        return format!("{}×", factor(x));
    }
    format!("{}×", three_digits(x))
}

/// `x` as a divisor whatever its size: `÷260`, `÷2.1`, `÷1.96`, `÷0.98`.
pub(super) fn fmt_divisor(x: f64) -> String {
    if !x.is_finite() || x <= 0.0 {
        return "—".into();
    }
    let d = 1.0 / x;
    if d >= 2.0 {
        format!("÷{}", factor(d))
    } else {
        format!("÷{}", three_digits(d))
    }
}

fn factor(x: f64) -> String {
    if x >= 10.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.1}")
    }
}

fn three_digits(x: f64) -> String {
    if x >= 1.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.3}")
    }
}

/// The ratio a written one reads as: `1.02×` is 1.02, `÷2.1` is 1/2.1.
pub(super) fn read_ratio(text: &str) -> Option<f64> {
    match text.strip_prefix('÷') {
        Some(d) => d.parse::<f64>().ok().map(|d| 1.0 / d),
        None => text.strip_suffix('×')?.parse().ok(),
    }
}
