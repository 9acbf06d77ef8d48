//! `bakeoff run` end to end against real nginx: the results directory, repetitions in
//! interleaved order, and plan errors that name the line and column.

mod common;

use common::*;

#[test]
fn two_nginx_contenders_interleaved_leave_a_complete_results_directory() {
    let Some(nginx) = nginx_bin() else { return };
    let dir = TempDir::new("run-nginx");
    let plan = format!(
        r#"
name = "nginx a/b"
repetitions = 2
baseline = "a"
{}
{}
[[scenario]]
name = "index"
http = "GET /index.html"
clients = [1, 4]
requests = 2000
"#,
        nginx_contender("a", &nginx, dir.path()),
        nginx_contender("b", &nginx, dir.path())
    );
    let run = run_plan(dir.path(), &plan, &[]);
    assert!(run.output.status.success(), "{}", run.stderr());
    let r = &run.results;
    assert_eq!(r["schema_version"], 2);
    assert_eq!(r["status"], "complete");
    assert!(r["finished_at"].as_str().unwrap().ends_with('Z'));
    assert!(!r["environment"]["cpu_model"].as_str().unwrap().is_empty());
    assert!(r["environment"]["kernel"]
        .as_str()
        .unwrap()
        .starts_with("Linux"));
    // Interleaved: a b a b.
    let order: Vec<(String, u64)> = run
        .runs()
        .iter()
        .map(|x| {
            (
                x["contender"].as_str().unwrap().to_string(),
                x["repetition"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        order,
        [
            ("a".into(), 1),
            ("b".into(), 1),
            ("a".into(), 2),
            ("b".into(), 2)
        ]
    );
    for x in run.runs() {
        assert_eq!(x["status"], "complete", "{x}");
        let s = &x["startup"];
        assert!(s["first_response_s"].as_f64().unwrap() > 0.0);
        assert!(s["ready_s"].as_f64().unwrap() >= s["first_response_s"].as_f64().unwrap());
        assert!(
            x["usage"]["peak_rss_bytes"].as_u64().unwrap() > 1_000_000,
            "{x}"
        );
        assert!(
            x["usage"]["cpu_user_s"].as_f64().unwrap()
                + x["usage"]["cpu_system_s"].as_f64().unwrap()
                > 0.0
        );
        // nginx writes its pid file into {state}.
        assert!(s["disk_after_start_bytes"].as_u64().unwrap() > 0, "{x}");
        let points = x["points"].as_array().unwrap();
        assert_eq!(points.len(), 2);
        for p in points {
            let l = &p["load"];
            assert_eq!(l["requests"], 2000, "{p}");
            assert_eq!(l["successes"], 2000);
            assert!(
                l["target"].as_str().unwrap().ends_with("/index.html"),
                "{l}"
            );
            assert!(l["latency_us"]["histogram"].as_str().unwrap().len() > 10);
        }
        // The kernel counts CPU time in ticks; 4000 requests cost nginx well over one.
        let cpu: f64 = points
            .iter()
            .map(|p| p["contender_cpu_s"].as_f64().unwrap())
            .sum();
        assert!(cpu > 0.0, "{x}");
        let exits = x["exits"].as_array().unwrap();
        assert_eq!(exits.len(), 1);
        assert_eq!(exits[0]["stopped_by_bakeoff"], true);
        for log in x["logs"].as_array().unwrap() {
            assert!(run.out_dir.join(log.as_str().unwrap()).is_file(), "{log}");
        }
    }
    // The plan is copied next to its results; state folders are gone.
    assert_eq!(
        std::fs::read_to_string(run.out_dir.join("plan.toml")).unwrap(),
        plan
    );
    assert!(!run.out_dir.join("state").exists());
    assert!(run.out_dir.join("logs/a.r1.setup.log").is_file());
    // The summary compares b with a, per point.
    let out = run.stdout();
    assert!(out.contains("| 4 | b | "), "{out}");
    assert!(out.contains('%'), "{out}");
    assert!(
        run.stderr().contains("[4/4] b, repetition 2"),
        "{}",
        run.stderr()
    );
}

#[test]
fn smoke_runs_one_repetition_of_every_point_at_a_request_per_client() {
    let Some(nginx) = nginx_bin() else { return };
    let dir = TempDir::new("run-smoke");
    let plan = format!(
        "name = \"smoke\"\nrepetitions = 5\n{}\n[[scenario]]\nname = \"s\"\nhttp = \"/index.html\"\nclients = [2, 1, 8]\nduration = \"1m\"\n",
        nginx_contender("a", &nginx, dir.path())
    );
    let start = std::time::Instant::now();
    let run = run_plan(dir.path(), &plan, &["--smoke"]);
    assert!(run.output.status.success(), "{}", run.stderr());
    assert!(start.elapsed() < std::time::Duration::from_secs(30));
    assert_eq!(run.results["smoke"], true);
    assert_eq!(run.runs().len(), 1);
    let points = run.runs()[0]["points"].as_array().unwrap();
    // Every point is tried, each with a handful of requests (one per client of the widest).
    let clients: Vec<u64> = points
        .iter()
        .map(|p| p["clients"].as_u64().unwrap())
        .collect();
    assert_eq!(clients, [1, 2, 8]);
    for p in points {
        assert_eq!(p["load"]["requests"], 8, "{p}");
        assert_eq!(p["load"]["successes"], 8, "{p}");
    }
}

#[test]
fn plan_mistakes_are_reported_with_line_and_column_before_anything_starts() {
    let dir = TempDir::new("run-bad");
    let plan = "name = \"x\"\n[[contender]]\nname = \"a\"\ncommand = [\"true\"]\n\n[[scenario]]\nname = \"s\"\nhttp = \"/\"\nclinets = 3\n";
    let path = dir.path().join("plan.toml");
    std::fs::write(&path, plan).unwrap();
    let out = bakeoff(&[
        "run",
        path.to_str().unwrap(),
        "--out",
        dir.path().join("o").to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!(
            "{}:9:1: unknown key `clinets`; did you mean `clients`?",
            path.display()
        )),
        "{err}"
    );
    assert!(
        !dir.path().join("o").exists(),
        "nothing should be created for a bad plan"
    );

    // A program that does not exist is found before any contender starts.
    std::fs::write(
        &path,
        "name = \"x\"\n[[contender]]\nname = \"a\"\ncommand = [\"/nonexistent/srv\"]\n",
    )
    .unwrap();
    let out = bakeoff(&[
        "run",
        path.to_str().unwrap(),
        "--out",
        dir.path().join("o2").to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    // Where the plan writes it: line 4, column 12.
    assert!(
        err.contains(&format!(
            "{}:4:12: contender `a`: program `/nonexistent/srv` not found",
            path.display()
        )),
        "{err}"
    );
}

#[test]
fn cores_the_machine_lacks_are_reported_and_left_unpinned() {
    let Some(nginx) = nginx_bin() else { return };
    let dir = TempDir::new("run-cores");
    let plan = format!(
        "name = \"cores\"\nrepetitions = 1\ncores = {{ contender = [998], load = [999] }}\n{}\n[[scenario]]\nname = \"s\"\nhttp = \"/index.html\"\nrequests = 20\n",
        nginx_contender("a", &nginx, dir.path())
    );
    let run = run_plan(dir.path(), &plan, &[]);
    assert!(run.output.status.success(), "{}", run.stderr());
    let warnings = run.results["warnings"].as_array().unwrap();
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(
        warnings[0]
            .as_str()
            .unwrap()
            .contains("pins contenders to CPUs [998]"),
        "{warnings:?}"
    );
    assert!(
        run.stderr()
            .contains("warning: the plan pins the load engine to CPUs [999]"),
        "{}",
        run.stderr()
    );
    assert!(run.results["environment"]["load_cpus"].is_null());
    assert!(run.stdout().contains("## Warnings"), "{}", run.stdout());
    assert_eq!(run.run("a", 1)["points"][0]["load"]["successes"], 20);
}

/// `rate = [..]` sweeps the offered open-loop rate like `clients`: one point per rate, each
/// load at its own rate, and the serving table shows the offered rate beside the achieved.
#[test]
fn a_rate_sweep_runs_each_point_at_its_rate() {
    let Some(nginx) = nginx_bin() else { return };
    let dir = TempDir::new("run-rates");
    let plan = format!(
        "name = \"rates\"\nrepetitions = 1\n{}\n[[scenario]]\nname = \"index\"\nhttp = \"/index.html\"\nrate = [50, 200]\nclients = 2\nduration = \"1s\"\n",
        nginx_contender("a", &nginx, dir.path())
    );
    let r = run_plan(dir.path(), &plan, &[]);
    assert!(r.output.status.success(), "{}", r.stderr());
    let points = r.run("a", 1)["points"].as_array().unwrap().clone();
    assert_eq!(points.len(), 2);
    for (p, want) in points.iter().zip([50.0, 200.0]) {
        assert_eq!(p["rate"].as_f64(), Some(want), "{p}");
        assert_eq!(p["load"]["rate"].as_f64(), Some(want), "{p}");
        let achieved = p["load"]["requests_per_s"].as_f64().unwrap();
        assert!(
            (achieved - want).abs() / want < 0.2,
            "offered {want}, achieved {achieved}"
        );
    }
    let md = r.stdout();
    assert!(
        md.contains("| clients | offered req/s | contender |"),
        "{md}"
    );
    assert!(md.contains("| 2 | 200 | a |"), "{md}");
    // The HTML report draws latency against the offered rate, with what was achieved.
    let html = std::fs::read_to_string(r.out_dir.join("report/report.html")).unwrap();
    let chart = html
        .split("<svg")
        .find(|c| c.contains("latency by offered rate"))
        .unwrap_or_else(|| panic!("no rate chart"));
    assert_eq!(
        chart.matches("<polyline").count(),
        2,
        "p50 and p99 of one contender"
    );
    assert!(chart.contains("a, offered 200 req/s: achieved "), "{chart}");
}
