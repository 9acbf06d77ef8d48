//! The load engine: a pacing × a stop condition, driven by N clients (one connection each)
//! spread over worker threads that each run a single-threaded runtime, optionally pinned to
//! CPUs. It knows nothing of protocols beyond the [`Protocol`] trait.

mod blocking;
mod config;
pub mod pacing;
pub mod recorder;
pub mod result;
mod ring;
mod session;
pub mod stall;
mod stored;
mod watch;
mod worker;

use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

pub use config::{LoadConfig, LoadError, MAX_CLIENTS};
pub use pacing::{Dispenser, Pacing, Stop};
use recorder::Recorder;
pub use result::{Latency, LoadResult};
pub use session::{Runs, Session};

use crate::protocol::{CallError, Protocol};
use crate::sys::{self, CpuTime};

/// How long calls still in flight when a duration ends, or when the load is stopped, may
/// take to finish; they are then given up and counted as unfinished (not as timeouts: the
/// server had less than its `--timeout`).
pub const GRACE: Duration = Duration::from_secs(1);

/// How long a client waits after a refused connection before it tries again.
const REFUSED_PAUSE: Duration = Duration::from_millis(10);

/// The caller's answer to a progress report: go on, or stop sending (e.g. the server died).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    Continue,
    Stop,
}

/// What the engine tells its caller while it runs (about five times a second).
#[derive(Debug, Clone, Copy)]
pub struct Progress {
    pub done: u64,
    pub elapsed: Duration,
    pub stop: Stop,
    pub warming_up: bool,
    /// Set on the one report made as the measured window opens, and on the one made as it
    /// closes, so a caller can read what else it measures (the server's CPU) over exactly
    /// the window whose requests are counted.
    pub edge: Option<Edge>,
}

/// The edges of the measured window: after the warm-up, and at the duration's end (or when
/// the last call of a count-stopped run returned).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Edge {
    Opens,
    Closes,
}

/// A worker's report after connecting, before any load is sent.
pub(super) struct Ready {
    /// The worker thread's id, so the session can read its CPU at the window's edges.
    pub(super) tid: i32,
    pub(super) connected: usize,
    pub(super) first_error: Option<CallError>,
    /// The worker could not be set up (pinning, runtime): the run must not start.
    pub(super) setup_error: Option<String>,
}

pub(super) struct WorkerOut {
    pub(super) recorder: Recorder,
    pub(super) cpu: CpuTime,
    /// Time runnable but waiting for its CPU, when the kernel reports it.
    pub(super) wait: Option<Duration>,
    /// Time the hypervisor took from its CPU, when it is pinned to one.
    pub(super) stolen: Option<Duration>,
    /// From the start signal to the last call, warm-up included (as `cpu` and `wait` are).
    pub(super) wall: Duration,
    /// `io_uring`, `blocking` or `epoll` (`result::Generator::io`).
    pub(super) io: &'static str,
}

/// What the load threads used, summed over them.
#[derive(Default)]
pub(super) struct Usage {
    pub(super) cpu: CpuTime,
    pub(super) wait: Option<Duration>,
    pub(super) stolen: Option<Duration>,
    pub(super) wall: Duration,
    /// The ways the load threads waited (`WorkerOut::io`), each once.
    pub(super) io: Vec<&'static str>,
}

impl Usage {
    fn io_named(&self) -> Option<String> {
        name_ways(self.io.iter().copied())
    }
}

/// Ways load threads waited, as results name them (`result::Generator::io`): each once, one
/// or several in the engine's order of preference ("io_uring and blocking"); a name this
/// build does not know (from a later one's results) after those, as it came.
pub(super) fn name_ways<'w>(ways: impl IntoIterator<Item = &'w str>) -> Option<String> {
    const ORDER: [&str; 3] = ["io_uring", "blocking", "epoll"];
    let ways: Vec<&str> = ways.into_iter().collect();
    let mut named: Vec<&str> = ORDER.into_iter().filter(|w| ways.contains(w)).collect();
    for w in ways {
        if !named.contains(&w) {
            named.push(w);
        }
    }
    (!named.is_empty()).then(|| named.join(" and "))
}

/// What one run of a driver of fixed calls (the ring, the blocking client) is told, as
/// `worker::client` is.
pub(super) struct Run<'r> {
    pub(super) dispenser: &'r Dispenser,
    pub(super) rec: &'r mut Recorder,
    pub(super) counter: &'r std::sync::atomic::AtomicU64,
    pub(super) timeout: Duration,
}

