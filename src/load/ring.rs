//! The load engine's own way to drive calls whose bytes never change (`Protocol::fixed`:
//! HTTP/1.1 without placeholders or TLS): one io_uring a worker thread, each call a send
//! linked to a receive, every connection's calls submitted and their answers reaped with one
//! system call a wait — where the runtime makes a write, a read and a readiness wait of its
//! own. The calls, their outcomes and what is recorded are `worker::client`'s, step for step:
//! a duration's grace, timeouts, reconnects, a pause after a refused connection.
//!
//! Operations name a connection by its slot's place in a table of files registered with the
//! ring, so the kernel looks up no descriptor an operation (`BAKEOFF_RING_FILES=0`, or a
//! kernel that refuses the table: descriptors).
//!
//! A load thread with one connection uses `blocking` instead (nothing to batch), unless
//! `BAKEOFF_LOAD_IO=io_uring` asks for the ring.
//!
//! A closed loop only (an open loop's due times stay with the runtime's timers). A kernel
//! without io_uring, or that refuses it (a container's seccomp filter), leaves the calls to
//! the runtime, as does `BAKEOFF_LOAD_IO=epoll`.

use std::net::SocketAddr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

use io_uring::{opcode, squeue, types, IoUring};

use super::Run;
use crate::protocol::{Answer, CallError, Fed, Fixed, Inbox, Reply};

/// The kinds of operation, in the low byte of each one's `user_data`.
const CONNECT: u64 = 1;
const SEND: u64 = 2;
const RECV: u64 = 3;
const PAUSE: u64 = 4;
/// The run's one timer, set at the earliest limit of the calls in flight, and its removal.
const TICK: u64 = 5;
const UNTICK: u64 = 6;
/// A receive given up on (below, [`GIVE_UP`]) asked to end; not counted in flight.
const CANCEL: u64 = 7;
/// The slot number of the run's own operations.
const RUN: usize = u32::MAX as usize;
/// How long a run that has nothing left but receives of calls already ended waits for them.
/// Each is on a connection shut down at its call's timeout or whose request failed, so it
/// ends at once; one that has not in a second is given up on: asked to end, its buffer left
/// to the kernel, and no longer waited for. (Once a run waited for ever on a receive the
/// kernel had dropped without a word — a failed send's, [`Driver::link_broken`]; the bound
/// stays for whatever else a kernel never ends.)
const GIVE_UP: Duration = Duration::from_secs(1);

/// Opens a ring for `clients` connections, or `None` when the kernel has none to give (or
/// `BAKEOFF_LOAD_IO=epoll` asks for the runtime).
pub(super) fn open(clients: usize) -> Option<IoUring> {
    if std::env::var_os("BAKEOFF_LOAD_IO").is_some_and(|v| v == "epoll") {
        return None;
    }
    // At most a send and a receive a connection wait to be submitted; a receive given up at
    // a timeout may still be in flight beside the next call's two.
    let sq = (2 * clients + 8).next_power_of_two().min(4096) as u32;
    let cq = (3 * clients + 8)
        .next_power_of_two()
        .clamp(2 * sq as usize, 65536) as u32;
    let build = |way: u8| {
        let mut b = IoUring::builder();
        b.setup_cqsize(cq);
        match way {
            // Linux 6.1: completions run when the thread waits, not whenever they arrive.
            0 => b.setup_single_issuer().setup_defer_taskrun(),
            1 => b.setup_coop_taskrun(),
            _ => &mut b,
        };
        b.build(sq).ok()
    };
    let ring = build(0).or_else(|| build(1)).or_else(|| build(2))?;
    // Waits bounded by a timeout of their own, which the drop's draining uses (5.11);
    // completions never dropped (5.5); a send's completion posted only when it fails (5.17).
    let p = ring.params();
    (p.is_feature_ext_arg() && p.is_feature_nodrop() && p.is_feature_skip_cqe_on_success())
        .then_some(ring)
}

/// Connects `clients` connections for the ring, all started at once and waited for together
/// (a target that never answers a connection costs one timeout before the run, not one a
/// client); each `Err` is what its connection failed with. The worker has nothing else to do
/// yet. Waits are cut into [`super::CUT_CHECK`]s: `cancel` (the command's Ctrl-C, before a
/// run has a dispenser to see it by) ends every connection still on its way at once.
pub(super) fn connect(
    addr: SocketAddr,
    clients: usize,
    timeout: Duration,
    cancel: &crate::cancel::Cancel,
) -> Vec<Conn> {
    let deadline = Instant::now() + timeout;
    connect_within(addr, clients, timeout, || {
        if cancel.is_cancelled() {
            return Err(super::connecting_stopped());
        }
        match deadline.saturating_duration_since(Instant::now()) {
            left if left.is_zero() => Err(CallError::Timeout(timeout)),
            left => Ok(left.min(super::CUT_CHECK)),
        }
    })
}

