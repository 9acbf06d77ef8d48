//! From the file as written ([`super::raw`]) to the checked plan: every rule a plan must
//! satisfy, each failure pointing at the value that breaks it.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::Path;
use std::time::Duration;

use toml::Spanned;

use super::error::{did_you_mean, Locator, PlanError};
use super::matrix::expand;
use super::raw::{RawContender, RawPlan, RawScenario, RawStep};
use super::*;

pub(super) const DEFAULT_ENDPOINT: &str = "http://127.0.0.1:{port}";

type Res<T> = Result<T, PlanError>;

/// The call keys a scenario and a setup step share (serde cannot flatten them into both
/// while rejecting unknown keys, so the raw types repeat them and this picks them out).
macro_rules! call_fields {
    ($r:expr) => {
        CallFields {
            grpc: $r.grpc.as_ref(),
            http: $r.http.as_ref(),
            jsonrpc: $r.jsonrpc.as_ref(),
            body: $r.body.as_ref(),
            params: $r.params.as_ref(),
            path: $r.path.as_ref(),
            headers: &$r.headers,
            h2: $r.h2,
            stream_interval: $r.stream_interval.as_ref(),
            replies: $r.replies.as_ref(),
        }
    };
}

pub fn check(path: &Path, text: &str) -> Res<Plan> {
    let loc = Locator::new(path, text);
    let raw = expanded(&loc, text)?;
    let base = path.parent().unwrap_or(Path::new("."));
    let c = Checker { loc: &loc };

    let name = raw.name.get_ref().trim().to_string();
    if name.is_empty() {
        return Err(c.at(&raw.name, "`name` must not be empty"));
    }
    let repetitions = match &raw.repetitions {
        None => 3,
        Some(r) if (1..=1000).contains(r.get_ref()) => *r.get_ref() as u32,
        Some(r) => return Err(c.at(r, "`repetitions` must be between 1 and 1000")),
    };
    let order = order_of(&c, &raw)?;
    let paired = match &raw.paired {
        Some(p) => c.paired(p)?,
        None => Paired::default(),
    };
    let cores = raw.cores.as_ref().map(|s| c.cores(s)).transpose()?;
    let protos = c.protos(&raw.protos, base)?;
    let includes = raw.proto_include.iter().map(|p| base.join(p)).collect();

    let contenders = contenders(&c, &raw, base)?;

    let scenarios = scenarios(&c, &raw, &contenders, !protos.is_empty())?;

    let mut compat = c.compat_sets(&raw.compat, base, !protos.is_empty(), raw.seed.unwrap_or(0))?;
    member_references(&c, &raw, &contenders, &mut compat)?;

    tls_is_used(&c, &raw, &contenders, &compat)?;

    // Paired by default wherever there is something to compare: two contenders that serve,
    // one of them against the other.
    let serving = contenders.iter().filter(|x| x.noise_of.is_none()).count();
    let compared = contenders
        .iter()
        .any(|x| x.noise_of.is_none() && x.baseline.as_ref().is_some_and(|b| *b != x.name));
    let order = order.unwrap_or(if serving >= 2 && compared && !scenarios.is_empty() {
        Order::Paired
    } else {
        Order::Interleaved
    });
    Ok(Plan {
        name,
        path: path.to_path_buf(),
        text: text.to_string(),
        repetitions,
        order,
        paired,
        seed: raw.seed.unwrap_or(0),
        cores,
        protos,
        includes,
        contenders,
        scenarios,
        compat,
        log_limit: log_limit(&c, &raw)?,
        confirm: raw.confirm.unwrap_or(true),
        ci: raw
            .ci
            .as_ref()
            .map(|c| Ci {
                setup: c.setup.clone(),
                env: c.env.clone().into_iter().collect(),
            })
            .unwrap_or_default(),
    })
}

/// `order`, when the plan names one.
fn order_of(c: &Checker, raw: &RawPlan) -> Res<Option<Order>> {
    Ok(
        match raw.order.as_ref().map(|o| (o, o.get_ref().as_str())) {
            None => None,
            Some((_, "paired")) => Some(Order::Paired),
            Some((_, "interleaved")) => Some(Order::Interleaved),
            Some((_, "sequential")) => Some(Order::Sequential),
            Some((o, other)) => {
                return Err(c.at(
                    o,
                    format!("`order` is `paired`, `interleaved` or `sequential`, not `{other}`"),
                ))
            }
        },
    )
}

