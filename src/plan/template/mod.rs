//! Templates a plan can use instead of copies, expanded on the plan as written (spans kept,
//! so an error still points at the value that was written) before anything is checked:
//!
//! 1. `like = "other"` copies every key a contender does not set from `other` (after
//!    `other`'s own `like`), except `name`, `like` and `noise_of`; `command` and `endpoint`
//!    go together with the members (a contender that sets one kind gets none of the other),
//!    `vars` and `env` are merged, this contender's entries winning.
//! 2. `members = N` turns the one `[[contender.member]]` into N members; `{index}` (1..N) in
//!    its strings is each member's number, and its name defaults to `m{index}`.
//! 3. `{join:SEP:PATTERN}` in any string of the contender becomes PATTERN once per member,
//!    with that member's `{member}` and `{index}`, joined by SEP (etcd's
//!    `--initial-cluster m1=…,m2=…,m3=…`). `{index}` elsewhere in a member is its own number.
//! 4. `vars = { name = "value" }`: `{name}` in every string of the contender and its members
//!    is the value (values may use the other placeholders, not other vars).
//!
//! `bakeoff plan show` prints the result, so nothing is magic.

use std::ops::Range;

use toml::Spanned;

use super::error::{did_you_mean, nearest};
use super::raw::{RawContender, RawMember, RawPlan, RawProbe, RawTls};
use super::PlanError;
mod walk;
use walk::*;

type Res<T> = Result<T, PlanError>;

/// Placeholders filled in when a member starts, or by the template itself: never vars.
const RESERVED: &[&str] = &["port", "state", "member", "index", "join", "env", "source"];

/// The placeholders that take an argument after a colon when a member starts
/// (`{port:NAME}`, `{env:NAME}`); `{join:…}` is gone by then.
const COLON_KINDS: &[&str] = &["port", "env"];

/// The most members one template may make.
const MAX_MEMBERS: i64 = 100;

/// Expands `like`, `members = N`, `{join:…}`, `{index}` and `vars` in place.
pub(super) fn expand(raw: &mut RawPlan, at: &dyn Fn(Range<usize>, String) -> PlanError) -> Res<()> {
    resolve_likes(&mut raw.contenders, at)?;
    for c in &mut raw.contenders {
        let span = c.span();
        expand_contender(c.get_mut(), span, at)?;
    }
    Ok(())
}

fn resolve_likes(
    list: &mut [Spanned<RawContender>],
    at: &dyn Fn(Range<usize>, String) -> PlanError,
) -> Res<()> {
    let names: Vec<String> = list
        .iter()
        .map(|c| c.get_ref().name.get_ref().clone())
        .collect();
    // Resolve in dependency order: a contender copies from one whose own `like` is done.
    let mut done = vec![false; list.len()];
    for start in 0..list.len() {
        let mut chain = Vec::new();
        let mut i = start;
        while !done[i] {
            if chain.contains(&i) {
                let like = list[i].get_ref().like.as_ref().expect("in a chain");
                let cycle: Vec<&str> = chain.iter().map(|&j| names[j].as_str()).collect();
                return Err(at(
                    like.span(),
                    format!(
                        "`like` goes round in a circle: {} → {}",
                        cycle.join(" → "),
                        names[i]
                    ),
                ));
            }
            chain.push(i);
            match &list[i].get_ref().like {
                None => break,
                Some(l) => {
                    let Some(j) = names.iter().position(|n| n == l.get_ref()) else {
                        let hint = did_you_mean(l.get_ref(), names.iter().map(String::as_str));
                        return Err(at(
                            l.span(),
                            format!("`like`: no contender is named `{}`{hint}", l.get_ref()),
                        ));
                    };
                    if j == i {
                        return Err(at(l.span(), "`like` names another contender".into()));
                    }
                    i = j;
                }
            }
        }
        // Copy from the end of the chain back to its start.
        for &k in chain.iter().rev() {
            if done[k] {
                continue;
            }
            if let Some(l) = list[k].get_ref().like.clone() {
                let j = names
                    .iter()
                    .position(|n| n == l.get_ref())
                    .expect("checked");
                let from = list[j].get_ref().clone();
                copy_from(list[k].get_mut(), &from);
            }
            done[k] = true;
        }
    }
    Ok(())
}

/// A source is copied key by key: a contender that gives only `ref` keeps the other's
/// repository (a `path` or a `git` of its own stands alone).
fn copy_source(to: &mut RawContender, from: &RawContender) {
    match (&mut to.source, &from.source) {
        (None, Some(f)) => to.source = Some(f.clone()),
        (Some(t), Some(f)) => {
            let (t, f) = (t.get_mut(), f.get_ref());
            if t.git.is_none() && t.path.is_none() {
                t.git = f.git.clone();
                t.path = f.path.clone();
            }
            if t.reference.is_none() && t.worktree.is_none() {
                t.reference = f.reference.clone();
                t.worktree = f.worktree;
            }
            // How it is built comes with the repository (docs/from-source.md: key by key).
            if t.incremental.is_none() && t.path.is_none() {
                t.incremental = f.incremental;
            }
        }
        _ => {}
    }
    if to.build.is_empty() {
        to.build = from.build.clone();
    }
    if to.build_timeout.is_none() {
        to.build_timeout = from.build_timeout.clone();
    }
}

