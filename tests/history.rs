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
    bakeoff_env(dir, args, &[])
}

fn bakeoff_env(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bakeoff"))
        .args(args)
        .current_dir(dir)
        .envs(env.iter().copied())
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

/// Three commits of the server and a plan that builds it at `--ref server=…`. The second
/// commit's time is before the first's (a clock behind, a rebase): a series is in
/// first-parent order all the same.
fn setup(dir: &Path) -> Vec<String> {
    let r = dir.join("repo");
    std::fs::create_dir_all(&r).unwrap();
    git(&r, &["init", "-q", "-b", "main"]);
    let mut ids = Vec::new();
    for k in 0..3 {
        let t = SERVER.replace("usage: server PORT", &format!("usage: server PORT ({k})"));
        let when = format!("2026-01-0{}T12:00:00Z", [2, 1, 3][k]);
        ids.push(commit_server(&r, &t, &format!("commit {k}"), &when));
    }
    setup_plan(dir, 200);
    ids
}

/// The plan: the server built at `--ref server=…`, `requests` calls a repetition.
fn setup_plan(dir: &Path, requests: u32) {
    setup_plan_with(dir, requests, "", "");
}

/// The plan, with `head` before its contender and `contender` added to it.
fn setup_plan_with(dir: &Path, requests: u32, head: &str, contender: &str) {
    std::fs::write(
        dir.join("plan.toml"),
        r#"name = "history"
repetitions = 2
HEAD
[[contender]]
name = "server"
source = { git = "repo", ref = "main" }
build = [["cc", "-O1", "-o", "server", "server.c", "-lpthread"]]
command = ["{source}/server", "{port}"]
ready = { http = "http://127.0.0.1:{port}/", timeout = "20s" }
CONTENDER

[[scenario]]
name = "get"
http = "/"
clients = [1]
requests = REQUESTS
"#
        .replace("REQUESTS", &requests.to_string())
        .replace("HEAD", head)
        .replace("CONTENDER", contender),
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

/// `n` commits of the server, a day's hours apart; `work(k)` is commit k's source.
fn commits(dir: &Path, n: usize, source: impl Fn(usize) -> String) -> Vec<String> {
    let r = dir.join("repo");
    std::fs::create_dir_all(&r).unwrap();
    git(&r, &["init", "-q", "-b", "main"]);
    (0..n)
        .map(|k| {
            let t = source(k).replace("usage: server PORT", &format!("usage: server PORT ({k})"));
            let when = format!("2026-01-{:02}T{:02}:00:00Z", 1 + k / 24, k % 24);
            commit_server(&r, &t, &format!("commit {k}"), &when)
        })
        .collect()
}

/// The table row of the step `history detect` (or `detect --confirm`) found between `ids[k-1]`
/// and `ids[k]` in CPU per request.
fn step_row<'a>(table: &'a str, ids: &[String], k: usize) -> Option<&'a str> {
    let at = format!("`{}` | `{}`", &ids[k - 1][..10], &ids[k][..10]);
    table
        .lines()
        .find(|l| l.contains("· cpu_per_request |") && l.contains(&at))
}

/// The history's series and the points of its CPU-per-request one, for a failure's message.
fn series_dump(dir: &Path) -> String {
    let list = text(&bakeoff_in(
        dir,
        &["history", "list", "--history", "h.sqlite"],
    ))
    .0;
    let id = list
        .lines()
        .find(|l| l.contains("cpu_per_request"))
        .and_then(|l| l.split('`').nth(1))
        .unwrap_or("");
    let show = text(&bakeoff_in(
        dir,
        &["history", "show", id, "--history", "h.sqlite"],
    ))
    .0;
    format!("{list}\n{show}")
}

/// The page `history report` wrote: self-contained, and rendered by headless Chromium
/// neither blank nor with a console message.
fn dashboard(dir: &Path) -> String {
    let o = bakeoff_in(
        dir,
        &[
            "history",
            "report",
            "--out",
            "dash",
            "--history",
            "h.sqlite",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o).1);
    let page = dir.join("dash/index.html");
    let html = std::fs::read_to_string(&page).unwrap();
    assert_eq!(
        html.matches("http://").count(),
        html.matches("xmlns=\"http://www.w3.org/2000/svg\"").count(),
        "the page refers to the network"
    );
    assert!(!html.contains(" src=") && !html.contains("<link") && !html.contains("<script"));
    if let Some(chromium) = chromium_bin() {
        let blank = dir.join("blank.html");
        std::fs::write(&blank, "<!doctype html><html><body></body></html>").unwrap();
        let (shot, blank_shot) = (dir.join("dash.png"), dir.join("blank.png"));
        let log = screenshot(&chromium, &page, &shot, &dir.join("profile-a"));
        screenshot(&chromium, &blank, &blank_shot, &dir.join("profile-b"));
        assert!(
            !log.contains(":CONSOLE"),
            "console output while rendering: {log}"
        );
        let size = |p: &Path| std::fs::metadata(p).unwrap().len();
        assert!(
            size(&shot) > 3 * size(&blank_shot),
            "the dashboard looks blank"
        );
    }
    html
}

/// The loop on a repository made here: 30 commits of the server, commit 18 making every
/// answer dearer (four times the work); a run recorded per commit. `history detect` finds the
/// step in CPU per request, last good 17, first bad 18, a candidate; `detect --confirm` builds
/// 17 and 18, measures them side by side, marks the step confirmed and exits 4; the dashboard
/// draws it.
#[test]
fn a_step_in_the_code_is_found_confirmed_and_drawn() {
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = TempDir::new("history-detect");
    let ids = commits(dir.path(), 30, |k| {
        // Four times the work: a step no neighbour on the machine hides.
        let work = if k >= 18 { "80000" } else { "20000" };
        SERVER.replace("#define WORK 20000", &format!("#define WORK {work}"))
    });
    setup_plan(dir.path(), 3000);
    for (k, id) in ids.iter().enumerate() {
        run_at(dir.path(), id, &format!("out-{k}"), true);
    }
    let o = bakeoff_in(dir.path(), &["history", "detect", "--history", "h.sqlite"]);
    let (table, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    // The step at 18 is found; a run on a shared machine may show another, smaller one
    // (what `confirm` measures again side by side), so others are allowed.
    let row = step_row(&table, &ids, 18);
    if row.is_none_or(|r| !r.contains("| candidate |")) {
        panic!(
            "no candidate at 18:\n{table}\n{err}\n{}",
            series_dump(dir.path())
        );
    }
    // Found again, it is the same step, not a second one.
    let o = bakeoff_in(dir.path(), &["history", "detect", "--history", "h.sqlite"]);
    assert_eq!(text(&o).0, table);

    let o = bakeoff_in(
        dir.path(),
        &[
            "history",
            "detect",
            "--confirm",
            "--out",
            "confirm",
            "--budget",
            "2m",
            "--history",
            "h.sqlite",
        ],
    );
    let (_, err) = text(&o);
    assert_eq!(
        o.status.code(),
        Some(4),
        "a confirmed regression exits 4:\n{err}"
    );
    let step: &str = step_row(&table, &ids, 18)
        .unwrap()
        .split('|')
        .nth(1)
        .unwrap()
        .trim();
    assert!(
        err.contains(&format!("confirm: step {step} (history · server · get [clients=1] · cpu_per_request): confirmed — ")),
        "{err}"
    );
    let o = bakeoff_in(dir.path(), &["history", "detect", "--history", "h.sqlite"]);
    let again = text(&o).0;
    assert!(
        step_row(&again, &ids, 18)
            .unwrap()
            .contains("| confirmed |"),
        "{again}"
    );
    let html = dashboard(dir.path());
    assert!(
        html.contains("class=\"step confirmed\""),
        "the step is drawn"
    );
    assert!(html.matches("class=\"point\"").count() >= 30);
    // The commits on either side of the step are named under the axis (issue 71: only
    // every fourth of 30 was, and 17 and 18 are not among them).
    for k in [17, 18] {
        assert!(
            html.contains(&format!(">{}</text>", &ids[k][..7])),
            "commit {k} is not labelled"
        );
    }
}

/// The other half: the same server at every commit, but the runs from commit 12 on were made
/// on a machine four times slower for it (the server's WORK from the environment) — a step
/// in the history that no commit made. `detect` finds it; `confirm` measures 11 and 12 side by
/// side on today's machine and does not confirm it. The plan records by itself (`[history]
/// record = true`) and names its commits' page, which the dashboard links.
#[test]
fn a_step_the_machine_made_is_not_confirmed() {
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = TempDir::new("history-machine");
    let from_env = SERVER.replace(
        "#define WORK 20000",
        "static unsigned long WORK = 20000;",
    )
    .replace(
        "int main(int argc, char **argv) {",
        "int main(int argc, char **argv) {\n    if (getenv(\"WORK\")) WORK = strtoul(getenv(\"WORK\"), 0, 10);",
    );
    let ids = commits(dir.path(), 20, |_| from_env.clone());
    setup_plan_with(
        dir.path(),
        3000,
        "\n[history]\nrecord = true\ncommit_url = \"https://example.com/r/commit/{commit}\"\n",
        "env = { WORK = \"{env:WORK:-20000}\" }\n",
    );
    for (k, id) in ids.iter().enumerate() {
        let at = format!("server={id}");
        let out = format!("out-{k}");
        let args = [
            "run",
            "plan.toml",
            "--ref",
            &at,
            "--out",
            &out,
            "--history",
            "h.sqlite",
        ];
        let work: &[(&str, &str)] = if k >= 12 { &[("WORK", "80000")] } else { &[] };
        let o = bakeoff_env(dir.path(), &args, work);
        let err = text(&o).1;
        assert_eq!(o.status.code(), Some(0), "{err}");
        assert!(err.contains("history: recorded run"), "{err}");
    }
    let o = bakeoff_in(dir.path(), &["history", "detect", "--history", "h.sqlite"]);
    let (table, err) = text(&o);
    let Some(row) = step_row(&table, &ids, 12) else {
        panic!(
            "no step at 12:\n{table}\n{err}\n{}",
            series_dump(dir.path())
        );
    };
    let step: &str = row.split('|').nth(1).unwrap().trim();
    let o = bakeoff_in(
        dir.path(),
        &[
            "history",
            "confirm",
            step,
            "--out",
            "confirm",
            "--history",
            "h.sqlite",
        ],
    );
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let read = err
        .lines()
        .find(|l| l.starts_with(&format!("confirm: step {step} (")) && l.contains(" — "))
        .unwrap_or_else(|| panic!("{err}"));
    assert!(
        read.contains("): rejected — ") || read.contains("): inconclusive — "),
        "{read}"
    );
    let html = dashboard(dir.path());
    assert!(
        html.contains(&format!(
            "href=\"https://example.com/r/commit/{}\"",
            ids[12]
        )),
        "commits are linked"
    );
    assert!(!html.contains("class=\"step confirmed\""));
    assert!(!html.contains("class=\"confirmed\""));
}

/// Results whose contenders name no commit (a server not built from source, the plan outside
/// any repository — the project's own benchmarks) take the one `history import --commit`
/// gives, from the repository in the current folder; without it they are points of their
/// own, and a ref that is not a commit is refused.
#[test]
fn results_without_a_commit_take_the_one_given_on_import() {
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = TempDir::new("history-given");
    let plans = dir.path().join("plans");
    std::fs::create_dir_all(&plans).unwrap();
    std::fs::write(plans.join("plan.toml"), demo_plan("bench", 200)).unwrap();
    let o = bakeoff_in(&plans, &["run", "plan.toml", "--out", "../out"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o).1);
    let ids = setup(dir.path());
    let repo = dir.path().join("repo");
    let o = bakeoff_in(
        &repo,
        &[
            "history",
            "import",
            "../out",
            "--commit",
            "nonsense",
            "--history",
            "../h.sqlite",
        ],
    );
    let err = text(&o).1;
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("--commit nonsense: not a commit"), "{err}");
    let o = bakeoff_in(
        &repo,
        &[
            "history",
            "import",
            "../out",
            "--commit",
            "HEAD",
            "--history",
            "../h.sqlite",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o).1);
    let o = bakeoff_in(dir.path(), &["history", "list", "--history", "h.sqlite"]);
    let list = text(&o).0;
    let row = list
        .lines()
        .find(|l| l.contains("bench · demo · get [clients=1] · throughput"))
        .unwrap_or_else(|| panic!("{list}"));
    assert!(row.contains(&ids[2][..10]), "the repository's HEAD: {row}");
}

/// Issue 69, one command a night: 12 commits of the server, commit 7 four times the work; a
/// night every two commits (2, 4, 6, 8), each `run --record` of the plan, which pairs the
/// server with itself at a pinned reference (`[history] reference`), then `history detect
/// --confirm --bisect`. Nights 2, 4 and 6 raise nothing. The reference moves before night 6 —
/// to commit 11, a slow build, so night 6's ratio falls four times — and no step is found
/// across the move. Night 8 lands after the step: it is a candidate that night, confirmed
/// side by side, bisected between 6 and 8, and the alert names commit 7; exit 4. The nights
/// are screens (`night = "screen"`); the confirmation measures in full.
#[test]
fn a_step_is_caught_the_night_it_lands_and_its_culprit_named() {
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = TempDir::new("history-nightly");
    let d = dir.path();
    let ids = commits(d, 12, |k| {
        let work = if k >= 7 { "80000" } else { "20000" };
        SERVER.replace("#define WORK 20000", &format!("#define WORK {work}"))
    });
    // Six repetitions a night: the band compares nights' paired intervals, and over the
    // template's two (Student's t at 1 degree of freedom, with no budget to add more under
    // scripts/test.sh) they are too wide to tell any night from another.
    let plan_at = |reference: &str| {
        setup_plan_with(
            d,
            3000,
            &format!("[history]\nreference = \"{reference}\"\nnight = \"screen\"\n"),
            "",
        );
        let p = d.join("plan.toml");
        let text = std::fs::read_to_string(&p).unwrap();
        std::fs::write(&p, text.replace("repetitions = 2\n", "repetitions = 6\n")).unwrap();
    };
    let night = |k: usize| {
        run_at(d, &ids[k], &format!("out-{k}"), true);
        let out = format!("confirm-{k}");
        let o = bakeoff_in(
            d,
            &[
                "history",
                "detect",
                "--confirm",
                "--bisect",
                "--out",
                &out,
                "--budget",
                "2m",
                "--history",
                "h.sqlite",
            ],
        );
        let (table, err) = text(&o);
        let alerts = std::fs::read_to_string(d.join(&out).join("alerts.md")).unwrap_or_default();
        (o.status.code(), table, err, alerts)
    };
    plan_at(&ids[0]);
    for k in [2, 4] {
        let (code, table, err, alerts) = night(k);
        assert_eq!(code, Some(0), "night {k}:\n{table}\n{err}");
        assert!(!alerts.contains("Regression"), "night {k}: {alerts}");
    }
    // The ratio series is kept beside the absolute one.
    let list = text(&bakeoff_in(
        d,
        &["history", "list", "--history", "h.sqlite"],
    ))
    .0;
    assert!(
        list.contains("server · get [clients=1] · cpu_per_request ÷ reference"),
        "{list}"
    );
    plan_at(&ids[11]);
    let (code, table, err, _) = night(6);
    assert_eq!(code, Some(0), "night 6:\n{table}\n{err}");
    assert!(
        step_row(&table, &ids, 6).is_none() && !table.contains(&format!("`{}`", &ids[6][..10])),
        "a step across the reference's move:\n{table}"
    );
    let (code, table, err, alerts) = night(8);
    assert_eq!(
        code,
        Some(4),
        "night 8 confirms a regression:\n{table}\n{err}\n{}",
        series_dump(d)
    );
    let at = format!("`{}` | `{}`", &ids[6][..10], &ids[8][..10]);
    let row = table
        .lines()
        .find(|l| l.contains("cpu_per_request ÷ reference") && l.contains(&at))
        .unwrap_or_else(|| panic!("no step between 6 and 8:\n{table}"));
    assert!(row.contains("the night's band"), "{row}");
    assert!(
        alerts.contains(&format!("culprit: `{}` “commit 7”", &ids[7][..10])),
        "the alert names commit 7:\n{alerts}\n{err}"
    );
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.join("confirm-8/alerts.json")).unwrap()).unwrap();
    let first = &json["alerts"][0];
    assert_eq!(first["culprit"]["id"], ids[7].as_str(), "{json}");
    assert_eq!(first["regression"], true);
    assert!(first["ratio"].as_f64().unwrap() > 1.5, "{json}");
    // The night was a screen (the duration's rounds, no second stage); its confirmation
    // was not.
    let rounds = |results: &Path| {
        let r: serde_json::Value =
            serde_json::from_slice(&std::fs::read(results.join("results.json")).unwrap()).unwrap();
        r["paired"]["rounds"].as_str().map(str::to_string)
    };
    assert_eq!(rounds(&d.join("out-8")).as_deref(), Some("duration"));
    let confirmation = std::fs::read_dir(d.join("confirm-8"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.join("results.json").is_file())
        .expect("the confirmation's results");
    assert_eq!(rounds(&confirmation).as_deref(), Some("auto"));
    let html = dashboard(d);
    assert!(
        html.contains("class=\"moved\""),
        "the reference's move is drawn"
    );
    assert!(
        html.contains("class=\"step confirmed\""),
        "the step is drawn"
    );
}

