//! The history (issue 50, docs/history.md) in a real SQLite file: runs of a small C server
//! built from three commits of a repository made at test time, recorded by `run --record`
//! and by `history import`, read back by `history list | show | export --csv`; two
//! processes recording at once both land; a file that is not a history is refused and left
//! as it was.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use common::*;

const SERVER: &str = include_str!("fixtures/fromsource/server.c");

/// One test at a time: the series `detect` reads are measured, and a test measuring beside
/// it puts steps in them that are the machine's (the steps `confirm` is for).
static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn bakeoff_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bakeoff"))
        .args(args)
        .current_dir(dir)
        .env("BAKEOFF_CACHE", dir.join("cache"))
        .env_remove("BAKEOFF_HISTORY")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// `text` as the server's source, committed at `when` (the committer time a series is
/// ordered by); the commit's id.
fn commit_server(repo: &Path, text: &str, message: &str, when: &str) -> String {
    std::fs::write(repo.join("server.c"), text).unwrap();
    git(repo, &["add", "server.c"]);
    let o = Command::new("git")
        .args(["-c", "user.email=t@example.com", "-c", "user.name=t"])
        .args(["commit", "-q", "-m", message])
        .current_dir(repo)
        .env("GIT_COMMITTER_DATE", when)
        .output()
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    git(repo, &["rev-parse", "HEAD"])
}

/// Three commits of the server and a plan that builds it at `--ref server=…`.
fn setup(dir: &Path) -> Vec<String> {
    let r = dir.join("repo");
    std::fs::create_dir_all(&r).unwrap();
    git(&r, &["init", "-q", "-b", "main"]);
    let mut ids = Vec::new();
    for k in 0..3 {
        let t = SERVER.replace("usage: server PORT", &format!("usage: server PORT ({k})"));
        // A day apart: a series is in commit-time order.
        let when = format!("2026-01-0{}T12:00:00Z", k + 1);
        ids.push(commit_server(&r, &t, &format!("commit {k}"), &when));
    }
    setup_plan(dir, 200);
    ids
}

/// The plan: the server built at `--ref server=…`, `requests` calls a repetition.
fn setup_plan(dir: &Path, requests: u32) {
    std::fs::write(
        dir.join("plan.toml"),
        r#"name = "history"
repetitions = 2

[[contender]]
name = "server"
source = { git = "repo", ref = "main" }
build = [["cc", "-O1", "-o", "server", "server.c", "-lpthread"]]
command = ["{source}/server", "{port}"]
ready = { http = "http://127.0.0.1:{port}/", timeout = "20s" }

[[scenario]]
name = "get"
http = "/"
clients = [1]
requests = REQUESTS
"#
        .replace("REQUESTS", &requests.to_string()),
    )
    .unwrap();
}

fn run_at(dir: &Path, id: &str, out: &str, record: bool) {
    let at = format!("server={id}");
    let mut args = vec!["run", "plan.toml", "--ref", &at, "--out", out];
    if record {
        args.extend(["--record", "--history", "h.sqlite"]);
    }
    let o = bakeoff_in(dir, &args);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    if record {
        assert!(err.contains("history: recorded run"), "{err}");
    }
}

