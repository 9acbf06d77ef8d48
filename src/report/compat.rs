//! The compatibility section: a matrix of calls × contenders (identical / compared), the
//! fields set apart as noise, and each class of difference with its shortest example.

use std::fmt::Write as _;

use crate::compat::analyze::{analyze, CompatReport, Who};
use crate::plan::CompatMode;
use crate::results::Results;

/// One report per baseline in use (a contender's own `baseline`, else the plan's, else the
/// first contender); noise instances of that baseline feed its noise cancellation. A what-if
/// variant is the same build as the contender it varies: its answers are noise evidence for
/// that contender (when it is the baseline), never differences of its own.
pub fn from_results(r: &Results) -> Vec<CompatReport> {
    if r.compat.is_empty() {
        return Vec::new();
    }
    let real: Vec<&str> = r.compared().map(|c| c.name.as_str()).collect();
    let Some(first) = real.first().copied() else {
        return Vec::new();
    };
    let default_base = r.baseline.as_deref().unwrap_or(first);
    let base_of = |name: &str| {
        r.contenders
            .iter()
            .find(|c| c.name == name)
            .and_then(|c| c.baseline.as_deref())
            .unwrap_or(default_base)
    };
    let mut bases: Vec<&str> = Vec::new();
    for c in &real {
        let b = base_of(c);
        if b != *c && !bases.contains(&b) {
            bases.push(b);
        }
    }
    let answers: Vec<(String, &[crate::results::CompatAnswer])> = r
        .runs
        .iter()
        .filter(|run| run.id.repetition == 1)
        .map(|run| (run.id.subject(), run.compat.as_slice()))
        .collect();
    let answers: Vec<(&str, &[crate::results::CompatAnswer])> =
        answers.iter().map(|(n, a)| (n.as_str(), *a)).collect();
    bases
        .into_iter()
        .map(|b| {
            let variant_of = |name: &str| {
                r.contenders
                    .iter()
                    .find(|c| c.name == name)
                    .and_then(|c| c.variant.as_ref())
                    .map(|v| v.of.clone())
            };
            let who = Who {
                baseline: b,
                noise: r
                    .contenders
                    .iter()
                    .filter(|c| {
                        c.noise_of.as_deref() == Some(b)
                            || c.variant.as_ref().is_some_and(|v| v.of == b)
                    })
                    .map(|c| c.name.as_str())
                    .collect(),
                others: real
                    .iter()
                    .copied()
                    .filter(|c| *c != b && base_of(c) == b && variant_of(c).is_none())
                    .collect(),
            };
            analyze(&r.compat, &who, &answers, &r.compat_reference)
        })
        .collect()
}

/// `cash.z.wallet.sdk.rpc.CompactTxStreamer` when every set is a method of that one gRPC
/// service: the tables then show the methods, and the service once in their heading.
pub fn one_service(rep: &CompatReport) -> Option<String> {
    let mut service = None;
    for s in &rep.sets {
        let (svc, method) = s.name.rsplit_once('/')?;
        if !svc.contains('.') || method.is_empty() || svc.contains(' ') {
            return None;
        }
        match &service {
            None => service = Some(svc.to_string()),
            Some(x) if x == svc => {}
            Some(_) => return None,
        }
    }
    service
}

/// A set's name as its table shows it: the method alone when [`one_service`] is in the
/// heading.
pub fn shown_name<'a>(name: &'a str, service: Option<&str>) -> &'a str {
    match service {
        Some(svc) => name
            .strip_prefix(svc)
            .and_then(|m| m.strip_prefix('/'))
            .unwrap_or(name),
        None => name,
    }
}

pub fn markdown(reports: &[CompatReport]) -> String {
    let mut out = String::new();
    for rep in reports {
        let noise = if rep.noise_instances.is_empty() {
            "no second instance of the baseline, so no noise cancellation".to_string()
        } else {
            format!("noise measured against {}", rep.noise_instances.join(", "))
        };
        let service = one_service(rep);
        let of = service
            .as_ref()
            .map_or(String::new(), |svc| format!(", calls of `{svc}`"));
        let _ = writeln!(
            out,
            "## Compatibility against {} ({noise}{of})\n",
            rep.baseline
        );
        let others: Vec<&str> = rep
            .sets
            .first()
            .map(|s| s.contenders.iter().map(|c| c.contender.as_str()).collect())
            .unwrap_or_default();
        matrix(rep, &others, service.as_deref(), &mut out);
        noise_notes(rep, &mut out);
        reference_section(rep, &mut out);
        for c in &others {
            differences(rep, c, &mut out);
        }
    }
    out
}

