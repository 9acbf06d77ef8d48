//! Matrix expansion and the `{word}` placeholders a call may use.

use std::collections::BTreeSet;

use super::{PointId, Spread, Vars};

/// `{word}` placeholders made of identifier characters only (JSON's `{"` never matches).
pub(super) fn braced_words(text: &str) -> BTreeSet<&str> {
    let mut out = BTreeSet::new();
    let mut rest = text;
    while let Some(i) = rest.find('{') {
        rest = &rest[i + 1..];
        if let Some(end) = rest.find('}') {
            let w = &rest[..end];
            if !w.is_empty()
                && w.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !w.starts_with(|c: char| c.is_ascii_digit())
            {
                out.insert(w);
            }
        }
    }
    out
}

/// Every combination, each point of scenario `scenario` identified once here: target
/// outermost, then the matrix variables, then clients, so a table reads like seed 003 (key
/// size, clients, target).
pub(super) fn expand(
    scenario: &str,
    targets: &[Option<Spread>],
    axes: &[(String, Vec<String>)],
    rates: &[Option<f64>],
    clients: &[usize],
) -> Vec<PointId> {
    let mut combos: Vec<Vec<(String, String)>> = vec![Vec::new()];
    for (k, vals) in axes {
        combos = combos
            .into_iter()
            .flat_map(|c| {
                vals.iter().map(move |v| {
                    let mut c = c.clone();
                    c.push((k.clone(), v.clone()));
                    c
                })
            })
            .collect();
    }
    let mut points = Vec::new();
    for t in targets {
        for vars in &combos {
            for rate in rates {
                for &n in clients {
                    points.push(PointId {
                        scenario: scenario.to_string(),
                        vars: Vars(vars.clone()),
                        clients: n,
                        target: *t,
                        rate: *rate,
                        stage: None,
                    });
                }
            }
        }
    }
    points
}
