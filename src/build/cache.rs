//! The build cache: `$BAKEOFF_CACHE`, else `$XDG_CACHE_HOME/bakeoff`, else
//! `~/.cache/bakeoff`, else `$TMPDIR/bakeoff-cache-UID`. `builds/KEY/` holds a finished
//! build (its tree and `build.json`), `builds/KEY.lock` the lock two runs take before
//! building the same key, `repos/` the partial clones of URLs.
//!
//! A cached build is run as it is found, so the cache is used only when nobody else can
//! have put anything in it: its folders must be the user's own and writable by nobody else
//! (see [`ready`]), and a lock is never opened through a link.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

use crate::results::SourceInfo;

/// Where the cache is.
pub fn root() -> PathBuf {
    let var = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    var("BAKEOFF_CACHE")
        .or_else(|| var("XDG_CACHE_HOME").map(|x| x.join("bakeoff")))
        .or_else(|| var("HOME").map(|h| h.join(".cache").join("bakeoff")))
        // SAFETY: geteuid cannot fail.
        .unwrap_or_else(|| {
            std::env::temp_dir().join(format!("bakeoff-cache-{}", unsafe { libc::geteuid() }))
        })
}

/// Makes the cache at `root` (mode 0700) where it is missing, and checks that it and its
/// `builds` and `repos` folders are the user's own and writable by nobody else: a build
/// another user could have put there would be taken as cached and run.
pub fn ready(root: &Path) -> Result<(), String> {
    use std::os::unix::fs::DirBuilderExt as _;
    if let Some(parent) = root.parent() {
        std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
    }
    for dir in [
        root.to_path_buf(),
        root.join("builds"),
        root.join("repos"),
        root.join("work"),
    ] {
        match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(format!("the build cache `{}`: {e}", dir.display())),
        }
        private(&dir)?;
    }
    Ok(())
}

/// Whether `dir` is a folder of the user's own that nobody else can write to; why not.
fn private(dir: &Path) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt as _;
    let fix = "set BAKEOFF_CACHE to a folder of your own";
    let m = std::fs::symlink_metadata(dir)
        .map_err(|e| format!("the build cache `{}`: {e}", dir.display()))?;
    if m.file_type().is_symlink() {
        return Err(format!(
            "the build cache `{}` is a symbolic link: bakeoff keeps builds only in a folder of your own ({fix})",
            dir.display()
        ));
    }
    if !m.is_dir() {
        return Err(format!(
            "the build cache `{}` is not a folder ({fix})",
            dir.display()
        ));
    }
    // SAFETY: geteuid cannot fail.
    let me = unsafe { libc::geteuid() };
    if m.uid() != me {
        return Err(format!(
            "the build cache `{}` belongs to user {}, not to you ({me}): a build in it could have been put there by them, and would run as you; {fix}",
            dir.display(),
            m.uid()
        ));
    }
    if m.mode() & 0o022 != 0 {
        return Err(format!(
            "the build cache `{}` can be written by others (mode {:o}): a build in it could have been put there by them, and would run as you; `chmod go-w` it or {fix}",
            dir.display(),
            m.mode() & 0o7777
        ));
    }
    Ok(())
}

/// Removes whatever is at `path` (a folder with all it holds, a file, a link — never what a
/// link names).
pub(super) fn remove_any(path: &Path) {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => {
            let _ = std::fs::remove_dir_all(path);
        }
        Ok(_) => {
            let _ = std::fs::remove_file(path);
        }
        Err(_) => {}
    }
}

/// What `build.json` says of a finished build.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Entry {
    /// The contender it was first built for.
    pub contender: String,
    /// The other contenders that used it since (a few: the first [`USED_BY`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub used_by: Vec<String>,
    pub source: SourceInfo,
    /// Seconds since the Unix epoch.
    pub built_at: u64,
    pub used_at: u64,
}

/// How many other contenders a build's entry names.
pub const USED_BY: usize = 8;

impl Entry {
    /// Marks it used now by `contender`.
    pub fn used(&mut self, contender: &str) {
        self.used_at = now();
        let known = self.contender == contender || self.used_by.iter().any(|c| c == contender);
        if !known && self.used_by.len() < USED_BY {
            self.used_by.push(contender.to_string());
        }
    }

    /// Every contender it was built or used for: `base, new`.
    pub fn contenders(&self) -> String {
        let mut all = vec![self.contender.as_str()];
        all.extend(self.used_by.iter().map(String::as_str));
        all.join(", ")
    }
}

