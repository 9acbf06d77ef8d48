//! Builds from source that try to get out (issue 47, item 1): a build program asked its
//! version in the user's checkout, a build that kills its own guard and leaves a daemon, a
//! git fetch from a server that never answers, a build cache another user could write to, a
//! password in a repository URL, and untracked symbolic links in a working tree — each
//! failed before its fix.

mod common;

use std::io::{BufRead as _, Write as _};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::*;

const SERVER: &str = include_str!("fixtures/fromsource/server.c");

fn executable(path: &Path, text: &str) {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// A repository with the tiny C server and a `build.sh` (as given) committed, tagged `v1`.
fn repo(dir: &Path, build_sh: &str) -> PathBuf {
    let r = dir.join("repo");
    std::fs::create_dir_all(&r).unwrap();
    git(&r, &["init", "-q", "-b", "main"]);
    std::fs::write(r.join("server.c"), SERVER).unwrap();
    executable(&r.join("build.sh"), build_sh);
    git(&r, &["add", "server.c", "build.sh"]);
    git(&r, &["commit", "-q", "-m", "v1"]);
    git(&r, &["tag", "v1"]);
    r
}

const CC: &str = "#!/bin/sh\nexec cc -O1 -o server server.c -lpthread\n";

/// A plan with contender `base` built from `git` by `build` (TOML arrays), measured for a
/// moment; `extra` goes after it.
fn plan(dir: &Path, source: &str, build: &str, extra: &str) -> PathBuf {
    let text = format!(
        r#"name = "escapes"
repetitions = 1

[[contender]]
name = "base"
source = {{ {source} }}
build = {build}
command = ["{{source}}/server", "{{port}}"]
ready = {{ http = "http://127.0.0.1:{{port}}/", timeout = "20s" }}
{extra}
[[scenario]]
name = "get"
http = "/"
clients = [1]
duration = "300ms"
"#
    );
    let p = dir.join("plan.toml");
    std::fs::write(&p, text).unwrap();
    p
}

fn bakeoff_cmd(cwd: &Path, cache: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_bakeoff"));
    c.args(args)
        .current_dir(cwd)
        .env("BAKEOFF_CACHE", cache)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

/// Runs `cmd` to its end within `limit`; past it, kills it and fails the test.
fn within(mut cmd: Command, limit: Duration, what: &str) -> Output {
    let child = cmd.spawn().unwrap();
    let pid = child.id() as i32;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    rx.recv_timeout(limit)
        .unwrap_or_else(|_| {
            // SAFETY: a signal to our own child, not yet waited for.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            panic!("{what}: still running after {limit:?}")
        })
        .unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Whether `pid` is a live (not zombie) process.
fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        s.rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z")
    })
}

