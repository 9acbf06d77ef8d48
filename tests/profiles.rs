//! Where the time goes (docs/profiles.md): the demo's v1 and v2 profiled with `perf` while a
//! point's load runs, in the paired order; the flame graphs exist as files, are embedded in
//! report.html without scripts, render in headless Chromium, and their stacks name the demo
//! server's own functions. With CI=true a missing `perf` fails, as a missing server does.

mod common;

use std::collections::BTreeMap;

use bakeoff::results::Results;
use common::*;

fn perf_present() -> bool {
    present_or_skip(
        bakeoff::contender::profile::perf().is_ok(),
        "perf is not installed (scripts/install-test-deps.sh installs linux-perf)",
    )
}

/// Inclusive samples per frame (each frame once per stack), the root (the thread's name) left
/// out.
fn inclusive(folded: &str) -> BTreeMap<String, u64> {
    let mut m = BTreeMap::new();
    for line in folded.lines() {
        let (stack, n) = line.rsplit_once(' ').unwrap();
        let n: u64 = n.parse().unwrap();
        let mut seen: Vec<&str> = stack.split(';').skip(1).collect();
        seen.sort_unstable();
        seen.dedup();
        for f in seen {
            *m.entry(f.to_string()).or_default() += n;
        }
    }
    m
}

#[test]
fn the_demo_contenders_are_profiled_into_flame_graphs() {
    if !perf_present() {
        return;
    }
    let dir = TempDir::new("profiles");
    let exe = env!("CARGO_BIN_EXE_bakeoff");
    let plan = format!(
        r#"name = "profiles"
repetitions = 1
baseline = "v1"
confirm = false

[[contender]]
name = "v1"
command = ["{exe}", "demo-server", "v1", "{{port}}", "{{state}}"]
ready = {{ tcp = "127.0.0.1:{{port}}" }}
ready_when = {{ http = "http://127.0.0.1:{{port}}/health", status = 200, timeout = "120s" }}

[[contender]]
name = "v2"
like = "v1"
command = ["{exe}", "demo-server", "v2", "{{port}}", "{{state}}"]

[[scenario]]
name = "get a block"
http = "GET /block/{{rand:0..10000}}"
clients = 4
duration = "1s"
profile = true
"#
    );
    let run = run_plan(dir.path(), &plan, &[]);
    assert!(run.output.status.success(), "{}", run.stderr());
    let r = Results::load(&run.out_dir).unwrap();
    assert!(r.scenarios[0].profiled);
    let profile = |name: &str| {
        r.runs
            .iter()
            .find(|x| x.id.contender == name)
            .and_then(|x| x.points[0].profile.clone())
            .unwrap_or_else(|| panic!("{name} has a profile"))
    };
    let (p1, p2) = (profile("v1"), profile("v2"));
    for p in [&p1, &p2] {
        assert_eq!(p.error, None, "{p:?}");
        assert_eq!((p.frequency_hz, p.call_graph.as_str()), (499, "dwarf"));
        assert!(p.on_cpu.is_some() && p.off_cpu.is_some(), "{p:?}");
    }
    // v2 serves thousands of calls a second on its CPU: its widest frames of bakeoff's own
    // code are the demo server's.
    assert!(p2.samples >= 50, "{p2:?}");
    let folded = std::fs::read_to_string(run.out_dir.join(p2.on_cpu.as_ref().unwrap())).unwrap();
    let wide = inclusive(&folded);
    let (top_ours, n) = wide
        .iter()
        .filter(|(f, _)| f.starts_with("bakeoff::"))
        .max_by_key(|(_, n)| **n)
        .unwrap();
    assert!(
        top_ours.starts_with("bakeoff::demo::server::"),
        "{top_ours} ({n} of {})",
        p2.samples
    );
    assert!(*n * 2 > p2.samples, "{top_ours}: {n} of {}", p2.samples);
    assert!(!p2.top.is_empty());
    // v1 waits ~40 ms per answer (Nagle): little CPU, most time off it, and its stacks
    // there are the demo server's too.
    let on = std::fs::read_to_string(run.out_dir.join(p1.on_cpu.as_ref().unwrap())).unwrap();
    let off = std::fs::read_to_string(run.out_dir.join(p1.off_cpu.as_ref().unwrap())).unwrap();
    assert!(
        on.contains("bakeoff::demo::server::") || off.contains("bakeoff::demo::server::"),
        "{on}\n{off}"
    );
    assert!(p1.off_cpu_ms > 500.0, "{p1:?}");

    // The report: a table of self time, flame graph files, embedded without scripts.
    let out = run.stdout();
    assert!(out.contains("## Where the time goes: get a block"), "{out}");
    let report = run.out_dir.join("report");
    for f in [
        "flame-v1.get-a-block--clients-4-.svg",
        "flame-v2.get-a-block--clients-4-.svg",
        "flame-diff-v2.get-a-block--clients-4-.svg",
        "offcpu-v1.get-a-block--clients-4-.svg",
    ] {
        let svg = std::fs::read_to_string(report.join(f)).unwrap_or_else(|e| panic!("{f}: {e}"));
        assert!(svg.contains("<svg") && !svg.contains("<script"), "{f}");
    }
    let html = std::fs::read_to_string(report.join("report.html")).unwrap();
    assert!(
        html.contains("<figure class=\"flame\">"),
        "flame graphs in the page"
    );
    assert!(
        html.contains("bakeoff::demo::server::"),
        "their frames are named"
    );
    assert!(!html.contains("<script"), "the page has no script");

    // It renders: a screenshot of the flame graph page is not blank.
    let Some(chromium) = chromium_bin() else {
        return;
    };
    let shot = dir.path().join("flame.png");
    let page = report.join("flame-v2.get-a-block--clients-4-.svg");
    screenshot(&chromium, &page, &shot, &dir.path().join("chromium"));
    let blank = dir.path().join("blank.svg");
    std::fs::write(
        &blank,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"1100\" height=\"600\"></svg>",
    )
    .unwrap();
    let blank_shot = dir.path().join("blank.png");
    screenshot(
        &chromium,
        &blank,
        &blank_shot,
        &dir.path().join("chromium-b"),
    );
    let (size, blank_size) = (
        std::fs::metadata(&shot).unwrap().len(),
        std::fs::metadata(&blank_shot).unwrap().len(),
    );
    assert!(size > 3 * blank_size, "{size} vs blank {blank_size}");
}

#[test]
fn profile_is_refused_where_it_cannot_mean_anything() {
    let dir = TempDir::new("profiles-plan");
    let plan = dir.path().join("plan.toml");
    std::fs::write(
        &plan,
        "name = \"p\"\n[[contender]]\nname = \"a\"\ncommand = [\"true\"]\nready = { tcp = \"127.0.0.1:{port}\" }\n\n[[scenario]]\nname = \"s\"\nhttp = \"/\"\nprofile = true\ncapacity = { p99 = \"10ms\", max_rate = 1000 }\n",
    )
    .unwrap();
    let out = bakeoff(&["plan", "check", plan.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("plan.toml:10:11") && err.contains("`profile`"),
        "{err}"
    );
}
