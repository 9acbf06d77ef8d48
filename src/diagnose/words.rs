//! Each finding in words, as the report and the terminal say it.

use super::*;

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Finding::MostCallsFailed {
                contender,
                places,
                failed,
                of,
                example,
            } => write!(
                f,
                "{contender} failed most calls at {} ({failed} of {of}; {example}) — its latency and throughput there measure failures, so they are left out of the comparisons",
                places.join(", ")
            ),
            Finding::StallBand {
                contender,
                places,
                share,
                floor,
                contender_cores,
                check,
            } => {
                let idle = contender_cores
                    .map(|c| format!(" while its CPU was {:.0}% busy", c * 100.0))
                    .unwrap_or_default();
                let what = if *floor {
                    format!(
                        "{contender}: its calls sit at 40–50 ms ({:.0}% of them){idle}",
                        share * 100.0
                    )
                } else {
                    format!("{contender}: {:.1}% of its calls take 40–50 ms with almost none between its usual latency and that band{idle}", share * 100.0)
                };
                stall_words(f, &what, &places.join(", "), check.as_ref())
            }
            Finding::GeneratorSaturated {
                contender,
                place,
                utilization,
                contender_cores,
            } => {
                // Under half a percent is a window too short to read (a `--smoke` run), not
                // an idle server: left unsaid.
                let server = contender_cores
                    .filter(|c| *c >= 0.005)
                    .map(|c| format!(" while the contender used {:.0}% of a core", c * 100.0))
                    .unwrap_or_default();
                write!(
                    f,
                    "{contender}, {place}: the load generator was {:.0}% busy{server} — these figures measure the client, not the server (give the load more cores: `cores.load`)",
                    utilization * 100.0
                )
            }
            Finding::NoisyRepetitions {
                contender,
                places,
                of,
                worst,
                spread_pct,
                repetitions,
            } => {
                if places.len() == 1 {
                    write!(f, "{contender}, {worst}: throughput varies by {spread_pct:.0}% across {repetitions} repetitions")?;
                } else {
                    write!(f, "{contender}: throughput varies across {repetitions} repetitions at {} of {of} points, by up to {spread_pct:.0}% (at {worst})", places.len())?;
                }
                write!(f, " — too noisy to trust small deltas")
            }
            Finding::CpuStolen { .. } => cpu_stolen(f, self),
            Finding::MachineDiffers { .. } | Finding::MachineDisagrees { .. } => {
                machine_words(f, self)
            }
            Finding::TrimmedAway { .. } => trimmed_away(f, self),
            Finding::EdgeUnused { .. }
            | Finding::EdgeUnreached { .. }
            | Finding::EdgeStrained { .. } => edge_words(f, self),
            Finding::Contention { .. } | Finding::OddRepetition { .. } => {
                contention_words(f, self)
            }
        }
    }
}

/// The words of [`Finding::Contention`] and [`Finding::OddRepetition`].
fn contention_words(f: &mut fmt::Formatter<'_>, x: &Finding) -> fmt::Result {
    match x {
        Finding::Contention {
            contender,
            place,
            waited,
            others,
            cpus,
            points,
            of,
        } => {
            let cpus = match cpus.as_slice() {
                [one] => format!("CPU {one}"),
                many => format!("CPUs {many:?}"),
            };
            let at = match points {
                1 => format!("{contender}, {place}"),
                n => format!("{contender}, at {n} of {of} points (worst {place})"),
            };
            write!(
                f,
                "{at}: its threads waited for a CPU {:.0}% of the time they were runnable",
                waited * 100.0
            )?;
            // A share past the whole is the sampling of a short window: said as "all".
            let used = match others.unwrap_or(0.0) {
                o if o >= 0.995 => "all of their time".to_string(),
                o => format!("{:.0}% of their time", o * 100.0),
            };
            write!(
                f,
                "; other processes used its {cpus} for {used} — contention: verdicts settle slowly here, if at all (stop what else runs there, or give the contenders CPUs of their own: `cores`)"
            )
        }
        Finding::OddRepetition { .. } => odd_words(f, x),
        _ => Ok(()),
    }
}

