//! Nothing written into the user's checkout (issue 71, docs/first-bakeoff.md): a plan run
//! from a git work tree keeps its results under the repository's git folder, outside the
//! working tree — `git status` stays clean — unless the repository ignores
//! `bakeoff-results/`, and outside any repository they go where they always did.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};

use common::*;

fn plan(dir: &Path) {
    std::fs::write(dir.join("plan.toml"), demo_plan("mine", 50)).unwrap();
}

fn run_in(dir: &Path) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_bakeoff"))
        .args(["run", "plan.toml"])
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(0), "{err}");
    err
}

#[test]
fn results_stay_out_of_the_users_checkout() {
    let dir = TempDir::new("checkout");
    // The user's repository, the plan at its root, committed.
    let repo = dir.path().join("theirs");
    std::fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    plan(&repo);
    commit_all(&repo, "plan");
    let err = run_in(&repo);
    assert_eq!(git(&repo, &["status", "--porcelain"]), "", "{err}");
    assert!(!repo.join("bakeoff-results").exists());
    let kept = repo.join(".git/bakeoff-results");
    let runs: Vec<_> = std::fs::read_dir(&kept).unwrap().collect();
    assert_eq!(runs.len(), 1, "{err}");
    let folder = runs[0].as_ref().unwrap().path();
    assert!(folder.join("results.json").is_file());
    assert!(
        err.contains(&folder.join("results.json").display().to_string()),
        "{err}"
    );

    // A repository that ignores `bakeoff-results/` keeps them there, as bakeoff's own does.
    std::fs::write(repo.join(".gitignore"), "/bakeoff-results/\n").unwrap();
    commit_all(&repo, "plan");
    run_in(&repo);
    assert!(repo.join("bakeoff-results").is_dir());
    assert_eq!(git(&repo, &["status", "--porcelain"]), "");

    // Outside any repository: `bakeoff-results/` in the current folder.
    let plain = dir.path().join("plain");
    std::fs::create_dir_all(&plain).unwrap();
    plan(&plain);
    run_in(&plain);
    assert!(plain.join("bakeoff-results").is_dir());
}
