//! A confirmed step's culprit (docs/history.md, "The culprit, unaided"): its first bad
//! commit when the history measured its neighbours, else what `bakeoff bisect`'s own driver
//! names between its two commits, or the range and the command that would narrow it.

use std::path::Path;

use super::short;
use crate::analysis::verdicts::Figure;
use crate::history::alert::Culprit;

/// What a culprit is named from: a confirmed group's run (`confirm`).
pub(super) struct Group<'a> {
    pub(super) plan_path: &'a Path,
    pub(super) source: &'a crate::plan::Source,
    /// The first bad commit's label in the run.
    pub(super) bad: &'a str,
    pub(super) cancel: &'a crate::cancel::Cancel,
    /// The smallest step worth an alert, in percent: a bisection's band is never below it.
    pub(super) min_magnitude: f64,
    /// `--budget` (`Some(None)`: off).
    pub(super) budget: Option<Option<std::time::Duration>>,
    /// Whether to bisect a step across several commits.
    pub(super) bisect: bool,
    /// The plan's `[history] commit_url`, as recorded.
    pub(super) commit_url: Option<String>,
    /// The group's results folder (a bisection goes under it).
    pub(super) dir: &'a Path,
}

/// The scenario of a step's point.
pub(super) fn scenario(f: &crate::history::changes::Found) -> &str {
    f.key.point.split(" [").next().unwrap_or_default()
}

/// The `bakeoff bisect` that finds which commit between a step's two made it.
pub(super) fn bisect_command(g: &Group, f: &crate::history::changes::Found, fig: Figure) -> String {
    let named = match fig {
        Figure::CpuPerItem => String::new(),
        _ => format!(" --figure {}", super::figure_name(fig)),
    };
    format!(
        "bakeoff bisect {} --contender {} --good {} --bad {}{named} --scenario {}",
        g.plan_path.display(),
        f.key.contender,
        f.last_good,
        f.first_bad,
        scenario(f)
    )
}

/// Bisects a confirmed step across several commits with `bakeoff bisect`'s own driver: the
/// step's scenario and figure, the band half its measured size but never below
/// `--min-magnitude`; the culprit it names and confirms, or the range it ends on and why.
pub(super) fn bisect_step(
    g: &Group,
    f: &crate::history::changes::Found,
    fig: Figure,
    measured: (f64, f64, f64),
    commits: &[crate::build::history::Commit],
) -> anyhow::Result<Culprit> {
    let figure = (fig != Figure::CpuPerItem).then_some(fig);
    let half = ((measured.0.ln().abs() / 2.0).exp() - 1.0) * 100.0;
    let args = super::bisect::Request {
        plan: Some(g.plan_path.to_path_buf()),
        contender: Some(f.key.contender.clone()),
        good: Some(f.last_good.clone()),
        bad: Some(f.first_bad.clone()),
        figure,
        scenarios: vec![scenario(f).to_string()],
        effect: Some(half.max(g.min_magnitude)),
        ways: None,
        budget: g.budget,
        out: Some(g.dir.join("bisect")),
        resume: None,
    };
    eprintln!(
        "confirm: bisecting the {} commits after {} up to {}",
        commits.len().saturating_sub(1),
        short(&f.last_good),
        short(&f.first_bad)
    );
    let done = super::bisect::bisect(&args, g.cancel)?;
    Ok(answered(g, f, &done, commits.len().saturating_sub(1)))
}

/// The culprit a bisection's answer names: one confirmed commit, or the range it ended on
/// and why (`span`: the commits after the step's last good one).
fn answered(
    g: &Group,
    f: &crate::history::changes::Found,
    done: &super::bisect::Bisected,
    span: usize,
) -> Culprit {
    let r = &done.record;
    let link = |id: &str| {
        g.commit_url
            .as_deref()
            .and_then(|u| crate::history::commit_link(u, id))
    };
    let range = |why: String| Culprit::Range {
        after: f.last_good.clone(),
        to: f.first_bad.clone(),
        commits: span,
        why,
    };
    let why = |w: crate::bisect::Why| {
        format!("{w:?}")
            .to_lowercase()
            .replace("notconfirmed", "not confirmed")
    };
    match &r.answer {
        Some(crate::bisect::Answer::Culprits { blames }) => match &blames[..] {
            [b] if b.why == crate::bisect::Why::Confirmed && b.to == b.from + 1 => {
                let c = &r.commits[b.to];
                Culprit::Commit {
                    id: c.id.clone(),
                    subject: c.subject.clone(),
                    link: link(&c.id),
                }
            }
            [b, ..] => Culprit::Range {
                after: r.commits[b.from].id.clone(),
                to: r.commits[b.to].id.clone(),
                commits: b.to - b.from,
                why: format!(
                    "the bisection ended on a range ({}): {}",
                    why(b.why),
                    done.dir.join("report.md").display()
                ),
            },
            [] => range("the bisection named no commit".into()),
        },
        Some(crate::bisect::Answer::NotReproduced) => range(format!(
            "the bisection read its ends equal: {}",
            done.dir.join("report.md").display()
        )),
        Some(crate::bisect::Answer::Undecided) => range(format!(
            "the bisection's ends stayed inconclusive: {}",
            done.dir.join("report.md").display()
        )),
        None => range(format!(
            "the bisection was interrupted: `bakeoff bisect --resume {}` goes on",
            done.dir.display()
        )),
    }
}
