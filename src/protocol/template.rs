//! Requests that vary: a tiny template language for bodies, paths and gRPC JSON.
//!
//! `{seq}` is the request number, `{rand:A..B}` a number in `A..B` (half-open), `{line:FILE}`
//! cycles through the lines of a file, `{b64:…}` base64-encodes what it encloses (proto3
//! JSON writes `bytes` fields in base64, e.g. etcd keys), and `{fill:N:…}` repeats what it
//! encloses to exactly N bytes (keys and values of a given size). `{edge:A..B}` cycles through
//! the edges of the half-open range: A, B−1 (the first and last valid values), B (one past
//! the end) and A−1 — the requests a compat suite should always include. Any other `{` is literal, so JSON
//! bodies need no escaping. Random values are a pure function of `(seed, request number,
//! placeholder)`, so a run with the same `--seed` sends the same requests in any thread order.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;

use base64::Engine as _;

use crate::rng::mix;

#[derive(Debug, Clone, PartialEq)]
pub struct Template {
    parts: Vec<Part>,
}

#[derive(Debug, Clone, PartialEq)]
enum Part {
    Lit(String),
    Seq,
    Rand {
        lo: i64,
        hi: i64,
        slot: u64,
    },
    Line(Arc<[String]>),
    B64(Template),
    Fill {
        len: usize,
        inner: Template,
    },
    Edge {
        lo: i64,
        hi: i64,
    },
    /// `{env:NAME}`: the variable's value, read when the template is parsed. Rendered as the
    /// placeholder again by [`Template::render_redacted`], so it is never stored.
    Env {
        name: String,
        value: String,
    },
}

#[derive(Debug, thiserror::Error, PartialEq)]
#[error("template `{text}`, column {column}: {reason}")]
pub struct TemplateError {
    pub text: String,
    pub column: usize,
    pub reason: String,
}

/// The most bytes one rendered template may have (a request body, path or message), so
/// `{fill:99999999999999:x}` is an error before anything is allocated. Raised for a whole
/// process by `--max-body`.
static MAX_LEN: AtomicUsize = AtomicUsize::new(DEFAULT_MAX_LEN);
pub const DEFAULT_MAX_LEN: usize = 64 << 20;

/// Sets the limit on a rendered template's size (see [`max_len`]).
pub fn set_max_len(bytes: usize) {
    MAX_LEN.store(bytes, Relaxed);
}

pub fn max_len() -> usize {
    MAX_LEN.load(Relaxed)
}

impl Template {
    /// Parses `text`; `{line:FILE}` paths are read relative to the current directory. A
    /// template that could render to more than [`max_len`] bytes is an error.
    pub fn parse(text: &str) -> Result<Template, TemplateError> {
        let mut slot = 0;
        let (t, _) = parse_until(text, 0, None, &mut slot, text)?;
        let (bound, limit) = (t.size_bound(), max_len());
        if bound > limit as u64 {
            return Err(TemplateError {
                text: shorten(text),
                column: 1,
                reason: format!(
                    "it renders to up to {bound} bytes, more than the {} limit \
                     (raise it with --max-body SIZE)",
                    crate::units::size(limit as u64)
                ),
            });
        }
        Ok(t)
    }

    /// The most bytes this template can render to (saturating).
    pub fn size_bound(&self) -> u64 {
        self.parts
            .iter()
            .map(|p| match p {
                Part::Lit(s) => s.len() as u64,
                Part::Env { value, .. } => value.len() as u64,
                Part::Seq | Part::Rand { .. } | Part::Edge { .. } => 20,
                Part::Line(lines) => lines.iter().map(|l| l.len() as u64).max().unwrap_or(0),
                Part::B64(inner) => inner.size_bound().saturating_mul(4) / 3 + 4,
                Part::Fill { len, .. } => *len as u64,
            })
            .fold(0u64, u64::saturating_add)
    }

    /// A template without placeholders: the same bytes every time, so they can be encoded once.
    pub fn is_static(&self) -> bool {
        self.parts.iter().all(|p| matches!(p, Part::Lit(_)))
    }

    pub fn render(&self, seq: u64, seed: u64, out: &mut String) {
        self.render_as(seq, seed, false, out);
    }

    /// As [`Template::render`], but `{env:NAME}` stays a placeholder (and so does a
    /// `{b64:…}` or `{fill:…}` around one): for text that is stored (generated compat cases)
    /// and parsed again when it is sent.
    pub fn render_redacted(&self, seq: u64, seed: u64) -> String {
        let mut s = String::new();
        self.render_as(seq, seed, true, &mut s);
        s
    }

    fn has_env(&self) -> bool {
        self.parts.iter().any(|p| match p {
            Part::Env { .. } => true,
            Part::B64(t) | Part::Fill { inner: t, .. } => t.has_env(),
            _ => false,
        })
    }

