//! A short, seeded mutation fuzz of the importers, run with the tests: every mutation of the
//! real fixtures must give a result or an error, never a panic. The coverage-guided target in
//! `fuzz/` runs the same entry point for as long as one likes (see fuzz/README.md).

use std::path::Path;

use bakeoff::import;
use bakeoff::rng::mix;

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

/// Flips, deletes, duplicates or inserts interesting bytes at random places.
fn mutate(input: &[u8], seed: u64) -> Vec<u8> {
    let mut v = input.to_vec();
    let ops = 1 + mix(seed) % 8;
    for k in 0..ops {
        let r = mix(seed ^ mix(k + 1));
        if v.is_empty() {
            v.push(r as u8);
            continue;
        }
        let at = (r >> 8) as usize % v.len();
        match r % 6 {
            0 => v[at] ^= 1 << ((r >> 40) % 8),
            1 => {
                let end = (at + (r >> 32) as usize % 16).min(v.len());
                v.drain(at..end);
            }
            2 => {
                const BYTES: &[u8] = b" \t\n-.e+0123456789{}[]\",:%/";
                let b = BYTES[(r >> 32) as usize % BYTES.len()];
                v.insert(at, b);
            }
            3 => v.truncate(at),
            4 => {
                let end = (at + 32).min(v.len());
                let chunk = v[at..end].to_vec();
                v.splice(at..at, chunk);
            }
            _ => v[at] = (r >> 48) as u8,
        }
    }
    v
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
