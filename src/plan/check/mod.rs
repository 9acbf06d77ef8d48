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
mod contender;
pub(super) mod portable;
use contender::*;

mod paired;
use paired::*;

mod history;
use history::*;

mod scenario;
use scenario::*;

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
    let paired = paired_of(&c, &raw, repetitions)?;
    let cores = raw.cores.as_ref().map(|s| c.cores(s)).transpose()?;
    let protos = c.protos(&raw.protos, base)?;
    let includes = raw.proto_include.iter().map(|p| base.join(p)).collect();

    let contenders = with_reference(&c, &raw, contenders(&c, &raw, base)?)?;

    let scenarios = scenarios(&c, &raw, &contenders, !protos.is_empty())?;
    judged_somewhere(&c, &raw, &paired, &scenarios)?;

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
    let budget = budget(&c, &raw, paired.max_repetitions)?;
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
        history: history(&c, &raw)?,
        confirm: raw.confirm.unwrap_or(true),
        budget,
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

/// `budget`: a duration, or `"off"`; unset, `$BAKEOFF_BUDGET` or the default — unless the
/// plan names `paired.max_repetitions`, which then is exact control, unbounded in time.
fn budget(c: &Checker, raw: &RawPlan, max_repetitions: Option<u32>) -> Res<Option<Duration>> {
    if let Some(b) = &raw.budget {
        return parse_budget(b.get_ref()).map_err(|e| c.at(b, format!("`budget`: {e}")));
    }
    if max_repetitions.is_some() {
        return Ok(None);
    }
    match std::env::var("BAKEOFF_BUDGET") {
        Ok(v) if !v.trim().is_empty() => parse_budget(&v).map_err(|e| {
            c.at(&raw.name, format!("the environment's BAKEOFF_BUDGET=`{v}` (the budget of a plan that names none): {e}"))
        }),
        _ => Ok(Some(crate::plan::DEFAULT_BUDGET)),
    }
}

/// A budget as written (`"10m"`, `"off"`): `None` for off.
pub fn parse_budget(text: &str) -> Result<Option<Duration>, String> {
    if text.trim() == "off" {
        return Ok(None);
    }
    match crate::plan::parse_duration(text) {
        Ok(d) if !d.is_zero() => Ok(Some(d)),
        Ok(_) => Err("must be longer than 0 (`\"off\"` runs the plan's repetitions only)".into()),
        Err(e) => Err(format!("{e} (a duration such as `\"10m\"`, or `\"off\"`)")),
    }
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
