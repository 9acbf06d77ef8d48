//! `bakeoff compare` on real inputs: seed 004's Go benchmark tables, raw `go test -bench`
//! output, a real Criterion folder and real hyperfine JSON, plus the threshold gate and the
//! errors malformed inputs get.

mod common;

use std::path::{Path, PathBuf};

use common::*;
use serde_json::Value;

fn fixture(p: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(p)
}

fn compare_json(args: &[&Path], extra: &[&str]) -> (Option<i32>, Value) {
    let mut a: Vec<&str> = vec!["compare"];
    a.extend(args.iter().map(|p| p.to_str().unwrap()));
    a.extend(["--format", "json"]);
    a.extend(extra);
    let out = bakeoff(&a);
    let v = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    (out.status.code(), v)
}

fn table<'a>(v: &'a Value, unit: &str) -> &'a Value {
    v["tables"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["unit"] == unit)
        .unwrap_or_else(|| panic!("no {unit} table"))
}

#[test]
fn seed_004_tables_come_out_with_the_seeds_deltas() {
    let (old, new) = (fixture("seed004/old.txt"), fixture("seed004/new.txt"));
    let (code, v) = compare_json(&[&old, &new], &[]);
    assert_eq!(code, Some(0));
    let seed = std::fs::read_to_string(fixture("seed004/benchcmp.txt")).unwrap();
    let unit_of = |h: &str| match h {
        "ns/op" => "ns/op",
        "allocs" => "allocs/op",
        "bytes" => "B/op",
        other => panic!("unexpected unit {other}"),
    };
    let mut unit = "";
    let mut checked = 0;
    for line in seed.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if line.starts_with("benchmark old ") {
            unit = unit_of(f[2]);
            continue;
        }
        if !line.starts_with("Benchmark") {
            continue;
        }
        let (name, old_v, new_v, delta) = (f[0], f[1], f[2], f[3]);
        let row = table(&v, unit)["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == name)
            .unwrap_or_else(|| panic!("{name} missing in {unit}"));
        assert_eq!(
            row["base"]["median"].as_f64().unwrap(),
            old_v.parse::<f64>().unwrap()
        );
        let cell = &row["cells"][0];
        assert_eq!(
            cell["summary"]["median"].as_f64().unwrap(),
            new_v.parse::<f64>().unwrap()
        );
        let want: f64 = delta.trim_end_matches('%').parse().unwrap();
        let got = cell["delta_pct"].as_f64().unwrap();
        assert!(
            (got - want).abs() <= 0.006,
            "{name} {unit}: {got} vs seed {want}"
        );
        // One run per side can never be significant; say so instead of a verdict.
        assert_eq!(cell["verdict"], "underpowered");
        assert_eq!(row["base"]["ci_needs"], 6);
        assert!(row["base"]["ci_low"].is_null());
        checked += 1;
    }
    assert_eq!(checked, 42);

    let out = bakeoff(&["compare", old.to_str().unwrap(), new.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("ns/op (lower is better)"), "{text}");
    let line = text
        .lines()
        .find(|l| l.starts_with("BenchmarkDeserializeRawGiveBlocksMessage-8"))
        .unwrap();
    assert!(
        line.contains("235440") && line.contains("39867") && line.contains("-83.07%"),
        "{line}"
    );
    assert!(text.contains("too few samples"), "{text}");

    let out = bakeoff(&[
        "compare",
        old.to_str().unwrap(),
        new.to_str().unwrap(),
        "--format",
        "md",
    ]);
    let md = String::from_utf8_lossy(&out.stdout);
    assert!(md.contains("### allocs/op (lower is better)"), "{md}");
    assert!(
        md.contains("| BenchmarkSerializeAnnounceTxnsMessage-8 | 7 | 8 | +14.29% |"),
        "{md}"
    );
}

#[test]
fn raw_go_output_with_custom_units_and_log_lines_parses() {
    let f = fixture("seed004/gosercomp.txt");
    let (_, v) = compare_json(&[&f, &f], &[]);
    assert_eq!(table(&v, "ns/op")["rows"].as_array().unwrap().len(), 55);
    let mbs = table(&v, "MB/s");
    assert_eq!(mbs["direction"], "higher_is_better");
    assert_eq!(mbs["rows"].as_array().unwrap().len(), 4);
    assert_eq!(mbs["rows"][0]["base"]["median"], 313.29);
    // A file against itself: no change anywhere (rows with a zero are left out of the geomean).
    assert_eq!(table(&v, "allocs/op")["geomean_delta_pct"][0], 0.0);
    assert!(table(&v, "ns/op")["rows"]
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r["cells"][0]["delta_pct"] == 0.0));
}

