//! Ratios measured on different machines (the blocks of a merged, scaled-out run,
//! docs/scale-out.md), combined into one, and the machine whose ratio disagrees with the
//! others' named.

use super::paired::{knows_its_error, mean, t975, Ratio};

/// Ratios measured on different machines (the blocks of a merged, scaled-out run), each
/// from [`ratio`](super::paired::ratio) over that machine's own repetitions, combined into one.
///
/// A random-effects meta-analysis on the log scale: each machine's log ratio, with the
/// standard error its bootstrap interval implies (half its width over 1.96), is weighted by
/// the inverse of its variance plus the variance between machines, which is estimated by
/// the method of moments from Cochran's Q (DerSimonian & Laird, "Meta-analysis in clinical
/// trials", *Controlled Clinical Trials* 7:177–188, 1986); the 95 % interval is the normal
/// one on that weighted mean. Machines that agree (Q at most its degrees of freedom) leave
/// no variance between them, and the interval is that of all their rounds together —
/// narrower than any one machine's, which is what spreading a bake-off over machines is
/// for. Machines that disagree add their spread to every weight and widen the interval, so
/// the verdict holds only where the change is clear of how much machines differ; with few
/// machines that spread is itself uncertain, which is why [`odd_one_out`] also names the
/// machine that disagrees. (The Hartung-Knapp t-interval was tried: with three machines its
/// t(2) = 4.3 made three machines that agree less decisive than one.)
///
/// When some machine rests on one round (its own error unknown), the machines weigh the
/// same and the interval is Student's t over their log ratios. `None` when no part has a
/// ratio; one part is returned as it is.
pub fn combine(parts: &[Ratio]) -> Option<Ratio> {
    let parts: Vec<&Ratio> = parts
        .iter()
        .filter(|r| r.ratio > 0.0 && r.ratio.is_finite())
        .collect();
    match parts.len() {
        0 => return None,
        1 => return Some(*parts[0]),
        _ => {}
    }
    let k = parts.len();
    let totals = |lo: f64, mu: f64, hi: f64, student| Ratio {
        ratio: mu.exp(),
        lo: lo.exp(),
        hi: hi.exp(),
        repetitions: parts.iter().map(|r| r.repetitions).sum(),
        rounds: parts.iter().map(|r| r.rounds).sum(),
        student,
    };
    // A machine measured in a single round has no error of its own to weigh it by: then
    // every machine weighs the same, and the interval is Student's t over the machines'
    // log ratios (the spread between machines is all there is to go on).
    if parts.iter().any(|r| !knows_its_error(r)) {
        let y: Vec<f64> = parts.iter().map(|r| r.ratio.ln()).collect();
        let m = mean(&y);
        let sd = (y.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (k - 1) as f64).sqrt();
        let se = sd / (k as f64).sqrt();
        let half = t975(k - 1) * se;
        return Some(totals(m - half, m, m + half, Some((se, k - 1))));
    }
    let (y, v) = log_and_variance(&parts);
    let fit = random_effects(&y, &v);
    let half = 1.959_964 * fit.var_mu.sqrt();
    Some(totals(fit.mu - half, fit.mu, fit.mu + half, None))
}

/// A DerSimonian-Laird fit of log ratios `y` with variances `v`.
struct Fit {
    mu: f64,
    var_mu: f64,
    /// The variance between machines.
    tau2: f64,
}

fn random_effects(y: &[f64], v: &[f64]) -> Fit {
    let k = y.len();
    let w: Vec<f64> = v.iter().map(|v| 1.0 / v).collect();
    let sw: f64 = w.iter().sum();
    let fixed = y.iter().zip(&w).map(|(y, w)| y * w).sum::<f64>() / sw;
    let q: f64 = y.iter().zip(&w).map(|(y, w)| w * (y - fixed).powi(2)).sum();
    let c = sw - w.iter().map(|w| w * w).sum::<f64>() / sw;
    let tau2 = if k > 1 && c > 0.0 {
        ((q - (k - 1) as f64) / c).max(0.0)
    } else {
        0.0
    };
    let ws: Vec<f64> = v.iter().map(|v| 1.0 / (v + tau2)).collect();
    let sws: f64 = ws.iter().sum();
    Fit {
        mu: y.iter().zip(&ws).map(|(y, w)| y * w).sum::<f64>() / sws,
        var_mu: 1.0 / sws,
        tau2,
    }
}

