//! Contenders built from source (docs/from-source.md): a repository at a ref (or its
//! working tree, or a folder) resolved to a commit, checked out without touching the user's
//! checkout, built once per run before anything is measured, kept in a cache keyed by what
//! determines the build, and described for the results (provenance, build cost).

pub mod cache;
mod git;
pub use git::{results_dir, results_root};
pub mod history;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::cancel::Cancel;
use crate::plan::{Location, Rev, Source, SourceKind};
use crate::results::{BuildInfo, SourceInfo};
mod fingerprint;
mod tree;
pub mod work;
use fingerprint::*;
use tree::*;

/// A 64-bit FNV-1a hash over bytes, fed in pieces (the cache key, a tree's fingerprint).
#[derive(Clone, Copy)]
struct Fnv(u64);

impl Fnv {
    fn new() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
    fn feed(&mut self, bytes: &[u8]) -> &mut Fnv {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
        // A separator, so ("ab", "c") and ("a", "bc") differ.
        self.0 = (self.0 ^ 0xff).wrapping_mul(0x0000_0100_0000_01b3);
        self
    }
    /// Bytes fed as part of one piece (`feed` ends a piece): a file fed in chunks hashes as
    /// it would whole.
    fn feed_part(&mut self, bytes: &[u8]) -> &mut Fnv {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
        self
    }
    fn hex(self) -> String {
        format!("{:016x}", self.0)
    }
}

/// `url` as it may be shown or saved: a password in it replaced by `***`.
pub fn redact(url: &str) -> String {
    crate::protocol::target::Endpoint::redact(url)
}

/// `text` (a message that may quote `url`, git's own included) with the URL's password
/// replaced by `***`.
fn scrub(text: &str, url: &str) -> String {
    let Some((_, rest)) = url.split_once("://") else {
        return text.to_string();
    };
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let Some(at) = rest[..end].rfind('@') else {
        return text.to_string();
    };
    let credentials = &rest[..at];
    match credentials.split_once(':') {
        Some((user, _)) => text.replace(credentials, &format!("{user}:***")),
        None => text.to_string(),
    }
}

/// A source resolved to what it is now: the commit, whether the tree differs from it, and
/// the repository to check it out from.
#[derive(Debug, Clone)]
pub struct Resolved {
    pub commit: Option<String>,
    pub dirty: bool,
    /// A hash of what a dirty tree (or a folder) holds beyond the commit.
    fingerprint: String,
    /// The local repository, or the cache's clone of a URL; the folder of a `path` source.
    from: PathBuf,
}

/// Resolves a source's ref to a commit (fetching a URL into the cache's partial clone); a ref
/// that does not exist is an error naming the nearest refs the repository has.
pub fn resolve(src: &Source, cache: &Path, cancel: &Cancel) -> Result<Resolved, String> {
    match &src.from {
        SourceKind::Path(p) => {
            if !p.is_dir() {
                return Err(format!("`source.path` `{}` is not a folder", p.display()));
            }
            Ok(Resolved {
                commit: None,
                dirty: true,
                fingerprint: folder_fingerprint(p, cancel)?,
                from: p.clone(),
            })
        }
        SourceKind::Git { repo, at, rev } => {
            let from = match at {
                Location::Local(p) => {
                    git::git(cancel, Some(p), &["rev-parse", "--git-dir"]).map_err(
                        |e| match cancel.is_cancelled() {
                            true => e,
                            false => format!(
                                "`source.git` `{repo}` ({}) is not a git repository",
                                p.display()
                            ),
                        },
                    )?;
                    p.clone()
                }
                Location::Url(url) => fetch(url, cache, cancel)?,
            };
            match rev {
                Rev::Worktree => {
                    let commit = git::commit_of(cancel, &from, "HEAD")?;
                    let fingerprint = worktree_fingerprint(&from, cancel)?;
                    let dirty = fingerprint != Fnv::new().hex();
                    Ok(Resolved {
                        commit: Some(commit),
                        dirty,
                        fingerprint,
                        from,
                    })
                }
                Rev::Ref(r) => {
                    let commit = git::commit_of(cancel, &from, r).map_err(|e| {
                        if cancel.is_cancelled() {
                            return e;
                        }
                        let refs = git::refs(cancel, &from);
                        let near = git::near_refs(r, &refs);
                        match near.is_empty() {
                            false => format!("{e}; did you mean `{}`?", near.join("`, `")),
                            true if refs.is_empty() => e,
                            true => format!(
                                "{e}; it has {}",
                                refs.iter().take(8).cloned().collect::<Vec<_>>().join(", ")
                            ),
                        }
                    })?;
                    Ok(Resolved {
                        commit: Some(commit),
                        dirty: false,
                        fingerprint: Fnv::new().hex(),
                        from,
                    })
                }
            }
        }
    }
}

