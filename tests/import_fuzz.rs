//! A short, seeded mutation fuzz of the importers, run with the tests: every mutation of the
//! real fixtures must give a result or an error, never a panic. The coverage-guided target in
//! `fuzz/` runs the same entry point for as long as one likes (see fuzz/README.md).

use std::path::Path;

use bakeoff::import;

mod common;
use common::mutate;

fn corpus() -> Vec<Vec<u8>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut out = Vec::new();
    for f in [
        "seed004/old.txt",
        "seed004/gosercomp.txt",
        "hyperfine/old.json",
    ] {
        if let Ok(b) = std::fs::read(root.join(f)) {
            out.push(b);
        }
    }
    assert!(out.len() >= 2, "fixtures missing");
    out
}

#[test]
fn mutated_inputs_never_panic_the_importers() {
    let corpus = corpus();
    let mut errors = 0;
    for i in 0..6000u64 {
        let input = &corpus[(i as usize) % corpus.len()];
        let m = mutate(input, i);
        match import::parse("fuzz", &m) {
            Ok(set) => {
                for r in &set.rows {
                    assert!(!r.values.is_empty() && r.values.iter().all(|v| v.is_finite()));
                }
            }
            Err(e) => {
                assert!(e.to_string().starts_with("fuzz"), "{e}");
                errors += 1;
            }
        }
    }
    // The mutations are not all harmless: a good share must have been rejected.
    assert!(errors > 300, "only {errors} mutations were rejected");
}
