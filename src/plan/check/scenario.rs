//! Checking a `[[scenario]]`: its call, matrix, load, pacing, and the one shape it takes (fixed points, a capacity search or stages).

use super::*;

impl Checker<'_> {
    pub(super) fn scenario(&self, s: &Spanned<RawScenario>, has_protos: bool) -> Res<Scenario> {
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
    pub(super) fn clients(&self, r: &RawScenario) -> Res<Vec<usize>> {
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

    pub(super) fn targets(&self, r: &RawScenario) -> Res<Vec<Option<Spread>>> {
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
    pub(super) fn axes(&self, r: &RawScenario) -> Res<Vec<(String, Vec<String>)>> {
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
    pub(super) fn stop(&self, r: &RawScenario) -> Res<Stop> {
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
    pub(super) fn rates(&self, r: &RawScenario, stop: Stop) -> Res<(Pacing, Vec<Option<f64>>)> {
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
                super::super::raw::OneOrMany::One(x) => (Pacing::Open { rate: *x }, vec![None]),
                super::super::raw::OneOrMany::Many(_) => (
                    Pacing::Open { rate: list[0] },
                    list.iter().map(|x| Some(*x)).collect(),
                ),
            },
        })
    }

    /// A scenario is one shape: a capacity search, stages, or points at fixed load — and
    /// only a plain point is profiled.
    pub(super) fn one_shape(&self, r: &RawScenario, capacity: bool, stages: &[Stage]) -> Res<()> {
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
                .filter(|(q, _)| matches!(q.get_ref(), super::super::raw::OneOrMany::Many(_)))
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

    /// A capacity search's one latency goal: which percentile, and how long.
    fn capacity_goal(
        &self,
        s: &Spanned<super::super::raw::RawCapacity>,
    ) -> Res<(Percentile, Duration)> {
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
        Ok((
            percentile,
            self.duration(Some(goal), percentile.as_str(), Duration::ZERO)?,
        ))
    }

    pub(super) fn capacity(&self, s: &Spanned<super::super::raw::RawCapacity>) -> Res<Capacity> {
        let r = s.get_ref();
        let (percentile, goal) = self.capacity_goal(s)?;
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

    pub(super) fn stage(&self, s: &Spanned<super::super::raw::RawStage>) -> Res<Stage> {
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

    pub(crate) fn step(&self, s: &Spanned<RawStep>, has_protos: bool, vars: &[&str]) -> Res<Step> {
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

/// The plan's scenarios, each checked; a `target = "leader"` needs every cluster's
/// `leader` probe.
pub(super) fn scenarios(
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
