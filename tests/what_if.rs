//! From finding to proof (docs/what-if.md): a point whose calls sit in the ~40 ms band is
//! measured again with TCP_NODELAY forced on the server's sockets from outside. Real servers:
//! Python's that never set the option (the listener is enough), one that turns it off on
//! every connection it accepts (the established sockets must be set too), one that holds
//! every answer 42 ms on a timer (not Nagle: not confirmed), and a C server built with
//! `gcc -static` (no LD_PRELOAD could reach it).

mod common;

use std::path::Path;
use std::process::Command;

use bakeoff::diagnose::{findings, Finding, Limits, StallCheck};
use bakeoff::results::Results;
use common::*;

fn check_of(found: &[Finding], name: &str) -> Option<StallCheck> {
    found.iter().find_map(|f| match f {
        Finding::StallBand {
            contender, check, ..
        } if contender == name => check.clone(),
        _ => None,
    })
}

const SCENARIO: &str =
    "\n[[scenario]]\nname = \"get\"\nhttp = \"/\"\nclients = 1\nduration = \"1s\"\n";

#[test]
fn nagle_is_confirmed_by_forcing_the_option_and_a_timer_is_not() {
    let dir = TempDir::new("whatif");
    let plan = format!(
        "name = \"what-if\"\nrepetitions = 1\n{}{}{}{}",
        faulty_contender("floor", "nagle", 0),
        faulty_contender("clears", "nagle-clear", 0),
        faulty_contender("timer", "timer", 0),
        SCENARIO
    );
    let run = run_plan(dir.path(), &plan, &[]);
    assert!(run.output.status.success(), "{}", run.stderr());
    let r = Results::load(&run.out_dir).unwrap();
    let confirmation = |name: &str| {
        let run = r.runs.iter().find(|x| x.id.contender == name).unwrap();
        assert_eq!(
            run.confirmations.len(),
            1,
            "{name}: {:?}",
            run.confirmations
        );
        run.confirmations[0].clone()
    };

    // Without the option: ~44 ms; forced on the listener (Python leaves accepted sockets
    // as they come): the band is gone.
    let floor = confirmation("floor");
    assert_eq!(floor.confirmed, Some(true), "{floor:?}");
    assert!(floor.forced.listeners >= 1, "{:?}", floor.forced);
    assert_eq!(floor.forced.cleared_by_server, 0);
    let after = floor.load.as_ref().unwrap();
    assert!(after.latency_us.p50 < 10_000, "{:?}", after.latency_us);

    // A server that turns it off after accepting: only setting it on the established
    // socket works, and that it was off there is recorded.
    let clears = confirmation("clears");
    assert_eq!(clears.confirmed, Some(true), "{clears:?}");
    assert!(clears.forced.cleared_by_server >= 1, "{:?}", clears.forced);
    assert!(clears.load.as_ref().unwrap().latency_us.p50 < 10_000);

    // A timer: forced, measured again, still 42 ms.
    let timer = confirmation("timer");
    assert!(timer.forced.took(), "{:?}", timer.forced);
    assert_eq!(timer.confirmed, Some(false), "{timer:?}");
    assert!(timer.load.as_ref().unwrap().latency_us.p50 >= 40_000);

    // The findings say so, and the report prints it.
    let found = findings(&r, Limits::default());
    assert_eq!(check_of(&found, "floor").unwrap().confirmed, Some(true));
    assert!(check_of(&found, "clears").unwrap().cleared_by_server >= 1);
    assert_eq!(check_of(&found, "timer").unwrap().confirmed, Some(false));
    let out = run.stdout();
    assert!(out.contains("floor: its calls sit at 40–50 ms"), "{out}");
    assert!(out.contains("Nagle + delayed ACK, **confirmed**"), "{out}");
    assert!(out.contains("turned the option off itself"), "{out}");
    assert!(out.contains("timer: its calls sit at 40–50 ms"), "{out}");
    assert!(out.contains("**not** Nagle"), "{out}");

    // `confirm = false` measures nothing again.
    let dir2 = TempDir::new("whatif-off");
    let off = format!(
        "name = \"no what-if\"\nrepetitions = 1\nconfirm = false\n{}{}",
        faulty_contender("floor", "nagle", 0),
        SCENARIO
    );
    let run = run_plan(dir2.path(), &off, &[]);
    assert!(run.output.status.success(), "{}", run.stderr());
    let r = Results::load(&run.out_dir).unwrap();
    assert!(r.runs[0].confirmations.is_empty());
    assert!(
        run.stdout().contains("looks like Nagle"),
        "{}",
        run.stdout()
    );
}

