//! Short commands whose output bakeoff reads — git, a build tool's `--version` — run as a
//! member runs: under a guard (it dies with bakeoff, even by SIGKILL, and takes all it
//! started with it), in a process group of its own, ended at its time limit or the command's
//! cancel, its output read only up to a limit.

use std::io::Read;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::cancel::Cancel;

/// What a captured command's standard error is kept of (its last line is the message).
const STDERR_LIMIT: u64 = 64 << 10;

/// A command to run to its end and read the output of.
pub struct Capture<'a> {
    pub program: &'a Path,
    pub args: &'a [&'a str],
    /// Where it runs (bakeoff's own folder when `None`).
    pub dir: Option<&'a Path>,
    pub env: &'a [(&'a str, &'a str)],
    pub cancel: &'a Cancel,
    pub limit: Duration,
    /// The most of its standard output read: more is an error (the rest is drained, not
    /// kept).
    pub max_output: u64,
}

/// Runs `c` to its end: its standard output when it succeeds, else why not (its standard
/// error's last line, its time limit, or the cancel).
pub fn capture(c: &Capture) -> Result<Vec<u8>, String> {
    let mut line: Vec<&std::ffi::OsStr> = vec![c.program.as_os_str()];
    line.extend(c.args.iter().map(std::ffi::OsStr::new));
    let mut cmd = super::guard_command(&line, c.dir);
    cmd.envs(c.env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = crate::sys::children::spawn(&mut cmd).map_err(|e| e.to_string())?;
    let pid = child.id() as i32;
    let out = drain(child.stdout.take(), c.max_output);
    let err = drain(child.stderr.take(), STDERR_LIMIT);
    let start = Instant::now();
    let waited = loop {
        match child.try_wait() {
            Ok(Some(s)) => break Ok(s),
            Err(e) => break Err(e.to_string()),
            Ok(None) if c.cancel.is_cancelled() => break Err("interrupted".to_string()),
            Ok(None) if start.elapsed() >= c.limit => {
                break Err(format!("did not finish within {:?}", c.limit))
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
        }
    };
    if waited.is_err() {
        end(&mut child);
    }
    crate::sys::children::reaped(pid);
    // What a command that killed its own guard left re-parents to bakeoff.
    crate::sys::children::sweep();
    let status = waited?;
    let (out, over) = joined(out)?;
    let (err, _) = joined(err).unwrap_or_default();
    if !status.success() {
        let err = String::from_utf8_lossy(&err);
        let last = err.lines().rev().find(|l| !l.trim().is_empty());
        return Err(format!("{status}: {}", last.unwrap_or("")));
    }
    if over {
        return Err(format!(
            "it printed more than the {} KiB bakeoff reads",
            c.max_output >> 10
        ));
    }
    Ok(out)
}

/// Ends a guard and everything under it: asked first, then its group killed.
fn end(child: &mut std::process::Child) {
    let pid = child.id() as i32;
    // SAFETY: kill has no memory preconditions; the guard is our child, not yet reaped.
    unsafe {
        libc::kill(pid, crate::contender::guard::PARENT_DIED);
    }
    let until = Instant::now() + Duration::from_secs(2);
    while Instant::now() < until {
        if matches!(child.try_wait(), Ok(Some(_))) {
            return;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    crate::contender::kill_group(pid, libc::SIGKILL);
    let _ = child.wait();
}

type Drained = std::thread::JoinHandle<(Vec<u8>, bool)>;

/// A thread reading `r` to its end: the first `limit` bytes kept, whether there were more.
fn drain(r: Option<impl Read + Send + 'static>, limit: u64) -> Option<Drained> {
    let r = r?;
    Some(std::thread::spawn(move || {
        let mut r = r;
        let mut out = Vec::new();
        let _ = (&mut r).take(limit).read_to_end(&mut out);
        let more = std::io::copy(&mut r, &mut std::io::sink()).unwrap_or(0);
        (out, more > 0)
    }))
}

/// What a drain read, once the pipe closed. Everything that held the pipe was under the
/// guard, so it closes when the guard ends; a pipe still open 2 s later is an error.
fn joined(d: Option<Drained>) -> Result<(Vec<u8>, bool), String> {
    let Some(d) = d else {
        return Ok((Vec::new(), false));
    };
    let until = Instant::now() + Duration::from_secs(2);
    while !d.is_finished() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(2));
    }
    if !d.is_finished() {
        return Err("something it started still holds its output open".into());
    }
    d.join()
        .map_err(|_| "reading its output failed".to_string())
}
