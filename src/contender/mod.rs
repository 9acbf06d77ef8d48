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
    expand, ports_named, run_guarded, run_guarded_spent, Oneshot, Owner, Placeholders, Spent,
};
use usage::{Sampler, Usage};

/// The environment variable every process started for a contender carries, so teardown can
/// find the ones that left the process group.
pub use crate::results::{slug, MemberExit};

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

/// Starts every member (after the setup commands). Does not wait for readiness.
pub fn start(l: &Launch) -> Result<Running, StartError> {
    let c = l.contender;
    std::fs::create_dir_all(&l.state).map_err(|e| StartError::Setup(e.to_string()))?;
    std::fs::create_dir_all(&l.logs).map_err(|e| StartError::Setup(e.to_string()))?;
    let ports = spawn::free_ports(&ports_named(c)).map_err(StartError::Placeholder)?;
    let owner = owner(l);
    let cluster = c.members.len() > 1;
    let state_of = |m: &str| {
        if cluster {
            l.state.join(m)
        } else {
            l.state.clone()
        }
    };
    // A delay variant: the members that connect to the edge's port are given the port of
    // a proxy that holds what they send (docs/what-if.md); the listener keeps the real one.
    let delay = c.variant.as_ref().and_then(|v| v.delay());
    let delay = delay.as_ref();
    let edge = delay.map(|d| proxy(d, l, &ports)).transpose()?;
    let mut proxied = ports.clone();
    if let (Some(d), Some(e)) = (delay, &edge) {
        proxied.insert(d.port.clone(), e.listen_port);
    }
    let ph = |member: &str| Placeholders {
        ports: if delay.is_some_and(|d| d.connect.iter().any(|m| m == member)) {
            &proxied
        } else {
            &ports
        },
        state: state_of(member),
        member: member.to_string(),
    };

    let endpoints = free_endpoints(c, &ph)?;

    // The contender's own strings — setup, cleanup, `ready_when` — see `{state}` as the
    // contender's folder, as the `tls` of its probes, scenarios and compat sets do; in a
    // cluster it holds each member's folder, and those exist before setup runs (a
    // certificate made for one member, say, goes into `{state}/NAME`).
    for m in &c.members {
        std::fs::create_dir_all(state_of(&m.name)).map_err(|e| StartError::Setup(e.to_string()))?;
    }
    let first = Placeholders {
        state: l.state.clone(),
        ..ph(&c.members[0].name)
    };
    run_setup(c, l, &first, &owner)?;

    // Fill in every placeholder before spawning anything, so a mistake starts nothing.
    let prepared = prepare(c, l, &ph)?;
    let (ready_when, cleanup) = own_strings(c, &first)?;
    let (now, later): (Vec<Prepared>, Vec<Prepared>) =
        prepared.into_iter().partition(|p| p.after.is_empty());
    let mut running = Running {
        name: c.name.clone(),
        endpoints,
        state: l.state.clone(),
        logs: Vec::new(),
        members: Vec::new(),
        sampler: Sampler::start(Vec::new()),
        started: Instant::now(),
        owner,
        stop_timeout: c.stop_timeout,
        cleanup,
        cleanup_log: l.logs.join(format!("{}.cleanup.log", l.log_prefix)),
        ready_when,
        protos: l.protos.clone(),
        stopped: false,
        ports: ports.clone(),
        edge,
        pending: later,
        ctx: SpawnCtx::of(c, l),
    };
    for p in now {
        running.spawn_member(p)?;
    }
    Ok(running)
}

/// The contender's own `ready_when` probe and `cleanup` commands, placeholders filled in.
type Own = (Option<Probe>, Vec<Vec<String>>);

fn own_strings(c: &Contender, first: &Placeholders) -> Result<Own, StartError> {
    let ready_when = c
        .ready_when
        .as_ref()
        .map(|p| expand_probe(p, first))
        .transpose()?;
    let cleanup = c
        .cleanup
        .iter()
        .map(|cmd| expand_all(cmd, first))
        .collect::<Result<_, _>>()?;
    Ok((ready_when, cleanup))
}

/// The contender's `setup` commands, each under a guard, into its setup log.
fn run_setup(
    c: &Contender,
    l: &Launch,
    first: &Placeholders,
    owner: &spawn::Owner,
) -> Result<(), StartError> {
    let setup_log = l.logs.join(format!("{}.setup.log", l.log_prefix));
    for cmd in &c.setup {
        let cmd = expand_all(cmd, first)?;
        spawn::run_logged(
            &cmd,
            &setup_log,
            c.dir.as_deref(),
            owner,
            Duration::from_secs(600),
        )
        .map_err(StartError::Setup)?;
    }
    Ok(())
}

