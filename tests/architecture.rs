//! The pipeline's layering (see `docs/architecture.md`): a module may use only modules of a lower
//! layer, so no import runs back up the pipeline and no two modules import each other. Read
//! from the source: every `crate::name` a module's files mention.

use std::collections::BTreeMap;
use std::path::Path;

/// Lowest first. Modules in one layer may not use each other.
const LAYERS: &[&[&str]] = &[
    &["cancel", "rng", "sys", "units"],
    &["protocol", "stats"],
    &["load"],
    &["plan"],
    &["client"],
    &["results"],
    &["contender", "compat", "import"],
    &["runner", "compare"],
    &["diagnose"],
    &["report"],
    &["demo", "launchers"],
    &["cli"],
];

fn layer(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&module))
}

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// module → the other modules its files name as `crate::module`.
fn uses() -> BTreeMap<String, Vec<(String, String)>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut out: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    for f in files {
        let rel = f.strip_prefix(&src).unwrap();
        let first = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy();
        let module = first.trim_end_matches(".rs").to_string();
        if module == "lib" || module == "main" {
            continue;
        }
        let text = std::fs::read_to_string(&f).unwrap();
        for (i, _) in text.match_indices("crate::") {
            let used: String = text[i + 7..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if used != module {
                out.entry(module.clone())
                    .or_default()
                    .push((used, rel.display().to_string()));
            }
        }
    }
    out
}

#[test]
fn every_module_has_a_layer() {
    for (module, used) in uses() {
        assert!(layer(&module).is_some(), "module `{module}` has no layer");
        for (u, file) in used {
            assert!(layer(&u).is_some(), "{file}: `crate::{u}` has no layer");
        }
    }
}

#[test]
fn no_import_runs_back_up_the_pipeline() {
    let mut wrong = Vec::new();
    for (module, used) in uses() {
        let Some(mine) = layer(&module) else {
            continue;
        };
        for (u, file) in used {
            if layer(&u).is_some_and(|theirs| theirs >= mine) {
                wrong.push(format!("{file} uses crate::{u}"));
            }
        }
    }
    wrong.sort();
    wrong.dedup();
    assert!(
        wrong.is_empty(),
        "imports that run back up:\n{}",
        wrong.join("\n")
    );
}
