//! A contender's life for one repetition: fresh state folder, free ports, setup commands,
//! members spawned in their own process groups (pinned to the contender CPUs), readiness
//! timed, CPU and memory sampled, and teardown that leaves no process behind — the group is
//! signalled, and any process still carrying this start's tag in its environment is killed.

pub mod edge;
pub mod guard;
pub mod leftovers;
mod logcap;
mod member;
pub mod nodelay;
pub mod probe;
pub mod profile;
mod spawn;
pub mod usage;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::plan::{Check, Contender, Probe};
pub use member::kill_all_live;
use member::{describe_exit, log_tail, register_group, unregister_group, MemberProc};
pub use probe::ProbeError;
pub use spawn::{
    capture, expand, on_path, ports_named, run_guarded, run_guarded_spent, Capture, Oneshot, Owner,
    Placeholders, Spent,
};
use usage::{Sampler, Usage};

/// The environment variable every process started for a contender carries, so teardown can
/// find the ones that left the process group.
pub use crate::results::{slug, MemberExit};
mod ready;
mod start;
pub use start::*;
mod placeholders;
use placeholders::*;

pub const TAG_VAR: &str = "BAKEOFF_RUN";

/// Everything needed to start one contender for one repetition.
pub struct Launch<'a> {
    pub contender: &'a Contender,
    /// A fresh, empty folder for this repetition's state.
    pub state: PathBuf,
    pub logs: PathBuf,
    /// Prefix of this start's log files, e.g. `etcd-3.4.r1`.
    pub log_prefix: String,
    pub cpus: Option<Vec<usize>>,
    /// Where the threads that write members' logs run (off the contender CPUs).
    pub log_cpus: Option<Vec<usize>>,
    /// Each member log's size limit (head and rolling tail).
    pub log_limit: u64,
    /// The plan's compiled `.proto` files, for gRPC readiness probes.
    pub protos: &'a crate::client::Descriptors,
    /// The command's cancellation: ends setup commands and probes early.
    pub cancel: crate::cancel::Cancel,
}

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("{0}")]
    Placeholder(String),
    #[error("{0} is already in use by another process; bakeoff will not measure a server it did not start")]
    PortTaken(String),
    #[error("setup command failed: {0}")]
    Setup(String),
    #[error("cannot start member `{member}` (`{program}`): {reason}")]
    Spawn {
        member: String,
        program: String,
        reason: String,
    },
}

/// Start-up timings, from the spawn of the first member.
#[derive(Debug, Clone, PartialEq)]
pub struct Startup {
    pub first_response: Duration,
    pub ready: Duration,
    /// Each member, in plan order.
    pub members: Vec<MemberStart>,
    /// How precisely the first response is timed: the longest gap, over the members, between
    /// the probe attempt before the pass and the one that passed.
    pub resolution: Duration,
}

/// When a member was started (members with `after` wait for others) and how long after its
/// own start it first answered.
#[derive(Debug, Clone, PartialEq)]
pub struct MemberStart {
    pub name: String,
    pub started: Duration,
    pub first_response: Duration,
}

/// A member whose command is filled in, ready to spawn.
struct Prepared {
    /// Its place in the plan's member list.
    index: usize,
    command: Vec<String>,
    env: Vec<(String, String)>,
    ready: Probe,
    state: PathBuf,
    logs: Vec<PathBuf>,
    after: Vec<String>,
}

/// What a member spawned later needs to know about its contender.
struct SpawnCtx {
    dir: Option<PathBuf>,
    cpus: Option<Vec<usize>>,
    log_cpus: Option<Vec<usize>>,
    log_limit: u64,
    member_names: Vec<String>,
    leader: Option<Probe>,
    cluster: bool,
}

/// A started contender. Dropping it kills whatever is still running.
pub struct Running {
    pub name: String,
    /// Member endpoints with ports filled in, in member order.
    pub endpoints: Vec<String>,
    pub state: PathBuf,
    pub logs: Vec<PathBuf>,
    members: Vec<MemberProc>,
    sampler: Sampler,
    started: Instant,
    /// Its mark, results folder and cancellation.
    owner: spawn::Owner,
    stop_timeout: Duration,
    cleanup: Vec<Vec<String>>,
    cleanup_log: PathBuf,
    ready_when: Option<Probe>,
    protos: crate::client::Descriptors,
    stopped: bool,
    /// The ports given to it, by name: checked free after it stopped.
    ports: std::collections::BTreeMap<String, u16>,
    /// Members that start once the members their `after` names are ready.
    pending: Vec<Prepared>,
    /// The proxy of a delay variant, on the edge it slows.
    edge: Option<edge::Edge>,
    ctx: SpawnCtx,
}