    fn render_as(&self, seq: u64, seed: u64, redact: bool, out: &mut String) {
        for part in &self.parts {
            match part {
                Part::Lit(s) => out.push_str(s),
                Part::Env { name, .. } if redact => {
                    out.push_str("{env:");
                    out.push_str(name);
                    out.push('}');
                }
                Part::Env { value, .. } => out.push_str(value),
                Part::B64(inner) if redact && inner.has_env() => {
                    out.push_str("{b64:");
                    inner.render_as(seq, seed, true, out);
                    out.push('}');
                }
                Part::Fill { len, inner } if redact && inner.has_env() => {
                    out.push_str(&format!("{{fill:{len}:"));
                    inner.render_as(seq, seed, true, out);
                    out.push('}');
                }
                Part::Seq => push_int(out, seq as i128),
                Part::Rand { lo, hi, slot } => {
                    let span = (*hi as i128 - *lo as i128) as u128;
                    let r = mix(seed ^ mix(seq) ^ mix(slot.wrapping_add(0x5bd1_e995))) as u128;
                    push_int(out, *lo as i128 + (r % span) as i128);
                }
                Part::Line(lines) => out.push_str(&lines[(seq % lines.len() as u64) as usize]),
                Part::B64(inner) => {
                    let mut s = String::new();
                    inner.render(seq, seed, &mut s);
                    base64::engine::general_purpose::STANDARD.encode_string(s, out);
                }
                Part::Edge { lo, hi } => {
                    let edges = [*lo as i128, *hi as i128 - 1, *hi as i128, *lo as i128 - 1];
                    push_int(out, edges[(seq % 4) as usize]);
                }
                Part::Fill { len, inner } => {
                    let mut s = String::new();
                    inner.render(seq, seed, &mut s);
                    fill_to(&s, *len, out);
                }
            }
        }
    }

    pub fn render_string(&self, seq: u64, seed: u64) -> String {
        let mut s = String::new();
        self.render(seq, seed, &mut s);
        s
    }
}

/// Appends `unit` repeated and cut to exactly `len` bytes (an empty unit fills with `x`;
/// a cut never splits a character, padding with `x` instead).
fn fill_to(unit: &str, len: usize, out: &mut String) {
    let unit = if unit.is_empty() { "x" } else { unit };
    let mut n = 0;
    'outer: while n < len {
        for c in unit.chars() {
            if n + c.len_utf8() > len {
                break 'outer;
            }
            out.push(c);
            n += c.len_utf8();
        }
    }
    out.extend(std::iter::repeat_n('x', len - n));
}

fn push_int(out: &mut String, v: i128) {
    use std::fmt::Write as _;
    let _ = write!(out, "{v}");
}

/// The placeholders whose argument runs to the next `}`: (keyword, how it opens).
const SIMPLE: [(&str, &str); 4] = [
    ("rand", "{rand:"),
    ("edge", "{edge:"),
    ("line", "{line:"),
    ("env", "{env:"),
];

/// The part a [`SIMPLE`] placeholder stands for, from its argument; a `{rand:…}` takes the
/// next random slot.
fn simple(kw: &str, spec: &str, slot: &mut u64) -> Result<Part, String> {
    Ok(match kw {
        "rand" => {
            let (lo, hi) = parse_range(spec)?;
            *slot += 1;
            Part::Rand {
                lo,
                hi,
                slot: *slot - 1,
            }
        }
        "edge" => {
            let (lo, hi) = parse_range(spec)?;
            Part::Edge { lo, hi }
        }
        "line" => Part::Line(read_lines(Path::new(spec))?),
        _ => Part::Env {
            name: spec.to_string(),
            value: std::env::var(spec).map_err(|_| format!("{{env:{spec}}} is not set"))?,
        },
    })
}

