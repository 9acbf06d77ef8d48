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
    &["build"],
    &["runner", "compare"],
    &["diagnose", "bisect"],
    &["analysis"],
    &["report"],
    &["history"],
    &["drive"],
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

/// A module's files, each a node (a sub-folder is one node, as its files are one module to
/// the others): file stem → text without its `#[cfg(test)]` part.
fn files_of(dir: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_stem().unwrap().to_string_lossy().into_owned();
        let text = if p.is_dir() {
            let mut files = Vec::new();
            rust_files(&p, &mut files);
            files
                .iter()
                .map(|f| std::fs::read_to_string(f).unwrap())
                .collect::<Vec<_>>()
                .join("\n")
        } else if p.extension().is_some_and(|x| x == "rs") && !name.ends_with("tests") {
            std::fs::read_to_string(&p).unwrap()
        } else {
            continue;
        };
        let code = match text.find("#[cfg(test)]") {
            Some(i) => &text[..i],
            None => &text[..],
        };
        // Comments name files without importing them.
        let code: Vec<&str> = code
            .lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .collect();
        out.insert(name, code.join("\n"));
    }
    out
}

/// The names a file defines (functions, types, traits, constants, statics).
fn defined(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines() {
        let mut words = line.split_whitespace().peekable();
        while let Some(w) = words.peek() {
            if w.starts_with("pub") || *w == "async" || *w == "unsafe" {
                words.next();
            } else {
                break;
            }
        }
        if let (Some(kind), Some(name)) = (words.next(), words.next()) {
            if ["fn", "struct", "enum", "trait", "type", "const", "static"].contains(&kind) {
                let name: String = name
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                out.push(name);
            }
        }
    }
    out
}

/// The first segments of every path a file takes from `prefix` (`super::x::y` → `x`;
/// `super::{a, b::c}` → `a`, `b`).
fn taken(text: &str, prefix: &str) -> Vec<String> {
    let mut out = Vec::new();
    let ident = |s: &str| -> String {
        s.trim()
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    for (i, _) in text.match_indices(prefix) {
        let rest = &text[i + prefix.len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let (mut depth, mut item, mut end) = (0, String::new(), 0);
            for (k, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => {
                        end = k;
                        break;
                    }
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        out.push(ident(&item));
                        item.clear();
                        continue;
                    }
                    _ => {}
                }
                if depth == 0 {
                    item.push(c);
                }
            }
            let _ = end;
            out.push(ident(&item));
        } else {
            out.push(ident(rest));
        }
    }
    out.retain(|s| !s.is_empty() && s != "self");
    out
}

/// Within each module folder: file → the sibling files it takes names from. A name is the
/// sibling's when it is the sibling's own name (`super::live::…`) or a name only that
/// sibling defines (`super::Live`, re-exported or not). `mod.rs` is the folder's face —
/// what it declares and re-exports is the module's, and it may hold the types its files
/// share — so arrows into and out of it are not drawn.
fn file_arrows() -> BTreeMap<(String, String), Vec<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut arrows: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    for e in std::fs::read_dir(&src).unwrap() {
        let dir = e.unwrap().path();
        if !dir.is_dir() {
            continue;
        }
        let module = dir.file_name().unwrap().to_string_lossy().into_owned();
        let files = files_of(&dir);
        let defs: BTreeMap<&String, Vec<String>> =
            files.iter().map(|(f, t)| (f, defined(t))).collect();
        let owner = |name: &str| -> Option<&String> {
            if files.contains_key(name) {
                return files.keys().find(|f| *f == name);
            }
            let mut who = defs.iter().filter(|(_, d)| d.iter().any(|x| x == name));
            match (who.next(), who.next()) {
                (Some((f, _)), None) => Some(*f),
                _ => None,
            }
        };
        for (file, text) in files.iter().filter(|(f, _)| *f != "mod") {
            let mut names = taken(text, &format!("crate::{module}::"));
            names.extend(taken(text, "super::"));
            for n in names {
                if let Some(to) = owner(&n).filter(|to| *to != file && *to != "mod") {
                    arrows
                        .entry((format!("{module}/{file}"), format!("{module}/{to}")))
                        .or_default()
                        .push(n);
                }
            }
        }
    }
    arrows
}

/// No two files of a module take names from each other, directly or round a loop: each
/// folder's files stand in floors, as the modules do.
#[test]
fn no_two_files_import_each_other() {
    let arrows = file_arrows();
    let next = |from: &str| -> Vec<&String> {
        arrows
            .keys()
            .filter(|(a, _)| a == from)
            .map(|(_, b)| b)
            .collect()
    };
    let mut circles = Vec::new();
    for (start, _) in arrows.keys() {
        // Depth-first from `start`: a path back to it is a circle.
        let mut stack: Vec<Vec<&String>> = next(start).into_iter().map(|b| vec![b]).collect();
        let mut seen = std::collections::BTreeSet::new();
        while let Some(path) = stack.pop() {
            let last = *path.last().unwrap();
            if last == start {
                let names: Vec<String> = std::iter::once(start)
                    .chain(path.iter().copied())
                    .collect::<Vec<_>>()
                    .windows(2)
                    .map(|w| {
                        format!(
                            "{} -> {} ({})",
                            w[0],
                            w[1],
                            arrows[&(w[0].clone(), w[1].clone())].join(", ")
                        )
                    })
                    .collect();
                circles.push(names.join("; "));
                break;
            }
            if !seen.insert(last) {
                continue;
            }
            for n in next(last) {
                let mut p = path.clone();
                p.push(n);
                stack.push(p);
            }
        }
    }
    assert!(
        circles.is_empty(),
        "files that import each other:\n{}",
        circles.join("\n")
    );
}

/// What the test above relies on: paths and definitions read right, and arrows found where
/// the runner's floors have them (and not the other way).
#[test]
fn the_file_reader_finds_names_and_their_files() {
    assert_eq!(
        taken("use super::{a, b::{c, d}, E};", "super::"),
        ["a", "b", "E"]
    );
    assert_eq!(taken("super::live::save(x)", "super::"), ["live"]);
    assert_eq!(
        defined("pub(super) fn go() {}\nstruct S;\n    pub async fn run()"),
        ["go", "S", "run"]
    );
    // Today's tree has arrows to check (the runner's floors among them).
    let arrows = file_arrows();
    assert!(arrows.contains_key(&("runner/order".to_string(), "runner/point".to_string())));
    assert!(!arrows.contains_key(&("runner/point".to_string(), "runner/order".to_string())));
}
