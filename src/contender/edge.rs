//! The delay what-if (docs/what-if.md, "What if the node answered faster?"): a small TCP
//! proxy on one edge between members. The members that connect to the edge's port are given
//! the proxy's port instead; the proxy forwards every connection to the real port, holding
//! each chunk on its way to the listening member for a fixed time, and passing the answers
//! back at once — so each round trip over the edge gains exactly the hold.
//!
//! Timing: a hold sleeps until shortly before it is due, then spins to the due instant (the
//! margin is twice the sleep overshoot measured when the proxy starts, so a 1 ms step is
//! held to within microseconds, not the timer's granularity). What it measured is kept:
//! how late each chunk went out, how long the listener took to answer what was forwarded,
//! and the CPU the proxy's threads used (it runs off the contenders' CPUs).

use std::io::{Read as _, Write as _};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

pub use crate::results::EdgeStats;

/// The most links (proxied connections) open at once: each has three threads and holds up
/// to [`HELD`] chunks. Past it a connection is closed at once and counted (`refused`): a
/// member that opens thousands cannot make the proxy start thousands of threads.
pub const MOST_LINKS: usize = 128;

/// The most chunks (each at most 64 KiB) one link holds on their way to a listener that does
/// not read: 1 MiB a link, [`MOST_LINKS`] MiB in all.
const HELD: usize = 16;

#[derive(Default)]
struct Counters {
    connections: AtomicU64,
    chunks: AtomicU64,
    bytes: AtomicU64,
    late_sum_ns: AtomicU64,
    late_max_ns: AtomicU64,
    answer_sum_ns: AtomicU64,
    answers: AtomicU64,
    upstream_failures: AtomicU64,
    refused: AtomicU64,
    /// Thread ids of the proxy's live threads, and the CPU time of those that ended.
    tids: Mutex<Vec<i32>>,
    ended_cpu_ns: AtomicU64,
}

/// A running proxy; dropped, it stops and closes every connection it holds.
pub struct Edge {
    pub listen_port: u16,
    port: String,
    hold: Duration,
    started: Instant,
    overshoot: Duration,
    stop: Arc<AtomicBool>,
    counters: Arc<Counters>,
    open: Open,
    acceptor: Option<std::thread::JoinHandle<()>>,
}

impl Edge {
    /// Listens on a free loopback port and forwards each connection to `127.0.0.1:upstream`,
    /// holding what goes there for `hold`. Its threads run on `cpus` when given.
    pub fn start(
        port: &str,
        upstream: u16,
        hold: Duration,
        cpus: Option<Vec<usize>>,
    ) -> std::io::Result<Edge> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let listen_port = listener.local_addr()?.port();
        listener.set_nonblocking(true)?;
        let overshoot = measure_overshoot();
        let stop = Arc::new(AtomicBool::new(false));
        let counters = Arc::new(Counters::default());
        let open: Open = Arc::default();
        let margin = (overshoot * 2).clamp(Duration::from_micros(50), Duration::from_millis(1));
        let acceptor = {
            let (stop, counters, open) = (stop.clone(), counters.clone(), open.clone());
            std::thread::Builder::new()
                .name("bakeoff-edge".into())
                .spawn(move || {
                    let _t = Tracked::new(&counters, cpus.as_deref());
                    while !stop.load(Relaxed) {
                        match listener.accept() {
                            Ok((client, _))
                                if open.lock().expect("not poisoned").len() >= MOST_LINKS =>
                            {
                                counters.refused.fetch_add(1, Relaxed);
                                let _ = client.shutdown(Shutdown::Both);
                            }
                            Ok((client, _)) => {
                                counters.connections.fetch_add(1, Relaxed);
                                let link = Link {
                                    upstream,
                                    hold,
                                    margin,
                                    counters: counters.clone(),
                                    open: open.clone(),
                                    cpus: cpus.clone(),
                                };
                                if link.run(client).is_err() {
                                    counters.upstream_failures.fetch_add(1, Relaxed);
                                }
                            }
                            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                                std::thread::sleep(Duration::from_millis(2));
                            }
                            Err(_) => std::thread::sleep(Duration::from_millis(10)),
                        }
                    }
                })?
        };
        Ok(Edge {
            listen_port,
            port: port.to_string(),
            hold,
            started: Instant::now(),
            overshoot,
            stop,
            counters,
            open,
            acceptor: Some(acceptor),
        })
    }

    /// What it saw so far.
    pub fn stats(&self) -> EdgeStats {
        let c = &self.counters;
        let chunks = c.chunks.load(Relaxed);
        let answers = c.answers.load(Relaxed);
        let live: u64 = c
            .tids
            .lock()
            .expect("not poisoned")
            .iter()
            .filter_map(|&t| crate::sys::thread_schedstat(t))
            .map(|(cpu, _)| cpu.as_nanos() as u64)
            .sum();
        let mean = |sum: u64, n: u64| {
            if n == 0 {
                0.0
            } else {
                sum as f64 / n as f64 / 1e3
            }
        };
        EdgeStats {
            port: self.port.clone(),
            hold_us: self.hold.as_micros() as u64,
            connections: c.connections.load(Relaxed),
            chunks,
            bytes: c.bytes.load(Relaxed),
            late_mean_us: mean(c.late_sum_ns.load(Relaxed), chunks),
            late_max_us: c.late_max_ns.load(Relaxed) / 1000,
            answer_mean_us: mean(c.answer_sum_ns.load(Relaxed), answers),
            answers,
            cpu_s: (live + c.ended_cpu_ns.load(Relaxed)) as f64 / 1e9,
            wall_s: self.started.elapsed().as_secs_f64(),
            timer_overshoot_us: self.overshoot.as_micros() as u64,
            upstream_failures: c.upstream_failures.load(Relaxed),
            refused: c.refused.load(Relaxed),
        }
    }
}

