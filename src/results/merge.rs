//! `bakeoff merge`: the shards of one plan, run on several machines, joined into the results
//! one machine would have written. Nothing measured is recomputed: runs are kept whole (with
//! their histograms, slices and machine), so percentiles of a merged point are read from
//! histograms added exactly, never averaged. Blocks are renumbered so each shard's stay
//! apart. The same shards in any order, or a merged result merged again, give the same file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context as _};

use super::{Results, Shards, Status, SCHEMA_VERSION};

/// One shard's results, read from its directory.
pub struct Input {
    pub dir: PathBuf,
    pub results: Results,
}

/// Reads a shard's results, refusing what cannot be merged: a file from before shards
/// existed, or one that is not a shard at all.
pub fn read(dir: &Path) -> anyhow::Result<Input> {
    let dir = match dir.file_name() {
        Some(f) if f == "results.json" && dir.is_file() => dir.parent().unwrap_or(dir),
        _ => dir,
    };
    let file = dir.join("results.json");
    let text = crate::sys::read_bounded(&file, crate::sys::RESULTS_LIMIT)
        .with_context(|| format!("cannot read `{}`", file.display()))?;
    // What decides whether it can merge, read alone (the whole file is read into its types
    // once, below).
    #[derive(serde::Deserialize)]
    struct Head {
        schema_version: Option<u64>,
        tool: Option<String>,
        shards: Option<serde::de::IgnoredAny>,
    }
    let head: Head =
        serde_json::from_str(&text).with_context(|| format!("`{}` is not JSON", file.display()))?;
    let version = head.schema_version;
    let tool = head.tool.as_deref().unwrap_or("bakeoff");
    if head.shards.is_none() {
        if version.is_some_and(|s| s < u64::from(SCHEMA_VERSION)) {
            bail!(
                "`{}` has schema version {} (written by {tool}), from before results recorded their shard and plan hash: it cannot be merged; run that shard again with this bakeoff",
                file.display(),
                version.unwrap_or(0)
            );
        }
        bail!(
            "`{}` is not a shard: it was run without --shard K/N (or --shards N), so it holds every repetition it ran on one machine; only shards of one plan merge",
            file.display()
        );
    }
    let results = Results::from_text(&text).with_context(|| format!("`{}`", file.display()))?;
    Ok(Input {
        dir: dir.to_path_buf(),
        results,
    })
}

/// Checks that `inputs` are the shards of one plan, each once and none missing, and joins
/// them.
pub fn merge(mut inputs: Vec<Input>) -> anyhow::Result<Results> {
    if inputs.is_empty() {
        bail!("give the results directories of the shards to merge");
    }
    // Order-independent: by the first shard each holds.
    inputs.sort_by_key(|i| i.results.shards.as_ref().map_or(0, |s| s.have[0]));
    let of = fit_together(&inputs)?;
    let first = &inputs[0];
    let mut out = first.results.clone();
    out.schema_version = SCHEMA_VERSION;
    out.tool = super::tool();
    out.status = Status::Complete;
    out.started_at = inputs
        .iter()
        .map(|i| i.results.started_at.clone())
        .min()
        .unwrap_or_default();
    out.finished_at = inputs
        .iter()
        .filter_map(|i| i.results.finished_at.clone())
        .max();
    out.shards = Some(Shards {
        of,
        have: (1..=of).collect(),
    });
    out.runs = inputs
        .iter()
        .flat_map(|i| i.results.runs.iter().cloned())
        .collect();
    in_run_order(&mut out);
    let mut warnings: Vec<super::Warning> = Vec::new();
    for w in inputs.iter().flat_map(|i| &i.results.warnings) {
        if !warnings.contains(w) {
            warnings.push(w.clone());
        }
    }
    out.warnings = warnings;
    // Each shard asks the outside references before it starts; the first that has answers
    // gives them (a member reference is asked where compat ran, in shard 1).
    out.compat_reference = inputs
        .iter()
        .map(|i| &i.results.compat_reference)
        .find(|a| !a.is_empty())
        .cloned()
        .unwrap_or_default();
    Ok(out)
}