#[test]
fn a_static_binary_is_forced_and_confirmed() {
    let dir = TempDir::new("whatif-static");
    let bin = dir.path().join("nagle_static");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/nagle_static.c");
    let built = Command::new("gcc")
        .args(["-static", "-O2", "-pthread", "-o"])
        .arg(&bin)
        .arg(&src)
        .status();
    if !present_or_skip(
        built.is_ok_and(|s| s.success()),
        "gcc -static could not build tests/fixtures/nagle_static.c (needs gcc and libc6-dev)",
    ) {
        return;
    }
    let file = Command::new("file").arg(&bin).output();
    if let Ok(f) = file {
        let text = String::from_utf8_lossy(&f.stdout);
        assert!(text.contains("statically linked"), "{text}");
    }
    let plan = format!(
        r#"name = "static"
repetitions = 1

[[contender]]
name = "static"
command = ["{}", "{{port}}"]
ready = {{ log = "serving on", timeout = "10s" }}
{SCENARIO}"#,
        bin.display()
    );
    let run = run_plan(dir.path(), &plan, &[]);
    assert!(run.output.status.success(), "{}", run.stderr());
    let r = Results::load(&run.out_dir).unwrap();
    let before = r.runs[0].points[0].load.as_ref().unwrap();
    assert!(before.latency_us.p50 >= 38_000, "{:?}", before.latency_us);
    let c = &r.runs[0].confirmations[0];
    assert_eq!(c.confirmed, Some(true), "{c:?}");
    assert!(c.forced.listeners >= 1);
    assert!(c.load.as_ref().unwrap().latency_us.p50 < 10_000);
}

