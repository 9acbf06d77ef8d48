//! Ports and placeholders: `{port}`, `{port:NAME}`, `{state}`, `{member}` and `{env:…}` filled in, the ports a contender names, free ports for them, and whether something already answers.

use super::*;

/// What `{port}`, `{port:NAME}`, `{state}` and `{member}` stand for in one member.
pub struct Placeholders<'a> {
    pub ports: &'a BTreeMap<String, u16>,
    pub state: PathBuf,
    pub member: String,
}

/// Fills in `{port}`, `{port:NAME}`, `{state}`, `{member}` and `{env:NAME}` (or
/// `{env:NAME:-default}`); every other brace is left as written (shell scripts use `${x}`).
pub fn expand(text: &str, p: &Placeholders) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find('{') {
        out.push_str(&rest[..i]);
        rest = &rest[i..];
        let Some(end) = rest.find('}') else { break };
        let inner = &rest[1..end];
        let replaced = match inner.split_once(':') {
            None if inner == "port" => Some(port(p, "port")?),
            None if inner == "state" => Some(p.state.display().to_string()),
            None if inner == "member" => Some(p.member.clone()),
            Some(("port", name)) => Some(port(p, name)?),
            Some(("env", spec)) => Some(env_var(spec)?),
            _ => None,
        };
        match replaced {
            Some(v) => {
                out.push_str(&v);
                rest = &rest[end + 1..];
            }
            None => {
                out.push('{');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    Ok(out)
}

/// `NAME` or `NAME:-default`, as in the shell.
pub(super) fn env_var(spec: &str) -> Result<String, String> {
    let (var, default) = match spec.split_once(":-") {
        Some((v, d)) => (v, Some(d)),
        None => (spec, None),
    };
    match (std::env::var(var), default) {
        (Ok(v), _) if !v.is_empty() => Ok(v),
        (_, Some(d)) => Ok(d.to_string()),
        _ => Err(format!(
            "`{{env:{spec}}}`: the environment variable {var} is not set"
        )),
    }
}

pub(super) fn port(p: &Placeholders, name: &str) -> Result<String, String> {
    p.ports
        .get(name)
        .map(u16::to_string)
        .ok_or_else(|| format!("no port named `{name}`"))
}

/// Names of the ports a contender uses (`{port}` is named `port`).
pub fn ports_named(c: &Contender) -> BTreeSet<String> {
    let mut texts: Vec<&str> = Vec::new();
    let probe_texts = |p: &'_ Probe, out: &mut Vec<String>| match &p.check {
        Check::Tcp(a) => out.push(a.clone()),
        Check::Http { url, .. } => out.push(url.clone()),
        Check::Grpc { endpoint, .. } | Check::JsonRpc { endpoint, .. } => {
            out.extend(endpoint.clone())
        }
        Check::Log(_) => {}
        Check::Command(cmd) => out.extend(cmd.iter().cloned()),
    };
    let mut owned = Vec::new();
    for m in &c.members {
        texts.extend(m.command.iter().map(String::as_str));
        texts.extend(m.env.iter().map(|(_, v)| v.as_str()));
        texts.push(&m.endpoint);
        probe_texts(&m.ready, &mut owned);
    }
    if let Some(p) = &c.ready_when {
        probe_texts(p, &mut owned);
    }
    for cmd in c.setup.iter().chain(&c.cleanup) {
        texts.extend(cmd.iter().map(String::as_str));
    }
    texts.extend(owned.iter().map(String::as_str));
    let mut names = BTreeSet::new();
    for t in texts {
        let mut rest = t;
        while let Some(i) = rest.find("{port") {
            rest = &rest[i + 5..];
            if rest.starts_with('}') {
                names.insert("port".to_string());
            } else if let Some(r) = rest.strip_prefix(':') {
                if let Some(end) = r.find('}') {
                    names.insert(r[..end].to_string());
                }
            }
        }
    }
    names
}

/// One free loopback port per name, and the listeners that hold them. All stay open until
/// every port is chosen, so the ports differ; the caller closes them once its own listeners
/// are bound (a delay's proxy binds a free port too, and could otherwise be given one of
/// these between their closing and the member's start) and before the contender starts — a
/// tiny race with other processes remains, as in every tool that picks ports for another.
pub fn free_ports(
    names: &BTreeSet<String>,
) -> Result<(BTreeMap<String, u16>, Vec<TcpListener>), String> {
    let mut held = Vec::new();
    let mut ports = BTreeMap::new();
    for n in names {
        let l = TcpListener::bind("127.0.0.1:0")
            .map_err(|e| format!("cannot find a free port: {e}"))?;
        let port = l.local_addr().map_err(|e| e.to_string())?.port();
        held.push(l);
        ports.insert(n.clone(), port);
    }
    Ok((ports, held))
}

/// The `host:port` of an endpoint URL when something already accepts connections there.
pub fn answering(endpoint: &str) -> Option<String> {
    let hostport = endpoint.trim_start_matches("http://");
    let hostport = hostport.split('/').next()?;
    let addr = hostport.to_socket_addrs().ok()?.next()?;
    TcpStream::connect_timeout(&addr, Duration::from_millis(200))
        .ok()
        .map(|_| hostport.to_string())
}
