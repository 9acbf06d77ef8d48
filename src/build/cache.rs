//! The build cache: `$BAKEOFF_CACHE`, else `$XDG_CACHE_HOME/bakeoff`, else
//! `~/.cache/bakeoff`. `builds/KEY/` holds a finished build (its tree and `build.json`),
//! `builds/KEY.lock` the lock two runs take before building the same key, `repos/` the
//! partial clones of URLs.

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
        .unwrap_or_else(|| std::env::temp_dir().join("bakeoff-cache"))
}

/// What `build.json` says of a finished build.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Entry {
    /// The contender it was first built for.
    pub contender: String,
    pub source: SourceInfo,
    /// Seconds since the Unix epoch.
    pub built_at: u64,
    pub used_at: u64,
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
        let f = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)
            .map_err(|e| format!("{}: {e}", path.display()))?;
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
        if std::fs::remove_dir_all(&l.dir).is_ok() {
            let _ = std::fs::remove_file(&lock);
            removed.push(l);
        }
    }
    // Interrupted builds' folders.
    if let Ok(dir) = std::fs::read_dir(root.join("builds")) {
        for e in dir.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if let Some((key, _)) = name.split_once(".tmp-") {
                let lock = root.join("builds").join(format!("{key}.lock"));
                if Lock::take_now(&lock).is_ok() {
                    let _ = std::fs::remove_dir_all(e.path());
                }
            }
        }
    }
    removed
}

impl Lock {
    /// The lock now, or `Err` when another process holds it.
    fn take_now(path: &Path) -> Result<Lock, ()> {
        let mut busy = false;
        let l = Lock::take(path, &|| true, &mut || busy = true).map_err(|_| ())?;
        if busy {
            return Err(());
        }
        Ok(l)
    }
}
