//! A point of a scenario's matrix, identified once — by matrix expansion — and carried as
//! that value by the runner, results, reports and merges; its label is rendered from it.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::{Scenario, Spread, Stage};
use crate::load::Pacing;

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

#[cfg(test)]
impl PointId {
    /// A point of scenario `s` with no variables, at `clients` clients: what unit tests
    /// need of one.
    pub(crate) fn at(clients: usize) -> PointId {
        PointId {
            scenario: "s".into(),
            vars: Vars(Vec::new()),
            clients,
            target: None,
            rate: None,
            stage: None,
        }
    }
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

impl PointId {
    /// How this point's requests are paced: its own rate on a rate axis, else the
    /// scenario's.
    pub fn pacing(&self, scenario: Pacing) -> Pacing {
        self.rate.map_or(scenario, |rate| Pacing::Open { rate })
    }

    /// Stage `k` (from 0) of a staged point: its clients and rate those of the stage.
    pub fn stage(&self, k: usize, st: &Stage) -> PointId {
        PointId {
            clients: st.clients.unwrap_or(self.clients),
            rate: st.rate.or(self.rate),
            stage: Some(k as u32 + 1),
            ..self.clone()
        }
    }

    /// The identities this point of scenario `s` is recorded under: the point itself, or
    /// for a staged ramp one per stage.
    pub fn recorded(&self, s: &Scenario) -> Vec<PointId> {
        if s.stages.is_empty() {
            return vec![self.clone()];
        }
        s.stages
            .iter()
            .enumerate()
            .map(|(k, st)| self.stage(k, st))
            .collect()
    }
}

/// `scenario [label]`, as findings, `compare` and the budget's cut points name a point.
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
}