impl SpawnCtx {
    fn of(c: &Contender, l: &Launch) -> SpawnCtx {
        SpawnCtx {
            dir: c.dir.clone(),
            cpus: l.cpus.clone(),
            log_cpus: l.log_cpus.clone(),
            log_limit: l.log_limit,
            member_names: c.members.iter().map(|m| m.name.clone()).collect(),
            leader: c.leader.clone(),
            cluster: c.members.len() > 1,
        }
    }
}

/// Who owns what a start spawns: a tag unique to it, and the results folder its guards'
/// record goes into (the logs folder is in it).
fn owner(l: &Launch) -> spawn::Owner {
    let results_dir = l
        .logs
        .parent()
        .map_or_else(|| l.logs.clone(), Path::to_path_buf);
    let tag = format!(
        "{}-{}-{}",
        std::process::id(),
        l.log_prefix,
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    );
    spawn::Owner {
        tag,
        results: results_dir,
        cancel: l.cancel.clone(),
    }
}

/// A delay variant's proxy, forwarding to the real `{port:PORT}` (docs/what-if.md).
fn proxy(
    d: &crate::plan::Delay,
    l: &Launch,
    ports: &std::collections::BTreeMap<String, u16>,
) -> Result<edge::Edge, StartError> {
    let real = *ports.get(&d.port).ok_or_else(|| {
        StartError::Placeholder(format!("a delay on `{}`: no member names it", d.port))
    })?;
    edge::Edge::start(&d.port, real, d.hold, l.log_cpus.clone())
        .map_err(|e| StartError::Setup(format!("the delay's proxy: {e}")))
}

/// Every member's endpoint, refused when something already answers there: the probe would
/// pass against the wrong server.
fn free_endpoints<'p>(
    c: &Contender,
    ph: &dyn Fn(&str) -> Placeholders<'p>,
) -> Result<Vec<String>, StartError> {
    let mut endpoints = Vec::new();
    for m in &c.members {
        let ep = expand(&m.endpoint, &ph(&m.name)).map_err(StartError::Placeholder)?;
        if let Some(addr) = spawn::answering(&ep) {
            return Err(StartError::PortTaken(format!(
                "{addr} (endpoint of `{}`)",
                m.name
            )));
        }
        endpoints.push(ep);
    }
    Ok(endpoints)
}

/// Each member with its placeholders filled in: command, environment, probe, logs, state.
fn prepare<'p>(
    c: &Contender,
    l: &Launch,
    ph: &dyn Fn(&str) -> Placeholders<'p>,
) -> Result<Vec<Prepared>, StartError> {
    let cluster = c.members.len() > 1;
    let mut prepared = Vec::new();
    for (index, m) in c.members.iter().enumerate() {
        let p = ph(&m.name);
        let env = m
            .env
            .iter()
            .map(|(k, v)| Ok((k.clone(), expand(v, &p)?)))
            .collect::<Result<_, String>>()
            .map_err(StartError::Placeholder)?;
        // Not `with_extension`: member names may contain dots.
        let base = if cluster {
            l.logs.join(format!("{}.{}", l.log_prefix, m.name))
        } else {
            l.logs.join(&l.log_prefix)
        };
        prepared.push(Prepared {
            index,
            command: expand_all(&m.command, &p)?,
            env,
            ready: expand_probe(&m.ready, &p)?,
            logs: ["stdout", "stderr"]
                .iter()
                .map(|ext| PathBuf::from(format!("{}.{ext}", base.display())))
                .collect(),
            state: p.state,
            after: m.after.clone(),
        });
    }
    Ok(prepared)
}

