//! What-if TCP_NODELAY, forced from outside the server (docs/what-if.md): bakeoff duplicates
//! a process's sockets with `pidfd_open` + `pidfd_getfd` (Linux ≥ 5.6; needs ptrace rights
//! over the process — root, or an ancestor under Yama `ptrace_scope` ≤ 1), sets the option on
//! its copy (which is the same open socket) and closes the copy. Nothing else of the process
//! changes, and it works for any binary, static or not.
//!
//! Listening sockets are found from `/proc/PID/fd` and `/proc/PID/net/tcp{,6}` (state LISTEN,
//! on the ports asked for): a socket accepted later inherits TCP_NODELAY from its listener on
//! Linux. A server that clears the option itself on each accepted socket defeats that, so the
//! established sockets on those ports can be taken as well, once the client has connected
//! and before it sends. For each socket the option's value before is kept: a server that
//! turned it off on purpose is worth knowing.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// One socket the option was set on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Socket {
    pub pid: i32,
    pub fd: i32,
    /// The local port.
    pub port: u16,
    /// `listen` or `established`.
    pub state: String,
    /// TCP_NODELAY before bakeoff set it.
    pub was_on: bool,
}

/// What forcing did: the sockets set, and why some could not be (none found, no permission).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Forced {
    pub sockets: Vec<Socket>,
    pub problems: Vec<String>,
}

impl Forced {
    /// Listening sockets set (so later connections start with the option on).
    pub fn listeners(&self) -> usize {
        self.sockets.iter().filter(|s| s.state == "listen").count()
    }

    /// Established sockets on which the server had the option off although its listener
    /// had it on (or was forced on): it clears it itself after accepting.
    pub fn cleared_by_server(&self) -> usize {
        self.sockets
            .iter()
            .filter(|s| s.state == "established" && !s.was_on)
            .count()
    }

    /// `set TCP_NODELAY on 3 sockets (1 listening, 2 established; the server had turned it
    /// off on 2 after accepting)`, and what went wrong.
    pub fn summary(&self) -> String {
        let listening = self.listeners();
        let established = self.sockets.len() - listening;
        let mut s = format!(
            "set TCP_NODELAY on {} socket{} ({listening} listening, {established} established",
            self.sockets.len(),
            if self.sockets.len() == 1 { "" } else { "s" }
        );
        let cleared = self.cleared_by_server();
        if cleared > 0 {
            s.push_str(&format!(
                "; the server had turned it off itself on {cleared} after accepting"
            ));
        }
        s.push(')');
        if !self.problems.is_empty() {
            s.push_str(&format!("; {}", self.problems.join("; ")));
        }
        s
    }

    pub fn merge(&mut self, other: Forced) {
        self.sockets.extend(other.sockets);
        for p in other.problems {
            if !self.problems.contains(&p) {
                self.problems.push(p);
            }
        }
    }
}

/// `pid` and every process below it (a server's workers hold its sockets too). Only a
/// process that exists and its real descendants: PID 0 and 1 (every process on the machine
/// descends from them) are refused.
pub fn with_children(pid: i32) -> Result<Vec<i32>, String> {
    if pid <= 1 {
        return Err(format!(
            "pid {pid} is not a server bakeoff may change: every process descends from it; give the server's own PID"
        ));
    }
    if crate::sys::proc_stat(pid).is_none_or(|s| s.state == 'Z') {
        return Err(format!("no process has pid {pid}"));
    }
    let mut out = vec![pid];
    out.extend(crate::sys::descendants(pid));
    Ok(out)
}

const LISTEN: u8 = 0x0A;
const ESTABLISHED: u8 = 0x01;

