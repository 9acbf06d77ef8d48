//! Processes: placeholders filled in, free ports chosen, members spawned into their own
//! process groups (pinned, tagged, killed if bakeoff itself dies), and the sweep that finds
//! tagged processes that escaped their group.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::{File, OpenOptions};
use std::net::{TcpListener, TcpStream, ToSocketAddrs};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::plan::{Check, Contender, Probe};
mod capture;
mod ports;
pub use capture::{capture, Capture};
pub use ports::*;

pub struct SpawnSpec<'a> {
    pub command: &'a [String],
    pub env: &'a [(String, String)],
    pub dir: Option<&'a Path>,
    pub stdout: &'a Path,
    pub stderr: &'a Path,
    pub cpus: Option<&'a [usize]>,
    pub tag: &'a str,
    /// Each log's size limit (see `logcap`).
    pub log_limit: u64,
    /// Where the log threads run.
    pub log_cpus: Option<&'a [usize]>,
}

/// A started member and the threads writing its output.
pub type Spawned = (Child, Vec<std::thread::JoinHandle<()>>);

/// Spawns a member under its guard (bakeoff itself, `__guard`: see [`super::guard`]) as the
/// leader of a new process group, its output going to log files. A program that does not
/// exist is found here, before the guard starts.
pub fn spawn(s: &SpawnSpec) -> Result<Spawned, String> {
    let out = File::create(s.stdout).map_err(|e| format!("{}: {e}", s.stdout.display()))?;
    let err = File::create(s.stderr).map_err(|e| format!("{}: {e}", s.stderr.display()))?;
    if !program_found(&s.command[0], s.dir) {
        return Err(format!(
            "`{}`: No such file or directory (os error 2)",
            s.command[0]
        ));
    }
    let mut cmd = guard_command(s.command, s.dir);
    cmd.envs(s.env.iter().map(|(k, v)| (k, v)))
        .env(super::TAG_VAR, s.tag)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let cpus = s.cpus.map(<[usize]>::to_vec);
    // SAFETY: the closure runs in the child between fork and exec and only makes
    // async-signal-safe system calls (sched_setaffinity) on stack data; the CPU list was
    // allocated before the fork.
    unsafe {
        cmd.pre_exec(move || {
            if let Some(cpus) = &cpus {
                crate::sys::pin_current_thread(cpus)?;
            }
            Ok(())
        });
    }
    let mut child = crate::sys::children::spawn(&mut cmd).map_err(|e| e.to_string())?;
    let log_cpus = s.log_cpus.map(<[usize]>::to_vec);
    let mut pumps = Vec::new();
    if let Some(o) = child.stdout.take() {
        pumps.push(
            super::logcap::pump(o, out, s.log_limit, log_cpus.clone())
                .map_err(|e| e.to_string())?,
        );
    }
    if let Some(e) = child.stderr.take() {
        pumps.push(super::logcap::pump(e, err, s.log_limit, log_cpus).map_err(|e| e.to_string())?);
    }
    Ok((child, pumps))
}

/// `bakeoff __guard -- COMMAND…` (see [`super::guard`]): the guard of everything bakeoff
/// starts — a member, a setup or build command, git — in a process group of its own, with no
/// input, dying with bakeoff (`PR_SET_PDEATHSIG`), in `dir` when given. The caller adds the
/// environment and where the output goes.
pub(super) fn guard_command<S: AsRef<std::ffi::OsStr>>(
    command: &[S],
    dir: Option<&Path>,
) -> Command {
    // /proc/self/exe, not a path: it still names this binary if the file was replaced.
    let mut c = Command::new("/proc/self/exe");
    c.arg0("bakeoff-guard")
        .arg(super::guard::ARG)
        .arg("--")
        .args(command)
        .env("BAKEOFF_GUARD_PARENT", std::process::id().to_string())
        .stdin(Stdio::null())
        .process_group(0);
    if let Some(d) = dir {
        c.current_dir(d);
    }
    // SAFETY: between fork and exec, only prctl (async-signal-safe) with integer arguments.
    unsafe {
        c.pre_exec(|| {
            // If bakeoff dies, the guard kills the command and all it started.
            libc::prctl(
                libc::PR_SET_PDEATHSIG,
                super::guard::PARENT_DIED as libc::c_ulong,
            );
            Ok(())
        });
    }
    c
}

