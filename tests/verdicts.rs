//! The verdicts can be trusted on this shared machine: the calibration of issue 11 as tests
//! against real servers, paired order. Two identical nginx are never called different (the
//! noise band and the report's error control decide, not α alone), and the demo server made
//! a quarter dearer per request with `--work` is found more expensive, in one short run; the two
//! gates (`--fail-on-regression`, `--fail-unless-equivalent`) read those verdicts end to end.

mod common;

use bakeoff::analysis::verdicts::Figure;
use bakeoff::report::analysis::Analysis;
use bakeoff::results::Results;
use bakeoff::stats::paired::Call;
use common::*;

#[test]
fn two_identical_nginx_read_the_same_at_every_point() {
    let Some(nginx) = nginx_bin() else { return };
    let dir = TempDir::new("verdicts-aa");
    let plan = format!(
        r#"
name = "nginx A/A"
repetitions = 3
baseline = "a"
paired = {{ noise = "2%" }}
{}
{}
[[scenario]]
name = "index"
http = "GET /index.html"
clients = [4, 16]
duration = "2s"
"#,
        nginx_contender("a", &nginx, dir.path()),
        nginx_contender("b", &nginx, dir.path())
    );
    // Equal within ±50 %: any honest interval of two identical servers is — at three fresh
    // starts (Student's t of 4.3; at two, its 12.7 made a host taking a fifth of the CPUs'
    // time read ±70 % on CPU per request).
    let run = run_plan(dir.path(), &plan, &["--fail-unless-equivalent", "50%"]);
    assert!(run.output.status.success(), "{}", run.stderr());
    let r = Results::load(&run.out_dir).unwrap();
    assert_eq!(r.order, "paired");
    let a = Analysis::of(&r);
    assert_eq!(a.verdicts.len(), 2, "{:#?}", a.verdicts);
    for v in &a.verdicts {
        let all: Vec<String> = v.verdicts.iter().map(|x| x.to_string()).collect();
        eprintln!("{}: {all:?}", v.point);
        for f in [Figure::CpuPerRequest, Figure::Throughput] {
            let x = v.get(f).unwrap_or_else(|| panic!("{f:?} measured: {v:#?}"));
            assert!(!x.call.is_different(), "{} {}: {x}", v.point, v.contender);
            assert!(
                x.ratio.lo <= x.ratio.ratio && x.ratio.ratio <= x.ratio.hi,
                "{x}"
            );
        }
    }
    // Both contenders ran side by side: one block per repetition, slices in both orders.
    let blocks: Vec<Option<u32>> = r.runs.iter().map(|x| x.block).collect();
    assert_eq!(
        blocks,
        [Some(1), Some(1), Some(2), Some(2), Some(3), Some(3)]
    );
    let first = &r.runs[0].points[0].slices;
    assert!(first.len() >= 4, "{first:#?}");
    assert!(first.iter().any(|s| s.position == 0) && first.iter().any(|s| s.position == 1));
    assert!(first.iter().all(|s| s.cost.is_some_and(|c| c.cpu_s > 0.0)));
    let out = run.stdout();
    assert!(
        out.contains("**Serving:** b against a, paired over 3 repetitions"),
        "{out}"
    );
    assert!(out.contains("≈ ") || out.contains("? "), "{out}");
    assert!(out.contains("**Error control:**"), "{out}");
    // No interval of a few seconds is within ±0.1 %: the equivalence gate trips (exit 5),
    // naming the points, on the same results.
    let dir_arg = run.out_dir.to_str().unwrap();
    let gate = bakeoff(&[
        "run",
        "--resume",
        dir_arg,
        "--fail-unless-equivalent",
        "0.1%",
    ]);
    let err = String::from_utf8_lossy(&gate.stderr);
    assert_eq!(gate.status.code(), Some(5), "{err}");
    assert!(
        err.contains("not equivalent: b against a at index"),
        "{err}"
    );
    // No point is different (above), so they could not tell: the gate says what would let
    // them settle, since the plan gave no `max_repetitions`. At ±0.1 %, by the spread of a
    // few seconds' rounds, no twelve repetitions would prove one equal — but an estimate
    // that lies outside the 2 % noise band (1.03× once in CI) may settle as *different*
    // within twelve, and the hint counts it. So: as many as it says would settle, at least
    // as many have their estimate past the noise band; and where none is, it says none
    // would, rather than name a setting that would not help.
    let head = "of these could not tell (inconclusive), and by the spread seen ";
    let said = err
        .split(head)
        .nth(1)
        .unwrap_or_else(|| panic!("no hint: {err}"));
    let (count, rest) = said.split_once(' ').unwrap();
    assert!(
        rest.starts_with("would settle within 12 repetitions"),
        "{err}"
    );
    let settles: usize = if count == "none" {
        0
    } else {
        count.parse().unwrap_or_else(|_| panic!("{err}"))
    };
    let past_noise = a
        .verdicts
        .iter()
        .filter_map(|v| v.main())
        .filter(|x| (x.ratio.ratio.ln()).abs() > 1.02f64.ln())
        .count();
    assert!(
        settles <= past_noise,
        "{settles} settle, {past_noise} past the band: {err}"
    );
}