/// The cache's partial clone of `url`, fetched again.
fn fetch(url: &str, cache: &Path, cancel: &Cancel) -> Result<PathBuf, String> {
    cache::ready(cache)?;
    let dir = cache
        .join("repos")
        .join(Fnv::new().feed(url.as_bytes()).hex());
    let offline = |e: String| {
        let why = match cancel.is_cancelled() {
            true => String::new(),
            false => {
                " (a URL needs the network: no network here, or a repository that is not there)"
                    .into()
            }
        };
        scrub(&format!("cannot fetch `{url}`: {e}{why}"), url)
    };
    let git = |dir: Option<&Path>, args: &[&str]| git::git(cancel, dir, args);
    if dir.join("HEAD").is_file() {
        git(
            Some(&dir),
            &["fetch", "--quiet", "--prune", "--tags", "origin"],
        )
        .map_err(offline)?;
    } else {
        let repos = cache.join("repos");
        std::fs::create_dir_all(&repos).map_err(|e| e.to_string())?;
        let tmp = dir.with_extension(format!("tmp-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&tmp);
        let t = tmp.to_string_lossy().into_owned();
        // `--`: a URL that looks like an option (`--upload-pack=…`) is a URL to git.
        let clone = [
            "clone",
            "--quiet",
            "--bare",
            "--filter=blob:none",
            "--",
            url,
            &t,
        ];
        git(None, &clone).map_err(offline)?;
        // Branches as remote-tracking refs too, so `origin/main` resolves as it does locally.
        let tracking = "+refs/heads/*:refs/remotes/origin/*";
        let _ = git(Some(&tmp), &["config", "remote.origin.fetch", tracking]);
        let _ = git(Some(&tmp), &["fetch", "--quiet", "origin"]);
        std::fs::rename(&tmp, &dir).or_else(|e| {
            // Another run made it meanwhile.
            let _ = std::fs::remove_dir_all(&tmp);
            if dir.join("HEAD").is_file() {
                Ok(())
            } else {
                Err(e.to_string())
            }
        })?;
    }
    Ok(dir)
}

/// What a build needs besides its source.
pub struct Request<'a> {
    pub contender: &'a str,
    pub source: &'a Source,
    pub env: &'a [(String, String)],
    /// The run's results folder: the build log goes to `logs/NAME-build.log`, the guards of
    /// its commands are recorded there.
    pub results: &'a Path,
    pub cache: &'a Path,
    pub rebuild: bool,
    pub cancel: &'a Cancel,
}

/// A built source: its tree and its provenance.
#[derive(Debug, Clone)]
pub struct Built {
    pub tree: PathBuf,
    pub info: SourceInfo,
}

/// The key of a build: the source as resolved, the build commands, the env, the toolchain.
fn key(src: &Source, r: &Resolved, env: &[(String, String)], cancel: &Cancel) -> String {
    let mut h = Fnv::new();
    // A commit is the same tree wherever its repository lies (two runners' checkouts); a
    // folder is known by where it is.
    if r.commit.is_none() {
        h.feed(r.from.to_string_lossy().as_bytes());
    }
    h.feed(r.commit.as_deref().unwrap_or("").as_bytes())
        .feed(r.fingerprint.as_bytes());
    for cmd in &src.build {
        for a in cmd {
            h.feed(a.as_bytes());
        }
        h.feed(b"\n");
    }
    for (k, v) in env {
        h.feed(k.as_bytes()).feed(v.as_bytes());
    }
    // An incremental build may differ from a clean one (what an earlier build left): its
    // own entry.
    if src.incremental {
        h.feed(b"incremental");
    }
    let mut programs: Vec<&str> = src.build.iter().map(|c| c[0].as_str()).collect();
    programs.sort_unstable();
    programs.dedup();
    for p in programs {
        h.feed(p.as_bytes()).feed(&toolchain(p, cancel));
    }
    h.hex()
}

/// What identifies a build program's version, for the key:
/// - a program found on PATH (`cc`, `make`): what it says of itself (`--version`), asked
///   from an empty folder, under a guard and the command's cancel, within 10 s;
/// - a program named by an absolute path: its size and modification time (it is not run:
///   `--version` means nothing to a user's script, which may act on any argument);
/// - a relative path (`./build.sh`): nothing — it is in the tree, whose commit is the key's.
fn toolchain(program: &str, cancel: &Cancel) -> Vec<u8> {
    let p = Path::new(program);
    if p.is_absolute() {
        return p.metadata().map_or_else(
            |_| Vec::new(),
            |m| {
                let mtime = m
                    .modified()
                    .ok()
                    .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok());
                format!("{} {:?}", m.len(), mtime).into_bytes()
            },
        );
    }
    let Some(found) = crate::contender::on_path(program) else {
        return Vec::new();
    };
    let Ok(empty) = EmptyDir::new() else {
        return Vec::new();
    };
    crate::contender::capture(&crate::contender::Capture {
        program: &found,
        args: &["--version"],
        dir: Some(empty.path()),
        env: &[],
        cancel,
        limit: Duration::from_secs(10),
        max_output: 64 << 10,
    })
    .unwrap_or_default()
}

