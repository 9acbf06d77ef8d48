//! What a run records of each repetition of a contender: its start-up, each point it served (load, slices, capacity search, profile), its usage and exits, and what a what-if did.

use super::*;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Run {
    /// Contender, variant, repetition, shard.
    #[serde(flatten)]
    pub id: RunId,
    /// `running`, `complete`, `failed` (the contender did not start or died) or `interrupted`.
    pub status: Status,
    pub error: Option<String>,
    pub started_at: String,
    pub startup: Option<Startup>,
    pub points: Vec<PointRun>,
    /// CPU time and peak memory of the contender's process tree over the whole repetition.
    pub usage: Option<Usage>,
    pub disk_end_bytes: Option<u64>,
    pub exits: Vec<MemberExit>,
    /// Log files, relative to the results directory.
    pub logs: Vec<String>,
    /// Answers to the compat cases (first repetition only).
    #[serde(default)]
    pub compat: Vec<CompatAnswer>,
    /// The machine this repetition ran on: a run resumed elsewhere, or with other CPUs,
    /// differs from the top-level environment (which records where the run began).
    #[serde(default)]
    pub environment: Option<env::Environment>,
    /// In paired order, the contenders that ran side by side share a block (from 1): only
    /// runs of one block are compared round by round.
    #[serde(default)]
    pub block: Option<u32>,
    /// The bakeoff that ran this repetition, e.g. `bakeoff 0.1.0` (shards may differ). Not
    /// in results written before 0.2.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// A what-if variant (`what_if = ["nodelay"]`): what forcing did over the repetition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub what_if: Option<Forcing>,
    /// Points whose calls sat in the ~40 ms band, measured again at the end of the
    /// repetition with TCP_NODELAY forced (plan `confirm`, on by default).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub confirmations: Vec<Confirmation>,
    /// A delay variant (`what_if = [{ delay = "rpc", by = […] }]`): what its proxy saw.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edge: Option<EdgeStats>,
}

/// What the proxy of a delay variant saw and did over a start (`contender::edge`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EdgeStats {
    /// The port's name in the plan (`{port:NAME}`).
    pub port: String,
    /// The hold added to each chunk on its way to the listening member, µs.
    pub hold_us: u64,
    /// Connections the members made to the proxy (0: they ignored the placeholder).
    pub connections: u64,
    /// Chunks held and forwarded to the listener, and their bytes.
    pub chunks: u64,
    pub bytes: u64,
    /// How late chunks went out past their due time: the mean and the worst, µs.
    pub late_mean_us: f64,
    pub late_max_us: u64,
    /// How long the listener took to start answering what was forwarded (from a forward to
    /// the next chunk back, when that was its answer), mean over `answers`, µs.
    pub answer_mean_us: f64,
    pub answers: u64,
    /// CPU seconds of the proxy's threads.
    pub cpu_s: f64,
    /// Wall seconds the proxy ran.
    pub wall_s: f64,
    /// How far past its time a 100 µs sleep ended here (median of a few), µs: the timer's
    /// granularity, which the spin-finish makes up for.
    pub timer_overshoot_us: u64,
    /// Connections to the listener that failed.
    pub upstream_failures: u64,
    /// Connections closed at once because the proxy held its most links (128) already.
    #[serde(default)]
    pub refused: u64,
}

/// What forcing a socket option did to a contender's sockets.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Forcing {
    /// `nodelay`.
    pub what: String,
    /// Listening sockets the option was set on (connections accepted later inherit it).
    pub listeners: usize,
    /// Established sockets it was set on, just before load was sent over them.
    pub established: usize,
    /// Of those, the ones the server had turned the option off on after accepting them.
    pub cleared_by_server: usize,
    /// Why it could not be forced everywhere (no permission, no listening socket, …).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<String>,
}

impl Forcing {
    pub fn nodelay() -> Forcing {
        Forcing {
            what: "nodelay".into(),
            ..Forcing::default()
        }
    }

    /// Counts one forcing: listening and established sockets set, established ones the
    /// server had cleared, and what went wrong.
    pub fn add(
        &mut self,
        listeners: usize,
        established: usize,
        cleared: usize,
        problems: &[String],
    ) {
        self.listeners += listeners;
        self.established += established;
        self.cleared_by_server += cleared;
        for p in problems {
            if !self.problems.contains(p) {
                self.problems.push(p.clone());
            }
        }
    }

    /// Whether the option reached any socket.
    pub fn took(&self) -> bool {
        self.listeners + self.established > 0
    }
}