/// Fills what `to` leaves out from `from`.
fn copy_from(to: &mut RawContender, from: &RawContender) {
    fn fill<T: Clone>(to: &mut Option<T>, from: &Option<T>) {
        if to.is_none() {
            *to = from.clone();
        }
    }
    let is_cluster = !to.members.is_empty() || to.count.is_some();
    let is_single = to.command.is_some() || to.endpoint.is_some();
    if !is_cluster && !is_single {
        to.command = from.command.clone();
        to.endpoint = from.endpoint.clone();
        to.members = from.members.clone();
        to.count = from.count.clone();
    }
    fill(&mut to.baseline, &from.baseline);
    fill(&mut to.dir, &from.dir);
    fill(&mut to.ready, &from.ready);
    fill(&mut to.ready_when, &from.ready_when);
    fill(&mut to.leader, &from.leader);
    fill(&mut to.stop_timeout, &from.stop_timeout);
    if to.setup.is_empty() {
        to.setup = from.setup.clone();
    }
    if to.cleanup.is_empty() {
        to.cleanup = from.cleanup.clone();
    }
    for (k, v) in &from.env {
        to.env.entry(k.clone()).or_insert_with(|| v.clone());
    }
    for (k, v) in &from.vars {
        to.vars.entry(k.clone()).or_insert_with(|| v.clone());
    }
    copy_source(to, from);
    to.like = None;
}

/// A contender's `vars` are named like placeholders, and none is a reserved one.
fn vars_named_well(c: &RawContender, at: &dyn Fn(Range<usize>, String) -> PlanError) -> Res<()> {
    for (k, v) in &c.vars {
        let ok = k
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !ok || RESERVED.contains(&k.as_str()) {
            return Err(at(
                v.span(),
                format!(
                    "`{k}` cannot be a var: use letters, digits and `_`, and none of {}",
                    RESERVED.join(", ")
                ),
            ));
        }
    }
    Ok(())
}

/// `members = N`: the one `[[contender.member]]` is the template of N members (`{index}` in
/// its name is each one's number).
fn members_from_template(
    c: &mut RawContender,
    at: &dyn Fn(Range<usize>, String) -> PlanError,
) -> Res<()> {
    if let Some(n) = &c.count {
        let count = *n.get_ref();
        if !(1..=MAX_MEMBERS).contains(&count) {
            return Err(at(
                n.span(),
                format!("`members` is a number of members from 1 to {MAX_MEMBERS}"),
            ));
        }
        if c.members.len() != 1 {
            return Err(at(
                n.span(),
                format!(
                    "`members = {count}` needs exactly one `[[contender.member]]`, the template (this contender has {})",
                    c.members.len()
                ),
            ));
        }
        let template = c.members.remove(0);
        let tspan = template.span();
        for i in 1..=count {
            let mut m = template.get_ref().clone();
            let name = m
                .name
                .get_or_insert_with(|| Spanned::new(tspan.clone(), "m{index}".to_string()));
            *name.get_mut() = name.get_ref().replace("{index}", &i.to_string());
            c.members.push(Spanned::new(tspan.clone(), m));
        }
        c.count = None;
    }

    Ok(())
}

fn expand_contender(
    c: &mut RawContender,
    span: Range<usize>,
    at: &dyn Fn(Range<usize>, String) -> PlanError,
) -> Res<()> {
    vars_named_well(c, at)?;
    members_from_template(c, at)?;
    // Member names as they will be, for `{join:…}`: vars filled in, `{index}` their number.
    let vars: Vec<(String, String)> = c
        .vars
        .iter()
        .map(|(k, v)| (k.clone(), v.get_ref().clone()))
        .collect();
    let names: Vec<String> = if c.members.is_empty() {
        vec![c.name.get_ref().clone()]
    } else {
        c.members
            .iter()
            .enumerate()
            .map(|(i, m)| {
                let n = m
                    .get_ref()
                    .name
                    .as_ref()
                    .map_or("", |n| n.get_ref().as_str());
                fill_vars(n, &vars).replace("{index}", &(i + 1).to_string())
            })
            .collect()
    };
    let fill = |text: &str, index: Option<usize>, span: &Range<usize>| -> Res<String> {
        let t = fill_vars(text, &vars);
        let t = expand_joins(&t, &names).map_err(|e| at(span.clone(), e))?;
        Ok(match index {
            Some(i) => t.replace("{index}", &i.to_string()),
            None => t,
        })
    };

    let own = c.vars.keys().cloned().collect::<Vec<_>>();
    let cname = c.name.get_ref().clone();
    let mut total = 0usize;
    let mut edit = |text: &mut String, index: Option<usize>, span: &Range<usize>| -> Res<()> {
        *text = fill(text, index, span)?;
        total += text.len();
        if total > EXPANDED_LIMIT {
            return Err(at(
                span.clone(),
                format!("contender `{cname}`: its templates expand to more than {} MiB of text (a `{{join:…}}` over many members, in many strings?)", EXPANDED_LIMIT >> 20),
            ));
        }
        // Outside a member `{index}` stands for nothing: it would reach the program as text.
        if index.is_none() && text.contains("{index}") {
            return Err(at(
                span.clone(),
                format!("contender `{cname}`: `{{index}}` is a member's number, for `[[contender.member]]` strings (or a `members = N` template), not the contender's"),
            ));
        }
        unknown_var(text, &own).map_or(Ok(()), |(word, hint)| {
            Err(at(
                span.clone(),
                format!("contender `{cname}`: `{{{word}}}` is not a placeholder or one of its `vars`{hint}"),
            ))
        })
    };
    walk_contender(c, span, &mut edit)?;
    c.vars.clear();
    Ok(())
}

