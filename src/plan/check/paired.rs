//! `[paired]`: the paired order's settings — slices, rounds, the bands, the error rate, the
//! figures judged, a second stage — checked against the rest of the plan.

use std::time::Duration;

use toml::Spanned;

use super::super::raw::{self, RawPlan};
use super::super::{Paired, Rounds};
use super::{Checker, Res};

/// `[paired]`, checked against the plan's `repetitions`.
pub(super) fn paired_of(c: &Checker, raw: &RawPlan, repetitions: u32) -> Res<Paired> {
    let Some(p) = &raw.paired else {
        return Ok(Paired::default());
    };
    let paired = c.paired(p)?;
    if let Some(max) = paired.max_repetitions.filter(|max| *max < repetitions) {
        let at = p
            .get_ref()
            .max_repetitions
            .as_ref()
            .expect("set when given");
        return Err(c.at(
            at,
            format!("`paired.max_repetitions` ({max}) is below `repetitions` ({repetitions}): it is the most repetitions in all, the plan's included"),
        ));
    }
    Ok(paired)
}

/// CPU per item is measured where a call returns more items than requests: a gRPC stream. A
/// plan that judges nothing else and makes no gRPC call would get no verdict anywhere.
pub(super) fn judged_somewhere(
    c: &Checker,
    raw: &RawPlan,
    paired: &Paired,
    scenarios: &[crate::plan::Scenario],
) -> Res<()> {
    let Some(list) = raw.paired.as_ref().and_then(|p| p.get_ref().judge.as_ref()) else {
        return Ok(());
    };
    let streams = scenarios
        .iter()
        .any(|s| matches!(s.call, crate::plan::Call::Grpc { .. }));
    if paired.judge.keys() == ["cpu_per_item"] && !scenarios.is_empty() && !streams {
        return Err(c.at(
            list,
            "`paired.judge` names only cpu_per_item, which only a gRPC call that streams its answer measures, and this plan makes no gRPC call: every comparison would go without a verdict (judge cpu_per_request, say)",
        ));
    }
    Ok(())
}

impl Checker<'_> {
    pub(super) fn paired(&self, s: &Spanned<raw::RawPaired>) -> Res<Paired> {
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
        let slice = match r.slice.as_ref() {
            Some(v) if v.get_ref() == "auto" => None,
            Some(v) => Some(self.duration(Some(v), "paired.slice", Duration::ZERO)?),
            None => d.slice,
        };
        let precision = match &r.precision {
            Some(v) => Some(share(Some(v), "precision", 0.0)?),
            None => None,
        };
        let rounds = self.rounds(s, precision)?;
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
        let judge = match &r.judge {
            None => Paired::default().judge,
            Some(list) => self.judge(list)?,
        };
        Ok(Paired {
            judge,
            slice,
            rounds,
            noise: share(r.noise.as_ref(), "noise", d.noise)?,
            equivalence: share(r.equivalence.as_ref(), "equivalence", d.equivalence)?,
            fdr,
            max_repetitions: match &r.max_repetitions {
                None => None,
                Some(m) if (2..=1000).contains(m.get_ref()) => Some(*m.get_ref() as u32),
                Some(m) => {
                    return Err(self.at(m, "`paired.max_repetitions` must be between 2 and 1000"))
                }
            },
        })
    }

    /// `paired.rounds` with `max_rounds` and `precision` (read already, as a share), which
    /// only `"auto"` takes.
    fn rounds(&self, s: &Spanned<raw::RawPaired>, precision: Option<f64>) -> Res<Rounds> {
        let r = s.get_ref();
        let (max, default) = match Paired::default().rounds {
            Rounds::Auto { max, precision } => (max, precision),
            Rounds::Fixed(_) | Rounds::Duration => unreachable!("the default is auto"),
        };
        let max = match &r.max_rounds {
            None => max,
            Some(m) if (2..=10_000).contains(m.get_ref()) => Some(*m.get_ref() as u32),
            Some(m) => return Err(self.at(m, "`paired.max_rounds` must be between 2 and 10000")),
        };
        let precision = precision.unwrap_or(default);
        let not_auto = |what: &str| {
            if r.max_rounds.is_some() || r.precision.is_some() {
                return Err(self.at(
                    s,
                    format!("`max_rounds` and `precision` are for `rounds = \"auto\"`; {what}"),
                ));
            }
            Ok(())
        };
        Ok(match r.rounds.as_ref().map(|v| (v, v.get_ref())) {
            None => Rounds::Auto { max, precision },
            Some((_, toml::Value::String(a))) if a == "auto" => Rounds::Auto { max, precision },
            Some((_, toml::Value::String(a))) if a == "duration" => {
                not_auto("`rounds = \"duration\"` runs as many as the duration holds")?;
                Rounds::Duration
            }
            Some((_, toml::Value::Integer(n))) if (1..=10_000).contains(n) => {
                not_auto("a fixed `rounds` runs exactly that many")?;
                Rounds::Fixed(*n as u32)
            }
            Some((v, _)) => return Err(self.at(
                v,
                "`paired.rounds` is \"auto\", \"duration\" or a number of rounds from 1 to 10000",
            )),
        })
    }

    /// `paired.judge`: the figures named, at least one, each one bakeoff measures.
    fn judge(&self, list: &Spanned<Vec<Spanned<String>>>) -> Res<crate::plan::Judged> {
        let keys = list.get_ref();
        let bad = |k: &Spanned<String>| {
            self.at(
                k,
                format!(
                    "`paired.judge` names figures, and {:?} is none: {}",
                    k.get_ref(),
                    crate::plan::FIGURES.join(", ")
                ),
            )
        };
        let judged = crate::plan::Judged::of(keys.iter().map(|k| k.get_ref().as_str()))
            .map_err(|k| bad(keys.iter().find(|x| x.get_ref() == k).expect("one of them")))?;
        if judged.is_empty() {
            return Err(self.at(
                list,
                "`paired.judge` needs at least one figure, like [\"cpu_per_request\"]",
            ));
        }
        Ok(judged)
    }
}
