//! Compat in a run: every case against a started contender's first member (its answers kept
//! in its run record), and the compat references that are members of that contender.

use std::path::Path;

use super::ctx::Ctx;
use super::events::Reporter;
use super::live::save;
use super::options::COMPAT_TIMEOUT;
use crate::contender::Running;
use crate::protocol::target::Endpoint;
use crate::results::{self, Results};

/// Every compat case against the contender's first member; answers kept in run `idx`.
pub(super) fn compat(
    ctx: &Ctx,
    endpoints: &[Endpoint],
    state: &Path,
    results: &mut Results,
    idx: usize,
    rep: &mut dyn Reporter,
) -> anyhow::Result<()> {
    for set in &ctx.plan.compat {
        if ctx.cancel.is_cancelled() {
            return Ok(());
        }
        let answers = crate::compat::run_set(
            set,
            &endpoints[0],
            Some(state),
            ctx.protos,
            COMPAT_TIMEOUT,
            ctx.rt,
        );
        match answers {
            Ok(a) => {
                rep.compat_done(&set.name, a.len());
                results.runs[idx].compat.extend(a);
            }
            Err(e) => {
                rep.point_failed(
                    &results.runs[idx].id.subject(),
                    &set.name,
                    "compat setup",
                    &e,
                );
                let run = results.runs[idx].id.clone();
                results.warnings.push(results::Warning::CompatSetup {
                    run,
                    error: e.to_string(),
                });
            }
        }
        save(ctx.dir, results)?;
    }
    Ok(())
}

/// The compat references that are members of this running contender: each asked every
/// case of its set, at that member, its answers kept as the reference's.
pub(super) fn member_references(
    ctx: &Ctx,
    running: &Running,
    state: &Path,
    results: &mut Results,
    rep: &mut dyn Reporter,
) -> anyhow::Result<()> {
    for set in &ctx.plan.compat {
        let Some(r) = &set.reference else { continue };
        let Some((who, member)) = &r.member else {
            continue;
        };
        if *who != running.name || results.compat_reference.iter().any(|a| a.set == set.name) {
            continue;
        }
        let answers = match running.fill_for(member, &r.endpoint) {
            Ok(at) => (0..set.cases.len())
                .map(|i| {
                    crate::compat::ask_reference_at(
                        set,
                        i,
                        &at,
                        Some(state),
                        ctx.protos,
                        COMPAT_TIMEOUT,
                        ctx.rt,
                    )
                })
                .collect(),
            Err(e) => {
                let w = results::Warning::ReferenceUnreachable {
                    set: set.name.clone(),
                    member: member.to_string(),
                    who: who.to_string(),
                    error: e.to_string(),
                };
                rep.warning(&w.to_string());
                results.warnings.push(w);
                continue;
            }
        };
        super::setup::record_reference(
            set,
            &format!("member `{member}` of `{who}`"),
            answers,
            results,
            rep,
        );
        save(ctx.dir, results)?;
    }
    Ok(())
}
