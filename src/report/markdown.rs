//! The Markdown report `bakeoff run` prints at the end and writes as `report.md`: the answers
//! first, then start-up per contender, the compat matrix, and per scenario a table in the
//! style of seed 003, then findings, failures and the environment. It renders an
//! [`Analysis`]; the tables themselves are computed in [`super::tables`].

use std::fmt::Write as _;

use super::analysis::Analysis;
use crate::results::Run;

pub fn render(a: &Analysis) -> String {
    let r = a.results;
    let mut out = String::new();
    let _ = writeln!(out, "# {}\n", super::summary::title(r));
    match r.status.as_str() {
        "interrupted" => {
            let _ = writeln!(out, "_Interrupted: these are the repetitions that ran before it stopped; continue with `bakeoff run --resume DIR`._\n");
        }
        "running" => {
            let _ = writeln!(out, "_Incomplete: bakeoff stopped before this run finished (it was killed, or is still running); the figures are what it had written by then._\n");
        }
        _ => {}
    }
    if r.smoke {
        let _ = writeln!(out, "_Smoke run: one repetition, short scenarios — check the plan, do not compare these numbers._\n");
    }
    let verdict = super::verdict::lines(a);
    if !verdict.is_empty() {
        let _ = writeln!(out, "## Verdict\n");
        for l in &verdict {
            let _ = writeln!(out, "- {l}");
        }
        out.push('\n');
    }
    if !a.summary.is_empty() {
        let _ = writeln!(out, "## Summary\n");
        for b in &a.summary {
            let _ = writeln!(out, "- {b}");
        }
        out.push('\n');
    }
    out.push_str(&a.startup.markdown());
    if let Some(t) = &a.members {
        out.push_str(&t.markdown());
    }
    out.push_str(&super::compat::markdown(&a.compat));
    for s in &a.scenarios {
        out.push_str(&s.serving.markdown());
        for t in s.scaling.iter().chain(&s.edges).chain(&s.profile) {
            out.push_str(&t.markdown());
        }
    }
    for t in a.machines.iter().chain(&a.by_machine) {
        out.push_str(&t.markdown());
    }
    if !a.findings.is_empty() {
        let _ = writeln!(out, "## Findings\n");
        for f in &a.findings {
            let _ = writeln!(out, "- {f}");
        }
        out.push('\n');
    }
    let failed: Vec<&Run> = r.runs.iter().filter(|x| x.error.is_some()).collect();
    if !failed.is_empty() {
        let _ = writeln!(out, "## Failures\n");
        for f in failed {
            let first_line = f
                .error
                .as_deref()
                .unwrap_or_default()
                .lines()
                .next()
                .unwrap_or_default();
            let _ = writeln!(out, "- {}: {first_line}", f.id);
        }
        out.push('\n');
    }
    environment(r, &mut out);
    out
}

/// Where it ran, what was built from source, what TLS negotiated, and the run's warnings.
fn environment(r: &crate::results::Results, out: &mut String) {
    let _ = writeln!(out, "## Environment\n\n{}\n", environment_line(r));
    let sources = source_lines(r);
    if !sources.is_empty() {
        let _ = writeln!(out, "Built from source:\n");
        for s in sources {
            let _ = writeln!(out, "- {s}");
        }
        out.push('\n');
    }
    // Once per contender and what its handshakes negotiated (the same for every point, as
    // a rule; a change shows as a second entry).
    let mut tls = std::collections::BTreeSet::new();
    for run in &r.runs {
        for p in &run.points {
            if let Some(t) = p.load.as_ref().and_then(|l| l.tls.as_deref()) {
                tls.insert(format!("{}: {t}", run.id.subject()));
            }
        }
    }
    if !tls.is_empty() {
        let list: Vec<String> = tls.into_iter().collect();
        let _ = writeln!(out, "TLS: {}\n", list.join("; "));
    }
    if !r.warnings.is_empty() {
        let _ = writeln!(out, "## Warnings\n");
        for w in &r.warnings {
            let _ = writeln!(out, "- {w}");
        }
        out.push('\n');
    }
}

