//! One load worker thread: its own single-threaded runtime (pinned when asked), its clients'
//! connections, and the one loop every client runs, whatever the pacing and stop condition.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::AtomicU64;
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use super::recorder::Recorder;
use super::{blocking, ring};
use super::{Dispenser, Ready, Run, WorkerOut};
use crate::protocol::{CallError, Protocol, Reply};
use crate::sys;

/// What a worker is told for each run.
pub(super) struct RunOrder {
    pub(super) dispenser: Arc<Dispenser>,
    pub(super) counter: Arc<AtomicU64>,
}

/// One worker thread's share of a session: its clients, their timeout, its CPU.
pub(super) struct Job<P> {
    pub(super) proto: Arc<P>,
    pub(super) clients: usize,
    pub(super) timeout: Duration,
    pub(super) pin: Option<usize>,
    pub(super) open_loop: bool,
    /// The command's cancellation, seen while the connections are opened: a stop then
    /// ends the connecting at once rather than after the timeout (the dispenser, which a
    /// run sees it through, does not exist yet).
    pub(super) cancel: crate::cancel::Cancel,
}

impl<P: Protocol> Job<P> {
    fn setup(&self) -> Result<Option<tokio::runtime::Runtime>, String> {
        if let Some(cpu) = self.pin {
            sys::pin_current_thread(&[cpu]).map_err(|e| format!("cannot pin to CPU {cpu}: {e}"))?;
        }
        // It wakes for every answer, and each wake-up would update an area nothing reads.
        sys::leave_rseq();
        if self.ringed() {
            return Ok(None);
        }
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map(Some)
            .map_err(|e| format!("cannot start a runtime: {e}"))
    }

    /// Whether the calls may go through the engine's own ring (`ring`): a closed loop of
    /// fixed calls.
    fn ringed(&self) -> bool {
        !self.open_loop && self.proto.fixed().is_some()
    }

    /// Sets up, connects every client, reports ready, then runs each order it is given on
    /// the same connections until the orders end.
    pub(super) fn work(
        self,
        ready: mpsc::Sender<Ready>,
        orders: mpsc::Receiver<RunOrder>,
        outs: mpsc::Sender<Result<WorkerOut, String>>,
    ) {
        let rt = match self.setup() {
            Ok(Some(rt)) => rt,
            Ok(None) => {
                let fixed = self.proto.fixed().expect("ringed");
                if blocking::suits(self.clients) {
                    return self.work_blocking(fixed, ready, orders, outs);
                }
                match ring::open(self.clients) {
                    Some(ring) => return self.work_ring(ring, fixed, ready, orders, outs),
                    // No ring from this kernel: the runtime drives the calls.
                    None => match tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                    {
                        Ok(rt) => rt,
                        Err(e) => {
                            return setup_failed(&ready, format!("cannot start a runtime: {e}"))
                        }
                    },
                }
            }
            Err(e) => return setup_failed(&ready, e),
        };
        let local = tokio::task::LocalSet::new();
        let conns: Vec<Result<P::Conn, CallError>> = local.block_on(&rt, async {
            // All at once: a target that never answers a connection costs one timeout before
            // the run, not one a client.
            let timeout = self.timeout;
            let tasks: Vec<_> = (0..self.clients)
                .map(|_| {
                    let proto = self.proto.clone();
                    let cancel = self.cancel.clone();
                    tokio::task::spawn_local(async move {
                        let connect = async {
                            tokio::select! {
                                c = proto.connect() => c,
                                _ = stopped(&cancel) => Err(super::connecting_stopped()),
                            }
                        };
                        let c = tokio::time::timeout(timeout, connect).await;
                        c.unwrap_or(Err(CallError::Timeout(timeout)))
                    })
                })
                .collect();
            let mut v = Vec::with_capacity(self.clients);
            for t in tasks {
                // A panic stays one; a task is cancelled only with the runtime.
                v.push(t.await.unwrap_or_else(|e| match e.try_into_panic() {
                    Ok(p) => std::panic::resume_unwind(p),
                    Err(e) => Err(CallError::Io(format!("connecting was cancelled: {e}"))),
                }));
            }
            v
        });
        connected(&ready, &conns);
        let mut conns: Vec<Option<P::Conn>> = conns.into_iter().map(Result::ok).collect();
        serve(orders, outs, |order| {
            self.run_once(&rt, &local, &mut conns, order)
        });
    }