/// As [`connect`], but `wait` says before each wait how long it may be, or ends every
/// connection still on its way with its `Err` (a blocking call's reconnect: its limit, cut
/// short by a stop, [`super::blocking`]). `limit` is the timeout a connection that fails
/// with `ETIMEDOUT` is said to have run out.
pub(super) fn connect_within(
    addr: SocketAddr,
    clients: usize,
    limit: Duration,
    mut wait: impl FnMut() -> Result<Duration, CallError>,
) -> Vec<Conn> {
    let (sa, len) = sockaddr(addr);
    let fail = |e: std::io::Error| Err(connect_error(addr, e, limit));
    let mut out: Vec<Conn> = Vec::with_capacity(clients);
    // The connections still on their way, by their place in `out`.
    let mut waiting: Vec<usize> = Vec::new();
    for i in 0..clients {
        let fd = match socket(addr, libc::SOCK_NONBLOCK) {
            Ok(fd) => fd,
            Err(e) => {
                out.push(fail(e));
                continue;
            }
        };
        // SAFETY: connect(2) on a descriptor `fd` owns, with the address and its length.
        let r = unsafe {
            libc::connect(
                fd.as_raw_fd(),
                (&sa as *const libc::sockaddr_storage).cast(),
                len,
            )
        };
        if r != 0 {
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EINPROGRESS) {
                out.push(fail(e));
                continue;
            }
            waiting.push(i);
        }
        out.push(Ok(fd));
    }
    let mut polls: Vec<libc::pollfd> = Vec::with_capacity(waiting.len());
    while !waiting.is_empty() {
        let left = match wait() {
            Ok(left) => left,
            Err(e) => {
                for i in waiting.drain(..) {
                    out[i] = Err(e.clone());
                }
                break;
            }
        };
        polls.clear();
        polls.extend(waiting.iter().map(|&i| libc::pollfd {
            fd: out[i].as_ref().map_or(-1, AsRawFd::as_raw_fd),
            events: libc::POLLOUT,
            revents: 0,
        }));
        // Rounded up: a wait of 0 ms would spin until the deadline.
        let ms = left.as_micros().div_ceil(1000).min(i32::MAX as u128) as i32;
        // SAFETY: poll(2) on `polls`, whose descriptors live in `out` throughout.
        let n = unsafe { libc::poll(polls.as_mut_ptr(), polls.len() as libc::nfds_t, ms) };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            for &i in &waiting {
                out[i] = fail(std::io::Error::from_raw_os_error(
                    e.raw_os_error().unwrap_or(0),
                ));
            }
            waiting.clear();
            break;
        }
        let mut k = 0;
        waiting.retain(|&i| {
            let ready = polls[k].revents != 0;
            k += 1;
            if ready {
                if let Some(e) = out[i].as_ref().ok().and_then(pending_error) {
                    out[i] = fail(e);
                }
            }
            !ready
        });
    }
    // Blocking again, as a connection made on the ring is, and with Nagle's algorithm off.
    out.into_iter()
        .map(|c| {
            let fd = c?;
            // SAFETY: fcntl(2) on a descriptor `fd` owns.
            unsafe {
                let flags = libc::fcntl(fd.as_raw_fd(), libc::F_GETFL);
                libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, flags & !libc::O_NONBLOCK);
            }
            no_delay(&fd);
            Ok(fd)
        })
        .collect()
}