/// Seconds since the Unix epoch.
pub fn now() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

pub(super) fn read_entry(dir: &Path) -> Option<Entry> {
    let text = crate::sys::read_bounded(&dir.join("build.json"), 1 << 20).ok()?;
    serde_json::from_str(&text).ok()
}

pub(super) fn write_entry(dir: &Path, e: &Entry) -> std::io::Result<()> {
    let json = serde_json::to_vec_pretty(e).map_err(std::io::Error::other)?;
    crate::results::write_atomic(&dir.join("build.json"), &json)
}

/// An exclusive lock on one key, held until dropped (`flock`: released when the process
/// dies, so a killed run never leaves a key locked).
pub(super) struct Lock(std::fs::File);

impl Lock {
    /// Waits for the lock on `path`; `Err` when `cancelled` says stop first.
    pub(super) fn take(
        path: &Path,
        cancelled: &dyn Fn() -> bool,
        waiting: &mut dyn FnMut(),
    ) -> Result<Lock, String> {
        use std::os::fd::AsRawFd as _;
        use std::os::unix::fs::OpenOptionsExt as _;
        // O_NOFOLLOW: a link planted at the lock's name makes no file where it points.
        let f = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(path)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        if !f.metadata().is_ok_and(|m| m.is_file()) {
            return Err(format!("{}: not a regular file", path.display()));
        }
        let mut told = false;
        loop {
            // SAFETY: flock on a descriptor this function owns.
            if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
                return Ok(Lock(f));
            }
            if cancelled() {
                return Err("interrupted while waiting for another build".into());
            }
            if !told {
                waiting();
                told = true;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        use std::os::fd::AsRawFd as _;
        // SAFETY: unlocking the descriptor this lock owns.
        unsafe {
            libc::flock(self.0.as_raw_fd(), libc::LOCK_UN);
        }
    }
}

/// One finished build in the cache.
pub struct Listed {
    pub key: String,
    pub dir: PathBuf,
    pub entry: Entry,
    pub bytes: u64,
}

/// Every finished build, most recently used first.
pub fn list(root: &Path) -> Vec<Listed> {
    let Ok(dir) = std::fs::read_dir(root.join("builds")) else {
        return Vec::new();
    };
    let mut out: Vec<Listed> = dir
        .flatten()
        .filter(|e| e.path().is_dir())
        .filter_map(|e| {
            let key = e.file_name().to_str()?.to_string();
            if key.contains(".tmp-") {
                return None;
            }
            let entry = read_entry(&e.path())?;
            Some(Listed {
                bytes: crate::contender::usage::disk_usage(&e.path()),
                key,
                dir: e.path(),
                entry,
            })
        })
        .collect();
    out.sort_by_key(|l| std::cmp::Reverse(l.entry.used_at));
    out
}

/// Removes the builds not used for `older` (all of them with `None`), and what interrupted
/// builds left; returns what it removed. A build another run holds the lock of is kept.
pub fn prune(root: &Path, older: Option<Duration>) -> Vec<Listed> {
    let cutoff = older.map(|d| now().saturating_sub(d.as_secs()));
    let mut removed = Vec::new();
    for l in list(root) {
        if cutoff.is_some_and(|c| l.entry.used_at >= c) {
            continue;
        }
        let lock = root.join("builds").join(format!("{}.lock", l.key));
        let Ok(_held) = Lock::take_now(&lock) else {
            continue;
        };
        remove_any(&l.dir);
        if std::fs::symlink_metadata(&l.dir).is_err() {
            let _ = std::fs::remove_file(&lock);
            removed.push(l);
        }
    }
    // Interrupted builds' folders, and what is at a key's place but is no build (a file, a
    // folder without `build.json`).
    if let Ok(dir) = std::fs::read_dir(root.join("builds")) {
        for e in dir.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let key = match name.split_once(".tmp-") {
                Some((key, _)) => key.to_string(),
                None if name.ends_with(".lock") || read_entry(&e.path()).is_some() => continue,
                None => name.clone(),
            };
            let lock = root.join("builds").join(format!("{key}.lock"));
            if Lock::take_now(&lock).is_ok() {
                remove_any(&e.path());
            }
        }
    }
    removed
}

impl Lock {
    /// The lock now, or `Err` when another process holds it.
    pub(super) fn take_now(path: &Path) -> Result<Lock, ()> {
        let mut busy = false;
        let l = Lock::take(path, &|| true, &mut || busy = true).map_err(|_| ())?;
        if busy {
            return Err(());
        }
        Ok(l)
    }
}
