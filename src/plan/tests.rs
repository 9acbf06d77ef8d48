//! Plan checks: what a good plan becomes, and the message each mistake gets.

use std::path::Path;
use std::time::Duration;

use super::*;

fn parse(text: &str) -> Result<Plan, PlanError> {
    Plan::parse(Path::new("plan.toml"), text)
}

fn err(text: &str) -> String {
    parse(text)
        .expect_err("the plan should be rejected")
        .to_string()
}

const ONE: &str = r#"
name = "t"
[[contender]]
name = "a"
command = ["srv", "--port", "{port}"]
"#;

#[test]
fn a_small_plan_gets_its_defaults() {
    let p = parse(&format!(
        "{ONE}\n[[scenario]]\nname = \"s\"\nhttp = \"/\"\n"
    ))
    .unwrap();
    assert_eq!(p.repetitions, 3);
    assert_eq!(p.order, Order::Interleaved);
    let m = &p.contenders[0].members[0];
    assert_eq!(m.endpoint, "http://127.0.0.1:{port}");
    assert!(matches!(&m.ready.check, Check::Tcp(a) if a == "127.0.0.1:{port}"));
    let s = &p.scenarios[0];
    assert_eq!(s.stop, Stop::Duration(Duration::from_secs(10)));
    assert_eq!(s.points.len(), 1);
    assert_eq!(s.points[0].label(), "clients=1");
    assert!(matches!(&s.call, Call::Http { method, path, .. } if method == "GET" && path == "/"));
}

#[test]
fn the_matrix_expands_target_then_variables_then_clients() {
    let p = parse(&format!(
        "{ONE}\n[[scenario]]\nname = \"r\"\nhttp = \"GET /k/{{key_size}}\"\n\
         matrix = {{ key_size = [64, 256] }}\nclients = [64, 1]\ntarget = [\"first\", \"all\"]\n"
    ))
    .unwrap();
    let labels: Vec<String> = p.scenarios[0].points.iter().map(|p| p.label()).collect();
    assert_eq!(labels.len(), 8);
    assert_eq!(labels[0], "key_size=64 clients=1 target=first");
    assert_eq!(labels[1], "key_size=64 clients=64 target=first");
    assert_eq!(labels[2], "key_size=256 clients=1 target=first");
    assert_eq!(labels[7], "key_size=256 clients=64 target=all");
    let call = p.scenarios[0]
        .call
        .with_vars(&p.scenarios[0].points[2].vars.0);
    assert!(matches!(call, Call::Http { path, .. } if path == "/k/256"));
    let smoke = p.smoke();
    assert_eq!(smoke.repetitions, 1);
    // Every point is tried, at one request per client of the widest point.
    assert_eq!(smoke.scenarios[0].points.len(), 8);
    assert_eq!(smoke.scenarios[0].stop, Stop::Count(64));
}

#[test]
fn unknown_keys_name_the_place_and_the_nearest_key() {
    let e = err(&format!(
        "{ONE}\n[[scenario]]\nname = \"s\"\nhttp = \"/\"\nclinets = 4\n"
    ));
    assert!(
        e.starts_with("plan.toml:10:1: unknown key `clinets`; did you mean `clients`?"),
        "{e}"
    );
    let e = err("name = \"t\"\nrepetitons = 3\n");
    assert!(
        e.contains("plan.toml:2:1") && e.contains("`repetitions`"),
        "{e}"
    );
}

#[test]
fn bad_values_point_at_the_value() {
    let e = err(&format!(
        "{ONE}\n[[scenario]]\nname = \"s\"\nhttp = \"/\"\nclients = [1, 0]\n"
    ));
    assert!(
        e.starts_with("plan.toml:10:11: `clients` must be at least 1"),
        "{e}"
    );
    let e = err(&format!(
        "{ONE}\n[[scenario]]\nname = \"s\"\nhttp = \"/\"\nduration = \"10 parsecs\"\n"
    ));
    assert!(
        e.starts_with("plan.toml:10:12:") && e.contains("parsecs"),
        "{e}"
    );
    let e = err(&format!("baseline = \"b\"\n{ONE}"));
    assert!(
        e.starts_with("plan.toml:1:12: no contender is named `b`"),
        "{e}"
    );
    let e = err(&format!("baseline = \"aa\"\n{ONE}"));
    assert!(e.contains("did you mean `a`?"), "{e}");
    let e = err(&format!(
        "cores = {{ contender = [0, 1], load = [1] }}\n{ONE}"
    ));
    assert!(e.contains("CPU 1 is in both"), "{e}");
    let e = err(&format!("{ONE}\n[[scenario]]\nname = \"s\"\nhttp = \"/k/{{key_sise}}\"\nmatrix = {{ key_size = [1] }}\n"));
    assert!(
        e.contains("`{key_sise}` is not a matrix variable; did you mean `{key_size}`?"),
        "{e}"
    );
    let e = err(&format!(
        "{ONE}\n[[scenario]]\nname = \"s\"\nhttp = \"/\"\nreplies = 2\n"
    ));
    assert!(e.contains("are for streaming gRPC calls"), "{e}");
    let e = err(&format!(
        "{ONE}\n[[scenario]]\nname = \"s\"\nhttp = \"/\"\ntls = {{ cert = \"c.pem\" }}\n"
    ));
    assert!(e.contains("`cert` and `key` go together"), "{e}");
    let e = err(&format!(
        "{ONE}\n[[scenario]]\nname = \"s\"\nhttp = \"/\"\njsonrpc = \"m\"\n"
    ));
    assert!(
        e.contains("exactly one of `grpc`, `http` or `jsonrpc`"),
        "{e}"
    );
    let e = err("name = \"t\"\n[[contender]]\nname = \"a\"\n");
    assert!(
        e.starts_with("plan.toml:3:8:") && e.contains("needs a `command`"),
        "{e}"
    );
    let e = err("name = \"t\"\n[[contender]]\nname = \"a\"\ncommand = [\"x\"]\nready = { tcp = \"h:1\", http = \"http://h/\" }\n");
    assert!(e.contains("exactly one of `tcp`"), "{e}");
    let e = err(
        "name = \"t\"\n[[contender]]\nname = \"a\"\ncommand = [\"x\"]\nready = { log = \"(\" }\n",
    );
    assert!(e.contains("not a valid regular expression"), "{e}");
    let e = err("name = \"t\"\nrepetitions = \"three\"\n");
    assert!(e.starts_with("plan.toml:2:15:"), "{e}");
    let e = err("name = \"t\"\n[[contender]]\nname = \"a\"\ncommand = [\"x\"]\n[[contender]]\nname = \"a\"\ncommand = [\"y\"]\n");
    assert!(e.contains("two contenders are named `a`"), "{e}");
}

#[test]
fn clusters_have_members_with_their_own_state_and_probes() {
    let p = parse(
        r#"
name = "c"
[[contender]]
name = "x3"
baseline = "x3"
ready_when = { log = "index built" }
[[contender.member]]
name = "m1"
command = ["srv", "{port:c1}"]
endpoint = "http://127.0.0.1:{port:c1}"
[[contender.member]]
name = "m2"
command = ["srv", "{port:c2}"]
endpoint = "http://127.0.0.1:{port:c2}"
ready = { http = "http://127.0.0.1:{port:c2}/health", status = 200, attempt_timeout = "250ms" }
"#,
    )
    .unwrap();
    let c = &p.contenders[0];
    assert_eq!(c.members.len(), 2);
    assert!(matches!(&c.members[0].ready.check, Check::Tcp(a) if a == "127.0.0.1:{port:c1}"));
    assert_eq!(
        c.members[1].ready.attempt_timeout,
        Duration::from_millis(250)
    );
    assert!(
        matches!(&c.ready_when, Some(Probe { check: Check::Log(r), .. }) if r == "index built")
    );
    assert_eq!(p.baseline_of("x3"), None);
}

