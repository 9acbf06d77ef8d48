//! `ci github --install` with `cargo install --git URL` (docs/scale-out.md): pinned to the
//! commit its branch, tag or `HEAD` names when the workflow is written, so the workflow
//! installs what was chosen — not whatever the branch holds the night it runs — and the
//! binary's cache key (a hash of the command) names that commit.

use std::path::Path;
use std::time::Duration;

use anyhow::{bail, Context as _};

use super::yaml::Y;
use super::CiGithubArgs;
use crate::cancel::Cancel;

/// How long resolving the ref may take.
const LS_REMOTE_TIMEOUT: Duration = Duration::from_secs(60);

/// A flag's value, whether given as `--flag VALUE` or `--flag=VALUE`: its value and the
/// words it took.
fn value(words: &[&str], flag: &str) -> Option<(String, usize, usize)> {
    for (i, w) in words.iter().enumerate() {
        if *w == flag {
            return words.get(i + 1).map(|v| (unquote(v), i, 2));
        }
        if let Some(v) = w.strip_prefix(flag).and_then(|r| r.strip_prefix('=')) {
            return Some((unquote(v), i, 1));
        }
    }
    None
}

fn unquote(s: &str) -> String {
    s.trim_matches(|c| c == '\'' || c == '"').to_string()
}

/// `cmd` pinned: a `cargo install … --git URL` without `--rev` gets `--rev` the commit its
/// `--branch`, `--tag` or `HEAD` is at now (which it replaces), and what it was pinned to;
/// any other command as it is, and `None`.
pub fn pinned_install(cmd: &str, cancel: &Cancel) -> anyhow::Result<(String, Option<String>)> {
    let words: Vec<&str> = cmd.split_whitespace().collect();
    let installs = words.windows(2).any(|w| w == ["cargo", "install"]);
    let Some((url, at, _)) = value(&words, "--git") else {
        return Ok((cmd.to_string(), None));
    };
    if !installs || value(&words, "--rev").is_some() {
        return Ok((cmd.to_string(), None));
    }
    if url.is_empty() || url.starts_with('-') {
        bail!("--install: `--git` names no URL in {cmd:?}");
    }
    let (refname, drop) = match (value(&words, "--branch"), value(&words, "--tag")) {
        (Some((b, i, n)), None) => (format!("refs/heads/{b}"), Some((i, n))),
        (None, Some((t, i, n))) => (format!("refs/tags/{t}"), Some((i, n))),
        (None, None) => ("HEAD".to_string(), None),
        (Some(_), Some(_)) => bail!("--install: both `--branch` and `--tag` in {cmd:?}"),
    };
    let listed = crate::contender::capture(&crate::contender::Capture {
        program: Path::new("git"),
        args: &["ls-remote", "--end-of-options", &url, &refname, &format!("{refname}^{{}}")],
        dir: None,
        env: &[("GIT_TERMINAL_PROMPT", "0")],
        cancel,
        limit: LS_REMOTE_TIMEOUT,
        max_output: 1 << 20,
    })
    .map_err(|e| anyhow::anyhow!("{e}"))
    .with_context(|| format!("--install: cannot ask `{url}` where {refname} is, to pin the install to it; give `--rev COMMIT` yourself"))?;
    let listed = String::from_utf8_lossy(&listed);
    // An annotated tag's peeled line (`^{}`) names its commit; else the ref's own.
    let line = |peeled: bool| {
        listed.lines().find_map(|l| {
            let (id, name) = l.split_once('\t')?;
            (name.ends_with("^{}") == peeled).then(|| id.to_string())
        })
    };
    let Some(commit) = line(true).or_else(|| line(false)) else {
        bail!("--install: `{url}` has no {refname}; give `--rev COMMIT`");
    };
    if commit.len() < 40 || !commit.chars().all(|c| c.is_ascii_hexdigit()) {
        bail!("--install: `{url}` answered {commit:?} for {refname}, not a commit id");
    }
    let mut out: Vec<String> = Vec::new();
    for (i, w) in words.iter().enumerate() {
        if drop.is_some_and(|(d, n)| i >= d && i < d + n) {
            continue;
        }
        out.push(w.to_string());
        if i == at + usize::from(!words[at].contains('=')) {
            out.push("--rev".into());
            out.push(commit.clone());
        }
    }
    Ok((out.join(" "), Some(commit)))
}

/// Installing bakeoff: `--install`'s command, else this version from crates.io with the
/// binary kept in the Actions cache under its version, so only a version's first job
/// compiles it.
pub(super) fn install_steps(a: &CiGithubArgs) -> Vec<Y> {
    // The binary is kept under what identifies it: this version, or the install command
    // (which, for `--git`, names its `--rev`).
    let (version, command) = match &a.install {
        Some(cmd) => (
            format!("install-{}", &crate::history::fnv(cmd.bytes())[..12]),
            cmd.clone(),
        ),
        None => {
            let v = env!("CARGO_PKG_VERSION").to_string();
            let cmd = format!("cargo install --locked bakeoff --version {v}");
            (v, cmd)
        }
    };
    vec![
        Y::map([
            ("name", Y::str("Keep bakeoff's binary")),
            ("id", Y::str("bakeoff-bin")),
            ("uses", Y::str("actions/cache@v4")),
            (
                "with",
                Y::map([
                    ("path", Y::str("~/.cargo/bin/bakeoff")),
                    (
                        "key",
                        Y::str(format!("bakeoff-bin-${{{{ runner.os }}}}-{version}")),
                    ),
                ]),
            ),
        ]),
        Y::map([
            ("name", Y::str("Install bakeoff")),
            (
                "if",
                Y::str("steps.bakeoff-bin.outputs.cache-hit != 'true'"),
            ),
            ("run", Y::str(command)),
        ]),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_pinned_already_or_not_from_git_is_left_alone() {
        let c = Cancel::new();
        for cmd in [
            "cargo install --locked bakeoff --version 0.1.0",
            "cargo install --locked --git https://example.invalid/b --rev abc bakeoff",
            "cargo install --locked --git=https://example.invalid/b --rev=abc bakeoff",
            "cargo install --locked --path .",
        ] {
            assert_eq!(
                pinned_install(cmd, &c).unwrap(),
                (cmd.to_string(), None),
                "{cmd}"
            );
        }
    }
}
