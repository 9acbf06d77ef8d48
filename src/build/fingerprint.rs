//! What a source holds beyond its commit, as a hash for the build cache's key: a working
//! tree's changes and untracked files, or a folder's files — read in pieces, never through a
//! link, never waiting on a FIFO.

use super::*;

/// What a working tree holds beyond `HEAD`: the diff of tracked files, and every untracked
/// (not ignored) file's name and what it is (see [`feed_file`]). The empty hash for a clean
/// tree.
pub(super) fn worktree_fingerprint(repo: &Path, cancel: &Cancel) -> Result<String, String> {
    let mut h = Fnv::new();
    let diff = git::git(
        cancel,
        Some(repo),
        &["diff", "HEAD", "--binary", "--no-ext-diff"],
    )?;
    let untracked = git::ls_files(cancel, repo, &["--others", "--exclude-standard"])?;
    if diff.is_empty() && untracked.is_empty() {
        return Ok(h.hex());
    }
    h.feed(&diff);
    for f in untracked {
        h.feed(f.as_bytes());
        feed_file(&mut h, &repo.join(&f), cancel)?;
    }
    Ok(h.hex())
}

/// Feeds what a file of a tree is, never following a link: a regular file's bytes, read in
/// pieces (a file of any size costs a buffer); a symbolic link's target as written (not the
/// file it names: `/dev/zero`, a FIFO or a file outside the tree); a FIFO, socket or device
/// its kind only (it is never opened).
fn feed_file(h: &mut Fnv, path: &Path, cancel: &Cancel) -> Result<(), String> {
    use std::io::Read as _;
    use std::os::unix::fs::FileTypeExt as _;
    let shown = |e: std::io::Error| format!("{}: {e}", path.display());
    let Ok(meta) = path.symlink_metadata() else {
        // Gone since git listed it.
        h.feed(b"");
        return Ok(());
    };
    let t = meta.file_type();
    if t.is_symlink() {
        let target = std::fs::read_link(path).map_err(shown)?;
        h.feed(b"symlink")
            .feed(target.as_os_str().as_encoded_bytes());
        return Ok(());
    }
    if !t.is_file() {
        let kind: &[u8] = match () {
            _ if t.is_dir() => b"folder",
            _ if t.is_fifo() => b"fifo",
            _ if t.is_socket() => b"socket",
            _ => b"device",
        };
        h.feed(b"special").feed(kind);
        return Ok(());
    }
    let (mut f, _) = open_regular(path).map_err(shown)?;
    let mut buf = vec![0u8; 256 << 10];
    loop {
        if cancel.is_cancelled() {
            return Err("interrupted".into());
        }
        match f.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                h.feed_part(&buf[..n]);
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(shown(e)),
        }
    }
    h.feed(b"");
    Ok(())
}

/// Every file's name and what it is (see [`feed_file`]) under a folder (`.git` left out),
/// in name order.
pub(super) fn folder_fingerprint(dir: &Path, cancel: &Cancel) -> Result<String, String> {
    fn walk(d: &Path, rel: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
        for e in std::fs::read_dir(d)? {
            let e = e?;
            let name = e.file_name();
            if name == ".git" {
                continue;
            }
            let t = e.file_type()?;
            if t.is_dir() {
                walk(&e.path(), &rel.join(&name), out)?;
            } else if t.is_file() || t.is_symlink() {
                out.push(rel.join(&name));
            }
        }
        Ok(())
    }
    let mut files = Vec::new();
    walk(dir, Path::new(""), &mut files).map_err(|e| format!("{}: {e}", dir.display()))?;
    files.sort();
    let mut h = Fnv::new();
    for f in files {
        h.feed(f.to_string_lossy().as_bytes());
        feed_file(&mut h, &dir.join(&f), cancel)?;
    }
    Ok(h.hex())
}
