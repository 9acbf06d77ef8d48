//! How numbers read: durations with a unit a reader takes in at a glance, counts with their
//! noun. Used by the report, and by the findings and errors that speak in the same words.

/// Formats microseconds with a unit a reader can take in at a glance.
pub fn fmt_us(us: f64) -> String {
    if us < 1_000.0 {
        format!("{us:.0} µs")
    } else if us < 10_000.0 {
        format!("{:.2} ms", us / 1e3)
    } else if us < 1_000_000.0 {
        format!("{:.1} ms", us / 1e3)
    } else {
        format!("{:.2} s", us / 1e6)
    }
}

/// A size limit as it was likely given: `64 MiB`, `1 KiB`, `1500 bytes` (exact, never `0 MiB`).
pub fn size(bytes: u64) -> String {
    for (unit, shift) in [("GiB", 30), ("MiB", 20), ("KiB", 10)] {
        if bytes >= 1 << shift && bytes % (1 << shift) == 0 {
            return format!("{} {unit}", bytes >> shift);
        }
    }
    count(bytes, "byte")
}

/// Seconds as a person says them for a run's length: `42 s`, `3 min 5 s`, `1 h 2 min`.
pub fn duration(secs: f64) -> String {
    let s = secs.max(0.0).round() as u64;
    match s {
        0..=59 => format!("{s} s"),
        60..=3599 if s % 60 == 0 => format!("{} min", s / 60),
        60..=3599 => format!("{} min {} s", s / 60, s % 60),
        _ => format!("{} h {} min", s / 3600, s % 3600 / 60),
    }
}

/// `1 repetition`, `3 repetitions`: a count with its noun, singular for one.
pub fn count(n: impl Into<u64>, noun: &str) -> String {
    let n = n.into();
    if n == 1 || noun == "series" {
        format!("{n} {noun}")
    } else if let Some(stem) = noun.strip_suffix('y') {
        format!("{n} {stem}ies")
    } else if ["s", "x", "ch", "sh"].iter().any(|end| noun.ends_with(end)) {
        format!("{n} {noun}es")
    } else {
        format!("{n} {noun}s")
    }
}

/// `s` as one word for a POSIX shell: as it is when plain, else single-quoted.
pub fn shell_word(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:%".contains(c))
    {
        return s.to_string();
    }
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// At most the first `n` characters of `s`, never cut inside a character: how a commit id
/// (which a file may make anything) is shortened.
pub fn prefix(s: &str, n: usize) -> &str {
    match s.char_indices().nth(n) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

/// `s` with every control character written as its escape (`\u{1b}`, `\n`): a name from a
/// file (a plan's, a contender's) printed on a terminal cannot move the cursor, set the
/// window's title or the clipboard (OSC 52), clear the screen, or forge a table's row.
pub fn printable(s: &str) -> std::borrow::Cow<'_, str> {
    match s.chars().any(char::is_control) {
        false => std::borrow::Cow::Borrowed(s),
        true => s
            .chars()
            .map(|c| match c.is_control() {
                true => c.escape_default().collect::<String>(),
                false => c.to_string(),
            })
            .collect::<String>()
            .into(),
    }
}
