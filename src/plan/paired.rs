//! The order contenders take turns in, and the paired order's settings (docs/verdicts.md):
//! slices, rounds, the bands, the error rate, the figures judged.

use std::time::Duration;

/// In which order contenders take turns. `Paired` (the default when two or more contenders
/// serve scenarios): the contenders of a repetition run side by side and the load alternates
/// between them in short slices, so each round compares them in the same seconds of the
/// machine's life (docs/verdicts.md). `Interleaved`: one contender at a time, `A B A B …`
/// (spreads slow drift over all contenders); `Sequential`: `A A … B B …`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    Paired,
    Interleaved,
    Sequential,
}

impl Order {
    pub fn as_str(self) -> &'static str {
        match self {
            Order::Paired => "paired",
            Order::Interleaved => "interleaved",
            Order::Sequential => "sequential",
        }
    }
}

/// How a paired point is cut into rounds (`[paired]` in a plan).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Paired {
    /// Each contender's turn in a round: fixed, or `None` for `"auto"` — as short as lets
    /// it hold [`SLICE_CALLS`] calls of the slowest contender, within [`SLICE_MIN`] and
    /// [`SLICE_MAX`] (docs/verdicts.md, "How long a slice is").
    pub slice: Option<Duration>,
    pub rounds: Rounds,
    /// A change counts only when its whole interval clears this band around 1 (0.01 = 1 %).
    pub noise: f64,
    /// Two figures are proven equal when the whole interval lies inside this band.
    pub equivalence: f64,
    /// The false discovery rate the report holds its "different" verdicts to
    /// (Benjamini–Hochberg over every verdict of the report).
    pub fdr: f64,
    /// More repetitions, up to this many, for the points whose main verdict is still
    /// inconclusive after the plan's `repetitions` and that the spread seen says this many
    /// could settle (docs/verdicts.md, "More repetitions"); `None`: the plan's only.
    pub max_repetitions: Option<u32>,
    /// The figures the report judges (`paired.judge`): the family its error control holds
    /// (docs/verdicts.md, "Judging fewer figures").
    pub judge: Judged,
}

/// The keys of the figures a paired report can judge, in the order the report lists them.
pub const FIGURES: [&str; 5] = [
    "cpu_per_request",
    "cpu_per_item",
    "throughput",
    "p50",
    "p99",
];

/// A set of [`FIGURES`] (`paired.judge`): which figures get a verdict and count in the
/// report's family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Judged(u8);

impl Judged {
    /// Every figure: what a plan without `paired.judge` judges.
    pub const ALL: Judged = Judged((1 << FIGURES.len()) - 1);

    /// The set of these keys; `Err(key)` for the first that names no figure.
    pub fn of<'a>(keys: impl IntoIterator<Item = &'a str>) -> Result<Judged, &'a str> {
        let mut bits = 0;
        for k in keys {
            // `cpu-per-request`, as `--figure` spells it, is `cpu_per_request`.
            let i = FIGURES
                .iter()
                .position(|f| *f == k || f.replace('_', "-") == k)
                .ok_or(k)?;
            bits |= 1 << i;
        }
        Ok(Judged(bits))
    }

    pub fn has(self, key: &str) -> bool {
        FIGURES
            .iter()
            .position(|f| *f == key)
            .is_some_and(|i| self.0 & (1 << i) != 0)
    }

    pub fn is_all(self) -> bool {
        self == Judged::ALL
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Its keys, in [`FIGURES`] order.
    pub fn keys(self) -> Vec<&'static str> {
        FIGURES.into_iter().filter(|k| self.has(k)).collect()
    }
}