impl Drop for Edge {
    fn drop(&mut self) {
        self.stop.store(true, Relaxed);
        for (_, (a, b)) in std::mem::take(&mut *self.open.lock().expect("not poisoned")) {
            let _ = a.shutdown(Shutdown::Both);
            let _ = b.shutdown(Shutdown::Both);
        }
        if let Some(a) = self.acceptor.take() {
            let _ = a.join();
        }
    }
}

/// A proxy thread: pinned, and its CPU time counted while it lives and after it ends.
struct Tracked<'a> {
    counters: &'a Counters,
    tid: i32,
}

impl<'a> Tracked<'a> {
    fn new(counters: &'a Counters, cpus: Option<&[usize]>) -> Tracked<'a> {
        if let Some(cpus) = cpus {
            let _ = crate::sys::pin_current_thread(cpus);
        }
        let tid = crate::sys::thread_id();
        counters.tids.lock().expect("not poisoned").push(tid);
        Tracked { counters, tid }
    }
}

impl Drop for Tracked<'_> {
    fn drop(&mut self) {
        if let Some((cpu, _)) = crate::sys::thread_schedstat(self.tid) {
            self.counters
                .ended_cpu_ns
                .fetch_add(cpu.as_nanos() as u64, Relaxed);
        }
        self.counters
            .tids
            .lock()
            .expect("not poisoned")
            .retain(|&t| t != self.tid);
    }
}

/// One client connection and its connection to the listener.
struct Link {
    upstream: u16,
    hold: Duration,
    margin: Duration,
    counters: Arc<Counters>,
    open: Open,
    cpus: Option<Vec<usize>>,
}

/// The links open now, by number: a copy of each end, to close them when the proxy stops
/// (each link takes its own out when it ends, so a member that opens a connection per call
/// does not pile up descriptors).
type Open = Arc<Mutex<std::collections::BTreeMap<u64, (TcpStream, TcpStream)>>>;

