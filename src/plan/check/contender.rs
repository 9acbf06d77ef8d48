//! Checking a `[[contender]]`: its members, their start order, endpoints and probes, its baseline, noise instances and what-if variants.

use super::*;

impl Checker<'_> {
    pub(super) fn contender(&self, s: &Spanned<RawContender>, base: &Path) -> Res<Contender> {
        let r = s.get_ref();
        let name = self.name(&r.name, "contender")?;
        let env: Vec<(String, String)> = r.env.clone().into_iter().collect();
        let mut members = Vec::new();
        match (&r.command, r.members.is_empty()) {
            (Some(cmd), true) => {
                let endpoint = r.endpoint.as_ref().map(|e| self.endpoint(e)).transpose()?;
                members.push(Member {
                    name: name.clone(),
                    command: self.command(cmd)?,
                    env: env.clone(),
                    endpoint: endpoint.clone().unwrap_or(DEFAULT_ENDPOINT.into()),
                    ready: self.probe_or_tcp(r.ready.as_ref(), endpoint.as_deref())?,
                    after: Vec::new(),
                    source: None,
                });
            }
            (None, false) => {
                if let Some(e) = &r.endpoint {
                    return Err(self.at(e, "a cluster gives each `[[contender.member]]` its own `endpoint`"));
                }
                for m in &r.members {
                    let member = self.member(m, &name, &env, r.ready.as_ref(), base)?;
                    if members.iter().any(|o: &Member| o.name == member.name) {
                        let at = m.get_ref().name.as_ref().expect("named");
                        return Err(self.at(at, format!("two members are named `{}`", member.name)));
                    }
                    members.push(member);
                }
                self.start_order(&r.members, &members)?;
            }
            (Some(cmd), false) => {
                return Err(self.at(cmd, "give either `command` or `[[contender.member]]` sections, not both"))
            }
            (None, true) => {
                return Err(self.at(&r.name, format!("contender `{name}` needs a `command` (or `[[contender.member]]` sections for a cluster)")))
            }
        }
        let ready_when = r.ready_when.as_ref().map(|p| self.probe(p)).transpose()?;
        let leader = r.leader.as_ref().map(|p| self.probe(p)).transpose()?;
        let dir = r.dir.as_ref().map(|d| base.join(d));
        if let Some(d) = dir.as_ref().filter(|d| !d.is_dir()) {
            return Err(self.at(
                &r.name,
                format!(
                    "contender `{name}`: its `dir` `{}` is not a folder (`dir` is relative to the plan file's folder, {})",
                    d.display(),
                    if base.as_os_str().is_empty() { Path::new(".") } else { base }.display()
                ),
            ));
        }
        Ok(Contender {
            name,
            baseline: None,
            members,
            ready_when,
            setup: r
                .setup
                .iter()
                .map(|c| self.command(c))
                .collect::<Res<_>>()?,
            cleanup: r
                .cleanup
                .iter()
                .map(|c| self.command(c))
                .collect::<Res<_>>()?,
            stop_timeout: self.duration(
                r.stop_timeout.as_ref(),
                "stop_timeout",
                Duration::from_secs(10),
            )?,
            dir,
            noise_of: None,
            leader,
            variant: None,
            source: super::super::source::check(r, base, &|span, m| self.span(span, m))?,
        })
    }

    /// One `[[contender.member]]` of contender `name` (its env after the contender's, its
    /// probe the contender's `ready` when it has none).
    pub(super) fn member(
        &self,
        m: &Spanned<super::super::raw::RawMember>,
        name: &str,
        env: &[(String, String)],
        ready: Option<&Spanned<super::super::raw::RawProbe>>,
        base: &Path,
    ) -> Res<Member> {
        let mr = m.get_ref();
        let Some(spanned_name) = &mr.name else {
            return Err(self.at(m, "a `[[contender.member]]` needs a `name` (or the contender `members = N`, which names them m1..mN)"));
        };
        let mname = self.name(spanned_name, "member")?;
        let mut menv = env.to_vec();
        menv.extend(mr.env.clone());
        let endpoint = mr.endpoint.as_ref().map(|e| self.endpoint(e)).transpose()?;
        let ready = mr.ready.as_ref().or(ready);
        let source = super::super::source::member(
            mr,
            &format!("contender `{name}`, member `{mname}`"),
            base,
            &|span, m| self.span(span, m),
        )?;
        Ok(Member {
            name: mname,
            command: self.command(&mr.command)?,
            env: menv,
            endpoint: endpoint.clone().unwrap_or(DEFAULT_ENDPOINT.into()),
            ready: self.probe_or_tcp(ready, endpoint.as_deref())?,
            after: mr
                .after
                .as_ref()
                .map(|a| a.get_ref().clone())
                .unwrap_or_default(),
            source,
        })
    }

    /// `after` names other members of the contender, and never goes round in a circle.
    pub(super) fn start_order(
        &self,
        raw: &[Spanned<super::super::raw::RawMember>],
        members: &[Member],
    ) -> Res<()> {
        let names: Vec<&str> = members.iter().map(|m| m.name.as_str()).collect();
        for (m, rm) in members.iter().zip(raw) {
            let Some(after) = &rm.get_ref().after else {
                continue;
            };
            for a in &m.after {
                if !names.contains(&a.as_str()) {
                    let hint = did_you_mean(a, names.iter().copied());
                    return Err(self.at(after, format!("`after`: member `{}` waits for `{a}`, but no member of this contender is named so{hint}", m.name)));
                }
                if *a == m.name {
                    return Err(self.at(
                        after,
                        format!("`after`: member `{a}` cannot wait for itself"),
                    ));
                }
            }
        }
        if super::super::start_order(members).is_none() {
            let (_, rm) = members
                .iter()
                .zip(raw)
                .find(|(m, _)| !m.after.is_empty())
                .expect("a circle needs an `after`");
            let after = rm.get_ref().after.as_ref().expect("has after");
            let stuck: Vec<&str> = members
                .iter()
                .filter(|m| !m.after.is_empty())
                .map(|m| m.name.as_str())
                .collect();
            return Err(self.at(
                after,
                format!(
                    "`after` goes round in a circle: none of {} can start first",
                    stuck.join(", ")
                ),
            ));
        }
        Ok(())
    }

    /// One `what_if` entry: the variants it makes (`nodelay`; `rpc+0ms`, `rpc+1ms`, … for
    /// `{ delay = "rpc", by = ["1ms", …] }`).
    pub(super) fn what_if(&self, w: &Spanned<toml::Value>) -> Res<Vec<super::super::WhatIf>> {
        use toml::Value;
        let known = || {
            format!(
                "it knows {} (TCP_NODELAY forced on the contender's sockets from outside), or a delay on one edge between members: `{{ delay = \"rpc\", by = [\"1ms\", \"2ms\", \"4ms\"] }}`",
                super::super::WHAT_IFS.join(", ")
            )
        };
        match w.get_ref() {
            Value::String(s) => {
                if let Some(known) = super::super::WhatIf::named(s) {
                    return Ok(vec![known]);
                }
                let hint = did_you_mean(s, super::super::WHAT_IFS.iter().copied());
                Err(self.at(
                    w,
                    format!(
                        "`what_if`: `{s}` is not a what-if bakeoff knows{hint}; {}",
                        known()
                    ),
                ))
            }
            Value::Table(t) => {
                if let Some(k) = t.keys().find(|k| !["delay", "by"].contains(&k.as_str())) {
                    return Err(self.at(w, format!("`what_if`: a delay has `delay` (a port's name) and `by` (the holds), not `{k}`")));
                }
                let port = match t.get("delay") {
                    Some(Value::String(p)) if !p.is_empty() => p.clone(),
                    _ => return Err(self.at(w, "`what_if`: `delay` names the port of the edge to slow, as in `{port:rpc}`: `delay = \"rpc\"`")),
                };
                let by = match t.get("by") {
                    Some(Value::Array(a)) if !a.is_empty() && a.len() <= 8 => a,
                    _ => return Err(self.at(w, "`what_if`: `by` lists 1 to 8 holds to add, e.g. `by = [\"1ms\", \"2ms\", \"4ms\"]`")),
                };
                let mut holds = vec![Duration::ZERO];
                for b in by {
                    let d = b
                        .as_str()
                        .ok_or_else(|| "a hold is a duration like \"1ms\"".to_string())
                        .and_then(super::super::parse_duration)
                        .map_err(|e| self.at(w, format!("`what_if`: `by`: {e}")))?;
                    // A hold is kept to the µs (a variant's name shows it so).
                    let d = Duration::from_micros(d.as_micros() as u64);
                    if d.is_zero() || d > Duration::from_secs(1) {
                        return Err(self.at(w, "`what_if`: each hold in `by` is at least 1µs and at most 1s (0 is run anyway: the proxy alone)"));
                    }
                    if holds.contains(&d) {
                        return Err(self.at(
                            w,
                            format!("`what_if`: `by` lists {} twice", super::super::fmt_hold(d)),
                        ));
                    }
                    holds.push(d);
                }
                Ok(holds
                    .into_iter()
                    .map(|d| super::super::WhatIf::delay(&port, d))
                    .collect())
            }
            _ => Err(self.at(
                w,
                format!("`what_if`: an entry is a name or a table; {}", known()),
            )),
        }
    }

    /// An endpoint bakeoff can serve: `http://` or `https://`, placeholders well formed.
    pub(super) fn endpoint(&self, e: &Spanned<String>) -> Res<String> {
        let text = e.get_ref();
        if !(text.starts_with("http://") || text.starts_with("https://")) {
            return Err(self.at(
                e,
                format!("`{text}` is not an http:// or https:// endpoint"),
            ));
        }
        placeholders_ok(text).map_err(|m| self.at(e, m))?;
        no_credentials(text).map_err(|m| self.at(e, m))?;
        Ok(text.clone())
    }
}