/// The members' probes, each waiting on its own thread (with its own runtime), so a probe
/// the server holds (etcd's /health until it has a leader) never holds another member's:
/// every member's first response is timed to its own probe's pauses. Dropped, it stops the
/// probes still waiting and joins their threads.
struct Watchers {
    tx: std::sync::mpsc::Sender<(usize, Result<Duration, ProbeError>, Instant)>,
    rx: std::sync::mpsc::Receiver<(usize, Result<Duration, ProbeError>, Instant)>,
    stop: crate::cancel::Cancel,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Watchers {
    fn new() -> Watchers {
        let (tx, rx) = std::sync::mpsc::channel();
        Watchers {
            tx,
            rx,
            stop: crate::cancel::Cancel::new(),
            threads: Vec::new(),
        }
    }

    /// Waits for member `k`'s probe on a thread of its own.
    fn watch(&mut self, k: usize, w: probe::Waiter) -> Result<(), ProbeError> {
        let (tx, stop) = (self.tx.clone(), self.stop.clone());
        let h = std::thread::Builder::new()
            .name("bakeoff-probe".into())
            .spawn(move || {
                let out = probe::wait_alone(w, &stop);
                let _ = tx.send((k, out, Instant::now()));
            })
            .map_err(|e| ProbeError::Setup(format!("cannot start a probe thread: {e}")))?;
        self.threads.push(h);
        Ok(())
    }
}

impl Drop for Watchers {
    fn drop(&mut self) {
        self.stop.cancel();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

fn expand_all(cmd: &[String], p: &Placeholders) -> Result<Vec<String>, StartError> {
    cmd.iter()
        .map(|a| expand(a, p))
        .collect::<Result<_, _>>()
        .map_err(StartError::Placeholder)
}

fn expand_probe(probe: &Probe, p: &Placeholders) -> Result<Probe, StartError> {
    expand_probe_with(probe, &|s| expand(s, p))
}

fn expand_probe_with(
    probe: &Probe,
    fill: &dyn Fn(&str) -> Result<String, String>,
) -> Result<Probe, StartError> {
    let e = |s: &str| fill(s).map_err(StartError::Placeholder);
    let check = match &probe.check {
        Check::Tcp(a) => Check::Tcp(e(a)?),
        Check::Http {
            url,
            status,
            method,
            body,
        } => Check::Http {
            url: e(url)?,
            status: *status,
            method: method.clone(),
            body: body.as_deref().map(e).transpose()?,
        },
        Check::JsonRpc {
            method,
            params,
            endpoint,
        } => Check::JsonRpc {
            method: method.clone(),
            params: e(params)?,
            endpoint: endpoint.as_deref().map(e).transpose()?,
        },
        Check::Grpc {
            call,
            body,
            endpoint,
        } => Check::Grpc {
            call: call.clone(),
            body: body.clone(),
            endpoint: endpoint.as_deref().map(e).transpose()?,
        },
        Check::Log(r) => Check::Log(r.clone()),
        Check::Command(c) => Check::Command(c.iter().map(|a| e(a)).collect::<Result<_, _>>()?),
    };
    Ok(Probe {
        check,
        ..probe.clone()
    })
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

    /// Waits for every member's probe (the first response), starting each member whose
    /// `after` names others once those passed theirs, then the contender's ready
    /// condition. Members' probes take turns, so each one's first answer is timed on its
    /// own. On failure, returns what was reached so far with the error.
    pub fn wait_ready(
        &mut self,
        rt: &tokio::runtime::Runtime,
    ) -> Result<Startup, (Option<Duration>, ProbeError)> {
        let (passed, resolution) = self.first_responses().map_err(|e| (None, e))?;
        let first_response = self.started.elapsed();
        let mut members: Vec<MemberStart> = passed
            .iter()
            .map(|&(k, at)| {
                let m = &self.members[k];
                MemberStart {
                    name: m.name.clone(),
                    started: m.spawned.saturating_duration_since(self.started),
                    first_response: at.saturating_duration_since(m.spawned),
                }
            })
            .collect();
        let order = |n: &str| self.ctx.member_names.iter().position(|x| x == n);
        members.sort_by_key(|m| order(&m.name));
        if let Some(probe) = self.ready_when.clone() {
            let logs = self.logs.clone();
            let endpoint = self.endpoints[0].clone();
            self.wait_probe(&probe, &logs, &endpoint, rt)
                .map_err(|e| (Some(first_response), e))?;
        }
        Ok(Startup {
            first_response,
            ready: self.started.elapsed(),
            members,
            resolution,
        })
    }

    /// Every member's first answer to its probe, when it came (members with `after` are
    /// started as the ones they wait for answer), and the coarsest probe's resolution.
    fn first_responses(&mut self) -> Result<(Vec<(usize, Instant)>, Duration), ProbeError> {
        let protos = self.protos.clone();
        let state = self.state.clone();
        let owner = self.owner.clone();
        let waiter = |m: &MemberProc| {
            let env = probe::ProbeEnv {
                logs: &m.logs,
                protos: &protos,
                endpoint: &m.endpoint,
                state: &state,
                owner: &owner,
            };
            probe::Waiter::new(&m.ready, &env)
        };
        let mut watchers = Watchers::new();
        let mut left = 0;
        for k in 0..self.members.len() {
            watchers.watch(k, waiter(&self.members[k])?)?;
            left += 1;
        }
        let mut passed: Vec<(usize, Instant)> = Vec::new();
        let mut resolution = Duration::ZERO;
        loop {
            // Start the members whose `after` members have all answered.
            let ready: Vec<String> = passed
                .iter()
                .map(|&(k, _)| self.members[k].name.clone())
                .collect();
            while let Some(i) = self
                .pending
                .iter()
                .position(|p| p.after.iter().all(|a| ready.contains(a)))
            {
                let p = self.pending.remove(i);
                self.spawn_member(p)
                    .map_err(|e| ProbeError::Exited(e.to_string()))?;
                let k = self.members.len() - 1;
                watchers.watch(k, waiter(&self.members[k])?)?;
                left += 1;
            }
            if left == 0 {
                return Ok((passed, resolution));
            }
            let got = watchers.rx.recv_timeout(Duration::from_millis(20));
            if let Some(e) = self.exited() {
                return Err(ProbeError::Exited(e));
            }
            if self.owner.cancel.is_cancelled() {
                return Err(ProbeError::Interrupted);
            }
            let Ok((k, outcome, at)) = got else { continue };
            left -= 1;
            match outcome {
                Ok(res) => {
                    passed.push((k, at));
                    resolution = resolution.max(res);
                }
                Err(ProbeError::Timeout { waited, last }) if self.ctx.cluster => {
                    let name = &self.members[k].name;
                    return Err(ProbeError::Timeout {
                        waited,
                        last: format!("member `{name}`: {last}"),
                    });
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// The member (its place in the plan) that passes the contender's `leader` probe now:
    /// the probe is asked of each member in turn — `{member}` and `{index}` are that
    /// member's, and a `grpc` probe without `endpoint` or an `http` probe given as a path
    /// goes to that member's endpoint — until one passes or the probe's timeout.
    pub fn leader(&mut self, rt: &tokio::runtime::Runtime) -> Result<usize, String> {
        let ports = self.ports.clone();
        let Some(probe) = self.ctx.leader.clone() else {
            return if self.endpoints.len() == 1 {
                Ok(0)
            } else {
                Err("`target = \"leader\"` needs a `leader` probe on the contender".into())
            };
        };
        let start = Instant::now();
        let protos = self.protos.clone();
        loop {
            let mut why = Vec::new();
            for (i, name) in self.ctx.member_names.clone().iter().enumerate() {
                let state = if self.ctx.cluster {
                    self.state.join(name)
                } else {
                    self.state.clone()
                };
                let ph = Placeholders {
                    ports: &ports,
                    state: state.clone(),
                    member: name.clone(),
                };
                let index = (i + 1).to_string();
                let mut p =
                    expand_probe_with(&probe, &|s| expand(&s.replace("{index}", &index), &ph))
                        .map_err(|e| e.to_string())?;
                if let Check::Http { url, .. } = &mut p.check {
                    if url.starts_with('/') {
                        *url = format!("{}{url}", self.endpoints[i].trim_end_matches('/'));
                    }
                }
                let logs: Vec<PathBuf> = self
                    .members
                    .iter()
                    .filter(|m| m.index == i)
                    .flat_map(|m| m.logs.clone())
                    .collect();
                let env = probe::ProbeEnv {
                    logs: &logs,
                    protos: &protos,
                    endpoint: &self.endpoints[i],
                    state: &state,
                    owner: &self.owner,
                };
                match probe::ask(&p, &env, rt) {
                    Ok(()) => return Ok(i),
                    Err(e) => why.push(format!("{name}: {e}")),
                }
            }
            if let Some(e) = self.exited() {
                return Err(e);
            }
            if start.elapsed() >= probe.timeout || self.owner.cancel.is_cancelled() {
                return Err(format!(
                    "no member answered the `leader` probe as the leader within {:.1?} ({})",
                    probe.timeout,
                    why.join("; ")
                ));
            }
            std::thread::sleep(probe.interval);
        }
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

    fn wait_probe(
        &mut self,
        probe: &Probe,
        logs: &[PathBuf],
        endpoint: &str,
        rt: &tokio::runtime::Runtime,
    ) -> Result<(), ProbeError> {
        let protos = self.protos.clone();
        let state = self.state.clone();
        let owner = self.owner.clone();
        let env = probe::ProbeEnv {
            logs,
            protos: &protos,
            endpoint,
            state: &state,
            owner: &owner,
        };
        probe::wait(probe, &env, rt, &mut || self.exited())
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