    /// `work` with the engine's own ring driving the calls.
    fn work_ring(
        &self,
        ring: io_uring::IoUring,
        fixed: crate::protocol::Fixed<'_>,
        ready: mpsc::Sender<Ready>,
        orders: mpsc::Receiver<RunOrder>,
        outs: mpsc::Sender<Result<WorkerOut, String>>,
    ) {
        let conns = ring::connect(fixed.addr, self.clients, self.timeout, &self.cancel);
        connected(&ready, &conns);
        let mut driver = ring::Driver::new(ring, fixed, conns);
        self.serve_fixed("io_uring", orders, outs, None, |run| driver.run(run));
    }

    /// `work` with one connection, its calls a blocking send and receive (`blocking`).
    fn work_blocking(
        &self,
        fixed: crate::protocol::Fixed<'_>,
        ready: mpsc::Sender<Ready>,
        orders: mpsc::Receiver<RunOrder>,
        outs: mpsc::Sender<Result<WorkerOut, String>>,
    ) {
        let watch = match super::watch::Watch::start() {
            Ok(w) => w,
            Err(e) => return setup_failed(&ready, format!("cannot start a watchdog thread: {e}")),
        };
        let conns = ring::connect(fixed.addr, 1, self.timeout, &self.cancel);
        connected(&ready, &conns);
        let conn = conns.into_iter().next().expect("one connection asked for");
        let mut client = blocking::Client::new(fixed, conn, watch);
        let watchdog = client.watchdog();
        self.serve_fixed("blocking", orders, outs, Some(&watchdog), |run| {
            client.run(run)
        });
    }

    /// Runs each order it is given through `drive` (a driver of fixed calls: the ring, the
    /// blocking client), measured as waiting by `io`, the CPU time of the client's
    /// `watchdog` with the thread's.
    fn serve_fixed(
        &self,
        io: &'static str,
        orders: mpsc::Receiver<RunOrder>,
        outs: mpsc::Sender<Result<WorkerOut, String>>,
        watchdog: Option<&super::watch::Meter>,
        mut drive: impl FnMut(&mut Run<'_>) -> Result<(), String>,
    ) {
        serve(orders, outs, |order| {
            self.measured(io, watchdog, || {
                let mut rec = Recorder::new(order.dispenser.measure_start(), false);
                drive(&mut Run {
                    dispenser: &order.dispenser,
                    rec: &mut rec,
                    counter: &order.counter,
                    timeout: self.timeout,
                })?;
                Ok(rec)
            })
        });
    }

    /// What `body` (one run) used of this thread: its CPU, its waits for the CPU, what the
    /// hypervisor took, its wall-clock time; with the recorder it returns.
    fn measured(
        &self,
        io: &'static str,
        watchdog: Option<&super::watch::Meter>,
        body: impl FnOnce() -> Result<Recorder, String>,
    ) -> Result<WorkerOut, String> {
        let watched = watchdog.map(|w| w.cpu());
        let (cpu0, wait0, ticks0, wall0) = (
            sys::thread_cpu_time(),
            sys::thread_run_queue_wait(),
            self.pin.map(|_| sys::cpu_ticks()),
            Instant::now(),
        );
        let recorder = body()?;
        let mut cpu = sys::thread_cpu_time().since(cpu0);
        if let Some((w, w0)) = watchdog.zip(watched) {
            let w = w.cpu().since(w0);
            (cpu.user, cpu.system) = (cpu.user + w.user, cpu.system + w.system);
        }
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
        Ok(WorkerOut {
            recorder,
            cpu,
            wait,
            stolen,
            wall,
            io,
        })
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
        self.measured("epoll", None, || {
            let rec = Rc::new(RefCell::new(Recorder::new(
                order.dispenser.measure_start(),
                self.open_loop,
            )));
            let mut panicked: Option<String> = None;
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
                let cutter = tokio::task::spawn_local(cut_when_stopped(
                    order.dispenser.clone(),
                    tasks.iter().map(|t| t.abort_handle()).collect(),
                ));
                let mut back = Vec::with_capacity(tasks.len());
                for t in tasks {
                    match t.await {
                        Ok(conn) => back.push(conn),
                        Err(e) if e.is_panic() => {
                            let p = e.into_panic();
                            let msg = p
                                .downcast_ref::<&str>()
                                .map(|s| s.to_string())
                                .or_else(|| p.downcast_ref::<String>().cloned())
                                .unwrap_or_default();
                            panicked.get_or_insert(msg);
                            back.push(None);
                        }
                        Err(_) => back.push(None),
                    }
                }
                cutter.abort();
                back
            });
            // A client that panicked made the counts meaningless: the run fails, loudly.
            if let Some(msg) = panicked {
                return Err(format!("a load client panicked: {msg}"));
            }
            Rc::try_unwrap(rec)
                .map_err(|_| "recorder still shared".to_string())
                .map(RefCell::into_inner)
        })
    }
}

