//! The results of a bake-off: one versioned JSON document holding everything measured
//! (full load results with their histograms), rewritten atomically after every step so a
//! run that dies keeps what it measured. Reports, `compare` and `--resume` read only this.

pub mod env;
pub mod id;
pub mod merge;
mod paired;
mod sane;
mod upgrade;
mod warning;

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::load::LoadResult;
pub use id::{PointId, RunId, Vars};
pub use paired::{balanced_rounds, ServerCost, Slice, STEAL_LIMIT};
pub use warning::Warning;
mod compat;
pub use compat::*;
mod contenders;
pub use contenders::*;
mod run;
pub use run::*;

/// Where a run, or a whole bake-off, stands. Serialized as the lower-case word.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    #[default]
    Running,
    Complete,
    /// The contender did not start or died (runs only).
    Failed,
    Interrupted,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Running => "running",
            Status::Complete => "complete",
            Status::Failed => "failed",
            Status::Interrupted => "interrupted",
        }
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Bumped whenever a field changes meaning or disappears. Version 2: typed identities (a
/// run's `variant` and `shard`, a point's `target`, `rate` and `stage`; scenarios list their
/// points as identities, not labels). Version 1 files are upgraded when read.
pub const SCHEMA_VERSION: u32 = 2;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Results {
    pub schema_version: u32,
    /// e.g. `bakeoff 0.1.0`.
    pub tool: String,
    pub name: String,
    /// The plan file as given (absolute); its text is copied next to this file as `plan.toml`.
    pub plan_path: String,
    /// `running`, `complete` or `interrupted`.
    pub status: Status,
    /// A `--smoke` run (one repetition, short scenarios): not for comparing.
    pub smoke: bool,
    /// UTC, RFC 3339.
    pub started_at: String,
    pub finished_at: Option<String>,
    pub environment: env::Environment,
    pub baseline: Option<String>,
    pub repetitions: u32,
    pub order: String,
    /// How paired points were cut into rounds, when `order` is `paired`.
    #[serde(default)]
    pub paired: Option<PairedSettings>,
    pub contenders: Vec<ContenderInfo>,
    pub scenarios: Vec<ScenarioInfo>,
    /// One entry per contender and repetition, in the order they ran.
    pub runs: Vec<Run>,
    /// Things the reader should know (fewer cores than asked, a cleanup that failed, ...).
    pub warnings: Vec<Warning>,
    /// The plan's `[[compat]]` sections, with every request; answers are in each run.
    /// (Defaults keep results written before compat existed readable.)
    #[serde(default)]
    pub compat: Vec<CompatSetInfo>,
    /// The reference servers' answers to the compat cases (sets that name one).
    #[serde(default)]
    pub compat_reference: Vec<CompatAnswer>,
    /// A hash of the plan as run (templates expanded, `--repetitions`, `--only`,
    /// `--scenario` and `--smoke` applied): shards merge only when theirs are equal. Not in
    /// results written before 0.2.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_hash: Option<String>,
    /// A scaled-out run: which shards of how many these results hold (one for `run --shard`,
    /// all of them after `bakeoff merge`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shards: Option<Shards>,
    /// What a paired run's budget bought (docs/verdicts.md, "The budget"); absent without a
    /// second stage, and in results from before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<BudgetSpent>,
}

/// How a paired run spent its budget: the plan's repetitions, then further repetitions at
/// the points still inconclusive.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct BudgetSpent {
    /// The budget (`None`: `paired.max_repetitions` alone, unbounded in time).
    pub budget_s: Option<f64>,
    /// What the plan's repetitions took.
    pub first_s: f64,
    /// What the further repetitions took.
    pub more_s: f64,
    /// Further repetitions run, and at how many points in all.
    pub more_repetitions: u32,
    pub points: u32,
    /// Points the budget could not buy every repetition sized for (`cut`'s length; files
    /// before `cut` have this count only).
    pub left: u32,
    /// Those points, each as `scenario [label]`: the report counts the ones still
    /// inconclusive at the end (the runner never reads the verdicts again).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cut: Vec<String>,
}

