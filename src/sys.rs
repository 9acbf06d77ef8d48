//! The few operating-system calls bakeoff needs: CPU pinning, per-thread CPU time, and the
//! set of CPUs this process may run on.

use std::time::Duration;

/// CPUs this process may run on (its affinity mask), in order.
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

/// CPU time of the calling thread.
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
}