/// Issue 71: one command backfills a new history — every second commit of a range and
/// the newest, each run beside the plan's reference and recorded, as its nights would have.
#[test]
fn a_range_of_commits_is_backfilled_in_one_command() {
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = TempDir::new("history-backfill");
    let d = dir.path();
    let ids = commits(d, 5, |_| SERVER.to_string());
    setup_plan_with(
        d,
        300,
        &format!("[history]\nreference = \"{}\"\n", ids[0]),
        "",
    );
    let o = bakeoff_in(
        d,
        &[
            "history",
            "backfill",
            "plan.toml",
            "--contender",
            "server",
            "--from",
            &ids[1],
            "--to",
            &ids[4],
            "--every",
            "2",
            "--out",
            "back",
            "--history",
            "h.sqlite",
        ],
    );
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(err.contains("backfill: 3 of the 4 commits"), "{err}");
    assert_eq!(err.matches("history: recorded run").count(), 3, "{err}");
    let list = text(&bakeoff_in(
        d,
        &["history", "list", "--history", "h.sqlite"],
    ))
    .0;
    let row = list
        .lines()
        .find(|l| l.contains("server · get [clients=1] · cpu_per_request ÷ reference"))
        .unwrap_or_else(|| panic!("{list}"));
    assert!(row.contains(" | 3 | "), "commits 1, 3 and 4: {row}");
    assert!(row.contains(&ids[4][..10]), "{row}");
    // A range that is not one is said with the flags the user gave.
    let o = bakeoff_in(
        d,
        &[
            "history",
            "backfill",
            "plan.toml",
            "--contender",
            "server",
            "--from",
            &ids[4],
            "--to",
            &ids[1],
            "--history",
            "h.sqlite",
        ],
    );
    let err = text(&o).1;
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("--from") && !err.contains("--good"), "{err}");
}
