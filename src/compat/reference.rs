//! Checking answers against an outside reference that may speak another protocol: a field of
//! the contender's answer and a field of the reference's answer, each through its transforms
//! (hex, base64, reverse, …), must be equal.

use base64::Engine as _;
use serde_json::Value;

use crate::plan::{FieldMap, Transform};

/// A value on its way through a transform chain.
#[derive(Debug, Clone, PartialEq)]
pub enum Val {
    Json(Value),
    Bytes(Vec<u8>),
}

impl Val {
    pub fn show(&self) -> String {
        match self {
            Val::Json(v) => v.to_string(),
            Val::Bytes(b) => format!("0x{}", hex(b)),
        }
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

pub use crate::plan::at_path;

/// Fills `{case.PATH}` and `{case.PATH|transform|…}` in a reference's request with fields
/// of the case (its request read as JSON), through the same transforms as `fields`: a gRPC
/// case `{"height": 5}` becomes the JSON-RPC params `["{case.height|string}", 1]` →
/// `["5", 1]`. A string goes in as its text (JSON-escaped, so it can sit inside quotes), a
/// number or object as its JSON; bytes need `to_hex` or `to_base64` to be written.
pub fn fill_case_fields(template: &str, case: &str) -> Result<String, String> {
    const OPEN: &str = "{case.";
    if !template.contains(OPEN) {
        return Ok(template.to_string());
    }
    let json: Value = serde_json::from_str(case)
        .map_err(|e| format!("`{{case.…}}` reads the case as JSON, and `{case}` is not: {e}"))?;
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(i) = rest.find(OPEN) {
        out.push_str(&rest[..i]);
        let after = &rest[i + OPEN.len()..];
        let end = after
            .find('}')
            .ok_or_else(|| format!("`{OPEN}` is not closed in `{template}`"))?;
        let mut parts = after[..end].split('|');
        let path = parts.next().unwrap_or_default();
        let chain = parts
            .map(|t| {
                Transform::parse(t.trim()).ok_or_else(|| {
                    format!("`{t}` is not a transform (hex, base64, reverse, to_hex, to_base64, string)")
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let v = at_path(&json, path)
            .cloned()
            .ok_or_else(|| format!("the case `{case}` has no `{path}`"))?;
        match apply(Val::Json(v), &chain)? {
            Val::Json(Value::String(s)) => {
                let quoted = serde_json::to_string(&s).unwrap_or_default();
                out.push_str(&quoted[1..quoted.len() - 1]);
            }
            Val::Json(other) => out.push_str(&other.to_string()),
            Val::Bytes(_) => {
                return Err(format!(
                    "`{{case.{path}}}` ends in bytes: add `|to_hex` or `|to_base64` to write them"
                ))
            }
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Runs a transform chain; an error names the step that did not apply.
pub fn apply(v: Val, chain: &[Transform]) -> Result<Val, String> {
    let b64 = base64::engine::general_purpose::STANDARD;
    let mut v = v;
    for t in chain {
        v = match (t, v) {
            (Transform::Hex, Val::Json(Value::String(s))) => {
                let s = s.trim_start_matches("0x");
                if s.len() % 2 != 0 {
                    return Err(format!("`{s}` is not hex"));
                }
                Val::Bytes(
                    (0..s.len())
                        .step_by(2)
                        .map(|i| u8::from_str_radix(&s[i..i + 2], 16))
                        .collect::<Result<_, _>>()
                        .map_err(|_| format!("`{s}` is not hex"))?,
                )
            }
            (Transform::Base64, Val::Json(Value::String(s))) => {
                Val::Bytes(b64.decode(&s).map_err(|_| format!("`{s}` is not base64"))?)
            }
            (Transform::Reverse, Val::Bytes(mut b)) => {
                b.reverse();
                Val::Bytes(b)
            }
            (Transform::Reverse, Val::Json(Value::Array(mut a))) => {
                a.reverse();
                Val::Json(Value::Array(a))
            }
            (Transform::Reverse, Val::Json(Value::String(s))) => {
                Val::Json(Value::String(s.chars().rev().collect()))
            }
            (Transform::ToHex, Val::Bytes(b)) => Val::Json(Value::String(hex(&b))),
            (Transform::ToBase64, Val::Bytes(b)) => Val::Json(Value::String(b64.encode(b))),
            (Transform::String, Val::Json(Value::String(s))) => Val::Json(Value::String(s)),
            (Transform::String, Val::Json(other)) => Val::Json(Value::String(other.to_string())),
            (Transform::String, Val::Bytes(b)) => {
                Val::Json(Value::String(String::from_utf8_lossy(&b).into_owned()))
            }
            (t, v) => return Err(format!("{t:?} does not apply to {}", v.show())),
        };
    }
    Ok(v)
}

/// Compares one mapped field; `Err` describes the mismatch.
pub fn check(map: &FieldMap, ours: &Value, theirs: &Value) -> Result<(), String> {
    let get = |v: &Value, p: &str, who: &str| {
        at_path(v, p)
            .cloned()
            .ok_or_else(|| format!("{who} answer has no `{p}`"))
    };
    let o = apply(Val::Json(get(ours, &map.ours, "our")?), &map.ours_transform)?;
    let t = apply(
        Val::Json(get(theirs, &map.theirs, "the reference's")?),
        &map.transform,
    )?;
    // Proto `bytes` fields are base64 in JSON: compare them as bytes with a decoded reference.
    let o = match (&o, &t) {
        (Val::Json(Value::String(s)), Val::Bytes(_)) => {
            apply(Val::Json(Value::String(s.clone())), &[Transform::Base64]).unwrap_or(o)
        }
        _ => o,
    };
    if o == t {
        Ok(())
    } else {
        Err(format!(
            "{} = {} but the reference's {} = {}",
            map.ours,
            o.show(),
            map.theirs,
            t.show()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn map(ours: &str, theirs: &str, t: &[Transform]) -> FieldMap {
        FieldMap {
            ours: ours.into(),
            theirs: theirs.into(),
            transform: t.to_vec(),
            ours_transform: vec![],
        }
    }

    #[test]
    fn paths_and_transforms_line_up_a_grpc_hash_with_a_json_rpc_one() {
        let v = json!({"result": {"blocks": [{"hash": "0a0b"}]}});
        assert_eq!(at_path(&v, "result.blocks[0].hash"), Some(&json!("0a0b")));
        assert_eq!(at_path(&v, "result.nope"), None);
        // gRPC gives bytes (base64 in JSON) in one order, JSON-RPC hex in the other.
        let ours = json!({"hash": "CwoM"}); // 0b 0a 0c
        let theirs = json!({"result": {"hash": "0c0a0b"}});
        assert!(check(
            &map("hash", "result.hash", &[Transform::Hex, Transform::Reverse]),
            &ours,
            &theirs
        )
        .is_ok());
        let e = check(
            &map("hash", "result.hash", &[Transform::Hex]),
            &ours,
            &theirs,
        )
        .unwrap_err();
        assert!(e.contains("0x0b0a0c") && e.contains("0x0c0a0b"), "{e}");
        assert!(check(
            &map("height", "result.height", &[Transform::String]),
            &json!({"height": "7"}),
            &json!({"result": {"height": 7}})
        )
        .is_ok());
        assert!(check(&map("x", "y", &[]), &json!({}), &json!({"y": 1}))
            .unwrap_err()
            .contains("no `x`"));
        assert!(apply(Val::Json(json!(5)), &[Transform::Hex]).is_err());
    }
}

#[cfg(test)]
mod case_field_tests {
    use super::*;

    #[test]
    fn a_reference_request_takes_fields_of_the_case() {
        let case = r#"{"height": 5, "hash": "0a0b", "range": {"start": 7}}"#;
        assert_eq!(
            fill_case_fields(r#"["{case.height|string}", 1]"#, case).unwrap(),
            r#"["5", 1]"#
        );
        assert_eq!(
            fill_case_fields("[{case.height}, {case.range.start}]", case).unwrap(),
            "[5, 7]"
        );
        assert_eq!(
            fill_case_fields(r#"["{case.hash|hex|reverse|to_hex}"]"#, case).unwrap(),
            r#"["0b0a"]"#
        );
        assert_eq!(
            fill_case_fields("[{case}]", case).unwrap(),
            "[{case}]",
            "the whole case is left to {case}"
        );
        assert!(fill_case_fields("[{case.nope}]", case)
            .unwrap_err()
            .contains("has no `nope`"));
        assert!(fill_case_fields("[{case.hash|hex}]", case)
            .unwrap_err()
            .contains("to_hex"));
        assert!(fill_case_fields("[{case.height}]", "not json")
            .unwrap_err()
            .contains("not"));
    }
}
