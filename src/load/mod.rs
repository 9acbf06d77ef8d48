//! The load engine: a pacing × a stop condition, driven by N clients (one connection each)
//! spread over worker threads that each run a single-threaded runtime, optionally pinned to
//! CPUs. It knows nothing of protocols beyond the [`Protocol`] trait.

pub mod pacing;
pub mod recorder;
pub mod result;

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

pub use pacing::{Dispenser, Pacing, Stop, INTERRUPTED};
use recorder::Recorder;
pub use result::LoadResult;

use crate::protocol::{CallError, Protocol, Reply};
use crate::sys::{self, CpuTime};

/// A checked load configuration; build it with [`LoadConfig::new`].
#[derive(Debug, Clone)]
pub struct LoadConfig {
    pacing: Pacing,
    stop: Stop,
    clients: usize,
    threads: usize,
    warmup: Duration,
    timeout: Duration,
    cpus: Vec<usize>,
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum LoadError {
    #[error("{0}")]
    Config(String),
    #[error("cannot reach the target: {0}")]
    Unreachable(String),
    #[error("a load worker failed: {0}")]
    Worker(String),
}

impl LoadConfig {
    /// Checks the combination once: at least one client, a positive finite rate, a non-zero
    /// bound, a timeout. `threads` 0 means one per allowed CPU (at most one per client).
    pub fn new(
        pacing: Pacing,
        stop: Stop,
        clients: usize,
        threads: usize,
        warmup: Duration,
        timeout: Duration,
    ) -> Result<LoadConfig, LoadError> {
        let bad = |m: &str| Err(LoadError::Config(m.to_string()));
        if clients == 0 {
            return bad("-c/--clients must be at least 1");
        }
        if let Pacing::Open { rate } = pacing {
            if !(rate.is_finite() && rate > 0.0) {
                return bad("-q/--rate must be a positive number of requests per second");
            }
        }
        match stop {
            Stop::Count(0) => return bad("-n/--requests must be at least 1"),
            Stop::Duration(d) if d.is_zero() => return bad("-z/--duration must be longer than 0"),
            _ => {}
        }
        if timeout.is_zero() {
            return bad("--timeout must be longer than 0");
        }
        let threads = if threads == 0 {
            sys::allowed_cpus().len().max(1)
        } else {
            threads
        };
        Ok(LoadConfig {
            pacing,
            stop,
            clients,
            threads: threads.min(clients),
            warmup,
            timeout,
            cpus: Vec::new(),
        })
    }

