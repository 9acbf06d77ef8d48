//! `bakeoff load --json` is a contract: its output must match the committed JSON Schema in
//! `docs/load-result.schema.json` (required keys present, no undocumented keys, types and
//! enums as declared). A small checker for the subset of JSON Schema that file uses.

mod common;

use serde_json::Value;

const SCHEMA: &str = include_str!("../docs/load-result.schema.json");
const RESULTS_SCHEMA: &str = include_str!("../docs/results.schema.json");
const REPORT_SCHEMA: &str = include_str!("../docs/report.schema.json");

fn resolve<'a>(root: &'a Value, s: &'a Value) -> &'a Value {
    match s.get("$ref").and_then(Value::as_str) {
        Some(r) => {
            let name = r.trim_start_matches("#/$defs/");
            &root["$defs"][name]
        }
        None => s,
    }
}

fn type_ok(t: &str, v: &Value) -> bool {
    match t {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "boolean" => v.is_boolean(),
        "null" => v.is_null(),
        "integer" => v.is_u64() || v.is_i64(),
        "number" => v.is_number(),
        _ => panic!("schema uses unknown type {t}"),
    }
}

fn check(root: &Value, schema: &Value, v: &Value, path: &str, errors: &mut Vec<String>) {
    // The one reference across files: a scenario point's load result.
    if schema.get("$ref").and_then(Value::as_str) == Some("load-result.schema.json") {
        let load: Value = serde_json::from_str(SCHEMA).unwrap();
        return check(&load, &load, v, path, errors);
    }
    let schema = resolve(root, schema);
    if let Some(alts) = schema.get("oneOf").and_then(Value::as_array) {
        let fits = alts.iter().filter(|a| {
            let mut e = Vec::new();
            check(root, a, v, path, &mut e);
            e.is_empty()
        });
        if fits.count() != 1 {
            errors.push(format!("{path}: matches not exactly one alternative"));
        }
        return;
    }
    if let Some(c) = schema.get("const") {
        if c != v {
            errors.push(format!("{path}: {v} is not {c}"));
        }
    }
    if let Some(e) = schema.get("enum").and_then(Value::as_array) {
        if !e.contains(v) {
            errors.push(format!("{path}: {v} not in {e:?}"));
        }
    }
    match schema.get("type") {
        Some(Value::String(t)) if !type_ok(t, v) => errors.push(format!("{path}: {v} is not {t}")),
        Some(Value::Array(ts)) if !ts.iter().any(|t| type_ok(t.as_str().unwrap(), v)) => {
            errors.push(format!("{path}: {v} is none of {ts:?}"))
        }
        _ => {}
    }
    if let (Some(min), Some(n)) = (schema.get("minimum").and_then(Value::as_f64), v.as_f64()) {
        if n < min {
            errors.push(format!("{path}: {n} < {min}"));
        }
    }
    if let Some(obj) = v.as_object() {
        let props = schema.get("properties").and_then(Value::as_object);
        for req in schema
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if !obj.contains_key(req.as_str().unwrap()) {
                errors.push(format!(
                    "{path}: missing required `{}`",
                    req.as_str().unwrap()
                ));
            }
        }
        for (k, val) in obj {
            match props.and_then(|p| p.get(k)) {
                Some(s) => check(root, s, val, &format!("{path}.{k}"), errors),
                None if schema.get("additionalProperties") == Some(&Value::Bool(false)) => {
                    errors.push(format!("{path}: `{k}` is not in the schema"))
                }
                None => {}
            }
        }
    }
    if let Some(arr) = v.as_array() {
        // 2020-12 tuples: `prefixItems` for the first items, `items` for the rest (`false`:
        // no more), `minItems`.
        let prefix = schema.get("prefixItems").and_then(Value::as_array);
        let first = prefix.map_or(0, Vec::len);
        for (i, (s, x)) in prefix.into_iter().flatten().zip(arr).enumerate() {
            check(root, s, x, &format!("{path}[{i}]"), errors);
        }
        match schema.get("items") {
            Some(Value::Bool(false)) if arr.len() > first => {
                errors.push(format!("{path}: more than {first} items"))
            }
            Some(items @ Value::Object(_)) => {
                for (i, x) in arr.iter().enumerate().skip(first) {
                    check(root, items, x, &format!("{path}[{i}]"), errors);
                }
            }
            Some(Value::Array(_)) => errors.push(format!(
                "{path}: the schema uses the tuple form of `items`, which 2020-12 does not have"
            )),
            _ => {}
        }
        if let Some(min) = schema.get("minItems").and_then(Value::as_u64) {
            if (arr.len() as u64) < min {
                errors.push(format!("{path}: fewer than {min} items"));
            }
        }
    }
}