/// A TCP socket for `addr`'s family, owned, with `flags` (`SOCK_NONBLOCK`, or 0).
fn socket(addr: SocketAddr, flags: libc::c_int) -> std::io::Result<OwnedFd> {
    let family = match addr {
        SocketAddr::V4(_) => libc::AF_INET,
        SocketAddr::V6(_) => libc::AF_INET6,
    };
    // SAFETY: a plain socket(2).
    let fd = unsafe { libc::socket(family, libc::SOCK_STREAM | libc::SOCK_CLOEXEC | flags, 0) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `fd` was just returned by socket(2) and nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Turns Nagle's algorithm off on `fd` (every request goes out whole at once).
fn no_delay(fd: &OwnedFd) {
    let one: libc::c_int = 1;
    // SAFETY: setsockopt(2) with a pointer to an int that outlives the call.
    unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_NODELAY,
            (&one as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
    }
}

/// How a connection started without waiting ended, if it failed (`SO_ERROR`).
fn pending_error(fd: &OwnedFd) -> Option<std::io::Error> {
    let mut err: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: getsockopt(2) into an int and its length, both outliving the call.
    let r = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_ERROR,
            (&mut err as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    match (r, err) {
        (0, 0) => None,
        (0, e) => Some(std::io::Error::from_raw_os_error(e)),
        _ => Some(std::io::Error::last_os_error()),
    }
}

pub(super) type Conn = Result<OwnedFd, CallError>;

fn connect_error(addr: SocketAddr, e: std::io::Error, limit: Duration) -> CallError {
    if e.kind() == std::io::ErrorKind::TimedOut {
        return CallError::Timeout(limit);
    }
    CallError::Connect {
        addr: addr.to_string(),
        reason: e.to_string(),
    }
}

fn os_error(res: i32) -> std::io::Error {
    std::io::Error::from_raw_os_error(-res)
}

fn tag(slot: usize, gen: u32, kind: u64) -> u64 {
    ((slot as u64) << 32) | (u64::from(gen & 0xFF_FFFF) << 8) | kind
}

fn untag(t: u64) -> (usize, u32, u64) {
    ((t >> 32) as usize, ((t >> 8) & 0xFF_FFFF) as u32, t & 0xFF)
}

/// `build` (an operation's constructor, given where its connection is) on slot `i`'s
/// connection: its place in the ring's table of files when the ring has one (`files`; the
/// kernel then looks up no descriptor an operation), else the descriptor `raw`.
macro_rules! on_conn {
    ($files:expr, $i:expr, $raw:expr, $build:expr) => {
        if $files {
            ($build)(types::Fixed($i as u32))
        } else {
            ($build)(types::Fd($raw))
        }
    };
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    Connecting,
    /// The request sent (or on its way) and its answer being read.
    Exchanging,
    /// After a refused connection, until the pause ends.
    Paused,
    /// The dispenser gave no more calls.
    Finished,
}

/// One call in flight on a slot.
#[derive(Clone, Copy)]
struct Call {
    warmup: bool,
    sent: Instant,
    limit: Duration,
    deadline: Instant,
    /// Its limit is what was left of a duration's grace, or of a stop's.
    graced: bool,
    /// It opened the slot's connection.
    reconnect: bool,
}

impl Call {
    /// A stop seen `at` leaves this call the grace from then at the most ([`super::cut`]):
    /// whether that shortened it.
    fn cut(&mut self, at: Instant) -> bool {
        let Some(limit) = super::cut(self.sent, self.limit, at) else {
            return false;
        };
        (self.limit, self.graced) = (limit, true);
        self.deadline = self.sent + limit;
        true
    }
}

/// One client: its connection, what arrived on it, and its call.
struct Slot {
    fd: Option<OwnedFd>,
    inbox: Inbox,
    answer: Box<dyn Answer>,
    /// Counts the slot's calls: completions of an earlier one are recognised and passed over.
    gen: u32,
    state: State,
    call: Call,
    /// The `user_data` of its receive in flight, whose buffer is the inbox.
    recv: Option<u64>,
    /// Not yet stamped with a send time (it goes out with the next submission).
    unstamped: bool,
}

/// The ring, its clients, and what a run needs to run them.
pub(super) struct Driver<'a> {
    ring: IoUring,
    fixed: Fixed<'a>,
    addr: (libc::sockaddr_storage, libc::socklen_t),
    slots: Vec<Slot>,
    pause: types::Timespec,
    /// `IORING_RECVSEND_POLL_FIRST` for a call's first receive where the kernel knows it
    /// (5.19; a ring with a single issuer is 6.0 or later), else 0: read once, not a call.
    poll_first: u16,
    /// Each slot's connection is in the ring's table of files, at the slot's index. A
    /// connection dropped stays there until the slot's next one replaces it, or the ring
    /// goes: one registration a connection, not two.
    files: bool,
    go: Going,
}

impl Drop for Driver<'_> {
    /// A run that ended early (a panic, a failed wait) may leave operations in flight: the
    /// connections are shut down so they end, and waited for a little; buffers the kernel
    /// may still write into are then left to it rather than freed.
    fn drop(&mut self) {
        if self.go.in_flight == 0 {
            return;
        }
        for s in &self.slots {
            if let Some(fd) = &s.fd {
                // SAFETY: shutdown(2) on a descriptor the slot owns.
                unsafe { libc::shutdown(fd.as_raw_fd(), libc::SHUT_RDWR) };
            }
        }
        let ts = types::Timespec::from(Duration::from_millis(10));
        for _ in 0..100 {
            let args = types::SubmitArgs::new().timespec(&ts);
            let _ = self.ring.submitter().submit_with_args(1, &args);
            let mut cq = self.ring.completion();
            cq.sync();
            let (slots, draining) = (&self.slots, &self.go.draining);
            let ended = cq
                .filter(|c| counts(slots, draining, c.user_data()))
                .count();
            self.go.in_flight = self.go.in_flight.saturating_sub(ended);
            if self.go.in_flight == 0 {
                return;
            }
        }
        for s in &mut self.slots {
            std::mem::forget(std::mem::take(&mut s.inbox));
        }
        for (_, inbox) in self.go.draining.drain(..) {
            std::mem::forget(inbox);
        }
    }
}

impl<'a> Driver<'a> {
    pub(super) fn new(ring: IoUring, fixed: Fixed<'a>, conns: Vec<Conn>) -> Driver<'a> {
        let slots: Vec<Slot> = conns
            .into_iter()
            .map(|c| Slot {
                fd: c.ok(),
                inbox: Inbox::new(),
                answer: (fixed.reader)(),
                gen: 0,
                state: State::Finished,
                call: Call {
                    warmup: true,
                    sent: Instant::now(),
                    limit: Duration::ZERO,
                    deadline: Instant::now(),
                    graced: false,
                    reconnect: false,
                },
                recv: None,
                unstamped: false,
            })
            .collect();
        let files = register(&ring, &slots);
        Driver {
            addr: sockaddr(fixed.addr),
            poll_first: u16::from(ring.params().is_setup_single_issuer()),
            files,
            ring,
            fixed,
            slots,
            pause: types::Timespec::from(super::REFUSED_PAUSE),
            go: Going {
                cqes: Vec::new(),
                in_flight: 0,
                draining: Vec::new(),
                next_check: None,
                pending: Vec::new(),
                clock: Instant::now(),
                tick: None,
                tick_ts: types::Timespec::new(),
                untick: false,
                cut: None,
            },
        }
    }

    /// One run: every client calls until the dispenser gives no more, and every operation
    /// the ring was given has come back (the kernel writes into the slots' buffers until
    /// then). The connections stay open for the next run.
    pub(super) fn run(&mut self, run: &mut Run<'_>) -> Result<(), String> {
        self.go.next_check = None;
        self.go.pending.clear();
        self.go.cut = None;
        self.go.clock = Instant::now();
        let now = Instant::now();
        for i in 0..self.slots.len() {
            self.start(i, now, run)?;
        }
        loop {
            if !self.go.pending.is_empty() {
                self.stamp(run);
            }
            if self.go.in_flight == 0 {
                return Ok(());
            }
            let ticking = usize::from(self.go.tick.is_some());
            if self.go.in_flight == ticking + usize::from(self.go.untick) {
                // Every live slot has an operation in flight: only the run's own left means
                // all finished; the timer goes.
                if ticking == 1 && !self.go.untick {
                    self.go.untick = true;
                    let entry = opcode::TimeoutRemove::new(tag(RUN, 0, TICK))
                        .build()
                        .user_data(tag(RUN, 0, UNTICK));
                    self.push(entry)?;
                }
            } else if self.go.tick.is_none() {
                if let Some(t) = self.go.next_check {
                    // One timer for all the calls' limits, not one a wait: set again only
                    // when it fires, at the latest a CUT_CHECK on (a stop is seen then).
                    let t = t.min(self.go.clock + super::CUT_CHECK);
                    self.go.tick = Some(t);
                    self.go.tick_ts = types::Timespec::from(
                        t.saturating_duration_since(self.go.clock)
                            .max(Duration::from_micros(1)),
                    );
                    let entry = opcode::Timeout::new(&self.go.tick_ts)
                        .build()
                        .user_data(tag(RUN, 0, TICK));
                    self.push(entry)?;
                }
            }
            let only_ended = self.go.tick.is_none()
                && !self.go.untick
                && self.go.in_flight == self.go.draining.len();
            if only_ended {
                if !self.wait_at_most(GIVE_UP)? {
                    self.give_up()?;
                }
            } else {
                self.wait()?;
            }
            let now = Instant::now();
            self.go.clock = now;
            if self.go.cut.is_none() && run.dispenser.is_cancelled() {
                self.cut(now);
            }
            // Calls past their limit first, while every operation on their connections was
            // submitted by the wait: closed, a connection's number can go to another.
            if self.go.next_check.is_some_and(|t| t <= now) && self.ring.submission().is_empty() {
                self.expire(now, run)?;
            }
            let mut cqes = std::mem::take(&mut self.go.cqes);
            {
                let mut cq = self.ring.completion();
                cq.sync();
                cqes.extend(cq.map(|c| (c.user_data(), c.result())));
            }
            for (ud, res) in cqes.drain(..) {
                match untag(ud) {
                    // A send's completion comes only when it failed, and is not counted.
                    (_, _, SEND) => {}
                    // A cancel's: nothing to do.
                    (_, _, CANCEL) => continue,
                    (RUN, _, kind) => {
                        self.go.in_flight -= 1;
                        if kind == TICK {
                            self.go.tick = None;
                        } else {
                            self.go.untick = false;
                        }
                        continue;
                    }
                    // A receive the run no longer counts (given up on, or a failed send's):
                    // passed over, not taken off the count of another still in flight.
                    (i, _, RECV) if !self.awaited(i, ud) => continue,
                    _ => self.go.in_flight -= 1,
                }
                self.complete(ud, res, now, run)?;
            }
            self.go.cqes = cqes;
        }
    }

    /// As [`Driver::wait`], but for `most` at the longest: whether a completion came.
    fn wait_at_most(&mut self, most: Duration) -> Result<bool, String> {
        let ts = types::Timespec::from(most);
        let args = types::SubmitArgs::new().timespec(&ts);
        match self.ring.submitter().submit_with_args(1, &args) {
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::ETIME | libc::EINTR | libc::EBUSY)
                ) => {}
            Err(e) => return Err(format!("io_uring wait failed: {e}")),
        }
        let mut cq = self.ring.completion();
        cq.sync();
        Ok(!cq.is_empty())
    }

    /// Gives up on the receives of calls already ended ([`GIVE_UP`]): each is asked to end,
    /// its buffer is left to the kernel (never freed: it may yet write into it), and its
    /// completion, if one comes, is let pass uncounted (no longer draining, it is not
    /// [`Driver::awaited`]).
    fn give_up(&mut self) -> Result<(), String> {
        let ended = std::mem::take(&mut self.go.draining);
        for (t, inbox) in ended {
            std::mem::forget(inbox);
            self.go.in_flight -= 1;
            let entry = opcode::AsyncCancel::new(t)
                .build()
                .user_data(tag(RUN, 0, CANCEL));
            self.queue(entry)?;
        }
        self.ring
            .submit()
            .map(|_| ())
            .map_err(|e| format!("io_uring submit failed: {e}"))
    }

    /// Submits what is queued and waits for one completion (the timer's, at the latest).
    fn wait(&mut self) -> Result<(), String> {
        match self.ring.submitter().submit_and_wait(1) {
            Ok(_) => Ok(()),
            Err(e) if matches!(e.raw_os_error(), Some(libc::EINTR | libc::EBUSY)) => Ok(()),
            Err(e) => Err(format!("io_uring wait failed: {e}")),
        }
    }

    fn push(&mut self, entry: squeue::Entry) -> Result<(), String> {
        self.go.in_flight += 1;
        self.queue(entry)
    }

    /// Queues `entry` without counting it: a send, whose completion comes only if it fails.
    fn queue(&mut self, entry: squeue::Entry) -> Result<(), String> {
        // SAFETY: every buffer an entry points to — the fixed request, a slot's inbox, the
        // address and the pause — lives until its completion is reaped: the request and the
        // address for the driver's life, an inbox in its slot or in `draining`, and a run
        // returns only when nothing is in flight.
        unsafe {
            while self.ring.submission().push(&entry).is_err() {
                self.ring
                    .submit()
                    .map_err(|e| format!("io_uring submit failed: {e}"))?;
            }
        }
        Ok(())
    }

    /// Gives slot `i` its next call (or marks it finished).
    fn start(&mut self, i: usize, now: Instant, run: &mut Run<'_>) -> Result<(), String> {
        let Some(ticket) = run.dispenser.next_at(now) else {
            self.slots[i].state = State::Finished;
            return Ok(());
        };
        let s = &mut self.slots[i];
        s.call = Call {
            warmup: ticket.warmup,
            sent: now,
            limit: run.timeout,
            deadline: now + run.timeout,
            graced: false,
            reconnect: s.fd.is_none(),
        };
        s.unstamped = true;
        self.go.pending.push(i);
        if s.fd.is_some() {
            return self.exchange(i, now, run);
        }
        s.state = State::Connecting;
        let fd = match socket(self.fixed.addr, 0) {
            Ok(fd) => fd,
            Err(e) => {
                let e = connect_error(self.fixed.addr, e, run.timeout);
                return self.settle(i, Err(e), false, now, run);
            }
        };
        no_delay(&fd);
        if self.files {
            if let Err(e) = self
                .ring
                .submitter()
                .register_files_update(i as u32, &[fd.as_raw_fd()])
            {
                let e = CallError::Io(format!("cannot give the ring a connection: {e}"));
                return self.settle(i, Err(e), false, now, run);
            }
        }
        let (addr, len) = (
            (&self.addr.0 as *const libc::sockaddr_storage).cast(),
            self.addr.1,
        );
        let entry = on_conn!(self.files, i, fd.as_raw_fd(), |t| {
            opcode::Connect::new(t, addr, len).build()
        })
        .user_data(tag(i, s.gen, CONNECT));
        s.fd = Some(fd);
        self.push(entry)
    }

    /// Sends the request on slot `i`'s connection and reads its answer.
    fn exchange(&mut self, i: usize, now: Instant, run: &mut Run<'_>) -> Result<(), String> {
        let s = &mut self.slots[i];
        // Room for the answer first: nothing may be queued on a connection the call then drops.
        if let Err(e) = s.inbox.space() {
            return self.settle(i, Err(e), false, now, run);
        }
        s.state = State::Exchanging;
        let raw = s.fd.as_ref().map_or(-1, AsRawFd::as_raw_fd);
        let req = self.fixed.request;
        let send = on_conn!(self.files, i, raw, |t| {
            opcode::Send::new(t, req.as_ptr(), req.len() as u32)
                .flags(libc::MSG_NOSIGNAL | libc::MSG_WAITALL)
                .build()
        })
        .flags(squeue::Flags::IO_LINK | squeue::Flags::SKIP_SUCCESS)
        .user_data(tag(i, s.gen, SEND));
        self.queue(send)?;
        self.receive(i, true)
    }

    /// Reads more of slot `i`'s answer into its inbox, whose room the caller made sure of.
    /// Right after its request (`first`) the answer cannot be there yet: the kernel is told to
    /// wait for it at once rather than try a read that would find nothing.
    fn receive(&mut self, i: usize, first: bool) -> Result<(), String> {
        let s = &mut self.slots[i];
        let raw = s.fd.as_ref().map_or(-1, AsRawFd::as_raw_fd);
        let space = s
            .inbox
            .space()
            .map_err(|e| format!("a receive without room: {e}"))?;
        let len = space.len().min(u32::MAX as usize) as u32;
        let t = tag(i, s.gen, RECV);
        let prio = if first { self.poll_first } else { 0 };
        let buf = space.as_mut_ptr();
        let entry = on_conn!(self.files, i, raw, |f| {
            opcode::Recv::new(f, buf, len).ioprio(prio).build()
        })
        .user_data(t);
        s.recv = Some(t);
        self.push(entry)
    }

    /// Stamps the calls just started with the time they go out (one clock reading for all
    /// of a submission) and their limits.
    fn stamp(&mut self, run: &Run<'_>) {
        let t = Instant::now();
        self.go.clock = t;
        let grace = super::grace_left(run.dispenser, t, run.timeout);
        for i in self.go.pending.drain(..) {
            let s = &mut self.slots[i];
            if !s.unstamped {
                continue;
            }
            s.unstamped = false;
            s.call.sent = t;
            s.call.graced = grace.is_some();
            s.call.limit = grace.unwrap_or(run.timeout);
            s.call.deadline = t + s.call.limit;
            if let Some(c) = self.go.cut {
                s.call.cut(c);
            }
            check_by(&mut self.go.next_check, s.call.deadline);
        }
    }

    /// The load was stopped (seen at `now`): each call in flight has the grace from now at
    /// the most ([`super::cut`]); the next check comes no later than the first of them.
    fn cut(&mut self, now: Instant) {
        self.go.cut = Some(now);
        for s in self.slots.iter_mut().filter(|s| s.timed()) {
            if s.call.cut(now) {
                check_by(&mut self.go.next_check, s.call.deadline);
            }
        }
    }

    /// Ends the calls past their limit as timeouts; sets the next check at the earliest
    /// limit left.
    fn expire(&mut self, now: Instant, run: &mut Run<'_>) -> Result<(), String> {
        self.go.next_check = None;
        for i in 0..self.slots.len() {
            let s = &mut self.slots[i];
            if !s.timed() {
                continue;
            }
            if s.call.deadline > now {
                check_by(&mut self.go.next_check, s.call.deadline);
                continue;
            }
            // Shut down, its operations end at once; closed, its number may be reused,
            // which the kernel's own reference to the socket allows.
            if let Some(fd) = s.fd.take() {
                // SAFETY: shutdown(2) on a descriptor this slot owns.
                unsafe { libc::shutdown(fd.as_raw_fd(), libc::SHUT_RDWR) };
            }
            let limit = s.call.limit;
            self.settle(i, Err(CallError::Timeout(limit)), false, now, run)?;
        }
        Ok(())
    }

    /// One completion.
    fn complete(
        &mut self,
        ud: u64,
        res: i32,
        now: Instant,
        run: &mut Run<'_>,
    ) -> Result<(), String> {
        if let Some(k) = self.go.draining.iter().position(|(t, _)| *t == ud) {
            self.go.draining.swap_remove(k);
            return Ok(());
        }
        let (i, gen, kind) = untag(ud);
        if kind == SEND && (res < 0 || (res as usize) < self.fixed.request.len()) {
            self.link_broken(i, gen);
        }
        let s = &mut self.slots[i];
        if kind == RECV && s.recv == Some(ud) {
            s.recv = None;
        }
        if (s.gen & 0xFF_FFFF) != gen {
            return Ok(()); // an earlier call's: it already ended
        }
        match kind {
            PAUSE => self.start(i, now, run),
            CONNECT if res < 0 => {
                let e = connect_error(self.fixed.addr, os_error(res), self.slots[i].call.limit);
                self.settle(i, Err(e), false, now, run)
            }
            CONNECT => self.exchange(i, now, run),
            SEND if res < 0 => {
                let e = CallError::Io(os_error(res).to_string());
                self.settle(i, Err(e), false, now, run)
            }
            SEND if (res as usize) < self.fixed.request.len() => {
                let e = CallError::Io("the request was sent only in part".into());
                self.settle(i, Err(e), false, now, run)
            }
            SEND => Ok(()),
            RECV if res == -libc::ECANCELED => {
                // Ended by the kernel before it read (a failed send's receive posts nothing).
                let e = CallError::Io("the request could not be sent".into());
                self.settle(i, Err(e), false, now, run)
            }
            RECV if res < 0 => {
                let e = CallError::Io(os_error(res).to_string());
                self.settle(i, Err(e), false, now, run)
            }
            RECV => {
                let eof = res == 0;
                s.inbox.filled(res as usize);
                match s.answer.feed(s.inbox.unread(), eof) {
                    Err(e) => self.settle(i, Err(e), false, now, run),
                    Ok(Fed::Done {
                        used,
                        reply,
                        reusable,
                    }) => {
                        s.inbox.used(used);
                        self.settle(i, Ok(reply), reusable, now, run)
                    }
                    Ok(Fed::More(used)) if !eof => {
                        s.inbox.used(used);
                        if let Err(e) = s.inbox.space() {
                            return self.settle(i, Err(e), false, now, run);
                        }
                        self.receive(i, false)
                    }
                    Ok(Fed::More(_)) => {
                        let e = CallError::Io("connection closed before a response".into());
                        self.settle(i, Err(e), false, now, run)
                    }
                }
            }
            _ => Ok(()),
        }
    }

    /// A send failed (its completion comes only then): the receive linked to it never ran,
    /// and posts no completion either — the kernel fails the rest of a link silently when its
    /// failed head asked to skip its own success (`REQ_F_SKIP_LINK_CQES`, since 5.17, with
    /// the skip itself). So it is no longer waited for, wherever its call left it: still the
    /// slot's, or draining (its buffer never written); one already given up on is waited for
    /// by nothing. (Waiting for it once hung a run whose contender had died.)
    fn link_broken(&mut self, i: usize, gen: u32) {
        let t = tag(i, gen, RECV);
        if self.slots[i].recv == Some(t) {
            self.slots[i].recv = None;
            self.go.in_flight -= 1;
        } else if let Some(k) = self.go.draining.iter().position(|(d, _)| *d == t) {
            self.go.draining.swap_remove(k);
            self.go.in_flight -= 1;
        }
    }

    /// Whether the receive `ud` of slot `i` is counted in flight: its call's, or draining.
    /// Every receive counted is one or the other until its completion; another is one the
    /// run stopped waiting for — given up on ([`Driver::give_up`]), or a failed send's
    /// ([`Driver::link_broken`]) should a kernel post it after all.
    fn awaited(&self, i: usize, ud: u64) -> bool {
        awaited(&self.slots, &self.go.draining, i, ud)
    }

    /// A call ended: what `worker::client` does after `call_once`, then the slot's next call.
    fn settle(
        &mut self,
        i: usize,
        result: Result<Reply, CallError>,
        reusable: bool,
        done: Instant,
        run: &mut Run<'_>,
    ) -> Result<(), String> {
        let s = &mut self.slots[i];
        s.gen = s.gen.wrapping_add(1);
        s.unstamped = false;
        let call = s.call;
        let refused = matches!(result, Err(CallError::Connect { .. }));
        if result.is_err() || !reusable {
            // The connection is dropped; a receive still in flight keeps its buffer.
            s.fd = None;
            match s.recv.take() {
                Some(t) => self.go.draining.push((t, std::mem::take(&mut s.inbox))),
                None => s.inbox.clear(),
            }
            s.answer = (self.fixed.reader)();
        }
        let ended = super::Ended {
            warmup: call.warmup,
            graced: call.graced,
            reconnect: call.reconnect,
            from: call.sent,
            sent: call.sent,
            done,
            partial: 0,
        };
        super::tally(run.rec, run.counter, ended, &result);
        if refused {
            // Do not spin on a server that refuses connections; each attempt is counted.
            s.state = State::Paused;
            let entry = opcode::Timeout::new(&self.pause)
                .build()
                .user_data(tag(i, s.gen, PAUSE));
            return self.push(entry);
        }
        self.start(i, done, run)
    }
}