/// Waits (at most `limit`) until `pid` is gone; whether it went.
fn gone_within(pid: i32, limit: Duration) -> bool {
    let until = Instant::now() + limit;
    while alive(pid) {
        if Instant::now() > until {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

/// Waits (at most 60 s) for a file to hold a line, and reads it.
fn wait_for_line(path: &Path) -> String {
    let until = Instant::now() + Duration::from_secs(60);
    loop {
        if let Ok(t) = std::fs::read_to_string(path) {
            if t.ends_with('\n') {
                return t.trim().to_string();
            }
        }
        assert!(Instant::now() < until, "{} never written", path.display());
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn pid_in(path: &Path) -> i32 {
    wait_for_line(path).parse().unwrap()
}

/// (a) The build cache's key asks a build program its version: only a program found on
/// PATH, from an empty folder, under a guard. `./build.sh --version` once ran in the user's
/// checkout (and wrote there), and a tool whose `--version` left a child holding its output
/// hung the run before it started.
#[test]
fn a_build_programs_version_is_asked_only_on_path_from_an_empty_folder_under_a_guard() {
    let dir = TempDir::new("esc-version");
    let marks = dir.path().join("marks");
    std::fs::create_dir_all(&marks).unwrap();
    let r = repo(
        dir.path(),
        "#!/bin/sh\n[ \"$1\" = --version ] && touch \"$PWD/asked-my-version\"\nexec cc -O1 -o server server.c -lpthread\n",
    );
    let bin = dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let m = marks.display();
    executable(
        &bin.join("slowtool"),
        &format!(
            "#!/bin/sh\nif [ \"$1\" = --version ]; then\n  pwd > {m}/cwd\n  sleep 300 &\n  echo $! > {m}/child\n  echo slowtool 1.0\nfi\nexit 0\n"
        ),
    );
    let p = plan(
        dir.path(),
        "git = \"repo\", ref = \"v1\"",
        "[[\"./build.sh\"], [\"slowtool\"]]",
        "",
    );
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut cmd = bakeoff_cmd(
        &r,
        &dir.path().join("cache"),
        &["run", p.to_str().unwrap(), "--out", "../out"],
    );
    cmd.env("PATH", path);
    let o = within(
        cmd,
        Duration::from_secs(180),
        "a run whose tool's --version leaves a child",
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        !r.join("asked-my-version").exists(),
        "`./build.sh --version` ran in the user's checkout"
    );
    let cwd = PathBuf::from(wait_for_line(&marks.join("cwd")));
    assert!(
        cwd != r && !cwd.starts_with(dir.path()),
        "asked from {}",
        cwd.display()
    );
    assert!(
        !cwd.exists(),
        "the empty folder is removed: {}",
        cwd.display()
    );
    let child = pid_in(&marks.join("child"));
    assert!(
        gone_within(child, Duration::from_secs(5)),
        "what `slowtool --version` started is still running"
    );
}

/// (b) A build command that starts a daemon (`setsid env -i`: no mark, no group) and kills
/// its own guard: the daemon is gone before the next contender's build starts, and what
/// that build started dies with a bakeoff killed by SIGKILL.
#[test]
fn a_build_that_kills_its_guard_leaves_nothing_running() {
    let dir = TempDir::new("esc-guard");
    let m = dir.path().join("marks");
    std::fs::create_dir_all(&m).unwrap();
    let md = m.display();
    let r = repo(
        dir.path(),
        &format!(
            "#!/bin/sh\nsetsid env -i sleep 300 &\necho $! > {md}/daemon\nkill -9 $PPID\nsleep 5\nexit 0\n"
        ),
    );
    let p = plan(
        dir.path(),
        "git = \"repo\", ref = \"v1\"",
        "[[\"./build.sh\"]]",
        &format!(
            r#"
[[contender]]
name = "next"
like = "base"
build = [["sh", "-c", "if kill -0 $(cat {md}/daemon) 2>/dev/null; then echo alive; else echo dead; fi > {md}/status; echo $$ > {md}/next; exec sleep 300"]]
"#
        ),
    );
    let mut bakeoff = bakeoff_cmd(
        dir.path(),
        &dir.path().join("cache"),
        &["run", p.to_str().unwrap(), "--out", "out"],
    )
    .spawn()
    .unwrap();
    let daemon = pid_in(&m.join("daemon"));
    let status = wait_for_line(&m.join("status"));
    let next = pid_in(&m.join("next"));
    bakeoff.kill().unwrap(); // SIGKILL
    let _ = bakeoff.wait();
    assert_eq!(
        status, "dead",
        "the daemon a build left ran into the next contender's build"
    );
    assert!(gone_within(daemon, Duration::from_secs(5)), "the daemon");
    assert!(
        gone_within(next, Duration::from_secs(5)),
        "the build running when bakeoff was killed"
    );
    drop(r);
}

/// Processes whose command line names `needle`.
fn running(needle: &str) -> Vec<i32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&p| alive(p))
        .filter(|p| {
            std::fs::read(format!("/proc/{p}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(needle))
        })
        .collect()
}

fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let until = Instant::now() + Duration::from_secs(60);
    while !cond() {
        assert!(Instant::now() < until, "{what}: not within 60 s");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// (c) git fetching from a server that never answers: SIGTERM ends the run at once, and a
/// bakeoff killed by SIGKILL leaves no git behind.
#[test]
fn a_fetch_from_a_silent_server_ends_with_bakeoff() {
    let dir = TempDir::new("esc-fetch");
    let port = silent_server().port();
    let url = format!("http://127.0.0.1:{port}/repo.git");
    let p = plan(
        dir.path(),
        &format!("git = \"{url}\", ref = \"main\""),
        "[[\"./build.sh\"]]",
        "",
    );
    for signal in [libc::SIGTERM, libc::SIGKILL] {
        let cache = dir.path().join(format!("cache-{signal}"));
        let mut cmd = bakeoff_cmd(dir.path(), &cache, &["run", p.to_str().unwrap()]);
        cmd.stdout(Stdio::null()).stderr(Stdio::null());
        let mut bakeoff: Child = cmd.spawn().unwrap();
        wait_until("git fetching", || {
            running(&format!("127.0.0.1:{port}"))
                .iter()
                .any(|&p| p != bakeoff.id() as i32)
        });
        let sent = Instant::now();
        // SAFETY: a signal to our own child, not yet waited for.
        unsafe { libc::kill(bakeoff.id() as i32, signal) };
        wait_until("bakeoff ending", || {
            matches!(bakeoff.try_wait(), Ok(Some(_)))
        });
        assert!(
            sent.elapsed() < Duration::from_secs(15),
            "signal {signal}: bakeoff took {:?} to end",
            sent.elapsed()
        );
        let left = || running(&format!("127.0.0.1:{port}"));
        let until = Instant::now() + Duration::from_secs(5);
        while !left().is_empty() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(left().is_empty(), "signal {signal}: git still running");
    }
}

/// (d) The cache is used only when it is the user's own and nobody else can write to it:
/// with no HOME and no XDG_CACHE_HOME it once fell back to a shared `$TMPDIR/bakeoff-cache`
/// where another user could plant a build; a lock named by a link made a file where it
/// pointed; a file where a build belongs made every run fail.
#[test]
fn a_cache_others_can_write_is_refused_and_links_in_it_are_not_followed() {
    let dir = TempDir::new("esc-cache");
    repo(dir.path(), CC);
    // A build that fails at once: its key is recorded all the same, nothing is measured.
    let p = plan(
        dir.path(),
        "git = \"repo\", ref = \"v1\"",
        "[[\"false\"]]",
        "",
    );
    let tmp = dir.path().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    // SAFETY: geteuid cannot fail.
    let me = unsafe { libc::geteuid() };
    let fallback = tmp.join(format!("bakeoff-cache-{me}"));
    let run_without_home = |out: &str| {
        let mut c = bakeoff_cmd(
            dir.path(),
            Path::new(""),
            &["run", p.to_str().unwrap(), "--out", out],
        );
        c.env_remove("BAKEOFF_CACHE")
            .env_remove("HOME")
            .env_remove("XDG_CACHE_HOME")
            .env("TMPDIR", &tmp);
        within(c, Duration::from_secs(120), "a run without HOME")
    };
    let error_of = |out: &str| {
        let res = read_results(&dir.path().join(out));
        res["contenders"][0]["source"]["error"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    // Writable by others.
    std::fs::create_dir_all(&fallback).unwrap();
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&fallback, std::fs::Permissions::from_mode(0o777)).unwrap();
    }
    let o = run_without_home("out-1");
    let e = error_of("out-1");
    assert!(
        e.contains(&fallback.display().to_string()) && e.contains("can be written by others"),
        "{e}\n{}",
        text(&o)
    );
    assert!(!fallback.join("builds").exists(), "nothing was put in it");
    // Another user's (only root can make one here).
    if me == 0 {
        std::fs::remove_dir_all(&fallback).unwrap();
        std::fs::create_dir_all(fallback.join("builds")).unwrap();
        std::os::unix::fs::chown(&fallback, Some(65534), Some(65534)).unwrap();
        let o = run_without_home("out-2");
        let e = error_of("out-2");
        assert!(e.contains("belongs to user 65534"), "{e}\n{}", text(&o));
    }
    // The fallback made fresh is the user's own, mode 0700.
    std::fs::remove_dir_all(&fallback).unwrap();
    let o = run_without_home("out-3");
    let e = error_of("out-3");
    assert!(e.contains("build failed"), "{e}\n{}", text(&o));
    {
        use std::os::unix::fs::MetadataExt as _;
        let m = std::fs::metadata(&fallback).unwrap();
        assert_eq!((m.uid(), m.mode() & 0o777), (me, 0o700));
    }
    // A link at a lock's name: the build fails, and nothing is made where it points.
    let res = read_results(&dir.path().join("out-3"));
    let key = res["contenders"][0]["source"]["key"]
        .as_str()
        .unwrap()
        .to_string();
    let target = dir.path().join("made-through-the-link");
    let lock = fallback.join("builds").join(format!("{key}.lock"));
    let _ = std::fs::remove_file(&lock);
    std::os::unix::fs::symlink(&target, &lock).unwrap();
    run_without_home("out-4");
    assert!(!target.exists(), "the lock was opened through a link");
    let e = error_of("out-4");
    assert!(e.contains(&format!("{key}.lock")), "{e}");
    std::fs::remove_file(&lock).unwrap();
    // A file where the build belongs: built all the same (with `--rebuild` too), and pruned.
    let p2 = plan(
        dir.path(),
        "git = \"repo\", ref = \"v1\"",
        "[[\"true\"]]",
        "",
    );
    let cache = dir.path().join("own-cache");
    let run = |out: &str, flags: &[&str]| {
        let args = [&["run", p2.to_str().unwrap(), "--out", out][..], flags].concat();
        let o = within(
            bakeoff_cmd(dir.path(), &cache, &args),
            Duration::from_secs(120),
            "a run",
        );
        (read_results(&dir.path().join(out)), text(&o))
    };
    let (res, _) = run("out-5", &[]);
    let key = res["contenders"][0]["source"]["key"]
        .as_str()
        .unwrap()
        .to_string();
    let done = cache.join("builds").join(&key);
    let plant = || {
        let _ = std::fs::remove_dir_all(&done);
        std::fs::write(&done, "not a build").unwrap();
    };
    for (out, flags) in [("out-6", &[][..]), ("out-7", &["--rebuild"][..])] {
        plant();
        let (res, all) = run(out, flags);
        let src = &res["contenders"][0]["source"];
        assert!(
            src["error"].is_null() && src["build"].is_object() && done.join("build.json").is_file(),
            "{flags:?}: {src}\n{all}"
        );
    }
    plant();
    let o = within(
        bakeoff_cmd(dir.path(), &cache, &["cache", "prune", "--all"]),
        Duration::from_secs(60),
        "prune",
    );
    assert!(o.status.success(), "{}", text(&o));
    assert!(std::fs::symlink_metadata(&done).is_err(), "pruned");
}

/// A static file server for git's "dumb" HTTP protocol: every GET answered from `root`.
fn dumb_http(root: PathBuf) -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            let root = root.clone();
            std::thread::spawn(move || {
                let mut r = std::io::BufReader::new(s.try_clone().unwrap());
                let mut line = String::new();
                let _ = r.read_line(&mut line);
                loop {
                    let mut h = String::new();
                    if r.read_line(&mut h).unwrap_or(0) == 0 || h.trim().is_empty() {
                        break;
                    }
                }
                let path = line.split_whitespace().nth(1).unwrap_or("/");
                let path = path.split('?').next().unwrap_or("");
                let file = root.join(path.trim_start_matches('/'));
                let mut s = s;
                match std::fs::read(&file).ok().filter(|_| !path.contains("..")) {
                    Some(body) => {
                        let _ = write!(
                            s,
                            "HTTP/1.0 200 OK\r\nContent-Length: {}\r\n\r\n",
                            body.len()
                        );
                        let _ = s.write_all(&body);
                    }
                    None => {
                        let _ = s.write_all(b"HTTP/1.0 404 Not Found\r\nContent-Length: 0\r\n\r\n");
                    }
                }
            });
        }
    });
    port
}

/// Every file under `dir` that holds `needle`, but the plan's own copy (kept to resume).
fn holding(dir: &Path, needle: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let t = e.file_type().unwrap();
            if t.is_dir() {
                stack.push(e.path());
            } else if t.is_file()
                && e.file_name() != "plan.toml"
                && std::fs::read(e.path())
                    .is_ok_and(|b| String::from_utf8_lossy(&b).contains(needle))
            {
                out.push(e.path());
            }
        }
    }
    out
}

