//! A history step's confirmation (`history confirm`, `detect --confirm`; docs/history.md,
//! "Closing the loop"): a
//! step found in the history measured again side by side — the plan's contender at its last
//! good commit against its first bad one, built from source, paired — and its status set
//! from the verdict.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context as _};

use super::culprit::{bisect_command, bisect_step, scenario, Group};
use super::{run_cut, short};
use crate::analysis::verdicts::{Figure, Verdict};
use crate::cancel::Cancel;
use crate::history::alert::{Alert, Culprit};
use crate::history::changes::{Change, Status};
use crate::history::Store;
use crate::plan::Plan;
use crate::runner;
use crate::stats::paired::Call;

/// How a step is measured again (`history confirm`'s and `detect --confirm`'s flags).
#[derive(Debug, Clone, Default)]
pub struct Settings {
    /// The plan to run (none: the file the step's plan was last recorded from, when trusted).
    pub plan: Option<PathBuf>,
    /// `--budget` (`Some(None)`: off).
    pub budget: Option<Option<std::time::Duration>>,
    /// Where the confirmations' results go (none: a new results folder).
    pub out: Option<PathBuf>,
    /// The smallest step worth an alert, in percent.
    pub min_magnitude: f64,
    /// Bisect a confirmed step whose commits are not neighbours.
    pub bisect: bool,
}

/// What confirming a list of steps came to: its exit code — 4 when a regression is
/// confirmed, else 130 when interrupted, else 2 when a step could not be measured, else 0.
/// Steps between the same two commits (several figures or points that stepped together)
/// are measured in one run.
pub fn confirm(
    store: &mut Store,
    steps: &[Change],
    with: &Settings,
    cancel: &Cancel,
) -> anyhow::Result<u8> {
    if steps.is_empty() {
        eprintln!("confirm: no candidate to measure again");
        return Ok(0);
    }
    let root = match &with.out {
        Some(d) => d.clone(),
        None => crate::build::results_dir(&crate::results::now_utc(), "confirm"),
    };
    let mut groups: Vec<Vec<&Change>> = Vec::new();
    for s in steps {
        match groups.iter_mut().find(|g| same_run(g[0], s)) {
            Some(g) => g.push(s),
            None => groups.push(vec![s]),
        }
    }
    let (mut regressions, mut failed) = (0, 0);
    let mut alerts: Vec<Alert> = Vec::new();
    for (k, group) in groups.iter().enumerate() {
        if cancel.is_cancelled() {
            return Ok(130);
        }
        let f = &group[0].found;
        let dir = root.join(format!(
            "{:02}-{}-{}",
            k + 1,
            short(&f.last_good),
            short(&f.first_bad)
        ));
        let reads = match measure(store, group, with, &dir, cancel) {
            Ok(None) => return Ok(130),
            Ok(Some(reads)) => reads,
            Err(e) => {
                failed += group.len();
                for step in group {
                    eprintln!(
                        "confirm: step {} ({}) was not measured: {e:#}",
                        step.id,
                        step.found.key.words()
                    );
                }
                continue;
            }
        };
        let (r, n) = set(store, group, reads, &dir, &mut alerts)?;
        regressions += r;
        failed += n;
    }
    crate::history::alert::write(&root, &alerts)?;
    eprintln!(
        "confirm: results in {}; the alerts in {}",
        root.display(),
        root.join("alerts.md").display()
    );
    Ok(match (regressions, failed) {
        (1.., _) => 4,
        (_, 1..) => 2,
        _ => 0,
    })
}

/// Each step's status from what its run read, said as it is set, a confirmed one added to
/// `alerts`; how many regressions it confirmed and how many steps it could not read.
fn set(
    store: &mut Store,
    group: &[&Change],
    reads: Vec<Option<Read>>,
    dir: &Path,
    alerts: &mut Vec<Alert>,
) -> anyhow::Result<(usize, usize)> {
    let (mut regressions, mut failed) = (0, 0);
    for (step, read) in group.iter().zip(reads) {
        let words = step.found.key.words();
        let Some(read) = read else {
            failed += 1;
            eprintln!(
                "confirm: step {} ({words}) was not measured: no verdict (a commit that did not build or start? see `{}`)",
                step.id,
                dir.join("report/report.md").display()
            );
            continue;
        };
        let size = (read.status == Status::Confirmed).then_some(read.measured);
        store.confirmed(step.id, read.status, &read.words, dir, size)?;
        eprintln!(
            "confirm: step {} ({words}): {} — {}",
            step.id,
            read.status.word(),
            read.words
        );
        if let Some(b) = &read.bisect {
            eprintln!("confirm: it spans several commits; the culprit: {b}");
        }
        if let Some(culprit) = read.culprit {
            let (ratio, lo, hi) = read.measured;
            let alert = Alert {
                step: step.id,
                series: words.clone(),
                figure: step.found.key.figure.clone(),
                point: step.found.key.point.clone(),
                regression: read.regression,
                ratio,
                lo,
                hi,
                last_good: step.found.last_good.clone(),
                first_bad: step.found.first_bad.clone(),
                culprit,
            };
            eprintln!(
                "confirm: {}",
                crate::history::alert::markdown(std::slice::from_ref(&alert))
                    .lines()
                    .last()
                    .unwrap_or_default()
                    .trim_start_matches(" - ")
                    .trim()
            );
            alerts.push(alert);
        }
        regressions += usize::from(read.regression);
    }
    Ok((regressions, failed))
}

