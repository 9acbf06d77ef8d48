//! The plan as a run's flags change it: `--only`, `--scenario`, `--repetitions`, `--ref`, `--what-if` and `--smoke`.

use super::*;

/// The contender `bakeoff check` builds at the ref it is asked to compare against.
pub const AGAINST: &str = "against";
/// The contender `bakeoff check` builds from the working tree.
pub const CURRENT: &str = "current";

impl Plan {
    /// The plan with the command line's overrides: `repetitions`, only the contenders in
    /// `only` (with their noise instances; a baseline left out is no longer compared
    /// against), only the scenarios in `scenarios`. Empty lists keep everything. A name
    /// the plan does not have is an error with the nearest one.
    pub fn overridden(
        mut self,
        repetitions: Option<u32>,
        only: &[String],
        scenarios: &[String],
    ) -> Result<Plan, String> {
        if let Some(n) = repetitions {
            if !(1..=1000).contains(&n) {
                return Err(format!("--repetitions {n}: give 1 to 1000"));
            }
            self.repetitions = n;
        }
        let unknown = |flag: &str, name: &str, known: Vec<&str>| {
            let hint = error::did_you_mean(name, known.iter().copied());
            format!(
                "{flag} {name}: the plan has no such name{hint} (it has {})",
                known.join(", ")
            )
        };
        if !only.is_empty() {
            let names: Vec<&str> = self.contenders.iter().map(|c| c.name.as_str()).collect();
            if let Some(n) = only.iter().find(|n| !names.contains(&n.as_str())) {
                return Err(unknown("--only", n, names));
            }
            // `[history] reference`'s partner stays: the run is paired against it.
            let partner = self.history.reference.is_some();
            self.contenders.retain(|c| {
                only.contains(&c.name)
                    || (partner && c.name == super::REFERENCE)
                    || c.noise_of.as_ref().is_some_and(|t| only.contains(t))
                    || c.variant.as_ref().is_some_and(|v| only.contains(&v.of))
            });
            let kept: Vec<String> = self.contenders.iter().map(|c| c.name.clone()).collect();
            for c in &mut self.contenders {
                if c.baseline.as_ref().is_some_and(|b| !kept.contains(b)) {
                    c.baseline = None;
                }
            }
            for set in &mut self.compat {
                if set
                    .reference
                    .as_ref()
                    .and_then(|r| r.member.as_ref())
                    .is_some_and(|(who, _)| !kept.contains(who))
                {
                    set.reference = None;
                }
            }
        }
        if !scenarios.is_empty() {
            let names: Vec<&str> = self.scenarios.iter().map(|s| s.name.as_str()).collect();
            if let Some(n) = scenarios.iter().find(|n| !names.contains(&n.as_str())) {
                return Err(unknown("--scenario", n, names));
            }
            self.scenarios.retain(|s| scenarios.contains(&s.name));
        }
        Ok(self)
    }

    /// Adds the what-if variant `what` of contender `of` (see [`add_variant`]).
    pub fn with_variant(&mut self, of: &str, what: &WhatIf) -> Result<(), String> {
        add_variant(&mut self.contenders, of, what)
    }

