//! A bisection (docs/bisect.md): the search of `crate::bisect` driven by real builds and
//! paired runs, each step saved as it ends so that `--resume` goes on and Ctrl-C leaves a
//! report of the steps made.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Context as _;

use anyhow::bail;

use super::{figure_name, figure_named, judged, run_cut};
use crate::analysis::verdicts::Figure;
use crate::bisect::record::{self, Record, Status};
use crate::bisect::{Bench, Hunt, Kind, Pair, PointRead};
use crate::cancel::Cancel;
use crate::plan::{Plan, Rev, Source, SourceKind};
use crate::runner;
use crate::stats::paired::Call;

/// What a bisection is asked: a new one (the plan, contender and both ends) or `resume`.
#[derive(Debug, Clone, Default)]
pub struct Request {
    pub plan: Option<PathBuf>,
    pub contender: Option<String>,
    pub good: Option<String>,
    pub bad: Option<String>,
    /// The figure judged (none: the plan's main one).
    pub figure: Option<Figure>,
    pub scenarios: Vec<String>,
    /// The smallest change hunted, in percent (none: half of what the ends measure).
    pub effect: Option<f64>,
    pub ways: Option<u32>,
    /// `--budget` (`Some(None)`: off).
    pub budget: Option<Option<std::time::Duration>>,
    pub out: Option<PathBuf>,
    pub resume: Option<PathBuf>,
}

/// A bisection as it ended: its exit code (0 settled, 2 a range or undecided, 130
/// interrupted), its record and its folder.
pub struct Bisected {
    pub code: u8,
    pub record: Record,
    pub dir: PathBuf,
}

/// The bisection `args` asks for, under `cancel`: what `bakeoff bisect` and `history confirm
/// --bisect` both run.
pub fn bisect(args: &Request, cancel: &Cancel) -> anyhow::Result<Bisected> {
    let cancel = cancel.clone();
    let (record, dir) = match &args.resume {
        Some(d) => {
            let dir = std::fs::canonicalize(d)
                .with_context(|| format!("--resume {}: cannot read it", d.display()))?;
            (Record::load(&dir)?, dir)
        }
        None => start(args, &cancel)?,
    };
    let plan = Plan::load(Path::new(&record.plan))?;
    let c = plan
        .local_git(&record.contender)
        .map_err(anyhow::Error::msg)?;
    let source = c.source.clone().context("a git source")?;
    let env = c.members.first().map(|m| m.env.clone()).unwrap_or_default();
    let budget = match &record.budget {
        Some(b) => Some(crate::plan::parse_budget(b).map_err(anyhow::Error::msg)?),
        None => None,
    };
    let n = record.commits.len() - 1;
    let ways = record.ways.max(2);
    let limit = 2 * crate::bisect::about(n, ways) + 8;
    let effect = record.effect;
    let figure =
        match &record.figure {
            Some(f) => Some(figure_named(f).with_context(|| {
                format!("`{f}` in bisect.json is not a figure a bisection judges")
            })?),
            None => None,
        };
    let mut live = Live {
        record,
        dir,
        source,
        env,
        repetitions: plan.repetitions,
        figure,
        budget,
        cancel: cancel.clone(),
        started: Instant::now(),
    };
    live.record.status = Status::Running;
    live.record.save(&live.dir)?;
    let found = crate::bisect::search(&mut live, n, ways, effect, limit);
    crate::sys::children::sweep();
    let (dir, mut record) = (live.dir, live.record);
    let code = match found {
        Ok(Some((hunt, answer))) => {
            record.hunt = hunt;
            let code = if answer.settled() { 0 } else { 2 };
            record.answer = Some(answer);
            record.status = Status::Done;
            code
        }
        Ok(None) => {
            record.status = Status::Interrupted;
            130
        }
        Err(e) => {
            record.status = Status::Interrupted;
            record.save(&dir)?;
            crate::bisect::report::write(&record, &dir)?;
            return Err(e);
        }
    };
    record.save(&dir)?;
    crate::bisect::report::write(&record, &dir)?;
    Ok(Bisected { code, record, dir })
}