impl Link {
    /// Connects upstream and starts the three threads of the link: reading what the client
    /// sends (stamped with its due time), sending it upstream when due, and copying the
    /// answers back at once.
    fn run(self, client: TcpStream) -> std::io::Result<()> {
        client.set_nonblocking(false)?;
        let up = match TcpStream::connect(("127.0.0.1", self.upstream)) {
            Ok(u) => u,
            Err(e) => {
                let _ = client.shutdown(Shutdown::Both);
                return Err(e);
            }
        };
        for s in [&client, &up] {
            s.set_nodelay(true)?;
        }
        let id = self.counters.connections.load(Relaxed);
        self.open
            .lock()
            .expect("not poisoned")
            .insert(id, (client.try_clone()?, up.try_clone()?));
        // Bounded: a listener that stops reading stops the reading from the client after
        // at most HELD chunks (1 MiB) held, instead of the proxy buffering without end.
        let (tx, rx) = mpsc::sync_channel::<(Instant, Vec<u8>)>(HELD);
        // When the last chunk went upstream (ns since `epoch`), 0 once an answer began.
        let epoch = Instant::now();
        let forwarded = Arc::new(AtomicU64::new(0));
        let spawn = |name: &str, f: Box<dyn FnOnce(&Counters) + Send>| {
            let (counters, cpus) = (self.counters.clone(), self.cpus.clone());
            std::thread::Builder::new()
                .name(name.into())
                .spawn(move || {
                    let _t = Tracked::new(&counters, cpus.as_deref());
                    f(&counters);
                })
                .map(drop)
        };
        let hold = self.hold;
        let mut from_client = client.try_clone()?;
        spawn(
            "bakeoff-edge-in",
            Box::new(move |_| {
                let mut buf = vec![0u8; 64 * 1024];
                while let Ok(n) = from_client.read(&mut buf) {
                    if n == 0 || tx.send((Instant::now() + hold, buf[..n].to_vec())).is_err() {
                        break;
                    }
                }
            }),
        )?;
        let (mut to_up, margin, fwd) = (up.try_clone()?, self.margin, forwarded.clone());
        spawn(
            "bakeoff-edge-hold",
            Box::new(move |c| {
                for (due, data) in rx {
                    wait_until(due, margin);
                    let now = Instant::now();
                    let late = now.saturating_duration_since(due).as_nanos() as u64;
                    c.late_sum_ns.fetch_add(late, Relaxed);
                    c.late_max_ns.fetch_max(late, Relaxed);
                    // Stamped before the write: the answer may be back before it returns.
                    let at = epoch.elapsed().as_nanos() as u64;
                    fwd.store(at.max(1), Relaxed);
                    c.chunks.fetch_add(1, Relaxed);
                    c.bytes.fetch_add(data.len() as u64, Relaxed);
                    if to_up.write_all(&data).is_err() {
                        break;
                    }
                }
                let _ = to_up.shutdown(Shutdown::Write);
            }),
        )?;
        let (mut from_up, mut to_client, open) = (up, client, self.open.clone());
        spawn(
            "bakeoff-edge-out",
            Box::new(move |c| {
                let mut buf = vec![0u8; 64 * 1024];
                while let Ok(n) = from_up.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    let sent = forwarded.swap(0, Relaxed);
                    if sent != 0 {
                        let now = epoch.elapsed().as_nanos() as u64;
                        c.answer_sum_ns.fetch_add(now.saturating_sub(sent), Relaxed);
                        c.answers.fetch_add(1, Relaxed);
                    }
                    if to_client.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
                let _ = to_client.shutdown(Shutdown::Write);
                open.lock().expect("not poisoned").remove(&id);
            }),
        )?;
        Ok(())
    }
}

/// Sleeps until `margin` before `due`, then spins to it.
fn wait_until(due: Instant, margin: Duration) {
    let now = Instant::now();
    if due <= now {
        return;
    }
    if due - now > margin {
        std::thread::sleep(due - now - margin);
    }
    while Instant::now() < due {
        std::hint::spin_loop();
    }
}

