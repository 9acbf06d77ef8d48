//! The bake-off: for every repetition and contender (interleaved or in sequence), start the
//! contender from fresh state, time its start-up, run every scenario point against it, stop
//! it, and write `results.json` after each of those steps. A contender that fails is recorded
//! as failed and the others go on; Ctrl-C stops after the step in progress.

pub mod drive;
pub mod events;
mod preflight;

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering::Relaxed;

use anyhow::{bail, Context as _};

use crate::contender::{self, Launch, Running};
use crate::load::{Flow, LoadConfig, INTERRUPTED};
use crate::plan::{Order, Plan, Point, Scenario, Spread};
use crate::results::{self, env::Environment, PointRun, Results, Run};
use drive::{Driver, Protos};
pub use events::Reporter;

/// Per compat call: a server that holds a request longer is recorded as timed out.
const COMPAT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Where results go [default: `bakeoff-results/<timestamp>-<name>`].
    pub out: Option<PathBuf>,
    /// Continue the run in this results directory.
    pub resume: Option<PathBuf>,
    /// One repetition, each scenario at its smallest point for about a second.
    pub smoke: bool,
}

/// What a finished (or interrupted) bake-off leaves: its directory and results.
pub struct Finished {
    pub dir: PathBuf,
    pub results: Results,
}

/// Runs the plan at `plan_path` (or resumes `opts.resume`).
pub fn run(
    plan_path: Option<&Path>,
    opts: &RunOptions,
    rep: &mut dyn Reporter,
) -> anyhow::Result<Finished> {
    let (plan, dir, mut results) = match &opts.resume {
        Some(dir) => resume(dir)?,
        None => {
            let path = plan_path.context("give a plan file")?;
            fresh(path, opts)?
        }
    };
    let protos = Protos {
        files: plan.protos.clone(),
        includes: plan.includes.clone(),
    };
    preflight::check(&plan, &protos)?;
    let (contender_cpus, load_cpus) = pinning(&plan, &mut results.warnings);
    for w in &results.warnings {
        rep.warning(w);
    }
    results.environment.contender_cpus = contender_cpus.clone();
    results.environment.load_cpus = load_cpus.clone();
    results.save(&dir).context("writing results.json")?;

    let schedule = schedule(&plan);
    rep.run_started(&dir, schedule.len());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    if results.compat_reference.is_empty() {
        ask_references(&plan, &protos, &rt, &mut results, rep);
        results.save(&dir).context("writing results.json")?;
    }
    // bakeoff's own threads (probes, the sampler) stay off the contenders' CPUs; contenders
    // that are not pinned get every CPU back.
    let allowed = crate::sys::allowed_cpus();
    if let Some(l) = &load_cpus {
        crate::sys::pin_current_thread(l).context("pinning bakeoff to the load CPUs")?;
    }
    let ctx = Ctx {
        plan: &plan,
        dir: &dir,
        protos: &protos,
        contender_cpus: contender_cpus.or_else(|| Some(allowed.clone())),
        load_cpus: load_cpus.unwrap_or_default(),
        rt: &rt,
    };
    for (step, &(repetition, ci)) in schedule.iter().enumerate() {
        let name = &plan.contenders[ci].name;
        if results
            .runs
            .iter()
            .any(|r| &r.contender == name && r.repetition == repetition)
        {
            continue;
        }
        if INTERRUPTED.load(Relaxed) {
            break;
        }
        rep.contender_starting(name, repetition, step + 1, schedule.len());
        ctx.repetition(ci, repetition, &mut results, rep)?;
    }
    let _ = crate::sys::pin_current_thread(&allowed);
    results.status = if INTERRUPTED.load(Relaxed) {
        "interrupted"
    } else {
        "complete"
    }
    .into();
    results.finished_at = Some(results::now_utc());
    results.save(&dir).context("writing results.json")?;
    Ok(Finished { dir, results })
}

/// Asks the reference servers (outside servers the plan names) every case of their sets,
/// once, before any contender starts.
fn ask_references(
    plan: &Plan,
    protos: &Protos,
    rt: &tokio::runtime::Runtime,
    results: &mut Results,
    rep: &mut dyn Reporter,
) {
    for set in plan.compat.iter().filter(|s| s.reference.is_some()) {
        let answers: Vec<_> = (0..set.cases.len())
            .filter_map(|i| crate::compat::ask_reference(set, i, protos, COMPAT_TIMEOUT, rt))
            .collect();
        if !answers.iter().any(|a| a.success) {
            let first = answers.first().map_or(String::new(), |a| {
                format!("{} {}", a.outcome, a.detail.clone().unwrap_or_default())
            });
            let w = format!(
                "compat `{}`: the reference {} answered none of {} cases (first: {first})",
                set.name,
                set.reference.as_ref().map_or("", |r| r.endpoint.as_str()),
                answers.len(),
            );
            rep.warning(&w);
            results.warnings.push(w);
        }
        results.compat_reference.extend(answers);
    }
}