/// The words of [`Finding::OddRepetition`].
fn odd_words(f: &mut fmt::Formatter<'_>, x: &Finding) -> fmt::Result {
    let Finding::OddRepetition {
        contender,
        place,
        repetition,
        requests_per_s,
        others,
        factor,
        more,
    } = x
    else {
        return Ok(());
    };
    // The others' rates, a few of them: a run of hundreds of repetitions is not
    // listed on one line.
    let list = match others.len() {
        0..=6 => {
            let list: Vec<String> = others.iter().map(|x| format!("{x:.0}")).collect();
            match list.as_slice() {
                [a, b] => format!("{a} and {b}"),
                _ => list.join(", "),
            }
        }
        n => {
            let mut sorted = others.clone();
            sorted.sort_by(f64::total_cmp);
            format!(
                "{n} others, {:.0} to {:.0}, median {:.0}",
                sorted[0],
                sorted[n - 1],
                sorted[n / 2]
            )
        }
    };
    let way = if others.iter().all(|o| requests_per_s > o) {
        "the others"
    } else {
        "less than the others"
    };
    write!(
                f,
                "{contender}, {place}: repetition {repetition} served {requests_per_s:.0} requests/s, {factor:.1}× {way} ({list}) — something happened to that one (a neighbour, a hiccup), and its figures weigh in every verdict"
            )?;
    if *more > 0 {
        write!(f, "; {more} more such")?;
    }
    Ok(())
}

/// Where repetitions ran on different machines, or one machine disagrees.
pub(super) fn machine_words(f: &mut fmt::Formatter<'_>, x: &Finding) -> fmt::Result {
    match x {
        Finding::MachineDiffers { what, seen } => {
            let seen: Vec<String> = seen
                .iter()
                .map(|s| format!("{} ({})", s.value, s.runs.join(", ")))
                .collect();
            write!(
            f,
            "repetitions ran with different {what}: {} — their figures mix the change with the machine; compare repetitions from one machine only",
            seen.join(" vs ")
        )
        }
        Finding::MachineDisagrees {
            contender,
            baseline,
            machine,
            figure,
            there,
            elsewhere,
            places,
        } => {
            use crate::stats::notation::fmt_ratio;
            write!(
            f,
            "machine {machine} disagrees with the others on {contender}'s {figure} against {baseline}: {} there, {} on the rest (at {}) — look at what differs on that machine (CPU model, neighbours, kernel); the combined verdict already counts the spread between machines",
            fmt_ratio(*there),
            fmt_ratio(*elsewhere),
            places.join(", ")
        )
        }
        _ => unreachable!("called for the machine findings"),
    }
}

/// What went wrong with a delay variant's proxy.
pub(super) fn edge_words(f: &mut fmt::Formatter<'_>, x: &Finding) -> fmt::Result {
    match x {
    Finding::EdgeUnused { contender, port } => write!(
        f,
        "{contender}: the proxy on `{port}` saw no connection — the members that should connect to it never did: they do not call it at this load, or they ignore `{{port:{port}}}` (a port written into their configuration); either way this variant measured nothing of the edge"
    ),
    Finding::EdgeUnreached {
        contender,
        port,
        failures,
    } => write!(
        f,
        "{contender}: the proxy on `{port}` could not reach the member that should listen there ({failures} connection{} refused) — does it listen on `{{port:{port}}}`?",
        if *failures == 1 { "" } else { "s" }
    ),
    Finding::EdgeStrained {
        contender,
        port,
        busy,
        late_mean_us,
        hold_us,
    } => write!(
        f,
        "{contender}: the proxy on `{port}` was {:.0}% busy and its holds of {} ended {} late on average — the proxy, not only the hold, shaped these figures (give the load more cores: `cores.load`)",
        busy * 100.0,
        crate::units::fmt_us(*hold_us as f64),
        crate::units::fmt_us(*late_mean_us)
    ),
        _ => unreachable!("called for the edge findings"),
    }
}