/// Two steps one paired run measures: the same plan, contender, environment, scenario and
/// commits.
fn same_run(a: &Change, b: &Change) -> bool {
    let (a, b) = (&a.found, &b.found);
    (
        &a.key.plan,
        &a.key.contender,
        &a.key.env,
        &a.last_good,
        &a.first_bad,
        scenario(a),
    ) == (
        &b.key.plan,
        &b.key.contender,
        &b.key.env,
        &b.last_good,
        &b.first_bad,
        scenario(b),
    )
}

/// What a step's confirmation read.
struct Read {
    status: Status,
    /// The verdict in words; for an inconclusive one, what would settle it.
    words: String,
    /// Confirmed, and worse on its figure.
    regression: bool,
    /// For a confirmed step across several commits: the `bakeoff bisect` that finds which.
    bisect: Option<String>,
    /// The ratio of the first bad commit to the last good one, and its interval, as the
    /// confirmation measured it: a confirmed step's size is this, not `detect`'s guess.
    measured: (f64, f64, f64),
    /// A confirmed step's culprit.
    culprit: Option<Culprit>,
}

/// The figure a step is of.
fn figure(f: &crate::history::changes::Found) -> anyhow::Result<Figure> {
    Figure::ALL
        .into_iter()
        .find(|x| x.key() == f.key.figure)
        .with_context(|| format!("`{}` is not a figure this bakeoff judges", f.key.figure))
}

/// The plan a step is measured with: `--plan`, else the file its plan was last recorded
/// from — only when the caller owns it and no one else can write it, since a confirmation
/// runs the plan's build commands and a history may be in a folder others can write. Said
/// before anything is built.
fn plan_for(store: &Store, plan: &str, with: &Settings) -> anyhow::Result<PathBuf> {
    if let Some(p) = &with.plan {
        eprintln!("confirm: plan `{}` (--plan)", p.display());
        return Ok(p.clone());
    }
    let Some(p) = store.plan_of(plan)?.0 else {
        bail!("the history has no plan file for plan `{plan}`; give it with --plan");
    };
    let path = PathBuf::from(p);
    if let Err(why) = trusted_plan(&path) {
        bail!(
            "the history names `{}` as plan `{}`'s file, but {why}: a confirmation runs the plan's build commands, so it only runs a plan the history names when you own it and no one else can write it; give the plan with --plan",
            path.display().to_string().escape_debug(),
            plan.escape_debug()
        );
    }
    eprintln!(
        "confirm: plan `{}` (the file the history recorded plan `{}` from; --plan chooses another)",
        path.display(),
        plan.escape_debug()
    );
    Ok(path)
}

/// Why the file at `path` is not one to run unasked: not there, not a regular file, owned by
/// another user, or writable by its group or by anyone (the folder it is in included).
fn trusted_plan(path: &Path) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    let me = unsafe { libc::geteuid() };
    let meta = std::fs::symlink_metadata(path).map_err(|e| format!("it cannot be read ({e})"))?;
    if !meta.file_type().is_file() {
        return Err("it is not a regular file".into());
    }
    if meta.uid() != me {
        return Err(format!("it belongs to user {}, not to you", meta.uid()));
    }
    if meta.mode() & 0o022 != 0 {
        return Err(format!(
            "others can write it (mode {:o})",
            meta.mode() & 0o777
        ));
    }
    let folder = path.parent().filter(|p| !p.as_os_str().is_empty());
    let folder = folder.unwrap_or(Path::new("."));
    if let Ok(d) = std::fs::metadata(folder) {
        // A sticky folder (/tmp) lets no one else replace a file they do not own.
        let sticky = d.mode() & 0o1000 != 0;
        if (d.uid() != me && d.uid() != 0) || (d.mode() & 0o022 != 0 && !sticky) {
            return Err(format!(
                "its folder `{}` can be written by others",
                folder.display()
            ));
        }
    }
    Ok(())
}

