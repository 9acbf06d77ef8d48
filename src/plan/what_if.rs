//! What-if variants (docs/what-if.md): the same contender run again with one thing changed
//! from outside. A variant is typed — [`WhatIf`] — and its name (`v1+nodelay`,
//! `v1+rpc+2ms`) is rendered from it for people, never read back.

use std::fmt;
use std::time::Duration;

use super::{parse_duration, Contender, Member};

/// What a variant changes.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum WhatIf {
    /// TCP_NODELAY forced on the contender's sockets once it is ready.
    NoDelay,
    /// Each chunk on its way to the member listening on `{port:PORT}` held `hold_us`, by a
    /// proxy between it and the members that connect to it.
    Delay { port: String, hold_us: u64 },
}

/// The what-ifs bakeoff runs by name; a delay is written as a table.
pub const WHAT_IFS: [&str; 1] = ["nodelay"];

impl WhatIf {
    /// A what-if by its plan name (`nodelay`), or none.
    pub fn named(name: &str) -> Option<WhatIf> {
        (name == "nodelay").then_some(WhatIf::NoDelay)
    }

    pub fn delay(port: &str, hold: Duration) -> WhatIf {
        WhatIf::Delay {
            port: port.to_string(),
            hold_us: hold.as_micros() as u64,
        }
    }

    /// The hold of a delay (zero for any other what-if).
    pub fn hold(&self) -> Duration {
        match self {
            WhatIf::Delay { hold_us, .. } => Duration::from_micros(*hold_us),
            WhatIf::NoDelay => Duration::ZERO,
        }
    }
}

/// `nodelay`, or `PORT+HOLD` for a delay (`rpc+1ms`): the part after `NAME+` in a variant's
/// name.
impl fmt::Display for WhatIf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WhatIf::NoDelay => f.write_str("nodelay"),
            WhatIf::Delay { port, .. } => write!(f, "{port}+{}", fmt_hold(self.hold())),
        }
    }
}

