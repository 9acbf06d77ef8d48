//! Seeded mutation fuzz of the template parser and the plan loader, run with the tests (the
//! coverage-guided targets in `fuzz/` run the same entry points for as long as one likes):
//! every mutation gives a value or an error naming where, never a panic, and a template that
//! parses renders within its size bound.

mod common;

use std::path::Path;

use bakeoff::plan::Plan;
use bakeoff::protocol::template::Template;
use common::mutate;

#[test]
fn mutated_templates_parse_or_fail_and_render_within_their_bound() {
    let corpus = [
        r#"{"key": "{b64:key-{seq}}", "value": "{b64:{fill:64:v}}"}"#,
        "/k/{rand:0..1000}?x={edge:-5..5}",
        r#"[{"value": {seq}, "address": "t{rand:1..9}"}, {"id": {edge:0..3}}]"#,
        "{fill:10:a{b64:{seq}}}",
    ];
    let (mut ok, mut errors) = (0, 0);
    for i in 0..20_000u64 {
        let input = corpus[(i as usize) % corpus.len()].as_bytes();
        let text = String::from_utf8_lossy(&mutate(input, i)).into_owned();
        match Template::parse(&text) {
            Ok(t) => {
                ok += 1;
                for seq in [0, 1, 7, u64::MAX] {
                    let s = t.render_string(seq, i);
                    assert!(
                        s.len() as u64 <= t.size_bound(),
                        "{text:?} → {} bytes",
                        s.len()
                    );
                }
            }
            Err(e) => {
                errors += 1;
                assert!(e.to_string().starts_with("template `"), "{e}");
            }
        }
    }
    assert!(ok > 1000 && errors > 1000, "ok {ok}, errors {errors}");
}

#[test]
fn mutated_plans_load_or_fail_at_a_place() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let files = ["examples/etcd/plan.toml", "examples/etcd/compat.toml"];
    let corpus: Vec<(std::path::PathBuf, String)> = files
        .iter()
        .map(|f| {
            let p = root.join(f);
            let text = std::fs::read_to_string(&p).unwrap();
            (p, text)
        })
        .collect();
    let (mut ok, mut errors) = (0, 0);
    for i in 0..3_000u64 {
        let (path, text) = &corpus[(i as usize) % corpus.len()];
        let m = String::from_utf8_lossy(&mutate(text.as_bytes(), i)).into_owned();
        match Plan::parse(path, &m) {
            Ok(_) => ok += 1,
            Err(e) => {
                errors += 1;
                let shown = e.to_string();
                let place = format!("{}:", path.display());
                assert!(shown.starts_with(&place), "{shown}");
            }
        }
    }
    assert!(errors > 500, "ok {ok}, errors {errors}");
}