/// The paired run of a group of steps ([`same_run`]), judged on their figures, and what it
/// read for each (`None` for a step it has no verdict for); `None` when interrupted.
fn measure(
    store: &Store,
    group: &[&Change],
    with: &Settings,
    dir: &Path,
    cancel: &Cancel,
) -> anyhow::Result<Option<Vec<Option<Read>>>> {
    let f = &group[0].found;
    let plan_path = plan_for(store, &f.key.plan, with)?;
    let plan = Plan::load(&plan_path)?;
    if plan.name != f.key.plan {
        bail!(
            "`{}` is plan `{}`, the step is of plan `{}`",
            plan_path.display(),
            plan.name,
            f.key.plan
        );
    }
    let source = plan
        .local_git(&f.key.contender)
        .map_err(anyhow::Error::msg)?
        .source
        .context("a git source")?;
    let (good, bad) = (
        short(&f.last_good).to_string(),
        short(&f.first_bad).to_string(),
    );
    if dir.exists() {
        std::fs::remove_dir_all(dir).with_context(|| format!("removing `{}`", dir.display()))?;
    }
    let opts = options(group, &plan, with, dir, cancel)?;
    let ids: Vec<String> = group.iter().map(|s| s.id.to_string()).collect();
    eprintln!(
        "confirm: step {}: {good} against {bad}, side by side",
        ids.join(", ")
    );
    let (done, verdicts) = run_cut(&plan_path, opts)?;
    if done.results.status == crate::results::Status::Interrupted {
        return Ok(None);
    }
    let ctx = Group {
        plan_path: &plan_path,
        source: &source,
        bad: &bad,
        cancel,
        min_magnitude: with.min_magnitude,
        budget: with.budget,
        bisect: with.bisect,
        commit_url: store.plan_of(&f.key.plan)?.1,
        dir,
    };
    reads(&ctx, group, &verdicts).map(Some)
}

/// The run of a group: the contender at the two commits, on the steps' own points, judged
/// on their figures, at twice the plan's repetitions (an alert's evidence, as `bisect`
/// confirms a culprit), the equivalence band the smallest step worth an alert
/// (`--min-magnitude`: proven within it, the step is too small to matter) — never a part of
/// the size `detect` guessed, which an inflated guess made wide enough to hide a real step.
fn options(
    group: &[&Change],
    plan: &Plan,
    with: &Settings,
    dir: &Path,
    cancel: &Cancel,
) -> anyhow::Result<runner::RunOptions> {
    let f = &group[0].found;
    let mut judge: Vec<&'static str> = Vec::new();
    for s in group {
        let k = figure(&s.found)?.key();
        if !judge.contains(&k) {
            judge.push(k);
        }
    }
    let effect = with.min_magnitude / 100.0;
    let mut points: Vec<String> = group.iter().map(|s| s.found.key.point.clone()).collect();
    points.dedup();
    Ok(runner::RunOptions {
        out: Some(dir.to_path_buf()),
        cut: Some(runner::Cut::Commits {
            contender: f.key.contender.clone(),
            commits: vec![
                (short(&f.last_good).to_string(), f.last_good.clone()),
                (short(&f.first_bad).to_string(), f.first_bad.clone()),
            ],
            judge,
            effect: Some(effect),
            spread: false,
        }),
        scenarios: vec![scenario(f).to_string()],
        points,
        repetitions: Some(plan.repetitions * 2),
        budget: with.budget,
        cancel: cancel.clone(),
        ..runner::RunOptions::default()
    })
}

