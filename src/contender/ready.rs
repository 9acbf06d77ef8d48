//! Waiting for a started contender: each member's first answer to its own probe (on a thread of its own), members that start after others, the contender's ready condition, and which member leads.

use super::*;

impl Running {
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
    pub(super) fn first_responses(
        &mut self,
    ) -> Result<(Vec<(usize, Instant)>, Duration), ProbeError> {
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

    pub(super) fn wait_probe(
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
}

/// The members' probes, each waiting on its own thread (with its own runtime), so a probe
/// the server holds (etcd's /health until it has a leader) never holds another member's:
/// every member's first response is timed to its own probe's pauses. Dropped, it stops the
/// probes still waiting and joins their threads.
pub(super) struct Watchers {
    pub(super) tx: std::sync::mpsc::Sender<(usize, Result<Duration, ProbeError>, Instant)>,
    pub(super) rx: std::sync::mpsc::Receiver<(usize, Result<Duration, ProbeError>, Instant)>,
    pub(super) stop: crate::cancel::Cancel,
    pub(super) threads: Vec<std::thread::JoinHandle<()>>,
}

impl Watchers {
    pub(super) fn new() -> Watchers {
        let (tx, rx) = std::sync::mpsc::channel();
        Watchers {
            tx,
            rx,
            stop: crate::cancel::Cancel::new(),
            threads: Vec::new(),
        }
    }

    /// Waits for member `k`'s probe on a thread of its own.
    pub(super) fn watch(&mut self, k: usize, w: probe::Waiter) -> Result<(), ProbeError> {
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
