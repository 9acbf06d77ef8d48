//! Verdicts of paired runs: for every scenario point and every contender with a baseline,
//! the ratio contender / baseline of each figure with its interval, computed from the rounds
//! the two ran side by side (see `stats::paired` for the method, docs/verdicts.md for the
//! design). Only runs of one block (contenders that ran side by side) are paired.

use crate::results::{PointId, PointRun, Results, Slice};
pub use crate::stats::paired::fmt_ratio;
use crate::stats::paired::{self, knows_its_error, Bands, Call, Ratio};

/// What a verdict is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Figure {
    /// The server's CPU time per request: steady on a shared machine.
    CpuPerRequest,
    /// The server's CPU time per streamed message (server-streaming calls only).
    CpuPerItem,
    Throughput,
    P50,
    P99,
}

impl Figure {
    pub const ALL: [Figure; 5] = [
        Figure::CpuPerRequest,
        Figure::CpuPerItem,
        Figure::Throughput,
        Figure::P50,
        Figure::P99,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Figure::CpuPerRequest => "CPU per request",
            Figure::CpuPerItem => "CPU per item",
            Figure::Throughput => "throughput",
            Figure::P50 => "p50",
            Figure::P99 => "p99",
        }
    }

    /// The figure over a whole point (all its slices), as the serving table shows it.
    fn of_point(self, p: &PointRun) -> Option<f64> {
        let load = p.load.as_ref()?;
        match self {
            Figure::CpuPerRequest => p.cost?.cpu_us_per(load.requests),
            Figure::CpuPerItem => (load.items > load.requests)
                .then(|| p.cost?.cpu_us_per(load.items))
                .flatten(),
            Figure::Throughput => Some(load.requests_per_s),
            Figure::P50 => Some(load.latency_us.p50 as f64),
            Figure::P99 => Some(load.latency_us.p99 as f64),
        }
    }

    fn of(self, s: &Slice) -> Option<f64> {
        match self {
            Figure::CpuPerRequest => s.cpu_us_per_request(),
            Figure::CpuPerItem => s.cpu_us_per_item(),
            Figure::Throughput => Some(s.requests_per_s),
            Figure::P50 => Some(s.p50_us as f64),
            Figure::P99 => Some(s.p99_us as f64),
        }
    }

    /// The words for a change: (when the ratio is above 1, below 1).
    fn words(self) -> (&'static str, &'static str) {
        match self {
            Figure::CpuPerRequest => ("more CPU per request", "less CPU per request"),
            Figure::CpuPerItem => ("more CPU per item", "less CPU per item"),
            Figure::Throughput => ("more throughput", "less throughput"),
            Figure::P50 => ("higher p50", "lower p50"),
            Figure::P99 => ("higher p99", "lower p99"),
        }
    }
}

/// One figure's paired ratio and what it proves.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    pub figure: Figure,
    pub ratio: Ratio,
    pub call: Call,
    /// The bands it was read against.
    pub bands: Bands,
    /// The two-sided p-value of "inside the noise band" ([`Ratio::p_different`]).
    pub p: f64,
    /// Its interval cleared the noise band, but the report's false discovery rate control
    /// did not let it through: it reads inconclusive.
    pub held_back: bool,
    /// The share of the interval's variance that comes from differences between fresh
    /// starts rather than between rounds (`None` below two repetitions): what more rounds
    /// cannot shrink.
    pub between: Option<f64>,
    /// Where the table's medians disagree with the paired estimate: why.
    pub trim: Option<Trim>,
}

/// The serving table's figures (medians over repetitions) disagree with a verdict's paired
/// estimate by more than 5 %: its ratio, and whose rounds trimming left out.
#[derive(Debug, Clone, PartialEq)]
pub struct Trim {
    /// The contender's median over the baseline's, as the table shows them.
    pub table: f64,
    /// The rounds left out at the trimmed ends where one side's slice was far from its own
    /// other slices and its partner's was not: (the contender or the baseline, how many).
    pub whose: Option<(String, usize)>,
}

