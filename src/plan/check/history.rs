//! `[history]` (docs/history.md): the commit URL the dashboard links, and the reference —
//! the plan's one contender, built from git, paired with itself at a fixed ref.

use super::*;

/// `[history] reference = "REF"`: the plan's one contender, built from git, gets a partner
/// — the same recipe at REF, named [`crate::plan::REFERENCE`] — as its baseline, so every run is
/// paired against a fixed build.
pub(super) fn with_reference(
    c: &Checker,
    raw: &RawPlan,
    mut all: Vec<Contender>,
) -> Res<Vec<Contender>> {
    let Some(r) = raw.history.as_ref().and_then(|h| h.reference.as_ref()) else {
        return Ok(all);
    };
    let at = r.get_ref().trim();
    if at.is_empty() || at.starts_with('-') {
        return Err(c.at(
            r,
            "`reference` must be a tag, branch or commit, like \"v1.4.0\"",
        ));
    }
    let serving: Vec<usize> = (0..all.len())
        .filter(|&k| all[k].noise_of.is_none() && all[k].variant.is_none())
        .collect();
    let one = match serving[..] {
        [k] => k,
        _ => {
            return Err(c.at(
                r,
                format!(
                    "`reference` pairs the plan's one contender with a fixed build of itself, and this plan has {}: make one the others' `baseline` at a fixed ref instead",
                    crate::units::count(serving.len() as u64, "contender")
                ),
            ))
        }
    };
    let x = &all[one];
    let git = matches!(
        x.source.as_ref().map(|s| &s.from),
        Some(crate::plan::SourceKind::Git { .. })
    );
    if !git || x.baseline.as_ref().is_some_and(|b| *b != x.name) {
        return Err(c.at(
            r,
            format!(
                "`reference` needs the contender to be built from a git `source` with no `baseline`; `{}` is not",
                x.name
            ),
        ));
    }
    if x.name == crate::plan::REFERENCE {
        return Err(c.at(
            r,
            "`reference` adds a contender named `reference`, and the plan's contender has that name: rename it",
        ));
    }
    let mut partner = x.clone();
    partner.name = crate::plan::REFERENCE.to_string();
    partner.baseline = None;
    if let Some(crate::plan::SourceKind::Git { rev, .. }) =
        partner.source.as_mut().map(|s| &mut s.from)
    {
        *rev = crate::plan::Rev::Ref(at.to_string());
    }
    all[one].baseline = Some(crate::plan::REFERENCE.to_string());
    all.insert(one, partner);
    Ok(all)
}

/// `[history]`: a commit URL must say where the commit goes, and be a web address.
pub(super) fn history(c: &Checker, raw: &RawPlan) -> Res<crate::plan::History> {
    let Some(h) = &raw.history else {
        return Ok(crate::plan::History::default());
    };
    let commit_url = match &h.commit_url {
        None => None,
        Some(u) => {
            let s = u.get_ref();
            if !s.contains("{commit}") {
                return Err(c.at(
                    u,
                    "`commit_url` must hold `{commit}`, where the commit id goes",
                ));
            }
            if !(s.starts_with("https://") || s.starts_with("http://")) {
                return Err(c.at(u, "`commit_url` must start with https:// or http://"));
            }
            Some(s.clone())
        }
    };
    let screen = match (&h.night, &h.reference) {
        (None, _) => false,
        (Some(n), None) => {
            return Err(c.at(
                n,
                "`night` says how a run beside the `reference` measures, and this plan names no `reference`",
            ))
        }
        (Some(n), Some(_)) => match n.get_ref().as_str() {
            "screen" => true,
            "full" => false,
            _ => return Err(c.at(n, "`night` is \"screen\" or \"full\"")),
        },
    };
    Ok(crate::plan::History {
        record: h.record.unwrap_or(false),
        commit_url,
        reference: h.reference.as_ref().map(|r| r.get_ref().clone()),
        screen,
    })
}
