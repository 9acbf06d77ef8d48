//! Before the loop: a fresh results directory (or the one being resumed), the reference
//! servers' answers, where things are pinned, and the order contenders take turns in.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context as _};

use super::events::Reporter;
use super::options::{Cut, RunOptions, COMPAT_TIMEOUT};
use crate::client::Descriptors;
use crate::plan::{Order, Plan};
use crate::results::{self, env::Environment, Results, Status};

/// Asks the reference servers (outside servers the plan names) every case of their sets,
/// once, before any contender starts.
pub(super) fn ask_references(
    plan: &Plan,
    protos: &Descriptors,
    rt: &tokio::runtime::Runtime,
    results: &mut Results,
    rep: &mut dyn Reporter,
) {
    // A member reference is asked when its contender runs compat (`Ctx::compat`).
    let outside = plan
        .compat
        .iter()
        .filter(|s| s.reference.as_ref().is_some_and(|r| r.member.is_none()));
    for set in outside {
        let answers: Vec<_> = (0..set.cases.len())
            .filter_map(|i| crate::compat::ask_reference(set, i, protos, COMPAT_TIMEOUT, rt))
            .collect();
        let at = set.reference.as_ref().map_or("", |r| r.endpoint.as_str());
        record_reference(set, at, answers, results, rep);
    }
}

/// Keeps a reference's answers, with a warning when it answered none of the cases.
pub(super) fn record_reference(
    set: &crate::plan::CompatSet,
    who: &str,
    answers: Vec<results::CompatAnswer>,
    results: &mut Results,
    rep: &mut dyn Reporter,
) {
    if !answers.iter().any(|a| a.success) {
        let first = answers.first().map_or(String::new(), |a| {
            format!("{} {}", a.outcome, a.detail.clone().unwrap_or_default())
        });
        let w = results::Warning::ReferenceSilent {
            set: set.name.clone(),
            who: who.to_string(),
            cases: answers.len(),
            first,
        };
        rep.warning(&w.to_string());
        results.warnings.push(w);
    }
    results.compat_reference.extend(answers);
}

/// A results folder ready to run in: the plan as it runs, the folder, its results so far,
/// and the `.proto` set the checks compiled (every client and probe of the run shares it).
pub(super) struct Opened {
    pub(super) plan: Plan,
    pub(super) dir: PathBuf,
    pub(super) results: Results,
    pub(super) protos: Descriptors,
}

/// The plan file as this run runs it: `--smoke`, a screened night (`[history] night`),
/// `--budget`, `--profile`, `--ref`, `--what-if`, `--repetitions`, `--only`, `--scenario`
/// and `--shard` applied.
fn as_run(path: &Path, opts: &RunOptions) -> anyhow::Result<Plan> {
    let mut plan = Plan::load(path)?;
    let spread = matches!(opts.cut, Some(Cut::Commits { spread: true, .. }));
    if opts.smoke {
        plan = plan.smoke();
    }
    if plan.history.screen && opts.cut.is_none() {
        plan = plan.screened();
    }
    if let (Some(b), false) = (opts.budget, opts.smoke) {
        plan.budget = b;
    }
    if opts.profile {
        for s in plan.scenarios.iter_mut().filter(|s| s.is_steady()) {
            s.profile = true;
        }
    }
    plan = plan
        .with_refs(&opts.refs)
        .and_then(|p| match &opts.cut {
            Some(Cut::Check { contender, against }) => p.for_check(contender, against),
            Some(Cut::Commits {
                contender,
                commits,
                judge,
                effect,
                ..
            }) => p.for_commits(contender, commits, judge, *effect),
            None => Ok(p),
        })
        .and_then(|p| p.with_what_if(&opts.what_if))
        .and_then(|p| match (spread, opts.repetitions) {
            (true, Some(n)) => p
                .spread_over(n)
                .overridden(None, &opts.only, &opts.scenarios),
            _ => p.overridden(opts.repetitions, &opts.only, &opts.scenarios),
        })
        .map_err(anyhow::Error::msg)?;
    if !opts.points.is_empty() {
        for s in &mut plan.scenarios {
            s.points.retain(|p| opts.points.contains(&p.to_string()));
        }
        plan.scenarios.retain(|s| !s.points.is_empty());
        if plan.scenarios.is_empty() {
            bail!(
                "none of the points {} is in the plan any more",
                opts.points.join(", ")
            );
        }
    }
    if let Some(s) = opts.shard {
        if s.n > plan.repetitions {
            bail!(
                "--shard {s}: the plan runs {} and a shard's unit is one repetition of every contender, so shard {} of {} would have nothing to run; give --repetitions {} or more, or fewer shards",
                crate::units::count(plan.repetitions, "repetition"),
                s.n,
                s.n,
                s.n
            );
        }
    }
    Ok(plan)
}

