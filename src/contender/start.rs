//! Starting a contender: free ports, its setup commands, each member's placeholders filled in before anything spawns, and a delay variant's proxy.

use super::*;

/// Starts every member (after the setup commands). Does not wait for readiness.
pub fn start(l: &Launch) -> Result<Running, StartError> {
    let c = l.contender;
    let (ports, held) = spawn::free_ports(&ports_named(c)).map_err(StartError::Placeholder)?;
    let owner = owner(l);
    let state_of = |m: &str| {
        if c.members.len() > 1 {
            l.state.join(m)
        } else {
            l.state.clone()
        }
    };
    // The contender's own strings (setup, cleanup, `ready_when`) see `{state}` as its folder,
    // which in a cluster holds each member's, made before setup runs (a certificate made for
    // one member, say, goes into `{state}/NAME`), as the `tls` of probes and scenarios do.
    let folders = [l.state.clone(), l.logs.clone()]
        .into_iter()
        .chain(c.members.iter().map(|m| state_of(&m.name)));
    for f in folders {
        std::fs::create_dir_all(f).map_err(|e| StartError::Setup(e.to_string()))?;
    }
    // A delay variant: the members that connect to the edge's port are given the port of
    // a proxy that holds what they send (docs/what-if.md); the listener keeps the real one.
    let delay = c.variant.as_ref().and_then(|v| v.delay());
    let delay = delay.as_ref();
    let edge = delay.map(|d| proxy(d, l, &ports)).transpose()?;
    // The proxy's port is bound: the members' may be let go (an open listener would answer
    // `free_endpoints` below as if a stranger held the port).
    drop(held);
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
pub(super) type Own = (Option<Probe>, Vec<Vec<String>>);

pub(super) fn own_strings(c: &Contender, first: &Placeholders) -> Result<Own, StartError> {
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
pub(super) fn run_setup(
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
    pub(super) fn of(c: &Contender, l: &Launch) -> SpawnCtx {
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
pub(super) fn owner(l: &Launch) -> spawn::Owner {
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
        log_limit: l.log_limit,
    }
}

/// A delay variant's proxy, forwarding to the real `{port:PORT}` (docs/what-if.md).
pub(super) fn proxy(
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
pub(super) fn free_endpoints<'p>(
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
pub(super) fn prepare<'p>(
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