/// The schemas themselves are valid JSON Schema 2020-12 (issue 25, item 22), as a standard
/// validator reads them (Python's `jsonschema`, which the test script installs).
#[test]
fn the_schemas_are_valid_2020_12_schemas() {
    let ok = std::process::Command::new("python3")
        .args(["-c", "import jsonschema"])
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "python3 jsonschema is missing (scripts/install-test-deps.sh installs it)"
        );
        eprintln!("skipped: python3 jsonschema is not installed");
        return;
    }
    for file in [
        "results.schema.json",
        "report.schema.json",
        "load-result.schema.json",
    ] {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/").to_string() + file;
        let out = std::process::Command::new("python3")
            .args([
                "-c",
                "import json, sys, jsonschema; jsonschema.Draft202012Validator.check_schema(json.load(open(sys.argv[1])))",
                &path,
            ])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{file}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

fn assert_fits(v: &Value) {
    assert_fits_schema(SCHEMA, v);
}

fn assert_fits_schema(schema: &str, v: &Value) {
    let root: Value = serde_json::from_str(schema).unwrap();
    let mut errors = Vec::new();
    check(&root, &root, v, "$", &mut errors);
    assert!(
        errors.is_empty(),
        "output does not fit the schema:\n{}",
        errors.join("\n")
    );
}

#[test]
fn closed_and_open_loop_output_fit_the_committed_schema() {
    let Some(ng) = common::start_nginx() else {
        return;
    };
    assert_fits(&common::bakeoff_json(&[
        "load",
        "-n",
        "100",
        "-c",
        "2",
        &ng.url("/index.html"),
    ]));
    // Every call fails (404): exit 2, the result printed all the same.
    let open = common::bakeoff_json_exit(
        &[
            "load",
            "-q",
            "400",
            "-n",
            "100",
            "-c",
            "2",
            &ng.url("/missing"),
        ],
        2,
    );
    assert!(open["service_time_us"].is_object());
    assert_fits(&open);
}

#[test]
fn the_checker_rejects_what_the_schema_forbids() {
    let root: Value = serde_json::from_str(SCHEMA).unwrap();
    let mut errors = Vec::new();
    let bad = serde_json::json!({"schema_version": 2, "pacing": "sideways", "extra": 1});
    check(&root, &root, &bad, "$", &mut errors);
    let text = errors.join("\n");
    assert!(text.contains("missing required `requests`"), "{text}");
    assert!(text.contains("`extra` is not in the schema"), "{text}");
    assert!(text.contains("sideways"), "{text}");
    assert!(text.contains("is not 1"), "{text}");
}

#[test]
fn results_json_fits_its_committed_schema_including_failures() {
    let Some(nginx) = common::nginx_bin() else {
        return;
    };
    let dir = common::TempDir::new("schema-run");
    let Some(reference) = common::start_nginx() else {
        return;
    };
    let plan = format!(
        r#"name = "schema"
repetitions = 1
baseline = "good"
{}
[[contender]]
name = "broken"
command = ["sh", "-c", "exit 4"]

[[scenario]]
name = "index"
http = "GET /index.html?size={{size}}"
matrix = {{ size = [1, 2] }}
requests = 50

[[compat]]
http = "GET /{{case}}"
requests = ["index.html", "missing"]
[compat.reference]
endpoint = "{}"
http = "GET /{{case}}"
fields = [{{ ours = "", theirs = "", transform = ["string"], ours_transform = ["string"] }}]
"#,
        common::nginx_contender("good", &nginx, dir.path()),
        reference.url("/")
    );
    let run = common::run_plan(dir.path(), &plan, &[]);
    let r = &run.results;
    assert_eq!(r["runs"].as_array().unwrap().len(), 2, "{r}");
    assert_eq!(r["runs"][0]["points"][1]["vars"]["size"], "2", "{r}");
    assert_eq!(r["runs"][1]["status"], "failed", "{r}");
    assert_eq!(r["runs"][0]["compat"].as_array().unwrap().len(), 2, "{r}");
    assert_eq!(r["compat_reference"].as_array().unwrap().len(), 2, "{r}");
    assert_fits_schema(RESULTS_SCHEMA, r);
    // What a budget bought (a paired run's second stage), as the library writes it.
    let mut with_budget = r.clone();
    with_budget["budget"] = serde_json::to_value(bakeoff::results::BudgetSpent {
        budget_s: Some(600.0),
        first_s: 95.5,
        more_s: 130.25,
        more_repetitions: 5,
        points: 2,
        left: 1,
        cut: vec!["get [clients=4]".into()],
    })
    .unwrap();
    assert_fits_schema(RESULTS_SCHEMA, &with_budget);

    // The reports written at the end of the run: Markdown, a CSV per table, JSON that fits
    // its schema; `bakeoff report DIR` writes them again and appends to a GitHub summary.
    let report_dir = run.out_dir.join("report");
    let md = std::fs::read_to_string(report_dir.join("report.md")).unwrap();
    assert!(md.contains("## Start-up"), "{md}");
    // CSV is for tools: one number per cell in base units, the unit in the column's name.
    let csv = std::fs::read_to_string(report_dir.join("startup.csv")).unwrap();
    assert!(
        csv.starts_with("contender,started,runs,first_response_median_s,first_response_min_s,first_response_max_s,"),
        "{csv}"
    );
    let good = csv.lines().find(|l| l.starts_with("good,")).unwrap();
    let first: f64 = good.split(',').nth(3).unwrap().parse().unwrap();
    assert!(first > 0.0 && first < 30.0, "{good}");
    let serving = std::fs::read_to_string(report_dir.join("serving-index.csv")).unwrap();
    let head = serving.lines().next().unwrap();
    assert!(
        head.contains("throughput_median_rps") && head.contains("p99_median_s"),
        "{head}"
    );
    for line in serving.lines().skip(1) {
        let cells: Vec<&str> = line.split(',').collect();
        let at = head
            .split(',')
            .position(|h| h == "throughput_median_rps")
            .unwrap();
        assert!(
            cells[at].parse::<f64>().is_ok(),
            "a number, not display text: {line}"
        );
    }
    assert!(report_dir.join("serving-index.csv").is_file());
    let json: Value =
        serde_json::from_slice(&std::fs::read(report_dir.join("report.json")).unwrap()).unwrap();
    assert_fits_schema(REPORT_SCHEMA, &json);
    assert_eq!(
        json["compat"][0]["sets"][0]["reference"][0]["checked"], 1,
        "{json}"
    );
    std::fs::remove_dir_all(&report_dir).unwrap();
    let summary = dir.path().join("github-summary.md");
    std::fs::write(&summary, "# earlier step\n").unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_bakeoff"))
        .args(["report", run.out_dir.to_str().unwrap()])
        .env("GITHUB_STEP_SUMMARY", &summary)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(report_dir.join("report.json").is_file());
    let s = std::fs::read_to_string(&summary).unwrap();
    assert!(
        s.starts_with("# earlier step\n# schema") && s.contains("## Start-up"),
        "{s}"
    );
    // The results file itself is taken too, as `compare` takes it.
    let file = run.out_dir.join("results.json");
    let out = common::bakeoff(&["report", file.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("## Start-up"));
}

#[test]
fn every_kind_of_finding_fits_the_report_schema() {
    use bakeoff::diagnose::Finding;
    let root: Value = serde_json::from_str(REPORT_SCHEMA).unwrap();
    let findings = [
        Finding::MostCallsFailed {
            contender: "v2".into(),
            places: vec!["get [clients=1]".into()],
            failed: 99,
            of: 100,
            example: "connect error: refused".into(),
        },
        Finding::StallBand {
            contender: "v1".into(),
            places: vec!["get [clients=1]".into()],
            share: 0.98,
            floor: true,
            contender_cores: Some(0.01),
            check: Some(bakeoff::diagnose::StallCheck {
                confirmed: Some(true),
                place: "get [clients=1]".into(),
                p50_before_us: 44_000,
                p50_after_us: Some(80),
                p99_before_us: 45_000,
                p99_after_us: Some(200),
                sockets: 2,
                cleared_by_server: 1,
                why: None,
            }),
        },
        Finding::GeneratorSaturated {
            contender: "v2".into(),
            place: "get [clients=8]".into(),
            utilization: 0.97,
            contender_cores: Some(0.2),
        },
        Finding::Contention {
            contender: "v1".into(),
            place: "get [clients=8]".into(),
            waited: 0.23,
            others: Some(0.31),
            cpus: vec![1],
            points: 2,
            of: 2,
        },
        Finding::OddRepetition {
            contender: "v1".into(),
            place: "get [clients=8]".into(),
            repetition: 1,
            requests_per_s: 12_079.0,
            others: vec![2_456.0, 2_389.0],
            factor: 4.9,
            more: 0,
        },
        Finding::NoisyRepetitions {
            contender: "v2".into(),
            places: vec!["get [clients=1]".into(), "get [clients=8]".into()],
            of: 2,
            worst: "get [clients=1]".into(),
            spread_pct: 21.0,
            repetitions: 3,
        },
        Finding::CpuStolen {
            points: 2,
            of: 12,
            startups: 1,
            startups_of: 4,
            slices: 3,
            slices_of: 40,
            max_share: 0.3,
            worst: "a #2, get [clients=1]".into(),
            mean_share: 0.2,
        },
        Finding::MachineDiffers {
            what: "CPUs allowed".into(),
            seen: vec![
                bakeoff::diagnose::Seen {
                    value: "1 [0]".into(),
                    runs: vec!["a #1".into()],
                },
                bakeoff::diagnose::Seen {
                    value: "2 [0,1]".into(),
                    runs: vec!["a #2".into()],
                },
            ],
        },
        Finding::MachineDisagrees {
            contender: "v2".into(),
            baseline: "v1".into(),
            machine: "node-3".into(),
            figure: "CPU per request".into(),
            there: 1.1,
            elsewhere: 0.8,
            places: vec!["get [clients=1]".into()],
        },
        Finding::TrimmedAway {
            contender: "v2".into(),
            baseline: "v1".into(),
            figure: "throughput".into(),
            table: 0.8,
            paired: "0.968× (0.951×–0.985×)".into(),
            whose: Some("v2".into()),
            rounds: 4,
            places: vec!["get [clients=1]".into()],
        },
    ];
    for f in findings {
        let v = serde_json::to_value(&f).unwrap();
        let mut errors = Vec::new();
        check(&root, &root["$defs"]["finding"], &v, "$", &mut errors);
        assert!(errors.is_empty(), "{v}: {errors:?}");
    }
}

/// The keys the plan features add — each member's start, the leader of a point, a capacity
/// search, a ramp's stages, a reference that is a member — are in the committed schema too.
#[test]
fn results_of_clusters_leaders_capacity_stages_and_member_references_fit_the_schema() {
    let dir = common::TempDir::new("schema-plan-features");
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/after/member.py");
    for (m, role) in [("m1", "follower"), ("m2", "leader")] {
        let d = dir.path().join(m);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("role.json"), format!(r#"{{"role": "{role}"}}"#)).unwrap();
    }
    let (s, root) = (script.display(), dir.path().display());
    let plan = format!(
        r#"name = "features"
repetitions = 1
[[contender]]
name = "pair"
members = 2
leader = {{ http = "/role.json", field = "role", equals = "leader" }}
[[contender.member]]
endpoint = "http://127.0.0.1:{{port:m{{index}}}}"
command = ["python3", "{s}", "{{port:m{{index}}}}", "--root", "{root}/{{member}}"]
ready = {{ http = "http://127.0.0.1:{{port:m{{index}}}}/role.json", status = 200 }}

[[scenario]]
name = "leader"
http = "GET /role.json"
target = "leader"
requests = 10

[[scenario]]
name = "capacity"
http = "GET /role.json"
capacity = {{ p99 = "1s", min_rate = 200, max_rate = 400, step = "300ms", max_steps = 3 }}

[[scenario]]
name = "ramp"
http = "GET /role.json"
stages = [{{ rate = 20, duration = "300ms" }}, {{ rate = 40, duration = "300ms" }}]

[[compat]]
http = "GET /{{case}}"
requests = ["role.json"]
reference = {{ contender = "pair", member = "m2", http = "GET /{{case}}", fields = [{{ ours = "role", theirs = "role" }}] }}
"#
    );
    let run = common::run_plan(dir.path(), &plan, &[]);
    let r = &run.results;
    assert_eq!(r["status"], "complete", "{}", run.stderr());
    let x = &r["runs"][0];
    assert_eq!(x["startup"]["members"].as_array().unwrap().len(), 2, "{x}");
    assert_eq!(x["points"][0]["leader"], "m2", "{x}");
    assert!(
        x["points"][1]["capacity"]["steps"].as_array().is_some(),
        "{x}"
    );
    assert_eq!(x["points"][2]["stage"], 1);
    assert_eq!(r["compat"][0]["reference"]["member"]["member"], "m2");
    assert_fits_schema(RESULTS_SCHEMA, r);
}

#[test]
fn a_shard_and_its_merge_fit_the_schema() {
    let dir = common::TempDir::new("schema-shard");
    let exe = env!("CARGO_BIN_EXE_bakeoff");
    let plan = format!(
        r#"name = "schema shards"
repetitions = 2
baseline = "a"
order = "paired"
paired = {{ judge = ["throughput", "cpu_per_request"] }}

[[contender]]
name = "a"
command = ["{exe}", "demo-server", "v2", "{{port}}", "{{state}}"]
ready = {{ http = "http://127.0.0.1:{{port}}/health", status = 200, timeout = "30s" }}

[[contender]]
name = "b"
like = "a"

[[scenario]]
name = "block"
http = "GET /block/{{rand:0..100}}"
requests = 50
"#
    );
    let path = dir.path().join("plan.toml");
    std::fs::write(&path, plan).unwrap();
    let mut outs = Vec::new();
    for k in 1..=2 {
        let out = dir.path().join(format!("s{k}"));
        // Two machines, as the Kubernetes Job names them: the merged report then has its
        // Machines and by-machine tables.
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_bakeoff"))
            .args(["run", path.to_str().unwrap(), "--shard", &format!("{k}/2")])
            .arg("--out")
            .arg(&out)
            .env("BAKEOFF_MACHINE", format!("node-{k}"))
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let v = common::read_results(&out);
        assert_eq!(v["shards"], serde_json::json!({"of": 2, "have": [k]}));
        assert!(
            v["plan_hash"].as_str().is_some_and(|h| h.len() == 16),
            "{v}"
        );
        assert_fits_schema(RESULTS_SCHEMA, &v);
        outs.push(out);
    }
    let merged = dir.path().join("merged");
    let o = common::bakeoff(&[
        "merge",
        outs[1].to_str().unwrap(),
        outs[0].to_str().unwrap(),
        "--out",
        merged.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v = common::read_results(&merged);
    assert_eq!(v["shards"], serde_json::json!({"of": 2, "have": [1, 2]}));
    assert_eq!(v["runs"].as_array().unwrap().len(), 4);
    assert_eq!(v["runs"][0]["environment"]["machine"], "node-1");
    assert_fits_schema(RESULTS_SCHEMA, &v);
    // The merge judges what the plan named, and says so.
    assert_eq!(
        v["paired"]["judge"],
        serde_json::json!(["cpu_per_request", "throughput"])
    );
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(merged.join("report/report.json")).unwrap())
            .unwrap();
    let ids: Vec<&str> = report["tables"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["id"].as_str())
        .collect();
    assert!(
        ids.contains(&"machines") && ids.contains(&"verdicts-by-machine"),
        "{ids:?}"
    );
    assert_eq!(
        report["error_control"]["figures"],
        serde_json::json!(["cpu_per_request", "throughput"])
    );
    assert_eq!(report["error_control"]["unjudged"], 0);
    assert_fits_schema(REPORT_SCHEMA, &report);
}

#[test]
fn a_what_if_variant_a_confirmation_and_a_profile_fit_the_schema() {
    let dir = common::TempDir::new("schema-whatif");
    let plan = format!(
        "name = \"schema what-if\"\nrepetitions = 1\n{}what_if = [\"nodelay\"]\n\n[[scenario]]\nname = \"get\"\nhttp = \"/\"\nclients = 1\nrequests = 30\nprofile = true\n",
        common::faulty_contender("floor", "nagle", 0),
    );
    let run = common::run_plan(dir.path(), &plan, &[]);
    assert!(run.output.status.success(), "{}", run.stderr());
    let v = &run.results;
    let runs = v["runs"].as_array().unwrap();
    assert!(runs.iter().any(|r| r["what_if"].is_object()), "{v}");
    assert!(
        runs.iter()
            .any(|r| r["confirmations"].as_array().is_some_and(|c| !c.is_empty())),
        "{v}"
    );
    assert_fits_schema(RESULTS_SCHEMA, v);
    let report: Value = serde_json::from_str(
        &std::fs::read_to_string(run.out_dir.join("report/report.json")).unwrap(),
    )
    .unwrap();
    assert_fits_schema(REPORT_SCHEMA, &report);
}

/// Contenders built from source, one built and one whose build failed: their provenance and
/// build cost fit the schema (docs/from-source.md).
#[test]
fn contenders_built_from_source_fit_the_schema() {
    let dir = common::TempDir::new("schema-source");
    let src = dir.path().join("srv");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(
        src.join("server.py"),
        "import http.server, sys\nhttp.server.ThreadingHTTPServer(('127.0.0.1', int(sys.argv[1])), http.server.SimpleHTTPRequestHandler).serve_forever()\n",
    )
    .unwrap();
    let plan = r#"name = "schema source"
repetitions = 1
[[contender]]
name = "built"
source = { path = "srv" }
build = [["cp", "server.py", "s.py"]]
command = ["python3", "{source}/s.py", "{port}"]
ready = { http = "http://127.0.0.1:{port}/", timeout = "20s" }
[[contender]]
name = "unbuilt"
like = "built"
build = [["false"]]
[[scenario]]
name = "get"
http = "/"
requests = 5
"#;
    let run = common::run_plan(dir.path(), plan, &[]);
    let r = run.results.clone();
    let sources: Vec<&Value> = r["contenders"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| &c["source"])
        .collect();
    assert!(sources[0]["build"]["seconds"].is_number(), "{r}");
    assert!(
        sources[1]["error"]
            .as_str()
            .unwrap()
            .contains("build failed"),
        "{r}"
    );
    assert_fits_schema(RESULTS_SCHEMA, &r);
}

/// A delay variant (issue 28): its `edge` record, its `PORT+HOLD` identity, the edges table
/// and the proxy's finding fit both schemas.
#[test]
fn a_delay_variant_and_its_slope_fit_the_schema() {
    let dir = common::TempDir::new("schema-edge");
    let member =
        |name: &str, n: u32, mode: &str| common::edge_contender(name, n, mode, r#""1ms", "2ms""#);
    // A back that names `{port:back}` (in its environment) but listens elsewhere: the
    // proxy cannot reach it.
    let misdirected = member("misdirected", 1, "seq")
        .replace(
            r#""back", "{port:back}"]"#,
            r#""back", "{port:other}"]
env = { UNUSED = "{port:back}" }"#,
        )
        .replace(
            r#"ready = { http = "http://127.0.0.1:{port:front}/", timeout = "30s" }"#,
            r#"ready = { tcp = "127.0.0.1:{port:front}", timeout = "30s" }"#,
        )
        .replace(
            r#"ready = { tcp = "127.0.0.1:{port:back}", timeout = "30s" }"#,
            r#"ready = { tcp = "127.0.0.1:{port:other}", timeout = "30s" }"#,
        );
    let plan = format!(
        "name = \"edge schema\"\nrepetitions = 1\norder = \"sequential\"\n{}{}{misdirected}\n[[scenario]]\nname = \"get\"\nhttp = \"/\"\nrequests = 30\ntimeout = \"2s\"\n",
        member("calls", 1, "seq"),
        member("never", 1, "none")
    );
    let run = common::run_plan(dir.path(), &plan, &[]);
    let r = &run.results;
    assert_eq!(r["status"], "complete", "{}", run.stderr());
    assert!(r["runs"][1]["edge"]["chunks"].as_u64().unwrap() > 0, "{r}");
    assert_fits_schema(RESULTS_SCHEMA, r);
    let report: Value = serde_json::from_str(
        &std::fs::read_to_string(run.out_dir.join("report/report.json")).unwrap(),
    )
    .unwrap();
    assert!(
        report["findings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["kind"] == "edge_unused"),
        "{}",
        report["findings"]
    );
    assert!(
        report["findings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["kind"] == "edge_unreached" && f["contender"] == "misdirected+back+1ms"),
        "{}",
        report["findings"]
    );
    assert_fits_schema(REPORT_SCHEMA, &report);
}