/// (e) A password in a `git` URL is never written: not in results.json, the reports, the
/// progress on stderr, `cache list`, nor a failed fetch's message (git's own included).
#[test]
fn a_password_in_a_git_url_is_never_shown() {
    let dir = TempDir::new("esc-password");
    let r = repo(dir.path(), CC);
    let served = dir.path().join("served");
    std::fs::create_dir_all(&served).unwrap();
    git(
        dir.path(),
        &[
            "clone",
            "-q",
            "--bare",
            r.to_str().unwrap(),
            served.join("repo.git").to_str().unwrap(),
        ],
    );
    git(&served.join("repo.git"), &["update-server-info"]);
    let port = dumb_http(served);
    let secret = "s3cret-Pa55";
    let url = format!("http://alice:{secret}@127.0.0.1:{port}/repo.git");
    let p = plan(
        dir.path(),
        &format!("git = \"{url}\", ref = \"v1\""),
        "[[\"./build.sh\"]]",
        "",
    );
    let cache = dir.path().join("cache");
    let o = within(
        bakeoff_cmd(
            dir.path(),
            &cache,
            &["run", p.to_str().unwrap(), "--out", "out"],
        ),
        Duration::from_secs(180),
        "a run from a URL",
    );
    let all = text(&o);
    assert_eq!(o.status.code(), Some(0), "{all}");
    assert!(!all.contains(secret), "{all}");
    assert!(all.contains("alice:***@127.0.0.1"), "{all}");
    let res = read_results(&dir.path().join("out"));
    assert_eq!(
        res["contenders"][0]["source"]["commit"],
        git(&r, &["rev-parse", "v1"])
    );
    assert_eq!(
        holding(&dir.path().join("out"), secret),
        Vec::<PathBuf>::new()
    );
    let o = within(
        bakeoff_cmd(dir.path(), &cache, &["cache", "list"]),
        Duration::from_secs(30),
        "cache list",
    );
    let listed = text(&o);
    assert!(
        listed.contains("alice:***@") && !listed.contains(secret),
        "{listed}"
    );
    // A fetch that fails: git's message quotes the URL.
    let gone = plan(
        dir.path(),
        &format!("git = \"http://alice:{secret}@127.0.0.1:1/repo.git\", ref = \"v1\""),
        "[[\"./build.sh\"]]",
        "",
    );
    let o = within(
        bakeoff_cmd(
            dir.path(),
            &cache,
            &["plan", "check", gone.to_str().unwrap()],
        ),
        Duration::from_secs(60),
        "plan check",
    );
    let all = text(&o);
    assert!(!o.status.success() && all.contains("cannot fetch"), "{all}");
    assert!(!all.contains(secret), "{all}");
}