/// Whether `program` can be executed: a path (relative to `dir` when given), or a name on
/// PATH.
fn program_found(program: &str, dir: Option<&Path>) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    let runnable = |p: &Path| {
        p.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.contains('/') {
        let p = Path::new(program);
        return match dir {
            Some(d) if p.is_relative() => runnable(&d.join(p)),
            _ => runnable(p),
        };
    }
    on_path(program).is_some()
}

/// Where a program named without a `/` is found on PATH (a runnable file), as `exec` finds it.
pub fn on_path(program: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt as _;
    if program.contains('/') || program.is_empty() {
        return None;
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| {
            p.metadata()
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// What a contender's start and everything it runs belong to: the start's mark (carried in
/// every process's environment), the results folder its guards are recorded in, and the
/// command's cancellation.
#[derive(Debug, Clone)]
pub struct Owner {
    pub tag: String,
    pub results: PathBuf,
    pub cancel: crate::cancel::Cancel,
    /// Each command log's size limit (the plan's `log_limit`, as a member's log).
    pub log_limit: u64,
}

/// A command bakeoff runs to completion: a setup or cleanup command, a `command` probe.
pub struct Oneshot<'a> {
    pub cmd: &'a [String],
    pub dir: Option<&'a Path>,
    pub owner: &'a Owner,
    /// Set in its environment (a build's contender `env`).
    pub env: &'a [(String, String)],
    /// Its output (`None`: discarded).
    pub log: Option<&'a Path>,
    pub limit: Duration,
}

/// A pipe, both ends closed on exec (the child gets the writing end as its stdout/stderr).
fn pipe() -> std::io::Result<(std::fs::File, std::fs::File)> {
    use std::os::fd::FromRawFd as _;
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: pipe2 writes two new descriptors into the array it is given.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just made and belong to nothing else.
    Ok(unsafe {
        (
            std::fs::File::from_raw_fd(fds[0]),
            std::fs::File::from_raw_fd(fds[1]),
        )
    })
}

/// Starts a command's guard: its PID, and the thread copying its output into its log
/// (capped at its owner's `log_limit` per command, as a member's log is).
fn spawn_guarded(o: &Oneshot) -> Result<(i32, Option<std::thread::JoinHandle<()>>), String> {
    let (out, err, pump) = match o.log {
        Some(log) => {
            let file = OpenOptions::new()
                .create(true)
                .write(true)
                .truncate(false)
                .open(log)
                .map_err(|e| format!("{}: {e}", log.display()))?;
            let (reader, writer) = pipe().map_err(|e| format!("a pipe: {e}"))?;
            let second = writer.try_clone().map_err(|e| format!("a pipe: {e}"))?;
            (
                Stdio::from(writer),
                Stdio::from(second),
                Some((reader, file)),
            )
        }
        None => (Stdio::null(), Stdio::null(), None),
    };
    if !program_found(&o.cmd[0], o.dir) {
        return Err(format!(
            "cannot run `{}`: No such file or directory (os error 2)",
            o.cmd[0]
        ));
    }
    let mut c = guard_command(o.cmd, o.dir);
    c.envs(o.env.iter().map(|(k, v)| (k, v)))
        .env(super::TAG_VAR, &o.owner.tag)
        .stdout(out)
        .stderr(err);
    // Waited for with wait4 (std's Child is not asked again): its resource usage is the
    // guard's whole subtree's, which it reaped.
    let child = crate::sys::children::spawn(&mut c).map_err(|e| format!("`{}`: {e}", o.cmd[0]))?;
    // The pipe's writing ends now live only in the command: the copy ends when it (and all
    // it started) has closed them.
    drop(c);
    let pump = match pump {
        Some((reader, file)) => Some(
            super::logcap::pump(reader, file, o.owner.log_limit, None)
                .map_err(|e| format!("a log thread: {e}"))?,
        ),
        None => None,
    };
    Ok((child.id() as i32, pump))
}

/// Runs a command under its own guard (as a member runs: it dies with bakeoff, and takes
/// everything it started with it) in its own process group, recorded in the results folder
/// while it runs. Ends it, and all it started, when it overstays its limit or the user
/// interrupts.
pub fn run_guarded(o: &Oneshot) -> Result<(), String> {
    run_guarded_spent(o).0
}

/// [`run_guarded`], with what the command and all it started used (when it was reaped).
pub fn run_guarded_spent(o: &Oneshot) -> (Result<(), String>, Option<Spent>) {
    let (guard, pump) = match spawn_guarded(o) {
        Ok(g) => g,
        Err(e) => return (Err(e), None),
    };
    let shown = || o.cmd.join(" ");
    super::leftovers::record(&o.owner.results, guard, &o.owner.tag);
    let start = Instant::now();
    let mut ended: Option<(libc::c_int, libc::rusage)> = None;
    let outcome = loop {
        ended = ended.or_else(|| wait4(guard, false));
        match ended {
            Some((st, _)) if libc::WIFEXITED(st) && libc::WEXITSTATUS(st) == 0 => break Ok(()),
            Some((st, _)) => break Err(format!("`{}` {}", shown(), describe(st))),
            None if start.elapsed() >= o.limit => {
                break Err(format!("`{}` still running after {:?}", shown(), o.limit))
            }
            None if o.owner.cancel.is_cancelled() => {
                break Err(format!("`{}` interrupted", shown()))
            }
            None => std::thread::sleep(Duration::from_millis(5)),
        }
    };
    if ended.is_none() {
        // The guard kills the command's whole subtree; the group kill is the fallback.
        // SAFETY: kill has no memory preconditions; the guard is our child, not yet reaped.
        unsafe {
            libc::kill(guard, super::guard::PARENT_DIED);
        }
        let until = Instant::now() + Duration::from_secs(2);
        while ended.is_none() && Instant::now() < until {
            ended = wait4(guard, false);
            std::thread::sleep(Duration::from_millis(5));
        }
        super::kill_group(guard, libc::SIGKILL);
        ended = ended.or_else(|| wait4(guard, true));
    }
    // What it left in its group (its guard reaped what re-parented to it).
    super::kill_group(guard, libc::SIGKILL);
    // What a command that killed its own guard left (re-parented to bakeoff, with or
    // without its mark): now, not at the end of the run — nothing a build or a setup
    // started serves through the measurements that follow, or outlives a bakeoff killed
    // later.
    crate::sys::children::sweep();
    super::leftovers::forget(&o.owner.results, guard);
    // Its output is in the log before the caller reads it — unless something it started
    // outside its group still holds the pipe: then the copy goes on by itself.
    if let Some(p) = pump {
        let until = Instant::now() + Duration::from_secs(2);
        while !p.is_finished() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(2));
        }
        if p.is_finished() {
            let _ = p.join();
        }
    }
    let usage = ended.map(|(_, r)| {
        let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
        Spent {
            cpu_s: secs(r.ru_utime) + secs(r.ru_stime),
            peak_rss_bytes: r.ru_maxrss.max(0) as u64 * 1024,
        }
    });
    (outcome, usage)
}