/// The shards a results file holds.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Shards {
    /// How many the plan was cut into.
    pub of: u32,
    /// Which (from 1), ascending.
    pub have: Vec<u32>,
}

/// Shard `k` of `n` (both from 1): which repetitions it runs. A shard's unit is a block —
/// one repetition of every contender (a paired repetition in paired order) — so every
/// comparison within it is made on one machine; repetition `r` goes to shard
/// `(r - 1) % n + 1`, which any machine can compute from the plan alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    pub k: u32,
    pub n: u32,
}

impl Shard {
    pub fn runs(&self, repetition: u32) -> bool {
        (repetition - 1) % self.n + 1 == self.k
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.k, self.n)
    }
}

/// This bakeoff, as results name it: `bakeoff 0.1.0`.
pub fn tool() -> String {
    format!("bakeoff {}", env!("CARGO_PKG_VERSION"))
}

/// FNV-1a, 64 bits, as 16 hex digits: enough to tell two plans apart (not a defence against
/// someone forging a plan).
pub fn hash_text(text: &str) -> String {
    let h = text.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    });
    format!("{h:016x}")
}

/// The plan's `[paired]` settings, as the run used them.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PairedSettings {
    /// Each contender's turn in a round; `None`: `"auto"`, chosen per point (each point's
    /// slices carry their own lengths).
    pub slice_s: Option<f64>,
    /// `auto`, or the fixed number of rounds.
    pub rounds: String,
    /// `auto` only: the most rounds when the plan set it (else as many as 3 s of slices
    /// hold, at least 4: each point's runs carry the limit they had), and the precision
    /// (±share) to stop at.
    pub max_rounds: Option<u32>,
    pub precision: Option<f64>,
    /// A change counts only when its whole interval clears this band around 1 (0.01 = 1 %).
    pub noise: f64,
    /// Two figures are proven equal when the whole interval lies inside this band (results
    /// from before it existed: the plan's default, 2 %).
    #[serde(default = "default_equivalence")]
    pub equivalence: f64,
    /// The false discovery rate of the report's "different" verdicts.
    #[serde(default = "default_fdr")]
    pub fdr: f64,
    /// The most repetitions a point still inconclusive could get (`None`: the plan's
    /// `repetitions` only; results from before it existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_repetitions: Option<u32>,
    /// The figures the report judges (`paired.judge`, keys of [`crate::plan::FIGURES`]);
    /// `None`: all of them (the plan's default, and results from before it existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge: Option<Vec<String>>,
}

fn default_equivalence() -> f64 {
    crate::plan::Paired::default().equivalence
}

fn default_fdr() -> f64 {
    crate::plan::Paired::default().fdr
}

impl PairedSettings {
    pub fn bands(&self) -> crate::stats::paired::Bands {
        crate::stats::paired::Bands {
            noise: self.noise,
            equivalence: self.equivalence,
        }
    }

    /// Whether the report judges the figure of this key: every one unless the plan named
    /// them.
    pub fn judges(&self, key: &str) -> bool {
        self.judge
            .as_ref()
            .is_none_or(|j| j.iter().any(|k| k == key))
    }
}

