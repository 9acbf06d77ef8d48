//! The few operating-system calls bakeoff needs: CPU pinning, per-thread CPU time, and the
//! set of CPUs this process may run on.

use std::time::Duration;

pub mod children;
mod ticks;
pub use ticks::*;

/// CPUs this process may run on (its affinity mask), in order.
/// What the kernel says of the machine: the CPU model, the kernel, the host's name and the
/// CPUs online.
pub struct Machine {
    pub cpu_model: String,
    pub kernel: String,
    pub hostname: String,
    pub cpus_online: usize,
}

pub fn machine() -> Machine {
    let cpuinfo = read_bounded(std::path::Path::new("/proc/cpuinfo"), 16 << 20).unwrap_or_default();
    let cpu_model = cpuinfo
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == "model name").then(|| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into());
    let read = |p: &str| {
        read_bounded(std::path::Path::new(p), 4096)
            .map(|s| s.trim().to_string())
            .unwrap_or_default()
    };
    let kernel = format!(
        "{} {}",
        read("/proc/sys/kernel/ostype"),
        read("/proc/sys/kernel/osrelease")
    );
    Machine {
        cpu_model,
        kernel: kernel.trim().to_string(),
        hostname: read("/proc/sys/kernel/hostname"),
        // SAFETY: sysconf has no preconditions.
        cpus_online: unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }.max(1) as usize,
    }
}

pub fn allowed_cpus() -> Vec<usize> {
    // SAFETY: cpu_set_t is plain data; sched_getaffinity fills it for the calling thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return (0..std::thread::available_parallelism().map_or(1, |n| n.get())).collect();
        }
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&c| libc::CPU_ISSET(c, &set))
            .collect()
    }
}

/// Pins the calling thread to `cpus`.
pub fn pin_current_thread(cpus: &[usize]) -> std::io::Result<()> {
    // SAFETY: as above; sched_setaffinity reads the set we built.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &c in cpus {
            libc::CPU_SET(c, &mut set);
        }
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// User and system CPU time.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CpuTime {
    pub user: Duration,
    pub system: Duration,
}

impl CpuTime {
    pub fn total(self) -> Duration {
        self.user + self.system
    }

    pub fn since(self, earlier: CpuTime) -> CpuTime {
        CpuTime {
            user: self.user.saturating_sub(earlier.user),
            system: self.system.saturating_sub(earlier.system),
        }
    }
}

fn rusage(who: libc::c_int) -> CpuTime {
    // SAFETY: getrusage writes into the struct we pass.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(who, &mut ru);
        ru
    };
    let tv = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
    };
    CpuTime {
        user: tv(ru.ru_utime),
        system: tv(ru.ru_stime),
    }
}

/// What `/proc/PID/stat` says of a process that bakeoff needs: to walk a process tree, find
/// a process group, and tell a process from a later one with the same PID.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcStat {
    /// `R`, `S`, `Z` (a zombie: dead, waiting to be reaped), …
    pub state: char,
    pub ppid: i32,
    pub pgrp: i32,
    /// Clock ticks since boot when it started.
    pub start_ticks: u64,
}

pub fn proc_stat(pid: i32) -> Option<ProcStat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `pid (comm) state ppid pgrp …`; comm may hold spaces and parentheses.
    let after = &text[text.rfind(')')? + 1..];
    let f: Vec<&str> = after.split_whitespace().collect();
    Some(ProcStat {
        state: f.first()?.chars().next()?,
        ppid: f.get(1)?.parse().ok()?,
        pgrp: f.get(2)?.parse().ok()?,
        start_ticks: f.get(19)?.parse().ok()?,
    })
}

/// Reads a regular file of at most `limit` bytes. A FIFO, a device (`/dev/zero`,
/// `/dev/urandom`) or a folder is refused without blocking (the file is opened with
/// `O_NONBLOCK`, so even opening a FIFO with no writer returns at once), and a larger file
/// is refused before anything is allocated for it.
pub fn read_bounded_bytes(path: &std::path::Path, limit: u64) -> std::io::Result<Vec<u8>> {
    use std::io::Read as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    let meta = f.metadata()?;
    if !meta.is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    if meta.len() > limit {
        return Err(too_large(meta.len(), limit));
    }
    let mut out = Vec::with_capacity(meta.len() as usize);
    // The file may grow while it is read: never past the limit.
    f.take(limit + 1).read_to_end(&mut out)?;
    if out.len() as u64 > limit {
        return Err(too_large(out.len() as u64, limit));
    }
    Ok(out)
}