/// What a command and everything it started used, as its guard reaped them.
#[derive(Debug, Clone, Copy, Default)]
pub struct Spent {
    pub cpu_s: f64,
    /// The largest process's peak resident set.
    pub peak_rss_bytes: u64,
}

/// Reaps `pid` when it has ended (or waits for it, with `block`): its wait status and the
/// resources it and its reaped descendants used.
fn wait4(pid: i32, block: bool) -> Option<(libc::c_int, libc::rusage)> {
    let mut status = 0;
    // SAFETY: wait4 writes the status and usage into locals.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let flags = if block { 0 } else { libc::WNOHANG };
    let got = unsafe { libc::wait4(pid, &mut status, flags, &mut usage) };
    if got == pid {
        crate::sys::children::reaped(pid);
    }
    (got == pid).then_some((status, usage))
}

/// `exit status: 3`, `signal: 9 (SIGKILL)`.
fn describe(status: libc::c_int) -> String {
    if libc::WIFEXITED(status) {
        format!("exit status: {}", libc::WEXITSTATUS(status))
    } else if libc::WIFSIGNALED(status) {
        let sig = libc::WTERMSIG(status);
        format!("signal: {sig} ({})", signal_name(sig))
    } else {
        format!("wait status {status}")
    }
}

fn signal_name(sig: libc::c_int) -> &'static str {
    match sig {
        libc::SIGKILL => "SIGKILL",
        libc::SIGTERM => "SIGTERM",
        libc::SIGINT => "SIGINT",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGABRT => "SIGABRT",
        _ => "a signal",
    }
}

