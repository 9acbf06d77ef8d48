//! The HTML report renders: headless Chromium opens it from disk with the network off, takes a
//! screenshot, and the page must be neither blank nor log a console error.

mod common;

use common::*;

#[test]
fn the_html_report_renders_in_headless_chromium() {
    let (Some(nginx), Some(chromium)) = (nginx_bin(), chromium_bin()) else {
        return;
    };
    let dir = TempDir::new("html");
    let plan = format!(
        "name = \"html <report>\"\nrepetitions = 2\nbaseline = \"a\"\n{}{}\n[[scenario]]\nname = \"index\"\nhttp = \"/index.html\"\nclients = [1, 4]\nrequests = 300\n",
        nginx_contender("a", &nginx, dir.path()),
        nginx_contender("b", &nginx, dir.path())
    );
    let run = run_plan(dir.path(), &plan, &[]);
    assert!(run.output.status.success(), "{}", run.stderr());
    let page = run.out_dir.join("report/report.html");
    let html = std::fs::read_to_string(&page).unwrap();
    // Self-contained: the only URLs are the SVG namespace; no scripts, images or styles to fetch.
    let namespaces = html.matches("xmlns=\"http://www.w3.org/2000/svg\"").count();
    assert_eq!(
        html.matches("http://").count(),
        namespaces,
        "the page refers to the network"
    );
    assert!(!html.contains("https://") && !html.contains(" src=") && !html.contains("<link"));
    assert!(html.contains("html &lt;report&gt;"));
    // Headings set the Markdown's code spans as code, not as backticks.
    for h2 in html.split("<h2>").skip(1) {
        let h2 = h2.split("</h2>").next().unwrap();
        assert!(!h2.contains('`'), "{h2}");
    }
    assert!(
        html.contains("<h2>index (<code>GET /index.html</code>)"),
        "{html}"
    );
    // The environment line says what the Markdown's says: pinning, repetitions, order.
    let env = html.split("<h2>Environment</h2><p>").nth(1).unwrap();
    assert!(
        env.contains("2 repetitions, paired") && env.contains(" CPUs"),
        "{env}"
    );
    assert!(
        env.contains("contenders on CPUs") || env.contains("not pinned"),
        "{env}"
    );
    assert!(
        html.matches("<svg").count() >= 4,
        "start-up, throughput and two latency charts"
    );
    // Clients 1 and 4: throughput is drawn against clients, one curve per contender.
    assert_eq!(
        html.matches("aria-label=\"throughput by clients\"").count(),
        1
    );
    assert!(!html.contains("aria-label=\"throughput\""));

    // The scaling table: each contender's 4-client rate as a factor of its 1-client rate.
    let report: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(run.out_dir.join("report/report.json")).unwrap(),
    )
    .unwrap();
    let table = |id: &str| {
        report["tables"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["id"] == id)
            .unwrap_or_else(|| panic!("no table `{id}`"))
    };
    let scaling = table("scaling-index");
    let serving = table("serving-index");
    assert_eq!(
        scaling["head"],
        serde_json::json!(["contender", "1 client", "4 clients"])
    );
    let rows = scaling["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "{scaling}");
    for row in rows {
        let one: f64 = row[1].as_str().unwrap().parse().unwrap();
        let (four, factor) = row[2].as_str().unwrap().split_once(" (×").unwrap();
        let (four, factor): (f64, f64) = (
            four.parse().unwrap(),
            factor.trim_end_matches(')').parse().unwrap(),
        );
        assert!((four / one - factor).abs() < 0.051, "{row}");
        // And the same medians as the serving table shows.
        let name = row[0].as_str().unwrap();
        let rate = |clients: &str| -> f64 {
            let r = serving["rows"]
                .as_array()
                .unwrap()
                .iter()
                .find(|r| r[0] == clients && r[1] == name)
                .unwrap();
            r[2].as_str()
                .unwrap()
                .split(' ')
                .next()
                .unwrap()
                .parse()
                .unwrap()
        };
        assert_eq!((rate("1"), rate("4")), (one, four), "{row}");
    }

    // A column for every figure a verdict was read on, p50 among them: the summary counts
    // no verdict the table does not show.
    let head: Vec<&str> = serving["head"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|h| h.as_str())
        .collect();
    for figure in ["throughput ×", "p50 ×", "p99 ×"] {
        assert!(head.contains(&figure), "{head:?}");
    }

    let blank = dir.path().join("blank.html");
    std::fs::write(&blank, "<!doctype html><html><body></body></html>").unwrap();
    let (shot, blank_shot) = (dir.path().join("report.png"), dir.path().join("blank.png"));
    let log = screenshot(&chromium, &page, &shot, &dir.path().join("profile-a"));
    screenshot(
        &chromium,
        &blank,
        &blank_shot,
        &dir.path().join("profile-b"),
    );
    assert!(
        !log.contains(":CONSOLE"),
        "console output while rendering: {log}"
    );
    // A blank page compresses to almost nothing; tables and charts do not.
    let (size, blank_size) = (
        std::fs::metadata(&shot).unwrap().len(),
        std::fs::metadata(&blank_shot).unwrap().len(),
    );
    assert!(
        size > 3 * blank_size,
        "the screenshot looks blank ({size} vs {blank_size} bytes)"
    );
}