/// As [`read_bounded_bytes`], but a pipe is read too (`bakeoff compare <(go test -bench .)`),
/// up to `limit`: it is opened without blocking (a FIFO nobody writes reads as empty, it
/// does not hang), then read as it comes. Devices and folders are still refused.
pub fn read_bounded_bytes_or_pipe(path: &std::path::Path, limit: u64) -> std::io::Result<Vec<u8>> {
    use std::io::Read as _;
    use std::os::unix::fs::{FileTypeExt as _, OpenOptionsExt as _};
    use std::os::unix::io::AsRawFd as _;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    if !f.metadata()?.file_type().is_fifo() {
        drop(f);
        return read_bounded_bytes(path, limit);
    }
    // SAFETY: fcntl on a descriptor this function owns.
    unsafe {
        let flags = libc::fcntl(f.as_raw_fd(), libc::F_GETFL);
        libc::fcntl(f.as_raw_fd(), libc::F_SETFL, flags & !libc::O_NONBLOCK);
    }
    let mut out = Vec::new();
    f.take(limit + 1).read_to_end(&mut out)?;
    if out.len() as u64 > limit {
        return Err(too_large(out.len() as u64, limit));
    }
    Ok(out)
}

fn too_large(len: u64, limit: u64) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        format!("{len} bytes, more than the {limit} allowed"),
    )
}

/// The largest plan or cases file read (TOML a person writes: far below this).
pub const PLAN_LIMIT: u64 = 16 << 20;
/// The largest results file read (`report`, `merge`, `--resume`, `compare`).
pub const RESULTS_LIMIT: u64 = 1 << 30;
/// The largest file of lines or benchmark output read whole (`{line:FILE}`, `compare`).
pub const DATA_LIMIT: u64 = 256 << 20;

/// [`read_bounded_bytes`] as UTF-8 text.
pub fn read_bounded(path: &std::path::Path, limit: u64) -> std::io::Result<String> {
    String::from_utf8(read_bounded_bytes(path, limit)?)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}

/// Every live process whose parent chain reaches `pid` (not `pid` itself), from /proc. A
/// child that started before its parent is not a real child (its parent's PID was reused)
/// and is left out, with everything below it.
pub fn descendants(pid: i32) -> Vec<i32> {
    let stats: Vec<(i32, ProcStat)> = pids()
        .into_iter()
        .filter_map(|p| Some((p, proc_stat(p)?)))
        .collect();
    let start_of = |p: i32| {
        stats
            .iter()
            .find(|(q, _)| *q == p)
            .map(|(_, s)| s.start_ticks)
    };
    let mut out = vec![pid];
    let mut i = 0;
    while i < out.len() {
        let parent = out[i];
        let parent_start = start_of(parent).unwrap_or(0);
        out.extend(
            stats
                .iter()
                .filter(|(c, s)| s.ppid == parent && *c != parent && s.start_ticks >= parent_start)
                .map(|(c, _)| *c),
        );
        i += 1;
    }
    out.remove(0);
    out
}

/// The environment of `pid` (empty for a zombie: it is dead and only waits to be reaped).
/// Bounded: an environment is limited by the kernel's argument size, far below this.
fn environ(pid: i32) -> Vec<u8> {
    use std::io::Read as _;
    let mut out = Vec::new();
    if let Ok(f) = std::fs::File::open(format!("/proc/{pid}/environ")) {
        let _ = f.take(1 << 22).read_to_end(&mut out);
    }
    out
}

/// Whether the environment of `pid` holds exactly `entry` (`NAME=value`).
pub fn environ_has(pid: i32, entry: &str) -> bool {
    environ(pid)
        .split(|&b| b == 0)
        .any(|kv| kv == entry.as_bytes())
}

