//! The history's change-point detector against Apache Otava's (issue 50, docs/history.md):
//! the same synthetic series — one step, two steps, none, each with ±2 % noise — given to
//! both as one CSV; the change points must agree within one commit. Otava is installed by
//! scripts/install-test-deps.sh in a virtual environment of its own.

mod common;

use std::path::PathBuf;
use std::process::Command;

use bakeoff::history::detect::{changes, Settings};

fn otava() -> Option<PathBuf> {
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_default();
    common::require(
        "Apache Otava (pip install apache-otava)",
        "BAKEOFF_OTAVA",
        &[home.join(".cache/bakeoff-otava/bin/otava")],
    )
}

/// A series of `n` points around 100 with ±2 % noise, stepping by each (at, factor).
fn series(seed: u64, n: usize, steps: &[(usize, f64)]) -> Vec<f64> {
    let mut x = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
    (0..n)
        .map(|i| {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let u = (x >> 11) as f64 / (1u64 << 53) as f64;
            let level: f64 = steps
                .iter()
                .filter(|(at, _)| i >= *at)
                .map(|(_, f)| *f)
                .product();
            100.0 * level * (1.0 + 0.02 * (2.0 * u - 1.0))
        })
        .collect()
}

#[test]
fn change_points_agree_with_otavas() {
    let Some(otava) = otava() else {
        return;
    };
    let dir = common::TempDir::new("otava");
    let mut all: Vec<(String, Vec<f64>)> = Vec::new();
    for seed in 1..=8 {
        all.push((format!("one{seed}"), series(seed, 120, &[(60, 1.08)])));
        all.push((
            format!("two{seed}"),
            series(100 + seed, 120, &[(40, 1.08), (85, 0.9)]),
        ));
        all.push((format!("none{seed}"), series(200 + seed, 120, &[])));
    }
    let mut csv = String::from("time,commit");
    for (name, _) in &all {
        csv.push_str(&format!(",{name}"));
    }
    csv.push('\n');
    for i in 0..120 {
        csv.push_str(&format!(
            "2026-01-{:02} {:02}:00:00 +0000,c{i}",
            1 + i / 24,
            i % 24
        ));
        for (_, v) in &all {
            csv.push_str(&format!(",{}", v[i]));
        }
        csv.push('\n');
    }
    let file = dir.path().join("series.csv");
    std::fs::write(&file, csv).unwrap();
    let names: Vec<&str> = all.iter().map(|(n, _)| n.as_str()).collect();
    let config = dir.path().join("otava.yaml");
    std::fs::write(
        &config,
        format!(
            "tests:\n  s:\n    type: csv\n    file: {}\n    time_column: time\n    attributes: [commit]\n    metrics: [{}]\n",
            file.display(),
            names.join(", ")
        ),
    )
    .unwrap();
    let o = Command::new(&otava)
        .args(["analyze", "s", "--output", "json"])
        .env("OTAVA_CONFIG", &config)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let mut theirs: Vec<(String, usize)> = Vec::new();
    for group in v["s"].as_array().unwrap() {
        for c in group["changes"].as_array().unwrap() {
            let commit = group["attributes"]["commit"].as_str().unwrap();
            let index: usize = commit.trim_start_matches('c').parse().unwrap();
            theirs.push((c["metric"].as_str().unwrap().to_string(), index));
        }
    }
    // Otava's defaults: no least magnitude.
    let s = Settings {
        min_magnitude: 0.0,
        ..Settings::default()
    };
    let mut both = 0;
    for (name, values) in &all {
        let ours: Vec<usize> = changes(values, s).iter().map(|c| c.index).collect();
        let mut them: Vec<usize> = theirs
            .iter()
            .filter(|(m, _)| m == name)
            .map(|(_, i)| *i)
            .collect();
        them.sort_unstable();
        assert_eq!(
            ours.len(),
            them.len(),
            "{name}: ours {ours:?}, Otava's {them:?}"
        );
        for (a, b) in ours.iter().zip(&them) {
            assert!(
                a.abs_diff(*b) <= 1,
                "{name}: ours {ours:?}, Otava's {them:?}"
            );
            both += 1;
        }
    }
    // The steps put in were found by both.
    assert!(both >= 8 * 3, "{both} change points in common");
}
