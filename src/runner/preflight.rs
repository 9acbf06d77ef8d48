//! Checks that need more than the plan's text, done before any contender starts: programs
//! exist, `{env:…}` variables are set, and every scenario's requests can be built (gRPC
//! messages checked against the `.proto` files) — so a typo costs seconds, not a run.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Context as _;

use crate::contender::{expand, ports_named, Placeholders};
use crate::plan::Plan;

use crate::client::{self, Client, Descriptors, Options};

/// Every check; what each source resolved to, one line each (`plan check` prints them).
pub fn check(
    plan: &Plan,
    protos: &Descriptors,
    cancel: &crate::cancel::Cancel,
) -> anyhow::Result<Vec<String>> {
    let resolved = sources_and_hosts_resolve(plan, cancel)?;
    programs_exist(plan)?;
    let dummy = client::endpoints(&["http://127.0.0.1:1".to_string()])?;
    // The dummy endpoint is plaintext: TLS settings are checked when a contender's
    // endpoints are known (its certificate may not exist before it starts).
    let opts = Options {
        seed: plan.seed,
        keep_body: false,
        tls: Default::default(),
    };
    // Without .proto files a gRPC call is described by the contender itself (reflection),
    // which cannot be asked before it runs.
    let checkable =
        |c: &crate::plan::Call| !(protos.is_empty() && matches!(c, crate::plan::Call::Grpc { .. }));
    for s in plan.scenarios.iter().filter(|s| checkable(&s.call)) {
        for p in &s.points {
            Client::build(&s.call.with_vars(&p.vars.0), &dummy, protos, opts.clone())
                .with_context(|| format!("scenario `{}` [{}]", s.name, p.label()))?;
            for step in s.setup.iter().filter(|st| checkable(&st.call)) {
                Client::build(
                    &step.call.with_vars(&p.vars.0),
                    &dummy,
                    protos,
                    opts.clone(),
                )
                .with_context(|| format!("scenario `{}` [{}], setup step", s.name, p.label()))?;
            }
        }
    }
    Ok(resolved)
}

/// Every source's ref resolves (a URL is fetched into the cache for it), and every outside
/// compat reference's host (the plan check read its syntax only). What each source resolved
/// to: `new: repo @ main → 1a2b3c4d5e6f (clean)`.
fn sources_and_hosts_resolve(
    plan: &Plan,
    cancel: &crate::cancel::Cancel,
) -> anyhow::Result<Vec<String>> {
    let cache = crate::build::cache::root();
    let mut resolved = Vec::new();
    // `who` as the report names it (`contender/member`), `whose` as an error does.
    let mut resolve = |who: String, whose: String, s: &crate::plan::Source| {
        let r = crate::build::resolve(s, &cache, cancel)
            .map_err(|e| anyhow::anyhow!("{whose}: source: {e}"))?;
        let at = match &r.commit {
            Some(c) => format!(
                "{} ({})",
                crate::units::prefix(c, 12),
                if r.dirty { "with changes" } else { "clean" }
            ),
            None => "a folder, as it is".into(),
        };
        resolved.push(format!("{who}: {} → {at}", s.describe()));
        anyhow::Ok(())
    };
    for c in plan.contenders.iter().filter(|c| c.variant.is_none()) {
        if let Some(s) = &c.source {
            resolve(c.name.clone(), format!("contender `{}`", c.name), s)?;
        }
        for m in &c.members {
            if let Some(s) = &m.source {
                let whose = format!("contender `{}`, member `{}`", c.name, m.name);
                resolve(format!("{}/{}", c.name, m.name), whose, s)?;
            }
        }
    }
    for set in &plan.compat {
        if let Some(r) = set.reference.as_ref().filter(|r| r.member.is_none()) {
            crate::protocol::target::Endpoint::parse(&r.endpoint)
                .map_err(|e| anyhow::anyhow!("compat `{}`: reference: {e}", set.name))?;
        }
    }
    Ok(resolved)
}

/// Every member's placeholders fill in and its program exists (a program of a built tree
/// exists once it is built).
fn programs_exist(plan: &Plan) -> anyhow::Result<()> {
    for c in &plan.contenders {
        let ports: BTreeMap<String, u16> = ports_named(c).into_iter().map(|n| (n, 1)).collect();
        for m in &c.members {
            let ph = Placeholders {
                ports: &ports,
                state: PathBuf::from("/state"),
                member: m.name.clone(),
            };
            let at = |e: String| {
                let e = format!("contender `{}`, member `{}`: {e}", c.name, m.name);
                anyhow::anyhow!(unset_env_hint(plan, e))
            };
            for arg in m.command.iter().chain(m.env.iter().map(|(_, v)| v)) {
                expand(arg, &ph).map_err(at)?;
            }
            let program = expand(&m.command[0], &ph).map_err(at)?;
            let dir = c.dir.as_deref();
            if !program.contains("{source}") && !program_exists(&program, dir) {
                let e = format!(
                    "contender `{}`: program `{program}` not found{}",
                    c.name,
                    if program.contains('/') {
                        ""
                    } else {
                        " on PATH"
                    }
                );
                anyhow::bail!(written_at(plan, &c.name, &m.command[0], e));
            }
        }
    }
    Ok(())
}

/// `message` at the place the plan writes `word` as a string, first after the contender's
/// name is written (file:line:column); as it is when the plan does not write it so (a
/// contender a matrix or a what-if made).
fn written_at(plan: &Plan, contender: &str, word: &str, message: String) -> String {
    let quoted = |w: &str| [format!("\"{w}\""), format!("'{w}'")];
    let find = |from: usize| {
        quoted(word)
            .iter()
            .filter_map(|q| plan.text[from..].find(q.as_str()).map(|at| from + at))
            .min()
    };
    let named = quoted(contender)
        .iter()
        .filter_map(|q| plan.text.find(q.as_str()))
        .min()
        .unwrap_or(0);
    match find(named).or_else(|| find(0)) {
        Some(at) => crate::plan::error::Locator::new(&plan.path, &plan.text)
            .at(at..at + word.len() + 2, message)
            .to_string(),
        None => message,
    }
}

fn program_exists(program: &str, dir: Option<&Path>) -> bool {
    if program.contains('/') {
        let p = Path::new(program);
        return match dir {
            Some(d) if p.is_relative() => d.join(p).is_file(),
            _ => p.is_file(),
        };
    }
    std::env::var_os("PATH")
        .map(|path| std::env::split_paths(&path).any(|d| d.join(program).is_file()))
        .unwrap_or(false)
}

/// A `{env:NAME}` that is not set: where the plan uses it (file:line:column) and how to set
/// it — the plan's own `export NAME=…` comment when it has one.
fn unset_env_hint(plan: &Plan, message: String) -> String {
    let Some(name) = message
        .split("the environment variable ")
        .nth(1)
        .and_then(|rest| rest.strip_suffix(" is not set"))
        .map(str::to_string)
    else {
        return message;
    };
    let Some(at) = plan.text.find(&format!("{{env:{name}")) else {
        return message;
    };
    let here = crate::plan::error::Locator::new(&plan.path, &plan.text).at(at..at, message.clone());
    let export = format!("export {name}=");
    let how = plan
        .text
        .lines()
        .map(|l| l.trim_start_matches(['#', ' ']))
        .find(|l| l.starts_with(&export))
        .map_or(format!("set it first: `{export}…`"), |l| {
            format!("set it first, as the plan's comment says: `{l}`")
        });
    format!("{here}; {how}")
}