impl std::fmt::Display for Verdict {
    /// `1.34× (1.29×–1.40×) more CPU per request`; `≈ 1.00× (0.990×–1.01×) throughput equal
    /// within ±2%`; `? 1.03× (0.98×–1.08×) throughput inconclusive (±4.8%)`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let span = self.ratio.span();
        let (up, down) = self.figure.words();
        let name = self.figure.name();
        match self.call {
            Call::Higher => write!(f, "{span} {up}"),
            Call::Lower => write!(f, "{span} {down}"),
            Call::Equivalent => write!(
                f,
                "≈ {span} {name} equal within ±{}",
                pct(self.bands.equivalence)
            ),
            Call::Inconclusive if !knows_its_error(&self.ratio) => {
                write!(f, "? {span} {name} inconclusive (one round: no interval)")
            }
            Call::Inconclusive if self.held_back => write!(
                f,
                "? {span} {name} inconclusive (clears the noise band alone, not under the report's error control)"
            ),
            Call::Inconclusive => write!(
                f,
                "? {span} {name} inconclusive (±{})",
                pct(self.ratio.precision())
            ),
        }
    }
}

/// A share as a percentage with one decimal below 10 %: `2%`, `4.8%`, `12%`.
pub fn pct(x: f64) -> String {
    let v = x * 100.0;
    if (v - v.round()).abs() < 0.05 || v >= 10.0 {
        format!("{v:.0}%")
    } else {
        format!("{v:.1}%")
    }
}

impl Verdict {
    pub(crate) fn new(figure: Figure, ratio: Ratio, bands: Bands, between: Option<f64>) -> Verdict {
        Verdict {
            figure,
            ratio,
            call: ratio.call(bands),
            bands,
            p: ratio.p_different(bands.noise),
            held_back: false,
            between,
            trim: None,
        }
    }

    /// What would settle an inconclusive verdict, from the spread seen: the half-width it
    /// needs (to clear the noise band or to fit inside the equivalence band, whichever is
    /// nearer), and about how many rounds per repetition — or, when more rounds cannot get
    /// there (the spread is between fresh starts, or past `max_rounds`), how many
    /// repetitions. `None` when the verdict is settled.
    pub fn settle(&self, max_rounds: Option<u32>) -> Option<String> {
        if self.call != Call::Inconclusive || self.held_back {
            return None;
        }
        let r = &self.ratio;
        if !knows_its_error(r) {
            return Some("one round is no interval: measure at least two rounds".into());
        }
        let e = r.ratio.ln().abs();
        let now = (r.hi / r.lo).ln() / 2.0;
        let to_equal = (1.0 + self.bands.equivalence).ln() - e;
        let to_differ = e - (1.0 + self.bands.noise).ln();
        let need = to_equal.max(to_differ);
        if need < 0.1 * now || need < 0.0005 {
            return Some("its estimate sits on a band's edge: more data may not settle it".into());
        }
        let factor = (now / need).powi(2);
        let reps = r.repetitions.max(1);
        let per_rep = r.rounds as f64 / reps as f64;
        let b = self.between.unwrap_or(0.0);
        let rounds = (1.0 / factor > b).then(|| (per_rep * (1.0 - b) / (1.0 / factor - b)).ceil());
        let head = format!("needs ±{}", pct(need.exp() - 1.0));
        Some(match rounds {
            Some(n) if max_rounds.is_none_or(|m| n <= f64::from(m)) => {
                format!("{head}: about {n:.0} rounds per repetition")
            }
            _ => format!(
                "{head}: about {} repetitions of {per_rep:.0} rounds",
                (reps as f64 * factor).ceil()
            ),
        })
    }
}

/// A contender against its baseline at one point.
#[derive(Debug, Clone, PartialEq)]
pub struct PointVerdicts {
    pub point: PointId,
    pub contender: String,
    pub baseline: String,
    /// In [`Figure::ALL`] order; a figure that was not measured is left out.
    pub verdicts: Vec<Verdict>,
    /// A merged run whose blocks ran on several machines: each machine's own verdicts (as
    /// `verdicts`, from its blocks only), which `verdicts` combines. Empty on one machine.
    pub machines: Vec<(String, Vec<Verdict>)>,
}

impl PointVerdicts {
    pub fn get(&self, figure: Figure) -> Option<&Verdict> {
        self.verdicts.iter().find(|v| v.figure == figure)
    }

    /// The verdict to lead with: CPU per request where measured, else throughput.
    pub fn main(&self) -> Option<&Verdict> {
        self.get(Figure::CpuPerRequest)
            .or_else(|| self.get(Figure::Throughput))
    }
}

