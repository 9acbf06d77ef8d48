//! `profile = true` in a run: a `perf record` of the contender's processes around a point's
//! load (in the paired order, around all its rounds: perf follows the contender's own
//! threads, so what it records is the contender's own slices), folded into
//! `profiles/<contender>.r<repetition>.<point>.folded` (and `.off-cpu.folded`).

use super::ctx::Ctx;
use super::live::Live;
use crate::contender::profile::{self, Profile, Recording};
use crate::results::{slug, PointId, ProfileRun};

/// A recording in progress, or why there is none.
pub(super) struct Started {
    recording: Result<Recording, String>,
    /// The folded files' names, relative to the results directory, without extension.
    stem: String,
}

/// Starts recording `live`'s processes for `point`.
pub(super) fn start(ctx: &Ctx, live: &Live, point: &PointId) -> Started {
    let run = live
        .state
        .file_name()
        .map_or("contender".into(), |f| f.to_string_lossy().into_owned());
    let stem = format!("profiles/{run}.{}", slug(&point.to_string()));
    let data = ctx.dir.join(format!("{stem}.data"));
    Started {
        recording: Recording::start(&live.running.pids(), &data),
        stem,
    }
}

/// Stops a recording and keeps its folded stacks beside the results.
pub(super) fn stop(ctx: &Ctx, started: Started) -> ProfileRun {
    let mut out = ProfileRun {
        frequency_hz: profile::FREQUENCY_HZ,
        call_graph: "dwarf".into(),
        ..ProfileRun::default()
    };
    let p = match started.recording.and_then(Recording::stop) {
        Ok(p) => p,
        Err(e) => {
            out.error = Some(e);
            return out;
        }
    };
    let write = |suffix: &str, stacks: &std::collections::BTreeMap<String, u64>| {
        let rel = format!("{}{suffix}", started.stem);
        std::fs::write(ctx.dir.join(&rel), Profile::folded(stacks))
            .map(|()| rel)
            .map_err(|e| format!("writing {}: {e}", started.stem))
    };
    match write(".folded", &p.on_cpu) {
        Ok(rel) => out.on_cpu = Some(rel),
        Err(e) => out.error = Some(e),
    }
    if !p.off_cpu.is_empty() {
        out.off_cpu = write(".off-cpu.folded", &p.off_cpu).ok();
    }
    out.samples = p.samples;
    out.off_cpu_ms = p.off_cpu.values().sum::<u64>() as f64 / 1e3;
    out.top = p.top_self(15);
    out.stripped = p.stripped();
    if p.samples == 0 && out.error.is_none() {
        out.error = Some("perf recorded no sample of the contender on the CPU".into());
    }
    out
}
