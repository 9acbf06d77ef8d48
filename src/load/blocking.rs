//! The load engine's way to drive fixed calls (`Protocol::fixed`, a closed loop) on a load
//! thread with one connection: a `send` that does not wait and a `recv` that does, a request —
//! what the minimal blocking C client of `benches/blocking.c` does, the least any client that
//! waits for each answer can. With one connection a ring has nothing to batch, and its
//! submission and the poll it arms for each receive are kernel work this way does not do. The
//! calls, their outcomes and what is recorded are `worker::client`'s and the ring's, step for
//! step: a duration's grace, timeouts, reconnects, a pause after a refused connection.
//!
//! A call's limit bounds it. The request goes out without waiting (should the send buffer be
//! full, `poll` waits for room within what is left of the limit), and each read waits with no
//! timeout of the kernel's: a watchdog ends it with a signal if it still waits when what is
//! left of the limit, or a [`super::CUT_CHECK`], has passed ([`super::watch`]; a socket's
//! receive timeout would arm and delete a kernel timer every wait).

use std::os::fd::{AsRawFd, OwnedFd};
use std::time::{Duration, Instant};

use super::{ring, watch::Watch, Run};
use crate::protocol::{Answer, CallError, Fed, Fixed, Inbox, Reply};

/// Whether a load thread with `clients` connections of fixed calls uses this way:
/// one connection, unless `BAKEOFF_LOAD_IO` asks for the ring (`io_uring`) or the runtime
/// (`epoll`).
pub(super) fn suits(clients: usize) -> bool {
    clients == 1
        && !std::env::var_os("BAKEOFF_LOAD_IO").is_some_and(|v| v == "io_uring" || v == "epoll")
}

/// One connection and what a run needs to call on it.
pub(super) struct Client<'a> {
    fixed: Fixed<'a>,
    conn: Option<OwnedFd>,
    inbox: Inbox,
    answer: Box<dyn Answer>,
    /// Ends a read that waits too long.
    watch: Watch,
}