/// A new empty folder of bakeoff's own (mode 0700) under the temporary folder, removed when
/// dropped with whatever was written into it.
struct EmptyDir(PathBuf);

impl EmptyDir {
    fn new() -> std::io::Result<EmptyDir> {
        use std::os::unix::fs::DirBuilderExt as _;
        use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
        static NEXT: AtomicU64 = AtomicU64::new(0);
        loop {
            let n = NEXT.fetch_add(1, Relaxed);
            let p = std::env::temp_dir().join(format!("bakeoff-empty-{}-{n}", std::process::id()));
            match std::fs::DirBuilder::new().mode(0o700).create(&p) {
                Ok(()) => return Ok(EmptyDir(p)),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
    }
    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for EmptyDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Where a source is from, as results record it (the rest is filled in as it is built).
fn provenance(source: &Source) -> SourceInfo {
    SourceInfo {
        repository: match &source.from {
            SourceKind::Git { repo, .. } => redact(repo),
            SourceKind::Path(p) => p.display().to_string(),
        },
        reference: match &source.from {
            SourceKind::Git {
                rev: Rev::Ref(r), ..
            } => Some(r.clone()),
            _ => None,
        },
        ..SourceInfo::default()
    }
}

/// The build the cache has at `done`, marked used now.
fn cached(
    req: &Request,
    mut entry: cache::Entry,
    done: &Path,
    mut info: SourceInfo,
    say: &mut dyn FnMut(String),
) -> Built {
    entry.used(req.contender);
    let _ = cache::write_entry(done, &entry);
    let mut b = entry.source.build.unwrap_or_default();
    b.cached = true;
    b.log = None;
    info.build = Some(b);
    say(format!(
        "{}: cached build of {} ({})",
        req.contender,
        req.source.describe(),
        short(&info)
    ));
    Built {
        tree: done.join("tree"),
        info,
    }
}

/// The source of `req` built, from the cache when it has the build. The provenance of a
/// failure (the log's last lines included) is the error.
pub fn build(req: &Request, say: &mut dyn FnMut(String)) -> Result<Built, Box<SourceInfo>> {
    let mut info = provenance(req.source);
    let fail = |mut info: SourceInfo, e: String| {
        info.error = Some(e);
        Box::new(info)
    };
    if let Err(e) = cache::ready(req.cache) {
        return Err(fail(info, e));
    }
    let resolved = match resolve(req.source, req.cache, req.cancel) {
        Ok(r) => r,
        Err(e) => return Err(fail(info, e)),
    };
    info.commit = resolved.commit.clone();
    info.dirty = resolved.dirty;
    info.key = key(req.source, &resolved, req.env, req.cancel);
    let builds = req.cache.join("builds");
    if let Err(e) = std::fs::create_dir_all(&builds) {
        return Err(fail(info, format!("{}: {e}", builds.display())));
    }
    let lock = builds.join(format!("{}.lock", info.key));
    let _held = match cache::Lock::take(&lock, &|| req.cancel.is_cancelled(), &mut || {
        say(format!(
            "{}: waiting for another run that builds the same ({})",
            req.contender, info.key
        ))
    }) {
        Ok(l) => l,
        Err(e) => return Err(fail(info, e)),
    };
    let done = builds.join(&info.key);
    if req.rebuild {
        cache::remove_any(&done);
    }
    if let Some(entry) = cache::read_entry(&done) {
        return Ok(cached(req, entry, &done, info, say));
    }
    // Whatever is there instead of a finished build (a folder without `build.json`, a file).
    cache::remove_any(&done);
    let tmp = builds.join(format!("{}.tmp-{}", info.key, std::process::id()));
    cache::remove_any(&tmp);
    say(format!(
        "{}: building {} ({})",
        req.contender,
        req.source.describe(),
        short(&info)
    ));
    let outcome = make(req, &resolved, &tmp.join("tree"), say);
    let b = match outcome {
        Ok(b) => b,
        Err(e) => {
            let _ = std::fs::remove_dir_all(&tmp);
            return Err(fail(info, e));
        }
    };
    say(format!(
        "{}: built in {:.1} s (CPU {:.1} s)",
        req.contender, b.seconds, b.cpu_s
    ));
    info.build = Some(b);
    let entry = cache::Entry {
        contender: req.contender.to_string(),
        used_by: Vec::new(),
        source: info.clone(),
        built_at: cache::now(),
        used_at: cache::now(),
    };
    let kept = cache::write_entry(&tmp, &entry).and_then(|()| std::fs::rename(&tmp, &done));
    if let Err(e) = kept {
        let _ = std::fs::remove_dir_all(&tmp);
        return Err(fail(
            info,
            format!("keeping the build in {}: {e}", done.display()),
        ));
    }
    Ok(Built {
        tree: done.join("tree"),
        info,
    })
}

/// The build made at `tree`: checked out there and built, or (`incremental`) built in the
/// cache's work tree and copied there.
fn make(
    req: &Request,
    resolved: &Resolved,
    tree: &Path,
    say: &mut dyn FnMut(String),
) -> Result<BuildInfo, String> {
    if req.source.incremental {
        let w = work::tree(req, resolved, say)?;
        let b = run_build(req, &w.tree, say)?;
        work::keep(&w, tree)?;
        return Ok(b);
    }
    checkout(req.source, resolved, tree, req.cancel)?;
    run_build(req, tree, say)
}

/// `abc1234`, `abc1234, dirty` or `folder`.
fn short(info: &SourceInfo) -> String {
    match &info.commit {
        Some(c) => format!(
            "{}{}",
            crate::units::prefix(c, 12),
            if info.dirty { ", dirty" } else { "" }
        ),
        None => "folder".into(),
    }
}
