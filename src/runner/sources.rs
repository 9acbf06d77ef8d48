//! Contenders from source (docs/from-source.md), before anything is measured: each source —
//! a contender's, and a member's of its own — built once or found in the cache, its tree put
//! in for `{source}`, its provenance recorded; a contender whose build fails is recorded so
//! and left out of the run.

use std::path::Path;

use super::events::Reporter;
use super::live::save;
use super::options::RunOptions;
use crate::plan::{Plan, Source};
use crate::results::Results;

/// The contender named `name` and its copies (its noise instances and what-if variants),
/// by index: they run the same build.
fn copies_of(plan: &Plan, name: &str) -> Vec<usize> {
    plan.contenders
        .iter()
        .enumerate()
        .filter(|(_, o)| {
            o.name == name
                || o.noise_of.as_deref() == Some(name)
                || o.variant.as_ref().is_some_and(|v| v.of == name)
        })
        .map(|(k, _)| k)
        .collect()
}

/// Builds every contender's (and member's) source; returns the indices of contenders whose
/// build failed (they do not run).
pub(super) fn build_all(
    plan: &mut Plan,
    dir: &Path,
    results: &mut Results,
    opts: &RunOptions,
    rep: &mut dyn Reporter,
) -> anyhow::Result<Vec<usize>> {
    let cache = crate::build::cache::root();
    let mut failed = Vec::new();
    for i in 0..plan.contenders.len() {
        let c = &plan.contenders[i];
        // Variants and noise instances are copies of a contender: the same build.
        if c.variant.is_some() || c.noise_of.is_some() {
            continue;
        }
        let name = c.name.clone();
        let env = c.members.first().map(|m| m.env.clone()).unwrap_or_default();
        let copies = copies_of(plan, &name);
        let mut broken = false;
        // One build: its tree, or (the failure said and recorded) none; its provenance.
        let mut build =
            |label: &str, source: &Source, env: &[(String, String)], rep: &mut dyn Reporter| {
                let req = crate::build::Request {
                    contender: label,
                    source,
                    env,
                    results: dir,
                    cache: &cache,
                    rebuild: opts.rebuild,
                    cancel: &opts.cancel,
                };
                match crate::build::build(&req, &mut |t| rep.build_progress(&t)) {
                    Ok(b) => (Some(b.tree), b.info),
                    Err(info) => {
                        rep.contender_failed(&name, info.error.as_deref().unwrap_or_default());
                        broken = true;
                        (None, *info)
                    }
                }
            };
        // Members with sources of their own first: their trees go into their own strings.
        let members: Vec<(usize, crate::plan::Member)> = c
            .members
            .iter()
            .enumerate()
            .filter(|(_, m)| m.source.is_some())
            .map(|(k, m)| (k, m.clone()))
            .collect();
        for (k, m) in members {
            let source = m.source.clone().expect("filtered");
            let (tree, info) = build(&format!("{name}/{}", m.name), &source, &m.env, rep);
            for &x in copies.iter().filter(|_| tree.is_some()) {
                let member = &mut plan.contenders[x].members[k];
                crate::plan::fill_member_source(member, tree.as_deref().expect("built"));
            }
            record(plan, &copies, results, |ci| {
                if let Some(m) = ci.members.get_mut(k) {
                    m.source = Some(info.clone());
                }
            });
        }
        if let Some(source) = plan.contenders[i].source.clone() {
            let (tree, info) = build(&name, &source, &env, rep);
            for &x in copies.iter().filter(|_| tree.is_some()) {
                crate::plan::fill_source(&mut plan.contenders[x], tree.as_deref().expect("built"));
            }
            record(plan, &copies, results, |ci| ci.source = Some(info.clone()));
        }
        if broken {
            failed.extend(&copies);
        }
        save(dir, results)?;
    }
    Ok(failed)
}

/// Writes provenance into the results entry of each copy of a contender.
fn record(
    plan: &Plan,
    copies: &[usize],
    results: &mut Results,
    mut set: impl FnMut(&mut crate::results::ContenderInfo),
) {
    for &k in copies {
        let n = &plan.contenders[k].name;
        if let Some(ci) = results.contenders.iter_mut().find(|x| x.name == *n) {
            set(ci);
        }
    }
}