    /// `--ref NAME=REF`: contender NAME's git source at REF for this run (its noise instances
    /// and variants, copies of it, too).
    pub fn with_refs(mut self, refs: &[(String, String)]) -> Result<Plan, String> {
        for (name, r) in refs {
            if r.len() > 4096 || r.chars().any(char::is_control) {
                let shown: String = r.chars().take(40).filter(|c| !c.is_control()).collect();
                return Err(format!(
                    "--ref {name}=`{shown}…`: a ref is a name — at most 4096 bytes, no line breaks or other control characters ({} bytes given)",
                    r.len()
                ));
            }
            if !self.contenders.iter().any(|c| c.name == *name) {
                let names: Vec<&str> = self.contenders.iter().map(|c| c.name.as_str()).collect();
                return Err(format!(
                    "--ref {name}={r}: no contender is named `{name}`{}",
                    error::did_you_mean(name, names.iter().copied())
                ));
            }
            let copies = self.contenders.iter_mut().filter(|c| {
                c.name == *name
                    || c.noise_of.as_deref() == Some(name)
                    || c.variant.as_ref().is_some_and(|v| v.of == *name)
            });
            for c in copies {
                match c.source.as_mut().map(|s| &mut s.from) {
                    Some(SourceKind::Git { rev, .. }) => *rev = Rev::Ref(r.clone()),
                    _ => {
                        return Err(format!(
                            "--ref {name}={r}: contender `{name}` is not built from a git `source`"
                        ))
                    }
                }
            }
        }
        Ok(self)
    }

    /// `bakeoff check --contender NAME --against REF` (docs/bisect.md): contender NAME alone,
    /// twice — [`AGAINST`] built at REF, and [`CURRENT`] built from its repository's working
    /// tree and compared with it, side by side. NAME must be built from a git `source` in a
    /// folder on this machine (the repository `git bisect` walks).
    pub fn for_check(mut self, name: &str, against: &str) -> Result<Plan, String> {
        let c = self.local_git(name)?;
        let at = |rev: Rev, label: &str| {
            let mut x = c.clone();
            x.name = label.to_string();
            x.baseline = Some(AGAINST.to_string());
            if let Some(SourceKind::Git { rev: r, .. }) = x.source.as_mut().map(|s| &mut s.from) {
                *r = rev;
            }
            x
        };
        self.contenders = vec![
            at(Rev::Ref(against.to_string()), AGAINST),
            at(Rev::Worktree, CURRENT),
        ];
        self.order = super::Order::Paired;
        Ok(self)
    }

    /// A step of `bakeoff bisect` (docs/bisect.md): contender `name` at each commit, run
    /// under the label beside it and compared with the one before it, paired, judged on
    /// `judge` alone (none: CPU per request, else throughput); with `effect`, the smallest
    /// change the step must tell, its equivalence band is that and its rounds' precision
    /// too (when the plan's is finer): the rounds also wait until every pair is decided, and
    /// an unchanged pair is proven inside the band only once its interval is within it, so a
    /// finer precision would buy rounds, not surer verdicts (docs/bisect.md).
    pub fn for_commits(
        mut self,
        name: &str,
        commits: &[(String, String)],
        judge: &[&str],
        effect: Option<f64>,
    ) -> Result<Plan, String> {
        let c = self.local_git(name)?;
        self.contenders = commits
            .iter()
            .enumerate()
            .map(|(k, (label, commit))| {
                let mut x = c.clone();
                x.name = label.clone();
                x.baseline = Some(commits[k.saturating_sub(1)].0.clone());
                if let Some(SourceKind::Git { rev, .. }) = x.source.as_mut().map(|s| &mut s.from) {
                    *rev = Rev::Ref(commit.clone());
                }
                x
            })
            .collect();
        let keys = match judge {
            [] => vec!["cpu_per_request", "throughput"],
            k => k.to_vec(),
        };
        self.paired.judge = super::Judged::of(keys).map_err(|k| format!("no figure `{k}`"))?;
        if let Some(e) = effect {
            self.paired.equivalence = e;
            if let super::Rounds::Auto { precision, .. } = &mut self.paired.rounds {
                *precision = precision.max(e);
            }
        }
        self.order = super::Order::Paired;
        Ok(self)
    }