/// Reports that the thread could not be set up.
fn setup_failed(ready: &mpsc::Sender<Ready>, e: String) {
    let _ = ready.send(Ready {
        tid: sys::thread_id(),
        connected: 0,
        first_error: None,
        setup_error: Some(e),
    });
}

/// Reports the worker ready: how many of its clients connected, and the first failure.
fn connected<C>(ready: &mpsc::Sender<Ready>, conns: &[Result<C, CallError>]) {
    let _ = ready.send(Ready {
        tid: sys::thread_id(),
        connected: conns.iter().filter(|c| c.is_ok()).count(),
        first_error: conns.iter().find_map(|c| c.as_ref().err().cloned()),
        setup_error: None,
    });
}

/// Runs each order it is given until the orders end or a run fails (a panic in a run is
/// its failure).
fn serve(
    orders: mpsc::Receiver<RunOrder>,
    outs: mpsc::Sender<Result<WorkerOut, String>>,
    mut run: impl FnMut(RunOrder) -> Result<WorkerOut, String>,
) {
    while let Ok(order) = orders.recv() {
        let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(order)))
            .unwrap_or_else(|_| Err("a worker thread panicked".into()));
        let failed = out.is_err();
        if outs.send(out).is_err() || failed {
            return;
        }
    }
}

/// Ends the clients of a run that was stopped (its dispenser cancelled) and are still in a
/// call a [`super::GRACE`] later: their calls are unfinished, as those in flight at a
/// duration's end are after the grace, and the stop waits that long rather than each call's
/// timeout. It waits on the dispenser, not on a timer: a timer of 100 ms beside the clients
/// cost the runtime 0.5–1 % CPU a request at one connection (h2c, gRPC; side by side).
async fn cut_when_stopped(dispenser: Arc<Dispenser>, clients: Vec<tokio::task::AbortHandle>) {
    dispenser.stopped().await;
    tokio::time::sleep(super::GRACE).await;
    for c in clients {
        c.abort();
    }
}

/// Returns once `cancel` is set, looking every [`super::CUT_CHECK`]: only while the
/// connections are opened, before a run's dispenser can be waited on instead.
async fn stopped(cancel: &crate::cancel::Cancel) {
    while !cancel.is_cancelled() {
        tokio::time::sleep(super::CUT_CHECK).await;
    }
}

/// A client's connection, and whether a measured call is under way on it. A client the
/// cut ([`cut_when_stopped`]) ends is dropped mid-call, and so is this: the call is then
/// counted unfinished, with the items of a stream it had received, as a call a stop's grace
/// ran out on is.
struct Line<P: Protocol> {
    proto: Arc<P>,
    rec: Rc<RefCell<Recorder>>,
    conn: Option<P::Conn>,
    in_call: bool,
}

impl<P: Protocol> Drop for Line<P> {
    fn drop(&mut self) {
        if !self.in_call {
            return;
        }
        let partial = self
            .conn
            .as_ref()
            .map_or(0, |c| self.proto.partial_items(c));
        // Never a second panic: a client that panicked holding the recorder fails the run.
        if let Ok(mut rec) = self.rec.try_borrow_mut() {
            rec.cut_short(Instant::now(), partial);
            rec.unfinished += 1;
        }
    }
}

