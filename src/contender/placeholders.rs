//! Filling a member's placeholders into its commands and probes.

use super::*;

pub(super) fn expand_all(cmd: &[String], p: &Placeholders) -> Result<Vec<String>, StartError> {
    cmd.iter()
        .map(|a| expand(a, p))
        .collect::<Result<_, _>>()
        .map_err(StartError::Placeholder)
}

pub(super) fn expand_probe(probe: &Probe, p: &Placeholders) -> Result<Probe, StartError> {
    expand_probe_with(probe, &|s| expand(s, p))
}

pub(super) fn expand_probe_with(
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