    /// The plan run at `repetitions`, more than its own, with each duration-stopped point's
    /// duration spread over them: a repetition measures its share of what the plan's
    /// repetitions did together, so the least a run measures stays the plan's while its
    /// interval is over more repetitions (a bisect step's, docs/bisect.md). The rounds still
    /// go on past that until the point is decided and precise enough.
    pub fn spread_over(mut self, repetitions: u32) -> Plan {
        if repetitions <= self.repetitions {
            return self;
        }
        for s in self.scenarios.iter_mut().filter(|s| s.is_steady()) {
            if let crate::load::Stop::Duration(d) = &mut s.stop {
                *d = d.mul_f64(f64::from(self.repetitions) / f64::from(repetitions));
            }
        }
        self.repetitions = repetitions;
        self
    }

    /// Contender `name`, which must be built from a git `source` in a folder on this
    /// machine.
    pub fn local_git(&self, name: &str) -> Result<super::Contender, String> {
        let names: Vec<&str> = self
            .contenders
            .iter()
            .filter(|c| c.noise_of.is_none() && c.variant.is_none())
            .map(|c| c.name.as_str())
            .collect();
        let Some(c) = self
            .contenders
            .iter()
            .find(|c| c.name == name && c.noise_of.is_none() && c.variant.is_none())
        else {
            return Err(format!(
                "--contender {name}: no contender is named `{name}`{}",
                error::did_you_mean(name, names.iter().copied())
            ));
        };
        let local = matches!(
            c.source.as_ref().map(|s| &s.from),
            Some(SourceKind::Git {
                at: super::Location::Local(_),
                ..
            })
        );
        if !local {
            return Err(format!(
                "--contender {name}: `{name}` is not built from a git `source` in a folder on this machine (the repository whose history is walked)"
            ));
        }
        Ok(c.clone())
    }

    /// `--what-if WHAT`: the variant of every contender compared (not noise instances, not
    /// variants).
    pub fn with_what_if(mut self, what: &[WhatIf]) -> Result<Plan, String> {
        for w in what {
            let names: Vec<String> = self
                .contenders
                .iter()
                .filter(|c| c.noise_of.is_none() && c.variant.is_none())
                .map(|c| c.name.clone())
                .collect();
            for n in names {
                self.with_variant(&n, w)
                    .map_err(|e| format!("--what-if {w}: {e}"))?;
            }
        }
        Ok(self)
    }

    /// A night beside `[history] reference` as a screen (docs/history.md, "A screen
    /// instead"): each contender measured for its scenarios' durations only — the rounds
    /// they hold, the plan's repetitions, no second stage — as long as it would be measured
    /// alone. A night it marks a candidate is measured in full by its confirmation.
    pub fn screened(mut self) -> Plan {
        self.paired.rounds = super::Rounds::Duration;
        self.paired.max_repetitions = None;
        self.budget = None;
        self
    }

    /// The plan cut down to check it in seconds: one repetition, and every point of every
    /// scenario (every target, key size and file it names is tried) at one request per
    /// client — an open-loop point at a rate that sends them within its second.
    pub fn smoke(mut self) -> Plan {
        self.repetitions = 1;
        // A smoke run checks the plan; its one-call points are no evidence either way.
        self.confirm = false;
        self.paired.max_repetitions = None;
        self.budget = None;
        for s in &mut self.scenarios {
            let most = s.points.iter().map(|p| p.clients).max().unwrap_or(1);
            s.stop = Stop::Count(most as u64);
            if let Pacing::Open { rate } = s.pacing {
                s.pacing = Pacing::Open {
                    rate: rate.max(most as f64),
                };
            }
            for p in &mut s.points {
                p.rate = p.rate.map(|r| r.max(most as f64));
            }
            s.warmup = Duration::ZERO;
            if let Some(c) = &mut s.capacity {
                c.step = c.step.min(Duration::from_millis(500));
                c.step_warmup = Duration::ZERO;
                c.max_steps = c.max_steps.min(4);
            }
            // The whole ramp in about a second, each stage's rate and clients kept.
            let n = s.stages.len().max(1) as u32;
            for st in &mut s.stages {
                st.duration = st.duration.min(Duration::from_secs(1) / n);
            }
        }
        self
    }
}
