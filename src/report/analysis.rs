//! Everything a report shows, computed once from results and handed to every exporter: the
//! summary's answers, the tables, the compat analysis and the findings.

use serde::Serialize;

use super::table::Table;
use crate::analysis::verdicts::{Family, PointVerdicts};
use crate::compat::CompatReport;
use crate::diagnose::{findings, Finding, Limits};
use crate::results::Results;

pub struct Analysis<'a> {
    pub results: &'a Results,
    /// One line per answer: same answers?, start-up, serving, findings.
    pub summary: Vec<String>,
    pub startup: Table,
    /// Each cluster member's own start (when some contender has several members).
    pub members: Option<Table>,
    pub scenarios: Vec<ScenarioTables>,
    pub compat: Vec<CompatReport>,
    pub findings: Vec<Finding>,
    /// Paired runs: every contender against its baseline at every point, with intervals.
    pub verdicts: Vec<PointVerdicts>,
    /// The family of those verdicts and its error control.
    pub family: Option<Family>,
    /// Repetitions from several machines (merged shards): which machine ran what, and each
    /// machine's verdicts beside the combined ones.
    pub machines: Option<Table>,
    pub by_machine: Option<Table>,
    /// The run's gates' lines (`--fail-on-regression` and the rest), passed or not: the
    /// first thing the reports say. Empty without gates (and when a report is written again
    /// from results alone).
    pub gates: Vec<String>,
}

/// A scenario's tables: every point, and how throughput grows with clients when the
/// scenario sweeps them.
#[derive(Debug, Clone, Serialize)]
pub struct ScenarioTables {
    pub name: String,
    pub serving: Table,
    pub scaling: Option<Table>,
    /// A profiled scenario: where each contender's time went.
    pub profile: Option<Table>,
    /// Delay variants: each call's p50 by the hold on a slowed edge, and its slope.
    pub edges: Option<Table>,
}

impl<'a> Analysis<'a> {
    pub fn of(r: &'a Results) -> Analysis<'a> {
        let compat = super::compat::from_results(r);
        let mut findings = findings(r, Limits::default());
        let (verdicts, family) = crate::analysis::verdicts::all(r);
        findings.extend(crate::analysis::gates::machine_findings(&verdicts));
        findings.extend(crate::analysis::gates::trim_findings(&verdicts));
        let scenarios = r
            .scenarios
            .iter()
            .filter_map(|s| {
                let serving = if s.capacity.is_some() {
                    super::capacity::table(r, &s.name, &s.call)?
                } else if verdicts.iter().any(|v| v.point.scenario == s.name) {
                    super::paired::table(r, &s.name, &s.call, &verdicts)?
                } else {
                    super::tables::scenario(r, &s.name, &s.call)?
                };
                let mut serving = serving;
                if s.profiled {
                    // Every contender of a point is profiled alike; the figures still carry
                    // perf's cost, so they are not for comparing with unprofiled runs.
                    serving.title.push_str(
                        " — profiled: perf was recording, so these figures carry its cost",
                    );
                }
                Some(ScenarioTables {
                    name: s.name.clone(),
                    serving,
                    scaling: super::scaling::table(r, &s.name),
                    profile: super::profiles::table(r, &s.name),
                    edges: super::edges::table(r, &s.name),
                })
            })
            .collect();
        Analysis {
            results: r,
            summary: super::summary::summary(r, &compat, &findings, &verdicts, family.as_ref()),
            startup: super::tables::startup(r),
            members: super::tables::members(r),
            scenarios,
            compat,
            findings,
            machines: super::machines::table(r),
            by_machine: super::machines::verdicts(r, &verdicts),
            gates: Vec::new(),
            verdicts,
            family,
        }
    }

    /// Every table in reading order: start-up, then each scenario's serving and scaling.
    pub fn tables(&self) -> Vec<&Table> {
        let mut t = vec![&self.startup];
        t.extend(&self.members);
        for s in &self.scenarios {
            t.push(&s.serving);
            t.extend(&s.scaling);
            t.extend(&s.edges);
            t.extend(&s.profile);
        }
        t.extend(&self.machines);
        t.extend(&self.by_machine);
        t
    }
}