/// The most text templates may expand a contender's strings to, in all.
const EXPANDED_LIMIT: usize = 16 << 20;

/// `{join:SEP:PATTERN}` → PATTERN for each member (with `{member}` and `{index}`), joined by
/// SEP. PATTERN may hold other placeholders, braces balanced.
fn expand_joins(text: &str, members: &[String]) -> Result<String, String> {
    const KEY: &str = "{join:";
    if text.contains("{join}") {
        return Err(format!("`{text}`: `{{join}}` needs a separator and a pattern: write {{join:SEP:PATTERN}}, e.g. {{join:,:{{member}}=http://127.0.0.1:{{port:p{{index}}}}}}"));
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find(KEY) {
        out.push_str(&rest[..i]);
        let after = &rest[i + KEY.len()..];
        let Some(colon) = after.find(':') else {
            return Err(format!("`{text}`: write {{join:SEP:PATTERN}}, e.g. {{join:,:{{member}}=http://127.0.0.1:{{port:p{{index}}}}}}"));
        };
        let sep = &after[..colon];
        let body = &after[colon + 1..];
        let mut depth = 1usize;
        let mut end = None;
        for (j, ch) in body.char_indices() {
            match ch {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = Some(j);
                        break;
                    }
                }
                _ => {}
            }
        }
        let Some(end) = end else {
            return Err(format!("`{text}`: `{{join:` is not closed with `}}`"));
        };
        let pattern = &body[..end];
        if pattern.contains(KEY) {
            return Err(format!("`{text}`: a `{{join:…}}` inside another is not expanded; write the inner list out, or make one pattern of both"));
        }
        if !pattern.contains("{member}") && !pattern.contains("{index}") {
            return Err(format!("`{text}`: the `{{join:…}}` pattern `{pattern}` names neither `{{member}}` nor `{{index}}`, so every member's part would be the same text"));
        }
        // Bounded before it is made: a long pattern over many members in many strings once
        // took gigabytes.
        if (out.len() + rest.len()).saturating_add(pattern.len().saturating_mul(members.len()))
            > EXPANDED_LIMIT
        {
            return Err(format!(
                "its `{{join:…}}` over {} would make more than {} MiB of text",
                crate::units::count(members.len() as u64, "member"),
                EXPANDED_LIMIT >> 20
            ));
        }
        let parts: Vec<String> = members
            .iter()
            .enumerate()
            .map(|(k, name)| {
                pattern
                    .replace("{member}", name)
                    .replace("{index}", &(k + 1).to_string())
            })
            .collect();
        out.push_str(&parts.join(sep));
        rest = &body[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

fn fill_vars(text: &str, vars: &[(String, String)]) -> String {
    super::fill_vars(text, vars)
}

/// A `{word}` left in a contender's string that no one will fill in (a var's typo), with the
/// nearest var as a hint. `${HOME}` (the shell's) is not one.
fn unknown_var(text: &str, vars: &[String]) -> Option<(String, String)> {
    let bytes = text.as_bytes();
    let mut i = 0;
    while let Some(off) = text[i..].find('{') {
        let start = i + off;
        i = start + 1;
        if start > 0 && bytes[start - 1] == b'$' {
            continue;
        }
        let Some(len) = text[start + 1..].find('}') else {
            break;
        };
        let inner = &text[start + 1..start + 1 + len];
        // `{kind:…}`: only the kinds filled in when a member starts take an argument.
        let word = inner.split_once(':').map_or(inner, |(kind, _)| kind);
        if word != inner && COLON_KINDS.contains(&word) {
            continue;
        }
        let is_word = word
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && word.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if is_word && word != inner {
            return Some((
                inner.to_string(),
                "; the placeholders that take an argument are `{port:NAME}` and `{env:NAME}`"
                    .to_string(),
            ));
        }
        if is_word && !RESERVED.contains(&word) {
            let hint = nearest(word, vars.iter().map(String::as_str))
                .map(|n| format!("; did you mean `{{{n}}}`?"))
                .unwrap_or_default();
            return Some((word.to_string(), hint));
        }
    }
    None
}

/// The plan as `run` will see it, templates expanded, as TOML.
pub(super) fn show(raw: &RawPlan) -> Result<String, String> {
    toml::to_string(raw).map_err(|e| e.to_string())
}
