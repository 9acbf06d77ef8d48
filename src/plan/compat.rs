//! Checking `[[compat]]` sections (in a plan or a `bakeoff diff` cases file): where the
//! requests come from (a JSONL file, the plan itself, a seeded generator), how answers are
//! normalized, and whether a difference counts.

use std::path::Path;

use toml::Spanned;

use super::check::{value_text, CallFields, Checker};
use super::error::{Locator, PlanError};
use super::raw::{RawCasesFile, RawCompat, RawGenerate, RawReference};
use super::{Call, Case, CasesFile, CompatMode, CompatSet, FieldMap, Reference, Transform};
use crate::protocol::template::Template;

type Res<T> = Result<T, PlanError>;

/// The most bytes the cases of one `[[compat]]` section may hold in all (a cases file, or
/// what `generate` renders): they are all kept for the run.
pub const CASES_LIMIT: u64 = 256 << 20;

impl Checker<'_> {
    /// Every `[[compat]]` section, with names unique.
    pub(super) fn compat_sets(
        &self,
        raw: &[Spanned<RawCompat>],
        base: &Path,
        has_protos: bool,
        seed: u64,
    ) -> Res<Vec<CompatSet>> {
        let mut sets: Vec<CompatSet> = Vec::new();
        let mut held = 0u64;
        for s in raw {
            // Every section's cases are kept for the run: the limit holds for all of them,
            // and what a section may still add is bounded before it is read or rendered.
            let set = self.compat(s, base, has_protos, seed, CASES_LIMIT - held)?;
            held += set
                .cases
                .iter()
                .map(|c| c.request.len() as u64)
                .sum::<u64>();
            if held > CASES_LIMIT {
                return Err(self.span(
                    s.span(),
                    format!(
                        "the [[compat]] sections' cases come to {held} bytes with this one, more than the {} every section's cases may hold in all; generate fewer, or smaller ones",
                        crate::units::size(CASES_LIMIT)
                    ),
                ));
            }
            if sets.iter().any(|o| o.name == set.name) {
                let m = format!(
                    "two [[compat]] sections are named `{}`; give one a `name`",
                    set.name
                );
                return Err(self.span(s.span(), m));
            }
            sets.push(set);
        }
        Ok(sets)
    }

    /// The cases of a `cases` file, one request per line (blank lines and comments left out),
    /// each named by its line.
    fn cases_file(
        &self,
        f: &Spanned<String>,
        base: &Path,
        grpc: bool,
        room: u64,
    ) -> Res<Vec<Case>> {
        let mut cases = Vec::new();
        let file = base.join(f.get_ref());
        let text = crate::sys::read_bounded(&file, room).map_err(|e| {
            self.at(
                f,
                format!("cannot read cases file `{}`: {e}", file.display()),
            )
        })?;
        for (i, line) in text.lines().enumerate() {
            let l = line.trim();
            if l.is_empty() || l.starts_with('#') || l.starts_with("//") {
                continue;
            }
            let origin = format!("{}:{}", f.get_ref(), i + 1);
            let limit = crate::protocol::template::max_len();
            if l.len() > limit {
                return Err(self.at(
                    f,
                    format!(
                        "{origin}: the case is {} bytes, more than the {} a request may have (raise it with --max-body SIZE)",
                        l.len(),
                        crate::units::size(limit as u64)
                    ),
                ));
            }
            if grpc {
                check_grpc_request(l).map_err(|e| self.at(f, format!("{origin}: {e}")))?;
            }
            cases.push(Case {
                request: l.to_string(),
                origin,
            });
        }
        Ok(cases)
    }

    /// The cases of `generate`: `count` renderings of its request template, their sum
    /// bounded before the first is made.
    fn generated(
        &self,
        g: &Spanned<RawGenerate>,
        grpc: bool,
        seed: u64,
        room: u64,
    ) -> Res<Vec<Case>> {
        let mut cases = Vec::new();
        let gr = g.get_ref();
        let count = *gr.count.get_ref();
        if !(1..=100_000).contains(&count) {
            return Err(self.at(&gr.count, "`count` must be between 1 and 100000"));
        }
        let t = Template::parse(&value_text(gr.request.get_ref()))
            .map_err(|e| self.at(&gr.request, e.to_string()))?;
        // Every case is rendered here and kept for the run: their sum is bounded
        // before the first is made.
        let total = t.size_bound().saturating_mul(count as u64);
        if total > room {
            return Err(self.at(
                &gr.count,
                format!(
                    "{count} cases of a request of up to {} bytes make up to {total} bytes, more than the {} left of the {} the [[compat]] sections' cases may hold in all; generate fewer, or smaller ones",
                    t.size_bound(),
                    crate::units::size(room),
                    crate::units::size(CASES_LIMIT)
                ),
            ));
        }
        for i in 0..count as u64 {
            let request = t.render_redacted(i, seed);
            if grpc {
                check_grpc_request(&request)
                    .map_err(|e| self.at(&gr.request, format!("generated request #{i}: {e}")))?;
            }
            cases.push(Case {
                request,
                origin: format!("generate #{i}"),
            });
        }
        Ok(cases)
    }

    /// `requests[i]`, checked: past the request limit it is a plan error — never sent, it
    /// would read as both contenders failing alike, a match that was never made.
    fn inline_case(&self, i: usize, v: &Spanned<toml::Value>, grpc: bool) -> Res<Case> {
        let request = value_text(v.get_ref());
        let limit = crate::protocol::template::max_len();
        if request.len() > limit {
            return Err(self.at(
                v,
                format!(
                    "requests[{i}] is {} bytes, more than the {} a request may have (raise it with --max-body SIZE)",
                    request.len(),
                    crate::units::size(limit as u64)
                ),
            ));
        }
        if grpc {
            check_grpc_request(&request).map_err(|e| self.at(v, e))?;
        }
        Ok(Case {
            request,
            origin: format!("requests[{i}]"),
        })
    }

    fn compat(
        &self,
        s: &Spanned<RawCompat>,
        base: &Path,
        has_protos: bool,
        seed: u64,
        room: u64,
    ) -> Res<CompatSet> {
        let r = s.get_ref();
        let fields = CallFields {
            grpc: r.grpc.as_ref(),
            http: r.http.as_ref(),
            jsonrpc: r.jsonrpc.as_ref(),
            body: None,
            params: None,
            path: r.path.as_ref(),
            headers: &r.headers,
            h2: r.h2,
            stream_interval: r.stream_interval.as_ref(),
            replies: r.replies.as_ref(),
        };
        let call = self.call(s.span(), &fields, has_protos)?;
        self.vars_known(&call, &["case"], s.span())?;
        let grpc = matches!(call, Call::Grpc { .. });
        let mut cases = match &r.cases {
            Some(f) => self.cases_file(f, base, grpc, room)?,
            None => Vec::new(),
        };
        for (i, v) in r.requests.iter().enumerate() {
            cases.push(self.inline_case(i, v, grpc)?);
        }
        if let Some(g) = &r.generate {
            let inline: u64 = cases.iter().map(|c| c.request.len() as u64).sum();
            cases.extend(self.generated(g, grpc, seed, room.saturating_sub(inline))?);
        }
        if cases.is_empty() {
            return Err(self.span(s.span(), "a [[compat]] section needs requests: `cases = \"file.jsonl\"`, `requests = [...]` or `generate = { count, request }`"));
        }
        let mode = match r.mode.as_ref().map(|m| (m, m.get_ref().as_str())) {
            None | Some((_, "must_match")) => CompatMode::MustMatch,
            Some((_, "record_only")) => CompatMode::RecordOnly,
            Some((m, other)) => {
                return Err(self.at(
                    m,
                    format!("`mode` is `must_match` or `record_only`, not `{other}`"),
                ))
            }
        };
        let mut setup = Vec::new();
        for st in &r.setup {
            setup.push(self.step(st, has_protos, &[])?);
        }
        let reference = r
            .reference
            .as_ref()
            .map(|x| self.reference(x, has_protos))
            .transpose()?;
        Ok(CompatSet {
            tls: self.tls(r.tls.as_ref())?,
            reference,
            name: r
                .name
                .as_ref()
                .map_or_else(|| call.describe(), |n| n.get_ref().clone()),
            call,
            cases,
            mode,
            ignore: r.ignore.clone(),
            unordered: r.unordered.clone(),
            byte_order: r.byte_order.clone(),
            setup,
        })
    }
}