impl<'a> Client<'a> {
    /// A client on `conn`, the connection opened before the run (or how it failed: the first
    /// call then opens one), run by the thread `watch` watches.
    pub(super) fn new(fixed: Fixed<'a>, conn: ring::Conn, watch: Watch) -> Client<'a> {
        Client {
            conn: conn.ok(),
            inbox: Inbox::new(),
            answer: (fixed.reader)(),
            fixed,
            watch,
        }
    }

    /// What reads the CPU time of the client's watchdog.
    pub(super) fn watchdog(&self) -> super::watch::Meter {
        self.watch.meter()
    }

    /// One run: calls until the dispenser gives no more. The connection stays open for the
    /// next run.
    pub(super) fn run(&mut self, run: &mut Run<'_>) -> Result<(), String> {
        loop {
            // One clock reading serves the dispenser's stop check and the send time.
            let sent = Instant::now();
            let Some(ticket) = run.dispenser.next_at(sent) else {
                return Ok(());
            };
            let reconnect = self.conn.is_none();
            let grace = super::grace_left(run.dispenser, sent, run.timeout);
            let mut bound = Bound {
                sent,
                limit: grace.unwrap_or(run.timeout),
                graced: grace.is_some(),
                checked: sent,
            };
            let outcome = self.call(&mut bound, run.dispenser);
            let done = Instant::now();
            let (result, reusable) = match outcome {
                Ok((reply, reusable)) => (Ok(reply), reusable),
                Err(e) => (Err(e), false),
            };
            let ended = super::Ended {
                warmup: ticket.warmup,
                graced: bound.graced,
                reconnect,
                from: sent,
                sent,
                done,
                partial: 0,
            };
            super::tally(run.rec, run.counter, ended, &result);
            if result.is_err() || !reusable {
                // What arrived on the connection goes with it.
                self.conn = None;
                self.inbox.clear();
                self.answer = (self.fixed.reader)();
            }
            if matches!(result, Err(CallError::Connect { .. })) {
                // Do not spin on a server that refuses connections; each attempt is counted.
                std::thread::sleep(super::REFUSED_PAUSE);
            }
        }
    }

    /// One call, ended by its `bound`: its reply, and whether the connection can carry
    /// another. Waits are cut into [`super::CUT_CHECK`]s to see a stop (`dispenser`
    /// cancelled), which cuts the bound to the grace.
    fn call(
        &mut self,
        bound: &mut Bound,
        dispenser: &super::pacing::Dispenser,
    ) -> Result<(Reply, bool), CallError> {
        let conn = match &mut self.conn {
            Some(c) => c,
            None => {
                // Waited for in checks, as the answer is: a server that drops new
                // connections' SYNs would otherwise hold a stop for the whole limit.
                let limit = bound.limit;
                let fd = ring::connect_within(self.fixed.addr, 1, limit, || {
                    Ok(bound.left(dispenser)?.min(super::CUT_CHECK))
                })
                .pop()
                .expect("one connection asked for")?;
                self.conn.insert(fd)
            }
        };
        // Room for the answer first: nothing is sent on a connection the call then drops.
        self.inbox.space()?;
        let fd = conn.as_raw_fd();
        // What is left of the limit when the answer is first waited for: all of it, unless
        // the send had to wait.
        let mut left = bound.limit;
        let req = self.fixed.request;
        let mut off = 0;
        while off < req.len() {
            let rest = &req[off..];
            // SAFETY: send(2) from a live slice, on a descriptor the connection owns.
            let n = unsafe {
                libc::send(
                    fd,
                    rest.as_ptr().cast(),
                    rest.len(),
                    libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT,
                )
            };
            if n >= 0 {
                off += n as usize;
                continue;
            }
            let e = std::io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::EINTR) => {}
                Some(libc::EAGAIN) => {
                    left = bound.left(dispenser)?;
                    room_within(fd, left.min(super::CUT_CHECK))?;
                    left = bound.left(dispenser)?;
                }
                _ => return Err(CallError::Io(e.to_string())),
            }
        }
        loop {
            let space = self.inbox.space()?;
            self.watch.arm(bound.checked + left.min(super::CUT_CHECK));
            // SAFETY: recv(2) into the inbox's free space, on a descriptor the connection owns.
            let n = unsafe { libc::recv(fd, space.as_mut_ptr().cast(), space.len(), 0) };
            self.watch.disarm();
            if n < 0 {
                let e = std::io::Error::last_os_error();
                if !matches!(e.raw_os_error(), Some(libc::EAGAIN | libc::EINTR)) {
                    return Err(CallError::Io(e.to_string()));
                }
                // The watchdog ended the wait (or another signal came): the limit decides.
                left = bound.left(dispenser)?;
                continue;
            }
            let eof = n == 0;
            self.inbox.filled(n as usize);
            match self.answer.feed(self.inbox.unread(), eof)? {
                Fed::Done {
                    used,
                    reply,
                    reusable,
                } => {
                    self.inbox.used(used);
                    return Ok((reply, reusable));
                }
                Fed::More(used) if !eof => {
                    self.inbox.used(used);
                    left = bound.left(dispenser)?;
                }
                Fed::More(_) => {
                    return Err(CallError::Io("connection closed before a response".into()))
                }
            }
        }
    }
}

/// How long a call may take: `limit` from when it was `sent`, a grace when `graced`; when
/// what is left of it was last `checked`.
struct Bound {
    sent: Instant,
    limit: Duration,
    graced: bool,
    checked: Instant,
}

