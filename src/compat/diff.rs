//! A field-level diff of two answers in canonical JSON, with the plan's normalizers: ignored
//! paths, repeated fields compared as multisets, and fields that may be byte-reversed. Each
//! difference is named (missing field, extra field, value, count, byte order, shape) and
//! carries the path where it is, with array indices kept (`kvs[2].value`) and as a pattern
//! (`kvs[].value`) for grouping, ignoring and noise.

use base64::Engine as _;
use serde::Serialize;
use serde_json::Value;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    MissingField,
    ExtraField,
    ValueDiffers,
    CountDiffers,
    ByteOrderReversed,
    ShapeDiffers,
}

impl Kind {
    pub fn describe(self) -> &'static str {
        match self {
            Kind::MissingField => "missing field",
            Kind::ExtraField => "extra field",
            Kind::ValueDiffers => "value differs",
            Kind::CountDiffers => "count of repeated items differs",
            Kind::ByteOrderReversed => "byte order reversed",
            Kind::ShapeDiffers => "type/shape differs",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FieldDiff {
    pub path: String,
    pub pattern: String,
    pub kind: Kind,
    pub base: Option<Value>,
    pub other: Option<Value>,
    /// Byte order reversed on a field the plan declares tolerant: shown, not counted.
    pub tolerated: bool,
}

impl FieldDiff {
    /// One line, e.g. `header.revision: value differs: 7 → 9`.
    pub fn line(&self) -> String {
        let show = |v: &Option<Value>| v.as_ref().map_or("(absent)".into(), |v| short(v, 60));
        format!(
            "{}: {}: {} → {}",
            if self.path.is_empty() {
                "(answer)"
            } else {
                &self.path
            },
            self.kind.describe(),
            show(&self.base),
            show(&self.other)
        )
    }
}

fn short(v: &Value, max: usize) -> String {
    let s = v.to_string();
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s,
    }
}

#[derive(Debug, Clone, Copy, Default)]
pub struct Rules<'a> {
    pub ignore: &'a [String],
    pub unordered: &'a [String],
    pub byte_order: &'a [String],
}

/// Whether `pattern` is `rule` or lies below it (`header` covers `header.revision`).
pub fn covered(pattern: &str, rule: &str) -> bool {
    pattern == rule
        || pattern
            .strip_prefix(rule)
            .is_some_and(|rest| rest.starts_with('.') || rest.starts_with('['))
}

/// Differences from `base` to `other`.
pub fn diff(base: &Value, other: &Value, rules: Rules) -> Vec<FieldDiff> {
    let mut out = Vec::new();
    walk(base, other, String::new(), String::new(), rules, &mut out);
    out
}

fn join(prefix: &str, key: &str) -> String {
    if prefix.is_empty() {
        key.to_string()
    } else {
        format!("{prefix}.{key}")
    }
}

fn walk(
    a: &Value,
    b: &Value,
    path: String,
    pattern: String,
    rules: Rules,
    out: &mut Vec<FieldDiff>,
) {
    if rules.ignore.iter().any(|r| covered(&pattern, r)) {
        return;
    }
    let push =
        |out: &mut Vec<FieldDiff>, kind, base: Option<&Value>, other: Option<&Value>, tolerated| {
            out.push(FieldDiff {
                path: path.clone(),
                pattern: pattern.clone(),
                kind,
                base: base.cloned(),
                other: other.cloned(),
                tolerated,
            })
        };
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
            keys.sort();
            keys.dedup();
            for k in keys {
                let (p, q) = (join(&path, k), join(&pattern, k));
                if rules.ignore.iter().any(|r| covered(&q, r)) {
                    continue;
                }
                match (x.get(k), y.get(k)) {
                    (Some(u), Some(v)) => walk(u, v, p, q, rules, out),
                    (Some(u), None) => out.push(FieldDiff {
                        path: p,
                        pattern: q,
                        kind: Kind::MissingField,
                        base: Some(u.clone()),
                        other: None,
                        tolerated: false,
                    }),
                    (None, Some(v)) => out.push(FieldDiff {
                        path: p,
                        pattern: q,
                        kind: Kind::ExtraField,
                        base: None,
                        other: Some(v.clone()),
                        tolerated: false,
                    }),
                    (None, None) => {}
                }
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            let (mut x, mut y) = (x.clone(), y.clone());
            if rules.unordered.iter().any(|r| r == &pattern) {
                x.sort_by_key(|v| v.to_string());
                y.sort_by_key(|v| v.to_string());
            }
            if x.len() != y.len() {
                push(
                    out,
                    Kind::CountDiffers,
                    Some(&Value::from(x.len())),
                    Some(&Value::from(y.len())),
                    false,
                );
            }
            for (i, (u, v)) in x.iter().zip(&y).enumerate() {
                walk(
                    u,
                    v,
                    format!("{path}[{i}]"),
                    format!("{pattern}[]"),
                    rules,
                    out,
                );
            }
        }
        (Value::String(x), Value::String(y)) if x != y => {
            if reversed_bytes(x, y) {
                let tolerated = rules.byte_order.iter().any(|r| covered(&pattern, r));
                push(out, Kind::ByteOrderReversed, Some(a), Some(b), tolerated);
            } else {
                push(out, Kind::ValueDiffers, Some(a), Some(b), false);
            }
        }
        _ if a == b => {}
        _ if same_shape(a, b) => push(out, Kind::ValueDiffers, Some(a), Some(b), false),
        _ => push(out, Kind::ShapeDiffers, Some(a), Some(b), false),
    }
}

