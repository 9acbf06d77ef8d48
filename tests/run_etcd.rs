//! The acceptance run: `examples/etcd/plan.toml` (etcd 3.4.23 vs 3.5.1, single member and a
//! 3-member cluster, reads and writes over gRPC) end to end, shortened: 2 repetitions, 40
//! calls per point, fewer clients. Everything else is the example file as shipped.

mod common;

use std::path::Path;

use common::*;

fn shortened(example: &str, protos: &Path) -> String {
    let replace = |text: String, from: &str, to: &str| {
        assert!(
            text.contains(from),
            "the example no longer contains `{from}`"
        );
        text.replace(from, to)
    };
    let mut t = example.to_string();
    t = replace(t, "repetitions = 3", "repetitions = 2");
    // A count, not a duration: on a loaded machine an 8-client write point can take longer
    // than a short duration, which would leave it with no measured call at all (seen in CI).
    t = replace(t, "duration = \"5s\"", "requests = 40");
    t = replace(t, "warmup = \"500ms\"", "warmup = \"100ms\"");
    t = replace(t, "clients = [1, 64, 256]", "clients = [1, 8]");
    t = replace(
        t,
        "protos = [\"protos/rpc.proto\"]",
        &format!("protos = [\"{}\"]", protos.display()),
    );
    t
}

#[test]
fn the_etcd_example_plan_runs_end_to_end() {
    let (Some(e34), Some(e35)) = (etcd34_bin(), etcd35_bin()) else {
        return;
    };
    std::env::set_var("ETCD34", &e34);
    std::env::set_var("ETCD35", &e35);
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/etcd");
    let example = std::fs::read_to_string(root.join("plan.toml")).unwrap();
    let dir = TempDir::new("run-etcd");
    let run = run_plan(
        dir.path(),
        &shortened(&example, &root.join("protos/rpc.proto")),
        &[],
    );
    assert!(
        run.output.status.success(),
        "{}\n{}",
        run.stderr(),
        run.stdout()
    );
    let r = &run.results;
    assert_eq!(r["status"], "complete");
    assert_eq!(run.runs().len(), 8);

    let info = |name: &str| {
        r["contenders"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .unwrap()
            .clone()
    };
    assert_eq!(info("etcd-3.5")["baseline"], "etcd-3.4");
    assert_eq!(info("etcd-3.5-x3")["baseline"], "etcd-3.4-x3");
    assert!(info("etcd-3.4")["baseline"].is_null());
    assert!(info("etcd-3.4-x3")["baseline"].is_null());

    for x in run.runs() {
        let name = x["contender"].as_str().unwrap();
        assert_eq!(x["status"], "complete", "{x}");
        let cluster = name.ends_with("-x3");
        assert_eq!(
            x["exits"].as_array().unwrap().len(),
            if cluster { 3 } else { 1 }
        );
        assert!(x["startup"]["disk_after_start_bytes"].as_u64().unwrap() > 0);
        let points = x["points"].as_array().unwrap();
        // 2 key sizes × 2 client counts, for the leader; clusters also for all members.
        assert_eq!(points.len(), if cluster { 16 } else { 8 }, "{name}");
        for p in points {
            let l = &p["load"];
            assert!(l["successes"].as_u64().unwrap() > 0, "{p}");
            assert_eq!(l["failures"], 0, "{p}");
            assert!(l["target"].as_str().unwrap().starts_with("gRPC"), "{l}");
            // The leader is asked before every point: the member etcd itself made leader
            // (its own log says it became leader), recorded for clusters only. A loaded host
            // can hold a second election mid-run (CI saw m2 elected after m1 was asked), so
            // the member recorded is one whose log says it became leader, not the only one.
            if p["target"] == "leader" && cluster {
                let leader = p["leader"].as_str().unwrap_or_else(|| panic!("{p}"));
                // How many times each member's log says it became leader.
                let elections: Vec<(&str, usize)> = ["m1", "m2", "m3"]
                    .into_iter()
                    .map(|m| {
                        let n = x["logs"]
                            .as_array()
                            .unwrap()
                            .iter()
                            .filter(|f| f.as_str().unwrap().contains(&format!(".{m}.std")))
                            .map(|f| {
                                std::fs::read_to_string(run.out_dir.join(f.as_str().unwrap()))
                                    .unwrap()
                                    .matches("became leader")
                                    .count()
                            })
                            .sum();
                        (m, n)
                    })
                    .collect();
                assert!(
                    elections.iter().any(|&(m, n)| m == leader && n > 0),
                    "{leader} never became leader: {elections:?}"
                );
            } else {
                assert!(p["leader"].is_null(), "{p}");
            }
            if p["target"] == "all" {
                assert!(
                    l["target"]
                        .as_str()
                        .unwrap()
                        .contains("and 2 more endpoints"),
                    "{l}"
                );
            }
        }
    }
    // Paired (the example's order): the seed-003 grid with each contender's ratios to its
    // baseline and their intervals; the four contenders of a repetition share a block.
    assert_eq!(r["order"], "paired");
    let blocks: Vec<u64> = run
        .runs()
        .iter()
        .map(|x| x["block"].as_u64().unwrap())
        .collect();
    assert_eq!(blocks, [1, 1, 1, 1, 2, 2, 2, 2]);
    let out = run.stdout();
    assert!(
        out.contains(
            "| key_size | clients | target | contender | req/s | CPU/req | p50 | p99 | failed |"
        ),
        "{out}"
    );
    assert!(out.contains("| 256 | 8 | all | etcd-3.5-x3 | "), "{out}");
    let row = out
        .lines()
        .find(|l| l.starts_with("| 64 | 1 | leader | etcd-3.5 |"))
        .unwrap();
    assert!(
        row.contains("×) ") && row.contains("CPU per request"),
        "{row}"
    );
}
