//! A results file written by an older bakeoff still loads: `tests/fixtures/results-v1/` is
//! what `bakeoff demo` wrote at schema version 1 (before typed identities). `report` and
//! `compare` read it as they read a current one.

mod common;

use common::{bakeoff, TempDir};

const V1: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/results-v1");

#[test]
fn a_version_1_results_file_is_reported_as_before() {
    let dir = TempDir::new("upgrade");
    std::fs::copy(
        format!("{V1}/results.json"),
        dir.path().join("results.json"),
    )
    .unwrap();
    let out = bakeoff(&["report", dir.path().to_str().unwrap()]);
    let md = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{md}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The serving table lists both points of the sweep for each contender, by the labels
    // the old file used, and the scaling table is found from the typed points.
    assert!(
        md.contains("| 1 | v1 |") && md.contains("| 8 | v2 |"),
        "{md}"
    );
    assert!(md.contains("requests/s by clients"), "{md}");
    assert!(md.contains("**Same answers?** v2:"), "{md}");
    // The file itself is not rewritten: an old results directory stays as it was.
    let kept: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("results.json")).unwrap()).unwrap();
    assert_eq!(kept["schema_version"], 1);
}

#[test]
fn compare_reads_a_version_1_file_beside_itself() {
    let f = format!("{V1}/results.json");
    let out = bakeoff(&["compare", &f, &f, "--format", "csv"]);
    let csv = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(csv.contains("v1/get a block [clients=8]"), "{csv}");
}