/// Runs `drive` (a driver of fixed calls) once, a closed loop of `calls` calls each limited
/// to `timeout`: what was recorded, and how many calls were counted.
#[cfg(test)]
fn run_closed(
    calls: u64,
    timeout: Duration,
    drive: impl FnOnce(&mut Run<'_>) -> Result<(), String>,
) -> (Recorder, u64) {
    let dispenser = Dispenser::new(pacing::Pacing::Closed, Stop::Count(calls), Duration::ZERO);
    dispenser.start(Instant::now());
    let mut rec = Recorder::new(dispenser.measure_start(), false);
    let counter = std::sync::atomic::AtomicU64::new(0);
    drive(&mut Run {
        dispenser: &dispenser,
        rec: &mut rec,
        counter: &counter,
        timeout,
    })
    .unwrap();
    (rec, counter.into_inner())
}

/// Runs one load and returns its measurements. Fails before measuring when not one
/// connection can be opened; failures after that are counted, not fatal.
pub fn run<P: Protocol>(
    proto: Arc<P>,
    cfg: &LoadConfig,
    progress: &mut dyn FnMut(Progress) -> Flow,
) -> Result<LoadResult, LoadError> {
    Session::open(proto, cfg)?.run(cfg.stop, cfg.warmup, progress)
}

/// The test-only knob `BAKEOFF_LOAD_BURN_NS`: the engine does this many nanoseconds of its own
/// CPU work after each measured response, a slowdown of known size that `benches/steady.py`
/// must tell from none. A fixed number of loop turns, measured once against the thread's CPU
/// clock (some 2 ms at the first response): spinning on the wall clock instead burned less than
/// the knob said whenever the host took the CPU away mid-spin. Unset (always, outside that
/// benchmark) it costs one load of a static per response; at most 1 ms of work.
fn burn() {
    static TURNS: OnceLock<u64> = OnceLock::new();
    let turns = *TURNS.get_or_init(|| {
        let ns = std::env::var("BAKEOFF_LOAD_BURN_NS")
            .ok()
            .and_then(|v| v.parse().ok())
            .map_or(0, |ns: u64| ns.min(1_000_000));
        if ns == 0 {
            return 0;
        }
        // Turns a nanosecond, from at least 2 ms of them on this thread's CPU clock.
        let start = sys::thread_cpu_time();
        let mut turns = 0u64;
        loop {
            spin(1 << 14);
            turns += 1 << 14;
            let spent = sys::thread_cpu_time().since(start).total();
            if spent >= Duration::from_millis(2) {
                return (u128::from(ns) * u128::from(turns) / spent.as_nanos()) as u64;
            }
        }
    });
    if turns > 0 {
        spin(turns);
    }
}

/// `turns` turns of a loop the compiler cannot remove or shorten.
fn spin(turns: u64) {
    let mut x = 0u64;
    for i in 0..turns {
        x = std::hint::black_box(x.wrapping_add(i));
    }
}

/// How often the engine's own drivers of fixed calls (the ring, blocking calls) look whether
/// the load was stopped (Ctrl-C, SIGTERM, a contender gone) while calls are in flight, and
/// every way looks whether the command was while the connections are opened before a run: a
/// wait is never longer, so a stop is seen within this. (During a run the runtime waits for
/// the dispenser's cancel instead, `worker::cut_when_stopped`.)
const CUT_CHECK: Duration = Duration::from_millis(100);

/// What a connection still being opened before a run ends with when the command is stopped
/// (the session then says `LoadError::Interrupted` if none was made).
fn connecting_stopped() -> CallError {
    CallError::Io("interrupted while connecting".into())
}

/// A call `sent` with `limit`, in flight when the load was stopped (seen at `now`): its new
/// limit when the grace from now ends it sooner. Calls cut this way that do not finish in
/// the grace are `unfinished`, as those at a duration's end are: a stop waits about a
/// second for what is in flight, not each call's timeout.
fn cut(sent: Instant, limit: Duration, now: Instant) -> Option<Duration> {
    let graced = (now + GRACE).saturating_duration_since(sent);
    (graced < limit).then_some(graced)
}

/// What a call's limit is when it is sent at `sent`: past a duration's end, a call in flight
/// has at most the grace left — `Some(that)` when it is shorter than `timeout`.
fn grace_left(dispenser: &Dispenser, sent: Instant, timeout: Duration) -> Option<Duration> {
    dispenser
        .deadline()
        .map(|d| (d + GRACE).saturating_duration_since(sent))
        .filter(|g| *g < timeout)
}

/// How one call ended, for [`tally`].
struct Ended {
    warmup: bool,
    /// Its limit was what was left of a duration's grace.
    graced: bool,
    /// It opened its connection.
    reconnect: bool,
    /// When its latency starts (the due time of a late open-loop call), when it was sent,
    /// when it ended.
    from: Instant,
    sent: Instant,
    done: Instant,
    /// Items it received before it was cut short (a stream's messages).
    partial: u64,
}

/// Records a call that ended with `result`, the same for every way of driving calls. Returns
/// false when it is not a request: given up at the end of a duration's grace (`unfinished`).
fn tally(
    rec: &mut Recorder,
    counter: &std::sync::atomic::AtomicU64,
    e: Ended,
    result: &Result<crate::protocol::Reply, CallError>,
) -> bool {
    let timed_out = matches!(result, Err(CallError::Timeout(_)));
    if timed_out && !e.warmup {
        rec.cut_short(e.done, e.partial);
        if e.graced {
            rec.unfinished += 1;
            return false;
        }
    }
    if e.warmup {
        rec.warmup += 1;
        return true;
    }
    if e.reconnect {
        rec.reconnects += 1;
    }
    rec.record(e.from, e.sent, e.done, result);
    counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    burn();
    true
}

pub(super) fn summarize<P: Protocol>(
    proto: &P,
    cfg: &LoadConfig,
    rec: Recorder,
    usage: Usage,
    measure_start: Instant,
    interrupted: bool,
) -> LoadResult {
    let mut wall = rec.last_done.map_or(Duration::ZERO, |d| {
        d.saturating_duration_since(measure_start)
    });
    // A duration-stopped open loop measured its whole window (the session waited it out),
    // however early its last request fell due; an interrupted one, what it got to.
    if let (Pacing::Open { .. }, Stop::Duration(d), false) = (cfg.pacing, cfg.stop, interrupted) {
        wall = wall.max(d);
    }
    let secs = wall.as_secs_f64();
    let per_s = |n: u64| if secs > 0.0 { n as f64 / secs } else { 0.0 };
    let cpu = usage.cpu;
    let cpu_s = cpu.total().as_secs_f64();
    // CPU and wait span warm-up too, so they are set against the threads' whole time and
    // every call they made — less what the hypervisor took from their CPUs: a thread
    // cannot be busy while its virtual CPU is not running.
    let busy_s = cpu_s + usage.wait.map_or(0.0, |w| w.as_secs_f64());
    let stolen_s = usage.stolen.map_or(0.0, |s| s.as_secs_f64());
    let worker_s = usage.wall.as_secs_f64() - stolen_s;
    let calls = rec.requests + rec.warmup;
    LoadResult {
        schema_version: result::SCHEMA_VERSION,
        target: proto.describe(),
        pacing: match cfg.pacing {
            Pacing::Closed => "closed".into(),
            Pacing::Open { .. } => "open".into(),
        },
        rate: match cfg.pacing {
            Pacing::Open { rate } => Some(rate),
            Pacing::Closed => None,
        },
        clients: cfg.clients,
        stop_requests: match cfg.stop {
            Stop::Count(n) => Some(n),
            Stop::Duration(_) => None,
        },
        stop_duration_s: match cfg.stop {
            Stop::Duration(d) => Some(d.as_secs_f64()),
            Stop::Count(_) => None,
        },
        warmup_s: cfg.warmup.as_secs_f64(),
        warmup_requests: rec.warmup,
        interrupted,
        duration_s: secs,
        requests: rec.requests,
        successes: rec.successes,
        failures: rec.requests - rec.successes,
        requests_per_s: per_s(rec.requests),
        items: rec.items,
        items_per_s: per_s(rec.items),
        bytes: rec.bytes,
        bytes_per_s: per_s(rec.bytes),
        latency_us: result::Latency::from_histogram(&rec.latency),
        service_time_us: rec.service.as_ref().map(result::Latency::from_histogram),
        outcomes: rec.outcomes(),
        dropped: 0,
        unfinished: rec.unfinished,
        reconnects: rec.reconnects,
        tls: proto.tls(),
        timeline: rec.timeline(),
        generator: result::Generator {
            threads: cfg.threads,
            cpus: cfg.cpus.clone(),
            cpu_user_s: cpu.user.as_secs_f64(),
            cpu_system_s: cpu.system.as_secs_f64(),
            cpu_wait_s: usage.wait.map(|w| w.as_secs_f64()),
            cpu_stolen_s: usage.stolen.map(|s| s.as_secs_f64()),
            cpu_us_per_request: if calls > 0 {
                cpu_s * 1e6 / calls as f64
            } else {
                0.0
            },
            utilization: if worker_s > 0.0 {
                (busy_s / worker_s).min(1.0)
            } else {
                0.0
            },
            window_cpu_s: None,
            window_cpu_wait_s: None,
            window_cpu_us_per_request: None,
            io: usage.io_named(),
        },
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

    use super::*;
    use crate::protocol::http1::{Http1, Http1Request};
    use crate::protocol::target::Endpoint;
    use crate::protocol::template::Template;

    #[test]
    fn the_ways_threads_waited_are_named_in_one_order_whatever_order_they_ended_in() {
        let named = |io: &[&'static str]| {
            Usage {
                io: io.to_vec(),
                ..Usage::default()
            }
            .io_named()
        };
        assert_eq!(named(&[]), None);
        assert_eq!(named(&["blocking"]).as_deref(), Some("blocking"));
        // What results before the blocking way said for a mix stays what they say.
        assert_eq!(
            named(&["epoll", "io_uring"]).as_deref(),
            Some("io_uring and epoll")
        );
        assert_eq!(
            named(&["blocking", "io_uring"]).as_deref(),
            Some("io_uring and blocking")
        );
    }

    /// A protocol whose calls panic (a bug in a client).
    struct Panics;

    impl Protocol for Panics {
        type Conn = ();
        async fn connect(&self) -> Result<(), CallError> {
            Ok(())
        }
        async fn call(&self, _: &mut (), seq: u64) -> Result<crate::protocol::Reply, CallError> {
            panic!("client bug at call {seq}")
        }
        fn describe(&self) -> String {
            "panics".into()
        }
    }

    #[test]
    fn a_client_that_panics_fails_the_run_loudly() {
        let cfg = LoadConfig::new(
            Pacing::Closed,
            Stop::Count(10),
            2,
            1,
            Duration::ZERO,
            Duration::from_secs(5),
        )
        .unwrap();
        let e = run(Arc::new(Panics), &cfg, &mut |_| Flow::Continue).unwrap_err();
        assert!(
            e.to_string()
                .contains("a load client panicked: client bug at call"),
            "{e}"
        );
    }

    /// A protocol that answers every call itself after a millisecond: the engine alone.
    struct Instant1ms;

    impl Protocol for Instant1ms {
        type Conn = ();
        async fn connect(&self) -> Result<(), CallError> {
            Ok(())
        }
        async fn call(&self, _: &mut (), _: u64) -> Result<crate::protocol::Reply, CallError> {
            tokio::time::sleep(Duration::from_millis(1)).await;
            Ok(crate::protocol::Reply {
                class: crate::protocol::Class::Http(200),
                items: 0,
                bytes: 0,
                body: None,
                detail: None,
                trailers: Vec::new(),
            })
        }
        fn describe(&self) -> String {
            "1 ms".into()
        }
    }

    /// Counts the connections it opens.
    #[derive(Default)]
    struct Counting(AtomicU64);

    impl Protocol for Counting {
        type Conn = ();
        async fn connect(&self) -> Result<(), CallError> {
            self.0.fetch_add(1, Relaxed);
            Ok(())
        }
        async fn call(&self, c: &mut (), seq: u64) -> Result<crate::protocol::Reply, CallError> {
            Instant1ms.call(c, seq).await
        }
        fn describe(&self) -> String {
            "counting".into()
        }
    }

    /// The command's `Cancel` reaches the engine through its config: set while calls are
    /// under way, the load stops sending and reports what it measured as interrupted; a
    /// config made without one is never cancelled by another command's.
    #[test]
    fn a_cancel_handed_down_stops_the_load() {
        let cancel = crate::cancel::Cancel::new();
        let cfg = LoadConfig::new(
            Pacing::Closed,
            Stop::Count(1_000_000),
            2,
            1,
            Duration::ZERO,
            Duration::from_secs(5),
        )
        .unwrap()
        .cancelled_by(cancel.clone());
        let r = run(Arc::new(Instant1ms), &cfg, &mut |p| {
            if p.done >= 20 {
                cancel.cancel();
            }
            Flow::Continue
        })
        .unwrap();
        assert!(r.interrupted, "{r:?}");
        assert!(r.requests >= 20 && r.requests < 1_000_000, "{}", r.requests);
        let other = LoadConfig::new(
            Pacing::Closed,
            Stop::Count(30),
            2,
            1,
            Duration::ZERO,
            Duration::from_secs(5),
        )
        .unwrap();
        let r = run(Arc::new(Instant1ms), &other, &mut |_| Flow::Continue).unwrap();
        assert!(!r.interrupted && r.requests == 30, "{r:?}");
    }

    #[test]
    fn a_session_runs_again_on_the_connections_it_opened() {
        let proto = Arc::new(Counting::default());
        let cfg = LoadConfig::new(
            Pacing::Closed,
            Stop::Count(40),
            4,
            2,
            Duration::ZERO,
            Duration::from_secs(5),
        )
        .unwrap();
        let mut s = Session::open(proto.clone(), &cfg).unwrap();
        let a = s
            .run(Stop::Count(40), Duration::ZERO, &mut |_| Flow::Continue)
            .unwrap();
        let b = s
            .run(Stop::Count(20), Duration::ZERO, &mut |_| Flow::Continue)
            .unwrap();
        assert_eq!((a.requests, b.requests), (40, 20));
        assert_eq!(b.stop_requests, Some(20));
        assert_eq!(proto.0.load(Relaxed), 4, "one connection per client, kept");
        drop(s);
    }

    #[test]
    fn the_measured_window_is_announced_once_at_each_edge() {
        for stop in [Stop::Duration(Duration::from_millis(300)), Stop::Count(200)] {
            let warmup = Duration::from_millis(200);
            let cfg = LoadConfig::new(Pacing::Closed, stop, 2, 1, warmup, Duration::from_secs(5))
                .unwrap();
            let t0 = Instant::now();
            let mut edges = Vec::new();
            let r = run(Arc::new(Instant1ms), &cfg, &mut |p| {
                if let Some(e) = p.edge {
                    edges.push((e, t0.elapsed(), p.warming_up));
                }
                Flow::Continue
            })
            .unwrap();
            let kinds: Vec<Edge> = edges.iter().map(|e| e.0).collect();
            assert_eq!(kinds, [Edge::Opens, Edge::Closes], "{stop:?}");
            // Opens no earlier than the warm-up's end; Closes no earlier than the window's.
            assert!(edges[0].1 >= warmup && !edges[0].2, "{edges:?}");
            if let Stop::Duration(d) = stop {
                assert!(edges[1].1 >= warmup + d, "{edges:?}");
            }
            assert!(r.successes > 0);
            // The load threads' own CPU over the window, read as the server's is.
            let g = &r.generator;
            assert!(g.window_cpu_s.is_some_and(|c| c > 0.0), "{g:?}");
            assert!(
                g.window_cpu_us_per_request.is_some_and(|c| c > 0.0),
                "{g:?}"
            );
        }
    }

    #[test]
    fn a_worker_that_cannot_be_set_up_stops_the_run_before_any_load() {
        // A listener that never answers: a run that started would last the full 5 s.
        let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let endpoint = Endpoint::parse(&format!("http://{}/", silent.local_addr().unwrap()));
        let request = Http1Request {
            method: "GET".into(),
            path: Template::parse("/").unwrap(),
            headers: vec![],
            body: None,
        };
        let proto = Arc::new(Http1::new(endpoint.unwrap(), request, 0, false));
        let ok_cpu = sys::allowed_cpus()[0];
        // CPU 1000 exists in no affinity mask here: the second worker fails to pin.
        let cfg = LoadConfig::new(
            Pacing::Closed,
            Stop::Duration(Duration::from_secs(5)),
            2,
            2,
            Duration::ZERO,
            Duration::from_secs(10),
        )
        .unwrap()
        .pin_to(vec![ok_cpu, 1000]);
        let started = Instant::now();
        let err = run(proto, &cfg, &mut |_| Flow::Continue).unwrap_err();
        assert!(
            matches!(&err, LoadError::Worker(m) if m.contains("CPU 1000")),
            "{err}"
        );
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "the run started anyway"
        );
    }
}
