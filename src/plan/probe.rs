//! Readiness probes in a plan: exactly one check each, with its timeouts.

use std::time::Duration;

use toml::Spanned;

use super::check::{value_text, Checker, DEFAULT_ENDPOINT};
use super::error::PlanError;
use super::raw::RawProbe;
use super::{Check, Expect, Probe};

type Res<T> = Result<T, PlanError>;

impl Checker<'_> {
    /// The member's probe, or by default "its endpoint accepts a TCP connection".
    pub(super) fn probe_or_tcp(
        &self,
        p: Option<&Spanned<RawProbe>>,
        endpoint: Option<&str>,
    ) -> Res<Probe> {
        if let Some(p) = p {
            return self.probe(p);
        }
        let endpoint = endpoint.unwrap_or(DEFAULT_ENDPOINT);
        let hostport = endpoint
            .trim_start_matches("http://")
            .trim_start_matches("https://");
        let hostport = hostport.split('/').next().unwrap_or(hostport);
        Ok(Probe {
            check: Check::Tcp(hostport.to_string()),
            timeout: Duration::from_secs(30),
            attempt_timeout: Duration::from_secs(1),
            interval: Duration::from_millis(20),
            tls: super::TlsSpec::default(),
            expect: None,
        })
    }

    pub(super) fn probe(&self, s: &Spanned<RawProbe>) -> Res<Probe> {
        let r = s.get_ref();
        let mut checks = Vec::new();
        if let Some(t) = &r.tcp {
            checks.push(Check::Tcp(t.clone()));
        }
        if let Some(u) = &r.http {
            checks.push(self.http_probe(s, u)?);
        }
        if let Some(m) = &r.jsonrpc {
            let params = match &r.params {
                None => "[]".to_string(),
                Some(p) if matches!(p.get_ref(), toml::Value::Array(_) | toml::Value::Table(_)) => {
                    serde_json::to_string(p.get_ref())
                        .map_err(|e| self.at(p, format!("`params`: {e}")))?
                }
                Some(p) => return Err(self.at(p, "JSON-RPC `params` are an array or a table")),
            };
            checks.push(Check::JsonRpc {
                method: m.clone(),
                params,
                endpoint: r.endpoint.clone(),
            });
        }
        if let Some(g) = &r.grpc {
            checks.push(Check::Grpc {
                call: g.clone(),
                body: r.body.as_ref().map_or("{}".into(), value_text),
                endpoint: r.endpoint.clone(),
            });
        }
        if let Some(l) = &r.log {
            if let Err(e) = regex_lite::Regex::new(l.get_ref()) {
                return Err(self.at(l, format!("`log` is not a valid regular expression: {e}")));
            }
            checks.push(Check::Log(l.get_ref().clone()));
        }
        if let Some(c) = &r.command {
            checks.push(Check::Command(c.clone()));
        }
        if checks.len() != 1 {
            return Err(self.at(
                s,
                "a probe has exactly one of `tcp`, `http`, `grpc`, `jsonrpc`, `log` or `command`",
            ));
        }
        self.settings_fit(s)?;
        let expect = self.expect(s)?;
        Ok(Probe {
            expect,
            check: checks.remove(0),
            timeout: self.duration(r.timeout.as_ref(), "timeout", Duration::from_secs(30))?,
            attempt_timeout: self.duration(
                r.attempt_timeout.as_ref(),
                "attempt_timeout",
                Duration::from_secs(1),
            )?,
            interval: self.duration(r.interval.as_ref(), "interval", Duration::from_millis(20))?,
            tls: self.tls(r.tls.as_ref())?,
        })
    }

    /// An `http` probe: a URL without credentials or spaces, and a method in capitals.
    fn http_probe(&self, s: &Spanned<RawProbe>, u: &str) -> Res<Check> {
        let r = s.get_ref();
        super::check::no_credentials(u).map_err(|m| self.at(s, m))?;
        if u.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(self.at(
                s,
                format!(
                    "the probe URL `{u}` holds a space or a control character: write it as %20"
                ),
            ));
        }
        let method = r.method.clone().unwrap_or_else(|| "GET".into());
        if method.is_empty() || !method.bytes().all(|b| b.is_ascii_uppercase()) {
            return Err(self.at(
                s,
                format!("`method` is an HTTP method in capitals, like POST, not `{method}`"),
            ));
        }
        Ok(Check::Http {
            url: u.to_string(),
            status: r.status,
            method,
            body: r.body.as_ref().map(value_text),
        })
    }

    /// Each setting with the kind of probe it goes with: `status` and `method` with `http`,
    /// `body` with `http` or `grpc`, `params` with `jsonrpc`, `tls` with a probe that opens a
    /// TLS connection to an `https://` endpoint.
    fn settings_fit(&self, s: &Spanned<RawProbe>) -> Res<()> {
        let r = s.get_ref();
        if r.status.is_some_and(|s| !(100..=599).contains(&s)) {
            return Err(self.at(s, "`status` is an HTTP status, from 100 to 599"));
        }
        let body_ok = r.grpc.is_some() || r.http.is_some();
        if r.status.is_some() && r.http.is_none()
            || r.body.is_some() && !body_ok
            || r.method.is_some() && r.http.is_none()
            || r.params.is_some() && r.jsonrpc.is_none()
        {
            return Err(self.at(
                s,
                "`status` and `method` go with `http`, `body` with `http` or `grpc`, `params` with `jsonrpc`",
            ));
        }
        if let Some(t) = &r.tls {
            let url = r.http.as_deref().or(r.endpoint.as_deref());
            if r.http.is_none() && r.grpc.is_none() && r.jsonrpc.is_none() {
                return Err(self.at(t, "`tls` goes with an `http`, `grpc` or `jsonrpc` probe: the others open no TLS connection"));
            }
            if let Some(plain) = url.and_then(|u| super::check::tls_unused([u])) {
                return Err(self.at(t, format!("`tls` of this probe: `{plain}` is plain HTTP, so it would never be used; write `https://…`, or leave `tls` out")));
            }
        }
        Ok(())
    }

    /// `field` with `equals` or `equals_field`, or `matches`: a check on the answer.
    fn expect(&self, s: &Spanned<RawProbe>) -> Res<Option<Expect>> {
        let r = s.get_ref();
        let answers = r.http.is_some() || r.grpc.is_some() || r.jsonrpc.is_some();
        let any = r.field.is_some()
            || r.equals.is_some()
            || r.equals_field.is_some()
            || r.matches.is_some();
        if any && !answers {
            return Err(self.at(s, "`field`, `equals`, `equals_field` and `matches` check an answer: they go with `http`, `grpc` or `jsonrpc`"));
        }
        if let Some(m) = &r.matches {
            if r.field.is_some() || r.equals.is_some() || r.equals_field.is_some() {
                return Err(self.at(m, "a probe checks its answer one way: `matches`, or `field` with `equals` or `equals_field`"));
            }
            if let Err(e) = regex_lite::Regex::new(m.get_ref()) {
                return Err(self.at(
                    m,
                    format!("`matches` is not a valid regular expression: {e}"),
                ));
            }
            return Ok(Some(Expect::Matches(m.get_ref().clone())));
        }
        match (&r.field, &r.equals, &r.equals_field) {
            (None, None, None) => Ok(None),
            (Some(f), Some(v), None) => Ok(Some(Expect::Equals {
                field: f.get_ref().clone(),
                value: serde_json::to_value(v.get_ref())
                    .map_err(|e| self.at(v, format!("`equals`: {e}")))?,
            })),
            (Some(f), None, Some(o)) => Ok(Some(Expect::SameAs {
                field: f.get_ref().clone(),
                other: o.get_ref().clone(),
            })),
            (Some(f), None, None) => Err(self.at(
                f,
                "`field` needs `equals = VALUE` or `equals_field = \"other.field\"`",
            )),
            (Some(_), Some(v), Some(_)) => {
                Err(self.at(v, "give `equals` or `equals_field`, not both"))
            }
            (None, Some(v), _) => Err(self.at(v, "`equals` needs the `field` it is about")),
            (None, None, Some(o)) => {
                Err(self.at(o, "`equals_field` needs the `field` it is compared with"))
            }
        }
    }
}
