//! A confirmed step's culprit (docs/history.md, "The culprit, unaided"): its first bad
//! commit when the history measured its neighbours, else what `bakeoff bisect`'s own driver
//! names between its two commits, or the range and the command that would narrow it.

use super::confirm::{scenario, short, Group};
use super::*;
use crate::analysis::verdicts::Figure;
use crate::history::alert::Culprit;

/// The `bakeoff bisect` that finds which commit between a step's two made it.
pub(super) fn bisect_command(g: &Group, f: &crate::history::changes::Found, fig: Figure) -> String {
    let named = match fig {
        Figure::CpuPerItem => String::new(),
        _ => format!(" --figure {}", fig.key().replace('_', "-")),
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
    let figure = match fig {
        Figure::CpuPerRequest => Some(CheckFigure::CpuPerRequest),
        Figure::Throughput => Some(CheckFigure::Throughput),
        Figure::P50 => Some(CheckFigure::P50),
        Figure::P99 => Some(CheckFigure::P99),
        Figure::CpuPerItem => None,
    };
    let half = ((measured.0.ln().abs() / 2.0).exp() - 1.0) * 100.0;
    let args = BisectArgs {
        plan: Some(g.plan_path.to_path_buf()),
        contender: Some(f.key.contender.clone()),
        good: Some(f.last_good.clone()),
        bad: Some(f.first_bad.clone()),
        figure,
        scenarios: vec![scenario(f).to_string()],
        effect: Some(half.max(g.with.min_magnitude)),
        ways: None,
        budget: g.with.budget,
        out: Some(g.dir.join("bisect")),
        resume: None,
        body: Default::default(),
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