fn log_limit(c: &Checker, raw: &RawPlan) -> Res<u64> {
    Ok(match &raw.log_limit {
        None => super::DEFAULT_LOG_LIMIT,
        Some(l) => match super::parse_size(l.get_ref()) {
            Ok(n) if n >= 1024 => n as u64,
            Ok(_) => return Err(c.at(l, "`log_limit` must be at least 1KiB")),
            Err(e) => return Err(c.at(l, format!("`log_limit`: {e}"))),
        },
    })
}

/// The plan's contenders: each checked, baselines and noise instances named, and each
/// what-if variant right after its contender.
fn contenders(c: &Checker, raw: &RawPlan, base: &Path) -> Res<Vec<Contender>> {
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
    // What-if variants, each right after its contender.
    let mut with_variants: Vec<(String, Spanned<toml::Value>, super::WhatIf)> = Vec::new();
    for (k, rc) in contenders.iter().zip(&raw.contenders) {
        for w in &rc.get_ref().what_if {
            if k.noise_of.is_some() {
                return Err(c.at(w, "`what_if` on a noise instance: it only answers the compat cases; put it on the contender it is a noise instance of"));
            }
            for what in c.what_if(w)? {
                with_variants.push((k.name.clone(), w.clone(), what));
            }
        }
    }
    for (of, w, what) in with_variants {
        super::add_variant(&mut contenders, &of, &what).map_err(|e| c.at(&w, e))?;
    }

    Ok(contenders)
}

/// The plan's scenarios, each checked; a `target = "leader"` needs every cluster's
/// `leader` probe.
fn scenarios(
    c: &Checker,
    raw: &RawPlan,
    contenders: &[Contender],
    has_protos: bool,
) -> Res<Vec<Scenario>> {
    let mut scenarios = Vec::new();
    for rs in &raw.scenarios {
        let s = c.scenario(rs, has_protos)?;
        if scenarios.iter().any(|o: &Scenario| o.name == s.name) {
            return Err(c.at(
                &rs.get_ref().name,
                format!("two scenarios are named `{}`", s.name),
            ));
        }
        scenarios.push(s);
    }

    // `target = "leader"` asks each cluster's `leader` probe before every point.
    for (s, rs) in scenarios.iter().zip(&raw.scenarios) {
        let wants_leader = s.points.iter().any(|p| p.target == Some(Spread::Leader));
        let lacking = contenders
            .iter()
            .find(|k| k.members.len() > 1 && k.leader.is_none() && k.noise_of.is_none());
        if let (true, Some(k)) = (wants_leader, lacking) {
            let at = rs.get_ref().target.as_ref().expect("a leader target");
            return Err(c.at(at, format!("`target = \"leader\"`: contender `{}` has {} members and no `leader` probe to tell which one leads (e.g. `leader = {{ grpc = \"etcdserverpb.Maintenance/Status\", field = \"leader\", equals_field = \"header.member_id\" }}`)", k.name, k.members.len())));
        }
    }

    Ok(scenarios)
}

/// A reference that is a member: of a contender of this plan, a member it has (the first
/// when none is named).
fn member_references(
    c: &Checker,
    raw: &RawPlan,
    contenders: &[Contender],
    compat: &mut [CompatSet],
) -> Res<()> {
    let names: Vec<&str> = contenders.iter().map(|k| k.name.as_str()).collect();
    // A reference that is a member: of a contender of this plan, a member it has.
    for (set, rs) in compat.iter_mut().zip(&raw.compat) {
        let Some(reference) = &mut set.reference else {
            continue;
        };
        let Some((who, member)) = &mut reference.member else {
            continue;
        };
        let rr = rs
            .get_ref()
            .reference
            .as_ref()
            .expect("a reference")
            .get_ref();
        let at = rr.contender.as_ref().expect("a member reference");
        let Some(k) = contenders.iter().find(|k| k.name == *who) else {
            let hint = did_you_mean(who, names.iter().copied());
            return Err(c.at(
                at,
                format!("reference: no contender is named `{who}`{hint}"),
            ));
        };
        if member.is_empty() {
            *member = k.members[0].name.clone();
        }
        if !k.members.iter().any(|m| m.name == *member) {
            let listed: Vec<&str> = k.members.iter().map(|m| m.name.as_str()).collect();
            let at = rr.member.as_ref().unwrap_or(at);
            return Err(c.at(
                at,
                format!(
                    "reference: contender `{who}` has no member `{member}` (its members: {})",
                    listed.join(", ")
                ),
            ));
        }
    }

    Ok(())
}

