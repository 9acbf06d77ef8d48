//! `bakeoff demo`: a whole bake-off that runs anywhere. Its two contenders are versions of a
//! small block service built into bakeoff ([`server`]), started as child processes of the
//! same binary; the plan is an ordinary plan file, so the demo goes through exactly the path a
//! user's plan does: start-up and readiness, compat with noise cancellation, latency and a
//! small concurrency sweep, 3 repetitions, findings.

pub mod server;

use std::path::{Path, PathBuf};

use anyhow::Context as _;

use crate::runner::{self, Finished, Reporter, RunOptions};

/// The demo plan; `{exe}` is replaced by the running bakeoff's own path.
pub const PLAN: &str = r#"# The plan `bakeoff demo` runs: two versions of a small block service built into bakeoff.
name = "bakeoff demo: block service v1 vs v2"
repetitions = 3
baseline = "v1"
# v1 and v2 run side by side and take turns in half-second slices (docs/verdicts.md).
order = "paired"
paired = { slice = "500ms", max_rounds = 6 }
# Points still inconclusive after the three get more repetitions, within this (docs/verdicts.md).
budget = "75s"

[[contender]]
name = "v1"
command = ["{exe}", "demo-server", "v1", "{port}", "{state}"]
# The first answer comes at once; ready means the block index is built.
ready = { tcp = "127.0.0.1:{port}" }
ready_when = { http = "http://127.0.0.1:{port}/health", status = 200, timeout = "60s" }

[[contender]]
name = "v1-again"
noise_of = "v1"
command = ["{exe}", "demo-server", "v1", "{port}", "{state}"]
ready = { tcp = "127.0.0.1:{port}" }
ready_when = { http = "http://127.0.0.1:{port}/health", status = 200, timeout = "60s" }

[[contender]]
name = "v2"
command = ["{exe}", "demo-server", "v2", "{port}", "{state}"]
ready = { tcp = "127.0.0.1:{port}" }
ready_when = { http = "http://127.0.0.1:{port}/health", status = 200, timeout = "60s" }

[[compat]]
name = "GET /block"
http = "GET /block/{case}"
generate = { count = 24, request = "{rand:0..10000}" }
requests = ["0", "9999", "10000", "abc", "-1"]

[[scenario]]
name = "get a block"
http = "GET /block/{rand:0..10000}"
clients = [1, 8]
duration = "2s"
"#;

/// Writes the demo plan next to the results and runs it.
pub fn run(
    out: Option<PathBuf>,
    cancel: crate::cancel::Cancel,
    rep: &mut dyn Reporter,
) -> anyhow::Result<Finished> {
    let exe = std::env::current_exe().context("cannot find bakeoff's own executable")?;
    let text = PLAN.replace("{exe}", &exe.display().to_string());
    let dir = std::env::temp_dir().join(format!("bakeoff-demo-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let plan = dir.join("demo.toml");
    std::fs::write(&plan, text)?;
    let opts = RunOptions {
        out,
        cancel,
        // As `run`'s: a point still inconclusive gets more repetitions within the budget.
        unsettled: Some(runner::Unsettled::new(
            crate::analysis::settle::unsettled,
            crate::analysis::settle::resized,
        )),
        ..RunOptions::default()
    };
    let done = runner::run(Some(Path::new(&plan)), &opts, rep);
    let _ = std::fs::remove_dir_all(&dir);
    done
}