    /// Pins worker thread `i` to `cpus[i % len]`.
    pub fn pin_to(mut self, cpus: Vec<usize>) -> LoadConfig {
        self.cpus = cpus;
        self
    }
}

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
struct Ready {
    /// The worker thread's id, so the session can read its CPU at the window's edges.
    tid: i32,
    connected: usize,
    first_error: Option<CallError>,
    /// The worker could not be set up (pinning, runtime): the run must not start.
    setup_error: Option<String>,
}

struct WorkerOut {
    recorder: Recorder,
    cpu: CpuTime,
    /// Time runnable but waiting for its CPU, when the kernel reports it.
    wait: Option<Duration>,
    /// Time the hypervisor took from its CPU, when it is pinned to one.
    stolen: Option<Duration>,
    /// From the start signal to the last call, warm-up included (as `cpu` and `wait` are).
    wall: Duration,
}

/// What the load threads used, summed over them.
#[derive(Default)]
struct Usage {
    cpu: CpuTime,
    wait: Option<Duration>,
    stolen: Option<Duration>,
    wall: Duration,
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

/// Load runs on connections that stay open between them: what a paired point's slices use,
/// so a slice starts on warm connections, not on new ones (a new TCP connection starts in
/// slow start and quick-ACK mode, which a 100 ms slice would measure).
pub trait Runs {
    /// One run with this stop condition and warm-up on the open connections.
    fn run(
        &mut self,
        stop: Stop,
        warmup: Duration,
        progress: &mut dyn FnMut(Progress) -> Flow,
    ) -> Result<LoadResult, LoadError>;
}

/// The worker threads of a load, their connections open, waiting for the next run. Dropped,
/// the workers close their connections and end.
pub struct Session<P: Protocol> {
    proto: Arc<P>,
    cfg: LoadConfig,
    runs: Vec<mpsc::Sender<RunOrder>>,
    outs: mpsc::Receiver<Result<WorkerOut, String>>,
    handles: Vec<std::thread::JoinHandle<()>>,
    /// The worker threads' ids.
    tids: Vec<i32>,
}

/// What a worker is told for each run.
struct RunOrder {
    dispenser: Arc<Dispenser>,
    counter: Arc<AtomicU64>,
}

impl<P: Protocol> Session<P> {
    /// Starts the workers and opens every client's connection. Fails when a worker cannot be
    /// set up, or when not one connection could be opened.
    pub fn open(proto: Arc<P>, cfg: &LoadConfig) -> Result<Session<P>, LoadError> {
        let (ready_tx, ready_rx) = mpsc::channel::<Ready>();
        let (out_tx, outs) = mpsc::channel::<Result<WorkerOut, String>>();
        let mut runs = Vec::new();
        let mut handles = Vec::new();
        for i in 0..cfg.threads {
            let n = cfg.clients / cfg.threads + usize::from(i < cfg.clients % cfg.threads);
            let (run_tx, run_rx) = mpsc::channel::<RunOrder>();
            runs.push(run_tx);
            let pin = (!cfg.cpus.is_empty()).then(|| cfg.cpus[i % cfg.cpus.len()]);
            let job = Job {
                proto: proto.clone(),
                clients: n,
                timeout: cfg.timeout,
                pin,
                open_loop: matches!(cfg.pacing, Pacing::Open { .. }),
            };
            let (ready_tx, out_tx) = (ready_tx.clone(), out_tx.clone());
            let h = std::thread::Builder::new()
                .name(format!("bakeoff-load-{i}"))
                .spawn(move || job.work(ready_tx, run_rx, out_tx))
                .map_err(|e| LoadError::Worker(e.to_string()))?;
            handles.push(h);
        }
        drop((ready_tx, out_tx));
        let mut connected = 0;
        let mut first_error = None;
        let mut setup_error = None;
        let mut tids = Vec::new();
        for _ in 0..cfg.threads {
            match ready_rx.recv() {
                Ok(r) => {
                    tids.push(r.tid);
                    connected += r.connected;
                    first_error = first_error.or(r.first_error);
                    setup_error = setup_error.or(r.setup_error);
                }
                Err(_) => break,
            }
        }
        let session = Session {
            proto,
            cfg: cfg.clone(),
            runs,
            outs,
            handles,
            tids,
        };
        // Decide before sending any load, so a broken worker never costs a whole run's
        // results. (Dropping the session ends the workers.)
        match (setup_error, connected) {
            (Some(e), _) => Err(LoadError::Worker(e)),
            (None, 0) => Err(LoadError::Unreachable(
                first_error.map_or("no worker started".to_string(), |e| e.to_string()),
            )),
            _ => Ok(session),
        }
    }
}

impl<P: Protocol> Runs for Session<P> {
    fn run(
        &mut self,
        stop: Stop,
        warmup: Duration,
        progress: &mut dyn FnMut(Progress) -> Flow,
    ) -> Result<LoadResult, LoadError> {
        let cfg = LoadConfig {
            stop,
            warmup,
            ..self.cfg.clone()
        };
        let dispenser = Arc::new(Dispenser::new(cfg.pacing, stop, warmup));
        let counters: Vec<Arc<AtomicU64>> = (0..cfg.threads).map(|_| Arc::default()).collect();
        let t0 = Instant::now();
        dispenser.start(t0);
        for (tx, counter) in self.runs.iter().zip(&counters) {
            let order = RunOrder {
                dispenser: dispenser.clone(),
                counter: counter.clone(),
            };
            if tx.send(order).is_err() {
                return Err(LoadError::Worker("a worker thread ended".into()));
            }
        }
        let measure_start = dispenser.measure_start();
        let measure_end = match stop {
            Stop::Duration(d) => Some(measure_start + d),
            Stop::Count(_) => None,
        };
        let (mut opened, mut closed) = (false, false);
        // The load threads' own CPU and run-queue wait over exactly the measured window, as
        // the server's is read: at the two edges, from the scheduler's counters.
        let tids = self.tids.clone();
        let threads_now = move || -> Option<(Duration, Duration)> {
            tids.iter()
                .try_fold((Duration::ZERO, Duration::ZERO), |(c, w), t| {
                    let (a, b) = sys::thread_schedstat(*t)?;
                    Some((c + a, w + b))
                })
        };
        let mut window: [Option<(Duration, Duration)>; 2] = [None, None];
        let report = |edge: Option<Edge>, progress: &mut dyn FnMut(Progress) -> Flow| {
            let now = Instant::now();
            progress(Progress {
                done: counters.iter().map(|c| c.load(Relaxed)).sum(),
                elapsed: now.saturating_duration_since(measure_start),
                stop,
                warming_up: now < measure_start,
                edge,
            })
        };
        let mut outs = Vec::with_capacity(cfg.threads);
        while outs.len() < cfg.threads {
            // Wake at the window's edges as well as five times a second.
            let now = Instant::now();
            let mut wake = now + Duration::from_millis(200);
            if !opened {
                wake = wake.min(measure_start);
            } else if let Some(end) = measure_end.filter(|_| !closed) {
                wake = wake.min(end);
            }
            match self.outs.recv_timeout(wake.saturating_duration_since(now)) {
                Ok(out) => outs.push(out),
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
            let now = Instant::now();
            let edge = if !opened && now >= measure_start {
                opened = true;
                window[0] = threads_now();
                Some(Edge::Opens)
            } else if opened && !closed && measure_end.is_some_and(|e| now >= e) {
                closed = true;
                window[1] = threads_now();
                Some(Edge::Closes)
            } else {
                None
            };
            if report(edge, progress) == Flow::Stop {
                dispenser.cancel();
            }
        }
        if !opened {
            window[0] = threads_now();
            report(Some(Edge::Opens), progress);
        }
        if !closed {
            window[1] = threads_now();
            report(Some(Edge::Closes), progress);
        }
        if outs.len() < cfg.threads {
            return Err(LoadError::Worker("a worker thread ended".into()));
        }
        let mut merged: Option<Recorder> = None;
        let mut usage = Usage {
            wait: Some(Duration::ZERO),
            stolen: Some(Duration::ZERO),
            ..Usage::default()
        };
        for out in outs {
            let out = out.map_err(LoadError::Worker)?;
            usage.cpu.user += out.cpu.user;
            usage.cpu.system += out.cpu.system;
            usage.wait = usage.wait.zip(out.wait).map(|(a, b)| a + b);
            usage.stolen = usage.stolen.zip(out.stolen).map(|(a, b)| a + b);
            usage.wall += out.wall;
            match &mut merged {
                None => merged = Some(out.recorder),
                Some(m) => m.merge(out.recorder),
            }
        }
        let rec = merged.ok_or_else(|| LoadError::Worker("no worker finished".into()))?;
        let window = match window {
            [Some(a), Some(b)] => Some((b.0.saturating_sub(a.0), b.1.saturating_sub(a.1))),
            _ => None,
        };
        let mut result = summarize(
            &*self.proto,
            &cfg,
            rec,
            usage,
            measure_start,
            INTERRUPTED.load(Relaxed) || dispenser.is_cancelled(),
        );
        if let Some((cpu, wait)) = window {
            let g = &mut result.generator;
            g.window_cpu_s = Some(cpu.as_secs_f64());
            g.window_cpu_wait_s = Some(wait.as_secs_f64());
            g.window_cpu_us_per_request =
                (result.requests > 0).then(|| cpu.as_secs_f64() * 1e6 / result.requests as f64);
        }
        Ok(result)
    }
}

impl<P: Protocol> Drop for Session<P> {
    fn drop(&mut self) {
        self.runs.clear(); // the workers see their orders end, close connections and return
        for h in self.handles.drain(..) {
            let _ = h.join();
        }
    }
}

struct Job<P> {
    proto: Arc<P>,
    clients: usize,
    timeout: Duration,
    pin: Option<usize>,
    open_loop: bool,
}

impl<P: Protocol> Job<P> {
    fn setup(&self) -> Result<tokio::runtime::Runtime, String> {
        if let Some(cpu) = self.pin {
            sys::pin_current_thread(&[cpu]).map_err(|e| format!("cannot pin to CPU {cpu}: {e}"))?;
        }
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start a runtime: {e}"))
    }

