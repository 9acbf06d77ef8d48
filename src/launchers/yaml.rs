//! The little YAML the launchers write: maps in the order given (Kubernetes readers expect
//! `apiVersion` and `kind` first), lists, and scalars — quoted whenever a YAML 1.1 or 1.2
//! reader could take them for anything but a string (`on`, `yes`, `3`, `${{ … }}`, `a: b`).

use std::fmt::Write as _;

#[derive(Debug, Clone, PartialEq)]
pub enum Y {
    Map(Vec<(String, Y)>),
    List(Vec<Y>),
    Str(String),
    Int(i64),
    Bool(bool),
}

impl Y {
    pub fn str(s: impl Into<String>) -> Y {
        Y::Str(s.into())
    }

    pub fn map<K: Into<String>>(entries: impl IntoIterator<Item = (K, Y)>) -> Y {
        Y::Map(entries.into_iter().map(|(k, v)| (k.into(), v)).collect())
    }

    pub fn to_yaml(&self) -> String {
        let mut out = String::new();
        match self {
            Y::Map(m) if !m.is_empty() => map(m, 0, &mut out),
            Y::List(l) if !l.is_empty() => list(l, 0, &mut out),
            other => {
                let _ = writeln!(out, "{}", inline(other).unwrap_or_default());
            }
        }
        out
    }
}

/// Whether a YAML reader could take `c` for the end of a line or a scalar, or cannot read it
/// raw: control characters (CR, NUL, NEL U+0085 and DEL included), the Unicode line and
/// paragraph separators (U+2028, U+2029) that YAML 1.1 readers break lines at, and a BOM.
pub fn unsafe_char(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{2028}' | '\u{2029}' | '\u{FEFF}' | '\u{FFFE}' | '\u{FFFF}'
        )
}

/// Whether `s` can be written as a block scalar (`|`) that reads back exactly: lines ended
/// by `\n` alone, none holding a character [`unsafe_char`] names but a tab, and a first line
/// that does not start with a space (that would need an indentation indicator).
fn blockable(s: &str) -> bool {
    !s.starts_with([' ', '\t', '\n'])
        && !s.chars().any(|c| c != '\n' && c != '\t' && unsafe_char(c))
}

/// A scalar or an empty collection on one line; `None` for what needs lines of its own.
fn inline(y: &Y) -> Option<String> {
    match y {
        Y::Str(s) if s.contains('\n') && blockable(s) => None,
        Y::Str(s) => Some(scalar(s)),
        Y::Int(i) => Some(i.to_string()),
        Y::Bool(b) => Some(b.to_string()),
        Y::Map(m) if m.is_empty() => Some("{}".into()),
        Y::List(l) if l.is_empty() => Some("[]".into()),
        _ => None,
    }
}

/// A string plain when that is unambiguous, else double-quoted with JSON's escapes (a
/// subset of YAML's).
fn scalar(s: &str) -> String {
    const WORDS: [&str; 11] = [
        "y", "n", "yes", "no", "on", "off", "true", "false", "null", "~", "",
    ];
    let plain = s
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "-_./@ '()".contains(c))
        && !s.starts_with(['-', '.', '@', ' ', '\'', '('])
        && !s.ends_with(' ')
        && !WORDS.contains(&s.to_ascii_lowercase().as_str())
        && s.parse::<f64>().is_err()
        && !s.starts_with(|c: char| c.is_ascii_digit());
    if plain {
        s.to_string()
    } else {
        quoted(s)
    }
}

/// `s` double-quoted: `"` and `\\` escaped, and every character a reader could take for a
/// line's end or cannot read raw ([`unsafe_char`]) written as an escape, so nothing in `s`
/// can end the scalar.
fn quoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if unsafe_char(c) => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn pad(n: usize) -> String {
    " ".repeat(n)
}

/// A block scalar (`|`), each line indented to `indent`; `|-` when it does not end in a
/// newline, so the text reads back exactly.
fn block(s: &str, indent: usize, out: &mut String) {
    out.push_str(if s.ends_with('\n') { "|\n" } else { "|-\n" });
    for line in s.trim_end_matches('\n').split('\n') {
        if line.is_empty() {
            out.push('\n');
        } else {
            let _ = writeln!(out, "{}{line}", pad(indent));
        }
    }
}