/// The family of a report's verdicts and the error control over it (docs/verdicts.md).
#[derive(Debug, Clone, PartialEq)]
pub struct Family {
    /// Comparisons (contender × point) and verdicts (× figures) in the family.
    pub comparisons: usize,
    pub verdicts: usize,
    /// The false discovery rate the "different" verdicts are held to.
    pub fdr: f64,
    pub different: usize,
    pub equivalent: usize,
    pub inconclusive: usize,
    /// Verdicts whose interval cleared the noise band alone but not under the control.
    pub held_back: usize,
}

/// Every paired comparison in `r`, in plan order (points, then contenders), with the
/// report's false discovery rate control applied; empty for runs that were not paired.
pub fn all(r: &Results) -> (Vec<PointVerdicts>, Option<Family>) {
    let Some(settings) = &r.paired else {
        return (Vec::new(), None);
    };
    let bands = settings.bands();
    let mut out = Vec::new();
    for s in &r.scenarios {
        for point in &s.points {
            for c in r.compared() {
                let Some(base) = c.baseline.as_deref().filter(|b| *b != c.name) else {
                    continue;
                };
                let (verdicts, machines) = compare(r, point, base, &c.name, bands);
                if !verdicts.is_empty() {
                    out.push(PointVerdicts {
                        point: point.clone(),
                        contender: c.name.clone(),
                        baseline: base.to_string(),
                        verdicts,
                        machines,
                    });
                }
            }
        }
    }
    let family = control(&mut out, settings.fdr);
    (out, Some(family))
}

/// Holds the "different" verdicts of `all` to false discovery rate `fdr`: Benjamini–Hochberg
/// over the p-values of every verdict in the report (all points, contenders and figures); a
/// verdict whose interval clears the noise band but that the procedure does not reject reads
/// inconclusive, marked as held back.
pub fn control(all: &mut [PointVerdicts], fdr: f64) -> Family {
    let p: Vec<f64> = all
        .iter()
        .flat_map(|v| v.verdicts.iter().map(|x| x.p))
        .collect();
    let keep = paired::benjamini_hochberg(&p, fdr);
    let mut k = keep.iter();
    let mut held_back = 0;
    for x in all.iter_mut().flat_map(|v| v.verdicts.iter_mut()) {
        let kept = *k.next().expect("one decision per verdict");
        if x.call.is_different() && !kept {
            x.call = Call::Inconclusive;
            x.held_back = true;
            held_back += 1;
        }
    }
    let count = |c: &dyn Fn(Call) -> bool| {
        all.iter()
            .flat_map(|v| &v.verdicts)
            .filter(|x| c(x.call))
            .count()
    };
    Family {
        comparisons: all.len(),
        verdicts: p.len(),
        fdr,
        different: count(&|c| c.is_different()),
        equivalent: count(&|c| c == Call::Equivalent),
        inconclusive: count(&|c| c == Call::Inconclusive),
        held_back,
    }
}

/// The verdicts over all blocks, and per machine when the blocks ran on several (a
/// merged run): each machine's from its own blocks, combined across machines with
/// [`paired::combine`] (docs/scale-out.md).
fn compare(
    r: &Results,
    point: &PointId,
    base: &str,
    name: &str,
    bands: Bands,
) -> (Vec<Verdict>, Vec<(String, Vec<Verdict>)>) {
    let blocks = blocks(r, point, base, name);
    // A block where either side failed most calls compares failures: no verdict from it.
    let failed = |p: &PointRun| p.load.as_ref().is_some_and(|l| l.mostly_failed());
    if blocks.is_empty() || blocks.iter().any(|(_, b, c)| failed(b) || failed(c)) {
        return (Vec::new(), Vec::new());
    }
    let mut machines: Vec<&str> = Vec::new();
    for (m, _, _) in &blocks {
        if !machines.contains(m) {
            machines.push(m);
        }
    }
    // Seeded by the point, so a report of the same results is the same report.
    let seed = point
        .to_string()
        .bytes()
        .fold(0, |h, b| crate::rng::mix(h ^ u64::from(b)));
    let on = |machine: Option<&str>| -> Vec<Verdict> {
        Figure::ALL
            .iter()
            .filter_map(|&figure| {
                let mine: Vec<(&PointRun, &PointRun)> = blocks
                    .iter()
                    .filter(|(m, _, _)| machine.is_none_or(|x| x == *m))
                    .map(|(_, b, c)| (*b, *c))
                    .collect();
                let reps: Vec<paired::Rounds> =
                    mine.iter().map(|(b, c)| rounds(b, c, figure)).collect();
                let ratio = paired::ratio(&reps, seed)?;
                let mut v = Verdict::new(figure, ratio, bands, paired::between_share(&reps));
                // Percentiles of a whole point's merged histogram are not those of its
                // slices; the totals (CPU, calls) are, so only those are held to agree.
                if !matches!(figure, Figure::P50 | Figure::P99) {
                    v.trim = trim(&mine, &reps, figure, &ratio, bands.noise, (base, name));
                }
                Some(v)
            })
            .collect()
    };
    if machines.len() < 2 {
        return (on(None), Vec::new());
    }
    let parts: Vec<(String, Vec<Verdict>)> = machines
        .iter()
        .map(|m| (m.to_string(), on(Some(m))))
        .collect();
    let combined = Figure::ALL
        .iter()
        .filter_map(|&figure| {
            let ratios: Vec<Ratio> = parts
                .iter()
                .filter_map(|(_, v)| v.iter().find(|v| v.figure == figure))
                .map(|v| v.ratio)
                .collect();
            let ratio = paired::combine(&ratios)?;
            Some(Verdict::new(figure, ratio, bands, None))
        })
        .collect();
    (combined, parts)
}

