//! Templates instead of copies: the etcd example, written with `like`, `members = 3`,
//! `{join:…}` and `vars`, is the same plan as the same example spelled out member by member.

mod common;

use std::path::Path;

use bakeoff::plan::Plan;

const SHORT: &str = "examples/etcd/plan.toml";
const LONG: &str = "tests/fixtures/etcd/unrolled.toml";

fn text(path: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(path)).unwrap()
}

#[test]
fn the_etcd_example_expands_to_the_plan_it_replaced() {
    let (short, long) = (text(SHORT), text(LONG));
    // The unrolled file is read as if it sat where the example does (its paths are relative).
    let here = Path::new(env!("CARGO_MANIFEST_DIR")).join(SHORT);
    let a = Plan::show(&here, &short).unwrap();
    let b = Plan::show(&here, &long).unwrap();
    assert_eq!(a, b, "the two expansions differ");
    let (pa, pb) = (
        Plan::parse(&here, &short).unwrap(),
        Plan::parse(&here, &long).unwrap(),
    );
    assert_eq!(
        format!("{:?}", pa.contenders),
        format!("{:?}", pb.contenders)
    );
    assert_eq!(format!("{:?}", pa.scenarios), format!("{:?}", pb.scenarios));
    assert_eq!(pa.contenders.len(), 4);
    assert_eq!(pa.contenders[3].members.len(), 3);
    // Members are expanded before port names are collected: c1..c3 and p1..p3.
    let ports = bakeoff::contender::ports_named(&pa.contenders[3]);
    assert_eq!(ports.len(), 6, "{ports:?}");
    assert!(ports.contains("p3") && ports.contains("c1"), "{ports:?}");
    // A fraction of its size: lines that are not comments or blank.
    let lines = |t: &str| {
        t.lines()
            .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
            .count()
    };
    assert!(
        lines(&short) * 10 <= lines(&long) * 6,
        "{} lines against {}",
        lines(&short),
        lines(&long)
    );
}

#[test]
fn plan_show_prints_the_expanded_plan_and_then_checks_it() {
    let out = common::bakeoff(&["plan", "show", SHORT]);
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(!shown.contains("like =") && !shown.contains("{join:") && !shown.contains("{etcd}"));
    assert!(shown.contains(r#"name = "m3""#), "{shown}");
    // What it prints is a plan: it parses back to the same contenders.
    let here = Path::new(env!("CARGO_MANIFEST_DIR")).join(SHORT);
    let back = Plan::parse(&here, &shown).unwrap();
    let orig = Plan::parse(&here, &text(SHORT)).unwrap();
    assert_eq!(
        format!("{:?}", back.contenders),
        format!("{:?}", orig.contenders)
    );
    // `run`'s own checks follow: ETCD35 unset is reported, as `run` would.
    let dir = common::TempDir::new("plan-show");
    let plan = dir.0.join("p.toml");
    std::fs::write(&plan, "name = \"t\"\n[[contender]]\nname = \"a\"\ncommand = [\"{env:BAKEOFF_TEST_SURELY_UNSET}\"]\n").unwrap();
    let out = common::bakeoff(&["plan", "show", plan.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("BAKEOFF_TEST_SURELY_UNSET"));
    assert!(String::from_utf8_lossy(&out.stderr).contains("BAKEOFF_TEST_SURELY_UNSET is not set"));
}
