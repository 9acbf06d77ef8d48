//! Incremental builds (issue 49, docs/bisect.md): `source = { …, incremental = true }` builds
//! each commit in one work tree kept in the cache, so a commit that changes one file of a
//! many-file C project compiles that file alone, and a Rust crate's second commit does not
//! compile its dependency again — read off the build logs, never off a clock. Each finished
//! build is still its own cache entry: what the first contender's `{source}` names keeps the
//! first commit's outputs.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::*;

const SERVER: &str = include_str!("fixtures/fromsource/server.c");

/// Two contenders, `a` at `first` and `b` at `second`, built incrementally from `repo`.
fn plan(dir: &Path, build: &str, command: &str) -> PathBuf {
    let text = format!(
        r#"name = "incremental"

[[contender]]
name = "a"
source = {{ git = "repo", ref = "first", incremental = true }}
build = [{build}]
command = [{command}]
ready = {{ http = "http://127.0.0.1:{{port}}/", timeout = "20s" }}

[[contender]]
name = "b"
baseline = "a"
source = {{ git = "repo", ref = "second", incremental = true }}
build = [{build}]
command = [{command}]
ready = {{ http = "http://127.0.0.1:{{port}}/", timeout = "20s" }}

[[scenario]]
name = "get"
http = "/"
clients = [1]
duration = "200ms"
"#
    );
    let p = dir.join("plan.toml");
    std::fs::write(&p, text).unwrap();
    p
}

fn run(dir: &Path) -> (serde_json::Value, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_bakeoff"))
        .args(["run", "plan.toml", "--smoke", "--out", "out"])
        .current_dir(dir)
        .env("BAKEOFF_CACHE", dir.join("cache"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(0), "{err}");
    (read_results(&dir.join("out")), err)
}

fn log(dir: &Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(format!("out/logs/{name}-build.log"))).unwrap()
}

/// The cache entry's tree of contender `k`'s build.
fn tree(dir: &Path, res: &serde_json::Value, k: usize) -> PathBuf {
    let key = res["contenders"][k]["source"]["key"].as_str().unwrap();
    dir.join("cache/builds").join(key).join("tree")
}

fn commit(repo: &Path, tag: &str) {
    git(repo, &["add", "-A"]);
    git(repo, &["commit", "-q", "-m", tag]);
    git(repo, &["tag", tag]);
}

#[test]
fn a_one_file_change_of_a_c_project_compiles_that_file_alone() {
    let dir = TempDir::new("incremental-c");
    let r = dir.path().join("repo");
    std::fs::create_dir_all(r.join("lib")).unwrap();
    git(&r, &["init", "-q", "-b", "main"]);
    std::fs::write(r.join("server.c"), SERVER).unwrap();
    for k in 0..24 {
        std::fs::write(
            r.join(format!("lib/f{k:02}.c")),
            format!("int f{k:02}(int x) {{ return x * {k} + 1; }}\n"),
        )
        .unwrap();
    }
    std::fs::write(
        r.join("Makefile"),
        "OBJS = $(patsubst %.c,%.o,$(wildcard lib/*.c))\n\
         server: server.o $(OBJS)\n\tcc -o server server.o $(OBJS) -lpthread\n\
         %.o: %.c\n\tcc -O1 -c -o $@ $<\n",
    )
    .unwrap();
    commit(&r, "first");
    std::fs::write(r.join("lib/f07.c"), "int f07(int x) { return x * 70; }\n").unwrap();
    commit(&r, "second");
    plan(dir.path(), r#"["make"]"#, r#""{source}/server", "{port}""#);
    let (res, err) = run(dir.path());
    let compiled = |name: &str| log(dir.path(), name).matches(" -c -o ").count();
    assert_eq!(compiled("a"), 25, "{}\n{err}", log(dir.path(), "a"));
    assert_eq!(compiled("b"), 1, "{}\n{err}", log(dir.path(), "b"));
    assert!(log(dir.path(), "b").contains("cc -O1 -c -o lib/f07.o lib/f07.c"));
    assert!(
        err.contains("a new work tree for incremental builds"),
        "{err}"
    );
    // Each build its own entry: a's tree still holds the first commit, without `.git`.
    let (ta, tb) = (tree(dir.path(), &res, 0), tree(dir.path(), &res, 1));
    assert_ne!(ta, tb);
    let f07 = |t: &Path| std::fs::read_to_string(t.join("lib/f07.c")).unwrap();
    assert!(f07(&ta).contains("x * 7 + 1") && f07(&tb).contains("x * 70"));
    assert!(ta.join("server").is_file() && !ta.join(".git").exists());
    // The work tree is the cache's to prune.
    let o = Command::new(env!("CARGO_BIN_EXE_bakeoff"))
        .args(["cache", "prune", "--all"])
        .env("BAKEOFF_CACHE", dir.path().join("cache"))
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&o.stderr);
    assert!(said.contains("and 1 incremental work tree"), "{said}");
    let left = std::fs::read_dir(dir.path().join("cache/work"))
        .unwrap()
        .filter(|e| {
            !e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .ends_with(".lock")
        })
        .count();
    assert_eq!(left, 0);
}

