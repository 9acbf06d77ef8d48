//! `bakeoff ci publish` (docs/scale-out.md, "The nightly"): a folder — the history's
//! dashboard and badge — made the whole tree of a branch (`gh-pages`) as one new commit on
//! top of it, and pushed; never forced, so a push that is not a fast-forward fails and
//! nothing of the branch is lost. The checkout's index, files and HEAD are not touched: the
//! commit is made with an index of its own.

use std::path::Path;
use std::time::Duration;

use anyhow::{bail, Context as _};

use crate::cancel::Cancel;

/// How long one git call may take (a push over a slow network included).
const GIT_TIMEOUT: Duration = Duration::from_secs(300);

/// What publishing came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Published {
    /// The branch's new commit.
    Pushed(String),
    /// The branch already holds exactly these files.
    Unchanged,
}

/// A name git and a shell take as one plain word: a branch or a remote.
fn plain(what: &str, name: &str) -> anyhow::Result<()> {
    let ok = !name.is_empty()
        && !name.starts_with(['-', '.', '/'])
        && !name.ends_with(['/', '.'])
        && !name.contains("..")
        && !name.ends_with(".lock")
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./".contains(c));
    if !ok {
        bail!("{what} {name:?}: give a plain name, like gh-pages or origin");
    }
    Ok(())
}

/// Publishes `dir` as the tree of `branch` on `remote`, from the git repository the current
/// folder is in.
pub fn publish(
    dir: &Path,
    branch: &str,
    remote: &str,
    cancel: &Cancel,
) -> anyhow::Result<Published> {
    plain("--branch", branch)?;
    plain("--remote", remote)?;
    let meta = std::fs::metadata(dir).with_context(|| format!("`{}`", dir.display()))?;
    if !meta.is_dir() {
        bail!("`{}` is not a folder to publish", dir.display());
    }
    let dir = std::fs::canonicalize(dir)?;
    let git_dir = git(cancel, None, &[], &["rev-parse", "--absolute-git-dir"])
        .context("ci publish runs in a git checkout (the workflow's)")?;
    let parent = fetched(branch, remote, cancel)?;
    let done = commit_and_push(&dir, git_dir.trim(), parent, branch, remote, cancel);
    // The fetched branch was held by a ref of bakeoff's only while it was in use.
    let _ = git(cancel, None, &[], &["update-ref", "-d", &tracking(branch)]);
    done
}

/// The ref the remote's `branch` is fetched into while it is published on.
fn tracking(branch: &str) -> String {
    format!("refs/bakeoff-publish/{branch}")
}

/// `dir` committed as `branch`'s tree on top of `parent` (when it differs) and pushed.
fn commit_and_push(
    dir: &Path,
    git_dir: &str,
    parent: Option<String>,
    branch: &str,
    remote: &str,
    cancel: &Cancel,
) -> anyhow::Result<Published> {
    let tree = tree_of(dir, git_dir, cancel)?;
    if let Some(p) = &parent {
        let old = git(
            cancel,
            None,
            &[],
            &[
                "rev-parse",
                "--verify",
                "--end-of-options",
                &format!("{p}^{{tree}}"),
            ],
        )?;
        if old.trim() == tree {
            return Ok(Published::Unchanged);
        }
    }
    let message = format!(
        "bakeoff: the history's dashboard, {}",
        crate::results::now_utc()
    );
    let mut args = vec!["commit-tree", tree.as_str(), "-m", message.as_str()];
    if let Some(p) = &parent {
        args.extend(["-p", p.as_str()]);
    }
    let who = [
        ("GIT_AUTHOR_NAME", "bakeoff"),
        ("GIT_AUTHOR_EMAIL", "bakeoff@users.noreply.github.com"),
        ("GIT_COMMITTER_NAME", "bakeoff"),
        ("GIT_COMMITTER_EMAIL", "bakeoff@users.noreply.github.com"),
    ];
    let commit = git(cancel, None, &who, &args)?.trim().to_string();
    git(
        cancel,
        None,
        &[],
        &[
            "push",
            "--quiet",
            remote,
            &format!("{commit}:refs/heads/{branch}"),
        ],
    )
    .with_context(|| {
        format!("pushing `{branch}` to `{remote}` (the workflow needs `contents: write`)")
    })?;
    Ok(Published::Pushed(commit))
}

/// The commit `branch` is at on `remote` now; none when the remote does not have it yet.
fn fetched(branch: &str, remote: &str, cancel: &Cancel) -> anyhow::Result<Option<String>> {
    let tracking = tracking(branch);
    let fetched = git(
        cancel,
        None,
        &[],
        &[
            "fetch",
            "--quiet",
            "--no-tags",
            remote,
            &format!("+refs/heads/{branch}:{tracking}"),
        ],
    );
    match fetched {
        Ok(_) => {
            let at = format!("{tracking}^{{commit}}");
            let id = git(
                cancel,
                None,
                &[],
                &["rev-parse", "--verify", "--end-of-options", &at],
            )?;
            Ok(Some(id.trim().to_string()))
        }
        Err(e) if e.to_string().contains("couldn't find remote ref") => Ok(None),
        Err(e) => Err(e.context(format!("fetching `{branch}` from `{remote}`"))),
    }
}

/// The tree of `dir`'s files, written into the repository at `git_dir` through an index of
/// its own (the checkout's index and files untouched).
fn tree_of(dir: &Path, git_dir: &str, cancel: &Cancel) -> anyhow::Result<String> {
    let scratch = std::env::temp_dir().join(format!(
        "bakeoff-publish-{}-{}",
        std::process::id(),
        crate::results::now_utc().replace(':', "")
    ));
    std::fs::create_dir_all(&scratch)?;
    let index = scratch.join("index").to_string_lossy().into_owned();
    let work = format!("--work-tree={}", dir.display());
    let gd = format!("--git-dir={git_dir}");
    let env = [("GIT_INDEX_FILE", index.as_str())];
    let tree = git(
        cancel,
        Some(dir),
        &env,
        &[&gd, &work, "add", "--all", "--force", "."],
    )
    .and_then(|_| git(cancel, Some(dir), &env, &[&gd, &work, "write-tree"]));
    let _ = std::fs::remove_dir_all(&scratch);
    Ok(tree?.trim().to_string())
}

/// `git ARGS` in `dir` (the current folder when `None`), under a guard and the command's
/// cancel; its standard output.
fn git(
    cancel: &Cancel,
    dir: Option<&Path>,
    env: &[(&str, &str)],
    args: &[&str],
) -> anyhow::Result<String> {
    let mut all = vec![("GIT_TERMINAL_PROMPT", "0")];
    all.extend_from_slice(env);
    let out = crate::contender::capture(&crate::contender::Capture {
        program: Path::new("git"),
        args,
        dir,
        env: &all,
        cancel,
        limit: GIT_TIMEOUT,
        max_output: 1 << 20,
    })
    .map_err(|e| {
        anyhow::anyhow!(
            "`git {}`: {e}",
            args.iter()
                .find(|a| !a.starts_with("--"))
                .copied()
                .unwrap_or_default()
        )
    })?;
    Ok(String::from_utf8_lossy(&out).into_owned())
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_plain_names_reach_git() {
        for ok in ["gh-pages", "origin", "pages/nightly"] {
            assert!(super::plain("--branch", ok).is_ok(), "{ok}");
        }
        for bad in [
            "", "-f", "--force", "a..b", "x.lock", "a b", "a;b", "/x", "x/", ".x",
        ] {
            assert!(super::plain("--branch", bad).is_err(), "{bad}");
        }
    }
}