    /// Sets up, connects every client, reports ready, then runs each order it is given on
    /// the same connections until the orders end.
    fn work(
        self,
        ready: mpsc::Sender<Ready>,
        orders: mpsc::Receiver<RunOrder>,
        outs: mpsc::Sender<Result<WorkerOut, String>>,
    ) {
        let rt = match self.setup() {
            Ok(rt) => rt,
            Err(e) => {
                let _ = ready.send(Ready {
                    tid: sys::thread_id(),
                    connected: 0,
                    first_error: None,
                    setup_error: Some(e),
                });
                return;
            }
        };
        let local = tokio::task::LocalSet::new();
        let conns: Vec<Result<P::Conn, CallError>> = local.block_on(&rt, async {
            let mut v = Vec::with_capacity(self.clients);
            for _ in 0..self.clients {
                let c = tokio::time::timeout(self.timeout, self.proto.connect()).await;
                v.push(c.unwrap_or(Err(CallError::Timeout(self.timeout))));
            }
            v
        });
        let first_error = conns.iter().find_map(|c| c.as_ref().err().cloned());
        let connected = conns.iter().filter(|c| c.is_ok()).count();
        let _ = ready.send(Ready {
            tid: sys::thread_id(),
            connected,
            first_error,
            setup_error: None,
        });
        let mut conns: Vec<Option<P::Conn>> = conns.into_iter().map(Result::ok).collect();
        while let Ok(order) = orders.recv() {
            let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                self.run_once(&rt, &local, &mut conns, order)
            }))
            .unwrap_or_else(|_| Err("a worker thread panicked".into()));
            let failed = out.is_err();
            if outs.send(out).is_err() || failed {
                return;
            }
        }
    }