impl Running {
    /// Starts a prepared member: its state folder, its process (in its own group, under
    /// its guard), its logs.
    fn spawn_member(&mut self, p: Prepared) -> Result<(), StartError> {
        let name = self.ctx.member_names[p.index].clone();
        let spawned = std::fs::create_dir_all(&p.state)
            .map_err(|e| e.to_string())
            .and_then(|()| {
                spawn::spawn(&spawn::SpawnSpec {
                    command: &p.command,
                    env: &p.env,
                    dir: self.ctx.dir.as_deref(),
                    stdout: &p.logs[0],
                    stderr: &p.logs[1],
                    cpus: self.ctx.cpus.as_deref(),
                    tag: &self.owner.tag,
                    log_limit: self.ctx.log_limit,
                    log_cpus: self.ctx.log_cpus.as_deref(),
                })
            });
        let (child, pumps) = spawned.map_err(|reason| StartError::Spawn {
            member: name.clone(),
            program: p.command[0].clone(),
            reason,
        })?;
        let pid = child.id() as i32;
        register_group(pid);
        leftovers::record(&self.owner.results, pid, &self.owner.tag);
        self.sampler.add(pid);
        if self.members.is_empty() {
            self.started = Instant::now();
        }
        self.logs.extend(p.logs.iter().cloned());
        self.members.push(MemberProc {
            name,
            index: p.index,
            spawned: Instant::now(),
            pid,
            _child: child,
            reaped_cpu: None,
            exit: None,
            ready: p.ready,
            endpoint: self.endpoints[p.index].clone(),
            logs: p.logs,
            pumps,
        });
        Ok(())
    }

    /// The member names, in plan order.
    pub fn member_names(&self) -> &[String] {
        &self.ctx.member_names
    }

    /// `text` with one member's placeholders filled in (its ports, state, name); its own
    /// endpoint when `text` is empty.
    pub fn fill_for(&self, member: &str, text: &str) -> Result<String, String> {
        let i = self
            .ctx
            .member_names
            .iter()
            .position(|m| m == member)
            .ok_or_else(|| format!("no member `{member}`"))?;
        if text.is_empty() {
            return Ok(self.endpoints[i].clone());
        }
        let state = if self.ctx.cluster {
            self.state.join(member)
        } else {
            self.state.clone()
        };
        let ph = Placeholders {
            ports: &self.ports,
            state,
            member: member.to_string(),
        };
        expand(&text.replace("{index}", &(i + 1).to_string()), &ph)
    }

    /// Describes the first member that has exited on its own, with the end of its log.
    pub fn exited(&mut self) -> Option<String> {
        for m in &mut self.members {
            if m.exit.is_none() {
                if let Some(status) = m.poll(false) {
                    m.exit = Some(describe_exit(&m.name, m.pid, status, false));
                }
            }
            if let Some(e) = m.exit.clone() {
                if !e.stopped_by_bakeoff {
                    m.flush_logs();
                    let tail = log_tail(&m.logs, 5);
                    return Some(format!(
                        "member `{}` (pid {}) exited: {}{}",
                        m.name,
                        m.pid,
                        e.status,
                        if tail.is_empty() {
                            String::new()
                        } else {
                            format!("; its log ends with:\n{tail}")
                        }
                    ));
                }
            }
        }
        None
    }

    /// A port of this contender that another process holds once every member it spawned has
    /// exited on its own: taken between bakeoff picking it free and the member binding it
    /// (the race every tool that picks ports for another has). `None` while a member runs.
    pub fn port_taken(&mut self) -> Option<u16> {
        let _ = self.exited();
        if self.members.iter().any(|m| m.exit.is_none()) {
            return None;
        }
        self.ports.values().copied().find(|&port| {
            std::net::TcpListener::bind(("127.0.0.1", port))
                .is_err_and(|e| e.kind() == std::io::ErrorKind::AddrInUse)
        })
    }

    /// What the proxy of a delay variant saw and did so far.
    pub fn edge_stats(&self) -> Option<edge::EdgeStats> {
        self.edge.as_ref().map(edge::Edge::stats)
    }

    /// CPU time and peak memory of all members' process trees so far. CPU time is the
    /// larger of the sampled total and what the kernel reported for reaped members.
    pub fn usage(&self) -> Usage {
        let mut u = self.sampler.now();
        let (user, system) = self
            .members
            .iter()
            .filter_map(|m| m.reaped_cpu)
            .fold((0.0, 0.0), |(a, b), r| {
                (a + r.cpu_user_s, b + r.cpu_system_s)
            });
        if user + system > u.cpu_s() {
            u.cpu_user_s = user;
            u.cpu_system_s = system;
        }
        // A short-lived member may end between samples; the kernel's own peak is a floor.
        let reaped_peak = self
            .members
            .iter()
            .filter_map(|m| m.reaped_cpu)
            .map(|r| r.peak_rss_bytes)
            .max();
        u.peak_rss_bytes = u.peak_rss_bytes.max(reaped_peak.unwrap_or(0));
        u
    }

    /// The exact cost of all members' process trees so far (CPU nanoseconds, context
    /// switches): read at the edges of a measured window, see `usage::Cost`.
    pub fn cost(&self) -> usage::Cost {
        self.sampler.exact()
    }

    /// Forces TCP_NODELAY on the contender's listening sockets on its ports, or with
    /// `established` on its side of the connections it accepted there (for servers that
    /// clear the option on each connection), see [`nodelay`].
    pub fn force_nodelay(&self, established: bool) -> nodelay::Forced {
        nodelay::force(
            &self.sampler.pids(),
            &self.own_ports(),
            established,
            &self.name,
        )
    }

