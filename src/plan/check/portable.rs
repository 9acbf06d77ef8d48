//! Whether a plan runs in a CI runner's checkout (docs/scale-out.md, "In your own
//! repository"): every path it names stays inside the repository the plan is in — no
//! absolute path of the author's machine, no `..` past the repository's root, no `git` source
//! in a folder outside it. Paths of the system (`/usr/bin/…`), absolute paths to nothing on
//! this machine (a socket a server makes) and placeholders (`{source}`, `{env:…}`) pass.

use std::path::{Component, Path, PathBuf};

use toml::Spanned;

use super::super::error::{Locator, PlanError};
use super::super::raw::{RawPlan, RawSource};

/// Folders every runner has: a path under them is not the author's.
const SYSTEM: &[&str] = &[
    "/usr/", "/bin/", "/sbin/", "/lib/", "/lib64/", "/etc/", "/dev/", "/proc/", "/sys/", "/opt/",
];

/// The repository a plan at `plan` is in: the nearest folder above it with a `.git`, else
/// the plan's own folder.
pub fn root_of(plan: &Path) -> PathBuf {
    let dir = plan
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    dir.ancestors()
        .find(|d| d.join(".git").exists())
        .unwrap_or(&dir)
        .to_path_buf()
}

/// Refuses, at its place in the plan, the first path a runner's checkout would not have.
pub fn check(path: &Path, text: &str) -> Result<(), PlanError> {
    let loc = Locator::new(path, text);
    let raw: RawPlan = toml::from_str(text).map_err(|e| loc.from_toml(&e))?;
    let root = root_of(path);
    let base = std::fs::canonicalize(path.parent().unwrap_or(Path::new(".")))
        .unwrap_or_else(|_| root.clone());
    let paths = Paths {
        loc: &loc,
        root: &root,
        base: &base,
    };
    for p in &raw.protos {
        paths.file(p.span(), p.get_ref())?;
    }
    for c in &raw.contenders {
        let span = c.span();
        let c = c.get_ref();
        if let Some(d) = &c.dir {
            paths.file(span.clone(), d)?;
        }
        paths.source(c.source.as_ref())?;
        for argv in c
            .command
            .iter()
            .chain(&c.setup)
            .chain(&c.cleanup)
            .chain(&c.build)
        {
            paths.args(argv)?;
        }
        for m in &c.members {
            let m = m.get_ref();
            paths.source(m.source.as_ref())?;
            for argv in std::iter::once(&m.command).chain(&m.build) {
                paths.args(argv)?;
            }
        }
    }
    Ok(())
}

/// Folders a runner has, or that hold what a run makes (sockets, scratch files): a path
/// under them is not warned about.
const RUNNER_HAS: &[&str] = &[
    "/usr/bin/",
    "/usr/sbin/",
    "/usr/lib/",
    "/usr/share/",
    "/usr/include/",
    "/bin/",
    "/sbin/",
    "/lib/",
    "/lib64/",
    "/etc/",
    "/dev/",
    "/proc/",
    "/sys/",
    "/tmp/",
    "/var/",
    "/run/",
];

/// Each absolute path outside the repository that a command of the plan names and a fresh
/// runner would lack — not under a folder every runner has ([`RUNNER_HAS`]), and named by
/// none of the `[ci] setup` commands (`setup`, which make what the run needs) — as a
/// warning at its place: `/opt/elsewhere/setup.sh` passes [`check`] (a system folder) but is
/// there only on the author's machine.
pub fn lacking(path: &Path, text: &str, setup: &[String]) -> Result<Vec<PlanError>, PlanError> {
    let loc = Locator::new(path, text);
    let raw: RawPlan = toml::from_str(text).map_err(|e| loc.from_toml(&e))?;
    let root = root_of(path);
    let mut argvs: Vec<&Spanned<Vec<String>>> = Vec::new();
    for c in &raw.contenders {
        let c = c.get_ref();
        argvs.extend(
            c.command
                .iter()
                .chain(&c.setup)
                .chain(&c.cleanup)
                .chain(&c.build),
        );
        for m in &c.members {
            let m = m.get_ref();
            argvs.extend(std::iter::once(&m.command).chain(&m.build));
        }
    }
    let made = |p: &str| {
        setup.iter().any(|s| {
            Path::new(p)
                .ancestors()
                .filter(|a| a.components().count() > 2)
                .any(|a| s.contains(a.to_string_lossy().as_ref()))
        })
    };
    let mut out: Vec<PlanError> = Vec::new();
    for argv in argvs {
        for a in argv.get_ref() {
            let outside = a.starts_with('/')
                && !a.contains(char::is_whitespace)
                && !normal(Path::new(a)).starts_with(&root)
                && !RUNNER_HAS.iter().any(|h| a.starts_with(h));
            if outside && !made(a) && !out.iter().any(|e| e.message.contains(&format!("`{a}`"))) {
                out.push(loc.at(
                    argv.span(),
                    format!("`{a}` is outside the checkout and no `[ci] setup` command names it: a fresh runner lacks it; make it in `[ci] setup`, or keep it in the repository"),
                ));
            }
        }
    }
    Ok(out)
}

