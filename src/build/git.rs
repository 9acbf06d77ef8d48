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