/// One client: the same loop for every pacing and stop condition.
async fn client<P: Protocol>(
    proto: Arc<P>,
    dispenser: Arc<Dispenser>,
    rec: Rc<RefCell<Recorder>>,
    conn: Option<P::Conn>,
    timeout: Duration,
    counter: Arc<AtomicU64>,
) -> Option<P::Conn> {
    let mut line = Line {
        proto: proto.clone(),
        rec: rec.clone(),
        conn,
        in_call: false,
    };
    loop {
        // One clock reading serves the dispenser's stop check and the send time (a
        // closed loop sends at once); a client that slept until its due time reads again.
        let now = Instant::now();
        let Some(ticket) = dispenser.next_at(now) else {
            break;
        };
        // Latency starts when the request was due if this client was already late for it
        // (the server held it up: coordinated omission), else when it is actually sent, so
        // the timer's own wake-up lag is not charged to the server.
        let mut late_from = None;
        let sent = match ticket.due {
            Some(due) if due > now => {
                tokio::time::sleep_until(due.into()).await;
                Instant::now()
            }
            Some(due) => {
                late_from = Some(due);
                now
            }
            None => now,
        };
        let reconnect = line.conn.is_none();
        let grace = super::grace_left(&dispenser, sent, timeout);
        let limit = grace.unwrap_or(timeout);
        line.in_call = !ticket.warmup;
        let mut result = call_once(&*proto, &mut line.conn, ticket.seq, limit).await;
        let mut retried = false;
        if let Err(CallError::Unprocessed(_)) = result {
            retried = true;
            result = again(&*proto, &mut line.conn, ticket.seq, sent, limit).await;
        }
        line.in_call = false;
        let done = Instant::now();
        let partial = match (&result, &line.conn) {
            (Err(CallError::Timeout(_)), Some(c)) => proto.partial_items(c),
            _ => 0,
        };
        let ended = super::Ended {
            warmup: ticket.warmup,
            graced: grace.is_some(),
            reconnect: reconnect || retried,
            from: late_from.unwrap_or(sent),
            sent,
            done,
            partial,
        };
        let counted = super::tally(&mut rec.borrow_mut(), &counter, ended, &result);
        let refused = matches!(result, Err(CallError::Connect { .. }));
        if !counted || result.is_err() || line.conn.as_ref().is_some_and(|c| !proto.reusable(c)) {
            line.conn = None;
        }
        if refused {
            // Do not spin on a server that refuses connections; each attempt is counted.
            tokio::time::sleep(super::REFUSED_PAUSE).await;
        }
    }
    line.conn.take()
}

/// A call the server said it did not process ([`CallError::Unprocessed`]: a GOAWAY that
/// came after the request went out) sent once more on a new connection, as HTTP/2 clients
/// do, within what is left of its `limit` from when it was `sent`; the call counts a
/// reconnect.
///
/// A rare path, kept out of the client's own code: boxed and called through its vtable.
/// Awaited in place (an `async fn` awaited in the client, boxed or not, or a second caller
/// of `call_once`), its code was the client's, and every gRPC call cost 1–3 % more (side by
/// side, benches/steady.py).
#[cold]
#[inline(never)]
fn again<'a, P: Protocol>(
    proto: &'a P,
    conn: &'a mut Option<P::Conn>,
    seq: u64,
    sent: Instant,
    limit: Duration,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<Reply, CallError>> + 'a>> {
    Box::pin(async move {
        let left = (sent + limit).saturating_duration_since(Instant::now());
        let attempt = async {
            let c = conn.insert(proto.connect().await?);
            proto.call(c, seq).await
        };
        tokio::time::timeout(left, attempt)
            .await
            .unwrap_or(Err(CallError::Timeout(limit)))
    })
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
    // `timeout`, not `timeout_at` from the send time: it would save a clock reading, but
    // its future is moved by copying (some 670 instructions a request, benches/profile.sh).
    tokio::time::timeout(timeout, attempt)
        .await
        .unwrap_or(Err(CallError::Timeout(timeout)))
}