/// The value of `name` in the environment of `pid`, if it is there.
pub fn environ_value(pid: i32, name: &str) -> Option<String> {
    let prefix = format!("{name}=");
    environ(pid)
        .split(|&b| b == 0)
        .find_map(|kv| kv.strip_prefix(prefix.as_bytes()))
        .and_then(|v| String::from_utf8(v.to_vec()).ok())
}

/// The PIDs of every process now in /proc.
pub fn pids() -> Vec<i32> {
    std::fs::read_dir("/proc")
        .map(|d| {
            d.flatten()
                .filter_map(|e| e.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// Raises this process's soft limit on open files to its hard limit (the default soft limit
/// is often 1024, far below what `-c 20000` needs) and returns the limit now in force.
pub fn raise_open_files_limit() -> u64 {
    // SAFETY: getrlimit/setrlimit with a valid pointer to a local struct.
    unsafe {
        let mut l: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut l) != 0 {
            return u64::MAX;
        }
        if l.rlim_cur < l.rlim_max {
            let raised = libc::rlimit {
                rlim_cur: l.rlim_max,
                rlim_max: l.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                l.rlim_cur = l.rlim_max;
            }
        }
        l.rlim_cur as u64
    }
}

/// File descriptors a load needs besides its connections (runtimes, pipes, logs, stdio).
pub const SPARE_FDS: u64 = 64;

pub fn thread_cpu_time() -> CpuTime {
    rusage(libc::RUSAGE_THREAD)
}

/// Time the calling thread has spent runnable but waiting for a CPU (in a run queue), from
/// `/proc/thread-self/schedstat`; `None` where the kernel does not report it. The kernel adds
/// a wait when the thread gets its CPU, so a reading is complete up to the last time it did.
pub fn thread_run_queue_wait() -> Option<Duration> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns: u64 = s.split_whitespace().nth(1)?.parse().ok()?;
    Some(Duration::from_nanos(ns))
}

/// Takes the calling thread out of the kernel's restartable sequences (rseq), which glibc
/// (2.35 and later) signs every thread up for. While a thread is signed up, each time it is
/// switched out the kernel marks it to update the thread's rseq area on its way back to user
/// space — a pass through the return-to-user work (`__rseq_handle_notify_resume`, two user
/// reads and a write, the block-cgroup throttle check) every wake-up. A load thread wakes
/// once an answer and never reads the area (glibc's `sched_getcpu` falls back to the system
/// call when it reads "unregistered"; the standard library and tokio do not use it). Whether
/// it was left: not under another C library, a glibc that did not sign up, or a kernel
/// without rseq.
pub fn leave_rseq() -> bool {
    #[cfg(all(
        target_os = "linux",
        any(target_arch = "x86_64", target_arch = "aarch64")
    ))]
    {
        // glibc's own signature for the area it registers (sysdeps/unix/sysv/linux/*/bits/rseq.h).
        #[cfg(target_arch = "x86_64")]
        const RSEQ_SIG: u32 = 0x5305_3053;
        #[cfg(target_arch = "aarch64")]
        const RSEQ_SIG: u32 = 0xd428_bc00;
        const RSEQ_FLAG_UNREGISTER: libc::c_int = 1;
        // Looked up rather than linked: a build against an older glibc still runs.
        // SAFETY: dlsym with NUL-terminated names; each found symbol is glibc's exported
        // `ptrdiff_t __rseq_offset` / `unsigned int __rseq_size`, read as such.
        let (offset, size) = unsafe {
            let o = libc::dlsym(libc::RTLD_DEFAULT, c"__rseq_offset".as_ptr());
            let s = libc::dlsym(libc::RTLD_DEFAULT, c"__rseq_size".as_ptr());
            if o.is_null() || s.is_null() {
                return false;
            }
            (*(o as *const isize), *(s as *const u32))
        };
        if size == 0 {
            return false;
        }
        let tp: *mut u8;
        // SAFETY: reads the thread pointer: on x86-64 glibc's TCB starts with a pointer to
        // itself at %fs:0; on AArch64 it is TPIDR_EL0.
        unsafe {
            #[cfg(target_arch = "x86_64")]
            std::arch::asm!("mov {}, fs:0", out(reg) tp, options(nostack, readonly, preserves_flags));
            #[cfg(target_arch = "aarch64")]
            std::arch::asm!("mrs {}, tpidr_el0", out(reg) tp, options(nomem, nostack, preserves_flags));
        }
        let area = tp.wrapping_offset(offset);
        // The kernel wants the length registered, 32 here; `__rseq_size` says it in some
        // glibc builds, and the features' size (20) in others (2.40, and Debian 12's 2.36).
        [32, size].iter().any(|&len| {
            // SAFETY: rseq(2) unregistering the area glibc registered for this thread; the
            // kernel checks the address, length and signature and changes nothing if any
            // differs.
            unsafe { libc::syscall(libc::SYS_rseq, area, len, RSEQ_FLAG_UNREGISTER, RSEQ_SIG) == 0 }
        })
    }
    #[cfg(not(all(
        target_os = "linux",
        any(target_arch = "x86_64", target_arch = "aarch64")
    )))]
    false
}

