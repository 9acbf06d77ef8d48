//! gRPC (messages built at run time from our own minimal etcd .proto) and the JSON gateway,
//! against real etcd 3.4.23 and 3.5.1, each started fresh on free ports.

mod common;

use std::path::Path;

use common::*;

const PROTO: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/examples/etcd/protos/rpc.proto"
);

fn grpc(etcd: &Etcd, call: &str, body: &str, extra: &[&str]) -> serde_json::Value {
    let url = etcd.url();
    let mut args = vec![
        "load", "--grpc", &url, "--proto", PROTO, "--call", call, "-d", body,
    ];
    args.extend_from_slice(extra);
    bakeoff_json(&args)
}

fn call(etcd: &Etcd, method: &str, body: &str) -> serde_json::Value {
    let url = etcd.url();
    bakeoff_json(&[
        "call", "--grpc", &url, "--proto", PROTO, "--call", method, "-d", body,
    ])
}

fn for_each_etcd(test: impl Fn(&Etcd, &str)) {
    for (bin, version) in [(etcd34_bin(), "3.4."), (etcd35_bin(), "3.5.")] {
        let Some(bin) = bin else { continue };
        let etcd = start_etcd(Path::new(&bin));
        let status = call(&etcd, "etcdserverpb.Maintenance/Status", "{}");
        let v = status["messages"][0]["version"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(v.starts_with(version), "{} is {v}", bin.display());
        test(&etcd, &v);
    }
}

#[test]
fn put_then_range_returns_what_was_written() {
    for_each_etcd(|etcd, version| {
        let put = call(
            etcd,
            "etcdserverpb.KV/Put",
            r#"{"key":"{b64:greeting}","value":"{b64:hello}"}"#,
        );
        assert_eq!(put["outcome"], "gRPC OK", "{version}: {put}");
        let got = call(etcd, "etcdserverpb.KV/Range", r#"{"key":"Z3JlZXRpbmc="}"#);
        let kv = &got["messages"][0]["kvs"][0];
        assert_eq!(kv["value"], "aGVsbG8=", "{version}: {got}");
        assert_eq!(got["messages"][0]["count"], "1");
    });
}

#[test]
fn templated_puts_write_distinct_keys_under_load() {
    for_each_etcd(|etcd, version| {
        let v = grpc(
            etcd,
            "etcdserverpb.KV/Put",
            r#"{"key":"{b64:k/{seq}}","value":"{b64:v{rand:0..9}}"}"#,
            &["-n", "300", "-c", "4"],
        );
        assert_eq!(outcomes(&v), [("gRPC OK".to_string(), 300)], "{version}");
        // Every Put wrote its own key: a count-only range over the prefix sees all 300.
        let count = call(
            etcd,
            "etcdserverpb.KV/Range",
            r#"{"key":"{b64:k/}","range_end":"{b64:k0}","count_only":true}"#,
        );
        assert_eq!(count["messages"][0]["count"], "300", "{version}: {count}");
        let status = grpc(
            etcd,
            "etcdserverpb.Maintenance/Status",
            "{}",
            &["-n", "50", "-c", "2"],
        );
        assert_eq!(
            outcomes(&status),
            [("gRPC OK".to_string(), 50)],
            "{version}"
        );
    });
}

#[test]
fn server_streaming_snapshot_counts_items() {
    for_each_etcd(|etcd, version| {
        // About 400 KiB of data, so each snapshot streams many 32 KiB messages.
        let value = "x".repeat(1000);
        let body = format!(r#"{{"key":"{{b64:big/{{seq}}}}","value":"{{b64:{value}}}"}}"#);
        grpc(
            etcd,
            "etcdserverpb.KV/Put",
            &body,
            &["-n", "400", "-c", "4"],
        );
        let v = grpc(
            etcd,
            "etcdserverpb.Maintenance/Snapshot",
            "{}",
            &["-n", "4", "-c", "1"],
        );
        assert!(v["target"].as_str().unwrap().contains("server-streaming"));
        assert_eq!(outcomes(&v), [("gRPC OK".to_string(), 4)], "{version}");
        let items = u(&v, "items");
        assert!(
            items >= 4 * 10,
            "{version}: only {items} messages in 4 snapshots"
        );
        assert_eq!(items % 4, 0, "{version}: every snapshot has the same size");
        assert!(u(&v, "bytes") >= 4 * 400 * 1000);
        assert!(v["items_per_s"].as_f64().unwrap() > v["requests_per_s"].as_f64().unwrap());
    });
}

#[test]
fn grpc_errors_are_reported_by_code_name() {
    for_each_etcd(|etcd, version| {
        // etcd rejects a Range without a key: INVALID_ARGUMENT, with its message kept; no
        // call succeeded, so load exits 2.
        let url = etcd.url();
        let v = bakeoff_json_exit(
            &[
                "load",
                "--grpc",
                &url,
                "--proto",
                PROTO,
                "--call",
                "etcdserverpb.KV/Range",
                "-d",
                "{}",
                "-n",
                "20",
                "-c",
                "2",
            ],
            2,
        );
        assert_eq!(
            outcomes(&v),
            [("gRPC INVALID_ARGUMENT".to_string(), 20)],
            "{version}"
        );
        let example = v["outcomes"][0]["example"].as_str().unwrap();
        assert!(
            example.contains("key is not provided"),
            "{version}: {example}"
        );
    });
}

#[test]
fn the_json_gateway_answers_over_http1() {
    for_each_etcd(|etcd, version| {
        let put = format!("{}/v3/kv/put", etcd.url());
        let v = bakeoff_json(&[
            "load",
            "-n",
            "100",
            "-c",
            "2",
            "-d",
            r#"{"key":"{b64:gw/{seq}}","value":"dg=="}"#,
            &put,
        ]);
        assert_eq!(outcomes(&v), [("HTTP 200".to_string(), 100)], "{version}");
        let range = format!("{}/v3/kv/range", etcd.url());
        let out = bakeoff(&[
            "call",
            "-d",
            r#"{"key":"Z3cv","range_end":"Z3cw","count_only":true}"#,
            &range,
        ]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains(r#""count":"100""#), "{version}: {text}");
    });
}