/// TLS settings no endpoint would use are a mistake, not a plan: every contender's endpoint
/// is plain `http://`, so the certificate would never be read.
fn tls_is_used(
    c: &Checker,
    raw: &RawPlan,
    contenders: &[Contender],
    compat: &[CompatSet],
) -> Res<()> {
    let served: Vec<&str> = contenders
        .iter()
        .flat_map(|k| k.members.iter().map(|m| m.endpoint.as_str()))
        .filter(|e| !e.is_empty())
        .collect();
    let tls_of = raw
        .scenarios
        .iter()
        .map(|s| (s.get_ref().tls.as_ref(), "scenario"))
        .chain(
            raw.compat
                .iter()
                .map(|s| (s.get_ref().tls.as_ref(), "compat set")),
        );
    for (tls, whose) in tls_of {
        if let (Some(t), Some(plain)) = (tls, tls_unused(served.iter().copied())) {
            return Err(c.at(t, format!("`tls` of this {whose}: every contender's endpoint is plain HTTP (`{plain}`), so it would never be used; write the endpoint as `https://…`, or leave `tls` out")));
        }
    }
    for (set, rs) in compat.iter().zip(&raw.compat) {
        let (Some(r), Some(rr)) = (&set.reference, &rs.get_ref().reference) else {
            continue;
        };
        if let (Some(t), Some(plain)) = (&rr.get_ref().tls, tls_unused([r.endpoint.as_str()])) {
            return Err(c.at(t, format!("`tls` of this reference: its endpoint `{plain}` is plain HTTP, so it would never be used; write `https://…`, or leave `tls` out")));
        }
    }

    Ok(())
}

/// The plan as written, its templates expanded (`like`, `members = N`, `{join:…}`, `vars`).
pub(super) fn expanded(loc: &Locator, text: &str) -> Res<RawPlan> {
    let mut raw: RawPlan = toml::from_str(text).map_err(|e| loc.from_toml(&e))?;
    super::template::expand(&mut raw, &|span, message| loc.at(span, message))?;
    Ok(raw)
}

pub(super) struct Checker<'a> {
    pub(super) loc: &'a Locator<'a>,
}