/// A point measured again with TCP_NODELAY forced, to confirm a ~40 ms stall is Nagle.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Confirmation {
    pub point: PointId,
    pub forced: Forcing,
    /// The measurement with the option forced.
    pub load: Option<LoadResult>,
    pub error: Option<String>,
    /// `Some(true)`: the band is gone with the option on (it was Nagle); `Some(false)`: it
    /// stayed (something else holds the answers); `None`: it could not be checked.
    pub confirmed: Option<bool>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Startup {
    /// From spawning the first member until every member's readiness probe passed.
    pub first_response_s: f64,
    /// Until the ready condition held (equal to the first response when there is none).
    pub ready_s: f64,
    pub disk_after_start_bytes: u64,
    /// Share of the busy CPUs' time the hypervisor took (steal) from before the start until
    /// ready, 0..1.
    #[serde(default)]
    pub steal: Option<f64>,
    /// Each member of a cluster, in plan order: when it was started (members with `after`
    /// wait for others) and its own first response.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub members: Vec<MemberStartup>,
    /// CPU seconds the contender's process tree used until it was ready (the start-up's
    /// own; `Run::usage` is the whole repetition's). Not in results written before 0.2.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_s: Option<f64>,
    /// How precisely `first_response_s` is timed (seconds): the longest gap, over the
    /// members, between the probe attempt before the pass and the one that passed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_response_resolution_s: Option<f64>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct MemberStartup {
    pub member: String,
    /// Seconds after the contender's first member was started.
    pub started_s: f64,
    /// Seconds from its own start to its probe's first success.
    pub first_response_s: f64,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
pub struct Usage {
    pub cpu_user_s: f64,
    pub cpu_system_s: f64,
    pub peak_rss_bytes: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PointRun {
    /// Scenario, variables, clients, target, rate, stage.
    #[serde(flatten)]
    pub id: PointId,
    pub started_at: String,
    /// CPU seconds the contender's process tree used during the measured load.
    pub contender_cpu_s: Option<f64>,
    /// Share of the time of the CPUs in use (the contenders' and the load's when pinned, all
    /// otherwise) that the hypervisor gave to someone else (steal) during the load, 0..1.
    #[serde(default)]
    pub steal: Option<f64>,
    pub load: Option<LoadResult>,
    pub error: Option<String>,
    /// What serving cost the contender over exactly the measured window (all slices, in
    /// paired order): CPU time on the scheduler's clock and context switches.
    #[serde(default)]
    pub cost: Option<ServerCost>,
    /// Paired order: this contender's slice of each round, in round order.
    #[serde(default)]
    pub slices: Vec<Slice>,
    /// Paired order, `rounds = "auto"`: the most rounds this point could get (the plan's
    /// `max_rounds`, or what its slice length allowed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round_limit: Option<u32>,
    /// `target = "leader"`: the member the `leader` probe found leading before the point.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leader: Option<String>,
    /// A capacity search: every step, and the rate found. `load` is then the step at the
    /// rate found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity: Option<CapacityRun>,
    /// `profile = true`: where the contender's time went during the load.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<ProfileRun>,
}

/// A CPU profile of a contender over one point's load (docs/profiles.md).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct ProfileRun {
    /// Folded on-CPU stacks (`root;…;leaf samples`), relative to the results directory.
    pub on_cpu: Option<String>,
    /// Folded off-CPU stacks (`…;where it was switched out microseconds`).
    pub off_cpu: Option<String>,
    /// On-CPU samples, at `frequency_hz` per second of CPU time.
    pub samples: u64,
    pub frequency_hz: u32,
    /// `dwarf`: stacks unwound from copies of the stack (no frame pointers needed).
    pub call_graph: String,
    /// Time off the CPU recorded, milliseconds over all threads.
    pub off_cpu_ms: f64,
    /// The functions with the most self time, most first: (function, samples).
    pub top: Vec<(String, u64)>,
    /// Binaries most of whose frames had no symbol (stripped).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stripped: Vec<String>,
    /// Why nothing (or not everything) was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// What a capacity search found for one contender in one repetition.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CapacityRun {
    /// The highest rate (requests/s) that passed; `None` when not even the lowest did.
    pub rate: Option<f64>,
    /// The lowest rate that failed; `None` when `max_rate` passed (the capacity is at least
    /// that).
    pub failed_at: Option<f64>,
    /// Every step, in the order run.
    pub steps: Vec<CapacityStep>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CapacityStep {
    /// Offered rate, requests/s.
    pub rate: f64,
    pub achieved_rps: f64,
    /// Latency at the goal's percentile (from when each call was due), microseconds.
    pub latency_us: u64,
    pub failures: u64,
    /// Calls the generator could not send on time (left unsent) or that did not finish.
    pub unsent: u64,
    pub passed: bool,
    /// Why it failed, e.g. `p99 14.2 ms > 10 ms`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

/// A scenario's capacity goal, as the run used it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CapacityGoal {
    pub percentile: crate::plan::Percentile,
    pub goal_us: f64,
    pub min_rate: f64,
    pub max_rate: f64,
    pub step_s: f64,
    pub precision: f64,
}

impl From<&crate::plan::Capacity> for CapacityGoal {
    fn from(c: &crate::plan::Capacity) -> CapacityGoal {
        CapacityGoal {
            percentile: c.percentile,
            goal_us: c.goal.as_secs_f64() * 1e6,
            min_rate: c.min_rate,
            max_rate: c.max_rate,
            step_s: c.step.as_secs_f64(),
            precision: c.precision,
        }
    }
}

impl PointRun {
    /// A point about to be measured: nothing recorded yet.
    pub fn new(id: PointId) -> PointRun {
        PointRun {
            id,
            started_at: now_utc(),
            contender_cpu_s: None,
            steal: None,
            load: None,
            error: None,
            cost: None,
            slices: Vec::new(),
            round_limit: None,
            leader: None,
            capacity: None,
            profile: None,
        }
    }
}

/// How a member ended.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct MemberExit {
    pub member: String,
    pub pid: i32,
    /// e.g. `exit status: 3` or `signal: 15 (SIGTERM)`.
    pub status: String,
    pub code: Option<i32>,
    pub signal: Option<i32>,
    /// True when it ended because bakeoff stopped it.
    pub stopped_by_bakeoff: bool,
}