impl Bound {
    /// What is left of the limit (never zero), or the call's timeout when nothing is. A stop
    /// seen first here cuts the limit to the grace from now ([`super::cut`]).
    fn left(&mut self, dispenser: &super::pacing::Dispenser) -> Result<Duration, CallError> {
        let now = Instant::now();
        self.checked = now;
        if !self.graced && dispenser.is_cancelled() {
            if let Some(limit) = super::cut(self.sent, self.limit, now) {
                (self.limit, self.graced) = (limit, true);
            }
        }
        let left = (self.sent + self.limit).saturating_duration_since(now);
        if left.is_zero() {
            return Err(CallError::Timeout(self.limit));
        }
        Ok(left)
    }
}

/// Waits until `fd` has room to send, for `left` at most (rounded up to a millisecond), or
/// until it has not: the caller tries again.
fn room_within(fd: libc::c_int, left: Duration) -> Result<(), CallError> {
    let mut pfd = libc::pollfd {
        fd,
        events: libc::POLLOUT,
        revents: 0,
    };
    let ms = left.as_nanos().div_ceil(1_000_000).min(i32::MAX as u128) as i32;
    // SAFETY: poll(2) on one pollfd that outlives the call.
    let r = unsafe { libc::poll(&mut pfd, 1, ms) };
    if r < 0 {
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(CallError::Io(e.to_string()));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::recorder::Recorder;
    use crate::protocol::http1::Http1Answer;
    use std::io::{Read, Write};
    use std::net::{SocketAddr, TcpListener};

    const GET: &[u8] = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n";

    fn fixed(addr: SocketAddr, request: &'static [u8]) -> Fixed<'static> {
        Fixed {
            addr,
            request,
            reader: Box::new(|| Box::new(Http1Answer::new(false, false))),
        }
    }

    /// Runs a client sending `request` to `addr` on `conn` for `calls` calls, each limited to
    /// `timeout`, on a thread of its own bounded by a minute (a bound, not a speed): what was
    /// recorded, how many calls were counted, and how long the run took.
    fn run_calls(
        addr: SocketAddr,
        request: &'static [u8],
        conn: ring::Conn,
        calls: u64,
        timeout: Duration,
    ) -> (Recorder, u64, Duration) {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let watch = Watch::start().expect("a watchdog");
            let mut client = Client::new(fixed(addr, request), conn, watch);
            let started = Instant::now();
            let (rec, counted) = crate::load::run_closed(calls, timeout, |run| client.run(run));
            let _ = tx.send((rec, counted, started.elapsed()));
        });
        rx.recv_timeout(Duration::from_secs(60))
            .expect("the run ended within a minute")
    }

    fn kinds(rec: &Recorder) -> Vec<(String, u64)> {
        rec.outcomes()
            .into_iter()
            .map(|o| (o.kind, o.count))
            .collect()
    }

    /// Reads requests off `s` until `n` are in (each ends with an empty line).
    fn read_requests(s: &mut std::net::TcpStream, n: usize) {
        let mut seen = Vec::new();
        let mut buf = [0u8; 4096];
        while seen.windows(4).filter(|w| w == b"\r\n\r\n").count() < n {
            let k = s.read(&mut buf).unwrap();
            assert!(k > 0, "the client closed early");
            seen.extend_from_slice(&buf[..k]);
        }
    }

    #[test]
    fn a_long_answer_in_many_pieces_is_read_whole_and_the_connection_kept() {
        // Three answers of 300 kB each, written in pieces of 7 kB with pauses between them, on
        // one connection: each call needs many reads, and the next goes on the same connection.
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let body = vec![b'x'; 300_000];
            for _ in 0..3 {
                read_requests(&mut s, 1);
                let mut answer =
                    format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", body.len())
                        .into_bytes();
                answer.extend_from_slice(&body);
                for piece in answer.chunks(7_000) {
                    s.write_all(piece).unwrap();
                    std::thread::sleep(Duration::from_micros(200));
                }
            }
            // A second connection would be a reconnect: none is expected.
            listener.set_nonblocking(true).unwrap();
            listener.accept().is_err()
        });
        let conn = ring::connect(addr, 1, Duration::from_secs(5), &Default::default())
            .pop()
            .unwrap();
        let (rec, counted, _) = run_calls(addr, GET, conn, 3, Duration::from_secs(20));
        assert_eq!(counted, 3);
        assert_eq!(kinds(&rec), [("http".to_string(), 3)]);
        assert_eq!(rec.reconnects, 0);
        assert!(
            server.join().unwrap(),
            "the client opened a second connection"
        );
    }

    #[test]
    fn a_call_never_answered_ends_at_its_limit_and_the_next_reconnects() {
        // The server reads each request and never answers; every connection it accepts is
        // kept open until the test ends.
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let server = std::thread::spawn(move || {
            let mut held = Vec::new();
            for _ in 0..2 {
                let (mut s, _) = listener.accept().unwrap();
                read_requests(&mut s, 1);
                held.push(s);
            }
            let _ = done_rx.recv();
            held.len()
        });
        let conn = ring::connect(addr, 1, Duration::from_secs(5), &Default::default())
            .pop()
            .unwrap();
        let limit = Duration::from_millis(150);
        let (rec, counted, took) = run_calls(addr, GET, conn, 2, limit);
        done_tx.send(()).unwrap();
        assert_eq!(server.join().unwrap(), 2);
        assert_eq!(counted, 2);
        assert_eq!(kinds(&rec), [("timeout".to_string(), 2)]);
        // A call is not cut short before its limit; the second opened a connection.
        assert!(took >= 2 * limit, "{took:?}");
        assert_eq!(rec.reconnects, 1);
    }

    #[test]
    fn a_request_the_server_never_reads_ends_at_its_limit() {
        // A request far larger than the socket buffers, to a server that accepts and never
        // reads: the send finds no room, waits for it within the limit, and the call ends as a
        // timeout rather than waiting for ever.
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let big: &'static [u8] = Box::leak(vec![b'a'; 64 << 20].into_boxed_slice());
        let conn = ring::connect(addr, 1, Duration::from_secs(5), &Default::default())
            .pop()
            .unwrap();
        let limit = Duration::from_millis(200);
        let (rec, counted, took) = run_calls(addr, big, conn, 1, limit);
        assert_eq!(counted, 1);
        assert_eq!(kinds(&rec), [("timeout".to_string(), 1)]);
        assert!(took >= limit, "{took:?}");
        drop(listener);
    }

    #[test]
    fn a_refused_connection_is_counted_and_followed_by_a_pause() {
        // A port nothing listens on any more: every call's connection is refused.
        let addr = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let not_opened = Err(CallError::Io("not opened".into()));
        let (rec, counted, took) = run_calls(addr, GET, not_opened, 3, Duration::from_secs(2));
        assert_eq!(counted, 3);
        assert_eq!(kinds(&rec), [("connect_error".to_string(), 3)]);
        assert!(took >= 3 * super::super::REFUSED_PAUSE, "{took:?}");
    }

    #[test]
    fn a_connection_closed_before_its_answer_fails_the_call() {
        // The server reads the request and closes: the call fails as a connection error, and
        // the next call opens a connection of its own and is answered.
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            read_requests(&mut s, 1);
            drop(s);
            let (mut s, _) = listener.accept().unwrap();
            read_requests(&mut s, 1);
            s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                .unwrap();
        });
        let conn = ring::connect(addr, 1, Duration::from_secs(5), &Default::default())
            .pop()
            .unwrap();
        let (rec, counted, _) = run_calls(addr, GET, conn, 2, Duration::from_secs(20));
        assert_eq!(counted, 2);
        let outcomes = rec.outcomes();
        assert_eq!(
            kinds(&rec),
            [("http".to_string(), 1), ("io_error".to_string(), 1)],
            "{outcomes:?}"
        );
        assert!(format!("{outcomes:?}").contains("closed before a response"));
        assert_eq!(rec.reconnects, 1);
        server.join().unwrap();
    }
}
