//! A load's worker threads kept with their connections open between runs (the slices of a
//! paired point run on warm connections), and the one run the engine makes on them: start
//! every worker on a fresh dispenser, announce the measured window's edges, merge what the
//! workers recorded.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use super::recorder::Recorder;
use super::worker::{Job, RunOrder};
use super::{
    summarize, Dispenser, Edge, Flow, LoadConfig, LoadError, LoadResult, Pacing, Progress, Ready,
    Stop, Usage, WorkerOut,
};
use crate::protocol::Protocol;
use crate::sys;

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
                cancel: cfg.cancel.clone(),
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
            // Stopped while connecting: nothing was sent, and nothing is said of the target.
            (None, 0) if cfg.cancel.is_cancelled() => Err(LoadError::Interrupted),
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
        let (dispenser, counters) = self.send_orders(&cfg)?;
        let measure_start = dispenser.measure_start();
        let measure_end = match stop {
            Stop::Duration(d) => Some(measure_start + d),
            Stop::Count(_) => None,
        };
        let mut w = Window::default();
        let tids = self.tids.clone();
        let threads_now = move || scheduled(&tids);
        let report = |edge: Option<Edge>, progress: &mut dyn FnMut(Progress) -> Flow| {
            progress(snapshot(&counters, measure_start, stop, edge))
        };
        let mut outs = Vec::with_capacity(cfg.threads);
        while outs.len() < cfg.threads {
            let now = Instant::now();
            let wake = w.wake(now, measure_start, measure_end);
            match self.outs.recv_timeout(wake.saturating_duration_since(now)) {
                Ok(out) => outs.push(out),
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
            let edge = w.cross(Instant::now(), measure_start, measure_end, &threads_now);
            // The command cancelled (Ctrl-C) is passed on as the dispenser's own cancel,
            // which wakes what waits for a stop (the runtime's `cut_when_stopped`).
            if report(edge, progress) == Flow::Stop || dispenser.is_cancelled() {
                dispenser.cancel();
            }
        }
        if !w.opened {
            w.at[0] = threads_now();
            w.opened = true;
            report(Some(Edge::Opens), progress);
        }
        // An open loop's window is its duration, even when its last request fell due (and
        // its workers finished) earlier: `-q 1 -z 3s` is 3 requests in 3 s, not in 2.
        if let (Pacing::Open { .. }, Some(end), false) = (cfg.pacing, measure_end, w.closed) {
            while !dispenser.is_cancelled() && Instant::now() < end {
                let left = end.saturating_duration_since(Instant::now());
                std::thread::sleep(left.min(Duration::from_millis(200)));
                if report(None, progress) == Flow::Stop {
                    dispenser.cancel();
                }
            }
        }
        if !w.closed {
            w.at[1] = threads_now();
            report(Some(Edge::Closes), progress);
        }
        if outs.len() < cfg.threads {
            return Err(LoadError::Worker("a worker thread ended".into()));
        }
        let (rec, usage) = join(outs)?;
        let mut result = summarize(
            &*self.proto,
            &cfg,
            rec,
            usage,
            measure_start,
            dispenser.is_cancelled(),
        );
        result.dropped = if result.interrupted {
            0
        } else {
            dispenser.dropped()
        };
        if let Some(used) = w.used() {
            window_cost(&mut result, used);
        }
        Ok(result)
    }
}

impl<P: Protocol> Session<P> {
    /// Starts the dispenser and hands every worker its order for this run: the dispenser,
    /// and a counter of what it has done.
    fn send_orders(
        &self,
        cfg: &LoadConfig,
    ) -> Result<(Arc<Dispenser>, Vec<Arc<AtomicU64>>), LoadError> {
        let dispenser =
            Arc::new(Dispenser::new(cfg.pacing, cfg.stop, cfg.warmup).watching(cfg.cancel.clone()));
        let counters: Vec<Arc<AtomicU64>> = (0..cfg.threads).map(|_| Arc::default()).collect();
        dispenser.start(Instant::now());
        for (tx, counter) in self.runs.iter().zip(&counters) {
            let order = RunOrder {
                dispenser: dispenser.clone(),
                counter: counter.clone(),
            };
            if tx.send(order).is_err() {
                return Err(LoadError::Worker("a worker thread ended".into()));
            }
        }
        Ok((dispenser, counters))
    }
}