#[test]
fn a_quarter_more_cpu_per_request_is_found() {
    let dir = TempDir::new("verdicts-work");
    let exe = env!("CARGO_BIN_EXE_bakeoff");
    // The same build twice; the second burns a quarter of the first's CPU per request on
    // top. (A quarter, not a tenth: every interval is at least Student's t over the
    // repetitions, and on this shared VM a host that steals a quarter of the CPUs' time
    // leaves a tenth inconclusive — which is then the right answer, not a test to fail.)
    // First measure what a request costs here (debug or release, this machine), then ask
    // for a quarter of it. Six repetitions, and up to twelve where the point is still
    // inconclusive — as a user's plan would: on a busy host a quarter's interval over four
    // (1.05×–1.56× once in CI) could clear the noise band alone and yet be held back by the
    // report's error control, or (0.84×–1.76×, the hypervisor taking 43 % of the CPUs'
    // time) clear nothing; more fresh starts settle both.
    let base = serve_cost(&dir, exe);
    let work_us = (base * 0.25).max(1.0);
    let contender = |name: &str, extra: &str| demo_contender(exe, name, extra);
    let plan = format!(
        r#"
name = "work"
repetitions = 6
baseline = "plain"
paired = {{ noise = "2%", max_repetitions = 12 }}
{}
{}
[[scenario]]
name = "block"
http = "GET /block/{{rand:0..10000}}"
clients = 4
duration = "2s"
"#,
        contender("plain", ""),
        contender("dearer", &format!(", \"--work\", \"{work_us:.1}us\""))
    );
    // The regression gate at 1 %: a verdict different and worse, the whole interval past
    // 1 %, exits 4 (the noise band is 2 %, so a different one is past 1 %).
    let run = run_plan(dir.path(), &plan, &["--fail-on-regression", "1%"]);
    let r = Results::load(&run.out_dir).unwrap();
    let a = Analysis::of(&r);
    let v = &a.verdicts[0];
    let cpu = v.get(Figure::CpuPerRequest).unwrap();
    eprintln!("+{work_us:.1} µs on {base:.1} µs: {cpu}");
    assert_eq!(
        cpu.call,
        Call::Higher,
        "{cpu} (asked for +{work_us:.1} µs on {base:.1} µs)"
    );
    assert!(cpu.ratio.ratio > 1.08 && cpu.ratio.ratio < 1.8, "{cpu}");
    assert_eq!(run.output.status.code(), Some(4), "{}", run.stderr());
    assert!(
        run.stderr()
            .contains("regression: dearer against plain at block"),
        "{}",
        run.stderr()
    );
    let out = run.stdout();
    assert!(out.contains("more CPU per request"), "{out}");
    // The same rounds, judged on CPU per request alone (`paired.judge`): the family is one
    // verdict per comparison, and CPU per request's interval is the same one.
    let mut judged = r.clone();
    judged.paired.as_mut().unwrap().judge = Some(vec!["cpu_per_request".into()]);
    let j = Analysis::of(&judged);
    let only = j.verdicts[0].get(Figure::CpuPerRequest).unwrap();
    assert_eq!(only.ratio, cpu.ratio);
    assert!(j.verdicts.iter().all(|v| v.verdicts.len() == 1));
    let family = j.family.as_ref().unwrap();
    assert_eq!(family.verdicts, j.verdicts.len());
    assert_eq!(family.judged, [Figure::CpuPerRequest]);
    assert!(
        j.summary
            .iter()
            .any(|l| l.contains("of CPU per request (`paired.judge`)")),
        "{:?}",
        j.summary
    );
    assert!(a.family.as_ref().unwrap().verdicts > family.verdicts);
    // Judged on CPU per item alone, which HTTP answers never measure: no verdict anywhere,
    // and the report says why rather than saying nothing.
    let mut items = r.clone();
    items.paired.as_mut().unwrap().judge = Some(vec!["cpu_per_item".into()]);
    let i = Analysis::of(&items);
    assert!(i.verdicts.is_empty(), "{:?}", i.verdicts);
    let family = i.family.as_ref().unwrap();
    assert_eq!((family.verdicts, family.unjudged), (0, j.verdicts.len()));
    assert!(
        i.summary.iter().any(|l| l.starts_with(&format!(
            "**Not judged:** {} measured none of the figures `paired.judge` names (CPU per item)",
            if j.verdicts.len() == 1 {
                "1 comparison".to_string()
            } else {
                format!("{} comparisons", j.verdicts.len())
            }
        ))),
        "{:?}",
        i.summary
    );
    // The same results: not worse by more than any interval's far end (exit 0 — the gate
    // trips only where a whole interval is past its bound; a quarter asked read 1.63×–1.70× in
    // debug builds on a busy host); not equal within 2 % (exit 5).
    let dir_arg = run.out_dir.to_str().unwrap();
    let worst = v
        .verdicts
        .iter()
        .map(|x| x.ratio.hi.max(1.0 / x.ratio.lo))
        .fold(1.0, f64::max);
    let past_top = format!("{:.0}%", (worst - 1.0) * 100.0 + 5.0);
    let lax = bakeoff(&[
        "run",
        "--resume",
        dir_arg,
        "--fail-on-regression",
        &past_top,
    ]);
    assert_eq!(
        lax.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&lax.stderr)
    );
    let equal = bakeoff(&["run", "--resume", dir_arg, "--fail-unless-equivalent", "2%"]);
    let err = String::from_utf8_lossy(&equal.stderr);
    assert_eq!(equal.status.code(), Some(5), "{err}");
    assert!(
        err.contains("more CPU per request, not within ±2%"),
        "{err}"
    );
}