/// A run's bookkeeping.
struct Going {
    /// The completions of one wait (kept: no allocation a wait).
    cqes: Vec<(u64, i32)>,
    /// Operations submitted (or queued) whose completion has not been reaped.
    in_flight: usize,
    /// Receives of calls that ended before them, with the buffers they write into.
    draining: Vec<(u64, Inbox)>,
    /// No call in flight ends its limit before this.
    next_check: Option<Instant>,
    /// Slots whose call goes out with the next submission.
    pending: Vec<usize>,
    /// The last clock reading.
    clock: Instant,
    /// When the timer in flight fires, and its time as the kernel reads it (when submitted).
    tick: Option<Instant>,
    tick_ts: types::Timespec,
    /// The timer's removal is in flight (the run is over).
    untick: bool,
    /// When the run saw the load stopped (its dispenser cancelled).
    cut: Option<Instant>,
}

impl Slot {
    /// Its call is under way with its limit set (sent, or connecting, and stamped).
    fn timed(&self) -> bool {
        matches!(self.state, State::Connecting | State::Exchanging) && !self.unstamped
    }
}

/// Gives the ring a table of files, one place a slot, with each slot's connection in its
/// place: whether it took them all (else the operations name descriptors).
fn register(ring: &IoUring, slots: &[Slot]) -> bool {
    if std::env::var_os("BAKEOFF_RING_FILES").is_some_and(|v| v == "0") {
        return false;
    }
    let fds: Vec<_> = slots
        .iter()
        .map(|s| s.fd.as_ref().map_or(-1, AsRawFd::as_raw_fd))
        .collect();
    // A place of -1 is an empty one, for a slot whose connection failed.
    ring.submitter().register_files(&fds).is_ok()
}

