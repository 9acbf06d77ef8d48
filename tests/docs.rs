//! What the docs promise about the examples is checked against the examples: counts in
//! comments and in the docs are what the plans hold; links lead somewhere; the README's plan
//! is a plan.

use std::path::Path;

use bakeoff::plan::Plan;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn the_etcd_compat_example_has_the_cases_its_docs_count() {
    let path = root().join("examples/etcd/compat.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    let plan = Plan::parse(&path, &text).unwrap();
    let cases: usize = plan.compat.iter().map(|c| c.cases.len()).sum();
    let said = format!("{cases} cases");
    assert!(
        text.lines().next().unwrap().contains(&said),
        "compat.toml's first line does not say {said}"
    );
    let page = std::fs::read_to_string(root().join("docs/same-answers.md")).unwrap();
    let line = page
        .lines()
        .find(|l| l.contains("bakeoff run examples/etcd/compat.toml"))
        .unwrap();
    assert!(
        line.contains(&said),
        "docs/same-answers.md says otherwise: {line}"
    );
}

#[test]
fn the_docs_link_only_to_files_in_the_repository() {
    let mut docs = vec![root().join("README.md")];
    for e in std::fs::read_dir(root().join("docs")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "md") {
            docs.push(p);
        }
    }
    for doc in docs {
        let text = std::fs::read_to_string(&doc).unwrap();
        let folder = doc.parent().unwrap();
        for part in text.split("](").skip(1) {
            let target = part.split(')').next().unwrap();
            if target.starts_with("http") || target.starts_with('#') || target.contains(' ') {
                continue;
            }
            let file = target.split('#').next().unwrap();
            let at = folder.join(file);
            let inside = std::fs::canonicalize(&at)
                .is_ok_and(|p| p.starts_with(std::fs::canonicalize(root()).unwrap()));
            assert!(
                inside,
                "{}: a link to nothing in the repository: {target}",
                doc.display()
            );
        }
    }
}

/// The plan the README offers as a start is a plan bakeoff reads, and shows what it says:
/// two contenders built from source at two refs, one scenario at two loads.
#[test]
fn the_readmes_plan_is_a_plan() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let text = readme
        .split("```toml\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .expect("the README shows a plan");
    // Read as if it were in this repository (its `git = "."`).
    let plan = Plan::parse(&root().join("plan.toml"), text).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(plan.contenders.len(), 2);
    assert!(plan.contenders.iter().all(|c| c.source.is_some()));
    let points: usize = plan.scenarios.iter().map(|s| s.points.len()).sum();
    assert_eq!(points, 2);
}
