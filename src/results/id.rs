//! Typed identities. A run is (contender, variant, repetition, shard); a point is (scenario,
//! variables, clients, target, rate, stage). Labels are rendered from them for people and
//! never parsed back; reports, `compare` and merges match identities as values.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::plan::Spread;

/// One start of one contender: which contender, which what-if variant of it (none for the
/// contender as written), which repetition (from 1) and which shard of a scaled-out run
/// (none for a run on one machine).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RunId {
    pub contender: String,
    #[serde(default)]
    pub variant: Option<String>,
    /// 1-based.
    pub repetition: u32,
    /// 1-based, as in `--shard 2/3`.
    #[serde(default)]
    pub shard: Option<u32>,
}

impl RunId {
    pub fn new(contender: &str, repetition: u32) -> RunId {
        RunId {
            contender: contender.to_string(),
            variant: None,
            repetition,
            shard: None,
        }
    }

    /// Whether this is a run of `name` as the plan's contenders are named: `v1`, or
    /// `v1+nodelay` for the variant.
    pub fn is(&self, name: &str) -> bool {
        match &self.variant {
            None => self.contender == name,
            Some(v) => name
                .strip_prefix(self.contender.as_str())
                .and_then(|rest| rest.strip_prefix('+'))
                .is_some_and(|rest| rest == v),
        }
    }

    /// The name the contender (with its variant) is shown as: `etcd-3.5` or `v1+nodelay`.
    pub fn subject(&self) -> String {
        match &self.variant {
            Some(v) => format!("{}+{v}", self.contender),
            None => self.contender.clone(),
        }
    }
}

impl fmt::Display for RunId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} repetition {}", self.subject(), self.repetition)?;
        if let Some(s) = self.shard {
            write!(f, " (shard {s})")?;
        }
        Ok(())
    }
}

/// Matrix variables in the plan's order (the order a table's columns and a label read in),
/// written as a JSON object.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Vars(pub Vec<(String, String)>);

impl Vars {
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

impl Serialize for Vars {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap as _;
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

impl<'de> Deserialize<'de> for Vars {
    /// An object in document order, or (as the first builds of schema 1 wrote them) a list
    /// of `[name, value]` pairs.
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Vars, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Vars;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object of variable names to values")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut a: A) -> Result<Vars, A::Error> {
                let mut out = Vec::new();
                while let Some(e) = a.next_entry::<String, String>()? {
                    out.push(e);
                }
                Ok(Vars(out))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut a: A) -> Result<Vars, A::Error> {
                let mut out = Vec::new();
                while let Some(e) = a.next_element::<(String, String)>()? {
                    out.push(e);
                }
                Ok(Vars(out))
            }
        }
        d.deserialize_any(V)
    }
}

/// One point of a scenario's matrix.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PointId {
    pub scenario: String,
    pub vars: Vars,
    pub clients: usize,
    /// The members load goes to, when the scenario has a `target` axis; none means the
    /// first member, and no `target=` in the label.
    #[serde(default)]
    pub target: Option<Spread>,
    /// Offered rate (requests/s) of an open-loop rate axis.
    #[serde(default)]
    pub rate: Option<f64>,
    /// Stage of a staged ramp, from 1.
    #[serde(default)]
    pub stage: Option<u32>,
}

impl PointId {
    /// The members load goes to.
    pub fn spread(&self) -> Spread {
        self.target.unwrap_or(Spread::First)
    }

    /// `key_size=64 clients=16 target=all`: every axis of the point, in plan order.
    pub fn label(&self) -> String {
        self.label_parts(true).join(" ")
    }

    /// The label without `clients=N`: what the points of one concurrency sweep share.
    pub fn label_without_clients(&self) -> String {
        self.label_parts(false).join(" ")
    }

    /// The same point at another number of clients.
    pub fn same_but_clients(&self, other: &PointId) -> bool {
        PointId {
            clients: other.clients,
            ..self.clone()
        } == *other
    }

    fn label_parts(&self, clients: bool) -> Vec<String> {
        let mut out: Vec<String> = self
            .vars
            .0
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        if clients {
            out.push(format!("clients={}", self.clients));
        }
        if let Some(t) = self.target {
            out.push(format!("target={}", t.as_str()));
        }
        if let Some(r) = self.rate {
            out.push(format!("rate={r}"));
        }
        if let Some(s) = self.stage {
            out.push(format!("stage={s}"));
        }
        out
    }
}

/// `scenario [label]`, as findings and `compare` name a point.
impl fmt::Display for PointId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} [{}]", self.scenario, self.label())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(vars: &[(&str, &str)], clients: usize, target: Option<Spread>) -> PointId {
        PointId {
            scenario: "read".into(),
            vars: Vars(
                vars.iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            ),
            clients,
            target,
            rate: None,
            stage: None,
        }
    }

    #[test]
    fn labels_are_rendered_in_plan_order() {
        let p = point(
            &[("value_size", "8"), ("key_size", "64")],
            16,
            Some(Spread::All),
        );
        assert_eq!(p.label(), "value_size=8 key_size=64 clients=16 target=all");
        assert_eq!(
            p.label_without_clients(),
            "value_size=8 key_size=64 target=all"
        );
        assert_eq!(
            p.to_string(),
            "read [value_size=8 key_size=64 clients=16 target=all]"
        );
        assert_eq!(point(&[], 1, None).label(), "clients=1");
    }

    #[test]
    fn a_sweep_is_the_same_point_but_for_clients() {
        let a = point(&[("key_size", "64")], 1, None);
        assert!(a.same_but_clients(&point(&[("key_size", "64")], 64, None)));
        assert!(!a.same_but_clients(&point(&[("key_size", "256")], 64, None)));
        assert!(!a.same_but_clients(&point(&[("key_size", "64")], 64, Some(Spread::All))));
    }

    #[test]
    fn vars_keep_their_order_through_json() {
        let p = point(&[("z", "1"), ("a", "2")], 4, None);
        let json = serde_json::to_string(&p).unwrap();
        assert!(json.contains(r#""vars":{"z":"1","a":"2"}"#), "{json}");
        let back: PointId = serde_json::from_str(&json).unwrap();
        assert_eq!(back, p);
        let pairs: Vars = serde_json::from_str(r#"[["k","v"]]"#).unwrap();
        assert_eq!(pairs.get("k"), Some("v"));
        assert!(serde_json::from_str::<Vars>("3").is_err());
    }

    #[test]
    fn runs_name_their_variant_and_shard() {
        let mut r = RunId::new("v1", 2);
        assert_eq!(r.to_string(), "v1 repetition 2");
        r.variant = Some("nodelay".into());
        r.shard = Some(3);
        assert_eq!(r.subject(), "v1+nodelay");
        assert!(r.is("v1+nodelay") && !r.is("v1") && !r.is("v1+") && !r.is("v1+nodelayx"));
        assert!(RunId::new("v1", 1).is("v1") && !RunId::new("v1", 1).is("v1+nodelay"));
        assert_eq!(r.to_string(), "v1+nodelay repetition 2 (shard 3)");
    }
}