/// That `inputs` (sorted by their first shard) are shards of one plan run by one bakeoff on
/// the same builds, finished, each once and none missing: how many shards there are.
fn fit_together(inputs: &[Input]) -> anyhow::Result<u32> {
    let shards_of = |i: &Input| i.results.shards.clone().expect("read() checked");
    let first = &inputs[0];
    let of = shards_of(first).of;
    let mut seen: BTreeMap<u32, &Path> = BTreeMap::new();
    for i in inputs {
        let s = shards_of(i);
        if s.of != of {
            bail!(
                "`{}` is a shard of {} but `{}` one of {of}: they were cut differently",
                i.dir.display(),
                s.of,
                first.dir.display()
            );
        }
        same_run(first, i, &s)?;
        // The header is a claim: the runs must be the shards' own repetitions.
        check_runs(i, &s)?;
        for k in s.have {
            if let Some(other) = seen.insert(k, &i.dir) {
                bail!(
                    "shard {k} of {of} is there twice: in `{}` and in `{}`; give each shard once",
                    other.display(),
                    i.dir.display()
                );
            }
        }
    }
    let missing: Vec<u32> = (1..=of).filter(|k| !seen.contains_key(k)).collect();
    if !missing.is_empty() {
        let have = seen.keys().copied().collect::<Vec<_>>();
        bail!(
            "{} of {of} missing: the directories given hold {} {}; give every shard's results directory",
            if missing.len() == 1 {
                format!("shard {}", missing[0])
            } else {
                format!("shards {}", list(&missing))
            },
            if have.len() == 1 { "shard" } else { "shards" },
            list(&have)
        );
    }
    Ok(of)
}

/// That shard `i` (holding `s`) ran the plan `first` ran, on the same builds, with the same
/// bakeoff, and finished.
fn same_run(first: &Input, i: &Input, s: &Shards) -> anyhow::Result<()> {
    if i.results.plan_hash != first.results.plan_hash {
        bail!(
            "`{}` and `{}` ran different plans (plan hashes {} and {}): the plan file, its templates or --repetitions/--only/--scenario/--smoke differ",
            first.dir.display(),
            i.dir.display(),
            first.results.plan_hash.as_deref().unwrap_or("none"),
            i.results.plan_hash.as_deref().unwrap_or("none")
        );
    }
    if let Some(why) = built_differently(&first.results, &i.results) {
        bail!(
            "`{}` and `{}` measured different builds: {why}; run every shard from the same commits (`--ref`)",
            first.dir.display(),
            i.dir.display()
        );
    }
    if matches!(i.results.status, Status::Running | Status::Interrupted) {
        bail!(
            "shard {} in `{}` did not finish (status {}): finish it with `bakeoff run --resume {}`, then merge",
            list(&s.have),
            i.dir.display(),
            i.results.status,
            i.dir.display()
        );
    }
    if i.results.tool != first.results.tool {
        bail!(
            "`{}` was run by {} and `{}` by {}: shards of one comparison are run by one bakeoff",
            first.dir.display(),
            first.results.tool,
            i.dir.display(),
            i.results.tool
        );
    }
    Ok(())
}

/// The runs as one machine would have run them (setup::schedule): repetition by
/// repetition, or contender by contender in sequential order; and each shard's blocks
/// (numbered from 1 in each) numbered anew in run order.
fn in_run_order(out: &mut Results) {
    let contenders = out.contenders.clone();
    let position = |r: &super::Run| contenders.iter().position(|c| c.ran(&r.id));
    let sequential = out.order == "sequential";
    let key = |r: &super::Run| {
        let (c, rep) = (position(r), r.id.repetition);
        let (a, b) = if sequential {
            (c.unwrap_or(usize::MAX), rep as usize)
        } else {
            (rep as usize, c.unwrap_or(usize::MAX))
        };
        (a, b, r.id.variant.clone(), r.id.shard)
    };
    out.runs.sort_by_key(key);
    // (shard, block) pairs get new numbers in run order, which renumbering again leaves as
    // they are.
    let mut blocks: Vec<(Option<u32>, u32)> = Vec::new();
    for r in &mut out.runs {
        if let Some(b) = r.block {
            let k = (r.id.shard, b);
            let n = match blocks.iter().position(|x| *x == k) {
                Some(n) => n,
                None => {
                    blocks.push(k);
                    blocks.len() - 1
                }
            };
            r.block = Some(n as u32 + 1);
        }
    }
}