/// Parses from byte `start` until the end (or, when `nested`, a closing `}`), returning the
/// template and the index after it.
fn parse_until(
    text: &str,
    start: usize,
    nested: Option<&str>,
    slot: &mut u64,
    whole: &str,
) -> Result<(Template, usize), TemplateError> {
    let err = |at: usize, reason: String| TemplateError {
        text: whole.to_string(),
        column: at + 1,
        reason,
    };
    let mut parts = Vec::new();
    let mut lit = String::new();
    let mut i = start;
    let bytes = text.as_bytes();
    while i < bytes.len() {
        let rest = &text[i..];
        if nested.is_some() && rest.starts_with('}') {
            flush(&mut lit, &mut parts);
            return Ok((Template { parts }, i + 1));
        }
        if rest.starts_with("{seq}") {
            flush(&mut lit, &mut parts);
            parts.push(Part::Seq);
            i += 5;
        } else if let Some((kw, spec)) = SIMPLE
            .iter()
            .find_map(|(kw, open)| Some((*kw, rest.strip_prefix(open)?)))
        {
            let end = spec
                .find('}')
                .ok_or_else(|| err(i, format!("`{{{kw}:` is not closed with `}}`")))?;
            let part = simple(kw, &spec[..end], slot).map_err(|r| err(i, r))?;
            flush(&mut lit, &mut parts);
            parts.push(part);
            i += kw.len() + 2 + end + 1;
        } else if rest.starts_with("{b64:") {
            let (inner, next) = parse_until(text, i + 5, Some("{b64:"), slot, whole)?;
            flush(&mut lit, &mut parts);
            parts.push(Part::B64(inner));
            i = next;
        } else if let Some(spec) = rest.strip_prefix("{fill:") {
            let digits = spec
                .find(|c: char| !c.is_ascii_digit())
                .unwrap_or(spec.len());
            let len: usize = spec[..digits]
                .parse()
                .ok()
                .filter(|_| spec[digits..].starts_with(':'))
                .ok_or_else(|| err(i, "write `{fill:N:text}` with N a number of bytes".into()))?;
            let body = i + "{fill:".len() + digits + 1;
            let (inner, next) = parse_until(text, body, Some("{fill:"), slot, whole)?;
            flush(&mut lit, &mut parts);
            parts.push(Part::Fill { len, inner });
            i = next;
        } else {
            let c = rest.chars().next().expect("non-empty");
            lit.push(c);
            i += c.len_utf8();
        }
    }
    if let Some(opener) = nested {
        return Err(err(start, format!("`{opener}` is not closed with `}}`")));
    }
    flush(&mut lit, &mut parts);
    Ok((Template { parts }, i))
}

/// The placeholders with an argument that templates know (`{rand:0..9}`, `{env:TOKEN}`, …).
pub const KEYWORDS: [&str; 6] = ["rand", "line", "b64", "fill", "edge", "env"];

/// Words written like a placeholder with an argument — `{word:` — that no layer fills: a
/// typo such as `{rnd:1..5}` would otherwise be sent as it is.
pub fn unknown_keywords(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find('{') {
        rest = &rest[i + 1..];
        let word: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        let after = &rest[word.len()..];
        let named = !word.is_empty() && !word.starts_with(|c: char| c.is_ascii_digit());
        if named && after.starts_with(':') && !KEYWORDS.contains(&word.as_str()) {
            // `{port:…}` and `{case}` belong to other layers (contenders, compat).
            if word != "port" && !out.contains(&word) {
                out.push(word);
            }
        }
    }
    out
}

/// A template's text for an error message, cut to a readable length.
fn shorten(text: &str) -> String {
    match text.char_indices().nth(80) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_string(),
    }
}

fn flush(lit: &mut String, parts: &mut Vec<Part>) {
    if !lit.is_empty() {
        parts.push(Part::Lit(std::mem::take(lit)));
    }
}

fn parse_range(spec: &str) -> Result<(i64, i64), String> {
    let (a, b) = spec
        .split_once("..")
        .ok_or_else(|| format!("`{spec}` is not a range like `0..1000`"))?;
    let num = |s: &str| {
        s.trim()
            .parse::<i64>()
            .map_err(|_| format!("`{s}` is not a whole number"))
    };
    let (lo, hi) = (num(a)?, num(b)?);
    if hi <= lo {
        return Err(format!(
            "the range `{spec}` is empty (it is half-open: `{lo}..{hi}`)"
        ));
    }
    Ok((lo, hi))
}