/// Whether one machine's ratio disagrees with the others': for each part, whether its log
/// ratio falls outside where the others predict a further machine's would — their
/// random-effects fit, with its error, their spread between machines and this part's own
/// error (the prediction interval of Higgins, Thompson & Spiegelhalter, "A re-evaluation of
/// random-effects meta-analysis", *J. R. Stat. Soc. A* 172, 2009) — at the two-sided 5 %
/// point Bonferroni-corrected for the number of parts, and by more than 5 %. The part with
/// the largest |z| is returned. `None` below three parts (with two, neither is "the odd one
/// out"), when a part rests on one round (its own error is unknown), or when a part rests on
/// one repetition: then a machine and a fresh start are the same thing, and a machine's
/// difference cannot be told from the ordinary start-to-start variation that every
/// repetition shows (the combined interval still counts it, through the spread between
/// machines).
pub fn odd_one_out(parts: &[Ratio]) -> Option<(usize, f64)> {
    if parts.len() < 3
        || parts.iter().any(|r| {
            !(r.ratio > 0.0 && r.ratio.is_finite() && knows_its_error(r) && r.repetitions >= 2)
        })
    {
        return None;
    }
    let refs: Vec<&Ratio> = parts.iter().collect();
    let (y, v) = log_and_variance(&refs);
    let crit = z_two_sided(0.05 / parts.len() as f64);
    (0..y.len())
        .filter_map(|i| {
            let (oy, ov): (Vec<f64>, Vec<f64>) = (0..y.len())
                .filter(|&j| j != i)
                .map(|j| (y[j], v[j]))
                .unzip();
            let fit = random_effects(&oy, &ov);
            let d = y[i] - fit.mu;
            let z = d / (v[i] + fit.var_mu + fit.tau2).sqrt();
            (z.abs() > crit && d.abs() > 1.05f64.ln()).then_some((i, z))
        })
        .max_by(|a, b| a.1.abs().total_cmp(&b.1.abs()))
}

/// Log ratios and their variances from 95 % intervals (a floor keeps a part whose rounds
/// all agreed exactly from taking all the weight).
fn log_and_variance(parts: &[&Ratio]) -> (Vec<f64>, Vec<f64>) {
    let y = parts.iter().map(|r| r.ratio.ln()).collect();
    let v = parts
        .iter()
        .map(|r| {
            let se = (r.hi.max(r.ratio).ln() - r.lo.min(r.ratio).ln()) / (2.0 * 1.959_964);
            se.max(1e-4).powi(2)
        })
        .collect();
    (y, v)
}

/// The z with P(|Z| > z) = `alpha` (Acklam's rational approximation of the normal quantile,
/// relative error below 1.2e-9).
fn z_two_sided(alpha: f64) -> f64 {
    normal_quantile(1.0 - alpha / 2.0)
}