/// The plan's contenders: each checked, baselines and noise instances named, and each
/// what-if variant right after its contender.
pub(super) fn contenders(c: &Checker, raw: &RawPlan, base: &Path) -> Res<Vec<Contender>> {
    let loc = c.loc;
    if raw.contenders.is_empty() {
        return Err(loc.at(0..0, "a plan needs at least one [[contender]]"));
    }
    let mut contenders = Vec::new();
    for rc in &raw.contenders {
        let k = c.contender(rc, base)?;
        if contenders.iter().any(|o: &Contender| o.name == k.name) {
            return Err(c.at(
                &rc.get_ref().name,
                format!("two contenders are named `{}`", k.name),
            ));
        }
        contenders.push(k);
    }
    let names: Vec<String> = contenders.iter().map(|k| k.name.clone()).collect();
    let known = |s: &Spanned<String>| -> Res<String> {
        let n = s.get_ref();
        if names.contains(n) {
            return Ok(n.clone());
        }
        let hint = did_you_mean(n, names.iter().map(String::as_str));
        Err(c.at(s, format!("no contender is named `{n}`{hint}")))
    };
    let plan_baseline = raw.baseline.as_ref().map(known).transpose()?;
    for (k, rc) in contenders.iter_mut().zip(&raw.contenders) {
        k.baseline = match &rc.get_ref().baseline {
            Some(b) => Some(known(b)?),
            None => plan_baseline.clone(),
        };
    }

    for (k, rc) in contenders.iter_mut().zip(&raw.contenders) {
        if let Some(n) = &rc.get_ref().noise_of {
            let target = known(n)?;
            if target == k.name {
                return Err(c.at(
                    n,
                    "`noise_of` names another contender (a second instance of its build)",
                ));
            }
            k.noise_of = Some(target);
        }
    }
    if let Some(k) = contenders.iter().find(|k| {
        k.noise_of.as_ref().is_some_and(|t| {
            contenders
                .iter()
                .any(|o| &o.name == t && o.noise_of.is_some())
        })
    }) {
        return Err(loc.at(0..0, format!("`{}` is a noise instance of a noise instance; point `noise_of` at the real contender", k.name)));
    }
    if contenders.len() > MOST_CONTENDERS {
        return Err(c.at(&raw.contenders[MOST_CONTENDERS], format!("more than {MOST_CONTENDERS} contenders; each is started and measured every repetition")));
    }
    // What-if variants, each right after its contender.
    let mut with_variants: Vec<(String, Spanned<toml::Value>, super::super::WhatIf)> = Vec::new();
    for (k, rc) in contenders.iter().zip(&raw.contenders) {
        for w in &rc.get_ref().what_if {
            if k.noise_of.is_some() {
                return Err(c.at(w, "`what_if` on a noise instance: it only answers the compat cases; put it on the contender it is a noise instance of"));
            }
            for what in c.what_if(w)? {
                if with_variants.len() == MOST_VARIANTS {
                    return Err(c.at(w, format!("`what_if`: more than {MOST_VARIANTS} variants in the plan; each is a contender started and measured every repetition")));
                }
                with_variants.push((k.name.clone(), w.clone(), what));
            }
        }
    }
    for (of, w, what) in with_variants {
        super::super::add_variant(&mut contenders, &of, &what).map_err(|e| c.at(&w, e))?;
    }

    Ok(contenders)
}

/// The most what-if variants a plan may ask for (10,000 once made 80,002 contenders and a
/// `plan check` quadratic in them).
const MOST_VARIANTS: usize = 64;

/// The most contenders a plan may have, its own (variants come on top).
const MOST_CONTENDERS: usize = 256;