/// The matrix: per call, how many cases each contender answered as the baseline did.
fn matrix(rep: &CompatReport, others: &[&str], service: Option<&str>, out: &mut String) {
    let _ = writeln!(out, "| call | cases | {} |", others.join(" | "));
    let _ = writeln!(out, "|---|---|{}", "---|".repeat(others.len()));
    for s in &rep.sets {
        let cells: Vec<String> = s
            .contenders
            .iter()
            .map(|c| {
                let mut t = format!("{}/{} identical", c.identical, c.compared);
                if c.same_failure > 0 {
                    t.push_str(&format!(" ({} fail alike)", c.same_failure));
                }
                t
            })
            .collect();
        let mode = if s.mode == CompatMode::RecordOnly {
            " (record only)"
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "| {}{mode} | {} | {} |",
            shown_name(&s.name, service),
            s.cases,
            cells.join(" | ")
        );
    }
    out.push('\n');
}

/// The noise that was not counted, and noise fields the cases themselves change.
fn noise_notes(rep: &CompatReport, out: &mut String) {
    let noisy: Vec<String> = rep
        .sets
        .iter()
        .filter(|s| !s.noise_fields.is_empty() || s.noisy_cases > 0)
        .map(|s| {
            let mut t = format!("`{}`: {}", s.name, s.noise_fields.join(", "));
            if s.noisy_cases > 0 {
                let _ = write!(
                    t,
                    " ({} cases whose outcome itself varied were left out)",
                    s.noisy_cases
                );
            }
            t
        })
        .collect();
    if !noisy.is_empty() {
        let _ = writeln!(
            out,
            "Noise, not counted (the baseline's own instances disagreed on these fields):\n"
        );
        for n in noisy {
            let _ = writeln!(out, "- {n}");
        }
        out.push('\n');
    }
    if !rep.changing_noise.is_empty() {
        let fields: Vec<String> = rep
            .changing_noise
            .iter()
            .map(|f| format!("`{f}`"))
            .collect();
        let _ = writeln!(
                out,
                "**Warning:** noise took {} — fields the cases themselves change (the baseline's own answers differ from case to case). Two instances that started alike agree on them, so these did not: differences there are hidden. Compare servers started fresh and alike (`bakeoff run` does), or list them in `ignore` on purpose.\n",
                fields.join(", ")
            );
    }
}

/// How contender `c` differs from the baseline, class by class with the shortest example,
/// and where the two fail alike.
fn differences(rep: &CompatReport, c: &str, out: &mut String) {
    let mut any = false;
    let mut alike = Vec::new();
    for s in &rep.sets {
        let Some(cr) = s.contenders.iter().find(|x| x.contender == *c) else {
            continue;
        };
        for class in &cr.classes {
            if class.kind == "both_failed" {
                // What the failure said, so "both failed" is not a riddle.
                let said = class.example.baseline["detail"]
                    .as_str()
                    .map(|d| format!(": {}", one_line(d, 160)))
                    .unwrap_or_default();
                alike.push(format!(
                    "- `{}`: {} ({} case{}, e.g. `{}`{said})",
                    s.name,
                    class.class,
                    class.cases,
                    if class.cases == 1 { "" } else { "s" },
                    one_line(&class.example.request, 80)
                ));
                continue;
            }
            if !any {
                let _ = writeln!(out, "### {c}: how it differs from {}\n", rep.baseline);
                any = true;
            }
            let e = &class.example;
            let _ = writeln!(
                out,
                "- **{}** — {} of {} cases of `{}`{}. Shortest example ({}):",
                class.class,
                class.cases,
                cr.compared,
                s.name,
                if s.mode == CompatMode::RecordOnly {
                    " (record only, not counted)"
                } else {
                    ""
                },
                e.origin
            );
            let _ = writeln!(out, "  - request: `{}`", one_line(&e.request, 200));
            let _ = writeln!(
                out,
                "  - {}: `{}`",
                rep.baseline,
                one_line(&e.baseline.to_string(), 240)
            );
            let _ = writeln!(out, "  - {c}: `{}`", one_line(&e.other.to_string(), 240));
            for d in e.diff.iter().take(5) {
                let _ = writeln!(out, "  - diff: {}", one_line(d, 200));
            }
        }
    }
    if any {
        out.push('\n');
    }
    if !alike.is_empty() {
        let _ = writeln!(
            out,
            "{c} and {} fail alike on these (same status, a match):\n",
            rep.baseline
        );
        for a in alike {
            let _ = writeln!(out, "{a}");
        }
        out.push('\n');
    }
}

