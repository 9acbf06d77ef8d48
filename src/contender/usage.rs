//! What a contender costs: CPU time and resident memory of its whole process tree (every
//! process in its members' process groups, read from `/proc`), and the size of its state on
//! disk. A sampler thread keeps the peak; CPU time is also read on demand around scenarios.
//!
//! [`Sampler::exact`] is the server's cost as the verdicts use it: CPU time in nanoseconds
//! from every thread's `/proc/PID/task/TID/schedstat` (the scheduler's own runtime, not 10 ms
//! ticks), with context switches from each thread's `status`. A thread that exits keeps its
//! last reading (the sampler reads every 100 ms), so CPU of short-lived threads is lost for
//! at most its last 100 ms.

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// CPU seconds and peak memory of a process tree, as far as sampled.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Usage {
    pub cpu_user_s: f64,
    pub cpu_system_s: f64,
    pub peak_rss_bytes: u64,
}

impl Usage {
    pub fn cpu_s(&self) -> f64 {
        self.cpu_user_s + self.cpu_system_s
    }
}

#[derive(Default)]
struct Seen {
    /// Last (user, system) clock ticks of every process ever seen in the groups; a process
    /// that exits keeps its last reading.
    ticks: HashMap<i32, (u64, u64)>,
    /// Last reading of every thread ever seen in the groups, by thread id.
    threads: HashMap<i32, Cost>,
    /// The processes of the groups at the last full pass over `/proc`.
    pids: Vec<i32>,
    peak_rss: u64,
}

/// What a process tree has cost so far: CPU time on the scheduler's clock, and how often its
/// threads gave up the CPU (waiting for I/O, a lock) or had it taken away (preempted).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Cost {
    pub cpu_ns: u64,
    /// Time runnable but waiting for a CPU (`schedstat`'s second field).
    pub wait_ns: u64,
    pub voluntary_switches: u64,
    pub involuntary_switches: u64,
}

impl Cost {
    /// What was spent between `self` (earlier) and `later`.
    pub fn until(self, later: Cost) -> Cost {
        Cost {
            cpu_ns: later.cpu_ns.saturating_sub(self.cpu_ns),
            wait_ns: later.wait_ns.saturating_sub(self.wait_ns),
            voluntary_switches: later
                .voluntary_switches
                .saturating_sub(self.voluntary_switches),
            involuntary_switches: later
                .involuntary_switches
                .saturating_sub(self.involuntary_switches),
        }
    }
}

/// Samples the process groups `pgids` ten times a second until dropped.
pub struct Sampler {
    pgids: Arc<Mutex<Vec<i32>>>,
    seen: Arc<Mutex<Seen>>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Sampler {
    pub fn start(pgids: Vec<i32>) -> Sampler {
        let pgids = Arc::new(Mutex::new(pgids));
        let seen = Arc::new(Mutex::new(Seen::default()));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (pgids, seen, stop) = (pgids.clone(), seen.clone(), stop.clone());
            std::thread::Builder::new()
                .name("bakeoff-sampler".into())
                .spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        sample(&groups(&pgids), &seen);
                        std::thread::sleep(Duration::from_millis(100));
                    }
                })
                .ok()
        };
        Sampler {
            pgids,
            seen,
            stop,
            thread,
        }
    }

    /// Adds a process group (a member started later, after the members it waits for).
    pub fn add(&self, pgid: i32) {
        self.pgids.lock().expect("sampler lock").push(pgid);
    }

    /// The processes of the groups, read now.
    pub fn pids(&self) -> Vec<i32> {
        sample(&groups(&self.pgids), &self.seen);
        self.seen.lock().expect("sampler lock").pids.clone()
    }

    /// Reads the groups now and returns the totals so far.
    pub fn now(&self) -> Usage {
        sample(&groups(&self.pgids), &self.seen);
        let seen = self.seen.lock().expect("sampler lock");
        let tick = clock_tick();
        let (u, s) = seen
            .ticks
            .values()
            .fold((0, 0), |(u, s), (a, b)| (u + a, s + b));
        Usage {
            cpu_user_s: u as f64 / tick,
            cpu_system_s: s as f64 / tick,
            peak_rss_bytes: seen.peak_rss,
        }
    }
}

