//! When the serving table and a paired verdict disagree: the table's figures are medians
//! over repetitions of each side's whole point, the verdict a trimmed mean of paired
//! rounds, and a stall of one side alone moves the first and not the second. This says
//! whose rounds the trimming left out (docs/verdicts.md, "Nothing hidden by trimming").

use crate::stats::paired::{self, Call, Ratio};

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

/// How far (log scale, about 5 %) a slice must be from its side's median slice to count as
/// that side's own bad round, not the ordinary spread of the trimmed ends.
const OWN: f64 = 0.05;

/// Whether `table` — the ratio of the table's figures, each side's median over repetitions
/// of its whole point — disagrees with a paired verdict that is not *different* the same way
/// (equivalent, inconclusive, or different the other way), with its estimate by more than 5 % (and twice the noise band), and
/// if so whose rounds the trimmed mean left out: at each trimmed end of a repetition's
/// sorted log ratios, a round counts against the side whose slice was more than twice as
/// far from its own median slice as its partner's was from its own (and more than [`OWN`]).
pub(super) fn trim(
    table: f64,
    reps: &[paired::Rounds],
    (ratio, call): (&Ratio, Call),
    noise: f64,
    (base, name): (&str, &str),
) -> Option<Trim> {
    // A verdict that reads different the way the table points hides nothing, however far
    // apart two noisy estimates of a 200-fold gap are.
    let same_way = (table - 1.0).signum() == (ratio.ratio - 1.0).signum();
    if call.is_different() && same_way {
        return None;
    }
    let median = |v: Vec<f64>| crate::stats::Sample::new(v).ok().map(|s| s.median());
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
