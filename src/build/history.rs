//! The commits between two refs of a contender's repository, for `bakeoff bisect`
//! (docs/bisect.md): first-parent by default, oldest first, each with its subject.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::{git, resolve};
use crate::cancel::Cancel;
use crate::plan::{Rev, Source, SourceKind};

/// A commit of the range a bisection walks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Commit {
    pub id: String,
    /// The first line of its message (control characters dropped, at most 120 characters).
    pub subject: String,
}

/// Whether `s` is a commit id as git prints one: 4 to 64 hex digits. Every id bakeoff reads
/// from a file (results, a history, a bisection's record) or a flag is checked with this
/// before it is used, so none is ever read as an option by git (`--output=FILE`) nor cut
/// inside a character when shortened.
pub fn is_commit_id(s: &str) -> bool {
    (4..=64).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_hexdigit())
}

impl Commit {
    /// The first ten hex digits: the name a commit runs under in a step.
    pub fn short(&self) -> &str {
        crate::units::prefix(&self.id, 10)
    }
}

/// The commits from `good` to `bad`: `good` first, then each commit after it up to `bad`
/// along first parents. `good` must be on that line.
pub fn range(
    src: &Source,
    good: &str,
    bad: &str,
    cache: &Path,
    cancel: &Cancel,
) -> Result<Vec<Commit>, String> {
    let at = |r: &str| {
        let mut s = src.clone();
        if let SourceKind::Git { rev, .. } = &mut s.from {
            *rev = Rev::Ref(r.to_string());
        }
        resolve(&s, cache, cancel)
    };
    let (g, b) = (
        at(good).map_err(|e| format!("--good {good}: {e}"))?,
        at(bad).map_err(|e| format!("--bad {bad}: {e}"))?,
    );
    let (Some(gid), Some(bid)) = (g.commit.clone(), b.commit.clone()) else {
        return Err("a bisection needs a git `source`".into());
    };
    if gid == bid {
        return Err(format!(
            "--good {good} and --bad {bad} are the same commit ({})",
            &gid[..10.min(gid.len())]
        ));
    }
    let repo = &b.from;
    // What a git command printed, trimmed; nothing when it failed.
    let line = |args: &[&str]| {
        git::git(cancel, Some(repo), args)
            .map(|o| String::from_utf8_lossy(&o).trim().to_string())
            .unwrap_or_default()
    };
    if line(&["merge-base", "--end-of-options", &gid, &bid]) != gid {
        return Err(format!(
            "--good {good} is not an ancestor of --bad {bad}: a bisection walks the history from one to the other"
        ));
    }
    let span = format!("{gid}..{bid}");
    let args = [
        "log",
        "--reverse",
        "--first-parent",
        "--format=%H%x09%s",
        "--end-of-options",
        &span,
        "--",
    ];
    let out = git::git(cancel, Some(repo), &args)?;
    let mut commits = vec![describe(cancel, repo, &gid)];
    commits.extend(String::from_utf8_lossy(&out).lines().filter_map(|l| {
        let (id, subject) = l.split_once('\t').unwrap_or((l, ""));
        (id.len() >= 40).then(|| Commit {
            id: id.to_string(),
            subject: clean(subject),
        })
    }));
    // On the line when the oldest commit after `good` has `good` as its first parent.
    let first = commits
        .get(1)
        .map(|c| format!("{}^1", c.id))
        .unwrap_or_default();
    let parent = line(&[
        "rev-parse",
        "--verify",
        "--quiet",
        "--end-of-options",
        &first,
    ]);
    if parent != gid || commits.last().map(|c| &c.id) != Some(&bid) {
        return Err(format!(
            "--good {good} is not on the first-parent line of --bad {bad} (it came in through a merge): give a commit of that line as --good"
        ));
    }
    Ok(commits)
}

/// `id` with its subject.
fn describe(cancel: &Cancel, repo: &Path, id: &str) -> Commit {
    let subject = git::git(
        cancel,
        Some(repo),
        &["log", "-1", "--format=%s", "--end-of-options", id, "--"],
    )
    .map(|o| clean(&String::from_utf8_lossy(&o)))
    .unwrap_or_default();
    Commit {
        id: id.to_string(),
        subject,
    }
}

/// A subject as a report shows it: no control characters, at most 120 characters.
fn clean(s: &str) -> String {
    let s: String = s.trim().chars().filter(|c| !c.is_control()).collect();
    match s.char_indices().nth(120) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s,
    }
}

/// A commit as a history records it.
#[derive(Debug, Clone, PartialEq)]
pub struct Details {
    pub id: String,
    /// Committer time, seconds since the epoch.
    pub time: i64,
    pub subject: String,
    /// The branch checked out in `repo`, when `rev` is its `HEAD` and one is.
    pub branch: Option<String>,
    /// Its place on its first-parent line: the commits from the root to it, following only
    /// first parents (`git rev-list --count --first-parent`). None in a shallow clone, where
    /// the line is cut.
    pub depth: Option<i64>,
}

/// `rev` of the repository at `repo` (a folder in it), when there is one.
pub fn details(repo: &Path, rev: &str, cancel: &Cancel) -> Option<Details> {
    let out = git::git(
        cancel,
        Some(repo),
        &[
            "log",
            "-1",
            "--format=%H%x09%ct%x09%s",
            "--end-of-options",
            rev,
            "--",
        ],
    )
    .ok()?;
    let text = String::from_utf8_lossy(&out);
    let mut parts = text.trim_end().splitn(3, '\t');
    let id = parts.next()?.to_string();
    let time = parts.next()?.parse().ok()?;
    let subject = clean(parts.next().unwrap_or(""));
    let branch = (rev == "HEAD")
        .then(|| {
            git::git(
                cancel,
                Some(repo),
                &["symbolic-ref", "--quiet", "--short", "HEAD"],
            )
            .ok()
        })
        .flatten()
        .map(|b| String::from_utf8_lossy(&b).trim().to_string())
        .filter(|b| !b.is_empty());
    if id.len() < 40 {
        return None;
    }
    let depth = depth(repo, &id, cancel);
    Some(Details {
        id,
        time,
        subject,
        branch,
        depth,
    })
}

/// `commit`'s place on its first-parent line, when the whole line is here.
fn depth(repo: &Path, commit: &str, cancel: &Cancel) -> Option<i64> {
    let shallow = git::git(
        cancel,
        Some(repo),
        &["rev-parse", "--is-shallow-repository"],
    )
    .ok()?;
    if String::from_utf8_lossy(&shallow).trim() != "false" {
        return None;
    }
    let out = git::git(
        cancel,
        Some(repo),
        &[
            "rev-list",
            "--count",
            "--first-parent",
            "--end-of-options",
            commit,
            "--",
        ],
    )
    .ok()?;
    String::from_utf8_lossy(&out).trim().parse().ok()
}