/// How far (log scale, about 5 %) a slice must be from its side's median slice to count as
/// that side's own bad round, not the ordinary spread of the trimmed ends.
const OWN: f64 = 0.05;

/// Whether the table's figures (each side's median over repetitions of its whole point)
/// disagree with the paired estimate by more than 5 % (and twice the noise band), and
/// if so whose rounds the trimmed mean left out: at each trimmed end of a repetition's
/// sorted log ratios, a round counts against the side whose slice was more than twice as
/// far from its own median slice as its partner's was from its own (and more than [`OWN`]).
fn trim(
    blocks: &[(&PointRun, &PointRun)],
    reps: &[paired::Rounds],
    figure: Figure,
    ratio: &Ratio,
    noise: f64,
    (base, name): (&str, &str),
) -> Option<Trim> {
    let median = |v: Vec<f64>| crate::stats::Sample::new(v).ok().map(|s| s.median());
    let b = median(
        blocks
            .iter()
            .filter_map(|(b, _)| figure.of_point(b))
            .collect(),
    )?;
    let c = median(
        blocks
            .iter()
            .filter_map(|(_, c)| figure.of_point(c))
            .collect(),
    )?;
    let table = c / b;
    // Apart by more than twice the noise band and 5 %: the interval is no guide here, since
    // its resamples see the stalls the estimate trims.
    let apart = (2.0 * (1.0 + noise).ln()).max(OWN);
    if !(table.is_finite() && table > 0.0) || (table / ratio.ratio).ln().abs() <= apart {
        return None;
    }
    let (mut against_base, mut against_name) = (0, 0);
    for rep in reps {
        let ok: Vec<(f64, f64)> = rep
            .iter()
            .copied()
            .filter(|(b, c)| *b > 0.0 && *c > 0.0)
            .collect();
        let cut = ok.len() / 10;
        if cut == 0 {
            continue;
        }
        let (Some(mb), Some(mc)) = (
            median(ok.iter().map(|x| x.0).collect()),
            median(ok.iter().map(|x| x.1).collect()),
        ) else {
            continue;
        };
        let mut sorted = ok.clone();
        sorted.sort_by(|x, y| (x.1 / x.0).total_cmp(&(y.1 / y.0)));
        let n = sorted.len();
        for (rb, rc) in sorted[..cut].iter().chain(&sorted[n - cut..]) {
            let (db, dc) = ((rb / mb).ln().abs(), (rc / mc).ln().abs());
            if dc > 2.0 * db && dc > OWN {
                against_name += 1;
            } else if db > 2.0 * dc && db > OWN {
                against_base += 1;
            }
        }
    }
    let whose = match (against_name, against_base) {
        (0, 0) => None,
        (n, b) if n >= b => Some((name.to_string(), n)),
        (_, b) => Some((base.to_string(), b)),
    };
    Some(Trim { table, whose })
}