/// How many rounds a paired point gets.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Rounds {
    /// Exactly this many.
    Fixed(u32),
    /// At least enough rounds for the scenario's `duration` (and 2), then more, two at a
    /// time, until the main ratio's interval — as the report will read it, over the plan's
    /// repetitions — is within ±`precision` (0.02 = 2 %) and decided, or `max` rounds were
    /// run. `max: None` is as many rounds as [`ROUNDS_TIME`] of slices holds, and at least
    /// [`ROUNDS_MIN_LIMIT`].
    Auto { max: Option<u32>, precision: f64 },
    /// As many rounds as the scenario's `duration` holds (and 2), no more, and stopped
    /// within each contender's share of the wall-clock (the duration, its slices' edges
    /// included): each contender is measured as long as it would be alone — a nightly's
    /// screen (docs/history.md).
    Duration,
}

/// The probe slice an auto-sliced point's first round runs, which its rates are read off.
pub const SLICE_PROBE: Duration = Duration::from_millis(100);
/// An auto slice is the shortest that holds this many calls of the slowest contender.
pub const SLICE_CALLS: f64 = 250.0;
/// The shortest auto slice: a slice's edges (stopping the load, reading each thread's
/// CPU) take a few milliseconds.
pub const SLICE_MIN: Duration = Duration::from_millis(25);
/// The shortest auto slice of rounds held to the clock (`rounds = "duration"`, a screen):
/// their count is what the wall-clock holds, and twice the rounds of half the length read
/// a repetition's ratio closer, the host's drift within it shared by shorter pairs
/// (docs/history.md, "A screen instead").
pub const SLICE_MIN_CLOCKED: Duration = Duration::from_millis(12);
/// The longest auto slice.
pub const SLICE_MAX: Duration = Duration::from_secs(1);
/// The default limit of auto rounds: as many rounds as this much of one contender's
/// slices holds — what the 30 rounds of 100 ms the limit was before slices were auto took,
/// so a point at its limit costs what it did (120 rounds of 25 ms, 3 of 1 s)…
pub const ROUNDS_TIME: Duration = Duration::from_secs(3);
/// …and never fewer than this: two rounds in each order.
pub const ROUNDS_MIN_LIMIT: u32 = 4;

impl Paired {
    /// The slice an auto-sliced point runs after its probe round, from the slowest
    /// contender's calls per second in it (`None`: none answered), no shorter than
    /// `shortest` ([`SLICE_MIN`], or [`SLICE_MIN_CLOCKED`] for rounds held to the clock).
    pub fn auto_slice(slowest_per_s: Option<f64>, shortest: Duration) -> Duration {
        match slowest_per_s {
            Some(r) if r > 0.0 && r.is_finite() => {
                let ms = (SLICE_CALLS / r * 1000.0).ceil();
                Duration::from_millis(
                    ms.clamp(shortest.as_millis() as f64, SLICE_MAX.as_millis() as f64) as u64,
                )
            }
            _ => SLICE_MAX,
        }
    }

    /// The most rounds a point gets with slices of `slice`: `max` when given, else as many
    /// as [`ROUNDS_TIME`] holds, at least [`ROUNDS_MIN_LIMIT`].
    pub fn round_limit(max: Option<u32>, slice: Duration) -> u32 {
        max.unwrap_or_else(|| {
            let fit = (ROUNDS_TIME.as_secs_f64() / slice.as_secs_f64().max(1e-3)).ceil() as u32;
            fit.max(ROUNDS_MIN_LIMIT)
        })
    }
}

impl Default for Paired {
    fn default() -> Paired {
        Paired {
            // A slice's spread does not shrink with its length here (20 ms to 400 ms), so
            // the shortest slice that still holds enough calls buys the most rounds in the
            // same time (docs/verdicts.md, "How long a slice is").
            slice: None,
            rounds: Rounds::Auto {
                max: None,
                precision: 0.02,
            },
            noise: 0.01,
            // The precision target: a point that reached ±2 % around 1 is proven equal
            // within it (docs/verdicts.md, "Three verdicts").
            equivalence: 0.02,
            fdr: 0.05,
            max_repetitions: None,
            judge: Judged::ALL,
        }
    }
}