#[test]
fn several_runs_are_samples_and_the_threshold_gates() {
    let dir = TempDir::new("compare-gate");
    let write = |name: &str, base: f64| {
        let mut s = String::from("goos: linux\n");
        for i in 0..10 {
            let jitter = [0.0, 1.0, -1.0, 2.0, -2.0, 0.5, -0.5, 1.5, -1.5, 0.2][i];
            s += &format!("BenchmarkEnc-2 1000 {} ns/op 64 B/op\n", base + jitter);
            s += &format!("BenchmarkDec-2 1000 {} ns/op 32 B/op\n", 50.0 + jitter);
        }
        let p = dir.path().join(name);
        std::fs::write(&p, s).unwrap();
        p
    };
    let old = write("old.txt", 100.0);
    let new = write("new.txt", 120.0);
    // A third run on another CPU: the comparison says so.
    let other = dir.path().join("other-cpu.txt");
    let text = std::fs::read_to_string(&new)
        .unwrap()
        .replace("goos: linux", "goos: linux\ncpu: Other CPU @ 1.0GHz");
    std::fs::write(&other, text).unwrap();
    std::fs::write(
        &old,
        std::fs::read_to_string(&old)
            .unwrap()
            .replace("goos: linux", "goos: linux\ncpu: Intel(R) Xeon(R)"),
    )
    .unwrap();
    let (_, v) = compare_json(&[&old, &other], &[]);
    assert!(
        v["warnings"][0]
            .as_str()
            .unwrap()
            .contains("different `cpu`"),
        "{v}"
    );
    let (code, v) = compare_json(&[&old, &new], &["--threshold", "5%"]);
    assert_eq!(code, Some(3), "{v}");
    assert_eq!(v["tripped"], 1);
    let rows = table(&v, "ns/op")["rows"].as_array().unwrap().clone();
    let enc = rows.iter().find(|r| r["name"] == "BenchmarkEnc-2").unwrap();
    assert_eq!(enc["base"]["n"], 10);
    assert_eq!(enc["cells"][0]["verdict"], "worse");
    assert_eq!(enc["cells"][0]["tripped"], true);
    assert!(enc["cells"][0]["p"].as_f64().unwrap() < 0.001);
    let dec = rows.iter().find(|r| r["name"] == "BenchmarkDec-2").unwrap();
    assert_eq!(dec["cells"][0]["verdict"], "no_change");
    // A looser threshold lets the same change pass.
    let (code, _) = compare_json(&[&old, &new], &["--threshold", "25%"]);
    assert_eq!(code, Some(0));
    // CSV has one line per row and compared input.
    let out = bakeoff(&[
        "compare",
        old.to_str().unwrap(),
        new.to_str().unwrap(),
        "--format",
        "csv",
    ]);
    let csv = String::from_utf8_lossy(&out.stdout);
    assert_eq!(csv.lines().count(), 1 + 4, "{csv}");
    assert!(
        csv.lines()
            .any(|l| l.starts_with("ns/op,BenchmarkEnc-2,") && l.ends_with(",worse,false")),
        "{csv}"
    );
}

#[test]
fn benchmarks_on_one_side_only_are_listed() {
    let dir = TempDir::new("compare-missing");
    let old = dir.path().join("old.txt");
    let new = dir.path().join("new.txt");
    std::fs::write(&old, "BenchmarkA 1 10 ns/op\nBenchmarkGone 1 5 ns/op\n").unwrap();
    std::fs::write(&new, "BenchmarkA 1 11 ns/op\nBenchmarkNew 1 7 ns/op\n").unwrap();
    let (_, v) = compare_json(&[&old, &new], &[]);
    let missing = v["missing"].as_array().unwrap();
    assert_eq!(missing.len(), 2, "{v}");
    assert!(missing
        .iter()
        .any(|m| m["input"].as_str().unwrap().ends_with("new.txt")
            && m["benchmarks"][0] == "BenchmarkGone (ns/op)"));
    assert!(missing
        .iter()
        .any(|m| m["input"].as_str().unwrap().ends_with("old.txt")
            && m["benchmarks"][0] == "BenchmarkNew (ns/op)"));
}

