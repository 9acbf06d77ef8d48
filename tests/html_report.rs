//! The HTML report renders: headless Chromium opens it from disk with the network off, takes a
//! screenshot, and the page must be neither blank nor log a console error.

mod common;

use std::path::Path;
use std::process::Command;

use common::*;

/// Screenshots `page` into `png`; returns Chromium's log (console messages included).
fn screenshot(chromium: &Path, page: &Path, png: &Path, profile: &Path) -> String {
    let out = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--enable-logging=stderr",
            "--v=0",
            "--window-size=1200,2000",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--screenshot={}", png.display()))
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("chromium runs");
    assert!(
        png.is_file(),
        "no screenshot: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stderr).into_owned()
}

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
    assert!(
        html.matches("<svg").count() >= 4,
        "start-up, throughput and two latency charts"
    );

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