/// A contender as results.json records it.
fn info(plan: &Plan, c: &crate::plan::Contender) -> results::ContenderInfo {
    results::ContenderInfo {
        name: c.name.clone(),
        baseline: plan.baseline_of(&c.name).map(str::to_string),
        members: c
            .members
            .iter()
            .map(|m| results::MemberInfo {
                name: m.name.clone(),
                command: m.command.clone(),
                endpoint: m.endpoint.clone(),
                source: None,
            })
            .collect(),
        noise_of: c.noise_of.clone(),
        variant: c.variant.as_ref().map(|v| results::VariantInfo {
            of: v.of.clone(),
            what: v.what.clone(),
            delay: v.delay().map(|d| results::DelayInfo {
                port: d.port.clone(),
                hold_us: d.hold.as_micros() as u64,
                connect: d.connect.clone(),
            }),
        }),
        source: None,
    }
}

pub(super) fn fresh(path: &Path, opts: &RunOptions) -> anyhow::Result<Opened> {
    let path = std::fs::canonicalize(path)
        .with_context(|| format!("cannot read the plan `{}`", path.display()))?;
    let plan = as_run(&path, opts)?;
    // Every check before the results folder exists: a plan that cannot start leaves none.
    let protos = Descriptors::new(plan.protos.clone(), plan.includes.clone());
    super::preflight::check(&plan, &protos, &opts.cancel)?;
    let started_at = results::now_utc();
    let dir = match &opts.out {
        Some(d) => d.clone(),
        None => crate::build::results_dir(&started_at, &plan.name),
    };
    if dir.join("results.json").exists() {
        bail!(
            "`{}` already holds results; continue them with --resume {0} or choose another --out",
            dir.display()
        );
    }
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create `{}`", dir.display()))?;
    // Absolute, so `{state}` still names the right folder for a contender with its own `dir`.
    let dir = std::fs::canonicalize(&dir)?;
    results::write_atomic(&dir.join("plan.toml"), plan.text.as_bytes())
        .with_context(|| format!("writing `{}`", dir.join("plan.toml").display()))?;
    let results = Results {
        budget: None,
        schema_version: results::SCHEMA_VERSION,
        tool: results::tool(),
        name: plan.name.clone(),
        plan_path: path.display().to_string(),
        status: results::Status::Running,
        smoke: opts.smoke,
        started_at,
        finished_at: None,
        environment: Environment::detect(),
        baseline: plan.contenders.iter().find_map(|c| c.baseline.clone()),
        repetitions: plan.repetitions,
        order: plan.order.as_str().into(),
        paired: (plan.order == Order::Paired).then(|| (&plan.paired).into()),
        contenders: plan.contenders.iter().map(|c| info(&plan, c)).collect(),
        scenarios: plan
            .scenarios
            .iter()
            .map(|s| results::ScenarioInfo {
                name: s.name.clone(),
                call: s.call.describe(),
                points: s.points.iter().flat_map(|p| p.recorded(s)).collect(),
                capacity: s.capacity.as_ref().map(results::CapacityGoal::from),
                profiled: s.profile,
            })
            .collect(),
        runs: Vec::new(),
        warnings: Vec::new(),
        compat: plan
            .compat
            .iter()
            .map(results::CompatSetInfo::from)
            .collect(),
        compat_reference: Vec::new(),
        plan_hash: Some(plan_hash(&plan, opts)?),
        shards: opts.shard.map(|s| results::Shards {
            of: s.n,
            have: vec![s.k],
        }),
    };
    Ok(Opened {
        plan,
        dir,
        results,
        protos,
    })
}

/// What shards must agree on: the plan with its templates expanded (`plan show`), and what
/// the flags changed. Paths are as written, so a plan checked out elsewhere hashes the same.
fn plan_hash(plan: &Plan, opts: &RunOptions) -> anyhow::Result<String> {
    let shown = Plan::show(&plan.path, &plan.text)?;
    let contenders: Vec<&str> = plan.contenders.iter().map(|c| c.name.as_str()).collect();
    let scenarios: Vec<&str> = plan.scenarios.iter().map(|s| s.name.as_str()).collect();
    Ok(results::hash_text(&format!(
        "{shown}\n# as run: repetitions={} smoke={} contenders={contenders:?} scenarios={scenarios:?}\n",
        plan.repetitions, opts.smoke
    )))
}