#[test]
fn load_what_if_nodelay_forces_the_option_on_a_process_it_is_given() {
    let port = free_port();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/faulty_server.py");
    let child = Command::new("python3")
        .arg(&script)
        .args([&port.to_string(), "nagle-clear", "0"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut server = Proc(child);
    // Its first line says it listens.
    {
        use std::io::BufRead as _;
        let out = server.0.stdout.take().unwrap();
        let mut line = String::new();
        std::io::BufReader::new(out).read_line(&mut line).unwrap();
        assert!(line.starts_with("serving on"), "{line}");
    }
    let pid = server.0.id().to_string();
    let url = format!("http://127.0.0.1:{port}/");
    let plain = bakeoff_json(&["load", &url, "-n", "20", "-c", "1"]);
    assert!(
        plain["latency_us"]["p50"].as_u64().unwrap() >= 38_000,
        "{plain}"
    );
    let out = bakeoff(&[
        "load",
        &url,
        "-n",
        "20",
        "-c",
        "1",
        "--what-if",
        "nodelay",
        "--pid",
        &pid,
        "--json",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("what-if nodelay: set TCP_NODELAY on"), "{err}");
    // How many of its connections it had cleared when they were counted depends on when
    // the server got to them (a loaded host): that it did, and is said, is what counts.
    assert!(
        err.contains("turned it off itself on ") && err.contains(" after accepting"),
        "{err}"
    );
    let forced: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        forced["latency_us"]["p50"].as_u64().unwrap() < 10_000,
        "{forced}"
    );

    // A process with no socket on that port: said, and nothing is measured.
    let idle = Proc(Command::new("sleep").arg("30").spawn().unwrap());
    let me = idle.0.id().to_string();
    let out = bakeoff(&[
        "load",
        &url,
        "-n",
        "5",
        "-c",
        "1",
        "--what-if",
        "nodelay",
        "--pid",
        &me,
    ]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("has no listening socket on port"), "{err}");
    // --what-if needs the process named.
    let out = bakeoff(&["load", &url, "--what-if", "nodelay"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--pid"));
}

#[test]
fn a_nodelay_variant_runs_beside_its_contender_and_is_compared_with_it() {
    let dir = TempDir::new("whatif-variant");
    let plan = format!(
        // Three repetitions: the verdict's interval is at least Student's t over them, and
        // two (t = 12.7) would let one repetition of a host's hiccup decide it.
        "name = \"variant\"\nrepetitions = 3\n{}what_if = [\"nodelay\"]\n{}",
        faulty_contender("clears", "nagle-clear", 0),
        SCENARIO
    );
    let run = run_plan(dir.path(), &plan, &[]);
    assert!(run.output.status.success(), "{}", run.stderr());
    let r = Results::load(&run.out_dir).unwrap();
    let names: Vec<&str> = r.contenders.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["clears", "clears+nodelay"]);
    assert_eq!(r.contenders[1].baseline.as_deref(), Some("clears"));
    // Typed: the run is of `clears`, variant `nodelay`.
    let variant: Vec<_> = r.runs.iter().filter(|x| x.id.variant.is_some()).collect();
    assert_eq!(variant.len(), 3);
    for v in &variant {
        assert_eq!(v.id.contender, "clears");
        assert_eq!(v.id.subject(), "clears+nodelay");
        let w = v.what_if.as_ref().expect("what forcing did");
        assert!(w.listeners >= 1 && w.established >= 1, "{w:?}");
        assert!(
            w.cleared_by_server >= 1,
            "the server clears it on accept: {w:?}"
        );
        let p = v.points[0].load.as_ref().unwrap();
        assert!(p.latency_us.p50 < 10_000, "{:?}", p.latency_us);
        assert!(
            v.confirmations.is_empty(),
            "the variant has the option on already"
        );
    }
    // The original stays as it is (and its own finding is confirmed once).
    let orig: Vec<_> = r.runs.iter().filter(|x| x.id.variant.is_none()).collect();
    assert!(orig[0].points[0].load.as_ref().unwrap().latency_us.p50 >= 38_000);
    assert_eq!(orig[0].confirmations.len(), 1);
    assert!(
        orig[1].confirmations.is_empty(),
        "confirmed in repetition 1 already"
    );
    // Paired against the original: far lower p50 and more throughput.
    let out = run.stdout();
    assert!(
        out.contains("clears+nodelay against clears, paired"),
        "{out}"
    );
    assert!(out.contains("more throughput"), "{out}");

    // `--what-if nodelay` adds the same variant to a plan without the key; a what-if the
    // plan names wrongly is refused where it is written.
    let dir2 = TempDir::new("whatif-flag");
    let plain = format!(
        "name = \"flag\"\nrepetitions = 1\n{}{}",
        faulty_contender("floor", "nagle", 0),
        SCENARIO
    );
    let run = run_plan(dir2.path(), &plain, &["--what-if", "nodelay"]);
    assert!(run.output.status.success(), "{}", run.stderr());
    let r = Results::load(&run.out_dir).unwrap();
    let names: Vec<&str> = r.contenders.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["floor", "floor+nodelay"]);
    let bad = dir2.path().join("bad.toml");
    std::fs::write(
        &bad,
        format!(
            "name = \"bad\"\n{}what_if = [\"nodely\"]\n{}",
            faulty_contender("floor", "nagle", 0),
            SCENARIO
        ),
    )
    .unwrap();
    let out = bakeoff(&["plan", "check", bad.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("bad.toml:8:12:"), "{err}");
    assert!(
        err.contains("`nodely` is not a what-if") && err.contains("nodelay"),
        "{err}"
    );
}

/// A variant is the same build with the option forced (issue 25, item 14): a timer's band
/// in `timer+nodelay` is no "missing TCP_NODELAY" finding of its own, and its compat answers
/// are noise evidence for the contender it varies, not a verdict of its own.
#[test]
fn a_variant_gets_no_nagle_finding_and_no_compat_verdict_of_its_own() {
    let dir = TempDir::new("whatif-variant-findings");
    let plan = format!(
        "name = \"variant findings\"\nrepetitions = 1\n{}\n[[compat]]\nname = \"root\"\nhttp = \"GET /{{case}}\"\nrequests = [\"a\", \"b\"]\n{}",
        faulty_contender("timer", "timer", 0),
        SCENARIO
    );
    let run = run_plan(dir.path(), &plan, &["--what-if", "nodelay"]);
    assert!(run.output.status.success(), "{}", run.stderr());
    let r = Results::load(&run.out_dir).unwrap();
    let found = findings(&r, Limits::default());
    let stalls: Vec<&str> = found
        .iter()
        .filter_map(|f| match f {
            Finding::StallBand { contender, .. } => Some(contender.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(stalls, ["timer"], "{found:?}");
    // Its answers were asked (repetition 1), and count as the baseline's noise instance.
    let v = r.runs.iter().find(|x| x.id.variant.is_some()).unwrap();
    assert!(!v.compat.is_empty());
    let reports = bakeoff::report::compat::from_results(&r);
    assert_eq!(reports.len(), 1);
    assert_eq!(reports[0].noise_instances, ["timer+nodelay"]);
    assert!(
        reports[0].sets[0].contenders.is_empty(),
        "{:?}",
        reports[0].sets[0].contenders
    );
    let text = run.stdout();
    assert!(!text.contains("timer+nodelay: its calls sit"), "{text}");
}
