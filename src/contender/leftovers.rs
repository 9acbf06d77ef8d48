//! A record of every member's guard in the results directory (`live/PGID`, holding the
//! guard's start time), written when it starts and removed when it is stopped, so a run that
//! was killed outright — guards included — can still be cleaned up: `bakeoff cleanup DIR`
//! and `--resume` kill what the record names. The start time (from `/proc/PID/stat`) makes
//! sure a PID the kernel has since given to another process is never hit.

use std::path::{Path, PathBuf};

/// A live (not zombie) process's start time and process group.
fn stat(pid: i32) -> Option<(u64, i32)> {
    let s = crate::sys::proc_stat(pid).filter(|s| s.state != 'Z')?;
    Some((s.start_ticks, s.pgrp))
}

fn folder(results: &Path) -> PathBuf {
    results.join("live")
}

/// Records the guard `pid` (its group's id) of a member that just started.
pub fn record(results: &Path, pid: i32) {
    let Some((start, _)) = stat(pid) else { return };
    let dir = folder(results);
    if std::fs::create_dir_all(&dir).is_ok() {
        let _ = std::fs::write(dir.join(pid.to_string()), format!("{start}\n"));
    }
}

/// Forgets a member that was stopped.
pub fn forget(results: &Path, pid: i32) {
    let dir = folder(results);
    let _ = std::fs::remove_file(dir.join(pid.to_string()));
    let _ = std::fs::remove_dir(&dir); // only when empty
}

/// Kills what the records in `results` name and is still alive (only processes that
/// started no earlier than the recorded guard and are in its group, or its guard itself);
/// returns how many processes it killed. Records are removed.
pub fn clean(results: &Path) -> usize {
    let dir = folder(results);
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return 0;
    };
    let mut killed = 0;
    for e in entries.flatten() {
        let Some(pgid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        let Some(start) = std::fs::read_to_string(e.path())
            .ok()
            .and_then(|t| t.trim().parse::<u64>().ok())
        else {
            continue;
        };
        // The guard itself, if it is still the same process: it kills its subtree.
        if stat(pgid).is_some_and(|(s, _)| s == start) {
            // SAFETY: kill has no memory preconditions.
            unsafe {
                libc::kill(pgid, super::guard::PARENT_DIED);
            }
            killed += 1;
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        // What is left in its group and started after it.
        for pid in crate::sys::pids() {
            if stat(pid).is_some_and(|(s, g)| g == pgid && s >= start) {
                // SAFETY: as above.
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                }
                killed += 1;
            }
        }
        let _ = std::fs::remove_file(e.path());
    }
    let _ = std::fs::remove_dir(&dir);
    killed
}
