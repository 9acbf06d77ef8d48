//! A run whose repetitions ran on several machines (shards merged with `bakeoff merge`):
//! which machine ran what, and each machine's own verdicts beside the combined one.

use super::table::{Cell, Table};
use crate::analysis::verdicts::PointVerdicts;
use crate::results::Results;

/// Machines in the order their first repetition appears, with that environment.
fn machines(r: &Results) -> Vec<(&str, &crate::results::env::Environment)> {
    let mut out: Vec<(&str, &crate::results::env::Environment)> = Vec::new();
    for run in &r.runs {
        let env = r.environment_of(run);
        if !out.iter().any(|(m, _)| *m == env.machine()) {
            out.push((env.machine(), env));
        }
    }
    out
}

/// One row per machine: its CPU, kernel, the shards and repetitions it ran, the bakeoff
/// version; `None` when every repetition ran on one machine.
pub fn table(r: &Results) -> Option<Table> {
    let ms = machines(r);
    if ms.len() < 2 {
        return None;
    }
    let head = [
        "machine",
        "CPU model",
        "CPUs",
        "kernel",
        "shards",
        "repetitions",
        "bakeoff",
    ]
    .map(String::from)
    .to_vec();
    let mut rows = Vec::new();
    for (m, env) in &ms {
        let runs: Vec<_> = r
            .runs
            .iter()
            .filter(|x| r.environment_of(x).machine() == *m)
            .collect();
        let mut shards: Vec<u32> = runs.iter().filter_map(|x| x.id.shard).collect();
        shards.sort_unstable();
        shards.dedup();
        let mut reps: Vec<u32> = runs.iter().map(|x| x.id.repetition).collect();
        reps.sort_unstable();
        reps.dedup();
        let mut tools: Vec<&str> = runs.iter().filter_map(|x| x.tool.as_deref()).collect();
        tools.sort_unstable();
        tools.dedup();
        let join = |v: &[u32]| v.iter().map(u32::to_string).collect::<Vec<_>>().join(", ");
        let cpus = format!("{} of {}", env.cpus_allowed.len(), env.cpus_online);
        rows.push(vec![
            Cell::text("machine", *m),
            Cell::text("cpu_model", env.cpu_model.as_str()),
            Cell::count("cpus_allowed", env.cpus_allowed.len() as u64)
                .and("cpus_online", env.cpus_online)
                .reads(cpus),
            Cell::text("kernel", env.kernel.as_str()),
            Cell::text("shards", join(&shards)),
            Cell::text("repetitions", join(&reps)),
            Cell::text("tools", tools.join(", ")),
        ]);
    }
    Some(Table {
        id: "machines".into(),
        title: format!("Machines ({} ran these repetitions)", ms.len()),
        head,
        rows,
    })
}

/// Per point and contender: the main verdict on each machine and combined across them
/// (`stats::machines::combine`); `None` when no verdict rests on several machines.
pub fn verdicts(r: &Results, verdicts: &[PointVerdicts]) -> Option<Table> {
    let split: Vec<&PointVerdicts> = verdicts.iter().filter(|v| !v.machines.is_empty()).collect();
    if split.is_empty() {
        return None;
    }
    let names: Vec<&str> = machines(r).into_iter().map(|(m, _)| m).collect();
    let mut head: Vec<String> = ["point", "contender", "figure"].map(String::from).to_vec();
    head.extend(names.iter().map(|m| m.to_string()));
    head.push("combined".into());
    let mut rows = Vec::new();
    for v in split {
        let Some(main) = v.main() else { continue };
        let mut row = vec![
            Cell::text("point", v.point.to_string()),
            Cell::text("contender", v.contender.as_str())
                .and("baseline", v.baseline.as_str())
                .reads(format!("{} vs {}", v.contender, v.baseline)),
            Cell::text("figure", main.figure.name()),
        ];
        for m in &names {
            let on = v
                .machines
                .iter()
                .find(|(x, _)| x == m)
                .and_then(|(_, vs)| vs.iter().find(|x| x.figure == main.figure));
            let cell = super::cells::verdict_cell(m, on);
            row.push(match on {
                None => cell.reads("—"),
                // One round: no interval of its own.
                Some(x) if !crate::stats::paired::knows_its_error(&x.ratio) => {
                    let text = format!(
                        "{} (1 round)",
                        crate::analysis::verdicts::fmt_ratio(x.ratio.ratio)
                    );
                    Cell {
                        reading: None,
                        ..cell.reads(text)
                    }
                }
                Some(_) => cell,
            });
        }
        row.push(super::cells::verdict_cell("combined", Some(main)));
        rows.push(row);
    }
    let once = verdicts.iter().all(|v| {
        v.machines
            .iter()
            .all(|(_, vs)| vs.iter().all(|x| x.ratio.repetitions < 2))
    });
    let note = if once {
        "; one repetition per machine, so a machine's difference cannot be told from a fresh start's"
    } else {
        ""
    };
    Some(Table {
        id: "verdicts-by-machine".into(),
        title: format!("Verdicts by machine: each machine's paired ratio, and combined across machines (random effects, docs/scale-out.md{note})"),
        head,
        rows,
    })
}