#[test]
fn nginx_writing_its_access_log_is_found_dearer_at_16_clients() {
    let Some(nginx) = nginx_bin() else { return };
    let dir = TempDir::new("verdicts-access-log");
    // Each contender's config in its own folder: the helper writes one per folder.
    let (quiet, logging) = (dir.path().join("quiet"), dir.path().join("logging"));
    // Four repetitions, up to eight where still inconclusive (as in the test above).
    let plan = format!(
        r#"
name = "nginx access log"
repetitions = 4
baseline = "quiet"
paired = {{ max_repetitions = 8 }}
{}
{}
[[scenario]]
name = "index"
http = "GET /index.html"
clients = 16
duration = "2s"
"#,
        nginx_contender("quiet", &nginx, &quiet),
        nginx_contender_with(
            "logging",
            &nginx,
            &logging,
            "access_log @STATE@/access.log;"
        )
    );
    let run = run_plan(dir.path(), &plan, &[]);
    assert!(run.output.status.success(), "{}", run.stderr());
    let r = Results::load(&run.out_dir).unwrap();
    let a = Analysis::of(&r);
    let cpu = a.verdicts[0].get(Figure::CpuPerRequest).unwrap();
    eprintln!("access log on, 16 clients: {cpu}");
    assert_eq!(cpu.call, Call::Higher, "{cpu}");
}

