//! Findings from real runs: a server without TCP_NODELAY that writes each answer in two
//! packets shows the ~40 ms floor, one that does so for every 20th answer shows the tail,
//! and a well-behaved one shows neither.

mod common;

use bakeoff::diagnose::{findings, Finding, Limits};
use bakeoff::results::Results;
use common::*;

#[test]
fn the_nagle_floor_and_tail_are_found_and_a_clean_server_is_not_flagged() {
    let dir = TempDir::new("diagnose");
    let plan = format!(
        "name = \"findings\"\nrepetitions = 1\n{}{}{}\n[[scenario]]\nname = \"get\"\nhttp = \"/\"\nclients = 1\nduration = \"2s\"\n",
        faulty_contender("floor", "nagle", 0),
        faulty_contender("tail", "nagle-tail", 20),
        faulty_contender("clean", "ok", 0),
    );
    let run = run_plan(dir.path(), &plan, &[]);
    assert!(run.output.status.success(), "{}", run.stderr());
    let r = Results::load(&run.out_dir).unwrap();
    let found = findings(&r, Limits::default());
    let stall = |name: &str| {
        found.iter().find_map(|f| match f {
            Finding::StallBand {
                contender,
                share,
                floor,
                ..
            } if contender == name => Some((*share, *floor)),
            _ => None,
        })
    };
    let (share, floor) = stall("floor").expect("the floor is found");
    assert!(floor && share > 0.9, "{share}");
    let (share, floor) = stall("tail").expect("the tail is found");
    assert!(!floor && (0.02..0.12).contains(&share), "{share}");
    assert!(stall("clean").is_none(), "{found:?}");
    // Shown in the summary with the reason.
    let out = run.stdout();
    assert!(out.contains("## Findings"), "{out}");
    assert!(out.contains("floor: its calls sit at 40–50 ms"), "{out}");
    assert!(out.contains("the server does not set TCP_NODELAY"), "{out}");
}

#[test]
fn noisy_repetitions_are_found() {
    let dir = TempDir::new("diagnose-noise");
    // A server that is slow on every other start: its repetitions disagree.
    let counter = dir.path().join("starts");
    let moody = faulty_contender("moody", "slow-odd-starts", 0).replace(
        "stop_timeout",
        &format!(
            "env = {{ BAKEOFF_TEST_COUNTER = \"{}\" }}\nstop_timeout",
            counter.display()
        ),
    );
    let plan = format!(
        "name = \"noise\"\nrepetitions = 3\n{moody}\n[[scenario]]\nname = \"small\"\nhttp = \"/\"\nclients = 1\nduration = \"700ms\"\n"
    );
    let run = run_plan(dir.path(), &plan, &[]);
    let found = findings(&Results::load(&run.out_dir).unwrap(), Limits::default());
    assert!(
        found.iter().any(|f| matches!(f, Finding::NoisyRepetitions { contender, place, spread_pct, repetitions: 3 }
            if contender == "moody" && place == "small [clients=1]" && *spread_pct > 30.0)),
        "{found:#?}"
    );
    assert!(
        run.stdout().contains("too noisy to trust small deltas"),
        "{}",
        run.stdout()
    );
}