struct Paths<'a> {
    loc: &'a Locator<'a>,
    root: &'a Path,
    /// The plan's folder, which relative paths are read from.
    base: &'a Path,
}

impl Paths<'_> {
    /// A file or folder the plan names: relative, and inside the repository.
    fn file(&self, span: std::ops::Range<usize>, p: &str) -> Result<(), PlanError> {
        if p.starts_with('{') {
            return Ok(());
        }
        if Path::new(p).is_absolute() {
            let inside = normal(Path::new(p)).starts_with(self.root);
            // The system's, or none of this machine's files (a socket the server makes).
            if !inside && (SYSTEM.iter().any(|s| p.starts_with(s)) || !Path::new(p).exists()) {
                return Ok(());
            }
            let hint = match inside {
                true => format!(
                    "give it relative to the plan: `{}`",
                    relative(self.base, Path::new(p))
                ),
                false => format!(
                    "give it relative to the plan, inside the repository `{}`",
                    self.root.display()
                ),
            };
            return Err(self.loc.at(
                span,
                format!("`{p}` is a path on this machine, which a CI runner's checkout does not have: {hint}"),
            ));
        }
        let at = normal(&self.base.join(p));
        if !at.starts_with(self.root) {
            return Err(self.loc.at(
                span,
                format!("`{p}` leaves the repository `{}`: a CI runner checks out only the repository, so it would not be there", self.root.display()),
            ));
        }
        Ok(())
    }

    /// A `git` source in a folder, or a `path` source.
    fn source(&self, s: Option<&Spanned<RawSource>>) -> Result<(), PlanError> {
        let Some(s) = s else { return Ok(()) };
        let (span, s) = (s.span(), s.get_ref());
        let local = s.git.as_deref().filter(|g| !is_url(g));
        for p in local.iter().chain(s.path.as_deref().iter()) {
            self.file(span.clone(), p)?;
        }
        Ok(())
    }

    /// A command's words: an absolute path of this machine, or a relative one with `..`
    /// that leaves the repository, is refused.
    fn args(&self, argv: &Spanned<Vec<String>>) -> Result<(), PlanError> {
        for a in argv.get_ref() {
            let pathlike = a.starts_with('/') || a.starts_with("../") || a.contains("/../");
            if pathlike && !a.contains(char::is_whitespace) {
                self.file(argv.span(), a)?;
            }
        }
        Ok(())
    }
}

/// A git URL rather than a folder.
fn is_url(g: &str) -> bool {
    g.contains("://") || (g.contains('@') && g.contains(':'))
}

/// `to` from the folder `from`, both absolute: `..` up to what they share, then down.
fn relative(from: &Path, to: &Path) -> String {
    let (from, to) = (normal(from), normal(to));
    let shared = from
        .components()
        .zip(to.components())
        .take_while(|(a, b)| a == b)
        .count();
    let up = from.components().count() - shared;
    let mut out: Vec<String> = vec!["..".into(); up];
    out.extend(
        to.components()
            .skip(shared)
            .map(|c| c.as_os_str().to_string_lossy().into_owned()),
    );
    match out.is_empty() {
        true => ".".into(),
        false => out.join("/"),
    }
}