/// Merges the shards in `dirs` into `out`: results.json, the plan and every log the runs
/// name (those inside their shard's folder). `out` must not hold results already, and is
/// never one of the shards.
pub fn merge_dirs(dirs: &[PathBuf], out: &Path) -> anyhow::Result<Results> {
    let inputs = dirs
        .iter()
        .map(|d| read(d))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let out_canon = std::fs::canonicalize(out).ok();
    if let Some(i) = inputs
        .iter()
        .find(|i| out_canon.is_some() && std::fs::canonicalize(&i.dir).ok() == out_canon)
    {
        bail!(
            "--out `{}` is the shard `{}` itself: merging there would overwrite its results; choose another --out",
            out.display(),
            i.dir.display()
        );
    }
    if out.join("results.json").exists() {
        bail!(
            "`{}` already holds results; choose another --out",
            out.display()
        );
    }
    let sources: Vec<(PathBuf, Vec<String>)> = inputs
        .iter()
        .map(|i| {
            let logs = i.results.runs.iter().flat_map(|r| r.logs.clone()).collect();
            (i.dir.clone(), logs)
        })
        .collect();
    let plan = inputs[0].dir.join("plan.toml");
    let merged = merge(inputs)?;
    std::fs::create_dir_all(out).with_context(|| format!("cannot create `{}`", out.display()))?;
    if let Ok(text) = crate::sys::read_bounded_bytes(&plan, crate::sys::PLAN_LIMIT) {
        if std::fs::canonicalize(&plan).ok() != std::fs::canonicalize(out.join("plan.toml")).ok() {
            super::write_atomic(&out.join("plan.toml"), &text)?;
        }
    }
    for (dir, logs) in sources {
        for rel in logs {
            // A log named outside the shard's folder is not copied (nor written outside
            // --out): a results file names only its own files.
            let (Some(from), Some(to)) = (super::inside(&dir, &rel), super::inside(out, &rel))
            else {
                eprintln!(
                    "bakeoff: merge: `{}` names a log outside its folder, `{rel}`; not copied",
                    dir.join("results.json").display()
                );
                continue;
            };
            if let Some(parent) = to.parent() {
                std::fs::create_dir_all(parent)?;
            }
            // A log the shard's run could not keep is not a reason to lose the merge.
            let _ = std::fs::copy(&from, &to);
        }
    }
    merged
        .save(out)
        .with_context(|| format!("writing `{}`", out.join("results.json").display()))?;
    Ok(merged)
}

/// A shard's runs are the repetitions its header claims: each run of a shard it holds, of a
/// repetition that shard runs and the plan has, and no shard it claims without a run.
fn check_runs(i: &Input, s: &Shards) -> anyhow::Result<()> {
    let file = i.dir.join("results.json");
    for run in &i.results.runs {
        let k = run.id.shard.unwrap_or(0);
        let shard = super::Shard { k, n: s.of };
        if !s.have.contains(&k) {
            bail!(
                "`{}` says it holds shard {} of {}, but its run {} is of shard {k}: the file was edited or copied from another shard",
                file.display(),
                list(&s.have),
                s.of,
                run.id
            );
        }
        if run.id.repetition == 0
            || run.id.repetition > i.results.repetitions
            || !shard.runs(run.id.repetition)
        {
            bail!(
                "`{}`: run {} is of repetition {}, which shard {shard} does not run (the plan runs {}): the file was edited or copied from another shard",
                file.display(),
                run.id,
                run.id.repetition,
                crate::units::count(i.results.repetitions, "repetition")
            );
        }
    }
    for &k in &s.have {
        if !i.results.runs.iter().any(|r| r.id.shard == Some(k)) {
            bail!(
                "`{}` says it holds shard {k} of {}, but it has no run of it: run that shard again",
                file.display(),
                s.of
            );
        }
    }
    Ok(())
}

/// The first contender whose build differs between two shards: another commit, or a
/// dirty tree's other changes (another cache key).
fn built_differently(a: &Results, b: &Results) -> Option<String> {
    let key = |s: &Option<super::SourceInfo>| s.as_ref().map(|s| (s.commit.clone(), s.key.clone()));
    a.contenders.iter().find_map(|ca| {
        let cb = b.contenders.iter().find(|c| c.name == ca.name)?;
        let members = |c: &super::ContenderInfo| -> Vec<_> {
            c.members.iter().map(|m| key(&m.source)).collect()
        };
        if key(&ca.source) == key(&cb.source) && members(ca) == members(cb) {
            return None;
        }
        let at = |s: &Option<super::SourceInfo>| match s {
            None => "not built from source".to_string(),
            Some(s) => format!(
                "{}{}",
                s.commit
                    .as_deref()
                    .map_or("a folder", |c| crate::units::prefix(c, 12)),
                if s.dirty { " (dirty)" } else { "" }
            ),
        };
        let (sa, sb) = (at(&ca.source), at(&cb.source));
        Some(match sa == sb {
            // The same commit, built another way: say so, not "X in one and X in the other".
            true => {
                format!(
                "contender `{}` is {sa} in both, but built differently ({}: build keys {} and {})",
                ca.name,
                match members(ca) == members(cb) {
                    true => "another build command, environment or toolchain",
                    false => "a member built another way",
                },
                ca.source.as_ref().map_or("–", |s| crate::units::prefix(&s.key, 12)),
                cb.source.as_ref().map_or("–", |s| crate::units::prefix(&s.key, 12))
            )
            }
            false => format!(
                "contender `{}` is {sa} in one and {sb} in the other",
                ca.name
            ),
        })
    })
}

fn list(v: &[u32]) -> String {
    v.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
}