/// (machine, baseline's point, contender's point) of every block in which both ran the
/// point in rounds. The machine is the contender's run's (`BAKEOFF_MACHINE` or host name).
fn blocks<'a>(
    r: &'a Results,
    point: &PointId,
    base: &str,
    name: &str,
) -> Vec<(&'a str, &'a PointRun, &'a PointRun)> {
    let find = |who: &str, block: u32| {
        r.runs
            .iter()
            .filter(|x| x.id.is(who) && x.block == Some(block))
            .find_map(|x| {
                let p = x
                    .points
                    .iter()
                    .find(|p| p.id == *point && !p.slices.is_empty())?;
                let env = r.environment_of(x);
                Some((env.machine(), p))
            })
    };
    let mut ids: Vec<u32> = r.runs.iter().filter_map(|x| x.block).collect();
    ids.sort_unstable();
    ids.dedup();
    ids.into_iter()
        .filter_map(|b| {
            let (_, bp) = find(base, b)?;
            let (m, cp) = find(name, b)?;
            Some((m, bp, cp))
        })
        .collect()
}

/// The gate of `--fail-on-regression PCT`: verdicts that read *different* and worse, with
/// the whole interval past `limit` (0.05 = 5 %): more CPU per request or item, higher p50
/// or p99 (ratio above 1 + limit), or less throughput (below 1 / (1 + limit)). A cell held
/// back by the report's error control is not different. Each as a sentence.
pub fn regressions(verdicts: &[PointVerdicts], limit: f64) -> Vec<String> {
    let mut out = Vec::new();
    for v in verdicts {
        for x in &v.verdicts {
            let worse = match x.figure {
                Figure::Throughput => x.call == Call::Lower && x.ratio.hi < 1.0 / (1.0 + limit),
                _ => x.call == Call::Higher && x.ratio.lo > 1.0 + limit,
            };
            if worse {
                out.push(format!(
                    "{} against {} at {}: {x}",
                    v.contender, v.baseline, v.point
                ));
            }
        }
    }
    out
}

/// The gate of `--fail-unless-equivalent PCT`, for changes that must not change
/// performance: every comparison whose main figure (CPU per request where measured, else
/// throughput) is not proven equal within `band` — its whole interval inside 1 ± band — each
/// as a sentence (with [`unverdicted`], which names the contenders nothing was proven for).
pub fn not_equivalent(verdicts: &[PointVerdicts], band: f64) -> Vec<String> {
    let mut out = Vec::new();
    for v in verdicts {
        let Some(x) = v.main() else { continue };
        let bands = Bands {
            noise: x.bands.noise,
            equivalence: band,
        };
        if x.ratio.call(bands) != Call::Equivalent {
            out.push(format!(
                "{} against {} at {}: {x}, not within ±{}",
                v.contender,
                v.baseline,
                v.point,
                pct(band)
            ));
        }
    }
    out
}

/// Compared contenders without a single paired verdict against their baseline (not run,
/// failed every point, or a run that was not paired), each as a sentence.
pub fn unverdicted(r: &Results, verdicts: &[PointVerdicts]) -> Vec<String> {
    let mut out = Vec::new();
    for c in r.compared() {
        let compared = c.baseline.as_deref().is_some_and(|b| b != c.name);
        if compared && !verdicts.iter().any(|v| v.contender == c.name) {
            out.push(format!(
                "{}: no paired verdict against {} (not run, failed, or not paired)",
                c.name,
                c.baseline.as_deref().unwrap_or_default()
            ));
        }
    }
    out
}

/// The rounds left out of verdicts' estimates that were one contender's own (see [`Trim`]):
/// one finding per contender and figure, with the places.
pub fn trim_findings(verdicts: &[PointVerdicts]) -> Vec<crate::diagnose::Finding> {
    let mut out: Vec<crate::diagnose::Finding> = Vec::new();
    for v in verdicts {
        for x in &v.verdicts {
            let Some(t) = &x.trim else { continue };
            let place = v.point.to_string();
            let whose = t.whose.as_ref().map(|w| w.0.clone());
            let same = out.iter_mut().find_map(|f| match f {
                crate::diagnose::Finding::TrimmedAway {
                    contender,
                    figure,
                    whose: w,
                    places,
                    ..
                } if *contender == v.contender && figure == x.figure.name() && *w == whose => {
                    Some(places)
                }
                _ => None,
            });
            match same {
                Some(places) => places.push(place),
                None => out.push(crate::diagnose::Finding::TrimmedAway {
                    contender: v.contender.clone(),
                    baseline: v.baseline.clone(),
                    figure: x.figure.name().to_string(),
                    table: t.table,
                    paired: x.ratio.span(),
                    whose,
                    rounds: t.whose.as_ref().map_or(0, |w| w.1),
                    places: vec![place],
                }),
            }
        }
    }
    out
}