/// The median of how far past its time a 100 µs sleep ends here.
fn measure_overshoot() -> Duration {
    let mut over: Vec<Duration> = (0..9)
        .map(|_| {
            let t = Instant::now();
            std::thread::sleep(Duration::from_micros(100));
            t.elapsed().saturating_sub(Duration::from_micros(100))
        })
        .collect();
    over.sort();
    over[over.len() / 2]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A listener that answers each line with the same line, at once.
    fn echo() -> u16 {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        std::thread::spawn(move || {
            for s in l.incoming().flatten() {
                std::thread::spawn(move || {
                    let mut s = s;
                    let mut buf = [0u8; 4096];
                    while let Ok(n) = s.read(&mut buf) {
                        if n == 0 || s.write_all(&buf[..n]).is_err() {
                            break;
                        }
                    }
                });
            }
        });
        port
    }

    #[test]
    fn the_proxy_holds_at_most_its_links_and_closes_the_rest() {
        // A listener that takes connections and never reads: every link stays open.
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let upstream = l.local_addr().unwrap().port();
        let kept = Arc::new(Mutex::new(Vec::new()));
        let k = kept.clone();
        std::thread::spawn(move || {
            for s in l.incoming().flatten() {
                k.lock().unwrap().push(s);
            }
        });
        let edge = Edge::start("p", upstream, Duration::from_micros(100), None).unwrap();
        let extra = 12;
        let clients: Vec<TcpStream> = (0..MOST_LINKS + extra)
            .map(|_| TcpStream::connect(("127.0.0.1", edge.listen_port)).unwrap())
            .collect();
        let until = Instant::now() + Duration::from_secs(30);
        while edge.stats().refused < extra as u64 && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(10));
        }
        let st = edge.stats();
        assert_eq!(
            (st.connections, st.refused),
            (MOST_LINKS as u64, extra as u64),
            "{st:?}"
        );
        // A refused client is told at once: its connection is closed.
        let mut last = clients.last().unwrap().try_clone().unwrap();
        last.set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        assert!(matches!(last.read(&mut [0u8; 8]), Ok(0) | Err(_)));
        drop(edge);
    }

    fn round_trip(port: u16, n: usize) -> Duration {
        let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_nodelay(true).unwrap();
        let mut buf = [0u8; 16];
        let t = Instant::now();
        for _ in 0..n {
            s.write_all(b"ping\n").unwrap();
            let mut got = 0;
            while got < 5 {
                got += s.read(&mut buf[got..]).unwrap();
            }
        }
        t.elapsed()
    }

    #[test]
    fn each_round_trip_gains_the_hold_and_the_proxy_says_what_it_did() {
        let up = echo();
        let edge = Edge::start("back", up, Duration::from_millis(2), None).unwrap();
        let took = round_trip(edge.listen_port, 10);
        // Ten round trips, each held 2 ms on the way there (never less; a loaded machine may
        // add to it, so only the floor is asserted).
        assert!(took >= Duration::from_millis(20), "{took:?}");
        let s = edge.stats();
        assert_eq!((s.connections, s.chunks, s.bytes), (1, 10, 50), "{s:?}");
        assert_eq!(s.answers, 10, "{s:?}");
        assert_eq!((s.port.as_str(), s.hold_us), ("back", 2000));
        assert!(s.cpu_s > 0.0, "{s:?}");
        drop(edge);
        // A hold of zero forwards at once; a connection per call leaves nothing open behind
        // it; a listener that is gone is counted.
        let edge = Edge::start("back", up, Duration::ZERO, None).unwrap();
        round_trip(edge.listen_port, 3);
        assert_eq!(edge.stats().chunks, 3);
        for _ in 0..20 {
            round_trip(edge.listen_port, 1);
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        while !edge.open.lock().unwrap().is_empty() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(edge.open.lock().unwrap().is_empty());
        assert_eq!(edge.stats().connections, 21);
        let gone = TcpListener::bind("127.0.0.1:0").unwrap();
        let dead = gone.local_addr().unwrap().port();
        drop(gone);
        let edge = Edge::start("back", dead, Duration::ZERO, None).unwrap();
        let mut s = TcpStream::connect(("127.0.0.1", edge.listen_port)).unwrap();
        let _ = s.read(&mut [0u8; 4]); // closed by the proxy
        let deadline = Instant::now() + Duration::from_secs(5);
        while edge.stats().upstream_failures == 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(edge.stats().upstream_failures, 1);
    }

    #[test]
    fn a_hold_ends_at_its_time_not_the_timers() {
        let margin = (measure_overshoot() * 2).max(Duration::from_micros(50));
        for _ in 0..20 {
            let due = Instant::now() + Duration::from_micros(700);
            wait_until(due, margin);
            assert!(Instant::now() >= due);
        }
    }
}
