//! The delay what-if (issue 28, docs/what-if.md): a proxy on one edge between members holds
//! what goes to the listening member, and the slope of each call's p50 over the hold counts
//! the round trips the call makes over that edge. A front that calls its back N times one
//! after another per request, the same N calls at once, and a front that never calls it,
//! against the same back (tests/fixtures/edge_servers.py).

mod common;

use common::*;

fn contender(name: &str, n: u32, mode: &str) -> String {
    // The holds run in the order listed (after the proxy alone): not in increasing order, so
    // a host that grows slower or quicker over the run does not read as a slope.
    edge_contender(name, n, mode, r#""3ms", "1ms", "4ms", "2ms""#)
}

#[test]
fn the_slope_over_a_slowed_edge_counts_the_round_trips_of_a_call() {
    let dir = TempDir::new("edge-delay");
    let plan = format!(
        r#"name = "edge delay"
repetitions = 1
order = "sequential"
{}{}{}{}
[[scenario]]
name = "get"
http = "/"
requests = 200
"#,
        contender("one", 1, "seq"),
        contender("three", 3, "seq"),
        contender("parallel", 3, "par"),
        contender("never", 3, "none"),
    );
    let run = run_plan(dir.path(), &plan, &[]);
    let r = &run.results;
    assert_eq!(r["status"], "complete", "{}", run.stderr());
    // Each contender ran as itself and as NAME+back+0ms … +4ms; the proxy's own record is
    // kept per variant.
    let runs = r["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 4 * 6, "{}", run.stderr());
    let edge = |c: &str, v: &str| {
        runs.iter()
            .find(|x| x["contender"] == c && x["variant"] == v)
            .map(|x| x["edge"].clone())
            .unwrap()
    };
    let e = edge("three", "back+2ms");
    assert_eq!(e["hold_us"], 2000, "{e}");
    assert!(e["connections"].as_u64().unwrap() >= 1, "{e}");
    // 200 requests of 3 round trips (the ready probe's one request besides).
    assert!(e["chunks"].as_u64().unwrap() >= 600, "{e}");
    assert_eq!(edge("never", "back+2ms")["connections"], 0);

    let report: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(run.out_dir.join("report/report.json")).unwrap(),
    )
    .unwrap();
    let table = report["tables"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == "edges-get")
        .unwrap_or_else(|| panic!("no edges table: {}", run.stdout()));
    let head: Vec<&str> = table["data"]["head"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h.as_str().unwrap())
        .collect();
    let col = |name: &str| head.iter().position(|h| *h == name).unwrap();
    let slope = |c: &str| {
        let row = table["data"]["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r[col("contender")] == c)
            .unwrap_or_else(|| panic!("no row for {c}: {table}"));
        let f = |k: &str| row[col(k)].as_f64().unwrap_or_else(|| panic!("{k}: {row}"));
        (
            f("p50_per_added_ms"),
            f("p50_per_added_ms_lo"),
            f("p50_per_added_ms_hi"),
            row[col("reading")].as_str().unwrap().to_string(),
        )
    };
    // ≈ N ms of p50 per added ms: the interval holds the number of round trips in a row (a
    // loaded host wakes a sleeping Python thread later after a longer hold, so the bounds
    // are the interval's, widened by a third of a round trip, not a speed).
    for (c, want) in [("one", 1.0), ("three", 3.0), ("parallel", 1.0)] {
        let (s, lo, hi, reading) = slope(c);
        assert!(
            lo - 0.35 <= want && want <= hi + 0.35,
            "{c}: {s} ({lo}–{hi}) per ms, expected about {want}\n{}",
            run.stdout()
        );
        // The calls in a row read as round trips; the three at once, whose three held
        // chunks and answers overlap, scatter more on a loaded host, and only their interval
        // is held to about 1.
        if c != "parallel" {
            assert_eq!(reading, "round_trips", "{c}: {s} ({lo}–{hi})");
        }
    }
    // The sequential three cost clearly more per ms than the same three calls at once.
    assert!(slope("three").1 > slope("parallel").2, "{}", run.stdout());
    // A front that never calls the back: flat, and the proxy says it saw nothing.
    let (s, lo, hi, reading) = slope("never");
    assert!(
        s.abs() < 0.35 && lo < 0.35 && hi > -0.35,
        "never: {s} ({lo}–{hi})"
    );
    assert_ne!(reading, "round_trips", "never: {s} ({lo}–{hi})");
    let out = run.stdout();
    assert!(
        out.contains("**What if slower:** each +1 ms on three's `back` adds"),
        "{out}"
    );
    assert!(
        out.contains("never+back+0ms: the proxy on `back` saw no connection"),
        "{out}"
    );
    assert!(
        !out.contains("three+back+1ms: the proxy on `back` saw no connection"),
        "{out}"
    );
}