impl From<&crate::plan::Paired> for PairedSettings {
    fn from(p: &crate::plan::Paired) -> PairedSettings {
        let (rounds, max_rounds, precision) = match p.rounds {
            crate::plan::Rounds::Fixed(n) => (n.to_string(), None, None),
            crate::plan::Rounds::Auto { max, precision } => ("auto".into(), max, Some(precision)),
            crate::plan::Rounds::Duration => ("duration".into(), None, None),
        };
        PairedSettings {
            slice_s: p.slice.map(|d| d.as_secs_f64()),
            rounds,
            max_rounds,
            precision,
            noise: p.noise,
            equivalence: p.equivalence,
            fdr: p.fdr,
            max_repetitions: p.max_repetitions,
            judge: (!p.judge.is_all())
                .then(|| p.judge.keys().into_iter().map(String::from).collect()),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ScenarioInfo {
    pub name: String,
    /// e.g. `etcdserverpb.KV/Range` or `GET /`.
    pub call: String,
    /// Every point of the scenario's matrix, in plan order (a staged point: each stage).
    pub points: Vec<PointId>,
    /// Set when each point is a capacity search.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity: Option<CapacityGoal>,
    /// Its points were profiled (their figures carry the profiler's cost).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub profiled: bool,
}

/// A run's (or bisection's) folder's name without `--out`:
/// `bakeoff-results/<start, digits only>-<name>` (`build::results_dir` says where
/// `bakeoff-results/` is).
pub fn default_dir(started_at: &str, name: &str) -> std::path::PathBuf {
    let stamp: String = started_at
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect();
    std::path::PathBuf::from("bakeoff-results").join(format!("{stamp}-{}", slug(name)))
}

/// The file names bakeoff gives a contender's state folders and logs.
pub fn slug(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '-'
            }
        })
        .collect()
}

impl Results {
    /// The machine a run ran on: its own record, else where the run began (results
    /// written before runs recorded theirs).
    pub fn environment_of<'a>(&'a self, run: &'a Run) -> &'a env::Environment {
        run.environment.as_ref().unwrap_or(&self.environment)
    }

    /// The contenders being compared: all but the noise instances.
    pub fn compared(&self) -> impl Iterator<Item = &ContenderInfo> {
        self.contenders.iter().filter(|c| c.noise_of.is_none())
    }

    /// Every repetition of the contender named `name` in the plan (`v1`, or the variant
    /// `v1+nodelay`), matched by its typed identity.
    pub fn runs_of<'a>(&'a self, name: &str) -> impl Iterator<Item = &'a Run> + 'a {
        let info = self.contenders.iter().find(|c| c.name == name);
        // A name no contender has (results written before contenders were listed): a plain
        // contender of that name.
        let plain = info.is_none().then(|| name.to_string());
        self.runs.iter().filter(move |x| match (info, &plain) {
            (Some(c), _) => c.ran(&x.id),
            (None, name) => x.id.is(name.as_deref().unwrap_or_default(), None),
        })
    }

    /// Median time to first response and to ready (seconds) over a contender's repetitions
    /// that started; `None` when none did.
    pub fn startup_medians(&self, contender: &str) -> Option<(f64, f64)> {
        let s: Vec<&Startup> = self
            .runs_of(contender)
            .filter_map(|x| x.startup.as_ref())
            .collect();
        let median = |v: Vec<f64>| crate::stats::Sample::new(v).ok().map(|s| s.median());
        Some((
            median(s.iter().map(|x| x.first_response_s).collect())?,
            median(s.iter().map(|x| x.ready_s).collect())?,
        ))
    }

    /// One scenario point of one contender, over all its repetitions.
    pub fn point_runs<'a>(
        &'a self,
        contender: &'a str,
        point: &'a PointId,
    ) -> impl Iterator<Item = &'a PointRun> + 'a {
        self.runs_of(contender)
            .flat_map(|x| &x.points)
            .filter(move |p| p.id == *point)
    }

    /// The requests/s of that point, one value per repetition that measured it (and did not
    /// fail most of its calls).
    pub fn rates(&self, contender: &str, point: &PointId) -> Vec<f64> {
        // A load where most calls failed measured failures: it has no rate to compare.
        self.point_runs(contender, point)
            .filter_map(|p| p.load.as_ref())
            .filter(|l| !l.mostly_failed())
            .map(|l| l.requests_per_s)
            .collect()
    }

    /// Writes `dir/results.json` atomically: a temporary file, flushed to disk, renamed.
    pub fn save(&self, dir: &Path) -> std::io::Result<()> {
        let json = serde_json::to_vec_pretty(self).map_err(std::io::Error::other)?;
        write_atomic(&dir.join("results.json"), &json)
    }

    pub fn load(dir: &Path) -> anyhow::Result<Results> {
        use anyhow::Context as _;
        let file = dir.join("results.json");
        let text = crate::sys::read_bounded(&file, crate::sys::RESULTS_LIMIT)
            .with_context(|| format!("cannot read `{}`", file.display()))?;
        Results::from_text(&text).with_context(|| format!("`{}`", file.display()))
    }

    /// A results document as text. One of this schema version is read straight into its
    /// types: read into a JSON tree first, a 200 MB file took 3.2 GB; only an older one,
    /// which must be upgraded, goes through the tree.
    pub fn from_text(text: &str) -> anyhow::Result<Results> {
        use anyhow::Context as _;
        #[derive(Deserialize)]
        struct Head {
            schema_version: Option<u64>,
        }
        let head: Head = serde_json::from_str(text).context("not JSON")?;
        if head.schema_version == Some(u64::from(SCHEMA_VERSION)) {
            let r: Results = serde_json::from_str(text).context("not a bakeoff results file")?;
            r.check_figures().map_err(|e| {
                anyhow::anyhow!("{e} (results from another machine, or changed by hand?)")
            })?;
            return Ok(r);
        }
        Results::from_json(serde_json::from_str(text).context("not JSON")?)
    }

    /// A results document of this schema version or an older one (upgraded), or why not.
    pub fn from_json(mut v: serde_json::Value) -> anyhow::Result<Results> {
        use anyhow::Context as _;
        match v.get("schema_version").and_then(|s| s.as_u64()) {
            Some(s) if s == u64::from(SCHEMA_VERSION) => {}
            Some(1) => upgrade::upgrade_v1(&mut v),
            Some(s) if s > u64::from(SCHEMA_VERSION) => anyhow::bail!(
                "schema version {s} was written by a newer bakeoff; this one reads versions 1 to {SCHEMA_VERSION}"
            ),
            other => anyhow::bail!(
                "schema version {}; this bakeoff reads versions 1 to {SCHEMA_VERSION}",
                other.map_or("(none)".to_string(), |s| s.to_string())
            ),
        }
        let r: Results = serde_json::from_value(v).context("not a bakeoff results file")?;
        r.check_figures().map_err(|e| {
            anyhow::anyhow!("{e} (results from another machine, or changed by hand?)")
        })?;
        Ok(r)
    }
}