fn fresh(path: &Path, opts: &RunOptions) -> anyhow::Result<(Plan, PathBuf, Results)> {
    let path = std::fs::canonicalize(path)
        .with_context(|| format!("cannot read the plan `{}`", path.display()))?;
    let mut plan = Plan::load(&path)?;
    if opts.smoke {
        plan = plan.smoke();
    }
    let started_at = results::now_utc();
    let dir = match &opts.out {
        Some(d) => d.clone(),
        None => {
            let stamp: String = started_at
                .chars()
                .filter(|c| c.is_ascii_alphanumeric())
                .collect();
            PathBuf::from("bakeoff-results")
                .join(format!("{stamp}-{}", contender::slug(&plan.name)))
        }
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
    results::write_atomic(&dir.join("plan.toml"), plan.text.as_bytes())?;
    let results = Results {
        schema_version: results::SCHEMA_VERSION,
        tool: format!("bakeoff {}", env!("CARGO_PKG_VERSION")),
        name: plan.name.clone(),
        plan_path: path.display().to_string(),
        status: "running".into(),
        smoke: opts.smoke,
        started_at,
        finished_at: None,
        environment: Environment::detect(),
        baseline: plan.contenders.iter().find_map(|c| c.baseline.clone()),
        repetitions: plan.repetitions,
        order: match plan.order {
            Order::Interleaved => "interleaved",
            Order::Sequential => "sequential",
        }
        .into(),
        contenders: plan
            .contenders
            .iter()
            .map(|c| results::ContenderInfo {
                name: c.name.clone(),
                baseline: plan.baseline_of(&c.name).map(str::to_string),
                members: c
                    .members
                    .iter()
                    .map(|m| results::MemberInfo {
                        name: m.name.clone(),
                        command: m.command.clone(),
                        endpoint: m.endpoint.clone(),
                    })
                    .collect(),
                noise_of: c.noise_of.clone(),
            })
            .collect(),
        scenarios: plan
            .scenarios
            .iter()
            .map(|s| results::ScenarioInfo {
                name: s.name.clone(),
                call: s.call.describe(),
                points: s.points.iter().map(|p| p.label.clone()).collect(),
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
    };
    Ok((plan, dir, results))
}

/// Reopens an interrupted run: the plan is the copy kept with the results (paths in it are
/// still relative to the original plan file); repetitions that did not finish are redone.
fn resume(dir: &Path) -> anyhow::Result<(Plan, PathBuf, Results)> {
    let dir = &std::fs::canonicalize(dir)
        .with_context(|| format!("cannot resume `{}`", dir.display()))?;
    let mut results = Results::load(dir)?;
    let text = std::fs::read_to_string(dir.join("plan.toml"))
        .with_context(|| format!("`{}` has no plan.toml to resume from", dir.display()))?;
    let mut plan = Plan::parse(Path::new(&results.plan_path), &text)?;
    if results.smoke {
        plan = plan.smoke();
    }
    results
        .runs
        .retain(|r| r.status == "complete" || r.status == "failed");
    results.status = "running".into();
    results.finished_at = None;
    INTERRUPTED.store(false, Relaxed);
    Ok((plan, dir.to_path_buf(), results))
}

/// Pins only what the machine allows; says so when it cannot.
fn pinning(plan: &Plan, warnings: &mut Vec<String>) -> (Option<Vec<usize>>, Option<Vec<usize>>) {
    let Some(cores) = &plan.cores else {
        return (None, None);
    };
    let allowed = crate::sys::allowed_cpus();
    let check = |set: &Vec<usize>, what: &str, warnings: &mut Vec<String>| {
        let missing: Vec<usize> = set
            .iter()
            .copied()
            .filter(|c| !allowed.contains(c))
            .collect();
        if missing.is_empty() {
            Some(set.clone())
        } else {
            let w = format!(
                "the plan pins {what} to CPUs {set:?}, but this machine lets bakeoff use only {allowed:?} (CPUs {missing:?} are missing): {what} run unpinned"
            );
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
fn schedule(plan: &Plan) -> Vec<(u32, usize)> {
    let reps = 1..=plan.repetitions;
    let n = plan.contenders.len();
    let all: Vec<(u32, usize)> = match plan.order {
        Order::Interleaved => reps.flat_map(|r| (0..n).map(move |c| (r, c))).collect(),
        Order::Sequential => (0..n)
            .flat_map(|c| reps.clone().map(move |r| (r, c)))
            .collect(),
    };
    all.into_iter()
        .filter(|&(r, c)| r == 1 || plan.contenders[c].noise_of.is_none())
        .collect()
}

struct Ctx<'a> {
    plan: &'a Plan,
    dir: &'a Path,
    protos: &'a Protos,
    contender_cpus: Option<Vec<usize>>,
    load_cpus: Vec<usize>,
    rt: &'a tokio::runtime::Runtime,
}

impl Ctx<'_> {
    /// One contender, one repetition: start, time, serve every point, stop, measure.
    fn repetition(
        &self,
        ci: usize,
        repetition: u32,
        results: &mut Results,
        rep: &mut dyn Reporter,
    ) -> anyhow::Result<()> {
        let c = &self.plan.contenders[ci];
        let prefix = format!("{}.r{repetition}", contender::slug(&c.name));
        let state = self.dir.join("state").join(&prefix);
        let _ = std::fs::remove_dir_all(&state);
        results.runs.push(Run {
            contender: c.name.clone(),
            repetition,
            status: "running".into(),
            error: None,
            started_at: results::now_utc(),
            startup: None,
            points: Vec::new(),
            usage: None,
            disk_end_bytes: None,
            exits: Vec::new(),
            logs: Vec::new(),
            compat: Vec::new(),
        });
        let idx = results.runs.len() - 1;
        let save = |results: &Results| results.save(self.dir).context("writing results.json");
        save(results)?;

        let launch = Launch {
            contender: c,
            state: state.clone(),
            logs: self.dir.join("logs"),
            log_prefix: prefix,
            cpus: self.contender_cpus.clone(),
            protos: &self.protos.files,
            includes: &self.protos.includes,
        };
        let mut running = match contender::start(&launch) {
            Ok(r) => r,
            Err(e) => {
                let run = &mut results.runs[idx];
                // A setup command cut short by Ctrl-C is redone on --resume, not a failure.
                run.status = if INTERRUPTED.load(Relaxed) {
                    "interrupted"
                } else {
                    "failed"
                }
                .into();
                run.error = Some(format!("did not start: {e}"));
                rep.contender_failed(&c.name, &e.to_string());
                let _ = std::fs::remove_dir_all(&state);
                return save(results);
            }
        };
        results.runs[idx].logs = running
            .logs
            .iter()
            .map(|l| l.strip_prefix(self.dir).unwrap_or(l).display().to_string())
            .collect();
        match running.wait_ready(self.rt) {
            Ok(s) => {
                rep.contender_ready(&c.name, &s);
                results.runs[idx].startup = Some(results::Startup {
                    first_response_s: s.first_response.as_secs_f64(),
                    ready_s: s.ready.as_secs_f64(),
                    disk_after_start_bytes: contender::usage::disk_usage(&state),
                });
                save(results)?;
                if repetition == 1 && !self.plan.compat.is_empty() {
                    self.compat(&running, results, idx, rep)?;
                }
                if c.noise_of.is_none() {
                    self.serve(&mut running, results, idx, rep)?;
                }
            }
            Err((first, e)) => {
                let text = match first {
                    Some(f) => {
                        format!("answered after {f:.1?} but its ready condition failed: {e}")
                    }
                    None => format!("never became ready: {e}"),
                };
                let run = &mut results.runs[idx];
                run.status = if matches!(e, contender::ProbeError::Interrupted) {
                    "interrupted"
                } else {
                    "failed"
                }
                .into();
                run.error = Some(text.clone());
                rep.contender_failed(&c.name, &text);
            }
        }
        let (exits, usage, problems) = running.stop();
        let run = &mut results.runs[idx];
        run.exits = exits;
        run.usage = Some(results::Usage {
            cpu_user_s: usage.cpu_user_s,
            cpu_system_s: usage.cpu_system_s,
            peak_rss_bytes: usage.peak_rss_bytes,
        });
        run.disk_end_bytes = Some(contender::usage::disk_usage(&state));
        if run.status == "running" {
            run.status = if INTERRUPTED.load(Relaxed) {
                "interrupted"
            } else {
                "complete"
            }
            .into();
        }
        for p in problems {
            results
                .warnings
                .push(format!("{} repetition {repetition}: {p}", c.name));
        }
        let _ = std::fs::remove_dir_all(&state);
        let _ = std::fs::remove_dir(self.dir.join("state")); // only when empty
        save(results)
    }

    /// Every compat case against the contender's first member; answers kept in the run.
    fn compat(
        &self,
        running: &Running,
        results: &mut Results,
        idx: usize,
        rep: &mut dyn Reporter,
    ) -> anyhow::Result<()> {
        for set in &self.plan.compat {
            if INTERRUPTED.load(Relaxed) {
                return Ok(());
            }
            let answers = crate::compat::run_set(
                set,
                &running.endpoints[0],
                self.protos,
                COMPAT_TIMEOUT,
                self.rt,
            );
            match answers {
                Ok(a) => {
                    rep.compat_done(&set.name, a.len());
                    results.runs[idx].compat.extend(a);
                }
                Err(e) => {
                    rep.point_failed(&set.name, "compat setup", &e);
                    results
                        .warnings
                        .push(format!("{} repetition 1: {e}", results.runs[idx].contender));
                }
            }
            results.save(self.dir).context("writing results.json")?;
        }
        Ok(())
    }

    /// Every scenario point against a running contender. Stops at the first sign that the
    /// contender died, recording where.
    fn serve(
        &self,
        running: &mut Running,
        results: &mut Results,
        idx: usize,
        rep: &mut dyn Reporter,
    ) -> anyhow::Result<()> {
        for s in &self.plan.scenarios {
            for p in &s.points {
                if INTERRUPTED.load(Relaxed) {
                    return Ok(());
                }
                if let Some(died) = running.exited() {
                    let error = format!("died before scenario `{}` [{}]: {died}", s.name, p.label);
                    return fail(&mut results.runs[idx], error, rep);
                }
                if p.target == Spread::All && running.endpoints.len() == 1 {
                    continue; // "all members" of a single process is "first"; not run twice.
                }
                rep.point_started(&s.name, &p.label);
                let point = self.point(running, s, p, rep);
                match (&point.load, &point.error) {
                    (Some(l), _) => rep.point_done(&s.name, &p.label, l),
                    (None, Some(e)) => rep.point_failed(&s.name, &p.label, e),
                    (None, None) => {}
                }
                results.runs[idx].points.push(point);
                results.save(self.dir).context("writing results.json")?;
                if let Some(died) = running.exited() {
                    let error = format!("died during scenario `{}` [{}]: {died}", s.name, p.label);
                    return fail(&mut results.runs[idx], error, rep);
                }
            }
        }
        Ok(())
    }

    fn point(
        &self,
        running: &mut Running,
        s: &Scenario,
        p: &Point,
        rep: &mut dyn Reporter,
    ) -> PointRun {
        let mut out = PointRun {
            scenario: s.name.clone(),
            point: p.label.clone(),
            vars: p.vars.iter().cloned().collect(),
            clients: p.clients,
            target: p.target.as_str().into(),
            started_at: results::now_utc(),
            contender_cpu_s: None,
            load: None,
            error: None,
        };
        let endpoints = match p.target {
            Spread::First => running.endpoints[..1].to_vec(),
            Spread::All => running.endpoints.clone(),
        };
        for step in &s.setup {
            if let Err(e) = drive::run_step(
                step,
                &p.vars,
                &endpoints[0],
                self.protos,
                self.plan.seed,
                s.timeout,
                &self.load_cpus,
            ) {
                out.error = Some(format!("{e:#}"));
                return out;
            }
        }
        let built = Driver::build(
            &s.call.with_vars(&p.vars),
            &endpoints,
            self.protos,
            self.plan.seed,
            false,
        );
        let threads = self.load_cpus.len();
        let cfg = LoadConfig::new(s.pacing, s.stop, p.clients, threads, s.warmup, s.timeout)
            .map(|c| c.pin_to(self.load_cpus.clone()));
        let (driver, cfg) = match (built, cfg) {
            (Ok(d), Ok(c)) => (d, c),
            (Err(e), _) => {
                out.error = Some(format!("{e:#}"));
                return out;
            }
            (_, Err(e)) => {
                out.error = Some(e.to_string());
                return out;
            }
        };
        let cpu0 = running.usage().cpu_s();
        // Stop sending as soon as the contender is seen dead: the rest would only count
        // refused connections.
        let result = driver.run(&cfg, &mut |pr| {
            rep.load_progress(pr);
            if running.exited().is_some() {
                Flow::Stop
            } else {
                Flow::Continue
            }
        });
        out.contender_cpu_s = Some((running.usage().cpu_s() - cpu0).max(0.0));
        match result {
            Ok(r) => out.load = Some(r),
            Err(e) => out.error = Some(e.to_string()),
        }
        out
    }
}

fn fail(run: &mut Run, error: String, rep: &mut dyn Reporter) -> anyhow::Result<()> {
    rep.contender_failed(&run.contender, &error);
    run.status = "failed".into();
    run.error = Some(error);
    Ok(())
}
