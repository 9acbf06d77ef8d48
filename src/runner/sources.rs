//! Contenders from source (docs/from-source.md), before anything is measured: each source
//! built once — or found in the cache — its tree put in for `{source}`, its provenance
//! recorded; a contender whose build fails is recorded so and left out of the run.

use std::path::Path;

use super::events::Reporter;
use super::live::save;
use super::options::RunOptions;
use crate::plan::Plan;
use crate::results::Results;

/// Builds every contender's source; returns the indices of contenders whose build failed
/// (they do not run).
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
        let Some(source) = c.source.clone() else {
            continue;
        };
        let name = c.name.clone();
        let env = c.members.first().map(|m| m.env.clone()).unwrap_or_default();
        let req = crate::build::Request {
            contender: &name,
            source: &source,
            env: &env,
            results: dir,
            cache: &cache,
            rebuild: opts.rebuild,
            cancel: &opts.cancel,
        };
        let built = crate::build::build(&req, &mut |t| rep.build_progress(&t));
        let copies: Vec<usize> = plan
            .contenders
            .iter()
            .enumerate()
            .filter(|(_, o)| {
                o.name == name
                    || o.noise_of.as_deref() == Some(&name)
                    || o.variant.as_ref().is_some_and(|v| v.of == name)
            })
            .map(|(k, _)| k)
            .collect();
        let info = match built {
            Ok(b) => {
                for &k in &copies {
                    crate::plan::fill_source(&mut plan.contenders[k], &b.tree);
                }
                b.info
            }
            Err(info) => {
                let why = info.error.clone().unwrap_or_default();
                rep.contender_failed(&name, &why);
                failed.extend(&copies);
                *info
            }
        };
        for k in &copies {
            let n = &plan.contenders[*k].name;
            if let Some(ci) = results.contenders.iter_mut().find(|x| x.name == *n) {
                ci.source = Some(info.clone());
            }
        }
        save(dir, results)?;
    }
    Ok(failed)
}