fn read_lines(path: &Path) -> Result<Arc<[String]>, String> {
    let text = crate::sys::read_bounded(path, crate::sys::DATA_LIMIT)
        .map_err(|e| format!("cannot read `{}`: {e}", path.display()))?;
    let lines: Vec<String> = text
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect();
    if lines.is_empty() {
        return Err(format!("`{}` has no non-empty lines", path.display()));
    }
    Ok(lines.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_braces_are_literal_and_static() {
        let t = Template::parse(r#"{"key":"a","n":{"x":1}}"#).unwrap();
        assert!(t.is_static());
        assert_eq!(t.render_string(7, 1), r#"{"key":"a","n":{"x":1}}"#);
    }

    #[test]
    fn seq_rand_and_b64_render() {
        let t = Template::parse(r#"{"key":"{b64:k-{seq}}","v":{rand:10..20}}"#).unwrap();
        assert!(!t.is_static());
        let s = t.render_string(3, 42);
        assert!(s.starts_with(r#"{"key":"ay0z","v":"#), "{s}");
        let v: i64 = s[s.rfind(':').unwrap() + 1..s.len() - 1].parse().unwrap();
        assert!((10..20).contains(&v));
    }

    #[test]
    fn edges_cycle_through_the_ends_of_a_range() {
        let t = Template::parse("h={edge:0..800000}").unwrap();
        let got: Vec<String> = (0..5).map(|i| t.render_string(i, 0)).collect();
        assert_eq!(got, ["h=0", "h=799999", "h=800000", "h=-1", "h=0"]);
        assert!(Template::parse("{edge:5..5}").is_err());
    }

    #[test]
    fn env_values_are_sent_but_never_stored() {
        std::env::set_var("BAKEOFF_TEMPLATE_TEST_TOKEN", "s3cret");
        let t = Template::parse(r#"{"t": "{env:BAKEOFF_TEMPLATE_TEST_TOKEN}", "b": "{b64:{env:BAKEOFF_TEMPLATE_TEST_TOKEN}}"}"#).unwrap();
        assert_eq!(t.render_string(0, 0), r#"{"t": "s3cret", "b": "czNjcmV0"}"#);
        let stored = t.render_redacted(0, 0);
        assert_eq!(
            stored,
            r#"{"t": "{env:BAKEOFF_TEMPLATE_TEST_TOKEN}", "b": "{b64:{env:BAKEOFF_TEMPLATE_TEST_TOKEN}}"}"#
        );
        assert_eq!(
            Template::parse(&stored).unwrap().render_string(0, 0),
            t.render_string(0, 0)
        );
        let e = Template::parse("{env:BAKEOFF_SURELY_UNSET_VAR}")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("{env:BAKEOFF_SURELY_UNSET_VAR} is not set"),
            "{e}"
        );
        assert_eq!(
            unknown_keywords(r#"{"a": "{rnd:1..5}", "b": {rand:1..2}, "c": "{port:x}"}"#),
            ["rnd"]
        );
        assert!(unknown_keywords(r#"{"json": {"nested": 1}}"#).is_empty());
    }

    #[test]
    fn fill_makes_exact_sizes() {
        let t = Template::parse("{fill:10:k-{seq}-}").unwrap();
        assert_eq!(t.render_string(7, 0), "k-7-k-7-k-");
        let t = Template::parse("{b64:{fill:3:}}").unwrap();
        assert_eq!(t.render_string(0, 0), "eHh4");
        // Never splits a character: é is two bytes.
        assert_eq!(
            Template::parse("{fill:3:é}").unwrap().render_string(0, 0),
            "éx"
        );
        assert!(Template::parse("{fill:x:a}").is_err());
        // Bounded before anything is allocated, with the limit named.
        let e = Template::parse("{fill:99999999999999:x}")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("more than the 64 MiB limit") && e.contains("--max-body"),
            "{e}"
        );
        let e = Template::parse("{b64:{fill:60000000:x}}")
            .unwrap_err()
            .to_string();
        assert!(e.contains("renders to up to 80000004 bytes"), "{e}");
        assert_eq!(Template::parse("a{seq}{fill:5:}").unwrap().size_bound(), 26);
        assert!(Template::parse("{fill:4:abc")
            .unwrap_err()
            .reason
            .contains("{fill:"));
    }

    #[test]
    fn random_values_are_reproducible_and_cover_the_range() {
        let t = Template::parse("{rand:0..4}").unwrap();
        let run = |seed| {
            (0..200)
                .map(|i| t.render_string(i, seed))
                .collect::<Vec<_>>()
        };
        assert_eq!(run(1), run(1));
        assert_ne!(run(1), run(2));
        let mut seen: Vec<String> = run(1);
        seen.sort();
        seen.dedup();
        assert_eq!(seen, ["0", "1", "2", "3"]);
    }

    #[test]
    fn two_rand_placeholders_are_independent() {
        let t = Template::parse("{rand:0..1000000} {rand:0..1000000}").unwrap();
        let s = t.render_string(5, 9);
        let (a, b) = s.split_once(' ').unwrap();
        assert_ne!(a, b);
    }

    #[test]
    fn lines_cycle_in_order() {
        let dir = std::env::temp_dir().join(format!("bakeoff-tpl-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("keys.txt");
        std::fs::write(&f, "alpha\nbeta\n\ngamma\n").unwrap();
        let t = Template::parse(&format!("/k/{{line:{}}}", f.display())).unwrap();
        let got: Vec<String> = (0..4).map(|i| t.render_string(i, 0)).collect();
        assert_eq!(got, ["/k/alpha", "/k/beta", "/k/gamma", "/k/alpha"]);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn errors_name_the_column_and_reason() {
        let e = Template::parse("ab{rand:5..1}").unwrap_err();
        assert_eq!(e.column, 3);
        assert!(e.reason.contains("empty"), "{e}");
        let e = Template::parse("{line:/nonexistent/x}").unwrap_err();
        assert!(e.reason.contains("/nonexistent/x"), "{e}");
        let e = Template::parse("x{b64:abc").unwrap_err();
        assert!(e.reason.contains("not closed"), "{e}");
        assert!(Template::parse("{rand:a..3}").is_err());
    }
}