/// Where a run stands, for its progress callback.
fn snapshot(
    counters: &[Arc<AtomicU64>],
    start: Instant,
    stop: Stop,
    edge: Option<Edge>,
) -> Progress {
    let now = Instant::now();
    Progress {
        done: counters.iter().map(|c| c.load(Relaxed)).sum(),
        elapsed: now.saturating_duration_since(start),
        stop,
        warming_up: now < start,
        edge,
    }
}

/// The load threads' CPU and run-queue wait over the measured window, and per request.
fn window_cost(result: &mut LoadResult, (cpu, wait): (Duration, Duration)) {
    let g = &mut result.generator;
    g.window_cpu_s = Some(cpu.as_secs_f64());
    g.window_cpu_wait_s = Some(wait.as_secs_f64());
    g.window_cpu_us_per_request =
        (result.requests > 0).then(|| cpu.as_secs_f64() * 1e6 / result.requests as f64);
}

/// The load threads' CPU time and run-queue wait so far, from the scheduler's counters.
fn scheduled(tids: &[i32]) -> Option<(Duration, Duration)> {
    tids.iter()
        .try_fold((Duration::ZERO, Duration::ZERO), |(c, w), t| {
            let (a, b) = sys::thread_schedstat(*t)?;
            Some((c + a, w + b))
        })
}

/// The measured window: whether it opened and closed yet, and the load threads' own CPU
/// and run-queue wait at its two edges (read from the scheduler's counters, as the
/// server's are), so the generator's cost is over exactly the window.
#[derive(Default)]
struct Window {
    opened: bool,
    closed: bool,
    at: [Option<(Duration, Duration)>; 2],
}

type Counters<'a> = &'a dyn Fn() -> Option<(Duration, Duration)>;

impl Window {
    /// When to look again: at the window's next edge, and at least five times a second.
    fn wake(&self, now: Instant, start: Instant, end: Option<Instant>) -> Instant {
        let wake = now + Duration::from_millis(200);
        if !self.opened {
            wake.min(start)
        } else if let Some(end) = end.filter(|_| !self.closed) {
            wake.min(end)
        } else {
            wake
        }
    }

    /// The edge `now` has crossed, if any, with the counters read there.
    fn cross(
        &mut self,
        now: Instant,
        start: Instant,
        end: Option<Instant>,
        read: Counters,
    ) -> Option<Edge> {
        if !self.opened && now >= start {
            self.opened = true;
            self.at[0] = read();
            Some(Edge::Opens)
        } else if self.opened && !self.closed && end.is_some_and(|e| now >= e) {
            self.closed = true;
            self.at[1] = read();
            Some(Edge::Closes)
        } else {
            None
        }
    }

    /// CPU and run-queue wait between the edges.
    fn used(&self) -> Option<(Duration, Duration)> {
        match self.at {
            [Some(a), Some(b)] => Some((b.0.saturating_sub(a.0), b.1.saturating_sub(a.1))),
            _ => None,
        }
    }
}

/// The workers' recorders merged into one, and their usage summed.
fn join(outs: Vec<Result<WorkerOut, String>>) -> Result<(Recorder, Usage), LoadError> {
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
        if !usage.io.contains(&out.io) {
            usage.io.push(out.io);
        }
        match &mut merged {
            None => merged = Some(out.recorder),
            Some(m) => m.merge(out.recorder),
        }
    }
    let rec = merged.ok_or_else(|| LoadError::Worker("no worker finished".into()))?;
    Ok((rec, usage))
}

impl<P: Protocol> Drop for Session<P> {
    fn drop(&mut self) {
        self.runs.clear(); // the workers see their orders end, close connections and return
        for h in self.handles.drain(..) {
            let _ = h.join();
        }
    }
}