impl Sampler {
    /// Reads every thread of the groups' processes now: the exact cost so far. Only the
    /// processes found by the last pass over `/proc` are read (a pass over every process of
    /// the machine takes milliseconds, and the reading must be taken at the edge of the
    /// window, not some milliseconds into it); one started since is read from the next pass.
    pub fn exact(&self) -> Cost {
        let mut pids = self.seen.lock().expect("sampler lock").pids.clone();
        if pids.is_empty() {
            sample(&groups(&self.pgids), &self.seen); // no pass yet: make one now
            pids = self.seen.lock().expect("sampler lock").pids.clone();
        }
        let threads = read_threads(&pids);
        let mut seen = self.seen.lock().expect("sampler lock");
        for (tid, c) in threads {
            seen.threads.insert(tid, c);
        }
        seen.threads.values().fold(Cost::default(), |a, t| Cost {
            cpu_ns: a.cpu_ns + t.cpu_ns,
            wait_ns: a.wait_ns + t.wait_ns,
            voluntary_switches: a.voluntary_switches + t.voluntary_switches,
            involuntary_switches: a.involuntary_switches + t.involuntary_switches,
        })
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A `sysconf` value, or `fallback` when the system does not say.
fn sysconf(name: libc::c_int, fallback: i64) -> i64 {
    // SAFETY: sysconf has no preconditions.
    let v = unsafe { libc::sysconf(name) };
    if v > 0 {
        v
    } else {
        fallback
    }
}

fn clock_tick() -> f64 {
    crate::sys::clock_ticks_per_s()
}

fn page_size() -> u64 {
    sysconf(libc::_SC_PAGESIZE, 4096) as u64
}

/// One pass over `/proc`: CPU ticks per process and the summed RSS of the groups.
fn groups(pgids: &Mutex<Vec<i32>>) -> Vec<i32> {
    pgids.lock().expect("sampler lock").clone()
}

fn sample(pgids: &[i32], seen: &Mutex<Seen>) {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return;
    };
    let mut rss_pages = 0;
    let mut found = Vec::new();
    for entry in dir.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<i32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        if let Some(s) = parse_stat(&stat) {
            if pgids.contains(&s.pgrp) {
                rss_pages += s.rss_pages;
                found.push((pid, (s.utime, s.stime)));
            }
        }
    }
    let pids: Vec<i32> = found.iter().map(|f| f.0).collect();
    let threads = read_threads(&pids);
    let mut seen = seen.lock().expect("sampler lock");
    seen.pids = pids;
    for (pid, t) in found {
        seen.ticks.insert(pid, t);
    }
    for (tid, c) in threads {
        seen.threads.insert(tid, c);
    }
    seen.peak_rss = seen.peak_rss.max(rss_pages * page_size());
}

/// The cost so far of every thread of `pids`, by thread id.
fn read_threads(pids: &[i32]) -> Vec<(i32, Cost)> {
    let mut out = Vec::new();
    for pid in pids {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
            continue;
        };
        for t in tasks.flatten() {
            let Some(tid) = t.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
                continue;
            };
            if let Some(c) = thread_cost(*pid, tid) {
                out.push((tid, c));
            }
        }
    }
    out
}

/// One thread's CPU nanoseconds (`schedstat`'s first field) and context switches.
fn thread_cost(pid: i32, tid: i32) -> Option<Cost> {
    let sched = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/schedstat")).ok()?;
    let status =
        std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0)
    };
    let mut fields = sched.split_whitespace();
    Some(Cost {
        cpu_ns: fields.next()?.parse().ok()?,
        wait_ns: fields.next().and_then(|w| w.parse().ok()).unwrap_or(0),
        voluntary_switches: field("voluntary_ctxt_switches:"),
        involuntary_switches: field("nonvoluntary_ctxt_switches:"),
    })
}

#[derive(Debug, PartialEq)]
struct Stat {
    pgrp: i32,
    utime: u64,
    stime: u64,
    rss_pages: u64,
}

/// Fields of `/proc/PID/stat` (proc(5)); the command name in parentheses may hold spaces.
fn parse_stat(line: &str) -> Option<Stat> {
    let rest = &line[line.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // `rest` starts at field 3 (state), so field N is f[N - 3].
    Some(Stat {
        pgrp: f.get(2)?.parse().ok()?,
        utime: f.get(11)?.parse().ok()?,
        stime: f.get(12)?.parse().ok()?,
        rss_pages: f.get(21)?.parse().ok()?,
    })
}

/// Bytes a directory tree occupies on disk (allocated blocks, as `du` counts them).
pub fn disk_usage(dir: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt as _;
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let mut total = 0;
    for e in entries.flatten() {
        let Ok(m) = e.metadata() else { continue };
        if m.is_dir() {
            total += disk_usage(&e.path());
        }
        total += m.blocks() * 512;
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_with_odd_names_parse() {
        let line = "1234 (my (odd) srv) S 1 1234 1234 0 -1 4194560 100 0 0 0 25 7 0 0 20 0 3 0 555 1000000 321 18446744073709551615";
        assert_eq!(
            parse_stat(line),
            Some(Stat {
                pgrp: 1234,
                utime: 25,
                stime: 7,
                rss_pages: 321
            })
        );
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn exact_cost_counts_nanoseconds_of_every_thread() {
        // SAFETY: getpgrp has no preconditions.
        let me = unsafe { libc::getpgrp() };
        let s = Sampler::start(vec![me]);
        let before = s.exact();
        // This thread burns 30 ms of CPU (its own clock says so); the group's cost must
        // show at least that, to the nanosecond clock's precision, not in 10 ms ticks.
        let t0 = crate::sys::thread_cpu_time().total();
        while crate::sys::thread_cpu_time().total() - t0 < Duration::from_millis(30) {
            std::hint::black_box(0);
        }
        std::thread::sleep(Duration::from_millis(5)); // gives up the CPU: a voluntary switch
        let spent = before.until(s.exact());
        assert!(spent.cpu_ns >= 29_000_000, "{spent:?}");
        assert!(spent.cpu_ns < 5_000_000_000, "{spent:?}");
        assert!(spent.voluntary_switches > 0, "{spent:?}");
    }

    #[test]
    fn the_own_process_group_is_seen_and_disk_is_counted() {
        // SAFETY: getpgrp has no preconditions.
        let me = unsafe { libc::getpgrp() };
        let s = Sampler::start(vec![me]);
        let u = s.now();
        assert!(u.peak_rss_bytes > 0, "{u:?}");
        let dir = std::env::temp_dir().join(format!("bakeoff-du-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        std::fs::write(dir.join("sub/f"), vec![7u8; 20_000]).unwrap();
        assert!(disk_usage(&dir) >= 20_000);
        std::fs::remove_dir_all(dir).unwrap();
    }
}
