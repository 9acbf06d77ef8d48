//! Any text as a plan file: a plan or an error at a place, never a panic.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let path = std::path::Path::new("fuzz-plan.toml");
    if let Err(e) = bakeoff::plan::Plan::parse(path, &text) {
        assert!(e.to_string().starts_with("fuzz-plan.toml:"));
    }
});