/// A new bisection: the plan and contender checked, the commits listed, its folder made.
fn start(args: &Request, cancel: &Cancel) -> anyhow::Result<(Record, PathBuf)> {
    let (Some(plan_path), Some(name), Some(good), Some(bad)) =
        (&args.plan, &args.contender, &args.good, &args.bad)
    else {
        bail!("give PLAN, --contender, --good and --bad (or --resume DIR)");
    };
    let plan_path = std::fs::canonicalize(plan_path)
        .with_context(|| format!("cannot read the plan `{}`", plan_path.display()))?;
    let plan = Plan::load(&plan_path)?;
    let c = plan.local_git(name).map_err(anyhow::Error::msg)?;
    let source = c.source.context("a git source")?;
    // The scenarios checked before anything is resolved, built or written.
    plan.clone()
        .overridden(None, &[], &args.scenarios)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let cache = crate::build::cache::root();
    let commits = crate::build::history::range(&source, good, bad, &cache, cancel)
        .map_err(anyhow::Error::msg)?;
    let started_at = crate::results::now_utc();
    let dir = match &args.out {
        Some(d) => d.clone(),
        None => crate::build::results_dir(&started_at, &format!("bisect-{}", plan.name)),
    };
    if dir.join("bisect.json").exists() {
        bail!(
            "`{}` already holds a bisection; go on with --resume {0} or choose another --out",
            dir.display()
        );
    }
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create `{}`", dir.display()))?;
    let dir = std::fs::canonicalize(&dir)?;
    let record = Record {
        schema: record::SCHEMA,
        bakeoff: env!("CARGO_PKG_VERSION").to_string(),
        started_at,
        status: Status::Running,
        plan: plan_path.to_string_lossy().into_owned(),
        plan_name: plan.name.clone(),
        contender: name.clone(),
        good: good.clone(),
        bad: bad.clone(),
        figure: args.figure.map(figure_name),
        scenarios: args.scenarios.clone(),
        effect: args.effect.map(|p| p / 100.0),
        ways: args.ways.unwrap_or(2) as usize,
        budget: args.budget.map(|b| match b {
            Some(d) => format!("{}s", d.as_secs_f64()),
            None => "off".into(),
        }),
        commits,
        builds: vec![],
        steps: vec![],
        hunt: None,
        answer: None,
        incremental: source.incremental,
        repo: match &source.from {
            SourceKind::Git {
                at: crate::plan::Location::Local(p),
                ..
            } => Some(p.to_string_lossy().into_owned()),
            _ => None,
        },
    };
    record.save(&dir)?;
    eprintln!(
        "bisect: {} commits after {good} ({}) up to {bad} ({}), first parents; folder {}",
        record.commits.len() - 1,
        record.short(0),
        record.short(record.commits.len() - 1),
        dir.display()
    );
    Ok((record, dir))
}

/// The bisection as it runs: its record (saved after every build and step) and what each
/// build and run needs.
struct Live {
    record: Record,
    dir: PathBuf,
    source: Source,
    env: Vec<(String, String)>,
    repetitions: u32,
    figure: Option<Figure>,
    budget: Option<Option<std::time::Duration>>,
    cancel: Cancel,
    started: Instant,
}

impl Live {
    fn end_name(&self, i: usize) -> String {
        match i {
            0 => format!("--good {}", self.record.good),
            _ => format!("--bad {}", self.record.bad),
        }
    }
}

impl Live {
    /// The paired run of a step: the plan cut to the contender at each commit, judged and
    /// sized for the change hunted, at its kind's repetitions ([`Kind::repetitions`]); the
    /// endpoints' and a step's share the plan's durations, the confirmation's do not.
    fn options(
        &self,
        kind: Kind,
        out: PathBuf,
        at: &[usize],
        hunt: Option<Hunt>,
    ) -> runner::RunOptions {
        let labels = at
            .iter()
            .map(|&i| {
                let c = &self.record.commits[i];
                (c.short().to_string(), c.id.clone())
            })
            .collect();
        runner::RunOptions {
            out: Some(out),
            cut: Some(runner::Cut::Commits {
                contender: self.record.contender.clone(),
                commits: labels,
                judge: self.figure.map(Figure::key).into_iter().collect(),
                effect: hunt.map(|h| h.effect),
                spread: kind != Kind::Confirm,
            }),
            scenarios: self.record.scenarios.clone(),
            repetitions: Some(kind.repetitions(self.repetitions)),
            budget: self.budget,
            cancel: self.cancel.clone(),
            ..runner::RunOptions::default()
        }
    }