/// The calling thread's id, to read its scheduler counters from another thread.
pub fn thread_id() -> i32 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::gettid() }
}

/// A thread of this process's (CPU time, run-queue wait) so far, from the scheduler's own
/// nanosecond counters in `/proc/self/task/TID/schedstat`; `None` where it is not reported.
pub fn thread_schedstat(tid: i32) -> Option<(Duration, Duration)> {
    let s = std::fs::read_to_string(format!("/proc/self/task/{tid}/schedstat")).ok()?;
    let mut f = s.split_whitespace().map(|x| x.parse::<u64>().ok());
    Some((
        Duration::from_nanos(f.next()??),
        Duration::from_nanos(f.next()??),
    ))
}

/// CPU time of the whole process.
pub fn process_cpu_time() -> CpuTime {
    rusage(libc::RUSAGE_SELF)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pinning_to_an_allowed_cpu_works_and_cpu_time_grows() {
        let cpus = allowed_cpus();
        assert!(!cpus.is_empty());
        let first = cpus[0];
        std::thread::spawn(move || {
            pin_current_thread(&[first]).unwrap();
            assert_eq!(allowed_cpus(), vec![first]);
            let before = thread_cpu_time();
            let mut x = 0u64;
            while thread_cpu_time().since(before).total() < Duration::from_millis(20) {
                x = x.wrapping_add(std::hint::black_box(1));
            }
            assert!(x > 0);
            // Two spinning threads on one CPU: each waits while the other runs.
            let Some(wait0) = thread_run_queue_wait() else {
                eprintln!("skipped: this kernel does not report schedstat");
                return;
            };
            let other = std::thread::spawn(move || {
                pin_current_thread(&[first]).unwrap();
                let t = std::time::Instant::now();
                while t.elapsed() < Duration::from_millis(60) {
                    std::hint::black_box(0);
                }
            });
            let t = std::time::Instant::now();
            while t.elapsed() < Duration::from_millis(60) {
                std::hint::black_box(0);
            }
            other.join().unwrap();
            std::thread::yield_now();
            let waited = thread_run_queue_wait().unwrap() - wait0;
            assert!(waited >= Duration::from_millis(5), "waited {waited:?}");
        })
        .join()
        .unwrap();
    }

    #[test]
    fn a_thread_that_leaves_rseq_is_out_of_it_and_still_knows_its_cpu() {
        std::thread::spawn(|| {
            // SAFETY: dlsym with a NUL-terminated name; glibc's `unsigned int __rseq_size`.
            let signed_up = unsafe {
                let s = libc::dlsym(libc::RTLD_DEFAULT, c"__rseq_size".as_ptr());
                !s.is_null() && *(s as *const u32) > 0
            };
            assert!(
                signed_up || std::env::var_os("CI").is_none(),
                "this glibc signs no thread up for rseq: nothing here tests leaving it"
            );
            if !signed_up {
                return;
            }
            assert!(leave_rseq(), "the thread was signed up and could not leave");
            // The kernel knows it no more: a second leave is refused.
            assert!(!leave_rseq());
            // SAFETY: sched_getcpu has no preconditions.
            let cpu = unsafe { libc::sched_getcpu() };
            assert!(allowed_cpus().contains(&(cpu as usize)), "{cpu}");
        })
        .join()
        .unwrap();
    }
}
