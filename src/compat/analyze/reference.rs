//! Checking a set's answers against an outside reference server, field by field through the set's field maps.

use super::*;

/// One contender's answers to a set, checked field by field against the reference's.
pub(super) fn check_reference<'a>(
    set: &CompatSetInfo,
    info: &crate::results::ReferenceInfo,
    contender: &str,
    get: &dyn Fn(usize) -> Option<&'a CompatAnswer>,
    reference: &[CompatAnswer],
) -> ReferenceReport {
    let mut groups: BTreeMap<String, (usize, Example)> = BTreeMap::new();
    let (mut matched, mut checked) = (0, 0);
    for (i, case) in set.cases.iter().enumerate() {
        let Some(r) = reference.iter().find(|a| a.set == set.name && a.case == i) else {
            continue;
        };
        let Some(a) = get(i) else { continue };
        if !(a.success && r.success) {
            continue;
        }
        checked += 1;
        let misses: Vec<(String, String)> = info
            .fields
            .iter()
            .filter_map(|m| {
                super::super::reference::check(m, &body(a), &body(r))
                    .err()
                    .map(|e| (m.ours.clone(), e))
            })
            .collect();
        if misses.is_empty() {
            matched += 1;
            continue;
        }
        for (field, why) in misses {
            let example = Example {
                case: i,
                origin: case.origin.clone(),
                request: case.request.clone(),
                baseline: summary(r),
                other: summary(a),
                diff: vec![why],
            };
            let e = groups.entry(field).or_insert((0, example.clone()));
            e.0 += 1;
            if example.request.len() < e.1.request.len() {
                e.1 = example;
            }
        }
    }
    ReferenceReport {
        contender: contender.to_string(),
        // Who answered as the reference: the outside server, or the member bakeoff started.
        endpoint: match &info.member {
            Some(m) if info.endpoint.is_empty() => format!("{}/{}", m.contender, m.member),
            Some(m) => format!("{}/{} ({})", m.contender, m.member, info.endpoint),
            None => info.endpoint.clone(),
        },
        matched,
        checked,
        classes: groups
            .into_iter()
            .map(|(field, (cases, example))| ClassReport {
                kind: "reference_differs".into(),
                class: format!("differs from the reference at {field}"),
                cases,
                example,
            })
            .collect(),
    }
}