/// `Going::next_check` (`next`) no later than `t`, a limit of a call in flight.
fn check_by(next: &mut Option<Instant>, t: Instant) {
    *next = Some(next.map_or(t, |c| c.min(t)));
}

/// [`Driver::awaited`], on the driver's parts (its drop borrows the ring beside them).
fn awaited(slots: &[Slot], draining: &[(u64, Inbox)], i: usize, ud: u64) -> bool {
    slots.get(i).is_some_and(|s| s.recv == Some(ud)) || draining.iter().any(|(t, _)| *t == ud)
}

/// Whether a completion counts against `in_flight`: not a send's (which comes only when it
/// failed, and was never counted), nor a cancel's, nor a receive's the run no longer awaits.
fn counts(slots: &[Slot], draining: &[(u64, Inbox)], ud: u64) -> bool {
    match untag(ud) {
        (_, _, SEND | CANCEL) => false,
        (i, _, RECV) => awaited(slots, draining, i, ud),
        _ => true,
    }
}

/// `addr` as the kernel takes it.
fn sockaddr(addr: SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: all-zero bytes are a valid sockaddr_storage.
    let mut ss: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let len = match addr {
        SocketAddr::V4(a) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: a.port().to_be(),
                sin_addr: libc::in_addr {
                    s_addr: u32::from_ne_bytes(a.ip().octets()),
                },
                sin_zero: [0; 8],
            };
            // SAFETY: sockaddr_storage is larger than sockaddr_in and suitably aligned.
            unsafe { std::ptr::write((&mut ss as *mut libc::sockaddr_storage).cast(), sin) };
            std::mem::size_of::<libc::sockaddr_in>()
        }
        SocketAddr::V6(a) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: a.port().to_be(),
                sin6_flowinfo: a.flowinfo(),
                sin6_addr: libc::in6_addr {
                    s6_addr: a.ip().octets(),
                },
                sin6_scope_id: a.scope_id(),
            };
            // SAFETY: as above, for sockaddr_in6.
            unsafe { std::ptr::write((&mut ss as *mut libc::sockaddr_storage).cast(), sin6) };
            std::mem::size_of::<libc::sockaddr_in6>()
        }
    };
    (ss, len as libc::socklen_t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::recorder::Recorder;
    use crate::protocol::CallError;

    /// An answer that never ends: the tests' server never sends one.
    struct Never;
    impl Answer for Never {
        fn feed(&mut self, bytes: &[u8], _eof: bool) -> Result<Fed, CallError> {
            Ok(Fed::More(bytes.len()))
        }
    }

    /// Runs `driver` once for `calls` calls, each limited to `timeout`: what was recorded
    /// and how many calls were counted.
    fn run_calls(driver: &mut Driver<'_>, calls: u64, timeout: Duration) -> (Recorder, u64) {
        crate::load::run_closed(calls, timeout, |run| driver.run(run))
    }

    /// Runs `driver` once with no calls to make.
    fn run_none(driver: &mut Driver<'_>) {
        run_calls(driver, 0, Duration::from_secs(2));
    }

    /// Runs `body` on a thread of its own, bounded: a minute (a bound, not a speed — without
    /// the give-up its runs never return).
    fn within_a_minute(body: impl FnOnce() + Send + 'static) {
        let (tx, rx) = std::sync::mpsc::channel();
        let h = std::thread::spawn(move || {
            body();
            let _ = tx.send(());
        });
        match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(()) | Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => h.join().unwrap(),
            Err(e) => panic!("the runs did not end: {e}"),
        }
    }

    /// A listener on this machine and a driver with one connection to it; `None` on a kernel
    /// that gives no io_uring (the test then has nothing to test).
    fn one_client() -> Option<(std::net::TcpListener, Driver<'static>)> {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let Some(ring) = open(1) else {
            eprintln!("skipped: this kernel gives no io_uring");
            return None;
        };
        let conns = connect(addr, 1, Duration::from_secs(5), &Default::default());
        assert!(conns[0].is_ok());
        let fixed = Fixed {
            addr,
            request: b"GET / HTTP/1.1\r\n\r\n",
            reader: Box::new(|| Box::new(Never)),
        };
        Some((listener, Driver::new(ring, fixed, conns)))
    }

    #[test]
    fn a_slot_whose_connection_failed_gets_its_place_in_the_table_when_it_connects() {
        // Two slots, the second without a connection: the table is registered with an
        // empty place for it, which its first call's connection then fills.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let Some(ring) = open(2) else {
            eprintln!("skipped: this kernel gives no io_uring");
            return;
        };
        let server = std::thread::spawn(move || {
            use std::io::{Read, Write};
            let serve = |mut s: std::net::TcpStream| {
                let mut buf = [0u8; 4096];
                while s.read(&mut buf).is_ok_and(|n| n > 0) {
                    s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
                        .unwrap();
                }
            };
            let accepted: Vec<_> = (0..2).map(|_| listener.accept().unwrap().0).collect();
            let handles: Vec<_> = accepted
                .into_iter()
                .map(|s| std::thread::spawn(move || serve(s)))
                .collect();
            handles.len()
        });
        let mut conns = connect(addr, 1, Duration::from_secs(5), &Default::default());
        conns.push(Err(CallError::Io("not connected".into())));
        let fixed = Fixed {
            addr,
            request: b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
            reader: Box::new(|| Box::new(crate::protocol::http1::Http1Answer::new(false, false))),
        };
        let mut driver = Driver::new(ring, fixed, conns);
        assert!(driver.files, "the table was refused");
        let (rec, counted) = run_calls(&mut driver, 6, Duration::from_secs(20));
        assert_eq!(counted, 6);
        let outcomes: Vec<_> = rec
            .outcomes()
            .into_iter()
            .map(|o| (o.kind, o.count))
            .collect();
        assert_eq!(outcomes, [("http".to_string(), 6)]);
        assert_eq!(rec.successes, 6);
        assert_eq!(rec.reconnects, 1);
        drop(driver);
        assert_eq!(server.join().unwrap(), 2);
    }

    #[test]
    fn a_failed_send_ends_its_call_and_its_receive_at_once() {
        within_a_minute(a_failed_send);
    }

    fn a_failed_send() {
        let Some((listener, mut driver)) = one_client() else {
            return;
        };
        // The server resets the connection (a linger of zero: its close sends RST), as a
        // contender that dies does; the reset is waited for on this end (bounded).
        let (peer, _) = listener.accept().unwrap();
        let linger = libc::linger {
            l_onoff: 1,
            l_linger: 0,
        };
        // SAFETY: setsockopt(2) with a pointer to a linger that outlives the call.
        let r = unsafe {
            libc::setsockopt(
                peer.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_LINGER,
                (&linger as *const libc::linger).cast(),
                std::mem::size_of::<libc::linger>() as libc::socklen_t,
            )
        };
        assert_eq!(r, 0);
        drop(peer);
        let mut pfd = libc::pollfd {
            fd: driver.slots[0].fd.as_ref().unwrap().as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: poll(2) on one descriptor the driver's slot owns.
        let n = unsafe { libc::poll(&mut pfd, 1, 5000) };
        assert!(n == 1 && pfd.revents & (libc::POLLERR | libc::POLLHUP) != 0);
        // One call: its send fails on the reset connection.
        let (rec, counted) = run_calls(&mut driver, 1, Duration::from_secs(30));
        assert_eq!(counted, 1);
        let failed: Vec<_> = rec.outcomes().into_iter().filter(|o| !o.success).collect();
        assert_eq!(failed.len(), 1, "{:?}", rec.outcomes());
        assert_eq!(failed[0].kind, "io_error");
        // Its receive, which the kernel never ran and never reports, was not waited for:
        // nothing was left to drain or to give up on a second later, and its completion,
        // should one come after all, would be passed over.
        assert_eq!(driver.go.in_flight, 0);
        assert!(driver.go.draining.is_empty());
        assert!(!driver.awaited(0, tag(0, 0, RECV)));
    }

    #[test]
    fn a_completion_of_a_receive_not_counted_is_passed_over() {
        within_a_minute(a_receive_not_counted);
    }

    fn a_receive_not_counted() {
        // A server that accepts and never answers: the one call ends at its timeout.
        let Some((listener, mut driver)) = one_client() else {
            return;
        };
        // A completion tagged as a receive of the slot's, of a call long gone, that the run
        // never counted (what a failed send's receive would be, were a kernel to post it):
        // a no-op submitted with the run's first wait, which ends at once.
        let stray = opcode::Nop::new().build().user_data(tag(0, 77, RECV));
        // SAFETY: a no-op points to no buffer.
        unsafe { driver.ring.submission().push(&stray).unwrap() };
        let (rec, counted) = run_calls(&mut driver, 1, Duration::from_millis(200));
        // Taken off the count, it would have ended the run with the call's receive still in
        // flight and the call never counted.
        assert_eq!(counted, 1);
        let outcomes = rec.outcomes();
        assert!(
            outcomes.len() == 1 && outcomes[0].kind == "timeout",
            "{outcomes:?}"
        );
        assert_eq!(driver.go.in_flight, 0);
        assert!(driver.go.draining.is_empty());
        drop(listener);
    }

    #[test]
    fn a_receive_that_never_ends_is_given_up_on() {
        within_a_minute(a_receive_that_never_ends);
    }

    fn a_receive_that_never_ends() {
        // A server that accepts and never answers, on this machine only.
        let Some((listener, mut driver)) = one_client() else {
            return;
        };
        // A real receive on the open connection, which no answer will end, left behind by
        // a call that ended before it — its connection kept open, as a lost shutdown would.
        driver.receive(0, true).unwrap();
        let t = driver.slots[0].recv.take().unwrap();
        let inbox = std::mem::take(&mut driver.slots[0].inbox);
        driver.go.draining.push((t, inbox));
        run_none(&mut driver);
        assert_eq!(driver.go.in_flight, 0);
        assert!(driver.go.draining.is_empty());
        // Given up on: no longer awaited.
        assert!(!driver.awaited(0, t));
        // Its cancel ends it; the completion, when it comes, is let pass uncounted.
        let mut cq = Vec::new();
        for _ in 0..100 {
            let _ = driver.wait_at_most(Duration::from_millis(50));
            let mut c = driver.ring.completion();
            c.sync();
            cq.extend(c.map(|c| c.user_data()));
            if cq.contains(&t) {
                break;
            }
        }
        assert!(cq.contains(&t), "{cq:?}");
        for ud in cq {
            assert!(!counts(&driver.slots, &driver.go.draining, ud));
        }
        assert!(!driver.awaited(0, t));
        // A receive counted in flight that the kernel has no trace of (how the run once
        // waited for ever, on a failed send's receive before `link_broken`): the same.
        driver.go.in_flight += 1;
        driver.go.draining.push((tag(0, 999, RECV), Inbox::new()));
        run_none(&mut driver);
        assert_eq!(driver.go.in_flight, 0);
        drop(listener);
    }
}
