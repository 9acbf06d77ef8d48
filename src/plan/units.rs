//! How a plan writes durations, sizes, shares and `{env:…}`.

use super::*;

/// `2%` → 0.02; `None` for anything that is not a percentage of 0 or more.
pub fn parse_share(s: &str) -> Option<f64> {
    let v: f64 = s.trim().strip_suffix('%')?.trim().parse().ok()?;
    (v.is_finite() && v >= 0.0).then_some(v / 100.0)
}

/// Parses `250ms`, `10s`, `2m`, `1h`, `1.5s` or a bare number of seconds.
/// `64MiB`, `512KiB`, `1GiB`, `1000000` → bytes.
pub fn parse_size(s: &str) -> Result<usize, String> {
    let t = s.trim();
    let (num, unit) = t.split_at(t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len()));
    let n: usize = num
        .parse()
        .map_err(|_| format!("`{s}` is not a size like 64MiB"))?;
    let mult: usize = match unit.trim() {
        "" | "B" => 1,
        "KiB" | "K" | "k" => 1 << 10,
        "MiB" | "M" => 1 << 20,
        "GiB" | "G" => 1 << 30,
        other => return Err(format!("`{other}` is not a unit (B, KiB, MiB, GiB)")),
    };
    n.checked_mul(mult).filter(|&b| b > 0).ok_or_else(|| {
        format!(
            "`{s}` is not a size between 1 byte and {} bytes",
            usize::MAX
        )
    })
}

/// Replaces each `{env:NAME}` in `text` with that variable's value (for header values and TLS
/// settings; templates have their own `{env:…}`, which they keep out of what is stored).
pub fn fill_env(text: &str) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("{env:") {
        out.push_str(&rest[..i]);
        let after = &rest[i + 5..];
        let end = after.find('}').ok_or("`{env:` is not closed with `}`")?;
        let name = &after[..end];
        let value = std::env::var(name).map_err(|_| format!("{{env:{name}}} is not set"))?;
        out.push_str(&value);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// No duration bakeoff takes (a run, a timeout, a slice) needs more.
pub const MAX_DURATION: Duration = Duration::from_secs(30 * 86_400);

pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    // `1e9ms`: the exponent would be read as the unit `e9ms`.
    let mut rest = unit.chars();
    if matches!(rest.next(), Some('e' | 'E'))
        && rest
            .next()
            .is_some_and(|c| c.is_ascii_digit() || c == '-' || c == '+')
    {
        return Err(format!(
            "`{s}`: write the number without an exponent, like 500ms, 10s or 2m"
        ));
    }
    let n: f64 = num
        .parse()
        .map_err(|_| format!("`{s}` is not a duration like 500ms, 10s or 2m"))?;
    let scale = match unit.trim() {
        "" | "s" => 1.0,
        "ms" => 1e-3,
        "us" | "µs" => 1e-6,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        "d" => {
            return Err(format!(
                "`{s}`: days are not a unit here; write hours (a day is 24h)"
            ))
        }
        u => return Err(format!("`{u}` is not a time unit (use us, ms, s, m or h)")),
    };
    let d = Duration::try_from_secs_f64(n * scale).map_err(|_| format!("`{s}` is out of range"))?;
    if d > MAX_DURATION {
        return Err(format!("`{s}` is longer than 30 days"));
    }
    Ok(d)
}