    /// One run on `conns`; each client's connection comes back for the next run (or `None`
    /// when it broke).
    fn run_once(
        &self,
        rt: &tokio::runtime::Runtime,
        local: &tokio::task::LocalSet,
        conns: &mut Vec<Option<P::Conn>>,
        order: RunOrder,
    ) -> Result<WorkerOut, String> {
        let (cpu0, wait0, ticks0, wall0) = (
            sys::thread_cpu_time(),
            sys::thread_run_queue_wait(),
            self.pin.map(|_| sys::cpu_ticks()),
            Instant::now(),
        );
        let rec = Rc::new(RefCell::new(Recorder::new(
            order.dispenser.measure_start(),
            self.open_loop,
        )));
        *conns = local.block_on(rt, async {
            let mut tasks = Vec::with_capacity(conns.len());
            for conn in conns.drain(..) {
                tasks.push(tokio::task::spawn_local(client(
                    self.proto.clone(),
                    order.dispenser.clone(),
                    rec.clone(),
                    conn,
                    self.timeout,
                    order.counter.clone(),
                )));
            }
            let mut back = Vec::with_capacity(tasks.len());
            for t in tasks {
                back.push(t.await.ok().flatten());
            }
            back
        });
        let cpu = sys::thread_cpu_time().since(cpu0);
        let wall = wall0.elapsed();
        // The kernel adds a wait when the thread gets its CPU: this thread is running, so
        // every wait before now is in the reading.
        let wait = wait0
            .zip(sys::thread_run_queue_wait())
            .map(|(a, b)| b.saturating_sub(a));
        let stolen = self
            .pin
            .zip(ticks0)
            .and_then(|(cpu, t0)| sys::stolen_from(&t0, &sys::cpu_ticks(), cpu));
        let recorder = Rc::try_unwrap(rec)
            .map_err(|_| "recorder still shared".to_string())?
            .into_inner();
        Ok(WorkerOut {
            recorder,
            cpu,
            wait,
            stolen,
            wall,
        })
    }
}

/// One client: the same loop for every pacing and stop condition.
async fn client<P: Protocol>(
    proto: Arc<P>,
    dispenser: Arc<Dispenser>,
    rec: Rc<RefCell<Recorder>>,
    mut conn: Option<P::Conn>,
    timeout: Duration,
    counter: Arc<AtomicU64>,
) -> Option<P::Conn> {
    while let Some(ticket) = dispenser.next() {
        // Latency starts when the request was due if this client was already late for it
        // (the server held it up: coordinated omission), else when it is actually sent, so
        // the timer's own wake-up lag is not charged to the server.
        let mut late_from = None;
        if let Some(due) = ticket.due {
            if due > Instant::now() {
                tokio::time::sleep_until(due.into()).await;
            } else {
                late_from = Some(due);
            }
        }
        let sent = Instant::now();
        let result = call_once(&*proto, &mut conn, ticket.seq, timeout).await;
        let done = Instant::now();
        let refused = matches!(result, Err(CallError::Connect { .. }));
        if result.is_err() {
            conn = None;
        }
        if ticket.warmup {
            rec.borrow_mut().warmup += 1;
        } else {
            rec.borrow_mut()
                .record(late_from.unwrap_or(sent), sent, done, &result);
            counter.fetch_add(1, Relaxed);
        }
        if refused {
            // Do not spin on a server that refuses connections; each attempt is counted.
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
    conn
}

async fn call_once<P: Protocol>(
    proto: &P,
    conn: &mut Option<P::Conn>,
    seq: u64,
    timeout: Duration,
) -> Result<Reply, CallError> {
    let attempt = async {
        let c = match conn {
            Some(c) => c,
            None => conn.insert(proto.connect().await?),
        };
        proto.call(c, seq).await
    };
    tokio::time::timeout(timeout, attempt)
        .await
        .unwrap_or(Err(CallError::Timeout(timeout)))
}

fn summarize<P: Protocol>(
    proto: &P,
    cfg: &LoadConfig,
    rec: Recorder,
    usage: Usage,
    measure_start: Instant,
    interrupted: bool,
) -> LoadResult {
    let wall = rec.last_done.map_or(Duration::ZERO, |d| {
        d.saturating_duration_since(measure_start)
    });
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
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::http1::{Http1, Http1Request};
    use crate::protocol::target::Endpoint;
    use crate::protocol::template::Template;

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
