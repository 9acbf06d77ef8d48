//! One member process: reaping it with its CPU time, describing how it ended, the end of its
//! log, and the registry of live process groups a signal handler can kill.

use std::path::PathBuf;
use std::process::Child;
use std::sync::atomic::{AtomicI32, Ordering::SeqCst};

use super::usage::Usage;
use super::MemberExit;
use crate::plan::Probe;

/// Process groups of members now running, so a second Ctrl-C can kill them from the signal
/// handler before bakeoff exits (their children would otherwise outlive it).
static LIVE_GROUPS: [AtomicI32; 64] = [const { AtomicI32::new(0) }; 64];

pub(super) fn register_group(pgid: i32) {
    for slot in &LIVE_GROUPS {
        if slot.compare_exchange(0, pgid, SeqCst, SeqCst).is_ok() {
            return;
        }
    }
}

pub(super) fn unregister_group(pgid: i32) {
    for slot in &LIVE_GROUPS {
        let _ = slot.compare_exchange(pgid, 0, SeqCst, SeqCst);
    }
}

/// Kills every running member and all it started: each group's leader is the member's guard,
/// which kills its whole subtree on [`super::guard::PARENT_DIED`]. Async-signal-safe
/// (atomics and `kill` only), for use in a signal handler.
pub fn kill_all_live() {
    for slot in &LIVE_GROUPS {
        let g = slot.load(SeqCst);
        if g > 1 {
            // SAFETY: kill has no memory preconditions.
            unsafe {
                libc::kill(g, super::guard::PARENT_DIED);
            }
        }
    }
}

pub(super) struct MemberProc {
    pub(super) name: String,
    /// Its place in the plan's member list.
    pub(super) index: usize,
    pub(super) spawned: std::time::Instant,
    /// Kept for its handles; the process is reaped with `wait4` (see [`MemberProc::poll`]).
    pub(super) _child: Child,
    pub(super) pid: i32,
    /// CPU time of the member and its reaped descendants, known once it has been reaped.
    pub(super) reaped_cpu: Option<Usage>,
    pub(super) exit: Option<MemberExit>,
    pub(super) ready: Probe,
    pub(super) endpoint: String,
    pub(super) logs: Vec<PathBuf>,
    /// The threads writing its stdout and stderr to `logs`.
    pub(super) pumps: Vec<std::thread::JoinHandle<()>>,
}

impl MemberProc {
    /// Waits (a second at most: a process it started may still hold the pipe) until its
    /// output is all in the log files.
    pub(super) fn flush_logs(&mut self) {
        let until = std::time::Instant::now() + std::time::Duration::from_secs(1);
        while self.pumps.iter().any(|p| !p.is_finished()) && std::time::Instant::now() < until {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        for p in std::mem::take(&mut self.pumps) {
            if p.is_finished() {
                let _ = p.join();
            }
        }
    }

    /// Reaps the member if it has exited (or, with `block`, once it does), keeping the CPU
    /// time the kernel reports for it and its reaped descendants. `None` while it runs.
    pub(super) fn poll(&mut self, block: bool) -> Option<std::process::ExitStatus> {
        use std::os::unix::process::ExitStatusExt as _;
        if self.reaped_cpu.is_some() {
            return None;
        }
        let mut status = 0;
        // SAFETY: wait4 writes into the two locals we pass.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        let flags = if block { 0 } else { libc::WNOHANG };
        let r = unsafe { libc::wait4(self.pid, &mut status, flags, &mut ru) };
        if r != self.pid {
            return None;
        }
        crate::sys::children::reaped(self.pid);
        let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
        self.reaped_cpu = Some(Usage {
            cpu_user_s: secs(ru.ru_utime),
            cpu_system_s: secs(ru.ru_stime),
            peak_rss_bytes: ru.ru_maxrss.max(0) as u64 * 1024,
        });
        Some(std::process::ExitStatus::from_raw(status))
    }
}

pub(super) fn describe_exit(
    member: &str,
    pid: i32,
    status: std::process::ExitStatus,
    stopped_by_bakeoff: bool,
) -> MemberExit {
    use std::os::unix::process::ExitStatusExt as _;
    let signal = status.signal();
    MemberExit {
        member: member.to_string(),
        pid,
        status: match signal {
            Some(s) => format!("killed by signal {s} ({})", signal_name(s)),
            None => status.to_string(),
        },
        code: status.code(),
        signal,
        stopped_by_bakeoff,
    }
}

pub(super) fn signal_name(s: i32) -> &'static str {
    match s {
        libc::SIGTERM => "SIGTERM",
        libc::SIGKILL => "SIGKILL",
        libc::SIGINT => "SIGINT",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        _ => "signal",
    }
}

/// The last `n` non-empty lines across a member's logs, indented.
pub(super) fn log_tail(logs: &[PathBuf], n: usize) -> String {
    let mut lines = Vec::new();
    for f in logs {
        if let Ok(b) = std::fs::read(f) {
            let text = String::from_utf8_lossy(&b).into_owned();
            lines.extend(
                text.lines()
                    .filter(|l| !l.trim().is_empty())
                    .map(str::to_string)
                    .collect::<Vec<_>>(),
            );
        }
    }
    let start = lines.len().saturating_sub(n);
    lines[start..]
        .iter()
        .map(|l| format!("    {}", truncate(l, 300)))
        .collect::<Vec<_>>()
        .join("\n")
}

fn truncate(s: &str, max: usize) -> &str {
    match s.char_indices().nth(max) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}
