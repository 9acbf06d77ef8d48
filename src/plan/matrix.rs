//! Matrix expansion and the `{word}` placeholders a call may use.

use std::collections::BTreeSet;

use super::{Point, Spread};

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

/// Every combination: target outermost, then the matrix variables, then clients, so a table
/// reads like seed 003 (key size, clients, target).
pub(super) fn expand(
    targets: &[Option<Spread>],
    axes: &[(String, Vec<String>)],
    rates: &[Option<f64>],
    clients: &[usize],
) -> Vec<Point> {
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
                    // In the order `results::PointId` renders its label.
                    let mut label: Vec<String> =
                        vars.iter().map(|(k, v)| format!("{k}={v}")).collect();
                    label.push(format!("clients={n}"));
                    if let Some(t) = t {
                        label.push(format!("target={}", t.as_str()));
                    }
                    if let Some(r) = rate {
                        label.push(format!("rate={r}"));
                    }
                    points.push(Point {
                        label: label.join(" "),
                        vars: vars.clone(),
                        clients: n,
                        target: *t,
                        rate: *rate,
                    });
                }
            }
        }
    }
    points
}
