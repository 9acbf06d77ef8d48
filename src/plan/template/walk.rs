//! Every string of a contender, its members and probes, walked in place: where templates fill vars, `{index}` and `{join:…}`.

use super::*;

pub(super) type Edit<'a> = dyn FnMut(&mut String, Option<usize>, &Range<usize>) -> Res<()> + 'a;

/// Every string of a contender, with the span that best locates it and, inside a member,
/// its number.
pub(super) fn walk_contender(c: &mut RawContender, span: Range<usize>, f: &mut Edit) -> Res<()> {
    if let Some(cmd) = &mut c.command {
        let s = cmd.span();
        for a in cmd.get_mut() {
            f(a, None, &s)?;
        }
    }
    for v in c.env.values_mut() {
        f(v, None, &span)?;
    }
    if let Some(d) = &mut c.dir {
        f(d, None, &span)?;
    }
    if let Some(e) = &mut c.endpoint {
        let s = e.span();
        f(e.get_mut(), None, &s)?;
    }
    for p in [&mut c.ready, &mut c.ready_when, &mut c.leader]
        .into_iter()
        .flatten()
    {
        walk_probe(p, None, f)?;
    }
    for cmd in c
        .setup
        .iter_mut()
        .chain(c.cleanup.iter_mut())
        .chain(c.build.iter_mut())
    {
        let s = cmd.span();
        for a in cmd.get_mut() {
            f(a, None, &s)?;
        }
    }
    if let Some(src) = &mut c.source {
        let s = src.span();
        let r = src.get_mut();
        for t in [&mut r.git, &mut r.path, &mut r.reference]
            .into_iter()
            .flatten()
        {
            f(t, None, &s)?;
        }
    }
    for (i, m) in c.members.iter_mut().enumerate() {
        let s = m.span();
        walk_member(m.get_mut(), i + 1, s, f)?;
    }
    Ok(())
}

pub(super) fn walk_member(
    m: &mut RawMember,
    index: usize,
    span: Range<usize>,
    f: &mut Edit,
) -> Res<()> {
    let ix = Some(index);
    if let Some(n) = &mut m.name {
        let s = n.span();
        f(n.get_mut(), ix, &s)?;
    }
    if let Some(a) = &mut m.after {
        let s = a.span();
        for x in a.get_mut() {
            f(x, ix, &s)?;
        }
    }
    let s = m.command.span();
    for a in m.command.get_mut() {
        f(a, ix, &s)?;
    }
    for v in m.env.values_mut() {
        f(v, ix, &span)?;
    }
    if let Some(e) = &mut m.endpoint {
        let s = e.span();
        f(e.get_mut(), ix, &s)?;
    }
    if let Some(p) = &mut m.ready {
        walk_probe(p, ix, f)?;
    }
    for cmd in &mut m.build {
        let s = cmd.span();
        for a in cmd.get_mut() {
            f(a, ix, &s)?;
        }
    }
    if let Some(src) = &mut m.source {
        let s = src.span();
        let r = src.get_mut();
        for t in [&mut r.git, &mut r.path, &mut r.reference]
            .into_iter()
            .flatten()
        {
            f(t, ix, &s)?;
        }
    }
    Ok(())
}

pub(super) fn walk_probe(p: &mut Spanned<RawProbe>, ix: Option<usize>, f: &mut Edit) -> Res<()> {
    let span = p.span();
    let r = p.get_mut();
    for s in [&mut r.tcp, &mut r.http, &mut r.grpc, &mut r.endpoint]
        .into_iter()
        .flatten()
    {
        f(s, ix, &span)?;
    }
    for s in r.command.iter_mut().flatten() {
        f(s, ix, &span)?;
    }
    for s in [
        &mut r.log,
        &mut r.matches,
        &mut r.field,
        &mut r.equals_field,
    ]
    .into_iter()
    .flatten()
    {
        let sp = s.span();
        f(s.get_mut(), ix, &sp)?;
    }
    if let Some(b) = &mut r.body {
        walk_value(b, ix, &span, f)?;
    }
    if let Some(b) = &mut r.equals {
        let sp = b.span();
        walk_value(b.get_mut(), ix, &sp, f)?;
    }
    if let Some(t) = &mut r.tls {
        let sp = t.span();
        let RawTls {
            cacert,
            cert,
            key,
            servername,
            ..
        } = t.get_mut();
        for s in [cacert, cert, key, servername].into_iter().flatten() {
            f(s, ix, &sp)?;
        }
    }
    Ok(())
}

pub(super) fn walk_value(
    v: &mut toml::Value,
    ix: Option<usize>,
    span: &Range<usize>,
    f: &mut Edit,
) -> Res<()> {
    match v {
        toml::Value::String(s) => f(s, ix, span),
        toml::Value::Array(a) => a.iter_mut().try_for_each(|x| walk_value(x, ix, span, f)),
        toml::Value::Table(t) => t
            .iter_mut()
            .try_for_each(|(_, x)| walk_value(x, ix, span, f)),
        _ => Ok(()),
    }
}