/// Each step's reading of the run's verdicts (`None` where the run has none for it). A
/// confirmed step gets its culprit: its first bad commit when the two are neighbours, else
/// with `--bisect` what a bisection between them names (once for the group), else the range
/// and the `bakeoff bisect` that would narrow it.
fn reads(
    g: &Group,
    group: &[&Change],
    verdicts: &[crate::analysis::verdicts::PointVerdicts],
) -> anyhow::Result<Vec<Option<Read>>> {
    let f = &group[0].found;
    // The commits from the last good to the first bad: asked once, of a confirmed step.
    let mut range: Option<Vec<crate::build::history::Commit>> = None;
    let mut bisected: Option<Culprit> = None;
    let mut out = Vec::new();
    for s in group {
        let fig = figure(&s.found)?;
        let v = verdicts
            .iter()
            .filter(|v| v.contender == g.bad && v.point.to_string() == s.found.key.point)
            .find_map(|v| v.get(fig));
        let Some(v) = v else {
            out.push(None);
            continue;
        };
        let mut read = read(v, s.found.ratio > 1.0, fig);
        if read.status == Status::Confirmed {
            if range.is_none() {
                let cache = crate::build::cache::root();
                let commits = crate::build::history::range(
                    g.source,
                    &f.last_good,
                    &f.first_bad,
                    &cache,
                    g.cancel,
                )
                .map_err(anyhow::Error::msg)?;
                range = Some(commits);
            }
            let commits = range.as_deref().unwrap_or_default();
            let link = |id: &str| {
                g.commit_url
                    .as_deref()
                    .and_then(|u| crate::history::commit_link(u, id))
            };
            read.culprit = Some(match commits {
                [_, one] => Culprit::Commit {
                    id: one.id.clone(),
                    subject: one.subject.clone(),
                    link: link(&one.id),
                },
                _ if g.bisect => match &bisected {
                    Some(c) => c.clone(),
                    None => {
                        let c = bisect_step(g, f, fig, read.measured, commits)?;
                        bisected = Some(c.clone());
                        c
                    }
                },
                _ => {
                    let cmd = bisect_command(g, f, fig);
                    read.bisect = Some(cmd.clone());
                    Culprit::Range {
                        after: f.last_good.clone(),
                        to: f.first_bad.clone(),
                        commits: commits.len().saturating_sub(1),
                        why: format!("not bisected (`--bisect` does it): `{cmd}`"),
                    }
                }
            });
        }
        out.push(Some(read));
    }
    Ok(out)
}

/// A verdict of the first bad commit against the last good one, for a step that went up
/// (`up`) or down: *different* that way confirms it, *equivalent* or *different* the other
/// way rejects it, else inconclusive with what would settle it.
fn read(v: &Verdict, up: bool, figure: Figure) -> Read {
    let worse_up = figure != Figure::Throughput;
    let (status, words) = match v.call {
        Call::Higher | Call::Lower if (v.call == Call::Higher) == up => {
            (Status::Confirmed, v.to_string())
        }
        Call::Higher | Call::Lower => (
            Status::Rejected,
            format!("{v}: the other way from the step found"),
        ),
        Call::Equivalent => (Status::Rejected, v.to_string()),
        Call::Inconclusive => (
            Status::Inconclusive,
            match v.settle(None) {
                Some(s) => format!("{v}; {s}"),
                None => v.to_string(),
            },
        ),
    };
    Read {
        status,
        words,
        regression: status == Status::Confirmed && up == worse_up,
        bisect: None,
        measured: (v.ratio.ratio, v.ratio.lo, v.ratio.hi),
        culprit: None,
    }
}

#[cfg(test)]
mod tests {
    use super::trusted_plan;
    use std::os::unix::fs::PermissionsExt as _;

    /// Issue 68, escape 2: a plan the history names runs only when the caller owns it and
    /// no one else can write it or the folder it is in.
    #[test]
    fn a_plan_others_can_write_is_not_run_unasked() {
        let dir = std::env::temp_dir().join(format!("bakeoff-trust-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let plan = dir.join("plan.toml");
        std::fs::write(&plan, "name = \"x\"\n").unwrap();
        let mode = |p: &std::path::Path, m: u32| {
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap()
        };
        mode(&plan, 0o644);
        assert_eq!(trusted_plan(&plan), Ok(()));
        mode(&plan, 0o666);
        assert!(trusted_plan(&plan)
            .unwrap_err()
            .contains("others can write it"));
        mode(&plan, 0o664);
        assert!(trusted_plan(&plan).is_err());
        mode(&plan, 0o644);
        mode(&dir, 0o777);
        assert!(trusted_plan(&plan)
            .unwrap_err()
            .contains("can be written by others"));
        // A sticky folder (/tmp) is fine: no one else can replace the file.
        mode(&dir, 0o1777);
        assert_eq!(trusted_plan(&plan), Ok(()));
        mode(&dir, 0o755);
        let link = dir.join("link.toml");
        std::os::unix::fs::symlink(&plan, &link).unwrap();
        assert!(trusted_plan(&link)
            .unwrap_err()
            .contains("not a regular file"));
        assert!(trusted_plan(&dir.join("missing.toml")).is_err());
        // Another user's plan, when this test can make one (as root: CI's case, where root
        // ran another user's build command).
        if std::os::unix::fs::chown(&plan, Some(65534), None).is_ok() {
            assert!(trusted_plan(&plan)
                .unwrap_err()
                .contains("belongs to user 65534"));
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
