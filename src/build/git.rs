//! The few git commands a source needs, each bounded in time and in what it prints.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The most a git command may print that bakeoff reads (a diff of a dirty tree included).
const OUTPUT_LIMIT: u64 = 256 << 20;

/// How long one git command may take (a fetch of a large repository included).
const GIT_TIMEOUT: Duration = Duration::from_secs(600);

/// Runs `git ARGS` (in `dir`), its standard output, or why it failed.
pub(super) fn git(dir: Option<&Path>, args: &[&str]) -> Result<Vec<u8>, String> {
    let mut c = Command::new("git");
    if let Some(d) = dir {
        c.arg("-C").arg(d);
    }
    c.args(args)
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdin(Stdio::null());
    bounded(c, GIT_TIMEOUT).map_err(|e| format!("`git {}`: {e}", args.join(" ")))
}

/// Runs a command to its end within `limit`; its standard output when it succeeds, else its
/// standard error's last line.
pub(super) fn bounded(mut c: Command, limit: Duration) -> Result<Vec<u8>, String> {
    use std::io::Read as _;
    c.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = crate::sys::children::spawn(&mut c).map_err(|e| e.to_string())?;
    let pid = child.id() as i32;
    let read = |r: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut out = Vec::new();
            if let Some(r) = r {
                let _ = r.take(OUTPUT_LIMIT).read_to_end(&mut out);
            }
            out
        })
    };
    let out = read(
        child
            .stdout
            .take()
            .map(|s| Box::new(s) as Box<dyn std::io::Read + Send>),
    );
    let err = read(
        child
            .stderr
            .take()
            .map(|s| Box::new(s) as Box<dyn std::io::Read + Send>),
    );
    let start = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) if start.elapsed() <= limit => std::thread::sleep(Duration::from_millis(5)),
            waited => {
                let _ = child.kill();
                let _ = child.wait();
                crate::sys::children::reaped(pid);
                return Err(match waited {
                    Err(e) => e.to_string(),
                    _ => format!("did not finish within {limit:?}"),
                });
            }
        }
    };
    crate::sys::children::reaped(pid);
    let (out, err) = (
        out.join().unwrap_or_default(),
        err.join().unwrap_or_default(),
    );
    if status.success() {
        Ok(out)
    } else {
        let err = String::from_utf8_lossy(&err);
        let last = err
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("");
        Err(format!("{status}: {last}"))
    }
}

/// The commit `rev` names in the repository at `repo`.
pub(super) fn commit_of(repo: &Path, rev: &str) -> Result<String, String> {
    let spec = format!("{rev}^{{commit}}");
    let out = git(
        Some(repo),
        &[
            "rev-parse",
            "--verify",
            "--quiet",
            "--end-of-options",
            &spec,
        ],
    )
    .map_err(|_| format!("`{rev}` is not a ref or commit of `{}`", repo.display()))?;
    Ok(String::from_utf8_lossy(&out).trim().to_string())
}

/// The repository's branches and tags (short names), for "did you mean".
pub(super) fn refs(repo: &Path) -> Vec<String> {
    git(
        Some(repo),
        &[
            "for-each-ref",
            "--format=%(refname:short)",
            "refs/heads",
            "refs/tags",
            "refs/remotes",
        ],
    )
    .map(|o| {
        String::from_utf8_lossy(&o)
            .lines()
            .map(str::to_string)
            .collect()
    })
    .unwrap_or_default()
}

/// NUL-separated paths printed by `git ls-files -z ARGS`.
pub(super) fn ls_files(repo: &Path, args: &[&str]) -> Result<Vec<String>, String> {
    let mut all = vec!["ls-files", "-z"];
    all.extend_from_slice(args);
    let out = git(Some(repo), &all)?;
    Ok(out
        .split(|&b| b == 0)
        .filter(|p| !p.is_empty())
        .map(|p| String::from_utf8_lossy(p).into_owned())
        .collect())
}