fn same_shape(a: &Value, b: &Value) -> bool {
    matches!(
        (a, b),
        (Value::Null, Value::Null)
            | (Value::Bool(_), Value::Bool(_))
            | (Value::Number(_), Value::Number(_))
            | (Value::String(_), Value::String(_))
    )
}

/// Two encodings of byte strings (hex or base64, as JSON writes hashes and proto `bytes`)
/// where one is the other's bytes reversed.
fn reversed_bytes(x: &str, y: &str) -> bool {
    let decode = |s: &str| -> Option<Vec<u8>> {
        let hex = s.len() % 2 == 0 && s.len() >= 4 && s.bytes().all(|c| c.is_ascii_hexdigit());
        if hex {
            return (0..s.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&s[i..i + 2], 16).ok())
                .collect();
        }
        base64::engine::general_purpose::STANDARD.decode(s).ok()
    };
    match (decode(x), decode(y)) {
        (Some(a), Some(mut b)) if a.len() >= 2 && a.len() == b.len() => {
            b.reverse();
            a == b
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn kinds(a: Value, b: Value, rules: Rules) -> Vec<(String, Kind)> {
        diff(&a, &b, rules)
            .into_iter()
            .map(|d| (d.path, d.kind))
            .collect()
    }

    #[test]
    fn each_kind_of_difference_is_named_with_its_path() {
        let a = json!({"header": {"revision": "7"}, "kvs": [{"key": "a2V5", "v": 1}], "count": "1", "more": false});
        let b = json!({"header": {"revision": "9", "extra": 1}, "kvs": [{"key": "eWVr", "v": 1}, {"key": "x"}], "more": {}});
        let got = kinds(a, b, Rules::default());
        assert_eq!(
            got,
            [
                ("count".into(), Kind::MissingField),
                ("header.extra".into(), Kind::ExtraField),
                ("header.revision".into(), Kind::ValueDiffers),
                ("kvs".into(), Kind::CountDiffers),
                ("kvs[0].key".into(), Kind::ByteOrderReversed),
                ("more".into(), Kind::ShapeDiffers),
            ]
        );
    }

    #[test]
    fn normalizers_ignore_sort_and_tolerate() {
        let a = json!({"header": {"member_id": "1"}, "members": [{"n": "a"}, {"n": "b"}], "hash": "0a0b0c"});
        let b = json!({"header": {"member_id": "2"}, "members": [{"n": "b"}, {"n": "a"}], "hash": "0c0b0a"});
        let ignore = vec!["header.member_id".to_string()];
        let unordered = vec!["members".to_string()];
        let byte_order = vec!["hash".to_string()];
        let d = diff(
            &a,
            &b,
            Rules {
                ignore: &ignore,
                unordered: &unordered,
                byte_order: &byte_order,
            },
        );
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].kind, Kind::ByteOrderReversed);
        assert!(d[0].tolerated);
        assert_eq!(d[0].pattern, "hash");
        assert!(covered("kvs[].value", "kvs"));
        assert!(!covered("kvsx", "kvs"));
        assert!(d[0].line().contains("byte order reversed"));
    }
}
