//! What a contender costs: CPU time and resident memory of its whole process tree (every
//! process in its members' process groups, read from `/proc`), and the size of its state on
//! disk. A sampler thread keeps the peak; CPU time is also read on demand around scenarios.

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
    peak_rss: u64,
}

/// Samples the process groups `pgids` ten times a second until dropped.
pub struct Sampler {
    pgids: Arc<Vec<i32>>,
    seen: Arc<Mutex<Seen>>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Sampler {
    pub fn start(pgids: Vec<i32>) -> Sampler {
        let pgids = Arc::new(pgids);
        let seen = Arc::new(Mutex::new(Seen::default()));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (pgids, seen, stop) = (pgids.clone(), seen.clone(), stop.clone());
            std::thread::Builder::new()
                .name("bakeoff-sampler".into())
                .spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        sample(&pgids, &seen);
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

    /// Reads the groups now and returns the totals so far.
    pub fn now(&self) -> Usage {
        sample(&self.pgids, &self.seen);
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
    let mut seen = seen.lock().expect("sampler lock");
    for (pid, t) in found {
        seen.ticks.insert(pid, t);
    }
    seen.peak_rss = seen.peak_rss.max(rss_pages * page_size());
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