/// Issue 71: both reports open with the verdict — the gate's line, each point that reads
/// different (figure, ratio, interval) — before the summary; the HTML puts the serving
/// table before the findings about the machine, folded. v1 of the built-in demo service
/// answers a block with three times v2's CPU: against v2, a regression no neighbour hides.
#[test]
fn both_reports_open_with_the_verdict() {
    let dir = TempDir::new("verdict-first");
    let me = env!("CARGO_BIN_EXE_bakeoff");
    let contender = |name: &str, version: &str| {
        format!(
            "[[contender]]\nname = \"{name}\"\ncommand = [\"{me}\", \"demo-server\", \"{version}\", \"{{port}}\", \"{{state}}\"]\nready = {{ http = \"http://127.0.0.1:{{port}}/health\", status = 200, timeout = \"30s\" }}\n"
        )
    };
    let plan = format!(
        "name = \"verdict\"\nrepetitions = 3\nbaseline = \"v2\"\n{}{}\n[[scenario]]\nname = \"get a block\"\nhttp = \"/block/1\"\nclients = [2]\nrequests = 200\n",
        contender("v2", "v2"),
        contender("v1", "v1")
    );
    let run = run_plan(dir.path(), &plan, &["--fail-on-regression", "5%"]);
    assert_eq!(run.output.status.code(), Some(4), "{}", run.stderr());
    let md = std::fs::read_to_string(run.out_dir.join("report/report.md")).unwrap();
    let lines: Vec<&str> = md.lines().filter(|l| !l.is_empty()).collect();
    assert_eq!(lines[1], "## Verdict", "{md}");
    assert!(
        lines[2].starts_with("- **gate: "),
        "the gate's line first:\n{md}"
    );
    assert!(
        lines[3].starts_with("- v1 against v2 at get a block [clients=2]: ")
            && lines[3].contains("more CPU per request"),
        "then the points that differ:\n{md}"
    );
    let summary = md.find("## Summary").unwrap();
    assert!(md.find("## Verdict").unwrap() < summary);
    let html = std::fs::read_to_string(run.out_dir.join("report/report.html")).unwrap();
    let at = |needle: &str| html.find(needle).unwrap_or_else(|| panic!("no {needle}"));
    assert!(at("id=\"verdict\"") < at("<h2>Summary"), "verdict first");
    assert!(html[at("id=\"verdict\"")..].contains("gate: "));
    if let Some(findings) = html.find("<h2>Findings") {
        assert!(at("<table") < findings, "the tables before the findings");
        assert!(!html.contains("<div class=\"finding\">"), "findings folded");
    }
}
