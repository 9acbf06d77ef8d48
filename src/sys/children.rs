//! bakeoff's own children, and the orphans it takes in.
//!
//! Each member runs under a guard that is a child subreaper, so what the member starts
//! re-parents to the guard and dies with it. A member can still kill its own guard; then
//! what it started re-parents to the nearest subreaper above — bakeoff itself once
//! [`adopt`] made it one (during `run`), not init. bakeoff knows its own children: every
//! spawn goes through [`spawn`], which records the child's PID under the same lock
//! [`sweep`] takes, until [`reaped`] forgets it. Any other child of bakeoff is an orphan
//! from a dead guard (a `setsid env -i` daemon carries no mark and no group to find it by),
//! and [`sweep`] kills and reaps it — and then its own children, which re-parent in turn.

use std::process::{Child, Command};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// PIDs bakeoff spawned and has not reaped yet.
static OWN: Mutex<Vec<i32>> = Mutex::new(Vec::new());
/// Whether this process is a subreaper (only then can it have children it did not spawn).
static ADOPTING: AtomicBool = AtomicBool::new(false);

/// Makes bakeoff a child subreaper: orphans of its dead guards re-parent to it. Whether the
/// kernel agreed.
pub fn adopt() -> bool {
    // SAFETY: prctl with integer arguments.
    let ok = unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1) } == 0;
    ADOPTING.store(ok, Relaxed);
    ok
}

fn own() -> std::sync::MutexGuard<'static, Vec<i32>> {
    OWN.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Spawns `cmd` and records the child as bakeoff's own (so a [`sweep`] never takes it for
/// an orphan, even one running at the same moment).
pub fn spawn(cmd: &mut Command) -> std::io::Result<Child> {
    let mut own = own();
    let child = cmd.spawn()?;
    own.push(child.id() as i32);
    Ok(child)
}

/// Forgets a child bakeoff has reaped (its PID may be given to another process).
pub fn reaped(pid: i32) {
    own().retain(|&p| p != pid);
}

/// Kills and reaps every child of bakeoff it did not spawn, and theirs as they re-parent;
/// how many were killed (zombies only reaped are not counted). Nothing without [`adopt`].
pub fn sweep() -> usize {
    if !ADOPTING.load(Relaxed) {
        return 0;
    }
    let me = std::process::id() as i32;
    let mut killed = 0;
    // Each pass takes the orphans' own children, re-parented when their parent died.
    for _pass in 0..16 {
        let orphans: Vec<(i32, bool)> = {
            let own = own();
            let orphans: Vec<(i32, bool)> = super::pids()
                .into_iter()
                .filter(|&p| p > 1 && !own.contains(&p))
                .filter_map(|p| {
                    let s = super::proc_stat(p)?;
                    (s.ppid == me).then_some((p, s.state == 'Z'))
                })
                .collect();
            for &(p, zombie) in &orphans {
                if !zombie {
                    // SAFETY: kill has no memory preconditions; `p` is our child, so its PID
                    // cannot be reused until we reap it.
                    unsafe {
                        libc::kill(p, libc::SIGKILL);
                    }
                }
            }
            orphans
        };
        if orphans.is_empty() {
            break;
        }
        for (p, zombie) in orphans {
            killed += usize::from(!zombie);
            reap(p, Duration::from_secs(2));
        }
    }
    killed
}

/// Reaps the child `pid`, waiting at most `limit` for it to end.
fn reap(pid: i32, limit: Duration) {
    let until = Instant::now() + limit;
    loop {
        let mut status = 0;
        // SAFETY: waitpid writes the status into a local.
        let got = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        if got != 0 || Instant::now() > until {
            return;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}
