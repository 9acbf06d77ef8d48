//! Capacity at a latency goal and staged ramps, against nginx with a known limit
//! (`limit_req`: requests beyond the rate, past a small burst, are refused with 503).

mod common;

use common::*;

fn limited(name: &str, nginx: &std::path::Path, dir: &std::path::Path, rate: u32) -> String {
    let sub = dir.join(name);
    std::fs::create_dir_all(&sub).unwrap();
    // A burst of 1/20 s of the rate: a 50 ms stall of a loaded host, whose late calls the
    // open loop then sends at once, is not refused; a step 10 % over the rate for its 1 s
    // (an excess of 1/10 s of it) still is. (A burst of 20 failed a step at 2/3 of the
    // limit on a busy machine.)
    let burst = (rate / 20).max(5);
    nginx_contender_with(
        name,
        nginx,
        &sub,
        &format!("limit_req_zone $server_port zone=z:1m rate={rate}r/s; limit_req zone=z burst={burst} nodelay;"),
    )
}

#[test]
fn a_capacity_search_lands_within_ten_percent_of_the_limit_and_compares_contenders() {
    let Some(nginx) = nginx_bin() else { return };
    let dir = TempDir::new("capacity");
    let plan = format!(
        r#"
name = "capacity"
repetitions = 2
baseline = "slow"
{}
{}
[[scenario]]
name = "get"
http = "GET /index.html"
clients = 8
capacity = {{ p99 = "50ms", min_rate = 50, max_rate = 4000, step = "1s" }}
"#,
        limited("slow", &nginx, dir.path(), 300),
        limited("fast", &nginx, dir.path(), 1000),
    );
    let run = run_plan(dir.path(), &plan, &[]);
    assert!(
        run.output.status.success(),
        "{}\n{}",
        run.stderr(),
        run.stdout()
    );
    for (name, limit) in [("slow", 300.0), ("fast", 1000.0)] {
        for rep in [1, 2] {
            let x = run.run(name, rep);
            let p = &x["points"][0];
            let c = &p["capacity"];
            let found = c["rate"].as_f64().unwrap_or_else(|| panic!("{p}"));
            assert!(
                (found - limit).abs() <= 0.1 * limit,
                "{name} #{rep}: {found} against {limit}: {c}"
            );
            let steps = c["steps"].as_array().unwrap();
            assert!(steps.len() >= 4, "{c}");
            // Steps above the limit failed on refused calls, and say so.
            let failed = steps.iter().find(|s| s["passed"] == false).unwrap();
            assert!(
                failed["why"].as_str().unwrap().contains("failed"),
                "{failed}"
            );
            // The point's load is the step at the rate found.
            assert_eq!(p["load"]["rate"].as_f64(), Some(found));
            assert_eq!(p["load"]["failures"], 0);
        }
    }
    let out = run.stdout();
    assert!(out.contains("capacity at p99 ≤ 50.0 ms"), "{out}");
    let row = out
        .lines()
        .find(|l| l.starts_with("| 8 | fast |"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        row.contains("more capacity") && row.contains(" ✓") && row.contains(" ✗"),
        "{row}"
    );
}

#[test]
fn stages_ramp_the_rate_within_one_point_with_figures_per_stage() {
    let Some(nginx) = nginx_bin() else { return };
    let dir = TempDir::new("stages");
    let plan = format!(
        r#"
name = "ramp"
repetitions = 1
{}
[[scenario]]
name = "get"
http = "GET /index.html"
clients = 4
stages = [{{ rate = 100, duration = "1s" }}, {{ rate = 400, duration = "1s" }}, {{ rate = 200, duration = "500ms" }}]
"#,
        nginx_contender("web", &nginx, dir.path()),
    );
    let run = run_plan(dir.path(), &plan, &[]);
    assert!(run.output.status.success(), "{}", run.stderr());
    let points = run.run("web", 1)["points"].as_array().unwrap().clone();
    assert_eq!(points.len(), 3);
    for (p, (stage, rate, secs)) in
        points
            .iter()
            .zip([(1, 100.0, 1.0), (2, 400.0, 1.0), (3, 200.0, 0.5)])
    {
        assert_eq!(p["stage"], stage, "{p}");
        assert_eq!(p["rate"].as_f64(), Some(rate));
        let sent = p["load"]["requests"].as_f64().unwrap();
        assert!(
            (sent - rate * secs).abs() <= 0.05 * rate * secs + 2.0,
            "stage {stage}: {sent}"
        );
    }
    let out = run.stdout();
    assert!(out.contains("| stage | clients | offered req/s |"), "{out}");
}

#[test]
fn a_rate_sweep_across_a_known_limit_shows_where_it_breaks() {
    let Some(nginx) = nginx_bin() else { return };
    let dir = TempDir::new("sweep-limit");
    let plan = format!(
        r#"
name = "sweep"
repetitions = 1
{}
[[scenario]]
name = "get"
http = "GET /index.html"
clients = 4
rate = [150, 600]
duration = "1s"
"#,
        limited("web", &nginx, dir.path(), 300),
    );
    let run = run_plan(dir.path(), &plan, &[]);
    let points = run.run("web", 1)["points"].as_array().unwrap().clone();
    assert_eq!(points.len(), 2, "{}", run.stderr());
    let failures = |i: usize| points[i]["load"]["failures"].as_u64().unwrap();
    // Below the 300 req/s limit every call is served; at twice it, about half are refused.
    assert_eq!(failures(0), 0, "{}", points[0]);
    let share = failures(1) as f64 / points[1]["load"]["requests"].as_f64().unwrap();
    assert!((0.3..0.7).contains(&share), "{share}: {}", points[1]);
}