/// Results files carry a what-if as its name (`"nodelay"`, `"rpc+1ms"`), as they always have.
impl serde::Serialize for WhatIf {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for WhatIf {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<WhatIf, D::Error> {
        let s = String::deserialize(d)?;
        if let Some(w) = WhatIf::named(&s) {
            return Ok(w);
        }
        let (port, hold) = s.rsplit_once('+').ok_or_else(|| {
            serde::de::Error::custom(format!("`{s}` is not a what-if: `nodelay` or `PORT+HOLD`"))
        })?;
        let hold = parse_duration(hold).map_err(serde::de::Error::custom)?;
        Ok(WhatIf::delay(port, hold))
    }
}

/// A delay's hold as it appears in a variant's name: `0ms`, `1ms`, `0.5ms` (to the µs).
pub fn fmt_hold(d: Duration) -> String {
    let ms = format!("{:.3}", d.as_secs_f64() * 1e3);
    format!("{}ms", ms.trim_end_matches('0').trim_end_matches('.'))
}

#[derive(Debug, Clone, PartialEq)]
pub struct Variant {
    /// The contender it is a variant of.
    pub of: String,
    pub what: WhatIf,
    /// For a delay: the members that connect to the delayed port (they wait for its
    /// listener with `after`) and so get the proxy's port instead.
    pub connect: Vec<String>,
}

/// A delay on one edge between members (docs/what-if.md): the members in `connect` get the
/// port of a proxy that forwards to the real `{port:PORT}`, holding what goes there `hold`.
#[derive(Debug, Clone, PartialEq)]
pub struct Delay {
    pub port: String,
    pub hold: Duration,
    pub connect: Vec<String>,
}

impl Variant {
    /// The delay this variant puts on an edge, if it is a delay.
    pub fn delay(&self) -> Option<Delay> {
        match &self.what {
            WhatIf::Delay { port, .. } => Some(Delay {
                port: port.clone(),
                hold: self.what.hold(),
                connect: self.connect.clone(),
            }),
            WhatIf::NoDelay => None,
        }
    }
}

impl Contender {
    /// Who its runs are: the contender it is (a variant: the one it is a variant of) and
    /// its what-if, as a run's id carries them.
    pub fn runs_as(&self) -> (&str, Option<&WhatIf>) {
        match &self.variant {
            Some(v) => (&v.of, Some(&v.what)),
            None => (&self.name, None),
        }
    }
}

/// The members of contender `c` that connect to `{port:PORT}` for a delay on it; or why the
/// delay cannot be.
fn connecting(c: &Contender, port: &str) -> Result<Vec<String>, String> {
    let needle = if port == "port" {
        "{port}".to_string()
    } else {
        format!("{{port:{port}}}")
    };
    let names = |m: &Member| {
        m.command.iter().any(|a| a.contains(&needle))
            || m.env.iter().any(|(_, v)| v.contains(&needle))
            || m.endpoint.contains(&needle)
    };
    let users: Vec<&Member> = c.members.iter().filter(|m| names(m)).collect();
    let connect: Vec<String> = users
        .iter()
        .filter(|m| m.after.iter().any(|a| users.iter().any(|u| u.name == *a)))
        .map(|m| m.name.clone())
        .collect();
    let listen: Vec<&str> = users
        .iter()
        .filter(|m| !connect.contains(&m.name))
        .map(|m| m.name.as_str())
        .collect();
    match (users.len(), connect.is_empty(), listen.len()) {
        (0, _, _) => Err(format!("a delay on `{port}`: no member of `{}` names `{needle}`", c.name)),
        (1, _, _) => Err(format!("a delay on `{port}`: only `{}` names `{needle}`; a delay needs the member that listens on it and one that connects to it", users[0].name)),
        (_, true, _) => Err(format!("a delay on `{port}`: bakeoff cannot tell which of {} listens on `{needle}`; give the members that connect to it `after = [\"{}\"]` (the one they wait for listens)", users.iter().map(|m| format!("`{}`", m.name)).collect::<Vec<_>>().join(", "), users[0].name)),
        (_, false, 1) => Ok(connect),
        (_, false, _) => Err(format!("a delay on `{port}`: {} name `{needle}` and none waits for another; one member listens on it, and the others wait for it with `after`", listen.join(", "))),
    }
}

/// Adds the what-if variant `what` of contender `of` right after it (and after its other
/// variants): `NAME+what`, compared against `NAME`. Nothing when it is there already.
pub fn add_variant(contenders: &mut Vec<Contender>, of: &str, what: &WhatIf) -> Result<(), String> {
    let orig = contenders
        .iter()
        .find(|c| c.name == of)
        .ok_or_else(|| format!("no contender is named `{of}`"))?;
    let connect = match what {
        WhatIf::Delay { port, .. } => connecting(orig, port)?,
        WhatIf::NoDelay => Vec::new(),
    };
    if orig.noise_of.is_some() {
        return Err(format!(
            "`{of}` is a noise instance (it only answers compat cases): it has no what-if"
        ));
    }
    let name = format!("{of}+{what}");
    if contenders.iter().any(|c| c.name == name) {
        return Ok(());
    }
    let mut v = orig.clone();
    v.name = name;
    v.baseline = Some(of.to_string());
    v.variant = Some(Variant {
        of: of.to_string(),
        what: what.clone(),
        connect,
    });
    let at = contenders
        .iter()
        .rposition(|c| c.name == of || c.variant.as_ref().is_some_and(|x| x.of == of))
        .expect("found above");
    contenders.insert(at + 1, v);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_what_if_is_carried_as_its_name_and_read_back_as_the_same_value() {
        for w in [
            WhatIf::NoDelay,
            WhatIf::delay("rpc", Duration::from_millis(1)),
            WhatIf::delay("rpc", Duration::from_micros(1234)),
            WhatIf::delay("a+b", Duration::ZERO),
        ] {
            let json = serde_json::to_string(&w).unwrap();
            assert_eq!(json, format!("\"{w}\""));
            assert_eq!(serde_json::from_str::<WhatIf>(&json).unwrap(), w, "{json}");
        }
        assert_eq!(
            WhatIf::delay("rpc", Duration::from_micros(500)).to_string(),
            "rpc+0.5ms"
        );
        assert!(serde_json::from_str::<WhatIf>("\"nagle\"").is_err());
    }
}
