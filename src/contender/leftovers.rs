//! A record of every guard in the results directory (`live/PGID`: the guard's start time and
//! the start's mark, `BAKEOFF_RUN=TAG`), written when it starts and removed when it is
//! stopped, so a run that was killed outright — guards included — can still be cleaned up:
//! `bakeoff cleanup DIR` and `--resume` kill what the records name.
//!
//! Only what provably is ours is killed. PIDs are reused (`pid_max` wraps within hours on a
//! busy machine), so a number in a file proves nothing by itself:
//! - the guard is signalled only when the process with that PID started at exactly the
//!   recorded clock tick and carries the run's mark in its environment;
//! - its process group is ours while its guard is, or while a process in it still carries
//!   the mark (a group id cannot be given to a new group while a process is in the old one);
//!   only then is the rest of the group killed (members that cleared their environment too);
//! - anywhere else, a process is killed only when it carries the mark (a daemon that called
//!   `setsid` after its guard was killed).
//!
//! PIDs ≤ 1 are never signalled, and a folder that is not a results folder is refused before
//! anything is read from it.

use std::path::{Path, PathBuf};

/// A live (not zombie) process's start time and process group.
fn stat(pid: i32) -> Option<(u64, i32)> {
    let s = crate::sys::proc_stat(pid).filter(|s| s.state != 'Z')?;
    Some((s.start_ticks, s.pgrp))
}

fn folder(results: &Path) -> PathBuf {
    results.join("live")
}

/// Records the guard `pid` (its group's id) of a member or command that just started, with
/// the mark (`tag`) its environment carries.
pub fn record(results: &Path, pid: i32, tag: &str) {
    let Some((start, _)) = stat(pid) else { return };
    let dir = folder(results);
    if std::fs::create_dir_all(&dir).is_ok() {
        let _ = std::fs::write(dir.join(pid.to_string()), format!("{start}\n{tag}\n"));
    }
}

/// Forgets a guard that was stopped.
pub fn forget(results: &Path, pid: i32) {
    let dir = folder(results);
    let _ = std::fs::remove_file(dir.join(pid.to_string()));
    let _ = std::fs::remove_dir(&dir); // only when empty
}

/// Why `cleanup` (or `--resume`) refused a folder.
#[derive(Debug, thiserror::Error)]
pub enum Refused {
    #[error("`{0}` does not exist")]
    Missing(PathBuf),
    #[error("`{0}` is not a results folder (it has no results.json); nothing was killed")]
    NotResults(PathBuf),
}

/// What a clean-up did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Cleaned {
    /// Processes that were signalled and took the signal.
    pub killed: usize,
    /// Records that named nothing provably ours (a PID since given to another process, a
    /// PID ≤ 1, an unreadable record): left alone, and removed.
    pub ignored: usize,
}

/// One `live/PGID` file.
struct Record {
    pgid: i32,
    start: u64,
    /// `None` in records written before the mark was recorded.
    tag: Option<String>,
}

fn read_record(path: &Path) -> Option<Record> {
    let pgid = path.file_name()?.to_str()?.parse::<i32>().ok()?;
    // A record is two short lines; anything larger is not one of ours.
    let text = crate::sys::read_bounded(path, 4096).ok()?;
    let mut lines = text.lines();
    let start = lines.next()?.trim().parse::<u64>().ok()?;
    let tag = lines
        .next()
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_string);
    Some(Record { pgid, start, tag })
}

/// Kills what the records in `results` provably own (see the module's comment) and removes
/// the records. Refuses a folder that is not a results folder.
pub fn clean(results: &Path) -> Result<Cleaned, Refused> {
    if !results.exists() {
        return Err(Refused::Missing(results.to_path_buf()));
    }
    if !results.join("results.json").is_file() {
        return Err(Refused::NotResults(results.to_path_buf()));
    }
    let dir = folder(results);
    let mut out = Cleaned::default();
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Ok(out);
    };
    let mut killed = std::collections::BTreeSet::new();
    for e in entries.flatten() {
        match read_record(&e.path()) {
            Some(r) if r.pgid > 1 && clean_one(&r, &mut killed) => {}
            _ => out.ignored += 1,
        }
        let _ = std::fs::remove_file(e.path());
    }
    let _ = std::fs::remove_dir(&dir);
    out.killed = killed.len();
    Ok(out)
}

/// Kills what one record provably owns; false when nothing can be proved (an old record
/// without its mark whose guard is gone, or a guard PID now held by another process).
fn clean_one(r: &Record, killed: &mut std::collections::BTreeSet<i32>) -> bool {
    let me = std::process::id() as i32;
    let marked = |pid: i32, tag: &str| crate::sys::environ_has(pid, &mark(tag));
    // The guard: the exact process (start tick) and carrying a mark, ours if it was recorded.
    let guard_tag = stat(r.pgid)
        .filter(|(s, _)| *s == r.start)
        .and_then(|_| crate::sys::environ_value(r.pgid, super::TAG_VAR))
        .filter(|t| r.tag.as_ref().is_none_or(|want| want == t));
    let Some(tag) = guard_tag.clone().or_else(|| r.tag.clone()) else {
        // An old record whose guard is gone: nothing left proves what is ours.
        return false;
    };
    let mut signal = |pid: i32, sig: libc::c_int| {
        // SAFETY: kill has no memory preconditions; pid > 1 and not bakeoff itself.
        if pid > 1 && pid != me && unsafe { libc::kill(pid, sig) } == 0 {
            killed.insert(pid);
        }
    };
    if guard_tag.is_some() {
        // It kills its whole subtree itself.
        signal(r.pgid, super::guard::PARENT_DIED);
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let in_group = |pid: i32| stat(pid).is_some_and(|(s, g)| g == r.pgid && s >= r.start);
    let pids = crate::sys::pids();
    let group_is_ours = guard_tag.is_some()
        || pids
            .iter()
            .any(|&p| p != r.pgid && in_group(p) && marked(p, &tag));
    for &pid in &pids {
        if (group_is_ours && in_group(pid)) || marked(pid, &tag) {
            signal(pid, libc::SIGKILL);
        }
    }
    true
}

/// The environment entry a start's processes carry.
pub fn mark(tag: &str) -> String {
    format!("{}={tag}", super::TAG_VAR)
}
