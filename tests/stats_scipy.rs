//! Cross-checks `stats` against SciPy on generated data: the Mann-Whitney U p-values (exact
//! and asymptotic with tie correction) and the order-statistic median interval (the index
//! SciPy's binomial distribution gives for the same coverage rule).

use std::io::Write;
use std::process::{Command, Stdio};

use bakeoff::rng::SplitMix64 as Rng;
use bakeoff::stats::{mann_whitney_u, median_ci, Sample};

const REFERENCE: &str = r#"
import json, sys
from scipy import stats
cases = json.load(sys.stdin)
out = []
for c in cases:
    if c["kind"] == "u":
        method = "exact" if c["exact"] else "asymptotic"
        r = stats.mannwhitneyu(c["x"], c["y"], alternative="two-sided", method=method, use_continuity=True)
        out.append({"u": float(r.statistic), "p": float(r.pvalue)})
    else:
        n, alpha = c["n"], 1 - c["confidence"]
        k = 0
        for cand in range(1, (n + 1) // 2 + 1):
            if 2 * stats.binom.cdf(cand - 1, n, 0.5) <= alpha + 1e-12:
                k = cand
            else:
                break
        out.append({"k": k, "coverage": 1 - 2 * float(stats.binom.cdf(k - 1, n, 0.5)) if k else None})
print(json.dumps(out))
"#;

fn scipy_available() -> bool {
    let ok = Command::new("python3")
        .args(["-c", "import scipy.stats"])
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("SciPy is missing; scripts/install-test-deps.sh installs it");
        }
        eprintln!("SKIPPED: SciPy not installed (pip install scipy)");
    }
    ok
}

fn reference(cases: &serde_json::Value) -> Vec<serde_json::Value> {
    let mut child = Command::new("python3")
        .args(["-c", REFERENCE])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(cases.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn mann_whitney_matches_scipy() {
    if !scipy_available() {
        return;
    }
    let mut rng = Rng(2024);
    let mut cases = Vec::new();
    let mut ours = Vec::new();
    for i in 0..120 {
        let n1 = 2 + (rng.float() * 25.0) as usize;
        let n2 = 2 + (rng.float() * 25.0) as usize;
        let shift = rng.float() * 2.0;
        // A third of the cases on a coarse grid, so ties (and the asymptotic path) occur.
        let grid = if i % 3 == 0 { 4.0 } else { 1e9 };
        let mut draw = |d: f64| ((rng.float() * 3.0 + d) * grid).round() / grid;
        let x: Vec<f64> = (0..n1).map(|_| draw(0.0)).collect();
        let y: Vec<f64> = (0..n2).map(|_| draw(shift)).collect();
        let t = mann_whitney_u(
            &Sample::new(x.clone()).unwrap(),
            &Sample::new(y.clone()).unwrap(),
        );
        cases.push(serde_json::json!({"kind": "u", "x": x, "y": y, "exact": t.exact}));
        ours.push(t);
    }
    assert!(ours.iter().any(|t| t.exact) && ours.iter().any(|t| !t.exact));
    let refs = reference(&serde_json::Value::Array(cases));
    for (t, r) in ours.iter().zip(&refs) {
        let (u, p) = (r["u"].as_f64().unwrap(), r["p"].as_f64().unwrap());
        assert!((t.u - u).abs() < 1e-9, "U {} vs SciPy {u}", t.u);
        assert!(
            (t.p - p).abs() < 2e-6,
            "p {} vs SciPy {p} (exact: {})",
            t.p,
            t.exact
        );
    }
}

#[test]
fn median_interval_matches_scipy_binomial() {
    if !scipy_available() {
        return;
    }
    let mut rng = Rng(99);
    let mut cases = Vec::new();
    let mut samples = Vec::new();
    for n in (2..60).chain([100, 250, 1000]) {
        for confidence in [0.90, 0.95, 0.99] {
            let v: Vec<f64> = (0..n).map(|_| rng.float()).collect();
            samples.push((Sample::new(v).unwrap(), confidence));
            cases.push(serde_json::json!({"kind": "ci", "n": n, "confidence": confidence}));
        }
    }
    let refs = reference(&serde_json::Value::Array(cases));
    for ((s, confidence), r) in samples.iter().zip(&refs) {
        let k = r["k"].as_u64().unwrap() as usize;
        match median_ci(s, *confidence) {
            Err(e) => assert_eq!(k, 0, "n={}: we say {e}, SciPy finds k={k}", s.len()),
            Ok(ci) => {
                assert!(k > 0, "n={}: SciPy finds no interval", s.len());
                assert_eq!(ci.lo, s.sorted()[k - 1]);
                assert_eq!(ci.hi, s.sorted()[s.len() - k]);
                let cov = r["coverage"].as_f64().unwrap();
                assert!((ci.confidence - cov).abs() < 1e-9);
            }
        }
    }
}
