//! From the answers every contender gave to the compat cases to what a reader needs: per
//! call and contender, how many cases were identical; the differences grouped by class with
//! the shortest example of each; and the fields set apart as noise because two instances of
//! the baseline already disagreed on them.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use serde_json::Value;

use super::diff::{diff, Kind, Rules};
use crate::plan::CompatMode;
use crate::results::{CompatAnswer, CompatSetInfo};
mod reference;
use reference::*;

/// Whose answers to compare: the baseline, its noise instances, the others.
pub struct Who<'a> {
    pub baseline: &'a str,
    pub noise: Vec<&'a str>,
    pub others: Vec<&'a str>,
}

#[derive(Debug, Clone, Serialize)]
pub struct CompatReport {
    pub baseline: String,
    pub noise_instances: Vec<String>,
    pub sets: Vec<SetReport>,
    /// Must-match cases that differ, over all sets and contenders.
    pub differences: usize,
    /// Noise fields whose value the cases themselves change (the baseline's own answers
    /// differ from case to case, as a revision counter does): counted as noise only because
    /// the instances did not start alike, so differences in them are hidden.
    pub changing_noise: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct SetReport {
    pub name: String,
    pub call: String,
    pub mode: CompatMode,
    pub cases: usize,
    /// Field patterns on which the baseline's instances disagreed in this call (noise from
    /// every call is left out of every call's comparison).
    pub noise_fields: Vec<String>,
    /// Cases whose outcome differed between the baseline's instances: left out.
    pub noisy_cases: usize,
    pub contenders: Vec<ContenderReport>,
    /// Checks against the set's reference server, for the baseline and every other contender.
    pub reference: Vec<ReferenceReport>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ReferenceReport {
    pub contender: String,
    pub endpoint: String,
    /// Cases where both answered and every mapped field matched.
    pub matched: usize,
    pub checked: usize,
    pub classes: Vec<ClassReport>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ContenderReport {
    pub contender: String,
    /// Same outcome and the same answer (after normalization and noise).
    pub identical: usize,
    /// Both failed with the same status: agreement, listed apart.
    pub same_failure: usize,
    pub compared: usize,
    pub classes: Vec<ClassReport>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ClassReport {
    /// `status_differs`, `both_failed`, `timed_out`, or a content kind (`value_differs`, …).
    pub kind: String,
    /// e.g. `status differs: gRPC UNKNOWN vs gRPC INVALID_ARGUMENT` or
    /// `value differs at header.revision`.
    pub class: String,
    pub cases: usize,
    pub example: Example,
}

#[derive(Debug, Clone, Serialize)]
pub struct Example {
    pub case: usize,
    pub origin: String,
    pub request: String,
    pub baseline: Value,
    pub other: Value,
    pub diff: Vec<String>,
}

fn summary(a: &CompatAnswer) -> Value {
    let mut m = serde_json::Map::new();
    m.insert("outcome".into(), a.outcome.clone().into());
    if let Some(d) = &a.detail {
        m.insert("detail".into(), d.clone().into());
    }
    match a.messages.len() {
        0 => {}
        1 => {
            m.insert("message".into(), a.messages[0].clone());
        }
        _ => {
            m.insert("messages".into(), a.messages.clone().into());
        }
    }
    Value::Object(m)
}

/// All messages of an answer as one value (a single message as itself).
fn body(a: &CompatAnswer) -> Value {
    match a.messages.len() {
        1 => a.messages[0].clone(),
        _ => Value::Array(a.messages.clone()),
    }
}

type Answers<'a> = BTreeMap<&'a str, BTreeMap<(&'a str, usize), &'a CompatAnswer>>;

/// Compares every contender with the baseline (and, for sets that name one, with the
/// reference server whose answers are `reference`).
pub fn analyze(
    sets: &[CompatSetInfo],
    who: &Who,
    answers: &[(&str, &[CompatAnswer])],
    reference: &[CompatAnswer],
) -> CompatReport {
    let mut by: Answers = BTreeMap::new();
    for (c, list) in answers {
        let m = by.entry(c).or_default();
        for a in list.iter() {
            m.insert((a.set.as_str(), a.case), a);
        }
    }
    let Noise {
        all: noise,
        by_set: mut noise_by_set,
        cases: noisy_cases,
    } = noise(sets, who, &by);
    let mut differences = 0;
    let mut out = Vec::new();
    for set in sets {
        let get = |c: &str, i: usize| {
            by.get(c)
                .and_then(|m| m.get(&(set.name.as_str(), i)))
                .copied()
        };
        let mut contenders = Vec::new();
        for other in &who.others {
            let (report, different) =
                compare_with(set, who.baseline, other, &get, &noisy_cases, &noise);
            differences += different;
            contenders.push(report);
        }
        let reference_reports = match &set.reference {
            Some(info) => std::iter::once(who.baseline)
                .chain(who.others.iter().copied())
                .map(|c| check_reference(set, info, c, &|i| get(c, i), reference))
                .collect(),
            None => Vec::new(),
        };
        out.push(SetReport {
            reference: reference_reports,
            name: set.name.clone(),
            call: set.call.clone(),
            mode: set.mode,
            cases: set.cases.len(),
            noise_fields: noise_by_set
                .remove(set.name.as_str())
                .unwrap_or_default()
                .into_iter()
                .collect(),
            noisy_cases: noisy_cases.iter().filter(|(s, _)| *s == set.name).count(),
            contenders,
        });
    }
    let changing_noise = changing(&noise, sets, who, &by);
    CompatReport {
        baseline: who.baseline.to_string(),
        noise_instances: who.noise.iter().map(|s| s.to_string()).collect(),
        sets: out,
        differences,
        changing_noise,
    }
}

/// Noise: the field paths on which the baseline's own instances disagree, pooled over all
/// calls (a field that varies by timing in one call, like etcd's dbSize, may happen to agree
/// in another), and the cases whose very outcome varied.
struct Noise<'a> {
    all: BTreeSet<String>,
    by_set: BTreeMap<&'a str, BTreeSet<String>>,
    cases: BTreeSet<(&'a str, usize)>,
}

fn noise<'a>(sets: &'a [CompatSetInfo], who: &Who, by: &Answers) -> Noise<'a> {
    let mut noise: BTreeSet<String> = BTreeSet::new();
    let mut noise_by_set: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    let mut noisy_cases: BTreeSet<(&str, usize)> = BTreeSet::new();
    for set in sets {
        let rules = rules_of(set);
        for twin in &who.noise {
            for i in 0..set.cases.len() {
                let at = |c: &str| {
                    by.get(c)
                        .and_then(|m| m.get(&(set.name.as_str(), i)))
                        .copied()
                };
                let (Some(b), Some(t)) = (at(who.baseline), at(twin)) else {
                    continue;
                };
                if b.outcome != t.outcome {
                    noisy_cases.insert((set.name.as_str(), i));
                    continue;
                }
                // Status messages and trailers that vary between two instances of one build.
                for d in meta_diffs(b, t) {
                    noise_by_set
                        .entry(set.name.as_str())
                        .or_default()
                        .insert(d.clone());
                    noise.insert(d);
                }
                for d in diff(&body(b), &body(t), rules) {
                    noise_by_set
                        .entry(set.name.as_str())
                        .or_default()
                        .insert(d.pattern.clone());
                    noise.insert(d.pattern);
                }
            }
        }
    }
    Noise {
        all: noise,
        by_set: noise_by_set,
        cases: noisy_cases,
    }
}

/// One contender's answers against the baseline's in a set: grouped by kind and class of
/// difference, with the shortest request as each group's example; and how many of its
/// differences count against a `must_match` set.
fn compare_with<'a>(
    set: &CompatSetInfo,
    baseline: &str,
    other: &str,
    get: &dyn Fn(&str, usize) -> Option<&'a CompatAnswer>,
    noisy_cases: &BTreeSet<(&str, usize)>,
    noise: &BTreeSet<String>,
) -> (ContenderReport, usize) {
    let rules = rules_of(set);
    let mut differences = 0;
    let mut groups: BTreeMap<(String, String), (usize, Example)> = BTreeMap::new();
    let (mut identical, mut same_failure, mut compared) = (0, 0, 0);
    for (i, case) in set.cases.iter().enumerate() {
        if noisy_cases.contains(&(set.name.as_str(), i)) {
            continue;
        }
        let (Some(b), Some(o)) = (get(baseline, i), get(other, i)) else {
            continue;
        };
        compared += 1;
        let Some((kind, class, lines)) = classify(b, o, rules, noise) else {
            identical += 1;
            continue;
        };
        if kind == "both_failed" {
            same_failure += 1;
        } else if set.mode == CompatMode::MustMatch {
            differences += 1;
        }
        let example = Example {
            case: i,
            origin: case.origin.clone(),
            request: case.request.clone(),
            baseline: summary(b),
            other: summary(o),
            diff: lines,
        };
        let e = groups.entry((kind, class)).or_insert((0, example.clone()));
        e.0 += 1;
        if example.request.len() < e.1.request.len() {
            e.1 = example;
        }
    }
    let mut classes: Vec<ClassReport> = groups
        .into_iter()
        .map(|((kind, class), (cases, example))| ClassReport {
            kind,
            class,
            cases,
            example,
        })
        .collect();
    classes.sort_by(|a, b| b.cases.cmp(&a.cases).then(a.class.cmp(&b.class)));
    (
        ContenderReport {
            contender: other.to_string(),
            identical,
            same_failure,
            compared,
            classes,
        },
        differences,
    )
}

/// A noise field that changes from case to case in the baseline's own answers is one the
/// cases change (a revision): two instances that started alike agree on it.
fn changing(
    noise: &BTreeSet<String>,
    sets: &[CompatSetInfo],
    who: &Who,
    by: &Answers,
) -> Vec<String> {
    noise
        .iter()
        .filter(|pattern| {
            let mut seen: Vec<Value> = Vec::new();
            for set in sets {
                for i in 0..set.cases.len() {
                    let Some(b) = by
                        .get(who.baseline)
                        .and_then(|m| m.get(&(set.name.as_str(), i)))
                    else {
                        continue;
                    };
                    for v in values_at(&body(b), pattern) {
                        if !seen.contains(&v) {
                            seen.push(v);
                        }
                    }
                }
            }
            seen.len() > 1
        })
        .cloned()
        .collect()
}

/// The values at a field pattern (`header.revision`, `kvs[].mod_revision`: `[]` is every
/// element).
fn values_at(v: &Value, pattern: &str) -> Vec<Value> {
    let mut cur = vec![v.clone()];
    for part in pattern.split('.').filter(|p| !p.is_empty()) {
        let (name, all) = match part.strip_suffix("[]") {
            Some(n) => (n, true),
            None => (part, false),
        };
        cur = cur
            .iter()
            .filter_map(|x| {
                if name.is_empty() {
                    Some(x)
                } else {
                    x.get(name)
                }
            })
            .flat_map(|x| match (all, x) {
                (true, Value::Array(a)) => a.clone(),
                (true, _) => Vec::new(),
                (false, x) => vec![x.clone()],
            })
            .collect();
    }
    cur
}

fn rules_of(set: &CompatSetInfo) -> Rules<'_> {
    Rules {
        ignore: &set.ignore,
        unordered: &set.unordered,
        byte_order: &set.byte_order,
    }
}

const GRPC_MESSAGE: &str = "grpc-message";
const TRAILER: &str = "trailer:";

/// Where two answers with the same outcome differ besides their messages: the gRPC status
/// message (`grpc-message`) and each trailer by name (`trailer:NAME`).
fn meta_diffs(a: &CompatAnswer, b: &CompatAnswer) -> Vec<String> {
    let mut out = Vec::new();
    if a.outcome.starts_with("gRPC") && a.detail != b.detail {
        out.push(GRPC_MESSAGE.to_string());
    }
    let names: BTreeSet<&String> = a.trailers.keys().chain(b.trailers.keys()).collect();
    for n in names {
        if a.trailers.get(n) != b.trailers.get(n) {
            out.push(format!("{TRAILER}{n}"));
        }
    }
    out
}

/// The class a case falls in, `None` when identical: (kind, class, diff lines). Content
/// differences are named by every (kind, field) they contain, so cases that differ the same
/// way group together.
fn classify(
    b: &CompatAnswer,
    o: &CompatAnswer,
    rules: Rules,
    noise: &BTreeSet<String>,
) -> Option<(String, String, Vec<String>)> {
    if b.outcome == "timeout" || o.outcome == "timeout" {
        return Some((
            "timed_out".into(),
            format!("timed out: {} vs {}", b.outcome, o.outcome),
            vec![],
        ));
    }
    if b.outcome != o.outcome {
        return Some((
            "status_differs".into(),
            format!("status differs: {} vs {}", b.outcome, o.outcome),
            vec![],
        ));
    }
    let meta: Vec<String> = meta_diffs(b, o)
        .into_iter()
        .filter(|d| !noise.contains(d))
        .collect();
    if meta.iter().any(|d| d == GRPC_MESSAGE) {
        return Some((
            "message_differs".into(),
            format!("status message differs on {}", b.outcome),
            vec![format!(
                "grpc-message: {:?} vs {:?}",
                b.detail.as_deref().unwrap_or(""),
                o.detail.as_deref().unwrap_or("")
            )],
        ));
    }
    if !meta.is_empty() {
        let names: Vec<&str> = meta.iter().map(|d| &d[TRAILER.len()..]).collect();
        return Some((
            "trailer_differs".into(),
            format!("trailer differs: {}", names.join(", ")),
            names
                .iter()
                .map(|n| {
                    let v = |a: &CompatAnswer| a.trailers.get(*n).cloned().unwrap_or_default();
                    format!("{n}: {:?} vs {:?}", v(b), v(o))
                })
                .collect(),
        ));
    }
    if !b.success {
        return Some((
            "both_failed".into(),
            format!("both failed with {}", b.outcome),
            vec![],
        ));
    }
    if b.raw == o.raw {
        return None;
    }
    let diffs: Vec<_> = diff(&body(b), &body(o), rules)
        .into_iter()
        .filter(|d| !noise.contains(&d.pattern) && !d.tolerated)
        .collect();
    if diffs.is_empty() {
        return None;
    }
    let mut parts: BTreeSet<(Kind, String)> = BTreeSet::new();
    for d in &diffs {
        let at = if d.pattern.is_empty() {
            "the answer".to_string()
        } else {
            d.pattern.clone()
        };
        parts.insert((d.kind, at));
    }
    let mut by_kind: BTreeMap<Kind, Vec<String>> = BTreeMap::new();
    for (k, at) in parts {
        by_kind.entry(k).or_default().push(at);
    }
    let class = by_kind
        .iter()
        .map(|(k, at)| format!("{} at {}", k.describe(), at.join(", ")))
        .collect::<Vec<_>>()
        .join("; ");
    let kind = if by_kind.len() == 1 {
        serde_json::to_value(by_kind.keys().next().expect("one kind"))
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default()
    } else {
        "content_differs".into()
    };
    Some((kind, class, diffs.iter().map(|d| d.line()).collect()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::CaseInfo;

    fn answer(set: &str, case: usize, outcome: &str, msg: Value) -> CompatAnswer {
        CompatAnswer {
            set: set.into(),
            case,
            outcome: outcome.into(),
            success: outcome.ends_with("OK") || outcome.ends_with("200"),
            detail: None,
            raw: vec![msg.to_string()],
            messages: vec![msg],
            trailers: Default::default(),
        }
    }

    fn set(name: &str, n: usize, mode: CompatMode) -> CompatSetInfo {
        CompatSetInfo {
            name: name.into(),
            call: name.into(),
            mode,
            ignore: vec![],
            unordered: vec![],
            byte_order: vec![],
            cases: (0..n)
                .map(|i| CaseInfo {
                    request: "x".repeat(i + 1),
                    origin: format!("requests[{i}]"),
                })
                .collect(),
            reference: None,
        }
    }

    #[test]
    fn status_messages_and_trailers_are_differences_of_their_own_kind() {
        use serde_json::json;
        let sets = [set("get", 3, CompatMode::MustMatch)];
        let failed = |case, msg: &str| CompatAnswer {
            detail: Some(msg.into()),
            ..answer("get", case, "gRPC NOT_FOUND", Value::Null)
        };
        let with_trailers = |case, pairs: &[(&str, &str)]| CompatAnswer {
            trailers: pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ..answer("get", case, "gRPC OK", json!({"v": 1}))
        };
        let base = vec![
            failed(0, "key not found"),
            with_trailers(1, &[("x-variant", "a"), ("x-node", "1")]),
            with_trailers(2, &[("x-node", "1")]),
        ];
        // The baseline's twin differs on x-node: noise, never a difference.
        let twin = vec![
            failed(0, "key not found"),
            with_trailers(1, &[("x-variant", "a"), ("x-node", "2")]),
            with_trailers(2, &[("x-node", "2")]),
        ];
        let other = vec![
            failed(0, "no such key"),
            with_trailers(1, &[("x-variant", "b"), ("x-node", "3")]),
            with_trailers(2, &[("x-node", "3")]),
        ];
        let who = Who {
            baseline: "a",
            noise: vec!["a2"],
            others: vec!["b"],
        };
        let r = analyze(
            &sets,
            &who,
            &[("a", &base), ("a2", &twin), ("b", &other)],
            &[],
        );
        let c = &r.sets[0].contenders[0];
        let kinds: Vec<(&str, &str)> = c
            .classes
            .iter()
            .map(|c| (c.kind.as_str(), c.class.as_str()))
            .collect();
        assert!(
            kinds.contains(&(
                "message_differs",
                "status message differs on gRPC NOT_FOUND"
            )),
            "{kinds:?}"
        );
        assert!(
            kinds.contains(&("trailer_differs", "trailer differs: x-variant")),
            "{kinds:?}"
        );
        assert_eq!((c.identical, c.same_failure, r.differences), (1, 0, 2));
    }

    #[test]
    fn statuses_timeouts_noise_and_record_only_are_told_apart() {
        use serde_json::json;
        let sets = [
            set("get", 4, CompatMode::MustMatch),
            set("tip", 1, CompatMode::RecordOnly),
        ];
        let base = vec![
            answer("get", 0, "HTTP 200", json!({"id": 1, "node": "a"})),
            answer("get", 1, "HTTP 200", json!({"id": 2, "node": "a"})),
            answer("get", 2, "HTTP 200", json!({"id": 3, "node": "a"})),
            answer("get", 3, "HTTP 200", json!({"id": 4, "node": "a"})),
            answer("tip", 0, "HTTP 200", json!({"height": 10})),
        ];
        let twin: Vec<_> = base
            .iter()
            .cloned()
            .map(|mut a| {
                if let Some(o) = a.messages[0].as_object_mut() {
                    o.insert("node".into(), json!("b"));
                }
                a.raw = vec![a.messages[0].to_string()];
                a
            })
            .collect();
        let mut other: Vec<_> = twin.clone();
        other[1] = answer("get", 1, "HTTP 500", json!("oops"));
        other[2] = answer("get", 2, "timeout", Value::Null);
        other[3].messages[0]["id"] = json!("4");
        other[3].raw = vec!["changed".into()];
        other[4] = answer("tip", 0, "HTTP 200", json!({"height": 11}));
        let who = Who {
            baseline: "a",
            noise: vec!["a2"],
            others: vec!["b"],
        };
        let r = analyze(
            &sets,
            &who,
            &[("a", &base), ("a2", &twin), ("b", &other)],
            &[],
        );
        let get = &r.sets[0];
        assert_eq!(get.noise_fields, ["node"]);
        let c = &get.contenders[0];
        assert_eq!((c.identical, c.compared), (1, 4));
        let classes: Vec<&str> = c.classes.iter().map(|c| c.class.as_str()).collect();
        assert!(
            classes.contains(&"status differs: HTTP 200 vs HTTP 500"),
            "{classes:?}"
        );
        assert!(
            classes.contains(&"timed out: HTTP 200 vs timeout"),
            "{classes:?}"
        );
        assert!(classes.contains(&"type/shape differs at id"), "{classes:?}");
        // The record-only change is shown but not counted.
        assert_eq!(
            r.sets[1].contenders[0].classes[0].class,
            "value differs at height"
        );
        assert_eq!(r.differences, 3);
    }
}
