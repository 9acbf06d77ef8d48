//! A bisection's report (report.md, report.html; bisect.json is the record itself): the
//! answer first, then the hunt, each step's pairs with their verdicts, the commits tried and
//! what they cost, and how to look at the final comparison again.

use std::path::Path;

use super::record::{Record, Status};
use super::{Answer, Blame, Hunt, Kind, Pair, Reading, Why};

/// A piece of the report, rendered as Markdown or HTML.
enum Block {
    Title(String),
    Heading(String),
    Text(String),
    Code(String),
    Table(Vec<&'static str>, Vec<Vec<String>>),
}

/// The answer in a few lines, as the report opens and the terminal ends.
pub fn answer_lines(r: &Record, dir: &Path) -> Vec<String> {
    let ends = r.step(Kind::Endpoints, &[0, r.commits.len() - 1]);
    let ends_text = ends
        .and_then(|s| s.pairs.first())
        .map(|p| decisive(p, r.hunt))
        .unwrap_or_else(|| "not measured".into());
    let (good, bad) = (
        format!("{} ({})", r.good, r.short(0)),
        format!("{} ({})", r.bad, r.short(r.commits.len() - 1)),
    );
    let resume = format!(
        "`bakeoff bisect --resume {}` goes on from the last finished step.",
        dir.display()
    );
    match (&r.answer, r.status) {
        (None, Status::Interrupted) => vec![format!(
            "**Interrupted** after {}: {resume}",
            crate::units::count(r.steps.len() as u64, "measured step")
        )],
        (None, _) => vec![format!("**Not finished**: {resume}")],
        (Some(Answer::NotReproduced), _) => match r.hunt {
            None => vec![format!(
                "**Not reproduced**: {good} and {bad} read equal: {ends_text}. No commit is blamed."
            )],
            Some(h) => vec![format!(
                "**Not reproduced**: {bad} against {good} reads {ends_text}, proven smaller than --effect {}. No commit is blamed.",
                pct(h.effect)
            )],
        },
        (Some(Answer::Undecided), _) => {
            // The points that stayed open, not one that settled.
            let open: Vec<String> = ends
                .and_then(|s| s.pairs.first())
                .map(|p| {
                    p.points
                        .iter()
                        .filter(|x| x.call == super::Call::Inconclusive)
                        .map(|x| match p.points.len() {
                            1 => x.text.clone(),
                            _ => format!("{} at {}", x.text, x.point),
                        })
                        .collect()
                })
                .unwrap_or_default();
            let open = match open.is_empty() {
                true => ends_text,
                false => open.join("; "),
            };
            vec![format!(
                "**Undecided**: {bad} against {good} is still inconclusive after the budget: {open}. A larger --budget (or a quieter machine: see the endpoints' report) would settle it; no commit is blamed."
            )]
        }
        (Some(Answer::Culprits { blames }), _) => {
            blames.iter().map(|b| blame_line(r, b)).collect()
        }
    }
}

/// One culprit in words.
fn blame_line(r: &Record, b: &Blame) -> String {
    let one = |i: usize| {
        format!(
            "`{}` “{}”",
            r.short(i),
            r.commits[i].subject.replace('`', "'")
        )
    };
    let step = last_pair(r, Kind::Step, b.from, b.to, r.hunt);
    let span = format!(
        "commits {}–{} (after `{}`, up to `{}`)",
        b.from + 1,
        b.to,
        r.short(b.from),
        r.short(b.to)
    );
    match b.why {
        Why::Confirmed => format!(
            "**Culprit: commit {}** {}: confirmed — measured again against its parent, {}.",
            b.to,
            one(b.to),
            last_pair(r, Kind::Confirm, b.from, b.to, r.hunt)
        ),
        Why::NotConfirmed => format!(
            "**A range, not confirmed: commit {}** {}: its step read {step}, but measured again against its parent it read {}.",
            b.to,
            one(b.to),
            last_pair(r, Kind::Confirm, b.from, b.to, r.hunt)
        ),
        Why::Unbuilt => {
            let unbuilt: Vec<String> = (b.from + 1..b.to)
                .map(|i| format!("{i} `{}`", r.short(i)))
                .collect();
            format!(
                "**A range: {span}**: the change is in it ({step}), and {} did not build, so it cannot be put on one commit.",
                unbuilt.join(", ")
            )
        }
        Why::Inconclusive => format!(
            "**A range: {span}**: the change is in it, but a pair between stayed inconclusive after its budget; narrowing further would be a guess."
        ),
        Why::Spread => format!(
            "**A range: {span}**: its ends differ, but every pair between was proven smaller than ±{}: the change is spread over several of these commits, or came and went.",
            r.hunt.map(|h| pct(h.effect)).unwrap_or_default()
        ),
        Why::Limit => format!(
            "**A range: {span}**: the bisection's limit of steps was reached."
        ),
    }
}

/// The verdict text of the last pair `from`→`to` measured for `kind`.
fn last_pair(r: &Record, kind: Kind, from: usize, to: usize, hunt: Option<Hunt>) -> String {
    r.steps
        .iter()
        .rev()
        .filter(|s| s.kind == kind)
        .flat_map(|s| &s.pairs)
        .find(|p| p.from == from && p.to == to)
        .map(|p| decisive(p, hunt))
        .unwrap_or_else(|| "not measured".into())
}

/// A pair's verdict at the point that decided it — of the points toward the change, the one
/// that moved most (as the band is set from the endpoints' largest), else the first — with
/// the point when there are several.
fn decisive(p: &Pair, hunt: Option<Hunt>) -> String {
    let toward = hunt.and_then(|h| {
        p.points
            .iter()
            .filter(|x| {
                h.read(&Pair {
                    from: p.from,
                    to: p.to,
                    points: vec![(*x).clone()],
                }) == Reading::Toward
            })
            .max_by(|a, b| a.ratio.ln().abs().total_cmp(&b.ratio.ln().abs()))
    });
    match toward.or(p.points.first()) {
        None => "no verdict (a commit did not start or stay up: see the step's report)".into(),
        Some(x) if p.points.len() == 1 => x.text.clone(),
        Some(x) => format!("{} at {}", x.text, x.point),
    }
}

/// The endpoints' point that set the band: where they differed most (as [`Hunt::of`] reads
/// it).
fn band_point(r: &Record) -> Option<String> {
    let ends = r.step(Kind::Endpoints, &[0, r.commits.len() - 1])?;
    ends.pairs
        .first()?
        .points
        .iter()
        .filter(|p| p.call.differs())
        .max_by(|a, b| a.ratio.ln().abs().total_cmp(&b.ratio.ln().abs()))
        .map(|p| p.point.clone())
}

/// `12.5%`, `10%`.
fn pct(share: f64) -> String {
    let s = format!("{:.1}", share * 100.0);
    format!("{}%", s.strip_suffix(".0").unwrap_or(&s))
}

fn blocks(r: &Record, dir: &Path) -> Vec<Block> {
    let n = r.commits.len() - 1;
    let mut out = vec![Block::Title(format!(
        "Bisect: {} of {}, {} .. {}",
        r.contender, r.plan_name, r.good, r.bad
    ))];
    out.extend(answer_lines(r, dir).into_iter().map(Block::Text));
    out.extend(band_blocks(r, n));
    out.push(Block::Heading("Steps".into()));
    out.push(steps(r));
    out.push(Block::Heading("Commits tried".into()));
    out.push(commits(r));
    let built = r.builds.iter().filter(|b| b.built && !b.cached).count();
    let failed = r.builds.iter().filter(|b| !b.built).count();
    let cached = r.builds.iter().filter(|b| b.cached).count();
    let how = match r.incremental {
        true => "; incremental: one work tree, each build starting from what the last left",
        false => "",
    };
    out.push(Block::Text(format!(
        "{} ({built} compiled, {cached} from the cache, {failed} did not build{how}), {:.0} s of building; {} measured, {:.0} s.",
        crate::units::count(r.builds.len() as u64, "build"),
        r.builds.iter().map(|b| b.seconds).sum::<f64>(),
        crate::units::count(r.steps.len() as u64, "run"),
        r.steps.iter().map(|s| s.seconds).sum::<f64>(),
    )));
    if let Some(last) = r.steps.last() {
        out.push(Block::Heading("Again".into()));
        let (from, to) = (last.at[0], *last.at.last().expect("two commits a run"));
        out.push(Block::Text(
            "The last comparison, read again; and measured again in the contender's repository, whose working tree `check` builds — `git switch -` goes back to where it was, and the results go outside the checkout:"
                .into(),
        ));
        let repo = match &r.repo {
            Some(p) => format!("cd {} && ", crate::units::shell_word(p)),
            None => String::new(),
        };
        out.push(Block::Code(format!(
            "bakeoff report {}\n{repo}git switch --detach {} && bakeoff check {} --contender {} --against {}; git switch -",
            crate::units::shell_word(&dir.join(&last.dir).display().to_string()),
            r.commits[to].id,
            crate::units::shell_word(&r.plan),
            crate::units::shell_word(&r.contender),
            r.commits[from].id
        )));
    }
    out
}

/// The change hunted and its band — where the band came from, that a smaller change is not
/// looked for — and every point of the endpoints when there are several.
fn band_blocks(r: &Record, n: usize) -> Vec<Block> {
    let mut out = Vec::new();
    if let Some(h) = r.hunt {
        out.push(Block::Text(format!(
            "The change hunted: {} on the judged figure ({}), a culprit at least ±{} ({}). A change smaller than that in these {} commits (after the good one, first parents only) is not looked for: a second, smaller regression among them would not be found.",
            if h.higher { "higher" } else { "lower" },
            r.figure.as_deref().unwrap_or("the plan's main one"),
            pct(h.effect),
            match r.effect {
                Some(_) => "--effect".to_string(),
                None => match band_point(r) {
                    Some(at) => format!("half of what good against bad measured at {at}, where they differed most"),
                    None => "half of what good against bad measured".into(),
                },
            },
            n
        )));
    }
    if let Some(ends) = r
        .step(Kind::Endpoints, &[0, n])
        .and_then(|s| s.pairs.first())
    {
        if ends.points.len() > 1 {
            out.push(Block::Heading("The endpoints, every point".into()));
            let set = band_point(r).filter(|_| r.effect.is_none());
            let rows = ends
                .points
                .iter()
                .map(|x| {
                    vec![
                        x.point.clone(),
                        x.text.clone(),
                        match set.as_deref() == Some(x.point.as_str()) {
                            true => "set the band".into(),
                            false => String::new(),
                        },
                    ]
                })
                .collect();
            out.push(Block::Table(vec!["point", "bad against good", ""], rows));
        }
    }
    out
}

/// Each pair of each step: how it reads, its verdict, its time and folder.
fn steps(r: &Record) -> Block {
    let rows = r
        .steps
        .iter()
        .enumerate()
        .flat_map(|(k, s)| {
            s.pairs.iter().map(move |p| {
                vec![
                    (k + 1).to_string(),
                    s.kind.word().to_string(),
                    format!("{} → {}", p.from, p.to),
                    match r.hunt {
                        Some(h) => word(h.read(p)).to_string(),
                        None => String::new(),
                    },
                    decisive(p, r.hunt),
                    format!("{:.0} s", s.seconds),
                    format!("`{}`", s.dir),
                ]
            })
        })
        .collect();
    Block::Table(
        vec![
            "#",
            "run",
            "pair",
            "reads",
            "verdict (later against earlier)",
            "took",
            "results",
        ],
        rows,
    )
}

/// Every commit built or measured, with its subject and build.
fn commits(r: &Record) -> Block {
    let n = r.commits.len() - 1;
    let mut tried: Vec<usize> = r.builds.iter().map(|b| b.commit).collect();
    tried.extend(r.steps.iter().flat_map(|s| s.at.iter().copied()));
    tried.sort_unstable();
    tried.dedup();
    let rows = tried
        .iter()
        .map(|&i| {
            let built = match r.build(i) {
                None => String::new(),
                Some(b) if !b.built => "did not build".into(),
                Some(b) if b.cached => "cached".into(),
                Some(b) => format!("built in {:.1} s", b.seconds),
            };
            let role = match i {
                0 => " (good)",
                _ if i == n => " (bad)",
                _ => "",
            };
            vec![
                format!("{i}{role}"),
                format!("`{}`", r.short(i)),
                r.commits[i].subject.clone(),
                built,
            ]
        })
        .collect();
    Block::Table(vec!["commit", "id", "subject", "build"], rows)
}

fn word(r: Reading) -> &'static str {
    match r {
        Reading::Toward => "the change",
        Reading::Small => "no change",
        Reading::Away => "the other way",
        Reading::Inconclusive => "inconclusive",
    }
}

