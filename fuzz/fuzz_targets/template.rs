//! Any text as a request template: parsed or refused, and a parsed one renders within its
//! size bound, never a panic.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok(t) = bakeoff::protocol::template::Template::parse(&text) {
        let s = t.render_string(7, 1);
        assert!(s.len() as u64 <= t.size_bound());
    }
});