/// Where one machine's verdicts disagree with the others' (three machines or more): per
/// contender, baseline and figure, the points where [`paired::odd_one_out`] names a machine.
pub fn machine_findings(verdicts: &[PointVerdicts]) -> Vec<crate::diagnose::Finding> {
    let mut out: Vec<crate::diagnose::Finding> = Vec::new();
    for v in verdicts.iter().filter(|v| v.machines.len() >= 3) {
        let Some(main) = v.main() else { continue };
        let figure = main.figure;
        let ratios: Vec<Ratio> = v
            .machines
            .iter()
            .filter_map(|(_, vs)| vs.iter().find(|x| x.figure == figure))
            .map(|x| x.ratio)
            .collect();
        if ratios.len() != v.machines.len() {
            continue;
        }
        let Some((i, _)) = paired::odd_one_out(&ratios) else {
            continue;
        };
        let others: Vec<Ratio> = ratios
            .iter()
            .enumerate()
            .filter(|(j, _)| *j != i)
            .map(|(_, r)| *r)
            .collect();
        let elsewhere = paired::combine(&others).map_or(f64::NAN, |r| r.ratio);
        let place = v.point.to_string();
        let machine = v.machines[i].0.clone();
        let same = out.iter_mut().find_map(|f| match f {
            crate::diagnose::Finding::MachineDisagrees {
                contender,
                machine: m,
                figure: fg,
                places,
                ..
            } if *contender == v.contender && *m == machine && fg == figure.name() => Some(places),
            _ => None,
        });
        match same {
            Some(places) => places.push(place),
            None => out.push(crate::diagnose::Finding::MachineDisagrees {
                contender: v.contender.clone(),
                baseline: v.baseline.clone(),
                machine,
                figure: figure.name().to_string(),
                there: ratios[i].ratio,
                elsewhere,
                places: vec![place],
            }),
        }
    }
    out
}