impl Checker<'_> {
    /// What a reference asks: an endpoint bakeoff does not start, or a member of a contender
    /// it starts (with the endpoint it is asked at, when given).
    fn reference_target(
        &self,
        s: &Spanned<RawReference>,
    ) -> Res<(String, Option<(String, String)>)> {
        let r = s.get_ref();
        Ok(match (&r.endpoint, &r.contender) {
            (Some(e), None) => {
                if let Some(m) = &r.member {
                    return Err(self.at(m, "`member` goes with `contender`: the reference is then that member of a running contender"));
                }
                // Its syntax only: the run resolves it (the plan layer does no I/O).
                crate::protocol::target::Endpoint::check(e.get_ref())
                    .map_err(|x| self.at(e, x.to_string()))?;
                (e.get_ref().clone(), None)
            }
            (e, Some(c)) => {
                if let Some(e) = e {
                    if !(e.get_ref().starts_with("http://") || e.get_ref().starts_with("https://")) {
                        return Err(self.at(e, format!("`{}` is not an http:// or https:// endpoint", e.get_ref())));
                    }
                }
                // The member is checked against the contenders once they are known.
                let m = r.member.as_ref().map_or(String::new(), |m| m.get_ref().clone());
                (
                    e.as_ref().map_or(String::new(), |e| e.get_ref().clone()),
                    Some((c.get_ref().clone(), m)),
                )
            }
            (None, None) => {
                return Err(self.at(s, "a reference needs an `endpoint` (a server bakeoff does not start) or a `contender` (and `member`) it starts"))
            }
        })
    }

    fn reference(&self, s: &Spanned<RawReference>, has_protos: bool) -> Res<Reference> {
        let r = s.get_ref();
        let (endpoint, member) = self.reference_target(s)?;
        let fields = CallFields {
            grpc: r.grpc.as_ref(),
            http: r.http.as_ref(),
            jsonrpc: r.jsonrpc.as_ref(),
            body: None,
            params: None,
            path: r.path.as_ref(),
            headers: &r.headers,
            h2: false,
            stream_interval: None,
            replies: None,
        };
        let mut call = self.call(s.span(), &fields, has_protos)?;
        let request = r
            .request
            .as_ref()
            .map_or("{case}".to_string(), |v| value_text(v.get_ref()));
        call = call.for_case(&request);
        if r.fields.is_empty() {
            return Err(self.at(
                s,
                "a reference needs `fields = [{ ours = \"…\", theirs = \"…\" }]`",
            ));
        }
        let chain = |list: &[Spanned<String>]| -> Res<Vec<Transform>> {
            list.iter()
                .map(|t| {
                    Transform::parse(t.get_ref()).ok_or_else(|| {
                        self.at(t, format!("`{}` is not a transform (hex, base64, reverse, to_hex, to_base64, string)", t.get_ref()))
                    })
                })
                .collect()
        };
        let fields = r
            .fields
            .iter()
            .map(|f| {
                let m = f.get_ref();
                Ok(FieldMap {
                    ours: m.ours.clone(),
                    theirs: m.theirs.clone(),
                    transform: chain(&m.transform)?,
                    ours_transform: chain(&m.ours_transform)?,
                })
            })
            .collect::<Res<Vec<_>>>()?;
        Ok(Reference {
            tls: self.tls(r.tls.as_ref())?,
            endpoint,
            member,
            call,
            fields,
        })
    }
}