fn value(v: &Y, indent: usize, out: &mut String) {
    match (v, inline(v)) {
        (_, Some(s)) => {
            let _ = writeln!(out, " {s}");
        }
        (Y::Str(s), None) => {
            out.push(' ');
            block(s, indent + 2, out);
        }
        (Y::Map(m), None) => {
            out.push('\n');
            map(m, indent + 2, out);
        }
        (Y::List(l), None) => {
            out.push('\n');
            list(l, indent + 2, out);
        }
        _ => unreachable!("scalars are inline"),
    }
}

fn map(m: &[(String, Y)], indent: usize, out: &mut String) {
    for (k, v) in m {
        let _ = write!(out, "{}{}:", pad(indent), scalar(k));
        value(v, indent, out);
    }
}

fn list(l: &[Y], indent: usize, out: &mut String) {
    for item in l {
        match (item, inline(item)) {
            (_, Some(s)) => {
                let _ = writeln!(out, "{}- {s}", pad(indent));
            }
            (Y::Map(m), None) => {
                // The first entry on the dash's line, the rest under it.
                let mut first = String::new();
                map(&m[..1], indent + 2, &mut first);
                let _ = write!(out, "{}- {}", pad(indent), &first[indent + 2..]);
                map(&m[1..], indent + 2, out);
            }
            (Y::List(inner), None) => {
                let _ = writeln!(out, "{}-", pad(indent));
                list(inner, indent + 2, out);
            }
            (Y::Str(s), None) => {
                let _ = write!(out, "{}- ", pad(indent));
                block(s, indent + 2, out);
            }
            _ => unreachable!("scalars are inline"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ambiguous_scalars_are_quoted() {
        assert_eq!(scalar("on"), "\"on\"");
        assert_eq!(scalar("Yes"), "\"Yes\"");
        assert_eq!(scalar("3"), "\"3\"");
        assert_eq!(scalar("1.5"), "\"1.5\"");
        assert_eq!(scalar("4Gi"), "\"4Gi\"");
        assert_eq!(scalar("${{ matrix.shard }}"), "\"${{ matrix.shard }}\"");
        assert_eq!(scalar("a: b"), "\"a: b\"");
        assert_eq!(scalar("-x"), "\"-x\"");
        assert_eq!(scalar(""), "\"\"");
        assert_eq!(scalar("batch/v1"), "batch/v1");
        assert_eq!(
            scalar("Keep the shard's results"),
            "Keep the shard's results"
        );
        assert_eq!(scalar("always()"), "always()");
        assert_eq!(scalar("'quoted'"), "\"'quoted'\"");
        assert_eq!(scalar("kubernetes.io/hostname"), "kubernetes.io/hostname");
    }

    /// Issue 68: no character of a value can end it — the line breaks YAML 1.1 readers
    /// know besides `\n` (CR, NEL, U+2028, U+2029), NUL, and a first line that starts with a
    /// space (a block scalar would need an indentation indicator).
    #[test]
    fn nothing_in_a_value_ends_it() {
        for evil in [
            "x\n\u{2028}permissions: write-all",
            "x\u{2029}permissions: write-all",
            "x\u{85}permissions: write-all",
            "x\r\npermissions: write-all",
            "x\0y",
            "x\u{7f}\u{feff}",
        ] {
            let y = Y::map([("run", Y::str(evil)), ("after", Y::str("ok"))]);
            let text = y.to_yaml();
            assert_eq!(text.lines().count(), 2, "{text:?}");
            assert!(
                !text.chars().any(|c| c != '\n' && unsafe_char(c)),
                "{text:?}"
            );
            assert!(text.ends_with("\nafter: ok\n"), "{text:?}");
        }
        assert_eq!(quoted("a\u{2028}b\0"), "\"a\\u2028b\\u0000\"");
        let y = Y::map([("run", Y::str("  indented\nsecond"))]);
        assert_eq!(y.to_yaml(), "run: \"  indented\\nsecond\"\n");
    }

    #[test]
    fn nesting_reads_as_written() {
        let y = Y::map([
            ("kind", Y::str("Job")),
            ("empty", Y::map::<&str>([])),
            (
                "steps",
                Y::List(vec![
                    Y::map([
                        ("uses", Y::str("a@v4")),
                        ("with", Y::map([("k", Y::Int(1))])),
                    ]),
                    Y::str("plain"),
                ]),
            ),
            ("run", Y::str("one\ntwo")),
            ("ok", Y::Bool(true)),
        ]);
        assert_eq!(
            y.to_yaml(),
            "kind: Job\nempty: {}\nsteps:\n  - uses: a@v4\n    with:\n      k: 1\n  - plain\nrun: |-\n  one\n  two\nok: true\n"
        );
    }
}
