//! `source`, `build` and `build_timeout` on a contender (docs/from-source.md), checked: one
//! kind of source, a ref or the working tree for git, `build` and `{source}` only with a
//! source. No I/O beyond the plan: refs are resolved by the `build` module.

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::raw::{RawContender, RawMember, RawSource};
use super::{Check, Contender, PlanError, Probe};
use toml::Spanned;

type Res<T> = Result<T, PlanError>;

/// Where a contender's source is, and how it is built.
#[derive(Debug, Clone, PartialEq)]
pub struct Source {
    pub from: SourceKind,
    /// Commands run in the checked-out tree's root, one after another.
    pub build: Vec<Vec<String>>,
    pub build_timeout: Duration,
    /// `incremental = true`: each commit is built in one work tree kept in the cache, so a
    /// build reuses what the one before left (docs/bisect.md, "Builds fast enough").
    pub incremental: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub enum SourceKind {
    /// A git repository: `repo` as written in the plan, `at` where it is.
    Git {
        repo: String,
        at: Location,
        rev: Rev,
    },
    /// A folder, used as it is.
    Path(PathBuf),
}

/// Where a repository is.
#[derive(Debug, Clone, PartialEq)]
pub enum Location {
    /// A folder on this machine (absolute).
    Local(PathBuf),
    /// A URL git fetches from.
    Url(String),
}

/// Which state of a repository.
#[derive(Debug, Clone, PartialEq)]
pub enum Rev {
    /// A tag, branch, commit or any revision git understands.
    Ref(String),
    /// The working tree as it is, uncommitted and untracked changes included.
    Worktree,
}

impl Source {
    /// `repository @ ref` as the plan says it (a password in a URL shown as `***`).
    pub fn describe(&self) -> String {
        match &self.from {
            SourceKind::Git { repo, rev, .. } => {
                let repo = crate::protocol::target::Endpoint::redact(repo);
                match rev {
                    Rev::Ref(r) => format!("{repo} @ {r}"),
                    Rev::Worktree => format!("{repo} (working tree)"),
                }
            }
            SourceKind::Path(p) => p.display().to_string(),
        }
    }
}

/// The default `build_timeout`.
pub const BUILD_TIMEOUT: Duration = Duration::from_secs(30 * 60);

/// A URL rather than a folder: `scheme://…`, or scp-like `user@host:path`.
fn is_url(repo: &str) -> bool {
    repo.contains("://") || (repo.contains('@') && repo.contains(':') && !repo.starts_with('/'))
}

/// The contender's source, checked; `None` when it has none (then `build` is an error, and
/// `{source}` too unless a member has a source of its own).
pub(super) fn check(
    r: &RawContender,
    base: &Path,
    at: &dyn Fn(Range<usize>, String) -> PlanError,
) -> Res<Option<Source>> {
    let name = r.name.get_ref();
    if r.source.is_none()
        && r.members.iter().all(|m| m.get_ref().source.is_none())
        && mentions_source(r)
    {
        return Err(at(
            r.name.span(),
            format!(
                "contender `{name}`: `{{source}}` is the built tree of a `source`, and it has none"
            ),
        ));
    }
    parts(
        &format!("contender `{name}`"),
        r.source.as_ref(),
        &r.build,
        r.build_timeout.as_ref(),
        base,
        at,
    )
}

/// A member's own source (`[[contender.member]]` with `source`), checked.
pub(super) fn member(
    m: &RawMember,
    who: &str,
    base: &Path,
    at: &dyn Fn(Range<usize>, String) -> PlanError,
) -> Res<Option<Source>> {
    parts(
        who,
        m.source.as_ref(),
        &m.build,
        m.build_timeout.as_ref(),
        base,
        at,
    )
}

fn parts(
    name: &str,
    source: Option<&Spanned<RawSource>>,
    build_cmds: &[Spanned<Vec<String>>],
    timeout: Option<&Spanned<String>>,
    base: &Path,
    at: &dyn Fn(Range<usize>, String) -> PlanError,
) -> Res<Option<Source>> {
    let Some(s) = source else {
        if let Some(b) = build_cmds.first() {
            return Err(at(
                b.span(),
                format!("{name}: `build` needs a `source` to build"),
            ));
        }
        return Ok(None);
    };
    let (span, raw) = (s.span(), s.get_ref());
    let err = |m: String| Err(at(span.clone(), format!("{name}: {m}")));
    names(raw).map_err(|m| at(span.clone(), format!("{name}: {m}")))?;
    let from = match (&raw.git, &raw.path) {
        (Some(_), Some(_)) => return err("`source` is either `git` or `path`, not both".into()),
        (None, None) => {
            return err(
                "`source` needs `git = \"…\"` (a repository: a folder or a URL) or `path = \"…\"` (a folder)"
                    .into(),
            )
        }
        (None, Some(p)) => {
            if raw.reference.is_some() || raw.worktree.is_some() || raw.incremental.is_some() {
                return err("`ref`, `worktree` and `incremental` are for a `git` source; a `path` is built as it is".into());
            }
            SourceKind::Path(base.join(p))
        }
        (Some(g), None) => {
            let rev = match (&raw.reference, raw.worktree) {
                (Some(_), Some(true)) => {
                    return err("give `ref` or `worktree = true`, not both".into())
                }
                (Some(r), _) if r.trim().is_empty() => return err("`ref` is empty".into()),
                (Some(r), _) => Rev::Ref(r.clone()),
                (None, Some(true)) => Rev::Worktree,
                (None, _) => {
                    return err("a `git` source needs `ref = \"…\"` (a tag, branch or commit) or `worktree = true` (the working tree with its changes)".into())
                }
            };
            if g.starts_with('-') {
                // git would read `--upload-pack=…` as an option (bakeoff passes `--`, so
                // the clone fails and the network gets the blame).
                return err(format!(
                    "`git = {g:?}` is not a repository: a path or URL cannot begin with `-` (write `./-name` for a folder named so)"
                ));
            }
            let at = if is_url(g) {
                if rev == Rev::Worktree {
                    return err("`worktree = true` is for a repository on this machine, not a URL".into());
                }
                Location::Url(g.clone())
            } else {
                Location::Local(base.join(g))
            };
            SourceKind::Git {
                repo: g.clone(),
                at,
                rev,
            }
        }
    };
    let mut build = Vec::new();
    for b in build_cmds {
        if b.get_ref().first().is_none_or(|p| p.trim().is_empty()) {
            return Err(at(
                b.span(),
                "a build command is a list: program first, then its arguments".into(),
            ));
        }
        build.push(b.get_ref().clone());
    }
    let build_timeout = match timeout {
        None => BUILD_TIMEOUT,
        Some(t) => match super::parse_duration(t.get_ref()) {
            Ok(d) if !d.is_zero() => d,
            Ok(_) => return Err(at(t.span(), "`build_timeout` must be longer than 0".into())),
            Err(e) => return Err(at(t.span(), format!("`build_timeout`: {e}"))),
        },
    };
    Ok(Some(Source {
        from,
        build,
        build_timeout,
        incremental: raw.incremental.unwrap_or(false),
    }))
}

/// A source's `git`, `path` and `ref` are names git or a folder could have: no line breaks
/// or other control characters (a path with a newline passed `plan check`), and of a name's
/// length (a 1 MB ref was echoed whole in every message).
fn names(raw: &RawSource) -> Result<(), String> {
    for (key, v) in [
        ("git", raw.git.as_deref()),
        ("path", raw.path.as_deref()),
        ("ref", raw.reference.as_deref()),
    ] {
        let Some(v) = v else { continue };
        if v.chars().any(char::is_control) {
            return Err(format!(
                "`source.{key}` holds a control character (a line break?)"
            ));
        }
        if v.len() > 4096 {
            return Err(format!(
                "`source.{key}` is {} bytes; a repository, folder or ref is a name, 4096 bytes at most",
                v.len()
            ));
        }
    }
    Ok(())
}

/// Whether any of the contender's strings holds `{source}`.
fn mentions_source(r: &RawContender) -> bool {
    toml::to_string(r).is_ok_and(|t| t.contains("{source}"))
}

/// Puts a member's own built tree in for `{source}` in that member's strings.
pub fn fill_member(m: &mut super::Member, tree: &Path) {
    let tree = tree.display().to_string();
    let f = |s: &mut String| {
        if s.contains("{source}") {
            *s = s.replace("{source}", &tree);
        }
    };
    m.command.iter_mut().for_each(f);
    m.env.iter_mut().for_each(|(_, v)| f(v));
    f(&mut m.endpoint);
    probe_strings(&mut m.ready).into_iter().for_each(f);
}

/// Puts the built tree's path in for `{source}` in every string of the contender (but the
/// members that have sources of their own).
pub fn fill(c: &mut Contender, tree: &Path) {
    let tree = tree.display().to_string();
    let f = |s: &mut String| {
        if s.contains("{source}") {
            *s = s.replace("{source}", &tree);
        }
    };
    let cmds = |v: &mut Vec<Vec<String>>| v.iter_mut().flatten().for_each(f);
    cmds(&mut c.setup);
    cmds(&mut c.cleanup);
    if let Some(d) = &mut c.dir {
        let mut s = d.display().to_string();
        f(&mut s);
        *d = PathBuf::from(s);
    }
    for m in c.members.iter_mut().filter(|m| m.source.is_none()) {
        m.command.iter_mut().for_each(f);
        m.env.iter_mut().for_each(|(_, v)| f(v));
        f(&mut m.endpoint);
        probe_strings(&mut m.ready).into_iter().for_each(f);
    }
    for p in c.ready_when.iter_mut().chain(c.leader.iter_mut()) {
        probe_strings(p).into_iter().for_each(f);
    }
}

/// The strings of a probe a placeholder can stand in.
fn probe_strings(p: &mut Probe) -> Vec<&mut String> {
    match &mut p.check {
        Check::Tcp(a) | Check::Log(a) => vec![a],
        Check::Http { url, .. } => vec![url],
        Check::Grpc { endpoint, .. } | Check::JsonRpc { endpoint, .. } => {
            endpoint.iter_mut().collect()
        }
        Check::Command(cmd) => cmd.iter_mut().collect(),
    }
}
