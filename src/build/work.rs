//! Incremental builds (`source = { …, incremental = true }`, docs/bisect.md): one work tree
//! per repository and build in the cache, each commit checked out in it — git rewrites only
//! the files that differ, so `make` and `cargo` rebuild only what changed — and built there;
//! the finished tree is then copied to its own cache entry, so what a contender's `{source}`
//! names never changes under it.

use super::*;

/// The work tree at the commit, held (locked) by this build until dropped.
pub(super) struct Work {
    pub(super) tree: PathBuf,
    _held: cache::Lock,
}

/// The cache's work tree for the request's repository, build commands and environment,
/// checked out at the resolved commit (a working tree's changes copied over); made afresh
/// when there is none or it cannot be checked out.
pub(super) fn tree(
    req: &Request,
    r: &Resolved,
    say: &mut dyn FnMut(String),
) -> Result<Work, String> {
    let mut h = Fnv::new();
    h.feed(r.from.to_string_lossy().as_bytes());
    for cmd in &req.source.build {
        for a in cmd {
            h.feed(a.as_bytes());
        }
        h.feed(b"\n");
    }
    for (k, v) in req.env {
        h.feed(k.as_bytes()).feed(v.as_bytes());
    }
    let work = req.cache.join("work");
    std::fs::create_dir_all(&work).map_err(|e| format!("{}: {e}", work.display()))?;
    let dir = work.join(h.hex());
    let held = cache::Lock::take(
        &work.join(format!("{}.lock", h.hex())),
        &|| req.cancel.is_cancelled(),
        &mut || {
            say(format!(
                "{}: waiting for another run that builds in the same work tree",
                req.contender
            ))
        },
    )?;
    let tree = dir.join("tree");
    let commit = r.commit.as_deref().unwrap_or("HEAD");
    let moved = tree.join(".git").exists()
        && git::git(
            req.cancel,
            Some(&tree),
            &["checkout", "--quiet", "--force", "--detach", commit],
        )
        .is_ok();
    if moved {
        if let SourceKind::Git {
            rev: Rev::Worktree, ..
        } = &req.source.from
        {
            if r.dirty {
                copy_changes(&r.from, &tree, req.cancel)?;
            }
        }
    } else {
        if req.cancel.is_cancelled() {
            return Err("interrupted".into());
        }
        cache::remove_any(&dir);
        // A URL's work tree is a worktree of the cache's clone: one removed with its folder
        // (pruned, or damaged) is forgotten first, or git refuses the same path again.
        if let SourceKind::Git {
            at: Location::Url(_),
            ..
        } = &req.source.from
        {
            let _ = git::git(req.cancel, Some(&r.from), &["worktree", "prune"]);
        }
        say(format!(
            "{}: a new work tree for incremental builds ({})",
            req.contender,
            dir.display()
        ));
        checkout(req.source, r, &tree, req.cancel)?;
    }
    // When it was last used, for `cache prune --older-than`.
    let _ = std::fs::write(dir.join("used"), cache::now().to_string());
    Ok(Work { tree, _held: held })
}

/// The finished work tree copied to `to`, without its `.git`.
pub(super) fn keep(work: &Work, to: &Path) -> Result<(), String> {
    copy_dir(&work.tree, to)?;
    cache::remove_any(&to.join(".git"));
    Ok(())
}

/// Removes the work trees not used for `older` (all of them with `None`) that no build
/// holds now; how many.
pub fn prune(root: &Path, older: Option<Duration>) -> usize {
    let cutoff = older.map(|d| cache::now().saturating_sub(d.as_secs()));
    let work = root.join("work");
    let Ok(dir) = std::fs::read_dir(&work) else {
        return 0;
    };
    let mut removed = 0;
    for e in dir.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.ends_with(".lock") {
            continue;
        }
        let used: u64 = std::fs::read_to_string(e.path().join("used"))
            .ok()
            .and_then(|t| t.trim().parse().ok())
            .unwrap_or(0);
        if cutoff.is_some_and(|c| used >= c) {
            continue;
        }
        let lock = work.join(format!("{name}.lock"));
        if let Ok(_held) = cache::Lock::take_now(&lock) {
            cache::remove_any(&e.path());
            let _ = std::fs::remove_file(&lock);
            removed += 1;
        }
    }
    removed
}
