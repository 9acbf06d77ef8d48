//! Criterion's output folder (`target/criterion`): every `…/new/sample.json` is one benchmark,
//! its samples the time per iteration of each measured batch (`times[i] / iters[i]`, in ns).
//! The name is `full_id` from the `benchmark.json` beside it.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::{error, BenchSet, Format, ImportError};

#[derive(Deserialize)]
struct Sample {
    iters: Vec<f64>,
    times: Vec<f64>,
}

#[derive(Deserialize)]
struct Benchmark {
    full_id: String,
}

pub fn load(dir: &Path, label: &str) -> Result<BenchSet, ImportError> {
    let mut files = Vec::new();
    find_samples(dir, 0, &mut files);
    files.sort();
    if files.is_empty() {
        return Err(error(
            label,
            None,
            "a folder, but no Criterion `*/new/sample.json` inside (give target/criterion)",
        ));
    }
    let mut set = BenchSet::new(label, Format::Criterion);
    for f in files {
        let fl = f.display().to_string();
        let read = |p: &Path| {
            crate::sys::read_bounded(p, crate::sys::DATA_LIMIT)
                .map_err(|e| error(&p.display().to_string(), None, e.to_string()))
        };
        let s: Sample = serde_json::from_str(&read(&f)?).map_err(|e| {
            error(
                &fl,
                Some(e.line()),
                format!("not a Criterion sample.json: {e}"),
            )
        })?;
        if s.iters.len() != s.times.len() || s.iters.is_empty() {
            return Err(error(
                &fl,
                None,
                "`iters` and `times` must be non-empty and of equal length",
            ));
        }
        let meta = f.with_file_name("benchmark.json");
        let name = match read(&meta) {
            Ok(t) => {
                serde_json::from_str::<Benchmark>(&t)
                    .map_err(|e| error(&meta.display().to_string(), Some(e.line()), e.to_string()))?
                    .full_id
            }
            // Older Criterion versions: the path below target/criterion is the id.
            Err(_) => f
                .parent()
                .and_then(Path::parent)
                .and_then(|p| p.strip_prefix(dir).ok())
                .map(|p| p.display().to_string())
                .unwrap_or_else(|| fl.clone()),
        };
        for (i, t) in s.iters.iter().zip(&s.times) {
            if !(*i > 0.0 && t.is_finite() && *t >= 0.0) {
                return Err(error(
                    &fl,
                    None,
                    "iteration counts must be positive and times finite",
                ));
            }
            set.push(&name, "ns/iter", t / i);
        }
    }
    Ok(set)
}

fn find_samples(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) {
    if depth > 8 {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            if p.file_name().is_some_and(|n| n == "new") && p.join("sample.json").is_file() {
                out.push(p.join("sample.json"));
            } else if p
                .file_name()
                .is_none_or(|n| n != "report" && n != "base" && n != "change")
            {
                find_samples(&p, depth + 1, out);
            }
        }
    }
}
