//! The tree a build runs in: a detached checkout of the commit, a working tree's changes copied over, and the build commands run there with their cost.

use super::*;

/// Puts the source's tree at `tree`: a shared clone checked out at the commit (the user's
/// repository is only read), with a dirty working tree's changes copied over; a folder's
/// copy.
pub(super) fn checkout(
    src: &Source,
    r: &Resolved,
    tree: &Path,
    cancel: &Cancel,
) -> Result<(), String> {
    let git = |dir: Option<&Path>, args: &[&str]| git::git(cancel, dir, args);
    std::fs::create_dir_all(tree.parent().unwrap_or(tree)).map_err(|e| e.to_string())?;
    let t = tree.to_string_lossy().into_owned();
    let from = r.from.to_string_lossy().into_owned();
    match &src.from {
        SourceKind::Path(p) => copy_dir(p, tree),
        SourceKind::Git { at, rev, .. } => {
            let commit = r.commit.as_deref().unwrap_or("HEAD");
            match at {
                // The cache's own partial clone: a worktree of it fetches what it lacks.
                Location::Url(_) => {
                    git(
                        Some(&r.from),
                        &["worktree", "add", "--quiet", "--detach", "--", &t, commit],
                    )?;
                }
                Location::Local(_) => {
                    let clone = ["clone", "--quiet", "--shared", "--no-checkout", "--"];
                    git(None, &[&clone[..], &[from.as_str(), t.as_str()]].concat())?;
                    git(Some(tree), &["checkout", "--quiet", "--detach", commit])?;
                }
            }
            if *rev == Rev::Worktree && r.dirty {
                copy_changes(&r.from, tree, cancel)?;
            }
            Ok(())
        }
    }
}

/// A working tree's changes, onto a checkout of its `HEAD`: changed and untracked (not
/// ignored) files copied, deleted ones removed. A symbolic link is copied as a link (what
/// it names is never read: it may be outside the repository, `/dev/zero` or a FIFO), as git
/// itself keeps one; a FIFO, socket or device is left out.
pub(super) fn copy_changes(repo: &Path, tree: &Path, cancel: &Cancel) -> Result<(), String> {
    let listed = ["--modified", "--others", "--exclude-standard"];
    let mut changed = git::ls_files(cancel, repo, &listed)?;
    changed.sort();
    changed.dedup();
    for f in changed {
        let (from, to) = (repo.join(&f), tree.join(&f));
        let Ok(meta) = from.symlink_metadata() else {
            let _ = std::fs::remove_file(&to);
            continue;
        };
        if !(meta.is_file() || meta.file_type().is_symlink()) {
            continue;
        }
        if let Some(d) = to.parent() {
            std::fs::create_dir_all(d).map_err(|e| e.to_string())?;
        }
        copy_entry(&from, &to).map_err(|e| format!("copying {f}: {e}"))?;
    }
    Ok(())
}

/// A regular file opened to read, and its metadata: `O_NOFOLLOW` and `O_NONBLOCK`, so a
/// file swapped for a link or a FIFO since it was looked at is refused, not followed or
/// waited on.
pub(super) fn open_regular(path: &Path) -> std::io::Result<(std::fs::File, std::fs::Metadata)> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)?;
    let meta = f.metadata()?;
    if !meta.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    Ok((f, meta))
}

/// One regular file (its bytes, never through a link) or symbolic link (as a link) from
/// `from` to `to`, replacing what `to` was.
fn copy_entry(from: &Path, to: &Path) -> std::io::Result<()> {
    if let Ok(m) = to.symlink_metadata() {
        if m.is_dir() {
            std::fs::remove_dir_all(to)?;
        } else {
            std::fs::remove_file(to)?;
        }
    }
    if from.symlink_metadata()?.file_type().is_symlink() {
        return std::os::unix::fs::symlink(std::fs::read_link(from)?, to);
    }
    let (mut src, meta) = open_regular(from)?;
    let mut dest = std::fs::File::create(to)?;
    std::io::copy(&mut src, &mut dest)?;
    dest.set_permissions(meta.permissions())
}

pub(super) fn copy_dir(from: &Path, to: &Path) -> Result<(), String> {
    std::fs::create_dir_all(to).map_err(|e| format!("{}: {e}", to.display()))?;
    for e in std::fs::read_dir(from).map_err(|e| format!("{}: {e}", from.display()))? {
        let e = e.map_err(|e| e.to_string())?;
        let t = e.file_type().map_err(|e| e.to_string())?;
        let dest = to.join(e.file_name());
        if t.is_dir() {
            copy_dir(&e.path(), &dest)?;
        } else if t.is_file() || t.is_symlink() {
            copy_entry(&e.path(), &dest).map_err(|e| format!("{}: {e}", dest.display()))?;
        }
    }
    Ok(())
}

/// The build commands in `tree`, one after another, each under a guard, their output in
/// `logs/NAME-build.log`; what they cost.
pub(super) fn run_build(
    req: &Request,
    tree: &Path,
    say: &mut dyn FnMut(String),
) -> Result<BuildInfo, String> {
    let logs = req.results.join("logs");
    std::fs::create_dir_all(&logs).map_err(|e| e.to_string())?;
    let rel = format!("logs/{}-build.log", crate::results::slug(req.contender));
    let log = req.results.join(&rel);
    let _ = std::fs::remove_file(&log);
    let owner = crate::contender::Owner {
        tag: format!(
            "{}-build-{}-{}",
            std::process::id(),
            crate::results::slug(req.contender),
            cache::now()
        ),
        results: req.results.to_path_buf(),
        cancel: req.cancel.clone(),
        log_limit: crate::plan::DEFAULT_LOG_LIMIT,
    };
    let (mut cpu_s, mut peak) = (0.0, 0);
    let start = Instant::now();
    let deadline = start + req.source.build_timeout;
    for cmd in &req.source.build {
        let began = Instant::now();
        let left = deadline.saturating_duration_since(began);
        if left.is_zero() {
            return Err(format!(
                "the build took longer than its build_timeout ({:?}); output in {rel}",
                req.source.build_timeout
            ));
        }
        let (ran, spent) = crate::contender::run_guarded_spent(&crate::contender::Oneshot {
            cmd,
            dir: Some(tree),
            owner: &owner,
            env: req.env,
            log: Some(&log),
            limit: left,
        });
        let spent = spent.unwrap_or_default();
        cpu_s += spent.cpu_s;
        peak = peak.max(spent.peak_rss_bytes);
        if let Err(e) = ran {
            return Err(format!(
                "build failed: {e}; the end of {rel}:\n{}",
                tail(&log, 20)
            ));
        }
        // This command's own time, not the build's so far.
        say(format!(
            "{}: `{}` done ({:.1} s)",
            req.contender,
            cmd.join(" "),
            began.elapsed().as_secs_f64()
        ));
    }
    Ok(BuildInfo {
        cached: false,
        seconds: start.elapsed().as_secs_f64(),
        cpu_s,
        peak_rss_bytes: peak,
        log: Some(rel),
    })
}

/// The last `n` lines of a log (its last 64 KiB read at most).
pub(super) fn tail(path: &Path, n: usize) -> String {
    use std::io::{Read as _, Seek as _};
    let Ok(mut f) = std::fs::File::open(path) else {
        return String::new();
    };
    let len = f.metadata().map_or(0, |m| m.len());
    let _ = f.seek(std::io::SeekFrom::Start(len.saturating_sub(64 << 10)));
    let mut buf = Vec::new();
    let _ = f.take(64 << 10).read_to_end(&mut buf);
    let text = String::from_utf8_lossy(&buf);
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}