/// `p` with `.` and `..` taken out, without asking the file system.
fn normal(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo() -> PathBuf {
        let d = std::env::temp_dir().join(format!("bakeoff-portable-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join(".git")).unwrap();
        std::fs::create_dir_all(d.join("bench")).unwrap();
        d
    }

    fn err(root: &Path, text: &str) -> String {
        check(&root.join("bench/plan.toml"), text)
            .expect_err("refused")
            .to_string()
    }

    const HEAD: &str = "name = \"p\"\n[[contender]]\nname = \"a\"\n";

    #[test]
    fn paths_of_this_machine_or_out_of_the_repository_are_refused_at_their_place() {
        let root = repo();
        let plan = root.join("bench/plan.toml");
        // Relative, inside; the system's; placeholders; the repository itself as a source.
        let good = format!(
            "{HEAD}source = {{ git = \"..\" }}\nbuild = [[\"make\"]]\ncommand = [\"{{source}}/srv\", \"--conf\", \"../conf/x.toml\", \"/usr/bin/env\"]\nsetup = [[\"sh\", \"setup.sh\"]]\n"
        );
        check(&plan, &good).unwrap();
        let outside = root.with_extension("outside.sh");
        std::fs::write(&outside, "true\n").unwrap();
        let o = outside.display();
        let e = err(
            &root,
            &format!("{HEAD}command = [\"srv\"]\nsetup = [[\"sh\", \"{o}\"]]\n"),
        );
        assert!(
            e.contains("plan.toml:5:10:")
                && e.contains(&format!("`{o}` is a path on this machine")),
            "{e}"
        );
        // A path to nothing here (a socket the server makes) passes.
        check(
            &plan,
            &format!("{HEAD}command = [\"srv\", \"/run/srv/sock\", \"/nothing/here\"]\n"),
        )
        .unwrap();
        let e = err(
            &root,
            &format!("{HEAD}source = {{ git = \"../../elsewhere\" }}\ncommand = [\"srv\"]\n"),
        );
        assert!(
            e.contains("plan.toml:4:10:") && e.contains("leaves the repository"),
            "{e}"
        );
        let e = err(
            &root,
            &format!("{HEAD}dir = \"{o}\"\ncommand = [\"srv\"]\n"),
        );
        assert!(
            e.contains("plan.toml:2:1:") && e.contains("a path on this machine"),
            "{e}"
        );
        // The repository itself, given as this machine has it: said how to write it.
        let e = err(
            &root,
            &format!(
                "{HEAD}source = {{ git = \"{}\" }}\ncommand = [\"srv\"]\n",
                root.display()
            ),
        );
        assert!(e.contains("give it relative to the plan: `..`"), "{e}");
        // A URL source is fetched wherever the runner is.
        check(
            &plan,
            &format!(
                "{HEAD}source = {{ git = \"https://example.com/r.git\" }}\ncommand = [\"srv\"]\n"
            ),
        )
        .unwrap();
        let _ = std::fs::remove_file(outside);
        let _ = std::fs::remove_dir_all(root);
    }

    #[test]
    fn what_a_fresh_runner_lacks_is_warned_at_its_place() {
        let root = repo().with_extension("lacking");
        std::fs::create_dir_all(root.join(".git")).unwrap();
        let plan = root.join("bench/plan.toml");
        let text = format!(
            "{HEAD}command = [\"srv\", \"/tmp/srv.sock\"]\nsetup = [[\"sh\", \"/opt/elsewhere/setup.sh\"], [\"/usr/bin/env\"]]\n"
        );
        let said: Vec<String> = lacking(&plan, &text, &[])
            .unwrap()
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(said.len(), 1, "{said:?}");
        assert!(
            said[0].contains("plan.toml:5:10:")
                && said[0].contains("`/opt/elsewhere/setup.sh` is outside the checkout"),
            "{said:?}"
        );
        // A `[ci] setup` command that names it (or its folder) makes it.
        for setup in [
            "curl -o /opt/elsewhere/setup.sh https://example.com/s",
            "tar -C /opt/elsewhere -xf kit.tar",
        ] {
            assert!(
                lacking(&plan, &text, &[setup.to_string()])
                    .unwrap()
                    .is_empty(),
                "{setup}"
            );
        }
        // `/opt` alone names no folder of it.
        assert_eq!(
            lacking(&plan, &text, &["ls /opt".to_string()])
                .unwrap()
                .len(),
            1
        );
        let _ = std::fs::remove_dir_all(root);
    }
}
