//! Any bytes given to `bakeoff compare` as a file: a result or an error, never a panic.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Ok(set) = bakeoff::import::parse("fuzz", data) {
        for r in &set.rows {
            assert!(!r.values.is_empty());
        }
    }
});
