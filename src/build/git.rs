//! The few git commands a source needs, each under a guard and the command's cancel (git
//! dies with bakeoff, even by SIGKILL, and Ctrl-C ends a fetch from a server that never
//! answers), bounded in time and in what it prints.

use std::path::Path;
use std::time::Duration;

use crate::cancel::Cancel;

/// The most a git command may print that bakeoff reads (a diff of a dirty tree included).
const OUTPUT_LIMIT: u64 = 256 << 20;

/// How long one git command may take (a fetch of a large repository included).
const GIT_TIMEOUT: Duration = Duration::from_secs(600);

/// Runs `git ARGS` (in `dir`), its standard output, or why it failed.
pub(super) fn git(cancel: &Cancel, dir: Option<&Path>, args: &[&str]) -> Result<Vec<u8>, String> {
    let mut all: Vec<&str> = Vec::with_capacity(args.len() + 2);
    let d = dir.map(|d| d.to_string_lossy().into_owned());
    if let Some(d) = &d {
        all.extend(["-C", d.as_str()]);
    }
    all.extend_from_slice(args);
    crate::contender::capture(&crate::contender::Capture {
        program: Path::new("git"),
        args: &all,
        dir: None,
        env: &[("GIT_TERMINAL_PROMPT", "0")],
        cancel,
        limit: GIT_TIMEOUT,
        max_output: OUTPUT_LIMIT,
    })
    .map_err(|e| format!("`git {}`: {e}", args.join(" ")))
}

/// The commit `rev` names in the repository at `repo`.
pub(super) fn commit_of(cancel: &Cancel, repo: &Path, rev: &str) -> Result<String, String> {
    let spec = format!("{rev}^{{commit}}");
    let out = git(
        cancel,
        Some(repo),
        &[
            "rev-parse",
            "--verify",
            "--quiet",
            "--end-of-options",
            &spec,
        ],
    )
    .map_err(|e| match cancel.is_cancelled() {
        true => e,
        false => format!("`{rev}` is not a ref or commit of `{}`", repo.display()),
    })?;
    Ok(String::from_utf8_lossy(&out).trim().to_string())
}

/// The repository's branches and tags (short names), for "did you mean".
pub(super) fn refs(cancel: &Cancel, repo: &Path) -> Vec<String> {
    git(
        cancel,
        Some(repo),
        &[
            "for-each-ref",
            "--format=%(refname:short)",
            "refs/heads",
            "refs/tags",
            "refs/remotes",
        ],
    )
    .map(|o| {
        String::from_utf8_lossy(&o)
            .lines()
            .map(str::to_string)
            .collect()
    })
    .unwrap_or_default()
}

/// NUL-separated paths printed by `git ls-files -z ARGS`.
pub(super) fn ls_files(cancel: &Cancel, repo: &Path, args: &[&str]) -> Result<Vec<String>, String> {
    let mut all = vec!["ls-files", "-z"];
    all.extend_from_slice(args);
    let out = git(cancel, Some(repo), &all)?;
    Ok(out
        .split(|&b| b == 0)
        .filter(|p| !p.is_empty())
        .map(|p| String::from_utf8_lossy(p).into_owned())
        .collect())
}

/// The refs worth suggesting for `word`, which is not one: the nearest by version among refs
/// of the same name before the numbers (`release-1.30.9` → `release-1.29.3`, `release-1.31.0`),
/// then the nearest by spelling; at most four.
pub(super) fn near_refs<'r>(word: &str, refs: &'r [String]) -> Vec<&'r str> {
    let mut out: Vec<&str> = Vec::new();
    if let Some((stem, v)) = version(word) {
        let mut same: Vec<(Vec<u64>, &str)> = refs
            .iter()
            .filter_map(|r| {
                version(r)
                    .filter(|(s, _)| *s == stem)
                    .map(|(_, n)| (n, r.as_str()))
            })
            .collect();
        same.sort();
        let below = same.iter().rev().find(|(n, _)| *n < v);
        let above = same.iter().find(|(n, _)| *n > v);
        out.extend(below.into_iter().chain(above).map(|(_, r)| *r));
    }
    let mut spelled: Vec<&str> = refs.iter().map(String::as_str).collect();
    while out.len() < 4 {
        let Some(n) = crate::plan::error::nearest(word, spelled.iter().copied()) else {
            break;
        };
        spelled.retain(|r| *r != n);
        if !out.contains(&n) {
            out.push(n);
        }
    }
    out
}

/// A ref as its text before the first digit and the numbers after it (`v1.2.10` → `v`,
/// [1, 2, 10]); None without a digit.
fn version(r: &str) -> Option<(&str, Vec<u64>)> {
    let at = r.find(|c: char| c.is_ascii_digit())?;
    let numbers = r[at..]
        .split(|c: char| !c.is_ascii_digit())
        .filter(|p| !p.is_empty())
        .map(|p| p.parse().unwrap_or(u64::MAX))
        .collect();
    Some((&r[..at], numbers))
}

/// Where a run's (or bisection's) folder goes without `--out`:
/// `bakeoff-results/<start>-<name>` in the current folder — or under the repository's git
/// folder when the current folder is in a git work tree that does not ignore
/// `bakeoff-results/`, so nothing is written into the user's checkout ([`results_root`]).
pub fn results_dir(started_at: &str, name: &str) -> std::path::PathBuf {
    let d = crate::results::default_dir(started_at, name);
    match (results_root(Path::new(".")), d.file_name()) {
        (Some(root), Some(leaf)) => root.join(leaf),
        _ => d,
    }
}

/// Where results go by default when `dir` is in a git work tree that does not ignore
/// `bakeoff-results/`: `bakeoff-results/` under the repository's git folder — outside the
/// working tree, so `git status` stays clean, `git clean` keeps them, and a build of the
/// working tree never copies them. `None` outside a work tree, or where the repository
/// ignores `bakeoff-results/` (bakeoff's own does): there the folder stays where it was.
pub fn results_root(dir: &Path) -> Option<std::path::PathBuf> {
    let cancel = Cancel::new();
    let inside = git(&cancel, Some(dir), &["rev-parse", "--is-inside-work-tree"]).ok()?;
    if String::from_utf8_lossy(&inside).trim() != "true" {
        return None;
    }
    let probe = "bakeoff-results/x";
    if git(&cancel, Some(dir), &["check-ignore", "-q", "--", probe]).is_ok() {
        return None;
    }
    let common = git(
        &cancel,
        Some(dir),
        &["rev-parse", "--path-format=absolute", "--git-common-dir"],
    )
    .ok()?;
    let common = String::from_utf8_lossy(&common).trim().to_string();
    (!common.is_empty()).then(|| Path::new(&common).join("bakeoff-results"))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_missing_ref_suggests_its_neighbours_by_version_then_by_spelling() {
        let refs: Vec<String> = [
            "master",
            "release-1.0.9",
            "release-1.29.2",
            "release-1.29.3",
            "release-1.31.0",
            "release-1.9.15",
            "v2.0",
        ]
        .map(String::from)
        .to_vec();
        let near = super::near_refs("release-1.30.9", &refs);
        assert_eq!(near[..2], ["release-1.29.3", "release-1.31.0"], "{near:?}");
        assert!(near.contains(&"release-1.0.9"), "{near:?}");
        assert!(near.len() <= 4, "{near:?}");
        assert_eq!(super::near_refs("mastr", &refs), ["master"]);
        assert!(super::near_refs("zzzzzzzzzz", &refs).is_empty());
    }
}
