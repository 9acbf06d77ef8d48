//! Results from another machine (issue 47): a shard or results file whose figures bakeoff
//! could not have written is refused with where and why, and a histogram whose header asks
//! for gigabytes is not decoded — `report` and `merge` read such files.

mod common;

use std::path::Path;
use std::process::Command;

use common::*;

const V1: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/results-v1");

/// The fixture's results, changed by `edit`, in a folder of `dir`.
fn tampered(
    dir: &Path,
    name: &str,
    edit: impl FnOnce(&mut serde_json::Value),
) -> std::path::PathBuf {
    let out = dir.join(name);
    std::fs::create_dir_all(&out).unwrap();
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(Path::new(V1).join("results.json")).unwrap())
            .unwrap();
    edit(&mut v);
    std::fs::write(out.join("results.json"), serde_json::to_vec(&v).unwrap()).unwrap();
    out
}

#[test]
fn figures_bakeoff_could_not_have_written_are_refused_where_they_are() {
    let dir = TempDir::new("foreign");
    for (name, value, needle) in [
        (
            "negative",
            serde_json::json!(-100.0),
            "`requests_per_s` is -100",
        ),
        (
            "huge",
            serde_json::json!(1e308),
            // Written so a reader takes it in, not as 309 digits.
            "`requests_per_s` is 1e308,",
        ),
    ] {
        let d = tampered(dir.path(), name, |v| {
            v["runs"][0]["points"][0]["load"]["requests_per_s"] = value;
        });
        let o = bakeoff(&["report", d.to_str().unwrap()]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{err}");
        assert!(
            err.contains(needle) && err.contains("run ") && err.contains("another machine"),
            "{err}"
        );
    }
    let d = tampered(dir.path(), "p50", |v| {
        v["runs"][0]["points"][0]["load"]["latency_us"]["p50"] = serde_json::json!(u64::MAX);
    });
    let o = bakeoff(&["report", d.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && err.contains("more than a day"),
        "{err}"
    );
}

#[test]
fn a_histogram_that_asks_for_gigabytes_is_not_decoded() {
    use base64::Engine as _;
    let dir = TempDir::new("foreign-hist");
    let d = tampered(dir.path(), "hist", |v| {
        for run in v["runs"].as_array_mut().unwrap() {
            for p in run["points"].as_array_mut().unwrap() {
                let h = &mut p["load"]["latency_us"]["histogram"];
                let Some(text) = h.as_str() else { continue };
                let mut raw = base64::engine::general_purpose::STANDARD
                    .decode(text)
                    .unwrap();
                raw[4..8].copy_from_slice(&0x8000_0000u32.to_be_bytes());
                *h = serde_json::json!(base64::engine::general_purpose::STANDARD.encode(raw));
            }
        }
    });
    let mut report = Command::new(env!("CARGO_BIN_EXE_bakeoff"));
    report.args(["report", d.to_str().unwrap()]);
    let (_, peak_mib) = peak_rss_mib(report);
    assert!(peak_mib < 300, "report's peak RSS {peak_mib} MiB");
}
