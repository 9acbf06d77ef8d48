//! The saturated-generator finding from a real run. In its own test binary: it measures how
//! busy the load engine's thread is, so it must not share the machine with the other
//! findings tests (cargo runs test binaries one after another).

mod common;

use bakeoff::diagnose::{findings, Finding, Limits};
use bakeoff::results::Results;
use common::*;

#[test]
fn a_saturated_load_generator_is_found() {
    let Some(nginx) = nginx_bin() else { return };
    let dir = TempDir::new("diagnose-saturated");
    // nginx on its own CPU answering 64 clients of a load engine pinned to the other: with
    // that many answers always waiting, the engine never idles.
    let plan = format!(
        "name = \"saturated\"\nrepetitions = 1\ncores = {{ contender = [1], load = [0] }}\n{}\n\
         [[scenario]]\nname = \"many\"\nhttp = \"/\"\nclients = 64\nduration = \"700ms\"\n",
        nginx_contender("bulk", &nginx, dir.path())
    );
    let run = run_plan(dir.path(), &plan, &[]);
    let r = Results::load(&run.out_dir).unwrap();
    let found = findings(&r, Limits::default());
    assert!(
        found.iter().any(
            |f| matches!(f, Finding::GeneratorSaturated { contender, place, utilization }
            if contender == "bulk" && place == "many [clients=64]" && *utilization >= 0.9)
        ),
        "{found:#?}"
    );
}