/// Where a path read from a results file (a log, a profile's stacks) is, or `None` when it
/// would lead out of the results folder `dir`: only a relative path of plain names is
/// taken (no `..`, no root), and, where the file exists, none of it may be a link that
/// leads outside. A tampered results file can then name nothing but its own folder.
pub fn inside(dir: &Path, rel: &str) -> Option<std::path::PathBuf> {
    use std::path::Component;
    let path = Path::new(rel);
    if rel.is_empty() || !path.components().all(|c| matches!(c, Component::Normal(_))) {
        return None;
    }
    let joined = dir.join(path);
    match (std::fs::canonicalize(dir), std::fs::canonicalize(&joined)) {
        (Ok(d), Ok(f)) if !f.starts_with(&d) => None,
        _ => Some(joined),
    }
}

/// Replaces `path` with `bytes` so that a reader sees the old or the new file, never half.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write as _;
    let tmp = path.with_extension("tmp");
    let written = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()
    })();
    if let Err(e) = written {
        // A full disk must not leave a half-written temporary file behind.
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    std::fs::rename(&tmp, path)
}

/// The current time as UTC RFC 3339, e.g. `2026-11-30T10:49:09Z`.
pub fn now_utc() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    utc(secs)
}

/// Seconds since the Unix epoch as UTC RFC 3339 (civil-from-days, Howard Hinnant's algorithm).
pub fn utc(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_dates_are_right() {
        assert_eq!(utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(utc(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(utc(1_796_035_749), "2026-11-30T10:49:09Z");
    }

    #[test]
    fn point_variables_read_as_a_map_or_as_pairs() {
        let point = |vars: &str| {
            format!(
                r#"{{"scenario":"s","vars":{vars},"clients":1,"target":null,"started_at":"t","contender_cpu_s":null,"load":null,"error":null}}"#
            )
        };
        for vars in [r#"{"key_size":"64"}"#, r#"[["key_size","64"]]"#] {
            let p: PointRun = serde_json::from_str(&point(vars)).unwrap();
            assert_eq!(p.id.vars.get("key_size"), Some("64"), "{vars}");
            assert_eq!(p.steal, None);
        }
        assert!(serde_json::from_str::<PointRun>(&point("3")).is_err());
    }

    fn slice(round: u32, position: u32, rps: f64) -> Slice {
        Slice {
            round,
            position,
            requests: 100,
            failures: 0,
            items: 100,
            duration_s: 1.0,
            requests_per_s: rps,
            items_per_s: rps,
            p50_us: 1,
            p90_us: 1,
            p99_us: 1,
            cost: None,
            steal: None,
            steal_ticks: None,
        }
    }

    #[test]
    fn running_second_is_cancelled_by_pairing_rounds() {
        // Whoever runs second gets 20 % more throughput; the two are identical otherwise.
        let second = |p: u32| if p == 1 { 1.2 } else { 1.0 };
        let base: Vec<Slice> = (0..6)
            .map(|r| slice(r, r % 2, 100.0 * second(r % 2)))
            .collect();
        let other: Vec<Slice> = (0..6)
            .map(|r| slice(r, 1 - r % 2, 100.0 * second(1 - r % 2)))
            .collect();
        let rps = |s: &Slice| Some(s.requests_per_s);
        let units = balanced_rounds(&base, &other, &rps);
        assert_eq!(units.len(), 3);
        for (b, o) in units {
            assert!((o / b - 1.0).abs() < 1e-12, "{b} {o}");
        }
        // One round only: used as it is.
        assert_eq!(
            balanced_rounds(&base[..1], &other[..1], &rps),
            [(100.0, 120.0)]
        );
    }

    #[test]
    fn cpu_per_item_is_for_streams_only() {
        let mut s = slice(0, 0, 100.0);
        s.cost = Some(ServerCost {
            cpu_s: 0.002,
            voluntary_switches: 0,
            involuntary_switches: 0,
            wait_s: 0.0,
            others_s: None,
        });
        assert_eq!(s.cpu_us_per_request(), Some(20.0));
        assert_eq!(s.cpu_us_per_item(), None, "one item per call: unary");
        s.items = 1000;
        assert_eq!(s.cpu_us_per_item(), Some(2.0));
    }

    #[test]
    fn the_plans_points_are_the_ids_results_record() {
        let plan = crate::plan::Plan::parse(
            Path::new("plan.toml"),
            "name = \"t\"\n[[contender]]\nname = \"a\"\ncommand = [\"srv\", \"{port}\"]\n\
             [[scenario]]\nname = \"r\"\nhttp = \"GET /k/{value_size}/{key_size}\"\n\
             matrix = { value_size = [8], key_size = [64, 256] }\nclients = [1, 64]\n\
             target = [\"first\", \"all\"]\n",
        )
        .unwrap();
        let s = &plan.scenarios[0];
        assert_eq!(s.points.len(), 8);
        assert!(s
            .points
            .iter()
            .all(|p| p.scenario == "r" && p.stage.is_none()));
        assert_eq!(
            s.points[0].label(),
            "key_size=64 value_size=8 clients=1 target=first"
        );
        // Through a results file and back, each is the same value.
        let json = serde_json::to_string(&s.points).unwrap();
        assert_eq!(
            serde_json::from_str::<Vec<PointId>>(&json).unwrap(),
            s.points
        );
    }

    /// A results file as schema 1 wrote it: points named by label, `target` always set,
    /// scenarios listing labels (one never measured).
    const V1: &str = r#"{"schema_version":1,"tool":"bakeoff 0.1.0","name":"t","plan_path":"/p.toml",
      "status":"complete","smoke":false,"started_at":"t","finished_at":null,
      "environment":{"hostname":"h","kernel":"k","cpu_model":"c",
        "cpus_online":2,"cpus_allowed":[0,1],"contender_cpus":null,"load_cpus":null},
      "baseline":null,"repetitions":1,"order":"interleaved",
      "contenders":[{"name":"a","baseline":null,"members":[]}],
      "scenarios":[{"name":"s","call":"GET /","points":["k=1 clients=1","k=1 clients=8","k=2 clients=1"]},
                   {"name":"t","call":"GET /","points":["clients=1 target=all"]}],
      "runs":[{"contender":"a","repetition":1,"status":"complete","error":null,"started_at":"t",
        "startup":null,"usage":null,"disk_end_bytes":null,"exits":[],"logs":[],
        "points":[
          {"scenario":"s","point":"k=1 clients=1","vars":{"k":"1"},"clients":1,"target":"first","started_at":"t","contender_cpu_s":null,"load":null,"error":"x"},
          {"scenario":"s","point":"k=1 clients=8","vars":[["k","1"]],"clients":8,"target":"first","started_at":"t","contender_cpu_s":null,"load":null,"error":"x"},
          {"scenario":"t","point":"clients=1 target=all","vars":{},"clients":1,"target":"all","started_at":"t","contender_cpu_s":null,"load":null,"error":"x"}]}],
      "warnings":[]}"#;

    #[test]
    fn a_version_1_file_is_upgraded_to_typed_identities() {
        let r = Results::from_json(serde_json::from_str(V1).unwrap()).unwrap();
        assert_eq!(r.schema_version, SCHEMA_VERSION);
        assert_eq!(r.runs[0].id, RunId::new("a", 1));
        let s = &r.scenarios[0];
        // The unmeasured `k=2 clients=1` is dropped; the others are the runs' identities.
        assert_eq!(s.points.len(), 2);
        assert_eq!(s.points[0], r.runs[0].points[0].id);
        assert_eq!(s.points[1].label(), "k=1 clients=8");
        assert_eq!(s.points[1].target, None);
        assert_eq!(
            r.scenarios[1].points[0].target,
            Some(crate::plan::Spread::All)
        );
        assert_eq!(r.scenarios[1].points[0].label(), "clients=1 target=all");
        assert_eq!(r.point_runs("a", &s.points[1]).count(), 1);
    }

    #[test]
    fn a_file_of_another_version_says_why_it_does_not_load() {
        let mut v: serde_json::Value = serde_json::from_str(V1).unwrap();
        v["schema_version"] = 9.into();
        let e = format!("{:#}", Results::from_json(v.clone()).unwrap_err());
        assert!(
            e.contains("version 9") && e.contains("newer bakeoff"),
            "{e}"
        );
        v.as_object_mut().unwrap().remove("schema_version");
        let e = format!("{:#}", Results::from_json(v).unwrap_err());
        assert!(e.contains("(none)"), "{e}");
    }

    #[test]
    fn paths_from_results_stay_inside_their_folder() {
        let dir = std::env::temp_dir().join(format!("bakeoff-inside-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("logs")).unwrap();
        std::fs::write(dir.join("logs/a.log"), "a").unwrap();
        assert_eq!(inside(&dir, "logs/a.log"), Some(dir.join("logs/a.log")));
        assert_eq!(
            inside(&dir, "logs/not-yet.log"),
            Some(dir.join("logs/not-yet.log"))
        );
        for bad in ["../x", "logs/../../x", "/etc/hostname", "", "./logs/a.log"] {
            assert_eq!(inside(&dir, bad), None, "{bad}");
        }
        // A link inside the folder that leads out of it.
        std::os::unix::fs::symlink("/etc/hostname", dir.join("logs/link")).unwrap();
        assert_eq!(inside(&dir, "logs/link"), None);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn atomic_writes_replace_the_file() {
        let dir = std::env::temp_dir().join(format!("bakeoff-atomic-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("r.json");
        write_atomic(&f, b"one").unwrap();
        write_atomic(&f, b"two").unwrap();
        assert_eq!(std::fs::read(&f).unwrap(), b"two");
        assert!(!dir.join("r.tmp").exists());
        std::fs::remove_dir_all(dir).unwrap();
    }
}