#[test]
fn inconclusive_points_get_more_repetitions_only_where_they_could_settle() {
    let dir = TempDir::new("verdicts-more");
    let exe = env!("CARGO_BIN_EXE_bakeoff");
    // Bands no A/A result can settle: never 99 % apart, never within ±0.01 %.
    let plan = |repetitions: u32, max: u32| {
        format!(
            r#"
name = "more"
repetitions = {repetitions}
baseline = "a"
paired = {{ noise = "99%", equivalence = "0.01%", max_repetitions = {max}, max_rounds = 4 }}
{}
{}
[[scenario]]
name = "block"
http = "GET /block/{{rand:0..10000}}"
clients = [1, 2]
duration = "200ms"
"#,
            demo_contender(exe, "a", ""),
            demo_contender(exe, "b", "")
        )
    };
    let reps = |r: &Results| -> Vec<(String, u32, usize)> {
        r.runs
            .iter()
            .map(|x| (x.id.contender.clone(), x.id.repetition, x.points.len()))
            .collect()
    };
    // One planned repetition says nothing of the spread between fresh starts: both points
    // get the most allowed, run as a second stage without a look in between.
    let one = dir.path().join("one");
    std::fs::create_dir_all(&one).unwrap();
    let run = run_plan(&one, &plan(1, 3), &[]);
    assert!(run.output.status.success(), "{}", run.stderr());
    let err = run.stderr();
    for k in [2, 3] {
        assert!(
            err.contains(&format!("repetition {k}: 2 points still inconclusive, run again: block [clients=1], block [clients=2]")),
            "{err}"
        );
    }
    assert!(!err.contains("repetition 4:"), "{err}");
    let r = Results::load(&run.out_dir).unwrap();
    assert_eq!(r.paired.as_ref().unwrap().max_repetitions, Some(3));
    let want: Vec<(String, u32, usize)> = (1..=3)
        .flat_map(|k| [("a".to_string(), k, 2), ("b".to_string(), k, 2)])
        .collect();
    assert_eq!(reps(&r), want);
    // Side by side again: each further repetition is a block of its own.
    assert_eq!(r.runs[2].block, r.runs[3].block);
    assert_ne!(r.runs[0].block, r.runs[2].block);
    for v in &Analysis::of(&r).verdicts {
        let cpu = v.get(Figure::CpuPerRequest).unwrap();
        assert_eq!(cpu.ratio.repetitions, 3, "{cpu:?}");
        assert_eq!(cpu.call, Call::Inconclusive, "{cpu}");
    }
    let out = run.stdout();
    assert!(
        out.contains("inconclusive points repeated up to 3 times"),
        "{out}"
    );
    // Two repetitions show the spread, and its estimate sits between the bands: no count
    // of repetitions would settle it, so none more are run, though four are allowed.
    let two = dir.path().join("two");
    std::fs::create_dir_all(&two).unwrap();
    let run = run_plan(&two, &plan(2, 4), &[]);
    assert!(run.output.status.success(), "{}", run.stderr());
    assert!(
        !run.stderr().contains("still inconclusive"),
        "{}",
        run.stderr()
    );
    let r = Results::load(&run.out_dir).unwrap();
    assert_eq!(r.runs.len(), 4, "{:?}", reps(&r));
}

/// A contender running bakeoff's own demo server v2, with `extra` arguments.
fn demo_contender(exe: &str, name: &str, extra: &str) -> String {
    format!(
        r#"
[[contender]]
name = "{name}"
command = ["{exe}", "demo-server", "v2", "{{port}}", "{{state}}"{extra}]
ready = {{ http = "http://127.0.0.1:{{port}}/health", status = 200, timeout = "30s" }}
"#
    )
}

/// The demo server's CPU µs per request at four clients, from a short run of it alone.
fn serve_cost(dir: &TempDir, exe: &str) -> f64 {
    let sub = dir.path().join("probe");
    std::fs::create_dir_all(&sub).unwrap();
    let plan = format!(
        r#"
name = "cost"
repetitions = 1
{}
[[scenario]]
name = "block"
http = "GET /block/{{rand:0..10000}}"
clients = 4
duration = "1s"
"#,
        demo_contender(exe, "plain", "")
    );
    let run = run_plan(&sub, &plan, &[]);
    assert!(run.output.status.success(), "{}", run.stderr());
    let r = Results::load(&run.out_dir).unwrap();
    let p = &r.runs[0].points[0];
    p.cost
        .and_then(|c| c.cpu_us_per(p.load.as_ref()?.requests))
        .expect("the server's cost is measured")
}