pub fn markdown(r: &Record, dir: &Path) -> String {
    let mut s = String::new();
    for b in blocks(r, dir) {
        match b {
            Block::Title(t) => s.push_str(&format!("# {t}\n\n")),
            Block::Heading(t) => s.push_str(&format!("## {t}\n\n")),
            Block::Text(t) => s.push_str(&format!("{t}\n\n")),
            Block::Code(t) => s.push_str(&format!("```sh\n{t}\n```\n\n")),
            Block::Table(head, rows) => {
                let cell = |c: &str| c.replace('|', "\\|");
                s.push_str(&format!("| {} |\n", head.join(" | ")));
                s.push_str(&format!("|{}\n", "---|".repeat(head.len())));
                for row in rows {
                    let row: Vec<String> = row.iter().map(|c| cell(c)).collect();
                    s.push_str(&format!("| {} |\n", row.join(" | ")));
                }
                s.push('\n');
            }
        }
    }
    s
}

pub fn html(r: &Record, dir: &Path) -> String {
    let mut s = String::from(
        "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>bakeoff bisect</title>\n<style>body{font-family:sans-serif;max-width:72rem;margin:2rem auto;padding:0 1rem}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.2rem .5rem;text-align:left}code,pre{background:#f4f4f4}</style></head><body>\n",
    );
    for b in blocks(r, dir) {
        match b {
            Block::Title(t) => s.push_str(&format!("<h1>{}</h1>\n", inline(&t))),
            Block::Heading(t) => s.push_str(&format!("<h2>{}</h2>\n", inline(&t))),
            Block::Text(t) => s.push_str(&format!("<p>{}</p>\n", inline(&t))),
            Block::Code(t) => s.push_str(&format!("<pre>{}</pre>\n", esc(&t))),
            Block::Table(head, rows) => {
                s.push_str("<table><tr>");
                for h in head {
                    s.push_str(&format!("<th>{}</th>", esc(h)));
                }
                s.push_str("</tr>\n");
                for row in rows {
                    s.push_str("<tr>");
                    for c in row {
                        s.push_str(&format!("<td>{}</td>", inline(&c)));
                    }
                    s.push_str("</tr>\n");
                }
                s.push_str("</table>\n");
            }
        }
    }
    s.push_str("</body></html>\n");
    s
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Escaped, with `code` and **bold** spans.
fn inline(s: &str) -> String {
    let mut out = String::new();
    for (k, part) in esc(s).split('`').enumerate() {
        if k % 2 == 1 {
            out.push_str(&format!("<code>{part}</code>"));
        } else {
            for (j, p) in part.split("**").enumerate() {
                out.push_str(&match j % 2 {
                    1 => format!("<b>{p}</b>"),
                    _ => p.to_string(),
                });
            }
        }
    }
    out
}

/// Writes report.md and report.html next to bisect.json.
pub fn write(r: &Record, dir: &Path) -> anyhow::Result<()> {
    crate::results::write_atomic(&dir.join("report.md"), markdown(r, dir).as_bytes())?;
    crate::results::write_atomic(&dir.join("report.html"), html(r, dir).as_bytes())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bisect::record::Step;
    use crate::bisect::{Call, PointRead};
    use crate::build::history::Commit;

    fn point(at: &str, call: Call, ratio: f64) -> PointRead {
        PointRead {
            point: at.into(),
            call,
            ratio,
            lo: ratio * 0.98,
            hi: ratio * 1.02,
            text: format!("{ratio}× at {at}"),
        }
    }

    fn step(kind: Kind, from: usize, to: usize, points: Vec<PointRead>) -> Step {
        Step {
            kind,
            at: vec![from, to],
            dir: format!("steps/{}", kind.word()),
            seconds: 1.0,
            pairs: vec![Pair { from, to, points }],
        }
    }

    fn record(steps: Vec<Step>, hunt: Option<Hunt>, answer: Answer) -> Record {
        Record {
            schema: crate::bisect::record::SCHEMA,
            bakeoff: "0".into(),
            started_at: "2026-12-07T00:00:00Z".into(),
            status: Status::Done,
            plan: "/r/bench/plan.toml".into(),
            plan_name: "p".into(),
            contender: "srv".into(),
            good: "v1".into(),
            bad: "main".into(),
            figure: None,
            scenarios: Vec::new(),
            effect: None,
            ways: 2,
            budget: None,
            commits: (0..5)
                .map(|k| Commit {
                    id: format!("{k:040x}"),
                    subject: format!("commit {k}"),
                })
                .collect(),
            builds: Vec::new(),
            steps,
            hunt,
            answer: Some(answer),
            incremental: true,
            repo: Some("/r".into()),
        }
    }

    /// Issue 71 items 2 and 3: the band is explained where it is used — every endpoint
    /// point, which set it, that smaller steps are not looked for — the culprit quotes the
    /// point that moved most (the band's), the builds say they were incremental, and the
    /// command to measure again runs in the repository and goes back.
    #[test]
    fn the_band_and_the_culprit_quote_the_same_point() {
        let ends = vec![
            point("get [clients=1]", Call::Higher, 1.71),
            point("get [clients=16]", Call::Higher, 2.9),
        ];
        let confirm = vec![
            point("get [clients=1]", Call::Higher, 1.7),
            point("get [clients=16]", Call::Higher, 2.8),
        ];
        let hunt = Hunt {
            higher: true,
            effect: 2.9f64.sqrt() - 1.0,
        };
        let r = record(
            vec![
                step(Kind::Endpoints, 0, 4, ends),
                step(Kind::Confirm, 2, 3, confirm),
            ],
            Some(hunt),
            Answer::Culprits {
                blames: vec![Blame {
                    from: 2,
                    to: 3,
                    why: Why::Confirmed,
                }],
            },
        );
        let md = markdown(&r, Path::new("/r/out"));
        assert!(
            md.contains(
                "measured again against its parent, 2.8× at get [clients=16] at get [clients=16]"
            ),
            "{md}"
        );
        assert!(
            md.contains("half of what good against bad measured at get [clients=16]"),
            "{md}"
        );
        assert!(md.contains("is not looked for"), "{md}");
        assert!(
            md.contains("| get [clients=16] | 2.9× at get [clients=16] | set the band |"),
            "{md}"
        );
        assert!(
            md.contains("| get [clients=1] | 1.71× at get [clients=1] |  |"),
            "{md}"
        );
        assert!(md.contains("incremental: one work tree"), "{md}");
        assert!(md.contains("cd /r && git switch --detach "), "{md}");
        assert!(md.contains("; git switch -\n"), "{md}");
    }

    /// An undecided bisection names the point that stayed open, not one that settled.
    #[test]
    fn undecided_names_the_point_left_open() {
        let ends = vec![
            point("small file [clients=1]", Call::Equivalent, 0.999),
            point("small file [clients=16]", Call::Inconclusive, 1.01),
        ];
        let r = record(
            vec![step(Kind::Endpoints, 0, 4, ends)],
            None,
            Answer::Undecided,
        );
        let line = answer_lines(&r, Path::new("/r/out")).join("\n");
        assert!(line.contains("inconclusive after the budget: 1.01× at small file [clients=16] at small file [clients=16]"), "{line}");
        assert!(!line.contains("clients=1]"), "{line}");
    }
}
