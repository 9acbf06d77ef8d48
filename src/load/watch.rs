//! A watchdog for the blocking client's reads, so a read can wait without a timeout of the
//! kernel's.
//!
//! A socket's receive timeout (`SO_RCVTIMEO`) makes every wait arm a kernel timer and
//! delete it when the answer comes — about 2 % of a request's CPU at one connection here
//! (BENCHMARKS.md). Instead, the client says when it wants to be woken should it still be
//! waiting ([`Watch::arm`]: two atomic stores and a load a read), and a thread of its own
//! looks at that once its time comes: if the read is still waiting, it sends the client's
//! thread a signal whose handler does nothing, and the read ends with `EINTR`. The client
//! then decides, as it did when the read's timeout ran out: the call's limit, a stop.
//!
//! The watchdog wakes when the armed time comes or a [`super::CUT_CHECK`] after it last
//! looked, whichever is sooner: about ten times a second while calls are answered. A time
//! armed sooner than it will next look (a limit shorter than the ones before) wakes it at once.
//! A signal that lands just before the read begins is lost; one is sent again each
//! [`RETRY`] while the same time stays armed and past.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How soon a signal is sent again while the read it was for still waits.
const RETRY: Duration = Duration::from_millis(1);

/// The watched thread's side. Dropping it ends the watchdog.
pub(super) struct Watch {
    shared: Arc<Shared>,
    watchdog: Option<JoinHandle<()>>,
}

struct Shared {
    epoch: Instant,
    /// When the watched thread wants a signal if it is still waiting: nanoseconds from
    /// `epoch`, plus one; 0 when it is not waiting.
    wake_at: AtomicU64,
    /// When the watchdog looks next, in the same units: a sooner `wake_at` wakes it.
    looks_at: AtomicU64,
    ended: AtomicBool,
    /// The watched thread.
    tid: libc::pid_t,
    /// The watchdog's own CPU time, user and system, in microseconds: as it last read it,
    /// each time it woke.
    user_us: AtomicU64,
    system_us: AtomicU64,
}

impl Shared {
    fn ns(&self, t: Instant) -> u64 {
        t.saturating_duration_since(self.epoch).as_nanos() as u64 + 1
    }
}

impl Watch {
    /// Starts a watchdog for the calling thread.
    pub(super) fn start() -> std::io::Result<Watch> {
        install_handler()?;
        let shared = Arc::new(Shared {
            epoch: Instant::now(),
            wake_at: AtomicU64::new(0),
            looks_at: AtomicU64::new(u64::MAX),
            ended: AtomicBool::new(false),
            tid: crate::sys::thread_id(),
            user_us: AtomicU64::new(0),
            system_us: AtomicU64::new(0),
        });
        let theirs = shared.clone();
        let watchdog = std::thread::Builder::new()
            .name("bakeoff-watch".into())
            .spawn(move || watch(&theirs))?;
        Ok(Watch {
            shared,
            watchdog: Some(watchdog),
        })
    }

    /// The calling thread is about to wait, and wants its wait ended at `at` if it is still
    /// waiting then.
    #[inline]
    pub(super) fn arm(&self, at: Instant) {
        let s = &*self.shared;
        let at = s.ns(at);
        s.wake_at.store(at, SeqCst);
        // Either the watchdog sees this time, or this sees when it looks next (both SeqCst).
        if at < s.looks_at.load(SeqCst) {
            self.wake();
        }
    }

    /// The wait is over.
    #[inline]
    pub(super) fn disarm(&self) {
        self.shared.wake_at.store(0, SeqCst);
    }

    #[cold]
    fn wake(&self) {
        if let Some(w) = &self.watchdog {
            w.thread().unpark();
        }
    }

    /// What reads the watchdog's CPU time, to count it with the client's.
    pub(super) fn meter(&self) -> Meter {
        Meter(self.shared.clone())
    }
}

/// Reads a watchdog's CPU time so far (as of when it last woke: at most a
/// [`super::CUT_CHECK`] old).
pub(super) struct Meter(Arc<Shared>);

