//! hyperfine's `--export-json`: one benchmark per command, its run times (seconds) as samples.

use serde_json::Value;

use super::{error, BenchSet, Format, ImportError};

pub fn parse(label: &str, v: &Value) -> Result<BenchSet, ImportError> {
    let mut set = BenchSet::new(label, Format::Hyperfine);
    let results = v["results"].as_array().expect("checked by the caller");
    for (i, r) in results.iter().enumerate() {
        let name = r["command"]
            .as_str()
            .ok_or_else(|| error(label, None, format!("results[{i}] has no `command`")))?;
        let times = r["times"].as_array().ok_or_else(|| {
            error(
                label,
                None,
                format!(
                    "results[{i}] (`{name}`) has no `times`; export with hyperfine --export-json"
                ),
            )
        })?;
        for (j, t) in times.iter().enumerate() {
            let t = t
                .as_f64()
                .filter(|t| t.is_finite() && *t >= 0.0)
                .ok_or_else(|| {
                    error(
                        label,
                        None,
                        format!("results[{i}].times[{j}] is not a time in seconds"),
                    )
                })?;
            set.push(name, "s", t);
        }
    }
    if set.rows.is_empty() {
        return Err(error(label, None, "no timed commands in `results`"));
    }
    Ok(set)
}
