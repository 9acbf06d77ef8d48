//! `bakeoff demo` end to end: the whole bake-off with the built-in contenders, and the
//! findings it must produce.

mod common;

use std::process::{Command, Stdio};

use bakeoff::analysis::verdicts::Figure;
use bakeoff::results::Results;
use bakeoff::stats::paired::Call;
use common::*;

#[test]
fn the_demo_runs_a_whole_bake_off_and_finds_what_it_should() {
    let dir = TempDir::new("demo");
    let out = dir.path().join("out");
    let child = Command::new(env!("CARGO_BIN_EXE_bakeoff"))
        .arg("demo")
        .arg("--out")
        .arg(&out)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let started = std::time::Instant::now();
    let output = child.wait_with_output().unwrap();
    eprintln!("bakeoff demo took {:.1?}", started.elapsed());
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{}\n{text}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(leftovers(pid).is_empty(), "the demo left processes behind");

    readme_shows_this_output(&text);

    let r = Results::load(&out).unwrap();
    assert_eq!(r.status, bakeoff::results::Status::Complete);
    assert_eq!(
        r.runs.len(),
        7,
        "v1 and v2 three times, the noise instance once"
    );
    // Decided at the plan's repetitions: the budget bought nothing more.
    let budget = r.budget.as_ref().expect("the demo's budget is recorded");
    assert_eq!(budget.budget_s, Some(75.0));
    assert_eq!((budget.more_repetitions, budget.left), (0, 0), "{budget:?}");
    // v1 builds its index slowly: ready well after v2.
    let ready = |c: &str| {
        let mut v: Vec<f64> = r
            .runs
            .iter()
            .filter(|x| x.id.contender == c)
            .filter_map(|x| x.startup.as_ref().map(|s| s.ready_s))
            .collect();
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    assert!(
        ready("v1") > 2.0 * ready("v2"),
        "{} vs {}",
        ready("v1"),
        ready("v2")
    );
    // The findings and differences the demo exists to show.
    assert!(text.contains("v1: its calls sit at 40–50 ms"), "{text}");
    // Proved, not guessed: v1 clears TCP_NODELAY on every connection it accepts, so only
    // forcing it on the established sockets removes the band.
    assert!(
        text.contains("Nagle + delayed ACK, **confirmed**"),
        "{text}"
    );
    assert!(text.contains("turned the option off itself"), "{text}");
    assert!(!text.contains("v2: its calls sit"), "{text}");
    assert!(text.contains("**byte order reversed at hash**"), "{text}");
    assert!(
        text.contains("**status differs: HTTP 500 vs HTTP 400**"),
        "{text}"
    );
    assert!(text.contains("both failed with HTTP 404"), "{text}");
    assert!(text.contains("| 8 | v2 | "), "{text}");
    // Paired: the v1/v2 gap is a verdict with its interval at every point, never "too few
    // runs" — from the results, and as the report says it.
    let analysis = bakeoff::report::analysis::Analysis::of(&r);
    assert_eq!(analysis.verdicts.len(), 2, "one per point");
    for v in &analysis.verdicts {
        let t = v.get(Figure::Throughput).unwrap();
        // Different and higher: what the code must find, never how fast (a busy machine
        // gave 54× (47×–61×) against an old `lo > 50` here).
        assert_eq!(t.call, Call::Higher, "{t}");
    }
    assert!(text.contains("more throughput"), "{text}");
    assert!(!text.contains("too few runs"), "{text}");
    // The HTML report folds each class of difference with its shortest example, and draws
    // throughput against clients.
    let html = std::fs::read_to_string(out.join("report/report.html")).unwrap();
    assert!(
        html.contains("<summary><b>byte order reversed at hash</b>"),
        "{html}"
    );
    assert!(html.contains("aria-label=\"throughput by clients\""));
}

/// docs/demo.md is this output: every heading and every table's header line it shows is in
/// what the demo printed now; and the README's summary block has the summary's lines.
fn readme_shows_this_output(printed: &str) {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let page = std::fs::read_to_string(root.join("docs/demo.md")).unwrap();
    let block = page
        .split_once("\n## Summary")
        .map(|(_, rest)| format!("## Summary{rest}"))
        .expect("docs/demo.md shows the demo's report");
    let mut checked = 0;
    for line in block.lines() {
        let wants = if line.starts_with('#') {
            let h = line.trim_start_matches('#');
            vec![format!("##{h}"), format!("###{h}"), format!("####{h}")]
        } else if line.starts_with("| ") && block_header(&block, line) {
            vec![line.to_string()]
        } else {
            continue;
        };
        checked += 1;
        // Measured numbers in a heading vary from run to run; its words may not.
        assert!(
            printed
                .lines()
                .any(|l| wants.iter().any(|w| words(l) == words(w))),
            "docs/demo.md shows `{line}`, the demo no longer prints it:\n{printed}"
        );
    }
    assert!(
        checked >= 8,
        "only {checked} lines of docs/demo.md were checked"
    );
    // The README's block: the summary's lines, each by its label (`- **Serving:**`).
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let summary = readme
        .split("## What you get")
        .nth(1)
        .and_then(|b| b.split("```").nth(1))
        .expect("the README shows the demo's summary");
    // `- **Serving:**`, `- **Same answers?**`: the bold words that open the line.
    let label = |l: &str| l[4..].find("**").map(|end| l[..end + 6].to_string());
    let labels: Vec<String> = summary
        .lines()
        .filter(|l| l.starts_with("- **"))
        .filter_map(label)
        .collect();
    assert!(labels.len() >= 5, "{summary}");
    for l in &labels {
        assert!(
            printed.lines().any(|p| p.starts_with(l.as_str())),
            "the README's summary shows `{l}`, the demo no longer prints it:\n{printed}"
        );
    }
}

/// Whether `line` is a table's header (the line before a `|---` line).
fn block_header(block: &str, line: &str) -> bool {
    let lines: Vec<&str> = block.lines().collect();
    lines
        .windows(2)
        .any(|w| w[0] == line && w[1].starts_with("|---"))
}

/// The text with every number replaced by `#`; a table's header as its set of columns (the
/// paired table puts the steadiest figure first, which varies from run to run).
fn words(line: &str) -> String {
    if line.starts_with("| ") {
        let mut cells: Vec<&str> = line.split('|').map(str::trim).collect();
        cells.sort_unstable();
        return cells.join("|");
    }
    let mut out = String::new();
    let mut in_number = false;
    for c in line.chars() {
        let digit = c.is_ascii_digit() || (in_number && c == '.');
        if digit && !in_number {
            out.push('#');
        } else if !digit {
            out.push(c);
        }
        in_number = digit;
    }
    out
}