#[test]
fn runs_recorded_are_read_back_as_series_over_commits() {
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = TempDir::new("history-round-trip");
    let ids = setup(dir.path());
    for (k, id) in ids.iter().enumerate() {
        run_at(dir.path(), id, &format!("out-{k}"), k != 1);
    }
    // The middle commit's results recorded afterwards; the first again: not twice.
    let o = bakeoff_in(
        dir.path(),
        &[
            "history",
            "import",
            "out-1",
            "out-0",
            "--history",
            "h.sqlite",
        ],
    );
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(
        err.contains("history: recorded run 3") && err.contains("is recorded already (run 1)"),
        "{err}"
    );

    let o = bakeoff_in(dir.path(), &["history", "list", "--history", "h.sqlite"]);
    let (list, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let row = list
        .lines()
        .find(|l| l.contains("history · server · get [clients=1] · throughput"))
        .unwrap_or_else(|| panic!("{list}"));
    assert!(
        row.contains("| 3 |") && row.contains(&ids[2][..10]),
        "{row}"
    );
    let id = row.split('`').nth(1).unwrap();

    let o = bakeoff_in(
        dir.path(),
        &["history", "show", id, "--history", "h.sqlite"],
    );
    let (show, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let at: Vec<usize> = ids
        .iter()
        .map(|c| show.find(&c[..10]).unwrap_or_else(|| panic!("{show}")))
        .collect();
    assert!(
        at[0] < at[1] && at[1] < at[2],
        "commits out of order:\n{show}"
    );
    assert!(
        show.contains("commit 1") && show.contains("req/s"),
        "{show}"
    );

    let o = bakeoff_in(
        dir.path(),
        &["history", "export", "--csv", "--history", "h.sqlite"],
    );
    let (csv, _) = text(&o);
    let lines: Vec<&str> = csv.lines().collect();
    assert!(
        lines[0].starts_with("time,commit,")
            && lines[0].contains("server.get [clients=1].throughput."),
        "{csv}"
    );
    assert_eq!(lines.len(), 4, "{csv}");
    for (line, id) in lines[1..].iter().zip(&ids) {
        let cells: Vec<&str> = line.split(',').collect();
        assert_eq!(cells[1], id, "{csv}");
        assert_eq!(cells.len(), lines[0].split(',').count());
        assert!(
            cells[2..]
                .iter()
                .all(|c| c.parse::<f64>().is_ok_and(|v| v > 0.0)),
            "{line}"
        );
    }
}

#[test]
fn two_processes_recording_at_once_both_land() {
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = TempDir::new("history-together");
    let ids = setup(dir.path());
    run_at(dir.path(), &ids[0], "out-0", false);
    run_at(dir.path(), &ids[2], "out-2", false);
    let db = dir.path().join("new/h.sqlite");
    let start = |out: &str| {
        Command::new(env!("CARGO_BIN_EXE_bakeoff"))
            .args(["history", "import", out, "--history"])
            .arg(&db)
            .current_dir(dir.path())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (a, b) = (start("out-0"), start("out-2"));
    for c in [a, b] {
        let o = c.wait_with_output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let o = bakeoff_in(
        dir.path(),
        &["history", "export", "--csv", "--history", "new/h.sqlite"],
    );
    let (csv, err) = text(&o);
    assert_eq!(csv.lines().count(), 3, "{csv}{err}");
    assert!(csv.contains(&ids[0]) && csv.contains(&ids[2]), "{csv}");
}

#[test]
fn a_file_that_is_not_a_history_is_refused_and_left_as_it_was() {
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = TempDir::new("history-refused");
    let ids = setup(dir.path());
    run_at(dir.path(), &ids[0], "out-0", false);
    let notes: PathBuf = dir.path().join("notes.txt");
    std::fs::write(&notes, "not a database\n").unwrap();
    let o = bakeoff_in(
        dir.path(),
        &["history", "import", "out-0", "--history", "notes.txt"],
    );
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("not an SQLite database"), "{err}");
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "not a database\n");
    // A run that cannot be recorded keeps its results, and says how to record them later.
    let at = format!("server={}", ids[1]);
    let o = bakeoff_in(
        dir.path(),
        &[
            "run",
            "plan.toml",
            "--ref",
            &at,
            "--out",
            "out-1",
            "--record",
            "--history",
            "notes.txt",
        ],
    );
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("bakeoff history import"), "{err}");
    assert!(dir.path().join("out-1/results.json").is_file());
    let o = bakeoff_in(dir.path(), &["history", "list", "--history", "none.sqlite"]);
    let (_, err) = text(&o);
    assert!(
        err.contains("no history at") && err.contains("--record"),
        "{err}"
    );
}

/// The loop's first half on a repository made here: 30 commits of the server, commit 18
/// making every answer dearer (four times the work); a run recorded per commit; `history detect`
/// finds the step in CPU per request, last good 17, first bad 18, a candidate.
#[test]
fn detect_finds_the_commit_where_a_series_stepped() {
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = TempDir::new("history-detect");
    let r = dir.path().join("repo");
    std::fs::create_dir_all(&r).unwrap();
    git(&r, &["init", "-q", "-b", "main"]);
    let mut ids = Vec::new();
    for k in 0..30 {
        // Four times the work: a step no neighbour on the machine hides.
        let work = if k >= 18 { "80000" } else { "20000" };
        let t = SERVER
            .replace("usage: server PORT", &format!("usage: server PORT ({k})"))
            .replace("#define WORK 20000", &format!("#define WORK {work}"));
        let when = format!("2026-01-{:02}T{:02}:00:00Z", 1 + k / 24, k % 24);
        ids.push(commit_server(&r, &t, &format!("commit {k}"), &when));
    }
    setup_plan(dir.path(), 3000);
    for (k, id) in ids.iter().enumerate() {
        run_at(dir.path(), id, &format!("out-{k}"), true);
    }
    let o = bakeoff_in(dir.path(), &["history", "detect", "--history", "h.sqlite"]);
    let (table, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    // The step at 18 is found; a run on a shared machine may show another, smaller one
    // (what `confirm` measures again side by side), so others are allowed.
    let at = format!("`{}` | `{}`", &ids[17][..10], &ids[18][..10]);
    let row = table
        .lines()
        .find(|l| l.contains("· cpu_per_request |") && l.contains(&at));
    if row.is_none_or(|r| !r.contains("| candidate |")) {
        let o = bakeoff_in(dir.path(), &["history", "list", "--history", "h.sqlite"]);
        let list = text(&o).0;
        let id = list
            .lines()
            .find(|l| l.contains("cpu_per_request"))
            .and_then(|l| l.split('`').nth(1))
            .unwrap_or("");
        let o = bakeoff_in(
            dir.path(),
            &["history", "show", id, "--history", "h.sqlite"],
        );
        panic!(
            "no candidate at 18:\n{table}\n{err}\n{list}\n{}",
            text(&o).0
        );
    }
    // Found again, it is the same step, not a second one.
    let o = bakeoff_in(dir.path(), &["history", "detect", "--history", "h.sqlite"]);
    assert_eq!(text(&o).0, table);
}