/// Runs a setup or cleanup command to completion (bounded), appending its output to `log`.
pub fn run_logged(
    cmd: &[String],
    log: &Path,
    dir: Option<&Path>,
    owner: &Owner,
    limit: Duration,
) -> Result<(), String> {
    run_guarded(&Oneshot {
        cmd,
        dir,
        owner,
        env: &[],
        log: Some(log),
        limit,
    })
    .map_err(|e| format!("{e} (output in {})", log.display()))
}

/// Kills every process whose environment carries `BAKEOFF_RUN=tag` (processes that left
/// their process group, e.g. daemons that called setsid). Returns how many it found.
pub fn sweep(tag: &str) -> usize {
    let needle = format!("{}={tag}", super::TAG_VAR);
    let mut found = 0;
    for _round in 0..3 {
        let pids = tagged(&needle);
        if pids.is_empty() {
            break;
        }
        found += pids.len();
        for pid in pids {
            // SAFETY: kill has no memory preconditions.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    found
}

/// Processes whose environment contains exactly `needle` (`NAME=value`).
pub fn tagged(needle: &str) -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let me = std::process::id() as i32;
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| pid != me)
        .filter(|&pid| crate::sys::environ_has(pid, needle))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_fill_in_and_shell_braces_survive() {
        let ports: BTreeMap<String, u16> = [("port".into(), 2379), ("peer".into(), 2380)].into();
        let p = Placeholders {
            ports: &ports,
            state: PathBuf::from("/tmp/s"),
            member: "m1".into(),
        };
        assert_eq!(
            expand(
                "--x={port} --p={port:peer} --d={state}/{member} ${HOME} {seq}",
                &p
            )
            .unwrap(),
            "--x=2379 --p=2380 --d=/tmp/s/m1 ${HOME} {seq}"
        );
        assert!(expand("{port:nope}", &p).unwrap_err().contains("nope"));
        assert!(expand("{env:BAKEOFF_SURELY_UNSET_VAR}", &p)
            .unwrap_err()
            .contains("BAKEOFF_SURELY_UNSET_VAR"));
        assert_eq!(expand("a{b", &p).unwrap(), "a{b");
        assert_eq!(
            expand("{env:BAKEOFF_SURELY_UNSET_VAR:-/usr/bin/x}", &p).unwrap(),
            "/usr/bin/x"
        );
    }

    #[test]
    fn free_ports_are_distinct() {
        let names: BTreeSet<String> = ["a", "b", "c"].iter().map(|s| s.to_string()).collect();
        let (ports, held) = free_ports(&names).unwrap();
        let set: BTreeSet<u16> = ports.values().copied().collect();
        assert_eq!(set.len(), 3);
        // Held, none of them can be bound — nor handed to a listener of ours asking for
        // any free port (a delay's proxy), until the caller lets them go.
        for p in &set {
            assert!(
                std::net::TcpListener::bind(("127.0.0.1", *p)).is_err(),
                "{p}"
            );
        }
        let others: Vec<std::net::TcpListener> = (0..64)
            .map(|_| std::net::TcpListener::bind("127.0.0.1:0").unwrap())
            .collect();
        for o in &others {
            assert!(!set.contains(&o.local_addr().unwrap().port()));
        }
        assert_eq!(held.len(), 3);
    }
}