/// Sets TCP_NODELAY on the sockets of `pids` bound to one of `ports`: the listening ones, or
/// with `established` the established ones (the server's side of connections it accepted).
/// `what` names the processes in messages.
pub fn force(pids: &[i32], ports: &[u16], established: bool, what: &str) -> Forced {
    let mut out = Forced::default();
    let mut any_found = false;
    for (pid, wanted) in find(pids, ports, established, what, &mut out.problems) {
        any_found = true;
        match set_on(pid, &wanted) {
            Ok(sockets) => out.sockets.extend(sockets),
            Err(e) => out.problems.push(format!("{what} (pid {pid}): {e}")),
        }
    }
    if !any_found && out.problems.is_empty() {
        out.problems.push(format!(
            "{what} has no {} socket on port{} {} (pids {pids:?}): is something that is not one of its processes (a proxy) listening there?",
            if established { "established" } else { "listening" },
            if ports.len() == 1 { "" } else { "s" },
            ports
                .iter()
                .map(u16::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    out
}

/// Waits (at most `limit`) until the processes `pids` hold `connections` established
/// sockets on `ports` (connections they accepted), without touching them: a server accepts
/// in its own time, on a loaded host after the client's connect returned, and forcing the
/// option before then would miss those sockets.
pub fn wait_accepted(pids: &[i32], ports: &[u16], connections: usize, limit: Duration) {
    let until = Instant::now() + limit;
    let held = || -> usize {
        find(pids, ports, true, "", &mut Vec::new())
            .iter()
            .map(|(_, w)| w.len())
            .sum()
    };
    while held() < connections && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A socket found: (fd in its process, local port, `listen` or `established`).
type Found = (i32, u16, &'static str);

/// The sockets of each of `pids` bound to one of `ports`, listening or (with `established`)
/// established: (pid, [(fd, port, state)]), for the pids that have any.
fn find(
    pids: &[i32],
    ports: &[u16],
    established: bool,
    what: &str,
    problems: &mut Vec<String>,
) -> Vec<(i32, Vec<Found>)> {
    let mut out = Vec::new();
    for &pid in pids {
        let table = match tcp_table(pid) {
            Ok(t) => t,
            Err(e) => {
                problems.push(format!(
                    "cannot read the sockets of {what} (pid {pid}): {e}"
                ));
                continue;
            }
        };
        let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
            continue; // it exited, or is not ours to look at (said below if nothing is found)
        };
        let mut wanted = Vec::new();
        for entry in fds.flatten() {
            let Some(fd) = entry
                .file_name()
                .to_str()
                .and_then(|s| s.parse::<i32>().ok())
            else {
                continue;
            };
            let Ok(link) = std::fs::read_link(entry.path()) else {
                continue;
            };
            let Some(inode) = socket_inode(&link.to_string_lossy()) else {
                continue;
            };
            let Some(&(port, state)) = table.get(&inode) else {
                continue;
            };
            let state = match state {
                LISTEN if !established => "listen",
                ESTABLISHED if established => "established",
                _ => continue,
            };
            if ports.contains(&port) {
                wanted.push((fd, port, state));
            }
        }
        if !wanted.is_empty() {
            out.push((pid, wanted));
        }
    }
    out
}

/// `socket:[12345]` → 12345.
fn socket_inode(link: &str) -> Option<u64> {
    link.strip_prefix("socket:[")?
        .strip_suffix(']')?
        .parse()
        .ok()
}

/// The TCP sockets (v4 and v6) of the process's network namespace: inode → (local port,
/// state).
fn tcp_table(pid: i32) -> std::io::Result<BTreeMap<u64, (u16, u8)>> {
    let mut out = BTreeMap::new();
    let mut read_any = false;
    for file in ["tcp", "tcp6"] {
        let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/net/{file}")) else {
            continue;
        };
        read_any = true;
        out.extend(parse_tcp_table(&text));
    }
    if read_any {
        Ok(out)
    } else {
        Err(std::io::Error::other("no /proc/PID/net/tcp"))
    }
}

/// `/proc/net/tcp` lines: `sl local rem st tx:rx tr:when retrnsmt uid timeout inode …`.
fn parse_tcp_table(text: &str) -> Vec<(u64, (u16, u8))> {
    text.lines()
        .skip(1)
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            let port = u16::from_str_radix(f.get(1)?.rsplit_once(':')?.1, 16).ok()?;
            let state = u8::from_str_radix(f.get(3)?, 16).ok()?;
            let inode = f.get(9)?.parse().ok()?;
            Some((inode, (port, state)))
        })
        .collect()
}

/// Takes each of `fds` of `pid`, sets the option, closes the copy.
fn set_on(pid: i32, fds: &[(i32, u16, &str)]) -> Result<Vec<Socket>, String> {
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
    let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) } as i32;
    if pidfd < 0 {
        return Err(explain(std::io::Error::last_os_error(), "pidfd_open"));
    }
    let mut out = Vec::new();
    let mut first_error = None;
    for &(fd, port, state) in fds {
        // SAFETY: pidfd_getfd takes a pidfd, the target's descriptor number and flags, and
        // returns a new descriptor of ours or -1.
        let copy = unsafe { libc::syscall(libc::SYS_pidfd_getfd, pidfd, fd, 0) } as i32;
        if copy < 0 {
            first_error
                .get_or_insert_with(|| explain(std::io::Error::last_os_error(), "pidfd_getfd"));
            continue;
        }
        let was = get_nodelay(copy);
        let set = set_nodelay(copy);
        // SAFETY: `copy` is our own descriptor, closed once.
        unsafe { libc::close(copy) };
        match (was, set) {
            (Ok(was_on), Ok(())) => out.push(Socket {
                pid,
                fd,
                port,
                state: state.to_string(),
                was_on,
            }),
            (Err(e), _) | (_, Err(e)) => {
                first_error.get_or_insert_with(|| format!("setting TCP_NODELAY: {e}"));
            }
        }
    }
    // SAFETY: our own descriptor, closed once.
    unsafe { libc::close(pidfd) };
    match (out.is_empty(), first_error) {
        (true, Some(e)) => Err(e),
        _ => Ok(out),
    }
}

