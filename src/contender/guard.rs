//! The guard: a small process between bakeoff and each member (bakeoff itself, run as
//! `bakeoff __guard -- PROGRAM ARGS…`, like `tini`), so nothing a member starts outlives the
//! run — not even when bakeoff is killed with SIGKILL.
//!
//! `PR_SET_PDEATHSIG` reaches only a direct child, and a subreaper in bakeoff dies with it
//! (bakeoff is one too during runs, for the orphans of a guard its member killed:
//! `sys::children`).
//! The guard is a *child subreaper* (`PR_SET_CHILD_SUBREAPER`): every descendant that
//! double-forks or calls `setsid` re-parents to it, whatever its environment says. It gets
//! [`PARENT_DIED`] when bakeoff dies (`PR_SET_PDEATHSIG`) and when bakeoff asks it to (the
//! end of a stop's timeout, a second Ctrl-C); either way it kills its whole subtree. When the
//! member exits on its own, the guard kills what the member left behind, then exits the way
//! the member did (same code, or the same signal), so bakeoff reads the member's own exit.
//!
//! It stays in the member's process group (a group signal from bakeoff reaches both), and
//! ignores the group's SIGTERM and SIGINT itself: those are for the member, which stops
//! gracefully or is killed through the guard at the stop timeout.

/// The signal that tells a guard to kill its subtree and exit (bakeoff's death, or bakeoff
/// asking).
pub const PARENT_DIED: libc::c_int = libc::SIGUSR2;

/// The hidden first argument that makes bakeoff a guard.
pub const ARG: &str = "__guard";

/// The signals the guard waits for synchronously (blocked, then taken with `sigwaitinfo`,
/// so none can slip between a check and a wait). The member gets an empty mask back.
fn waited() -> libc::sigset_t {
    // SAFETY: sigset operations on a local.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for s in [PARENT_DIED, libc::SIGCHLD, libc::SIGTERM, libc::SIGINT] {
            libc::sigaddset(&mut set, s);
        }
        set
    }
}

/// Runs `command` under the guard and exits as it did. Never returns.
pub fn run(command: &[String]) -> ! {
    use std::os::unix::process::CommandExt as _;
    let set = waited();
    // SAFETY: prctl with integer arguments; sigprocmask with a valid set.
    unsafe {
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1);
        libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
    // bakeoff may have died before its PR_SET_PDEATHSIG took effect: then the guard has been
    // re-parented already, and kills what it started at once.
    let mut kill_all = std::env::var("BAKEOFF_GUARD_PARENT")
        .ok()
        .and_then(|p| p.parse::<i32>().ok())
        .is_some_and(|p| p != unsafe { libc::getppid() });
    let Some((program, args)) = command.split_first() else {
        eprintln!("bakeoff guard: no command to run");
        std::process::exit(127);
    };
    let mut cmd = std::process::Command::new(program);
    cmd.args(args).env_remove("BAKEOFF_GUARD_PARENT");
    // SAFETY: between fork and exec, only sigprocmask (async-signal-safe) on a local set.
    unsafe {
        cmd.pre_exec(|| {
            let mut none: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut none);
            libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
            Ok(())
        });
    }
    let member = match cmd.spawn() {
        Ok(c) => c.id() as i32,
        Err(e) => {
            eprintln!("bakeoff: cannot start `{program}`: {e}");
            std::process::exit(127);
        }
    };
    let mut member_status: Option<libc::c_int> = None;
    loop {
        // Reap whatever has ended: the member, or orphans re-parented to the guard.
        loop {
            let mut status = 0;
            // SAFETY: waitpid writes the status into a local.
            let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
            if pid <= 0 {
                break;
            }
            if pid == member {
                member_status = Some(status);
            }
        }
        if kill_all || member_status.is_some() {
            // bakeoff is gone or asked, or the member ended: nothing it started stays.
            kill_subtree();
            reap_all(member, &mut member_status);
            break;
        }
        // SAFETY: sigwaitinfo with a valid set; the info is not read.
        let sig = unsafe { libc::sigwaitinfo(&set, std::ptr::null_mut()) };
        if sig == PARENT_DIED {
            kill_all = true;
        }
        // SIGCHLD: reaped above; SIGTERM/SIGINT: the member's to act on.
    }
    exit_like(member_status.unwrap_or(libc::SIGKILL))
}

/// Kills the subtree until it stays empty (a process may fork while it is being killed; its
/// children re-parent to the guard and are found in the next round).
fn kill_subtree() {
    for _round in 0..50 {
        let pids = crate::sys::descendants(std::process::id() as i32);
        if pids.is_empty() {
            return;
        }
        for pid in pids {
            // SAFETY: kill has no memory preconditions.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
        }
        let mut status = 0;
        // Reap what died so it leaves the process table (and the next round's list).
        // SAFETY: waitpid writes into a local.
        while unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) } > 0 {}
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// Reaps every child left, keeping the member's status when it is among them.
fn reap_all(member: i32, member_status: &mut Option<libc::c_int>) {
    loop {
        let mut status = 0;
        // SAFETY: waitpid writes into a local.
        let pid = unsafe { libc::waitpid(-1, &mut status, 0) };
        if pid == member {
            member_status.get_or_insert(status);
        }
        if pid <= 0 {
            let e = std::io::Error::last_os_error().raw_os_error();
            if e == Some(libc::EINTR) {
                continue;
            }
            return;
        }
    }
}

/// Exits with the member's wait status: its exit code, or dying by its signal.
fn exit_like(status: libc::c_int) -> ! {
    if libc::WIFEXITED(status) {
        std::process::exit(libc::WEXITSTATUS(status));
    }
    let sig = if libc::WIFSIGNALED(status) {
        libc::WTERMSIG(status)
    } else {
        libc::SIGKILL
    };
    // SAFETY: the default action back, the signal unblocked, and raised on ourselves.
    unsafe {
        libc::signal(sig, libc::SIG_DFL);
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, sig);
        libc::sigprocmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
        libc::raise(sig);
    }
    std::process::exit(128 + sig)
}