    /// Each pair of neighbours in `at`, with the judged figure's verdict at every point.
    fn pairs(
        &self,
        at: &[usize],
        verdicts: &[crate::analysis::verdicts::PointVerdicts],
    ) -> Vec<Pair> {
        at.windows(2)
            .map(|w| Pair {
                from: w[0],
                to: w[1],
                points: verdicts
                    .iter()
                    .filter(|v| v.contender == self.record.short(w[1]))
                    .filter_map(|v| {
                        let x = judged(v, self.figure)?;
                        Some(PointRead {
                            point: v.point.to_string(),
                            call: match x.call {
                                Call::Higher => crate::bisect::Call::Higher,
                                Call::Lower => crate::bisect::Call::Lower,
                                Call::Equivalent => crate::bisect::Call::Equivalent,
                                Call::Inconclusive => crate::bisect::Call::Inconclusive,
                            },
                            ratio: x.ratio.ratio,
                            lo: x.ratio.lo,
                            hi: x.ratio.hi,
                            text: x.to_string(),
                        })
                    })
                    .collect(),
            })
            .collect()
    }
}

impl Bench for Live {
    fn builds(&mut self, i: usize) -> anyhow::Result<Option<bool>> {
        if let Some(b) = self.record.build(i) {
            return Ok(Some(b.built));
        }
        let mut source = self.source.clone();
        if let SourceKind::Git { rev, .. } = &mut source.from {
            *rev = Rev::Ref(self.record.commits[i].id.clone());
        }
        let label = self.record.short(i).to_string();
        let cache = crate::build::cache::root();
        let req = crate::build::Request {
            contender: &label,
            source: &source,
            env: &self.env,
            results: &self.dir,
            cache: &cache,
            rebuild: false,
            cancel: &self.cancel,
        };
        let t = Instant::now();
        let b = match crate::build::build(&req, &mut |line| eprintln!("bisect: {line}")) {
            Ok(b) => b.info,
            Err(_) if self.cancel.is_cancelled() => return Ok(None),
            Err(info) => *info,
        };
        let built = b.error.is_none();
        let made = b.build.as_ref();
        self.record.builds.push(record::Build {
            commit: i,
            built,
            cached: made.is_some_and(|m| m.cached),
            seconds: made
                .filter(|m| !m.cached)
                .map_or(t.elapsed().as_secs_f64(), |m| m.seconds),
            error: b.error.clone(),
        });
        if !built {
            eprintln!(
                "bisect: commit {i} ({label}) did not build; it is skipped: {}",
                b.error.unwrap_or_default().lines().next().unwrap_or("")
            );
        }
        self.record.save(&self.dir)?;
        Ok(Some(built))
    }

    fn measure(
        &mut self,
        kind: Kind,
        at: &[usize],
        hunt: Option<Hunt>,
    ) -> anyhow::Result<Option<Vec<Pair>>> {
        if let Some(s) = self.record.step(kind, at) {
            return Ok(Some(s.pairs.clone()));
        }
        let last = self.record.commits.len() - 1;
        for &i in at {
            match self.builds(i)? {
                None => return Ok(None),
                Some(true) => {}
                Some(false) => {
                    let why = self.record.build(i).and_then(|b| b.error.clone());
                    match i == 0 || i == last {
                        true => bail!(
                            "{}: it did not build: {}",
                            self.end_name(i),
                            why.unwrap_or_default()
                        ),
                        false => bail!("commit {i} did not build: {}", why.unwrap_or_default()),
                    }
                }
            }
        }
        let sub = format!("steps/{:02}-{}", self.record.steps.len() + 1, kind.word());
        let out = self.dir.join(&sub);
        // What an interrupted attempt at this step left.
        if out.exists() {
            std::fs::remove_dir_all(&out)
                .with_context(|| format!("removing `{}`", out.display()))?;
        }
        let opts = self.options(kind, out, at, hunt);
        let t = Instant::now();
        let (done, verdicts) = run_cut(Path::new(&self.record.plan), opts)?;
        if done.results.status == crate::results::Status::Interrupted {
            return Ok(None);
        }
        let pairs = self.pairs(at, &verdicts);
        self.record.steps.push(record::Step {
            kind,
            at: at.to_vec(),
            dir: sub,
            seconds: t.elapsed().as_secs_f64(),
            pairs: pairs.clone(),
        });
        self.record.save(&self.dir)?;
        Ok(Some(pairs))
    }

    fn progress(&mut self, line: &str) {
        eprintln!(
            "bisect: {line} ({} elapsed)",
            crate::units::duration(self.started.elapsed().as_secs_f64())
        );
    }
}