/// Each contender built from source: `repository @ ref (commit, clean or dirty)` and its
/// build (its time, or cached, or why it failed).
pub(super) fn source_lines(r: &crate::results::Results) -> Vec<String> {
    let own = r
        .contenders
        .iter()
        .filter(|c| c.variant.is_none() && c.noise_of.is_none());
    // Members with a source of their own read `contender/member`.
    let all = own.flat_map(|c| {
        std::iter::once((c.name.clone(), &c.source)).chain(
            c.members
                .iter()
                .map(move |m| (format!("{}/{}", c.name, m.name), &m.source)),
        )
    });
    all.filter_map(|(who, s)| {
        let s = s.as_ref()?;
        let at = match &s.commit {
            Some(commit) => format!(
                "`{}` ({})",
                crate::units::prefix(commit, 12),
                if s.dirty { "dirty" } else { "clean" }
            ),
            None => "a folder, as it was".into(),
        };
        let built = match (&s.build, &s.error) {
            (_, Some(e)) => {
                format!("**build failed**: {}", e.lines().next().unwrap_or_default())
            }
            (Some(b), None) => {
                let cost = format!(
                    "{:.1} s, CPU {:.1} s, peak RSS {}",
                    b.seconds,
                    b.cpu_s,
                    super::fmt_bytes(b.peak_rss_bytes as f64)
                );
                if b.cached {
                    format!("cached (built in {cost})")
                } else {
                    format!("built in {cost}")
                }
            }
            (None, None) => String::new(),
        };
        Some(format!(
            "{who}: {} @ {} → {at} — {built}",
            s.repository,
            s.reference.as_deref().unwrap_or("working tree")
        ))
    })
    .collect()
}

/// The machine, pinning, tool, repetitions and order of a run, on one line (the Markdown's
/// and the HTML's Environment).
pub(super) fn environment_line(r: &crate::results::Results) -> String {
    let e = &r.environment;
    let pinned = match (&e.contender_cpus, &e.load_cpus) {
        (Some(c), Some(l)) => format!(", contenders on CPUs {c:?}, load on {l:?}"),
        _ => ", not pinned".into(),
    };
    let method = match &r.paired {
        Some(p) => {
            let rounds = match (p.max_rounds, p.precision) {
                (Some(m), Some(x)) => format!(
                    "rounds until ±{} and decided (at most {m})",
                    crate::analysis::verdicts::pct(x)
                ),
                (None, Some(x)) => format!(
                    "rounds until ±{} and decided (at most as many as 3 s of slices hold, and 4)",
                    crate::analysis::verdicts::pct(x)
                ),
                _ if p.rounds == "duration" => {
                    "as many rounds as each scenario's duration holds".to_string()
                }
                _ => format!("{} rounds", p.rounds),
            };
            let slices = match p.slice_s {
                Some(s) => format!("{s} s slices"),
                None => "slices of 25 ms–1 s, each holding 250 calls of the slowest contender"
                    .to_string(),
            };
            let more = match p.max_repetitions {
                Some(m) => format!(", inconclusive points repeated up to {m} times"),
                None => String::new(),
            };
            let judged = match &p.judge {
                Some(keys) => format!(", judging {} only", keys.join(", ")),
                None => String::new(),
            };
            format!(
                " ({slices}, {rounds}{more}{judged}, noise band {}, equivalence band {}, false discovery rate {})",
                crate::analysis::verdicts::pct(p.noise),
                crate::analysis::verdicts::pct(p.equivalence),
                crate::analysis::verdicts::pct(p.fdr)
            )
        }
        None => String::new(),
    };
    // A shard ran only its share of the plan's repetitions; a merge says how many shards.
    let shards = match &r.shards {
        Some(s) if s.have.len() < s.of as usize => format!(
            " · shard {} of {} (merge the shards for the whole run)",
            s.have
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", "),
            s.of
        ),
        Some(s) => format!(" · merged from {} shards", s.of),
        None => String::new(),
    };
    // The budget's further repetitions, where it gave some: the count the tables use.
    let most = r.runs.iter().map(|x| x.id.repetition).max().unwrap_or(0);
    let repetitions = match most > r.repetitions {
        true => format!(
            "{} planned, up to {most} where the budget went on",
            super::count(r.repetitions, "repetition")
        ),
        false => super::count(r.repetitions, "repetition"),
    };
    format!(
        "{} · {} · {} CPUs{pinned} · {} · {}, {}{method}{shards} · started {}",
        e.cpu_model, e.kernel, e.cpus_online, r.tool, repetitions, r.order, r.started_at
    )
}