fn normal_quantile(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969_683_028_665_376e1,
        2.209_460_984_245_205e2,
        -2.759_285_104_469_687e2,
        1.383_577_518_672_69e2,
        -3.066_479_806_614_716e1,
        2.506_628_277_459_239,
    ];
    const B: [f64; 5] = [
        -5.447_609_879_822_406e1,
        1.615_858_368_580_409e2,
        -1.556_989_798_598_866e2,
        6.680_131_188_771_972e1,
        -1.328_068_155_288_572e1,
    ];
    const C: [f64; 6] = [
        -7.784_894_002_430_293e-3,
        -3.223_964_580_411_365e-1,
        -2.400_758_277_161_838,
        -2.549_732_539_343_734,
        4.374_664_141_464_968,
        2.938_163_982_698_783,
    ];
    const D: [f64; 4] = [
        7.784_695_709_041_462e-3,
        3.224_671_290_700_398e-1,
        2.445_134_137_142_996,
        3.754_408_661_907_416,
    ];
    let tail = |q: f64| {
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    if p < 0.02425 {
        tail((-2.0 * p.ln()).sqrt())
    } else if p > 1.0 - 0.02425 {
        -tail((-2.0 * (1.0 - p).ln()).sqrt())
    } else {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::paired::{Bands, Call};

    const BANDS: Bands = Bands {
        noise: 0.01,
        equivalence: 0.02,
    };

    fn at(ratio: f64, pm: f64) -> Ratio {
        Ratio {
            ratio,
            lo: ratio / (1.0 + pm),
            hi: ratio * (1.0 + pm),
            repetitions: 2,
            rounds: 10,
            student: None,
        }
    }

    #[test]
    fn machines_that_agree_combine_into_a_narrower_interval() {
        let c = combine(&[at(0.80, 0.03), at(0.81, 0.03), at(0.79, 0.03)]).unwrap();
        assert!((c.ratio - 0.80).abs() < 0.005, "{c:?}");
        // Three machines' errors together: ±3 % / √3 ≈ ±1.7 %, not each one's ±3 %.
        assert!((c.precision() - 0.0171).abs() < 0.001, "{c:?}");
        assert_eq!(c.call(BANDS), Call::Lower);
        assert_eq!((c.repetitions, c.rounds), (6, 30));
        assert_eq!(
            odd_one_out(&[at(0.80, 0.03), at(0.81, 0.03), at(0.79, 0.03)]),
            None
        );
        // One part is itself; none is none.
        assert_eq!(combine(&[at(1.2, 0.01)]), Some(at(1.2, 0.01)));
        assert_eq!(combine(&[]), None);
    }

    #[test]
    fn a_machine_that_disagrees_widens_the_interval_and_is_named() {
        let parts = [
            at(0.80, 0.02),
            at(0.80, 0.02),
            at(1.10, 0.02),
            at(0.81, 0.02),
        ];
        // Machines whose own starts vary: one 13 % off the others, which differ by 9 %
        // between themselves, is not called out (what the scale-out simulation measured).
        assert_eq!(
            odd_one_out(&[
                at(1.0 / 2.4, 0.09),
                at(1.0 / 2.2, 0.09),
                at(1.0 / 2.6, 0.02)
            ]),
            None
        );
        // Nor is a 3 % difference, however tight.
        assert_eq!(
            odd_one_out(&[at(0.80, 0.002), at(0.80, 0.002), at(0.824, 0.002)]),
            None
        );
        let c = combine(&parts).unwrap();
        // Between-machine spread dominates: far wider than the machines' own ±2 %.
        assert!(c.precision() > 0.08, "{c:?}");
        let agree = combine(&[parts[0], parts[1], parts[3]]).unwrap();
        assert!(agree.precision() < 0.015, "{agree:?}");
        let (i, z) = odd_one_out(&parts).unwrap();
        assert_eq!(i, 2);
        assert!(z > 0.0, "{z}");
        // Two machines cannot name an odd one; nor can machines of one repetition each
        // (machine and fresh start are one thing there).
        assert_eq!(odd_one_out(&parts[1..3]), None);
        let once = parts.map(|r| Ratio {
            repetitions: 1,
            ..r
        });
        assert_eq!(odd_one_out(&once), None);
        // Nor can machines measured in one round each (their own error is unknown); their
        // combination is a t-interval over the machines.
        let one = |r: f64| Ratio {
            rounds: 1,
            lo: r,
            hi: r,
            ..at(r, 0.0)
        };
        let single = [one(0.5), one(0.55), one(0.45)];
        assert_eq!(odd_one_out(&single), None);
        let t = combine(&single).unwrap();
        let logs = [0.5f64.ln(), 0.55f64.ln(), 0.45f64.ln()];
        let m = logs.iter().sum::<f64>() / 3.0;
        let sd = (logs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / 2.0).sqrt();
        assert!((t.ratio - m.exp()).abs() < 1e-12, "{t:?}");
        assert!(
            (t.hi - (m + 4.303 * sd / 3f64.sqrt()).exp()).abs() < 1e-9,
            "{t:?}"
        );
        // The same data in another order: the same combination.
        let mut shuffled = parts;
        shuffled.reverse();
        let d = combine(&shuffled).unwrap();
        assert!((c.ratio - d.ratio).abs() < 1e-12 && (c.lo - d.lo).abs() < 1e-12);
    }

    #[test]
    fn the_normal_quantile_matches_tables() {
        assert!((z_two_sided(0.05) - 1.959_964).abs() < 1e-6);
        assert!((z_two_sided(0.05 / 3.0) - 2.393_980).abs() < 1e-5);
        assert!((normal_quantile(0.001) + 3.090_232).abs() < 1e-5);
    }
}