/// What a 40 ms band is, as far as forcing TCP_NODELAY told (`what` says where it sits).
pub(super) fn stall_words(
    f: &mut fmt::Formatter<'_>,
    what: &str,
    seen: &str,
    check: Option<&StallCheck>,
) -> fmt::Result {
    let Some(c) = check else {
        return write!(
            f,
            "{what} — looks like Nagle + delayed ACK: the server does not set TCP_NODELAY (seen in {seen})"
        );
    };
    let us = crate::units::fmt_us;
    let after = |v: Option<u64>| v.map_or("—".into(), |v| us(v as f64));
    let moved = format!(
        "p50 {} → {}, p99 {} → {} at {}",
        us(c.p50_before_us as f64),
        after(c.p50_after_us),
        us(c.p99_before_us as f64),
        after(c.p99_after_us),
        c.place
    );
    let cleared = if c.cleared_by_server > 0 {
        format!("; the server turned the option off itself on {} of the connections it accepted, so it must be set on each connection, not only on the listener", c.cleared_by_server)
    } else {
        String::new()
    };
    match c.confirmed {
        Some(true) => write!(
            f,
            "{what} — Nagle + delayed ACK, **confirmed**: with TCP_NODELAY forced from outside on {} of its sockets, {moved}{cleared} (seen in {seen})",
            c.sockets
        ),
        Some(false) => write!(
            f,
            "{what} — **not** Nagle: with TCP_NODELAY forced from outside on {} of its sockets the band stayed ({moved}); something else holds the answers — a timer, a batch interval, a slow dependency (seen in {seen})",
            c.sockets
        ),
        None => write!(
            f,
            "{what} — looks like Nagle + delayed ACK, but forcing TCP_NODELAY could not check it: {} (seen in {seen})",
            c.why.as_deref().unwrap_or("no socket was found")
        ),
    }
}

/// How much the hypervisor took, and during what.
pub(super) fn cpu_stolen(f: &mut fmt::Formatter<'_>, x: &Finding) -> fmt::Result {
    let Finding::CpuStolen {
        points,
        of,
        startups,
        startups_of,
        slices,
        slices_of,
        max_share,
        worst,
        mean_share,
    } = x
    else {
        unreachable!("called for CpuStolen")
    };
    let mut during = Vec::new();
    if *points > 0 {
        during.push(format!("{points} of {of} points"));
    }
    if *slices > 0 {
        during.push(format!(
            "{slices} of {slices_of} paired slices (their rounds were run again and left out of the verdicts)"
        ));
    }
    if *startups > 0 {
        during.push(format!("{startups} of {startups_of} start-ups"));
    }
    write!(
        f,
        "the hypervisor took {:.0}% of the CPUs' time on average during {} (up to {:.0}%, at {worst}) — those figures vary with the host's other tenants, not only with the contenders; rerun them, or use a machine with dedicated CPUs",
        mean_share * 100.0,
        during.join(" and "),
        max_share * 100.0
    )
}

/// Where the table's medians and the paired estimate part, and whose rounds it trimmed.
pub(super) fn trimmed_away(f: &mut fmt::Formatter<'_>, x: &Finding) -> fmt::Result {
    let Finding::TrimmedAway {
        contender,
        baseline,
        figure,
        table,
        paired,
        whose,
        rounds,
        places,
    } = x
    else {
        unreachable!("called for TrimmedAway")
    };
    use crate::stats::notation::fmt_ratio;
    let head = format!(
        "{contender}'s {figure} against {baseline}: the table's medians say {}, the paired estimate {paired} (at {})",
        fmt_ratio(*table),
        places.join(", ")
    );
    match whose {
        Some(w) => write!(
            f,
            "{head} — {rounds} of the rounds the estimate trims away were {w}'s own (its slice far from its other slices, its partner's as usual): a stall of {w} alone, which pairing sets apart by design; see {w}'s log, and the verdict holds for the rounds both served normally"
        ),
        None => write!(
            f,
            "{head} — the medians weigh whole repetitions, the estimate paired rounds; trust the paired one, and look at the repetitions' spread"
        ),
    }
}