    /// Waits (at most `limit`) until the contender holds `connections` accepted connections
    /// on its ports: a server accepts in its own time, and on a loaded host after the load
    /// engine's connect returned — forcing the option before then would miss them.
    pub fn wait_accepted(&self, connections: usize, limit: Duration) {
        nodelay::wait_accepted(&self.sampler.pids(), &self.own_ports(), connections, limit);
    }

    /// The ports given to it and any its endpoints name.
    fn own_ports(&self) -> Vec<u16> {
        let mut ports: Vec<u16> = self.ports.values().copied().collect();
        // Endpoints with a fixed port (no `{port}` placeholder) are the member's too.
        for e in &self.endpoints {
            if let Some(p) = e
                .rsplit_once(':')
                .and_then(|(_, p)| p.split('/').next()?.parse::<u16>().ok())
            {
                ports.push(p);
            }
        }
        ports.sort_unstable();
        ports.dedup();
        ports
    }

    /// Every process of the contender now (for profiling).
    pub fn pids(&self) -> Vec<i32> {
        self.sampler.pids()
    }

    /// Seconds since the first member was spawned.
    pub fn uptime(&self) -> Duration {
        self.started.elapsed()
    }

    /// Stops every member (SIGTERM, then SIGKILL after the stop timeout), kills what is left
    /// of their groups and anything still carrying this start's tag, then runs the cleanup
    /// commands. Returns how each member ended and the final usage.
    pub fn stop(mut self) -> (Vec<MemberExit>, Usage, Vec<String>) {
        self.shutdown();
        let usage = self.usage();
        let mut problems = Vec::new();
        for cmd in std::mem::take(&mut self.cleanup) {
            if let Err(e) = spawn::run_logged(
                &cmd,
                &self.cleanup_log,
                None,
                &self.owner,
                Duration::from_secs(600),
            ) {
                problems.push(format!("cleanup command failed: {e}"));
            }
        }
        spawn::sweep(&self.owner.tag);
        // What a member that killed its own guard left re-parents to bakeoff.
        crate::sys::children::sweep();
        // The last check: nothing it started may still listen on its ports.
        for (name, port) in &self.ports {
            if let Err(e) = std::net::TcpListener::bind(("127.0.0.1", *port)) {
                if e.kind() == std::io::ErrorKind::AddrInUse {
                    problems.push(format!(
                        "port {port} (`{{{}}}`) is still in use after the contender stopped: something it started is still running",
                        if name == "port" { "port".to_string() } else { format!("port:{name}") }
                    ));
                }
            }
        }
        let exits = self.members.iter().filter_map(|m| m.exit.clone()).collect();
        (exits, usage, problems)
    }

    fn shutdown(&mut self) {
        if self.stopped {
            return;
        }
        self.stopped = true;
        for m in &mut self.members {
            if m.exit.is_none() && m.poll(false).is_none() {
                kill_group(m.pid, libc::SIGTERM);
                kill_group(m.pid, libc::SIGCONT);
            }
        }
        let deadline = Instant::now() + self.stop_timeout;
        for m in &mut self.members {
            if m.exit.is_some() {
                continue;
            }
            let status = loop {
                match m.poll(false) {
                    Some(s) => break Some(s),
                    None if m.reaped_cpu.is_some() => break None,
                    None if Instant::now() < deadline => {
                        std::thread::sleep(Duration::from_millis(10))
                    }
                    None => {
                        // The guard kills the member and everything it started; a group
                        // kill is the fallback if the guard itself does not answer.
                        // SAFETY: kill has no memory preconditions.
                        unsafe {
                            libc::kill(m.pid, guard::PARENT_DIED);
                        }
                        let until = Instant::now() + Duration::from_secs(2);
                        let mut got = None;
                        while got.is_none() && Instant::now() < until {
                            got = m.poll(false);
                            if got.is_none() && m.reaped_cpu.is_none() {
                                std::thread::sleep(Duration::from_millis(5));
                            }
                        }
                        if got.is_none() {
                            kill_group(m.pid, libc::SIGKILL);
                            got = m.poll(true);
                        }
                        break got;
                    }
                }
            };
            if let Some(s) = status {
                m.exit = Some(describe_exit(&m.name, m.pid, s, true));
            }
        }
        // Children that outlived their member's leader are still in its group.
        for m in &mut self.members {
            kill_group(m.pid, libc::SIGKILL);
            unregister_group(m.pid);
            leftovers::forget(&self.owner.results, m.pid);
            m.flush_logs();
        }
        spawn::sweep(&self.owner.tag);
        // What a member that killed its own guard left re-parents to bakeoff.
        crate::sys::children::sweep();
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Sends `sig` to the process group `pgid` (ignoring a group that is already gone).
pub fn kill_group(pgid: i32, sig: libc::c_int) {
    if pgid > 1 {
        // SAFETY: kill has no memory preconditions; a negative pid names a process group.
        unsafe {
            libc::kill(-pgid, sig);
        }
    }
}