/// The rounds both ran, as (baseline's figure, contender's figure), balanced for position.
fn rounds(base: &PointRun, other: &PointRun, figure: Figure) -> paired::Rounds {
    crate::results::balanced_rounds(&base.slices, &other.slices, &|s| figure.of(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    const BANDS: Bands = Bands {
        noise: 0.01,
        equivalence: 0.02,
    };

    fn ratio(r: f64, lo: f64, hi: f64) -> Ratio {
        Ratio {
            ratio: r,
            lo,
            hi,
            repetitions: 3,
            rounds: 18,
        }
    }

    fn v(figure: Figure, r: f64, lo: f64, hi: f64) -> Verdict {
        Verdict::new(figure, ratio(r, lo, hi), BANDS, Some(0.0))
    }

    fn at(clients: usize, verdicts: Vec<Verdict>) -> PointVerdicts {
        PointVerdicts {
            point: crate::results::PointId {
                scenario: "s".into(),
                vars: crate::results::Vars(Vec::new()),
                clients,
                target: None,
                rate: None,
                stage: None,
            },
            contender: "v2".into(),
            baseline: "v1".into(),
            verdicts,
            machines: Vec::new(),
        }
    }

    #[test]
    fn ratios_keep_their_digits_and_large_ones_read_as_factors() {
        assert_eq!(fmt_ratio(0.905), "0.905×");
        assert_eq!(fmt_ratio(1.344), "1.34×");
        assert_eq!(fmt_ratio(1.0), "1.00×");
        assert_eq!(fmt_ratio(472.4), "472×");
        assert_eq!(fmt_ratio(3.21), "3.2×");
        assert_eq!(fmt_ratio(1.0 / 260.0), "÷260");
        assert_eq!(fmt_ratio(0.3), "÷3.3");
        assert_eq!(fmt_ratio(0.0), "—");
        assert_eq!(pct(0.02), "2%");
        assert_eq!(pct(0.048), "4.8%");
        assert_eq!(pct(0.123), "12%");
    }

    #[test]
    fn regressions_are_different_and_worse_by_more_than_the_limit() {
        let worse = at(
            1,
            vec![
                v(Figure::CpuPerRequest, 1.10, 1.07, 1.13), // more CPU, clear of 5 %
                v(Figure::Throughput, 0.90, 0.88, 0.93),    // less throughput, clear of 5 %
            ],
        );
        let r = regressions(std::slice::from_ref(&worse), 0.05);
        assert_eq!(r.len(), 2, "{r:?}");
        assert_eq!(
            r[0],
            "v2 against v1 at s [clients=1]: 1.10× (1.07×–1.13×) more CPU per request"
        );
        let borderline = at(
            1,
            vec![
                v(Figure::CpuPerRequest, 1.06, 1.03, 1.09), // interval reaches inside 5 %
                v(Figure::Throughput, 1.5, 1.4, 1.6),       // better
                v(Figure::P99, 0.5, 0.4, 0.6),              // better
            ],
        );
        assert!(regressions(&[borderline], 0.05).is_empty());
        // Held back by the report's error control: not different, so no regression.
        let mut held = worse.clone();
        held.verdicts[0].call = Call::Inconclusive;
        held.verdicts[0].held_back = true;
        assert_eq!(regressions(&[held], 0.05).len(), 1);
    }

    #[test]
    fn a_verdict_says_which_of_three_it_is() {
        assert_eq!(
            v(Figure::CpuPerRequest, 1.344, 1.29, 1.40).to_string(),
            "1.34× (1.29×–1.40×) more CPU per request"
        );
        assert_eq!(
            v(Figure::Throughput, 0.905, 0.842, 0.972).to_string(),
            "0.905× (0.842×–0.972×) less throughput"
        );
        assert_eq!(
            v(Figure::Throughput, 1.002, 0.99, 1.012).to_string(),
            "≈ 1.00× (0.990×–1.01×) throughput equal within ±2%"
        );
        assert_eq!(
            v(Figure::Throughput, 1.03, 0.98, 1.08).to_string(),
            "? 1.03× (0.980×–1.08×) throughput inconclusive (±5%)"
        );
        assert_eq!(
            v(Figure::P50, 1.0 / 500.0, 1.0 / 520.0, 1.0 / 480.0).to_string(),
            "÷500 (÷520–÷480) lower p50"
        );
        let one = Verdict::new(
            Figure::CpuPerRequest,
            Ratio {
                rounds: 1,
                repetitions: 1,
                ..ratio(0.93, 0.93, 0.93)
            },
            BANDS,
            None,
        );
        assert_eq!(one.call, Call::Inconclusive);
        assert_eq!(
            one.to_string(),
            "? 0.930× (0.930×–0.930×) CPU per request inconclusive (one round: no interval)"
        );
    }

    #[test]
    fn error_control_holds_back_a_lone_edge_among_many_and_keeps_clear_changes() {
        // 40 comparisons: one clear change, one that just clears the band, the rest A/A.
        let mut all: Vec<PointVerdicts> = (0..40)
            .map(|k| at(k, vec![v(Figure::CpuPerRequest, 1.0, 0.98, 1.02)]))
            .collect();
        all[0].verdicts[0] = v(Figure::CpuPerRequest, 1.30, 1.25, 1.35);
        all[1].verdicts[0] = v(Figure::CpuPerRequest, 1.03, 1.011, 1.05);
        assert_eq!(
            all[1].verdicts[0].call,
            Call::Higher,
            "alone it is different"
        );
        let f = control(&mut all, 0.05);
        assert_eq!(all[0].verdicts[0].call, Call::Higher);
        assert_eq!(all[1].verdicts[0].call, Call::Inconclusive);
        assert!(all[1].verdicts[0].held_back);
        assert!(all[1].verdicts[0].to_string().contains("error control"));
        assert_eq!(
            (f.verdicts, f.comparisons, f.different, f.held_back),
            (40, 40, 1, 1)
        );
        assert_eq!(f.equivalent + f.inconclusive + f.different, 40);
        // Alone, the same edge stays different: the control is over the family.
        let mut one = vec![at(1, vec![v(Figure::CpuPerRequest, 1.03, 1.011, 1.05)])];
        assert_eq!(control(&mut one, 0.05).different, 1);
    }

    #[test]
    fn an_inconclusive_verdict_says_what_would_settle_it() {
        // ±5 % around 1.00, all spread within repetitions: equal within 2 % needs ±2 %, a
        // (5/2)² = 6.25-fold variance cut: about 6.25 × 6 = 38 rounds per repetition.
        let x = v(Figure::CpuPerRequest, 1.0, 1.0 / 1.05, 1.05);
        let s = x.settle(Some(100)).unwrap();
        assert!(s.starts_with("needs ±2%: about 3"), "{s}");
        assert!(s.contains("rounds per repetition"), "{s}");
        // Past max_rounds, or spread between fresh starts: repetitions instead.
        let s = x.settle(Some(30)).unwrap();
        assert!(s.contains("repetitions of 6 rounds"), "{s}");
        let mut starts = x.clone();
        starts.between = Some(0.9);
        assert!(starts.settle(None).unwrap().contains("repetitions"));
        // Between the bands: ±0.5 % would tell 1.5 % from both 1 % and 2 %.
        let between = v(Figure::CpuPerRequest, 1.015, 0.99, 1.04);
        assert!(between.settle(None).unwrap().starts_with("needs ±0.5%"));
        // On a band's edge (here both bands are 1 %): more data may never settle it.
        let mut edge = v(Figure::CpuPerRequest, 1.01, 0.99, 1.03);
        edge.bands.equivalence = 0.01;
        assert!(edge.settle(None).unwrap().contains("edge"), "{edge}");
        assert_eq!(v(Figure::CpuPerRequest, 1.3, 1.2, 1.4).settle(None), None);
    }

    #[test]
    fn a_stall_of_one_side_that_trimming_hid_is_named() {
        use crate::load::result::tests::part;
        let point = |rps: f64| {
            let mut p = PointRun::new(at(1, Vec::new()).point);
            let mut load = part(&[100; 10], 1000, 1.0);
            load.requests_per_s = rps;
            p.load = Some(load);
            p
        };
        // Twenty rounds, two of them a stall of the contender alone (a tenth of its usual
        // throughput): the trimmed estimate leaves both out and reads 1.00×, while the
        // table's whole-point figures read 0.8×.
        let mut rounds: paired::Rounds = (0..20)
            .map(|k| (1000.0, 1000.0 * (1.0 + 0.001 * (k % 3) as f64)))
            .collect();
        rounds[4].1 = 100.0;
        rounds[11].1 = 100.0;
        let ratio = paired::ratio(std::slice::from_ref(&rounds), 1).unwrap();
        assert!((ratio.ratio - 1.0).abs() < 0.01, "{ratio:?}");
        let (b, c) = (point(1000.0), point(800.0));
        let t = trim(
            &[(&b, &c)],
            &[rounds.clone()],
            Figure::Throughput,
            &ratio,
            0.01,
            ("v1", "v2"),
        )
        .expect("the table and the estimate disagree");
        assert!((t.table - 0.8).abs() < 1e-9);
        assert_eq!(t.whose, Some(("v2".to_string(), 2)));
        // The table agreeing with the estimate: nothing to say.
        let same = point(1000.0);
        assert_eq!(
            trim(
                &[(&b, &same)],
                &[rounds],
                Figure::Throughput,
                &ratio,
                0.01,
                ("v1", "v2")
            ),
            None
        );
        // As a finding, once per contender and figure, with its places.
        let mut x = Verdict::new(Figure::Throughput, ratio, BANDS, None);
        x.trim = Some(t);
        let f = trim_findings(&[at(1, vec![x.clone()]), at(16, vec![x])]);
        assert_eq!(f.len(), 1, "{f:?}");
        let text = f[0].to_string();
        assert!(
            text.contains("v2's throughput against v1: the table's medians say 0.800×"),
            "{text}"
        );
        assert!(
            text.contains("2 of the rounds the estimate trims away were v2's own"),
            "{text}"
        );
        assert!(text.contains("s [clients=1], s [clients=16]"), "{text}");
    }

    #[test]
    fn the_equivalence_gate_needs_every_main_figure_inside_its_band() {
        let equal = at(1, vec![v(Figure::CpuPerRequest, 1.0, 0.99, 1.012)]);
        let wide = at(8, vec![v(Figure::CpuPerRequest, 1.0, 0.95, 1.05)]);
        assert!(not_equivalent(std::slice::from_ref(&equal), 0.02).is_empty());
        let out = not_equivalent(&[equal.clone(), wide], 0.02);
        assert_eq!(out.len(), 1, "{out:?}");
        assert!(out[0].contains("clients=8") && out[0].contains("not within ±2%"));
        // A wider band of the gate's own admits it.
        assert!(not_equivalent(&[equal], 0.005).len() == 1);
    }
}