fn explain(e: std::io::Error, call: &str) -> String {
    match e.raw_os_error() {
        Some(libc::EPERM) | Some(libc::EACCES) => format!(
            "{call}: no permission to take its sockets ({e}); that needs ptrace rights over the process: run bakeoff as root, or as the process's owner and ancestor with Yama's kernel.yama.ptrace_scope at 0 or 1"
        ),
        Some(libc::ENOSYS) => {
            format!("{call}: this kernel does not have it ({e}); Linux 5.6 or later does")
        }
        Some(libc::ESRCH) => format!("{call}: the process is gone ({e})"),
        _ => format!("{call}: {e}"),
    }
}

fn get_nodelay(fd: i32) -> std::io::Result<bool> {
    let mut v: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: `v` and `len` are valid for writing an int.
    let r = unsafe {
        libc::getsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_NODELAY,
            (&mut v as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    if r < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(v != 0)
}

fn set_nodelay(fd: i32) -> std::io::Result<()> {
    let v: libc::c_int = 1;
    // SAFETY: `v` is a valid int of the length given.
    let r = unsafe {
        libc::setsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_NODELAY,
            (&v as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if r < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::{TcpListener, TcpStream};

    #[test]
    fn the_tcp_table_reads_ports_states_and_inodes() {
        let text = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 123456 1 0000000000000000 100 0 0 10 0\n   1: 0100007F:1F90 0100007F:C350 01 00000000:00000000 00:00000000 00000000     0        0 654321 1 0000000000000000 20 4 30 10 -1\n";
        assert_eq!(
            parse_tcp_table(text),
            [(123456, (8080, LISTEN)), (654321, (8080, ESTABLISHED))]
        );
        assert_eq!(socket_inode("socket:[42]"), Some(42));
        assert_eq!(socket_inode("pipe:[42]"), None);
    }

    /// This process's own sockets, taken through a pidfd like any other process's: the
    /// listener and, separately, an accepted socket whose option was cleared.
    #[test]
    fn a_listener_and_an_accepted_socket_get_the_option() {
        use std::os::fd::AsRawFd;
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let me = std::process::id() as i32;
        let f = force(&[me], &[port], false, "this test");
        if f.problems.iter().any(|p| p.contains("no permission")) {
            eprintln!("SKIPPED: {:?}", f.problems);
            return;
        }
        assert_eq!(f.problems, Vec::<String>::new());
        assert_eq!(f.listeners(), 1);
        assert!(!f.sockets[0].was_on);
        assert!(
            get_nodelay(l.as_raw_fd()).unwrap(),
            "the listener itself has it now"
        );
        // Linux: the accepted socket inherits it.
        let mut c = TcpStream::connect(("127.0.0.1", port)).unwrap();
        let (mut a, _) = l.accept().unwrap();
        assert!(a.nodelay().unwrap());
        // A server that clears it: found on the established socket, set again.
        a.set_nodelay(false).unwrap();
        let f = force(&[me], &[port], true, "this test");
        let est: Vec<&Socket> = f
            .sockets
            .iter()
            .filter(|s| s.state == "established")
            .collect();
        // The client's socket is on another local port; only the accepted one matches.
        assert_eq!(est.len(), 1, "{f:?}");
        assert!(!est[0].was_on);
        assert_eq!(f.cleared_by_server(), 1);
        assert!(a.nodelay().unwrap());
        c.write_all(b"x").unwrap();
        let mut b = [0u8; 1];
        a.read_exact(&mut b).unwrap();
        // Nothing on a port nobody listens on: said, not silently ignored.
        drop(l);
        let f = force(&[me], &[1], false, "this test");
        assert!(f.sockets.is_empty());
        assert!(
            f.problems[0].contains("has no listening socket on port 1"),
            "{f:?}"
        );
    }
}