/// A gRPC request is proto3 JSON, or `raw:` and the message bytes in base64 (for malformed
/// requests the JSON form cannot express).
fn check_grpc_request(text: &str) -> Result<(), String> {
    use base64::Engine as _;
    if let Some(b) = text.strip_prefix("raw:") {
        return base64::engine::general_purpose::STANDARD
            .decode(b.trim())
            .map(drop)
            .map_err(|e| format!("`raw:` is followed by base64 message bytes: {e}"));
    }
    // An object, or for client-streaming and bidi calls an array of them.
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(v) if v.is_object() => Ok(()),
        Ok(serde_json::Value::Array(a)) if a.iter().all(|m| m.is_object()) => Ok(()),
        Ok(_) => Err(format!(
            "a gRPC request is a JSON object (an array of them for a stream), not `{text}`"
        )),
        Err(e) => Err(format!("a gRPC request is a JSON object ({e}): `{text}`")),
    }
}

/// Checks a `bakeoff diff` cases file.
pub(super) fn check_cases_file(path: &Path, text: &str) -> Res<CasesFile> {
    let loc = Locator::new(path, text);
    let raw: RawCasesFile = toml::from_str(text).map_err(|e| loc.from_toml(&e))?;
    let c = Checker { loc: &loc };
    let base = path.parent().unwrap_or(Path::new("."));
    let protos = c.protos(&raw.protos, base)?;
    let seed = raw.seed.unwrap_or(0);
    let compat = c.compat_sets(&raw.compat, base, !protos.is_empty(), seed)?;
    if compat.is_empty() {
        return Err(loc.at(0..0, "a cases file needs at least one [[compat]] section"));
    }
    for (set, rs) in compat.iter().zip(&raw.compat) {
        if set.reference.as_ref().is_some_and(|r| r.member.is_some()) {
            let at = rs
                .get_ref()
                .reference_contender()
                .expect("a member reference");
            return Err(c.at(at, "`bakeoff diff` starts no contender: its reference needs an `endpoint`, not a `contender`"));
        }
    }
    Ok(CasesFile {
        seed,
        protos,
        includes: raw.proto_include.iter().map(|p| base.join(p)).collect(),
        compat,
    })
}