/// (f) `worktree = true` with untracked symbolic links: each is copied as a link (what it
/// names — a file outside the repository — never into the cache), and one to `/dev/zero`
/// or to a FIFO is neither read nor waited on.
#[test]
fn untracked_links_are_copied_as_links_and_never_followed() {
    let dir = TempDir::new("esc-links");
    let r = repo(dir.path(), CC);
    let outside = dir.path().join("outside.txt");
    std::fs::write(&outside, "TOP-SECRET-CONTENT\n").unwrap();
    std::os::unix::fs::symlink(&outside, r.join("secret-link")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", r.join("zero")).unwrap();
    let fifo = r.join("pipe");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    std::os::unix::fs::symlink("pipe", r.join("pipe-link")).unwrap();
    let p = plan(
        dir.path(),
        "git = \"repo\", worktree = true",
        "[[\"./build.sh\"]]",
        "",
    );
    let cache = dir.path().join("cache");
    let o = within(
        bakeoff_cmd(dir.path(), &cache, &["plan", "check", p.to_str().unwrap()]),
        Duration::from_secs(60),
        "plan check of a tree with links to /dev/zero and a FIFO",
    );
    assert!(o.status.success(), "{}", text(&o));
    let o = within(
        bakeoff_cmd(
            dir.path(),
            &cache,
            &["run", p.to_str().unwrap(), "--out", "out"],
        ),
        Duration::from_secs(180),
        "a run of a tree with links",
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let res = read_results(&dir.path().join("out"));
    let key = res["contenders"][0]["source"]["key"].as_str().unwrap();
    let tree = cache.join("builds").join(key).join("tree");
    let link = tree.join("secret-link");
    assert!(
        link.symlink_metadata().unwrap().file_type().is_symlink(),
        "copied as a link"
    );
    assert_eq!(std::fs::read_link(&link).unwrap(), outside);
    assert!(tree
        .join("zero")
        .symlink_metadata()
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(holding(&cache, "TOP-SECRET-CONTENT"), Vec::<PathBuf>::new());
}

/// A folder source's files are hashed in pieces: a 512 MiB file costs a buffer, not its
/// size (it was read whole).
#[test]
fn a_folder_sources_large_file_is_hashed_without_holding_it() {
    let dir = TempDir::new("esc-large");
    let folder = dir.path().join("folder");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(folder.join("server.c"), SERVER).unwrap();
    let big = std::fs::File::create(folder.join("big.bin")).unwrap();
    big.set_len(512 << 20).unwrap(); // sparse: nothing is written
    let p = plan(
        dir.path(),
        "path = \"folder\"",
        "[[\"cc\", \"-o\", \"server\", \"server.c\", \"-lpthread\"]]",
        "",
    );
    let (ok, peak_mib) = peak_rss_mib(bakeoff_cmd(
        dir.path(),
        &dir.path().join("cache"),
        &["plan", "check", p.to_str().unwrap()],
    ));
    assert!(ok, "plan check failed");
    assert!(
        peak_mib < 200,
        "plan check's peak RSS {peak_mib} MiB for a 512 MiB file"
    );
}