/// A tiny HTTP server in Rust with a path dependency (what it answers).
const MAIN_RS: &str = r#"use std::io::{Read, Write};
fn main() {
    let port: u16 = std::env::args().nth(1).unwrap().parse().unwrap();
    let l = std::net::TcpListener::bind(("127.0.0.1", port)).unwrap();
    for s in l.incoming() {
        let mut s = s.unwrap();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            let mut have = Vec::new();
            loop {
                let n = match s.read(&mut buf) { Ok(0) | Err(_) => return, Ok(n) => n };
                have.extend_from_slice(&buf[..n]);
                while let Some(end) = have.windows(4).position(|w| w == b"\r\n\r\n") {
                    have.drain(..end + 4);
                    let body = dep::answer();
                    let head = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", body.len());
                    if s.write_all(head.as_bytes()).and_then(|_| s.write_all(body.as_bytes())).is_err() {
                        return;
                    }
                }
            }
        });
    }
}
"#;

#[test]
fn a_rust_crates_second_commit_does_not_compile_its_dependency_again() {
    let dir = TempDir::new("incremental-rust");
    let r = dir.path().join("repo");
    std::fs::create_dir_all(r.join("src")).unwrap();
    std::fs::create_dir_all(r.join("dep/src")).unwrap();
    git(&r, &["init", "-q", "-b", "main"]);
    std::fs::write(
        r.join("Cargo.toml"),
        "[package]\nname = \"app\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\ndep = { path = \"dep\" }\n\n[workspace]\n",
    )
    .unwrap();
    std::fs::write(
        r.join("dep/Cargo.toml"),
        "[package]\nname = \"dep\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    )
    .unwrap();
    std::fs::write(
        r.join("dep/src/lib.rs"),
        "pub fn answer() -> &'static str { \"ok\" }\n",
    )
    .unwrap();
    std::fs::write(r.join("src/main.rs"), MAIN_RS).unwrap();
    std::fs::write(r.join(".gitignore"), "target/\n").unwrap();
    commit(&r, "first");
    std::fs::write(
        r.join("src/main.rs"),
        MAIN_RS.replace("let port: u16", "// the second commit\n    let port: u16"),
    )
    .unwrap();
    commit(&r, "second");
    plan(
        dir.path(),
        r#"["cargo", "build", "--offline", "--color", "never"]"#,
        r#""{source}/target/debug/app", "{port}""#,
    );
    let (_, err) = run(dir.path());
    let (a, b) = (log(dir.path(), "a"), log(dir.path(), "b"));
    assert!(
        a.contains("Compiling dep") && a.contains("Compiling app"),
        "{a}\n{err}"
    );
    assert!(b.contains("Compiling app"), "{b}\n{err}");
    assert!(!b.contains("Compiling dep"), "{b}");
}