impl Checker<'_> {
    /// `.proto` files, relative to the plan; each must exist.
    pub(super) fn protos(
        &self,
        list: &[Spanned<String>],
        base: &Path,
    ) -> Res<Vec<std::path::PathBuf>> {
        list.iter()
            .map(|p| {
                let file = base.join(p.get_ref());
                if file.extension().is_none_or(|e| e != "proto") {
                    return Err(self.at(p, format!("`{}` is not a .proto file", p.get_ref())));
                }
                if file.is_file() {
                    Ok(file)
                } else {
                    Err(self.at(p, format!("no such .proto file `{}`", file.display())))
                }
            })
            .collect()
    }

    pub(super) fn at<T>(&self, s: &Spanned<T>, message: impl Into<String>) -> PlanError {
        self.loc.at(s.span(), message)
    }

    pub(super) fn span(&self, span: Range<usize>, message: impl Into<String>) -> PlanError {
        self.loc.at(span, message)
    }

    pub(super) fn duration(
        &self,
        s: Option<&Spanned<String>>,
        key: &str,
        default: Duration,
    ) -> Res<Duration> {
        let Some(s) = s else { return Ok(default) };
        match parse_duration(s.get_ref()) {
            Ok(d) if !d.is_zero() => Ok(d),
            Ok(_) => Err(self.at(s, format!("`{key}` must be longer than 0"))),
            Err(e) => Err(self.at(s, format!("`{key}`: {e}"))),
        }
    }

    fn paired(&self, s: &Spanned<raw::RawPaired>) -> Res<Paired> {
        let r = s.get_ref();
        let d = Paired::default();
        let share = |v: Option<&Spanned<String>>, key: &str, default: f64| -> Res<f64> {
            let Some(v) = v else { return Ok(default) };
            match crate::plan::parse_share(v.get_ref()) {
                Some(x) if (0.0..1.0).contains(&x) => Ok(x),
                _ => Err(self.at(
                    v,
                    format!("`paired.{key}` is a percentage below 100%, like \"2%\""),
                )),
            }
        };
        let slice = self.duration(r.slice.as_ref(), "paired.slice", d.slice)?;
        let (max_default, precision_default) = match d.rounds {
            Rounds::Auto { max, precision } => (max, precision),
            Rounds::Fixed(_) => unreachable!("the default is auto"),
        };
        let max = match &r.max_rounds {
            None => max_default,
            Some(m) if (2..=10_000).contains(m.get_ref()) => *m.get_ref() as u32,
            Some(m) => return Err(self.at(m, "`paired.max_rounds` must be between 2 and 10000")),
        };
        let precision = share(r.precision.as_ref(), "precision", precision_default)?;
        let rounds = match r.rounds.as_ref().map(|v| (v, v.get_ref())) {
            None => Rounds::Auto { max, precision },
            Some((_, toml::Value::String(a))) if a == "auto" => Rounds::Auto { max, precision },
            Some((_, toml::Value::Integer(n))) if (1..=10_000).contains(n) => {
                if r.max_rounds.is_some() || r.precision.is_some() {
                    return Err(self.at(s, "`max_rounds` and `precision` are for `rounds = \"auto\"`; a fixed `rounds` runs exactly that many"));
                }
                Rounds::Fixed(*n as u32)
            }
            Some((v, _)) => {
                return Err(self.at(
                    v,
                    "`paired.rounds` is \"auto\" or a number of rounds from 1 to 10000",
                ))
            }
        };
        let fdr = share(r.fdr.as_ref(), "fdr", d.fdr)?;
        // A verdict reads different only when its 95 % interval clears the noise band too,
        // so a rate above 5 % would promise more than the intervals allow.
        if fdr <= 0.0 || fdr > 0.05 {
            let v = r
                .fdr
                .as_ref()
                .expect("only a given fdr can be out of range");
            return Err(self.at(
                v,
                "`paired.fdr` is a false discovery rate above 0% and at most 5%, like \"5%\" or \"1%\"",
            ));
        }
        Ok(Paired {
            slice,
            rounds,
            noise: share(r.noise.as_ref(), "noise", d.noise)?,
            equivalence: share(r.equivalence.as_ref(), "equivalence", d.equivalence)?,
            fdr,
        })
    }

    fn cores(&self, s: &Spanned<raw::RawCores>) -> Res<Cores> {
        let r = s.get_ref();
        if r.contender.is_empty() || r.load.is_empty() {
            return Err(self.at(
                s,
                "`cores` needs both `contender = [...]` and `load = [...]`",
            ));
        }
        if let Some(shared) = r.contender.iter().find(|c| r.load.contains(c)) {
            return Err(self.at(
                s,
                format!("CPU {shared} is in both `cores.contender` and `cores.load`; they must not share CPUs"),
            ));
        }
        Ok(Cores {
            contender: r.contender.clone(),
            load: r.load.clone(),
        })
    }

    fn contender(&self, s: &Spanned<RawContender>, base: &Path) -> Res<Contender> {
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
            source: super::source::check(r, base, &|span, m| self.span(span, m))?,
        })
    }

    /// One `[[contender.member]]` of contender `name` (its env after the contender's, its
    /// probe the contender's `ready` when it has none).
    fn member(
        &self,
        m: &Spanned<super::raw::RawMember>,
        name: &str,
        env: &[(String, String)],
        ready: Option<&Spanned<super::raw::RawProbe>>,
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
        let source = super::source::member(
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
    fn start_order(&self, raw: &[Spanned<super::raw::RawMember>], members: &[Member]) -> Res<()> {
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
        if super::start_order(members).is_none() {
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

    pub(super) fn name(&self, s: &Spanned<String>, what: &str) -> Res<String> {
        let n = s.get_ref().trim();
        if n.is_empty() || !n.chars().all(|c| c.is_alphanumeric() || "-_.".contains(c)) {
            return Err(self.at(
                s,
                format!("a {what} name is letters, digits, `-`, `_` or `.`, not `{n}`"),
            ));
        }
        Ok(n.to_string())
    }

    /// One `what_if` entry: the variants it makes (`nodelay`; `rpc+0ms`, `rpc+1ms`, … for
    /// `{ delay = "rpc", by = ["1ms", …] }`).
    fn what_if(&self, w: &Spanned<toml::Value>) -> Res<Vec<super::WhatIf>> {
        use toml::Value;
        let known = || {
            format!(
                "it knows {} (TCP_NODELAY forced on the contender's sockets from outside), or a delay on one edge between members: `{{ delay = \"rpc\", by = [\"1ms\", \"2ms\", \"4ms\"] }}`",
                super::WHAT_IFS.join(", ")
            )
        };
        match w.get_ref() {
            Value::String(s) => {
                if let Some(known) = super::WhatIf::named(s) {
                    return Ok(vec![known]);
                }
                let hint = did_you_mean(s, super::WHAT_IFS.iter().copied());
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
                        .and_then(super::parse_duration)
                        .map_err(|e| self.at(w, format!("`what_if`: `by`: {e}")))?;
                    // A hold is kept to the µs (a variant's name shows it so).
                    let d = Duration::from_micros(d.as_micros() as u64);
                    if d.is_zero() || d > Duration::from_secs(1) {
                        return Err(self.at(w, "`what_if`: each hold in `by` is at least 1µs and at most 1s (0 is run anyway: the proxy alone)"));
                    }
                    if holds.contains(&d) {
                        return Err(self.at(
                            w,
                            format!("`what_if`: `by` lists {} twice", super::fmt_hold(d)),
                        ));
                    }
                    holds.push(d);
                }
                Ok(holds
                    .into_iter()
                    .map(|d| super::WhatIf::delay(&port, d))
                    .collect())
            }
            _ => Err(self.at(
                w,
                format!("`what_if`: an entry is a name or a table; {}", known()),
            )),
        }
    }

    pub(super) fn tls(&self, raw: Option<&Spanned<super::raw::RawTls>>) -> Res<super::TlsSpec> {
        let Some(t) = raw else {
            return Ok(super::TlsSpec::default());
        };
        let r = t.get_ref();
        if r.cert.is_some() != r.key.is_some() {
            return Err(self.at(
                t,
                "`tls`: `cert` and `key` go together (the client certificate and its key)",
            ));
        }
        Ok(super::TlsSpec {
            cacert: r.cacert.clone(),
            cert: r.cert.clone(),
            key: r.key.clone(),
            insecure: r.insecure,
            servername: r.servername.clone(),
            base: self.loc.dir(),
        })
    }

    pub(super) fn command(&self, s: &Spanned<Vec<String>>) -> Res<Vec<String>> {
        match s.get_ref().first() {
            Some(p) if !p.trim().is_empty() => {
                for arg in s.get_ref() {
                    placeholders_ok(arg).map_err(|e| self.at(s, e))?;
                }
                Ok(s.get_ref().clone())
            }
            _ => Err(self.at(s, "a command is a list: program first, then its arguments")),
        }
    }

    /// An endpoint bakeoff can serve: `http://` or `https://`, placeholders well formed.
    fn endpoint(&self, e: &Spanned<String>) -> Res<String> {
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

    fn scenario(&self, s: &Spanned<RawScenario>, has_protos: bool) -> Res<Scenario> {
        let r = s.get_ref();
        let name = r.name.get_ref().trim().to_string();
        if name.is_empty() {
            return Err(self.at(&r.name, "a scenario needs a `name`"));
        }
        let fields = call_fields!(r);
        let call = self.call(s.span(), &fields, has_protos)?;
        let clients = self.clients(r)?;
        let targets = self.targets(r)?;
        let axes = self.axes(r)?;
        let var_names: Vec<&str> = axes.iter().map(|(k, _)| k.as_str()).collect();
        self.vars_known(&call, &var_names, s.span())?;
        let stop = self.stop(r)?;
        let (pacing, rates) = self.rates(r, stop)?;
        let mut setup = Vec::new();
        for st in &r.setup {
            setup.push(self.step(st, has_protos, &var_names)?);
        }
        let capacity = r.capacity.as_ref().map(|c| self.capacity(c)).transpose()?;
        let stages = r
            .stages
            .iter()
            .map(|st| self.stage(st))
            .collect::<Res<Vec<_>>>()?;
        self.one_shape(r, capacity.is_some(), &stages)?;
        let points = expand(&name, &targets, &axes, &rates, &clients);
        Ok(Scenario {
            profile: r.profile.as_ref().is_some_and(|p| *p.get_ref()),
            capacity,
            stages,
            name,
            call,
            points,
            stop,
            pacing,
            warmup: match &r.warmup {
                None => Duration::ZERO,
                Some(w) => self.duration(Some(w), "warmup", Duration::ZERO)?,
            },
            timeout: self.duration(r.timeout.as_ref(), "timeout", Duration::from_secs(20))?,
            setup,
            tls: self.tls(r.tls.as_ref())?,
        })
    }

    /// `clients`: one number or a list, sorted, each once.
    fn clients(&self, r: &RawScenario) -> Res<Vec<usize>> {
        let mut clients: Vec<usize> = match &r.clients {
            None => vec![1],
            Some(c) => {
                let v = c.get_ref().to_vec();
                if v.is_empty() || v.iter().any(|&n| !(1..=100_000).contains(&n)) {
                    return Err(self.at(
                        c,
                        "`clients` must be at least 1 (a number or a list of numbers)",
                    ));
                }
                v.into_iter().map(|n| n as usize).collect()
            }
        };
        clients.sort_unstable();
        clients.dedup();
        Ok(clients)
    }

    fn targets(&self, r: &RawScenario) -> Res<Vec<Option<Spread>>> {
        Ok(match &r.target {
            None => vec![None],
            Some(t) => t
                .get_ref()
                .to_vec()
                .iter()
                .map(|v| match v.as_str() {
                    "first" => Ok(Some(Spread::First)),
                    "all" => Ok(Some(Spread::All)),
                    "leader" => Ok(Some(Spread::Leader)),
                    o => Err(self.at(
                        t,
                        format!("`target` is `first`, `all` or `leader`, not `{o}`"),
                    )),
                })
                .collect::<Res<Vec<_>>>()?,
        })
    }

    /// The `matrix`: each variable with its values as text, in plan order.
    fn axes(&self, r: &RawScenario) -> Res<Vec<(String, Vec<String>)>> {
        let mut axes: Vec<(String, Vec<String>)> = Vec::new();
        for (k, vals) in &r.matrix {
            if !k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') || k == "seq" {
                return Err(self.at(vals, format!("`{k}` cannot be a matrix variable: use letters, digits and `_` (and not `seq`)")));
            }
            if vals.get_ref().is_empty() {
                return Err(self.at(vals, format!("matrix variable `{k}` has no values")));
            }
            let texts = vals
                .get_ref()
                .iter()
                .map(|v| match v {
                    toml::Value::String(s) => Ok(s.clone()),
                    toml::Value::Integer(i) => Ok(i.to_string()),
                    toml::Value::Float(f) => Ok(f.to_string()),
                    toml::Value::Boolean(b) => Ok(b.to_string()),
                    _ => Err(self.at(vals, format!("values of `{k}` must be strings or numbers"))),
                })
                .collect::<Res<Vec<_>>>()?;
            axes.push((k.clone(), texts));
        }
        Ok(axes)
    }

    /// `duration` or `requests` (10 s when neither is given).
    fn stop(&self, r: &RawScenario) -> Res<Stop> {
        Ok(match (&r.duration, &r.requests) {
            (Some(d), None) => {
                Stop::Duration(self.duration(Some(d), "duration", Duration::ZERO)?)
            }
            (None, Some(n)) if *n.get_ref() >= 1 => Stop::Count(*n.get_ref() as u64),
            (None, Some(n)) => return Err(self.at(n, "`requests` must be at least 1")),
            (None, None) => Stop::Duration(Duration::from_secs(10)),
            (Some(d), Some(_)) => return Err(self.at(d, "give `duration` or `requests`, not both")),
        })
    }

    /// `rate`: one rate is the scenario's pacing; a list is an axis, like `clients`.
    fn rates(&self, r: &RawScenario, stop: Stop) -> Res<(Pacing, Vec<Option<f64>>)> {
        let rate_list = r.rate.as_ref().map(|q| (q, q.get_ref().to_vec()));
        if let Some((q, list)) = &rate_list {
            if list.is_empty() || list.iter().any(|x| !(x.is_finite() && *x > 0.0)) {
                return Err(self.at(
                    q,
                    "`rate` must be a positive number of requests per second (or a list of them)",
                ));
            }
        }
        // Every rate must send at least one request in the duration (the engine would refuse
        // it later, naming its command-line flag).
        if let (Some((q, list)), Stop::Duration(d)) = (&rate_list, stop) {
            if let Some(x) = list.iter().find(|x| 1.0 / **x > d.as_secs_f64()) {
                return Err(self.at(
                    q,
                    format!(
                        "`rate` {x}: one request every {:.3} s does not fit in the {d:?} `duration`; raise the rate or lengthen the duration",
                        1.0 / x
                    ),
                ));
            }
        }
        Ok(match &rate_list {
            None => (Pacing::Closed, vec![None]),
            Some((q, list)) => match q.get_ref() {
                super::raw::OneOrMany::One(x) => (Pacing::Open { rate: *x }, vec![None]),
                super::raw::OneOrMany::Many(_) => (
                    Pacing::Open { rate: list[0] },
                    list.iter().map(|x| Some(*x)).collect(),
                ),
            },
        })
    }

    /// A scenario is one shape: a capacity search, stages, or points at fixed load — and
    /// only a plain point is profiled.
    fn one_shape(&self, r: &RawScenario, capacity: bool, stages: &[Stage]) -> Res<()> {
        let rate_list = r.rate.as_ref().map(|q| (q, q.get_ref().to_vec()));
        if let Some(c) = &r.capacity {
            if let Some(q) = &r.rate {
                return Err(self.at(
                    q,
                    "a `capacity` search chooses the rates itself: leave out `rate`",
                ));
            }
            if let Some(n) = &r.requests {
                return Err(self.at(n, "a `capacity` search measures each step for `capacity.step`: leave out `requests`"));
            }
            if !r.stages.is_empty() {
                return Err(self.at(c, "give `capacity` or `stages`, not both"));
            }
        }
        if let Some(st) = r.stages.first() {
            if let Some(n) = &r.requests {
                return Err(self.at(
                    n,
                    "each stage runs for its own `duration`: leave out `requests`",
                ));
            }
            if let Some(q) = rate_list
                .as_ref()
                .filter(|(q, _)| matches!(q.get_ref(), super::raw::OneOrMany::Many(_)))
            {
                return Err(self.at(q.0, "a rate list is an axis of points; `stages` ramp within one point — give one of them"));
            }
            let open = stages.iter().filter(|x| x.rate.is_some()).count();
            if open != 0 && open != stages.len() {
                return Err(self.at(
                    st,
                    "stages are all open loop (`rate`) or all closed (`clients`), not a mix",
                ));
            }
        }
        if let Some(p) = r.profile.as_ref().filter(|p| *p.get_ref()) {
            if capacity || !stages.is_empty() {
                return Err(self.at(p, "`profile` records a point's load; a capacity search or a ramp changes its load as it goes — profile a plain point of the same call instead"));
            }
        }
        Ok(())
    }

    fn capacity(&self, s: &Spanned<super::raw::RawCapacity>) -> Res<Capacity> {
        let r = s.get_ref();
        let goals: Vec<(Percentile, &Spanned<String>)> = [
            (Percentile::P50, &r.p50),
            (Percentile::P90, &r.p90),
            (Percentile::P99, &r.p99),
            (Percentile::P99_9, &r.p99_9),
        ]
        .into_iter()
        .filter_map(|(p, v)| v.as_ref().map(|v| (p, v)))
        .collect();
        let [(percentile, goal)] = goals[..] else {
            return Err(self.at(s, "`capacity` needs one latency goal: `p50`, `p90`, `p99` or `p99_9`, e.g. `p99 = \"10ms\"`"));
        };
        let goal = self.duration(Some(goal), percentile.as_str(), Duration::ZERO)?;
        let rate = |v: &Spanned<f64>, key: &str| -> Res<f64> {
            let x = *v.get_ref();
            if x.is_finite() && x > 0.0 && x <= 1e9 {
                Ok(x)
            } else {
                Err(self.at(
                    v,
                    format!("`capacity.{key}` is a rate in requests per second, above 0"),
                ))
            }
        };
        let max_rate = rate(&r.max_rate, "max_rate")?;
        let step = self.duration(r.step.as_ref(), "capacity.step", Duration::from_secs(2))?;
        // Enough calls at every step that one stall of the host cannot decide it.
        let fewest = MIN_STEP_CALLS as f64 / step.as_secs_f64();
        let min_rate = match &r.min_rate {
            Some(m) => rate(m, "min_rate")?,
            None => (max_rate / 1024.0).max(fewest).min(max_rate),
        };
        if min_rate > max_rate {
            return Err(self.at(
                r.min_rate.as_ref().expect("given"),
                "`capacity.min_rate` is above `max_rate`",
            ));
        }
        if min_rate * step.as_secs_f64() < MIN_STEP_CALLS as f64 - 1e-9 {
            return Err(self.at(
                r.min_rate.as_ref().unwrap_or(&r.max_rate),
                format!(
                    "`capacity`: a step needs at least {MIN_STEP_CALLS} calls to be judged (one stall of the host would decide a smaller one), and {min_rate} req/s for {step:?} is {:.0}; raise `min_rate` to {fewest} or lengthen `step`",
                    min_rate * step.as_secs_f64()
                ),
            ));
        }
        let step_warmup = match &r.step_warmup {
            None => Duration::from_millis(200),
            Some(w) => self.duration(Some(w), "capacity.step_warmup", Duration::ZERO)?,
        };
        let precision =
            match &r.precision {
                None => 0.05,
                Some(p) => match parse_share(p.get_ref()) {
                    Some(x) if x > 0.0 && x < 1.0 => x,
                    _ => return Err(self.at(
                        p,
                        "`capacity.precision` is a percentage above 0 and below 100%, like \"5%\"",
                    )),
                },
            };
        let max_steps = match &r.max_steps {
            None => 20,
            Some(n) if (2..=200).contains(n.get_ref()) => *n.get_ref() as u32,
            Some(n) => return Err(self.at(n, "`capacity.max_steps` is between 2 and 200")),
        };
        let every = 1.0 / min_rate;
        if every > step.as_secs_f64() {
            return Err(self.at(s, format!("`capacity`: at the lowest rate, {min_rate} req/s, one request every {every:.2} s does not fit in a {step:?} step; raise `min_rate` or lengthen `step`")));
        }
        Ok(Capacity {
            percentile,
            goal,
            min_rate,
            max_rate,
            step,
            step_warmup,
            precision,
            max_steps,
        })
    }

    fn stage(&self, s: &Spanned<super::raw::RawStage>) -> Res<Stage> {
        let r = s.get_ref();
        let duration = self.duration(Some(&r.duration), "duration", Duration::ZERO)?;
        let rate = match &r.rate {
            None => None,
            Some(q) if q.get_ref().is_finite() && *q.get_ref() > 0.0 => {
                if 1.0 / q.get_ref() > duration.as_secs_f64() {
                    return Err(self.at(
                        q,
                        "at this rate not one request fits in the stage's `duration`",
                    ));
                }
                Some(*q.get_ref())
            }
            Some(q) => return Err(self.at(q, "a stage's `rate` is requests per second, above 0")),
        };
        let clients = match &r.clients {
            None => None,
            Some(n) if (1..=100_000).contains(n.get_ref()) => Some(*n.get_ref() as usize),
            Some(n) => return Err(self.at(n, "a stage's `clients` is from 1 to 100000")),
        };
        if rate.is_none() && clients.is_none() {
            return Err(self.at(
                s,
                "a stage needs a `rate` (open loop) or `clients` (closed loop)",
            ));
        }
        Ok(Stage {
            rate,
            clients,
            duration,
        })
    }

    pub(super) fn step(&self, s: &Spanned<RawStep>, has_protos: bool, vars: &[&str]) -> Res<Step> {
        let r = s.get_ref();
        let fields = call_fields!(r);
        let call = self.call(s.span(), &fields, has_protos)?;
        self.vars_known(&call, vars, s.span())?;
        let requests = match &r.requests {
            None => 1,
            Some(n) if *n.get_ref() >= 1 => *n.get_ref() as u64,
            Some(n) => return Err(self.at(n, "`requests` must be at least 1")),
        };
        Ok(Step { call, requests })
    }
}

/// `{port}`, `{port:NAME}` and `{env:NAME}` must be whole: a `{port` without its `}` (or with
/// an empty name) would reach the program as written.
/// A URL in a plan never carries a password: it would be copied into results.json, the
/// report and every message that names the endpoint.
/// The first of `endpoints` when every one is plain `http://` (TLS settings for them would
/// never be used); `None` when any is `https://`, or there are none.
pub(super) fn tls_unused<'a>(endpoints: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let mut first = None;
    for e in endpoints {
        if !e.starts_with("http://") {
            return None;
        }
        first.get_or_insert(e);
    }
    first
}

pub(super) fn no_credentials(url: &str) -> Result<(), String> {
    let masked = crate::protocol::target::Endpoint::redact(url);
    if masked == url {
        return Ok(());
    }
    Err(format!(
        "`{masked}` carries credentials, which would be written into the results and the report: give them as a header instead (`headers = {{ authorization = \"Basic {{env:…}}\" }}`)"
    ))
}

/// The fewest calls a capacity step is judged on.
pub const MIN_STEP_CALLS: u64 = 50;

fn placeholders_ok(text: &str) -> Result<(), String> {
    for (key, named) in [("{port", false), ("{env:", true)] {
        let mut rest = text;
        while let Some(i) = rest.find(key) {
            let after = &rest[i + key.len()..];
            let ok = if named {
                after.find('}').is_some_and(|e| e > 0)
            } else if let Some(n) = after.strip_prefix(':') {
                n.find('}').is_some_and(|e| {
                    e > 0
                        && n[..e]
                            .chars()
                            .all(|c| c.is_alphanumeric() || "-_".contains(c))
                })
            } else {
                after.starts_with('}')
            };
            if !ok {
                let form = if named {
                    "{env:NAME}"
                } else {
                    "{port} or {port:NAME}"
                };
                return Err(format!(
                    "`{text}`: a placeholder is cut short; write {form}"
                ));
            }
            rest = after;
        }
    }
    Ok(())
}

pub(super) struct CallFields<'a> {
    pub(super) grpc: Option<&'a Spanned<String>>,
    pub(super) http: Option<&'a Spanned<String>>,
    pub(super) jsonrpc: Option<&'a Spanned<String>>,
    pub(super) body: Option<&'a Spanned<toml::Value>>,
    pub(super) params: Option<&'a Spanned<toml::Value>>,
    pub(super) path: Option<&'a Spanned<String>>,
    pub(super) headers: &'a BTreeMap<String, String>,
    pub(super) h2: bool,
    pub(super) stream_interval: Option<&'a Spanned<String>>,
    pub(super) replies: Option<&'a Spanned<i64>>,
}

/// A body or params value: a string is used as written, a table or array becomes JSON.
pub(super) fn value_text(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        other => serde_json::to_string(other).expect("TOML values serialize to JSON"),
    }
}