/// Reopens an interrupted run: the plan is the copy kept with the results (paths in it are
/// still relative to the original plan file); repetitions that did not finish are redone.
pub(super) fn resume(dir: &Path, cancel: &crate::cancel::Cancel) -> anyhow::Result<Opened> {
    let dir = &std::fs::canonicalize(dir)
        .with_context(|| format!("cannot resume `{}`", dir.display()))?;
    // Only a results folder is cleaned, and only once it has been read as one.
    let mut results = Results::load(dir)?;
    // What a killed earlier run left behind goes first.
    let cleaned = crate::contender::leftovers::clean(dir)
        .with_context(|| format!("cannot resume `{}`", dir.display()))?;
    if cleaned.killed > 0 {
        eprintln!(
            "bakeoff: killed {} an earlier run of `{}` left behind",
            crate::units::count(cleaned.killed as u64, "process"),
            dir.display()
        );
    }
    let text = crate::sys::read_bounded(&dir.join("plan.toml"), crate::sys::PLAN_LIMIT)
        .with_context(|| format!("`{}` has no plan.toml to resume from", dir.display()))?;
    let mut plan = Plan::parse(Path::new(&results.plan_path), &text)?;
    if results.smoke {
        plan = plan.smoke();
    }
    // What `--ref`, `--what-if`, `--repetitions`, `--only` and `--scenario` chose is what
    // the results hold.
    let refs: Vec<(String, String)> = results
        .contenders
        .iter()
        .filter(|c| c.variant.is_none() && c.noise_of.is_none())
        .filter_map(|c| Some((c.name.clone(), c.source.as_ref()?.reference.clone()?)))
        .collect();
    plan = plan.with_refs(&refs).map_err(anyhow::Error::msg)?;
    for v in results.contenders.iter().filter_map(|c| c.variant.as_ref()) {
        plan.with_variant(&v.of, &v.what)
            .map_err(|e| anyhow::anyhow!("resuming a what-if variant: {e}"))?;
    }
    let contenders: Vec<String> = results.contenders.iter().map(|c| c.name.clone()).collect();
    let scenarios: Vec<String> = results.scenarios.iter().map(|s| s.name.clone()).collect();
    plan = plan
        .overridden(Some(results.repetitions), &contenders, &scenarios)
        .map_err(anyhow::Error::msg)?;
    results
        .runs
        .retain(|r| matches!(r.status, Status::Complete | Status::Failed));
    results.status = Status::Running;
    results.finished_at = None;
    let protos = Descriptors::new(plan.protos.clone(), plan.includes.clone());
    super::preflight::check(&plan, &protos, cancel)?;
    Ok(Opened {
        plan,
        dir: dir.to_path_buf(),
        results,
        protos,
    })
}

/// Paired contenders must see the same machine: without `cores` in the plan they share the
/// upper half of the CPUs bakeoff may use and the load engine gets the lower half (on two
/// CPUs: contenders on the second, load on the first), so the scheduler places a server the
/// same way in every slice (docs/verdicts.md). Other orders stay unpinned unless the plan
/// pins them.
fn paired_default(plan: &Plan, allowed: &[usize]) -> (Option<Vec<usize>>, Option<Vec<usize>>) {
    if plan.order != Order::Paired || allowed.len() < 2 {
        return (None, None);
    }
    let (load, contenders) = allowed.split_at(allowed.len() / 2);
    (Some(contenders.to_vec()), Some(load.to_vec()))
}

/// Pins only what the machine allows; says so when it cannot.
pub(super) fn pinning(
    plan: &Plan,
    warnings: &mut Vec<results::Warning>,
) -> (Option<Vec<usize>>, Option<Vec<usize>>) {
    let allowed = crate::sys::allowed_cpus();
    let Some(cores) = &plan.cores else {
        return paired_default(plan, &allowed);
    };
    let check = |set: &Vec<usize>, what: &'static str, warnings: &mut Vec<results::Warning>| {
        let missing: Vec<usize> = set
            .iter()
            .copied()
            .filter(|c| !allowed.contains(c))
            .collect();
        if missing.is_empty() {
            Some(set.clone())
        } else {
            let w = results::Warning::Unpinned {
                what,
                asked: set.clone(),
                allowed: allowed.clone(),
                missing,
            };
            if !warnings.contains(&w) {
                warnings.push(w); // once, also when resuming
            }
            None
        }
    };
    let c = check(&cores.contender, "contenders", warnings);
    let l = check(&cores.load, "the load engine", warnings);
    (c, l)
}

/// (repetition, contender index) in the order they run. A noise instance only answers the
/// compat cases, so it runs once.
pub(super) fn schedule(plan: &Plan, shard: Option<results::Shard>) -> Vec<(u32, usize)> {
    let reps: Vec<u32> = (1..=plan.repetitions)
        .filter(|&r| shard.is_none_or(|s| s.runs(r)))
        .collect();
    let reps = reps.into_iter();
    let n = plan.contenders.len();
    let all: Vec<(u32, usize)> = match plan.order {
        Order::Paired | Order::Interleaved => {
            reps.flat_map(|r| (0..n).map(move |c| (r, c))).collect()
        }
        Order::Sequential => (0..n)
            .flat_map(|c| reps.clone().map(move |r| (r, c)))
            .collect(),
    };
    all.into_iter()
        .filter(|&(r, c)| r == 1 || plan.contenders[c].noise_of.is_none())
        .collect()
}