impl Meter {
    pub(super) fn cpu(&self) -> crate::sys::CpuTime {
        crate::sys::CpuTime {
            user: Duration::from_micros(self.0.user_us.load(SeqCst)),
            system: Duration::from_micros(self.0.system_us.load(SeqCst)),
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.shared.ended.store(true, SeqCst);
        if let Some(w) = self.watchdog.take() {
            w.thread().unpark();
            let _ = w.join();
        }
    }
}

fn watch(s: &Shared) {
    crate::sys::leave_rseq();
    // SAFETY: getpid has no preconditions.
    let pid = unsafe { libc::getpid() };
    // The armed time last signalled, and when.
    let mut signalled: Option<(u64, u64)> = None;
    let retry = RETRY.as_nanos() as u64;
    let idle = super::CUT_CHECK.as_nanos() as u64;
    while !s.ended.load(SeqCst) {
        let used = crate::sys::thread_cpu_time();
        s.user_us.store(used.user.as_micros() as u64, SeqCst);
        s.system_us.store(used.system.as_micros() as u64, SeqCst);
        let now = s.ns(Instant::now());
        let armed = s.wake_at.load(SeqCst);
        let next = if armed == 0 {
            now + idle
        } else if armed > now {
            armed.min(now + idle)
        } else {
            if !signalled.is_some_and(|(at, when)| at == armed && now < when + retry) {
                // SAFETY: tgkill(2) to a thread of this process that outlives the watchdog
                // (its Watch joins this thread before it is dropped), with a signal whose
                // handler does nothing.
                unsafe {
                    libc::syscall(libc::SYS_tgkill, pid, s.tid, signal());
                }
                signalled = Some((armed, now));
            }
            now + retry
        };
        s.looks_at.store(next, SeqCst);
        if s.wake_at.load(SeqCst) != armed {
            continue;
        }
        std::thread::park_timeout(Duration::from_nanos(next - now));
    }
}

/// The signal that ends a wait: a real-time one nothing else in bakeoff uses.
fn signal() -> libc::c_int {
    libc::SIGRTMIN() + 2
}

/// Installs the handler that does nothing, without `SA_RESTART`, so a read it interrupts
/// ends with `EINTR`; once a process.
fn install_handler() -> std::io::Result<()> {
    static INSTALLED: std::sync::OnceLock<Result<(), i32>> = std::sync::OnceLock::new();
    extern "C" fn nothing(_: libc::c_int) {}
    INSTALLED
        .get_or_init(|| {
            // SAFETY: a sigaction with an empty mask and a handler that touches nothing.
            unsafe {
                let mut sa: libc::sigaction = std::mem::zeroed();
                sa.sa_sigaction = nothing as *const () as usize;
                libc::sigemptyset(&mut sa.sa_mask);
                if libc::sigaction(signal(), &sa, std::ptr::null_mut()) != 0 {
                    return Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(0));
                }
            }
            Ok(())
        })
        .map_err(std::io::Error::from_raw_os_error)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;
    use std::os::unix::net::UnixStream;

    /// Runs `body` on a thread of its own, bounded by a minute (a bound, not a speed).
    fn within_a_minute<T: Send + 'static>(body: impl FnOnce() -> T + Send + 'static) -> T {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(body());
        });
        rx.recv_timeout(Duration::from_secs(60))
            .expect("the read ended within a minute")
    }

    /// A read of `s` that waits (nothing is ever written): its error.
    fn read_nothing(s: &UnixStream) -> std::io::Error {
        let mut buf = [0u8; 16];
        // SAFETY: recv(2) into a live buffer, on a socket `s` owns.
        let n = unsafe { libc::recv(s.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
        assert_eq!(n, -1, "a read of a socket nothing writes to returned");
        std::io::Error::last_os_error()
    }

    #[test]
    fn a_wait_still_waiting_at_its_time_is_ended_then_and_not_before() {
        let (took, e) = within_a_minute(|| {
            let (a, _b) = UnixStream::pair().unwrap();
            let watch = Watch::start().unwrap();
            let start = Instant::now();
            let at = Duration::from_millis(80);
            watch.arm(start + at);
            let e = read_nothing(&a);
            watch.disarm();
            (start.elapsed(), e)
        });
        assert_eq!(e.kind(), std::io::ErrorKind::Interrupted, "{e}");
        assert!(took >= Duration::from_millis(80), "{took:?}");
    }

    #[test]
    fn a_signal_that_comes_before_the_read_is_sent_again() {
        // The time is armed and past before the read begins, as when a signal lands just
        // before the read's system call: the first signal is spent on the sleep, and the read
        // after it would wait for ever without the next.
        let e = within_a_minute(|| {
            let (a, _b) = UnixStream::pair().unwrap();
            let watch = Watch::start().unwrap();
            watch.arm(Instant::now());
            std::thread::sleep(Duration::from_millis(20));
            let e = read_nothing(&a);
            watch.disarm();
            e
        });
        assert_eq!(e.kind(), std::io::ErrorKind::Interrupted, "{e}");
    }

    #[test]
    fn a_read_not_armed_is_left_alone_and_the_watchdog_ends_with_its_watch() {
        let (a, mut b) = UnixStream::pair().unwrap();
        let reader = std::thread::spawn(move || {
            let watch = Watch::start().unwrap();
            // Armed and over before the read: the read is not this watch's to end. (Its time
            // is far enough off that the watchdog sees it disarmed: one that found it still
            // armed and past would end the read, which a client takes in its stride.)
            watch.arm(Instant::now() + Duration::from_millis(50));
            watch.disarm();
            let mut buf = [0u8; 16];
            // SAFETY: recv(2) into a live buffer, on a socket `a` owns.
            let n = unsafe { libc::recv(a.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
            let e = std::io::Error::last_os_error();
            drop(watch);
            (n, e)
        });
        // Long past the time once armed, and a few of the watchdog's looks.
        std::thread::sleep(super::super::CUT_CHECK * 3);
        std::io::Write::write_all(&mut b, b"abc").unwrap();
        let (n, e) = reader.join().unwrap();
        assert_eq!(n, 3, "{e}");
    }
}