#[test]
fn compat_sections_collect_their_cases_from_everywhere() {
    let dir = std::env::temp_dir().join(format!("bakeoff-plan-compat-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("cases.jsonl"),
        "# a comment\n{\"id\": 1}\n\n{\"id\": 2}\n",
    )
    .unwrap();
    let text = format!(
        "{ONE}\n[[compat]]\nhttp = \"POST /api\"\ncases = \"cases.jsonl\"\nrequests = ['x', {{ id = 3 }}]\n\
         generate = {{ count = 3, request = '{{\"id\": {{seq}}}}' }}\nmode = \"record_only\"\nignore = [\"header\"]\n"
    );
    let p = Plan::parse(&dir.join("plan.toml"), &text).unwrap();
    let s = &p.compat[0];
    assert_eq!(s.name, "POST /api");
    assert_eq!(s.mode, CompatMode::RecordOnly);
    let got: Vec<(&str, &str)> = s
        .cases
        .iter()
        .map(|c| (c.request.as_str(), c.origin.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            ("{\"id\": 1}", "cases.jsonl:2"),
            ("{\"id\": 2}", "cases.jsonl:4"),
            ("x", "requests[0]"),
            ("{\"id\":3}", "requests[1]"),
            ("{\"id\": 0}", "generate #0"),
            ("{\"id\": 1}", "generate #1"),
            ("{\"id\": 2}", "generate #2"),
        ]
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn compat_mistakes_are_pointed_at() {
    let e = err(&format!("{ONE}\n[[compat]]\nhttp = \"POST /\"\n"));
    assert!(e.contains("needs requests"), "{e}");
    // Cases are all kept for the run: what they may add up to is checked before any is
    // made (100,000 of up to 60 MB would be 6 TB).
    let e = err(&format!(
        "{ONE}\n[[compat]]\nhttp = \"POST /\"\ngenerate = {{ count = 100000, request = '{{fill:60000000:x}}' }}\n"
    ));
    assert!(
        e.contains("100000 cases of a request of up to 60000000 bytes")
            && e.contains("more than the 256 MiB")
            && e.contains(":"),
        "{e}"
    );
    // The limit is for every section's cases together: four of 100 MB each were 1.6 GB.
    let set = |n: u32| {
        format!("[[compat]]\nname = \"s{n}\"\nhttp = \"POST /\"\ngenerate = {{ count = 100000, request = '{{fill:1000:x}}' }}\n")
    };
    let e = err(&format!("{ONE}\n{}{}{}{}", set(1), set(2), set(3), set(4)));
    assert!(
        e.contains("100000 cases of a request of up to 1000 bytes")
            && e.contains("left of the 256 MiB the [[compat]] sections' cases may hold in all"),
        "{e}"
    );
    // A cases file is read as a regular file of bounded size: not /dev/zero.
    let dir = std::env::temp_dir().join(format!("bakeoff-plan-cases-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let _ = std::fs::remove_file(dir.join("zero.jsonl"));
    std::os::unix::fs::symlink("/dev/zero", dir.join("zero.jsonl")).unwrap();
    let e = Plan::parse(
        &dir.join("plan.toml"),
        &format!("{ONE}\n[[compat]]\nhttp = \"POST /\"\ncases = \"zero.jsonl\"\n"),
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("cannot read cases file") && e.contains("not a regular file"),
        "{e}"
    );
    std::fs::remove_dir_all(dir).unwrap();
    let e = err(&format!(
        "protos = [\"examples/etcd/protos/rpc.proto\"]\n{ONE}\n[[compat]]\ngrpc = \"a.B/C\"\nrequests = ['not json']\n"
    ));
    assert!(e.contains("a gRPC request is a JSON object"), "{e}");
    let e = err(&format!(
        "protos = [\"examples/etcd/protos/rpc.proto\"]\n{ONE}\n[[compat]]\ngrpc = \"a.B/C\"\nrequests = ['raw:%%%']\n"
    ));
    assert!(e.contains("base64"), "{e}");
    let e = err(&format!(
        "{ONE}\n[[compat]]\nhttp = \"POST /\"\nrequests = ['x']\nmode = \"maybe\"\n"
    ));
    assert!(e.contains("`mode` is `must_match` or `record_only`"), "{e}");
    let e = err(&format!("{ONE}noise_of = \"b\"\n"));
    assert!(e.contains("no contender is named `b`"), "{e}");
    let e = err(&format!("{ONE}noise_of = \"a\"\n"));
    assert!(e.contains("`noise_of` names another contender"), "{e}");
}

#[test]
fn paired_is_the_default_order_when_there_is_something_to_compare() {
    let two = |extra: &str| {
        parse(&format!(
            "name = \"t\"\n{extra}\n[[contender]]\nname = \"a\"\ncommand = [\"srv\"]\n\
             [[contender]]\nname = \"b\"\ncommand = [\"srv\"]\n\
             [[scenario]]\nname = \"s\"\nhttp = \"/\"\n"
        ))
    };
    let p = two("baseline = \"a\"").unwrap();
    assert_eq!(p.order, Order::Paired);
    assert_eq!(p.paired, Paired::default());
    // Nothing compared: nothing to pair.
    assert_eq!(two("").unwrap().order, Order::Interleaved);
    let p = two("baseline = \"a\"\norder = \"interleaved\"").unwrap();
    assert_eq!(p.order, Order::Interleaved);
    let p = two("baseline = \"a\"\npaired = { slice = \"250ms\", rounds = 8, noise = \"2%\" }")
        .unwrap();
    assert_eq!(p.paired.slice, Some(Duration::from_millis(250)));
    assert_eq!(p.paired.rounds, Rounds::Fixed(8));
    assert!((p.paired.noise - 0.02).abs() < 1e-12);
    let p = two("baseline = \"a\"\npaired = { rounds = \"duration\" }").unwrap();
    assert_eq!(p.paired.rounds, Rounds::Duration);
    let e = two("baseline = \"a\"\npaired = { rounds = \"duration\", precision = \"1%\" }")
        .unwrap_err();
    assert!(e.to_string().contains("are for `rounds = \"auto\"`"), "{e}");
    let p = two("baseline = \"a\"\npaired = { max_rounds = 12, precision = \"1%\" }").unwrap();
    assert_eq!(
        p.paired.rounds,
        Rounds::Auto {
            max: Some(12),
            precision: 0.01
        }
    );
    assert_eq!(Paired::default().slice, None, "slices are auto by default");
    let p = two("baseline = \"a\"\npaired = { slice = \"auto\" }").unwrap();
    assert_eq!(p.paired.slice, None);
    assert_eq!(
        p.paired.rounds,
        Rounds::Auto {
            max: None,
            precision: 0.02
        }
    );
    let p = two("baseline = \"a\"\npaired = { equivalence = \"3%\", fdr = \"1%\" }").unwrap();
    assert!((p.paired.equivalence - 0.03).abs() < 1e-12);
    assert!((p.paired.fdr - 0.01).abs() < 1e-12);
    assert!((Paired::default().equivalence - 0.02).abs() < 1e-12);
    assert_eq!(
        p.paired.max_repetitions, None,
        "no more repetitions unless asked"
    );
    let p = two("baseline = \"a\"\npaired = { max_repetitions = 8 }").unwrap();
    assert_eq!(p.paired.max_repetitions, Some(8));
    assert!(
        p.paired.judge.is_all(),
        "every figure is judged unless named"
    );
    let p = two("baseline = \"a\"\npaired = { judge = [\"throughput\", \"cpu_per_request\"] }")
        .unwrap();
    assert_eq!(p.paired.judge.keys(), ["cpu_per_request", "throughput"]);
    assert!(!p.paired.judge.has("p99"));
}

#[test]
fn paired_settings_that_make_no_sense_are_errors_at_their_place() {
    let e = |paired: &str| {
        err(&format!(
            "name = \"t\"\npaired = {paired}\n[[contender]]\nname = \"a\"\ncommand = [\"srv\"]\n"
        ))
    };
    assert!(e("{ rounds = \"lots\" }")
        .contains("`paired.rounds` is \"auto\", \"duration\" or a number"));
    assert!(e("{ rounds = 0 }").contains("`paired.rounds`"));
    assert!(e("{ noise = \"1\" }").contains("`paired.noise` is a percentage"));
    assert!(e("{ noise = \"150%\" }").contains("`paired.noise`"));
    assert!(e("{ slice = \"0s\" }").contains("`paired.slice` must be longer than 0"));
    assert!(e("{ max_rounds = 1 }").contains("between 2 and 10000"));
    assert!(e("{ rounds = 6, precision = \"2%\" }").contains("are for `rounds = \"auto\"`"));
    assert!(e("{ slices = \"1s\" }").contains("slices"));
    assert!(e("{ equivalence = \"two\" }").contains("`paired.equivalence` is a percentage"));
    let fdr = e("{ fdr = \"10%\" }");
    assert!(
        fdr.contains("`paired.fdr`") && fdr.contains("at most 5%"),
        "{fdr}"
    );
    assert!(e("{ fdr = \"0%\" }").contains("`paired.fdr`"));
    assert!(e("{ max_repetitions = 1 }").contains("between 2 and 1000"));
    let judge = e("{ judge = [\"cpu_per_request\", \"latency\"] }");
    assert!(
        judge.contains(
            "`paired.judge` names figures, and \"latency\" is none: cpu_per_request, cpu_per_item"
        ),
        "{judge}"
    );
    // The error points at the name that is wrong: line 2, column 40.
    assert!(judge.contains(":2:40"), "{judge}");
    assert!(e("{ judge = [] }").contains("at least one figure"));
    // Only CPU per item, and no gRPC call that could stream: no verdict would come of it.
    let item = err("name = \"t\"\nbaseline = \"a\"\npaired = { judge = [\"cpu_per_item\"] }\n[[contender]]\nname = \"a\"\ncommand = [\"srv\"]\n[[contender]]\nname = \"b\"\ncommand = [\"srv\"]\n[[scenario]]\nname = \"s\"\nhttp = \"GET /\"\n");
    assert!(
        item.contains("names only cpu_per_item") && item.contains("plan.toml:3:"),
        "{item}"
    );
    let below = e("{ max_repetitions = 2 }");
    assert!(
        below.contains("plan.toml:2:") && below.contains("below `repetitions` (3)"),
        "{below}"
    );
    let o =
        err("name = \"t\"\norder = \"random\"\n[[contender]]\nname = \"a\"\ncommand = [\"srv\"]\n");
    assert!(
        o.contains("`order` is `paired`, `interleaved` or `sequential`"),
        "{o}"
    );
    assert!(o.contains("plan.toml:2:"), "{o}");
}

#[test]
fn what_would_fail_after_start_is_caught_before() {
    let with = |contender_extra: &str| {
        err(&format!(
            "name = \"t\"\n[[contender]]\nname = \"a\"\n{contender_extra}\n"
        ))
    };
    let e = with("command = [\"srv\", \"--port\", \"{port\"]");
    assert!(
        e.contains("a placeholder is cut short; write {port} or {port:NAME}"),
        "{e}"
    );
    let e = with("command = [\"srv\", \"--p={port:}\"]");
    assert!(e.contains("cut short"), "{e}");
    let e = with("command = [\"srv\", \"{env:HOME\"]");
    assert!(e.contains("write {env:NAME}"), "{e}");
    let e = with("command = [\"srv\"]\nendpoint = \"ftp://127.0.0.1:{port}\"");
    assert!(e.contains("is not an http:// or https:// endpoint"), "{e}");
    let e = with("command = [\"srv\"]\ndir = \"/nonexistent/folder\"");
    assert!(
        e.contains("its `dir` `/nonexistent/folder` is not a folder"),
        "{e}"
    );
    let e = err(&format!("protos = [\"plan.toml\"]\n{ONE}"));
    assert!(e.contains("`plan.toml` is not a .proto file"), "{e}");
    let e = err(&format!(
        "{ONE}\n[[scenario]]\nname = \"s\"\nhttp = \"/\"\nduration = \"1000000000000000h\"\n"
    ));
    assert!(
        e.contains("out of range") || e.contains("longer than 30 days"),
        "{e}"
    );
    let e = err(&format!(
        "{ONE}\n[[scenario]]\nname = \"s\"\nhttp = \"/\"\nduration = \"31d\"\n"
    ));
    assert!(e.contains("days are not a unit here"), "{e}");
    // An exponent is not read as the unit (`e9ms` is not a time unit), nor days as `d`.
    let e = parse_duration("1e9ms").unwrap_err();
    assert!(
        e.contains("`1e9ms`: write the number without an exponent"),
        "{e}"
    );
    assert!(parse_duration("1e99d")
        .unwrap_err()
        .contains("without an exponent"));
    assert!(parse_duration("5parsecs")
        .unwrap_err()
        .contains("`parsecs` is not a time unit"));
    assert!(parse_duration("800h")
        .unwrap_err()
        .contains("longer than 30 days"));
    // Well-formed placeholders pass.
    assert!(parse(&format!("{ONE}\n")).is_ok());
}

#[test]
fn serde_internals_do_not_reach_the_user() {
    let e = err(&format!(
        "{ONE}\n[[scenario]]\nname = \"s\"\nhttp = \"/\"\nclients = \"many\"\n"
    ));
    assert!(e.contains("expected one value or a list of them"), "{e}");
    assert!(!e.contains("untagged"), "{e}");
    let probe = |status: &str| {
        err(&format!(
            "name = \"t\"\n[[contender]]\nname = \"a\"\ncommand = [\"srv\"]\nready = {{ http = \"http://127.0.0.1:{{port}}/\", status = {status} }}\n"
        ))
    };
    assert!(probe("999").contains("`status` is an HTTP status, from 100 to 599"));
    let e = probe("99999");
    assert!(e.contains("expected a whole number from 0 to 65535"), "{e}");
}

#[test]
fn a_placeholder_nobody_fills_is_an_error_not_text() {
    let e = err(&format!(
        "{ONE}\n[[scenario]]\nname = \"s\"\nhttp = \"POST /\"\nbody = '{{\"a\": \"{{rnd:1..5}}\"}}'\n"
    ));
    assert!(
        e.contains("`{rnd:…}` is not a placeholder (rand, line, b64, fill, edge, env are)"),
        "{e}"
    );
}

/// One contender served over TLS.
const ONE_TLS: &str = r#"
name = "t"
[[contender]]
name = "a"
command = ["srv", "--port", "{port}"]
endpoint = "https://127.0.0.1:{port}"
"#;

#[test]
fn tls_settings_no_endpoint_would_use_are_refused() {
    let tls = "tls = { cacert = \"ca.pem\" }";
    let e = err(&format!(
        "{ONE}\n[[scenario]]\nname = \"s\"\nhttp = \"/\"\n{tls}\n"
    ));
    assert!(
        e.starts_with("plan.toml:10:7:")
            && e.contains("every contender's endpoint is plain HTTP (`http://127.0.0.1:{port}`)"),
        "{e}"
    );
    let e = err(&format!(
        "{ONE}\n[[compat]]\nhttp = \"GET /{{case}}\"\nrequests = [\"a\"]\n{tls}\n"
    ));
    assert!(e.contains("`tls` of this compat set"), "{e}");
    let e = err(&format!(
        "{ONE_TLS}\n[[compat]]\nhttp = \"GET /{{case}}\"\nrequests = [\"a\"]\nreference = {{ endpoint = \"http://127.0.0.1:9\", http = \"GET /{{case}}\", fields = [{{ ours = \"x\", theirs = \"x\" }}], {tls} }}\n"
    ));
    assert!(e.contains("`tls` of this reference"), "{e}");
    let e = err(&format!(
        "{ONE}ready = {{ http = \"http://127.0.0.1:{{port}}/\", {tls} }}\n"
    ));
    assert!(e.contains("`tls` of this probe"), "{e}");
    let e = err(&format!(
        "{ONE}ready = {{ tcp = \"127.0.0.1:{{port}}\", {tls} }}\n"
    ));
    assert!(e.contains("open no TLS connection"), "{e}");
    // With an https:// endpoint they are used.
    parse(&format!(
        "{ONE_TLS}\n[[scenario]]\nname = \"s\"\nhttp = \"/\"\n{tls}\n"
    ))
    .unwrap();
}

#[test]
fn tls_settings_fill_state_and_env_and_resolve_relative_paths() {
    let p = parse(&format!(
        "{ONE_TLS}\n[[scenario]]\nname = \"s\"\nhttp = \"/\"\ntls = {{ cacert = \"{{state}}/ca.pem\", cert = \"certs/{{env:BAKEOFF_PLAN_TLS_TEST}}.pem\", key = \"/abs/key.pem\", servername = \"{{env:BAKEOFF_PLAN_TLS_TEST}}.example\" }}\n"
    ))
    .unwrap();
    let spec = &p.scenarios[0].tls;
    std::env::set_var("BAKEOFF_PLAN_TLS_TEST", "node1");
    let o = spec.resolve(Some(Path::new("/run/state/a"))).unwrap();
    assert_eq!(o.cacert.as_deref(), Some(Path::new("/run/state/a/ca.pem")));
    // Relative to the plan's folder (here the current one).
    assert_eq!(o.cert.as_deref(), Some(Path::new("certs/node1.pem")));
    assert_eq!(o.key.as_deref(), Some(Path::new("/abs/key.pem")));
    assert_eq!(o.servername.as_deref(), Some("node1.example"));
    // {state} where there is no contender (a reference) is an error that says so.
    let e = spec.resolve(None).unwrap_err();
    assert!(
        e.contains("uses {state}, but there is no contender here"),
        "{e}"
    );
    std::env::remove_var("BAKEOFF_PLAN_TLS_TEST");
    let e = spec.resolve(Some(Path::new("/s"))).unwrap_err();
    assert!(e.contains("{env:BAKEOFF_PLAN_TLS_TEST} is not set"), "{e}");
}

#[test]
fn a_rate_list_is_an_axis_like_clients() {
    let p = parse(&format!(
        "{ONE}\n[[scenario]]\nname = \"s\"\nhttp = \"/\"\nrate = [100, 250.5]\nclients = [1, 4]\n"
    ))
    .unwrap();
    let s = &p.scenarios[0];
    let labels: Vec<String> = s.points.iter().map(|p| p.label()).collect();
    assert_eq!(
        labels,
        [
            "clients=1 rate=100",
            "clients=4 rate=100",
            "clients=1 rate=250.5",
            "clients=4 rate=250.5"
        ]
    );
    assert_eq!(s.points[2].pacing(s.pacing), Pacing::Open { rate: 250.5 });
    // One rate stays the scenario's pacing, with labels as before.
    let p = parse(&format!(
        "{ONE}\n[[scenario]]\nname = \"s\"\nhttp = \"/\"\nrate = 100\n"
    ))
    .unwrap();
    assert_eq!(p.scenarios[0].points[0].label(), "clients=1");
    assert_eq!(
        p.scenarios[0].points[0].pacing(p.scenarios[0].pacing),
        Pacing::Open { rate: 100.0 }
    );
    let e = err(&format!(
        "{ONE}\n[[scenario]]\nname = \"s\"\nhttp = \"/\"\nrate = [100, -1]\n"
    ));
    assert!(e.contains("`rate` must be a positive number"), "{e}");
}

fn show(text: &str) -> String {
    Plan::show(Path::new("plan.toml"), text).unwrap()
}

#[test]
fn like_copies_what_a_contender_leaves_out_and_vars_fill_every_field() {
    let p = parse(
        r#"
name = "t"
[[contender]]
name = "a"
vars = { bin = "/opt/a/srv", flag = "--fast" }
command = ["{bin}", "--port", "{port}", "{flag}"]
env = { MODE = "{flag}", KEEP = "1" }
ready = { http = "http://127.0.0.1:{port}/{flag}", status = 200 }
stop_timeout = "3s"
[[contender]]
name = "b"
like = "a"
vars = { bin = "/opt/b/srv" }
env = { MODE = "slow" }
[[contender]]
name = "c"
like = "b"
command = ["other", "{port}"]
"#,
    )
    .unwrap();
    let [a, b, c] = &p.contenders[..] else {
        panic!("three contenders")
    };
    assert_eq!(
        a.members[0].command,
        ["/opt/a/srv", "--port", "{port}", "--fast"]
    );
    assert_eq!(
        b.members[0].command,
        ["/opt/b/srv", "--port", "{port}", "--fast"]
    );
    assert_eq!(
        b.members[0].env,
        [
            ("KEEP".to_string(), "1".to_string()),
            ("MODE".into(), "slow".into())
        ]
    );
    assert!(
        matches!(&b.members[0].ready.check, Check::Http { url, .. } if url.ends_with("/--fast"))
    );
    assert_eq!(b.stop_timeout, Duration::from_secs(3));
    // A chain: c is like b is like a, its own command winning.
    assert_eq!(c.members[0].command, ["other", "{port}"]);
    assert_eq!(c.stop_timeout, Duration::from_secs(3));
    let shown = show("name = \"t\"\n[[contender]]\nname = \"a\"\nvars = { x = \"1\" }\ncommand = [\"s{x}\"]\n[[contender]]\nname = \"b\"\nlike = \"a\"\n");
    assert!(
        !shown.contains("like") && !shown.contains("vars"),
        "{shown}"
    );
    assert_eq!(shown.matches("command = [\"s1\"]").count(), 2, "{shown}");
}

#[test]
fn a_member_template_makes_n_members_and_join_makes_one_argument() {
    let p = parse(
        r#"
name = "t"
[[contender]]
name = "x3"
members = 3
[[contender.member]]
endpoint = "http://127.0.0.1:{port:c{index}}"
command = ["srv", "--name", "{member}", "--peer", "{port:p{index}}",
           "--cluster", "{join:,:{member}=http://127.0.0.1:{port:p{index}}}", "--me", "{index}"]
"#,
    )
    .unwrap();
    let m = &p.contenders[0].members;
    assert_eq!(
        m.iter().map(|m| m.name.as_str()).collect::<Vec<_>>(),
        ["m1", "m2", "m3"]
    );
    assert_eq!(m[1].endpoint, "http://127.0.0.1:{port:c2}");
    assert_eq!(
        m[2].command,
        [
            "srv",
            "--name",
            "{member}",
            "--peer",
            "{port:p3}",
            "--cluster",
            "m1=http://127.0.0.1:{port:p1},m2=http://127.0.0.1:{port:p2},m3=http://127.0.0.1:{port:p3}",
            "--me",
            "3"
        ]
    );
    // (That port names are collected after the expansion is tests/plan_templates.rs's.)
}

#[test]
fn template_mistakes_are_pointed_at() {
    let base = "name = \"t\"\n[[contender]]\nname = \"a\"\ncommand = [\"s\"]\n";
    let e = err(&format!(
        "{base}[[contender]]\nname = \"b\"\nlike = \"aa\"\n"
    ));
    assert!(
        e.starts_with("plan.toml:7:8:") && e.contains("did you mean `a`"),
        "{e}"
    );
    let e = err("name = \"t\"\n[[contender]]\nname = \"a\"\nlike = \"b\"\n[[contender]]\nname = \"b\"\nlike = \"a\"\n");
    assert!(e.contains("circle") && e.contains("a → b → a"), "{e}");
    let e = err("name = \"t\"\n[[contender]]\nname = \"a\"\nvars = { bin = \"x\" }\ncommand = [\"{bni}\"]\n");
    assert!(
        e.starts_with("plan.toml:5:11:")
            && e.contains("`{bni}`")
            && e.contains("did you mean `{bin}`"),
        "{e}"
    );
    let e = err(
        "name = \"t\"\n[[contender]]\nname = \"a\"\nvars = { port = \"x\" }\ncommand = [\"s\"]\n",
    );
    assert!(e.contains("cannot be a var"), "{e}");
    let e = err("name = \"t\"\n[[contender]]\nname = \"a\"\nmembers = 2\n[[contender.member]]\ncommand = [\"s\"]\n[[contender.member]]\ncommand = [\"s\"]\n");
    assert!(
        e.starts_with("plan.toml:4:11:") && e.contains("exactly one"),
        "{e}"
    );
    let e = err("name = \"t\"\n[[contender]]\nname = \"a\"\nmembers = 0\n[[contender.member]]\ncommand = [\"s\"]\n");
    assert!(e.contains("from 1 to 100"), "{e}");
    let e = err("name = \"t\"\n[[contender]]\nname = \"a\"\nmembers = 2\n[[contender.member]]\nname = \"same\"\ncommand = [\"s\"]\n");
    assert!(e.contains("two members are named `same`"), "{e}");
    let e = err("name = \"t\"\n[[contender]]\nname = \"a\"\nmembers = 2\n[[contender.member]]\ncommand = [\"{join:,:{member}\"]\n");
    assert!(e.contains("not closed"), "{e}");
    // A pattern over a hundred members that would make tens of megabytes: refused before.
    let long = "x".repeat(200_000);
    let e = err(&format!("name = \"t\"\n[[contender]]\nname = \"a\"\nmembers = 100\n[[contender.member]]\ncommand = [\"s\", \"{{join:,:{{member}}{long}}}\"]\n"));
    assert!(
        e.contains("more than 16 MiB of text"),
        "{}",
        &e[..e.len().min(300)]
    );
    // `{join}` alone would reach the program as text.
    let e = err("name = \"t\"\n[[contender]]\nname = \"a\"\nmembers = 2\n[[contender.member]]\ncommand = [\"s\", \"{join}\"]\n");
    assert!(
        e.contains("`{join}` needs a separator and a pattern"),
        "{e}"
    );
    // A `{join}` inside a `{join}`, a pattern naming no member, and a `{kind:…}` no one fills
    // in would reach the program as text.
    let m2 = "name = \"t\"\n[[contender]]\nname = \"a\"\nmembers = 2\n[[contender.member]]\n";
    let e = err(&format!(
        "{m2}command = [\"s\", \"{{join:,:{{member}}={{join:;:{{index}}}}}}\"]\n"
    ));
    assert!(
        e.starts_with("plan.toml:6:11:") && e.contains("inside another"),
        "{e}"
    );
    let e = err(&format!("{m2}command = [\"s\", \"{{join:,:peer}}\"]\n"));
    assert!(e.contains("names neither `{member}` nor `{index}`"), "{e}");
    let e = err(&format!(
        "{m2}command = [\"s\", \"--x={{prot:p{{index}}}}\"]\n"
    ));
    assert!(
        e.contains("`{prot:p1}` is not a placeholder") && e.contains("`{port:NAME}`"),
        "{e}"
    );
    parse(&format!(
        "{m2}command = [\"s\", \"{{port:p{{index}}}}\", \"{{env:HOME}}\", \"{{join:,:{{member}}}}\"]\n"
    ))
    .unwrap();
    let e =
        err("name = \"t\"\n[[contender]]\nname = \"a\"\n[[contender.member]]\ncommand = [\"s\"]\n");
    assert!(e.contains("needs a `name`"), "{e}");
    // The shell's own `${HOME}` is not a var.
    parse("name = \"t\"\n[[contender]]\nname = \"a\"\ncommand = [\"sh\", \"-c\", \"exec srv ${HOME}\"]\n").unwrap();
}

#[test]
fn a_delay_what_if_makes_a_variant_per_hold_and_knows_who_connects() {
    let two = |what_if: &str, after: &str| {
        format!("name = \"t\"\n[[contender]]\nname = \"idx\"\nwhat_if = [{what_if}]\n[[contender.member]]\nname = \"front\"\n{after}\ncommand = [\"f\", \"--node\", \"127.0.0.1:{{port:rpc}}\"]\n[[contender.member]]\nname = \"node\"\ncommand = [\"n\", \"--rpcport\", \"{{port:rpc}}\"]\n")
    };
    let ok = two(
        r#"{ delay = "rpc", by = ["1ms", "2.5ms"] }"#,
        "after = [\"node\"]",
    );
    let p = parse(&ok).unwrap();
    let names: Vec<&str> = p.contenders.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        ["idx", "idx+rpc+0ms", "idx+rpc+1ms", "idx+rpc+2.5ms"]
    );
    let d = p.contenders[2].variant.as_ref().unwrap().delay().unwrap();
    assert_eq!(
        (d.port.as_str(), d.hold, d.connect.as_slice()),
        ("rpc", Duration::from_millis(1), &["front".to_string()][..])
    );
    assert_eq!(p.contenders[2].baseline.as_deref(), Some("idx"));
    // Who listens is told by `after`; without it bakeoff cannot tell, and says how.
    let e = err(&two(r#"{ delay = "rpc", by = ["1ms"] }"#, ""));
    assert!(
        e.starts_with("plan.toml:4:12:")
            && e.contains("cannot tell which of `front`, `node` listens"),
        "{e}"
    );
    let e = err(&two(
        r#"{ delay = "rcp", by = ["1ms"] }"#,
        "after = [\"node\"]",
    ));
    assert!(e.contains("no member of `idx` names `{port:rcp}`"), "{e}");
    for (bad, want) in [
        (r#"{ delay = "rpc" }"#, "`by` lists 1 to 8 holds"),
        (r#"{ delay = "rpc", by = [] }"#, "`by` lists 1 to 8 holds"),
        (
            r#"{ delay = "rpc", by = ["0ms"] }"#,
            "at least 1µs and at most 1s",
        ),
        (
            r#"{ delay = "rpc", by = ["1ms", "1ms"] }"#,
            "lists 1ms twice",
        ),
        (r#"{ delay = "rpc", by = ["fast"] }"#, "`by`:"),
        (r#"{ delay = "rpc", by = ["1ms"], how = 1 }"#, "not `how`"),
        (r#"{ by = ["1ms"] }"#, "`delay` names the port"),
        (r#""nodelya""#, "did you mean `nodelay`"),
        ("3", "a name or a table"),
    ] {
        let e = err(&two(bad, "after = [\"node\"]"));
        assert!(e.contains(want), "{bad}: {e}");
    }
    // One member alone cannot have an edge.
    let e = err("name = \"t\"\n[[contender]]\nname = \"a\"\ncommand = [\"s\", \"{port:rpc}\"]\nwhat_if = [{ delay = \"rpc\", by = [\"1ms\"] }]\n");
    assert!(e.contains("only `a` names `{port:rpc}`"), "{e}");
}

#[test]
fn after_names_members_and_never_goes_round() {
    let two = |after1: &str, after2: &str| {
        format!("name = \"t\"\n[[contender]]\nname = \"a\"\n[[contender.member]]\nname = \"node\"\ncommand = [\"n\"]\n{after1}\n[[contender.member]]\nname = \"indexer\"\ncommand = [\"i\"]\n{after2}\n")
    };
    let p = parse(&two("", "after = [\"node\"]")).unwrap();
    assert_eq!(p.contenders[0].members[1].after, ["node"]);
    let p = parse(&two("after = [\"indexer\"]", "")).unwrap();
    assert_eq!(start_order(&p.contenders[0].members), Some(vec![1, 0]));
    let e = err(&two("", "after = [\"nod\"]"));
    assert!(
        e.starts_with("plan.toml:11:9:") && e.contains("did you mean `node`"),
        "{e}"
    );
    let e = err(&two("after = [\"indexer\"]", "after = [\"node\"]"));
    assert!(
        e.starts_with("plan.toml:7:9:") && e.contains("circle"),
        "{e}"
    );
    let e = err(&two("after = [\"node\"]", ""));
    assert!(e.contains("cannot wait for itself"), "{e}");
}

#[test]
fn probes_check_their_answer_one_way() {
    let probe = |p: &str| {
        format!(
            "name = \"t\"\n[[contender]]\nname = \"a\"\ncommand = [\"s\"]\nleader = {{ {p} }}\n"
        )
    };
    let p = parse(&probe(r#"grpc = "etcdserverpb.Maintenance/Status", field = "leader", equals_field = "header.member_id""#)).unwrap();
    assert_eq!(
        p.contenders[0].leader.as_ref().unwrap().expect,
        Some(Expect::SameAs {
            field: "leader".into(),
            other: "header.member_id".into()
        })
    );
    let p = parse(&probe(
        r#"http = "http://127.0.0.1:{port}/role", field = "role", equals = "leader""#,
    ))
    .unwrap();
    assert!(
        matches!(&p.contenders[0].leader.as_ref().unwrap().expect, Some(Expect::Equals { value, .. }) if value == "leader")
    );
    let e = err(&probe(r#"http = "http://x/", matches = "(""#));
    assert!(
        e.contains("`matches` is not a valid regular expression"),
        "{e}"
    );
    let e = err(&probe(r#"tcp = "127.0.0.1:1", matches = "x""#));
    assert!(e.contains("go with `http`, `grpc` or `jsonrpc`"), "{e}");
    let e = err(&probe(r#"http = "http://x/", field = "a""#));
    assert!(e.contains("needs `equals"), "{e}");
    let e = err(&probe(
        r#"http = "http://x/", matches = "a", field = "b", equals = 1"#,
    ));
    assert!(e.contains("one way"), "{e}");
}

#[test]
fn an_answer_check_reads_fields_numbers_sent_as_text_and_bodies() {
    let answer = serde_json::json!({"header": {"member_id": "42"}, "leader": "42", "role": "follower", "term": "7"});
    let same = Expect::SameAs {
        field: "leader".into(),
        other: "header.member_id".into(),
    };
    assert_eq!(same.check(std::slice::from_ref(&answer)), Ok(()));
    let eq = |field: &str, value: serde_json::Value| Expect::Equals {
        field: field.into(),
        value,
    };
    assert_eq!(
        eq("term", serde_json::json!(7)).check(std::slice::from_ref(&answer)),
        Ok(())
    );
    let e = eq("role", serde_json::json!("leader"))
        .check(std::slice::from_ref(&answer))
        .unwrap_err();
    assert!(e.contains("\"follower\""), "{e}");
    let e = eq("nope", serde_json::json!(1))
        .check(std::slice::from_ref(&answer))
        .unwrap_err();
    assert!(e.contains("no field `nope`"), "{e}");
    let m = Expect::Matches("\"role\":\"follower\"".into());
    assert_eq!(m.check(std::slice::from_ref(&answer)), Ok(()));
    assert!(m.check(&[]).is_err());
}

#[test]
fn capacity_and_stages_are_checked_where_written() {
    let base = "name = \"t\"\n[[contender]]\nname = \"a\"\ncommand = [\"s\"]\n[[scenario]]\nname = \"s\"\nhttp = \"/\"\n";
    let p = parse(&format!(
        "{base}capacity = {{ p99 = \"10ms\", max_rate = 2000 }}\n"
    ))
    .unwrap();
    let c = p.scenarios[0].capacity.as_ref().unwrap();
    assert_eq!(
        (c.percentile, c.goal, c.max_rate),
        (Percentile::P99, Duration::from_millis(10), 2000.0)
    );
    // At least 50 calls in each 2 s step.
    assert!(c.min_rate >= 25.0 && c.min_rate < 2000.0, "{}", c.min_rate);
    let e = err(&format!("{base}capacity = {{ max_rate = 2000 }}\n"));
    assert!(
        e.starts_with("plan.toml:8:12:") && e.contains("one latency goal"),
        "{e}"
    );
    let e = err(&format!(
        "{base}capacity = {{ p99 = \"10ms\", p50 = \"1ms\", max_rate = 2000 }}\n"
    ));
    assert!(e.contains("one latency goal"), "{e}");
    let e = err(&format!(
        "{base}rate = 5\ncapacity = {{ p99 = \"10ms\", max_rate = 2000 }}\n"
    ));
    assert!(
        e.starts_with("plan.toml:8:8:") && e.contains("leave out `rate`"),
        "{e}"
    );
    let e = err(&format!(
        "{base}capacity = {{ p99 = \"10ms\", max_rate = 2000, min_rate = 5000 }}\n"
    ));
    assert!(e.contains("above `max_rate`"), "{e}");
    let e = err(&format!(
        "{base}capacity = {{ p99 = \"10ms\", max_rate = 2000, min_rate = 0.1 }}\n"
    ));
    assert!(e.contains("needs at least 50 calls"), "{e}");
    // A step of a few calls is refused: one stall of the host would decide it.
    let e = err(&format!(
        "{base}capacity = {{ p99 = \"10ms\", max_rate = 2000, min_rate = 10, step = \"1s\" }}\n"
    ));
    assert!(
        e.contains("needs at least 50 calls") && e.contains("raise `min_rate` to 50"),
        "{e}"
    );
    let p = parse(&format!("{base}stages = [{{ rate = 100, duration = \"2s\" }}, {{ rate = 500, duration = \"5s\" }}]\n")).unwrap();
    assert_eq!(p.scenarios[0].stages.len(), 2);
    assert_eq!(p.scenarios[0].stages[1].rate, Some(500.0));
    let e = err(&format!("{base}stages = [{{ duration = \"2s\" }}]\n"));
    assert!(e.contains("needs a `rate`"), "{e}");
    let e = err(&format!("{base}stages = [{{ rate = 1, duration = \"2s\" }}, {{ clients = 4, duration = \"1s\" }}]\n"));
    assert!(e.contains("not a mix"), "{e}");
    let e = err(&format!(
        "{base}requests = 5\nstages = [{{ rate = 100, duration = \"2s\" }}]\n"
    ));
    assert!(e.contains("leave out `requests`"), "{e}");
    let e = err(&format!("{base}stages = [{{ rate = 100, duration = \"2s\" }}]\ncapacity = {{ p99 = \"10ms\", max_rate = 2000 }}\n"));
    assert!(e.contains("not both"), "{e}");
    let e = err(&format!("{base}target = \"leader\"\n[[contender]]\nname = \"b\"\n[[contender.member]]\nname = \"x\"\ncommand = [\"s\"]\n[[contender.member]]\nname = \"y\"\ncommand = [\"s\"]\n"));
    assert!(e.contains("no `leader` probe"), "{e}");
}

#[test]
fn a_reference_member_names_a_contender_and_its_member() {
    let plan = |reference: &str| {
        format!("name = \"t\"\n[[contender]]\nname = \"zaino\"\n[[contender.member]]\nname = \"node\"\ncommand = [\"n\"]\n[[contender.member]]\nname = \"indexer\"\ncommand = [\"i\"]\n[[compat]]\nhttp = \"GET /{{case}}\"\nrequests = [\"a\"]\nreference = {{ {reference}, http = \"GET /{{case}}\", fields = [{{ ours = \"x\", theirs = \"x\" }}] }}\n")
    };
    let p = parse(&plan("contender = \"zaino\", member = \"node\"")).unwrap();
    let r = p.compat[0].reference.as_ref().unwrap();
    assert_eq!(r.member, Some(("zaino".into(), "node".into())));
    let p = parse(&plan("contender = \"zaino\"")).unwrap();
    assert_eq!(
        p.compat[0].reference.as_ref().unwrap().member,
        Some(("zaino".into(), "node".into()))
    );
    let e = err(&plan("contender = \"zain\", member = \"node\""));
    assert!(
        e.starts_with("plan.toml:13:27:") && e.contains("did you mean `zaino`"),
        "{e}"
    );
    let e = err(&plan("contender = \"zaino\", member = \"nod\""));
    assert!(
        e.contains("has no member `nod`") && e.contains("node, indexer"),
        "{e}"
    );
    let e = err(&plan(
        "endpoint = \"http://127.0.0.1:1\", member = \"node\"",
    ));
    assert!(e.contains("`member` goes with `contender`"), "{e}");
    let e = err(&plan("http2 = 1").replace("http2 = 1, ", ""));
    assert!(e.contains("needs an `endpoint`"), "{e}");
}

#[test]
fn a_rate_too_low_for_its_duration_and_a_probe_url_with_a_space_are_plan_errors() {
    let base = "name = \"t\"\n[[contender]]\nname = \"a\"\ncommand = [\"s\"]\n";
    let e = err(&format!(
        "{base}[[scenario]]\nname = \"s\"\nhttp = \"/\"\nrate = 0.1\nduration = \"2s\"\n"
    ));
    assert!(
        e.starts_with("plan.toml:8:8:") && e.contains("`rate` 0.1") && !e.contains("-q"),
        "{e}"
    );
    let e = err(&format!(
        "{base}ready = {{ http = \"http://127.0.0.1:{{port}}/a b\" }}\n[[scenario]]\nname = \"s\"\nhttp = \"/\"\n"
    ));
    assert!(e.contains("holds a space"), "{e}");
}

#[test]
fn index_outside_a_member_is_a_plan_error() {
    let e = err("name = \"t\"\n[[contender]]\nname = \"a\"\ncommand = [\"s\", \"--id\", \"{index}\"]\n[[scenario]]\nname = \"s\"\nhttp = \"/\"\n");
    assert!(
        e.starts_with("plan.toml:4:") && e.contains("`{index}` is a member's number"),
        "{e}"
    );
    // In a member template it is the member's number.
    let p = parse("name = \"t\"\n[[contender]]\nname = \"a\"\nmembers = 2\n[[contender.member]]\ncommand = [\"s\", \"--id\", \"{index}\"]\nendpoint = \"http://127.0.0.1:{port:m{index}}\"\n[[scenario]]\nname = \"s\"\nhttp = \"/\"\n").unwrap();
    assert_eq!(p.contenders[0].members[1].command[2], "2");
}

#[test]
fn what_ifs_and_contenders_are_bounded_before_they_multiply() {
    // Nine edges of eight holds each: 81 variants asked (with each +0ms), 64 allowed.
    let ports: Vec<String> = (0..9).map(|k| format!("{{port:rpc{k}}}")).collect();
    let holds = "\"1ms\", \"2ms\", \"3ms\", \"4ms\", \"5ms\", \"6ms\", \"7ms\", \"8ms\"";
    let delays: Vec<String> = (0..9)
        .map(|k| format!("{{ delay = \"rpc{k}\", by = [{holds}] }}"))
        .collect();
    let text = format!(
        "name = \"t\"\n[[contender]]\nname = \"idx\"\nwhat_if = [{}]\n[[contender.member]]\nname = \"front\"\nafter = [\"node\"]\ncommand = [\"f\", \"{}\"]\n[[contender.member]]\nname = \"node\"\ncommand = [\"n\", \"{}\"]\n",
        delays.join(", "),
        ports.join(","),
        ports.join(",")
    );
    let e = err(&text);
    assert!(
        e.contains("more than 64 variants") && e.contains("plan.toml:4:"),
        "{e}"
    );
    let many: String = (0..300)
        .map(|k| format!("[[contender]]\nname = \"c{k}\"\ncommand = [\"s\"]\n"))
        .collect();
    let e = err(&format!("name = \"t\"\n{many}"));
    assert!(e.contains("more than 256 contenders"), "{e}");
}

#[test]
fn a_source_is_a_name_not_a_page_of_text() {
    let src = |v: &str| {
        format!("name = \"t\"\n[[contender]]\nname = \"a\"\nsource = {v}\nbuild = [[\"make\"]]\ncommand = [\"{{source}}/s\"]\n")
    };
    let e = err(&src(r#"{ git = "repo\nother", ref = "main" }"#));
    assert!(
        e.contains("`source.git` holds a control character") && e.contains("plan.toml:4:"),
        "{e}"
    );
    let long = "x".repeat(5000);
    let e = err(&src(&format!(r#"{{ git = "repo", ref = "{long}" }}"#)));
    assert!(
        e.contains("`source.ref` is 5000 bytes") && !e.contains(&long),
        "{e}"
    );
    let p = parse(&src(r#"{ git = "repo", ref = "main" }"#)).unwrap();
    let e = p
        .with_refs(&[("a".into(), "y".repeat(1 << 20))])
        .unwrap_err();
    assert!(e.contains("1048576 bytes given") && e.len() < 300, "{e}");
}

#[test]
fn incremental_is_for_a_git_source() {
    let plan = |source: &str| {
        format!("name = \"t\"\n[[contender]]\nname = \"a\"\nsource = {{ {source} }}\nbuild = [[\"make\"]]\ncommand = [\"{{source}}/s\"]\n")
    };
    let p = parse(&plan("git = \"repo\", ref = \"main\", incremental = true")).unwrap();
    assert!(p.contenders[0].source.as_ref().unwrap().incremental);
    let p = parse(&plan("git = \"repo\", ref = \"main\"")).unwrap();
    assert!(!p.contenders[0].source.as_ref().unwrap().incremental);
    let e = err(&plan("path = \"tree\", incremental = true"));
    assert!(e.contains("`incremental` are for a `git` source"), "{e}");
    // Issue 68 item 8: `like` copies the source key by key, `incremental` included (the
    // second contender of nginx's plan built clean every time).
    let two = format!(
        "{}[[contender]]\nname = \"b\"\nlike = \"a\"\nsource = {{ ref = \"v2\" }}\n",
        plan("git = \"repo\", ref = \"main\", incremental = true")
    );
    let p = parse(&two).unwrap();
    let b = p.contenders[1].source.as_ref().unwrap();
    assert!(b.incremental, "{b:?}");
    let off = two.replace("ref = \"v2\" }", "ref = \"v2\", incremental = false }");
    assert!(
        !parse(&off).unwrap().contenders[1]
            .source
            .as_ref()
            .unwrap()
            .incremental
    );
}

#[test]
fn the_history_table_records_and_links_or_says_where_it_is_wrong() {
    let p = parse(&format!(
        "{ONE}\n[history]\nrecord = true\ncommit_url = \"https://example.com/r/commit/{{commit}}\"\n"
    ))
    .unwrap();
    assert!(p.history.record);
    assert_eq!(
        p.history.commit_url.as_deref(),
        Some("https://example.com/r/commit/{commit}")
    );
    assert_eq!(parse(ONE).unwrap().history, History::default());
    let e = err(&format!(
        "{ONE}\n[history]\ncommit_url = \"https://example.com/r/commit/\"\n"
    ));
    assert!(
        e.starts_with("plan.toml:8:14: `commit_url` must hold `{commit}`"),
        "{e}"
    );
    let e = err(&format!(
        "{ONE}\n[history]\ncommit_url = \"file:///{{commit}}\"\n"
    ));
    assert!(e.contains("must start with https://"), "{e}");
    let e = err(&format!("{ONE}\n[history]\nrecrod = true\n"));
    assert!(e.contains("recrod") && e.contains("record"), "{e}");
}

/// Issue 69: `[history] reference` pairs the plan's one git contender with itself at a
/// fixed ref, as its baseline; `--only` keeps the partner; anything else says why.
#[test]
fn a_history_reference_adds_a_paired_partner_at_its_ref() {
    let plan = |extra: &str| {
        format!("name = \"t\"\n[[contender]]\nname = \"srv\"\nsource = {{ git = \"repo\", ref = \"main\" }}\nbuild = [[\"make\"]]\ncommand = [\"{{source}}/s\", \"{{port}}\"]\n[[scenario]]\nname = \"get\"\nhttp = \"/\"\n{extra}[history]\nreference = \"v1.4.0\"\n")
    };
    let p = parse(&plan("")).unwrap();
    let names: Vec<&str> = p.contenders.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["reference", "srv"]);
    assert_eq!(p.baseline_of("srv"), Some("reference"));
    assert_eq!(p.history.reference.as_deref(), Some("v1.4.0"));
    assert_eq!(p.order, Order::Paired);
    match &p.contenders[0].source.as_ref().unwrap().from {
        SourceKind::Git { rev, .. } => assert_eq!(*rev, Rev::Ref("v1.4.0".into())),
        other => panic!("{other:?}"),
    }
    let kept = p.overridden(None, &["srv".to_string()], &[]).unwrap();
    assert_eq!(kept.contenders.len(), 2);
    assert_eq!(kept.baseline_of("srv"), Some("reference"));
    let two = "[[contender]]\nname = \"other\"\ncommand = [\"o\", \"{port}\"]\n".to_string();
    let e = err(&plan(&two));
    assert!(e.contains("this plan has 2 contenders"), "{e}");
    let e = err(&plan("")
        .replace(
            "source = { git = \"repo\", ref = \"main\" }\nbuild = [[\"make\"]]\n",
            "",
        )
        .replace("{source}/s", "s"));
    assert!(e.contains("built from a git `source`"), "{e}");
    let e = err(&plan("").replace("v1.4.0", "--output=x"));
    assert!(e.contains("`reference` must be a tag"), "{e}");
}

/// Issue 69: `night = "screen"` makes a night beside the reference a screen: its rounds
/// are the duration's, with no second stage; `night` needs a reference.
#[test]
fn a_night_beside_the_reference_is_a_screen_when_asked() {
    let plan = |history: &str| {
        format!("name = \"t\"\nbudget = \"5m\"\n[[contender]]\nname = \"srv\"\nsource = {{ git = \"repo\", ref = \"main\" }}\nbuild = [[\"make\"]]\ncommand = [\"{{source}}/s\", \"{{port}}\"]\n[[scenario]]\nname = \"get\"\nhttp = \"/\"\n[history]\n{history}")
    };
    assert!(!parse(&plan("reference = \"v1\"\n")).unwrap().history.screen);
    let p = parse(&plan("reference = \"v1\"\nnight = \"screen\"\n")).unwrap();
    assert!(p.history.screen);
    let night = p.clone().screened();
    assert_eq!(night.paired.rounds, Rounds::Duration);
    assert_eq!((night.budget, night.paired.max_repetitions), (None, None));
    assert!(p.budget.is_some(), "the plan itself keeps its budget");
    let full = parse(&plan("reference = \"v1\"\nnight = \"full\"\n")).unwrap();
    assert!(!full.history.screen);
    assert!(!parse(&plan("record = true\n")).unwrap().history.screen);
    let e = err(&plan("night = \"screen\"\n"));
    assert!(e.contains("names no `reference`"), "{e}");
    let e = err(&plan("reference = \"v1\"\nnight = \"cheap\"\n"));
    assert!(e.contains("`night` is \"screen\" or \"full\""), "{e}");
}

#[test]
fn a_git_source_that_reads_as_an_option_is_refused() {
    for g in ["--upload-pack=touch /tmp/owned", "-x"] {
        let e = err(&format!(
            "name = \"t\"\n[[contender]]\nname = \"a\"\nsource = {{ git = \"{g}\", ref = \"main\" }}\ncommand = [\"{{source}}/s\"]\n"
        ));
        assert!(
            e.starts_with("plan.toml:4:10:") && e.contains("is not a repository"),
            "{e}"
        );
    }
}

/// A step of `bakeoff bisect`: its equivalence band is the effect, and so is its rounds'
/// precision unless the plan's is coarser (docs/bisect.md).
#[test]
fn a_bisect_step_is_judged_and_its_rounds_stopped_at_the_effect() {
    let plan = |top: &str| {
        parse(&format!(
            "name = \"t\"\n{top}\n[[contender]]\nname = \"a\"\nsource = {{ git = \"repo\", ref = \"main\" }}\nbuild = [[\"make\"]]\ncommand = [\"{{source}}/s\"]\n[[scenario]]\nname = \"s\"\nhttp = \"/\"\n"
        ))
        .unwrap()
    };
    let commits = [
        ("c0".to_string(), "0".repeat(40)),
        ("c1".to_string(), "1".repeat(40)),
    ];
    let precision = |p: &Plan| match p.paired.rounds {
        Rounds::Auto { precision, .. } => precision,
        Rounds::Fixed(_) | Rounds::Duration => panic!("{:?}", p.paired.rounds),
    };
    let p = plan("")
        .for_commits("a", &commits, &[], Some(0.05))
        .unwrap();
    assert_eq!((p.paired.equivalence, precision(&p)), (0.05, 0.05));
    assert_eq!(p.contenders[1].baseline.as_deref(), Some("c0"));
    let p = plan("paired = { precision = \"8%\" }")
        .for_commits("a", &commits, &[], Some(0.05))
        .unwrap();
    assert_eq!((p.paired.equivalence, precision(&p)), (0.05, 0.08));
    let p = plan("").for_commits("a", &commits, &[], None).unwrap();
    assert_eq!(precision(&p), 0.02);
}

#[test]
fn a_bisect_step_spreads_the_plans_durations_over_its_repetitions() {
    let p = parse(
        "name = \"t\"\nrepetitions = 3\n[[contender]]\nname = \"a\"\ncommand = [\"s\"]\n[[scenario]]\nname = \"s\"\nhttp = \"/\"\nduration = \"1500ms\"\n[[scenario]]\nname = \"n\"\nhttp = \"/\"\nrequests = 900\n",
    )
    .unwrap();
    let stops = |p: &Plan| p.scenarios.iter().map(|s| s.stop).collect::<Vec<_>>();
    let spread = p.clone().spread_over(5);
    assert_eq!(spread.repetitions, 5);
    assert_eq!(
        stops(&spread),
        [
            crate::load::Stop::Duration(Duration::from_millis(900)),
            crate::load::Stop::Count(900)
        ]
    );
    // Fewer repetitions than the plan's never shorten a point.
    let kept = p.clone().spread_over(2);
    assert_eq!((kept.repetitions, stops(&kept)), (3, stops(&p)));
}