#[test]
fn malformed_inputs_name_the_file_and_line() {
    let dir = TempDir::new("compare-bad");
    let good = dir.path().join("good.txt");
    std::fs::write(&good, "BenchmarkA 1 10 ns/op\n").unwrap();
    let cases = [
        (
            "truncated.txt",
            "goos: linux\nBenchmarkA 1 10 ns/op\nBenchmarkB 1000\n",
            ":3: `BenchmarkB` has an iteration count but no measurements",
        ),
        (
            "odd.txt",
            "BenchmarkA 1 10 ns/op 5\n",
            ":1: `BenchmarkA`: `5` has no unit",
        ),
        ("empty.txt", "", ": no benchmark results found"),
        (
            "bad.json",
            "{\"results\": [\n  {\"command\": \"x\", \"times\": [1, }\n]}\n",
            ":2: not valid JSON",
        ),
        (
            "other.json",
            "{\"hello\": 1}\n",
            ": JSON, but neither hyperfine --export-json output nor a bakeoff results.json",
        ),
    ];
    // Inputs of two kinds, and a noise band of 200 %, are refused.
    let hf = fixture("hyperfine/new.json");
    let out = bakeoff(&["compare", good.to_str().unwrap(), hf.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("compare inputs of one kind"),
        "{err}"
    );
    let out = bakeoff(&[
        "compare",
        "--noise",
        "200%",
        good.to_str().unwrap(),
        good.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("below 100%"), "{err}");
    for (name, text, want) in cases {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        let out = bakeoff(&["compare", good.to_str().unwrap(), p.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(1), "{name}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(&format!("{}{want}", p.display())),
            "{name}: {err}"
        );
    }
}

#[test]
fn criterion_folders_compare_per_iteration_times() {
    let (old, new) = (fixture("criterion/old"), fixture("criterion/new"));
    let (_, v) = compare_json(&[&old, &new], &[]);
    let t = table(&v, "ns/iter");
    let rows = t["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "{t}");
    let fib = rows.iter().find(|r| r["name"] == "fib 15").unwrap();
    assert_eq!(fib["base"]["n"], 100);
    // Our median of the per-iteration samples agrees with Criterion's own estimate.
    let est: Value = serde_json::from_str(
        &std::fs::read_to_string(old.join("fib 15/new/estimates.json")).unwrap(),
    )
    .unwrap();
    let theirs = est["median"]["point_estimate"].as_f64().unwrap();
    let ours = fib["base"]["median"].as_f64().unwrap();
    assert!((ours - theirs).abs() / theirs < 0.02, "{ours} vs {theirs}");
    // Recursive → iterative Fibonacci: much faster, and significant with 100 samples a side.
    let c = &fib["cells"][0];
    assert_eq!(c["verdict"], "better");
    assert!(c["delta_pct"].as_f64().unwrap() < -80.0, "{c}");
    assert!(rows.iter().any(|r| r["name"] == "sum/1000"));
}

#[test]
fn hyperfine_exports_compare_by_command_name() {
    let (old, new) = (fixture("hyperfine/old.json"), fixture("hyperfine/new.json"));
    let (_, v) = compare_json(&[&old, &new], &["--threshold", "5%"]);
    let t = table(&v, "s");
    assert_eq!(t["direction"], "lower_is_better");
    let work = &t["rows"][0];
    assert_eq!(work["name"], "work");
    assert_eq!(work["base"]["n"], 15);
    // 15 samples give a 95 % interval of the median; one sample (seed 004) does not.
    let (lo, med, hi) = (
        work["base"]["ci_low"].as_f64().unwrap(),
        work["base"]["median"].as_f64().unwrap(),
        work["base"]["ci_high"].as_f64().unwrap(),
    );
    assert!(lo <= med && med <= hi && lo < hi, "{work}");
    assert_eq!(work["cells"][0]["verdict"], "better", "{work}");
    assert_eq!(v["tripped"], 0);
    // `startup` exists only in the new file: listed, not dropped.
    assert_eq!(v["missing"][0]["benchmarks"][0], "startup (s)", "{v}");
}

#[test]
fn bakeoff_results_compare_per_contender_and_point() {
    let Some(nginx) = nginx_bin() else { return };
    let dir = TempDir::new("compare-results");
    let plan = format!(
        "name = \"r\"\nrepetitions = 3\n{}\n[[scenario]]\nname = \"index\"\nhttp = \"/index.html\"\nclients = [1, 2]\nrequests = 200\n",
        nginx_contender("a", &nginx, dir.path())
    );
    let mut outs = Vec::new();
    let cpus = bakeoff::sys::allowed_cpus();
    for k in 0..2 {
        let d = dir.path().join(format!("run{k}"));
        std::fs::create_dir_all(&d).unwrap();
        // The second run gets one CPU fewer: the comparison must say so.
        let on = (k == 1 && cpus.len() > 1).then(|| cpus[1..].to_vec());
        let run = run_plan_on(&d, &plan, &[], on);
        assert!(run.output.status.success(), "{}", run.stderr());
        outs.push(run.out_dir.join("results.json"));
    }
    let (_, v) = compare_json(&[&outs[0], &outs[1]], &[]);
    let rps = table(&v, "req/s");
    assert_eq!(rps["direction"], "higher_is_better");
    let names: Vec<&str> = rps["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["a/index [clients=1]", "a/index [clients=2]"]);
    assert_eq!(rps["rows"][0]["base"]["n"], 3);
    // Three repetitions a side can never be significant: said, not guessed.
    assert_eq!(rps["rows"][0]["cells"][0]["verdict"], "underpowered");
    assert_eq!(
        table(&v, "first response s")["rows"][0]["name"],
        "a/start-up"
    );
    // Columns are named by what tells the inputs apart, not by their whole paths.
    assert_eq!(v["inputs"][0]["label"], "run0");
    assert_eq!(v["inputs"][1]["label"], "run1");
    let (_, named) = compare_json(&[&outs[0], &outs[1]], &["--names", "before,after"]);
    assert_eq!(named["inputs"][1]["label"], "after");
    // CPU until ready and CPU over the whole repetition are two rows, named apart.
    let cpu: Vec<&str> = table(&v, "CPU s")["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(cpu, ["a/start-up", "a/repetition"]);
    let warnings = v["warnings"].to_string();
    assert!(!warnings.contains("--smoke"), "{warnings}");
    if cpus.len() > 1 {
        assert!(warnings.contains("different `cpus`"), "{warnings}");
        for n in [cpus.len(), cpus.len() - 1] {
            assert!(warnings.contains(&format!(" {n} allowed")), "{warnings}");
        }
    } else {
        assert!(!warnings.contains("`cpus`"), "{warnings}");
    }
    // A --smoke run checks a plan: compared, it is said so.
    let d = dir.path().join("smoke");
    std::fs::create_dir_all(&d).unwrap();
    let smoke = run_plan(&d, &plan, &["--smoke"]);
    assert!(smoke.output.status.success(), "{}", smoke.stderr());
    let (_, v) = compare_json(&[&outs[0], &smoke.out_dir.join("results.json")], &[]);
    let warnings = v["warnings"].to_string();
    assert!(warnings.contains("is a --smoke run"), "{warnings}");
}

/// hyperfine as people run it: `hyperfine 'old/foo' 'new/foo' --export-json r.json` puts both
/// commands in one file; and two files whose names differ are paired by a rename or by
/// position. The pairing used is said.
#[test]
fn one_hyperfine_file_and_renamed_or_positional_pairings_compare() {
    let new = fixture("hyperfine/new.json");
    let (_, v) = compare_json(&[&new], &[]);
    assert_eq!(
        v["pairing"], "benchmarks of one file, each against `work`",
        "{v}"
    );
    let t = table(&v, "s");
    assert_eq!(v["inputs"][1]["label"], "startup");
    assert_eq!(t["rows"][0]["cells"][0]["verdict"], "better", "{t}");
    let (_, v) = compare_json(&[&new], &["--baseline", "startup"]);
    assert_eq!(table(&v, "s")["rows"][0]["cells"][0]["verdict"], "worse");
    let out = bakeoff(&["compare", new.to_str().unwrap(), "--baseline", "nope"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("--baseline `nope` is not a benchmark"),
        "{err}"
    );
    // Two files, different names.
    let dir = TempDir::new("compare-rename");
    let text = std::fs::read_to_string(fixture("hyperfine/old.json")).unwrap();
    let renamed = dir.path().join("renamed.json");
    std::fs::write(&renamed, text.replace("\"work\"", "\"work-v2\"")).unwrap();
    let old = fixture("hyperfine/old.json");
    let (_, v) = compare_json(&[&old, &renamed], &["--rename", "work=work-v2"]);
    assert_eq!(v["pairing"], "rows paired by name, with work=work-v2");
    assert!(table(&v, "s")["rows"][0]["cells"][0].is_object(), "{v}");
    let (_, v) = compare_json(&[&old, &renamed], &["--by-position"]);
    assert_eq!(v["pairing"], "rows paired by position");
    assert!(table(&v, "s")["rows"][0]["cells"][0].is_object(), "{v}");
    let (_, v) = compare_json(&[&old, &renamed], &[]);
    assert!(
        table(&v, "s")["rows"][0]["cells"][0].is_null(),
        "unpaired by name: {v}"
    );
}