/// Sets checked against an outside reference: a matrix, then each mismatching field.
fn reference_section(rep: &CompatReport, out: &mut String) {
    let sets: Vec<_> = rep
        .sets
        .iter()
        .filter(|s| !s.reference.is_empty())
        .collect();
    if sets.is_empty() {
        return;
    }
    let names: Vec<&str> = sets[0]
        .reference
        .iter()
        .map(|r| r.contender.as_str())
        .collect();
    let _ = writeln!(
        out,
        "Checked against reference servers (fields mapped across protocols):\n"
    );
    let _ = writeln!(out, "| call | reference | {} |", names.join(" | "));
    let _ = writeln!(out, "|---|---|{}", "---|".repeat(names.len()));
    for s in &sets {
        let cells: Vec<String> = s
            .reference
            .iter()
            .map(|r| format!("{}/{} match", r.matched, r.checked))
            .collect();
        let _ = writeln!(
            out,
            "| {} | {} | {} |",
            s.name,
            s.reference[0].endpoint,
            cells.join(" | ")
        );
    }
    out.push('\n');
    for s in &sets {
        for r in &s.reference {
            for c in &r.classes {
                let _ = writeln!(
                    out,
                    "- **{}: {}** — {} of {} cases of `{}`, e.g. {}: {}",
                    r.contender,
                    c.class,
                    c.cases,
                    r.checked,
                    s.name,
                    c.example.origin,
                    one_line(c.example.diff.first().map_or("", String::as_str), 200)
                );
            }
        }
    }
    out.push('\n');
}

fn one_line(s: &str, max: usize) -> String {
    let s = s.replace('\n', " ").replace('`', "'");
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compat::analyze::SetReport;

    fn rep(names: &[&str]) -> CompatReport {
        CompatReport {
            baseline: "zaino".into(),
            noise_instances: Vec::new(),
            sets: names
                .iter()
                .map(|n| SetReport {
                    name: n.to_string(),
                    call: n.to_string(),
                    mode: CompatMode::MustMatch,
                    cases: 3,
                    noise_fields: Vec::new(),
                    noisy_cases: 0,
                    contenders: Vec::new(),
                    reference: Vec::new(),
                })
                .collect(),
            differences: 0,
            changing_noise: Vec::new(),
        }
    }

    #[test]
    fn one_service_goes_in_the_heading_and_the_rows_show_methods() {
        let svc = "cash.z.wallet.sdk.rpc.CompactTxStreamer";
        let r = rep(&[&format!("{svc}/GetBlock"), &format!("{svc}/GetTreeState")]);
        assert_eq!(one_service(&r).as_deref(), Some(svc));
        let md = markdown(&[r]);
        assert!(md.contains(&format!("calls of `{svc}`)")), "{md}");
        assert!(
            md.contains("| GetBlock | 3 |") && !md.contains(&format!("| {svc}/")),
            "{md}"
        );
        // Several services, or names that are not gRPC methods: shown as they are.
        assert_eq!(
            one_service(&rep(&[
                "etcdserverpb.KV/Range",
                "etcdserverpb.Cluster/MemberList"
            ])),
            None
        );
        assert_eq!(one_service(&rep(&["GET /block"])), None);
    }
}
