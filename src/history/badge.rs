//! The latest night as a badge (docs/history.md, "The dashboard"): `badge.svg` beside the
//! dashboard, a small SVG a README can show from the published page — no step, a step not yet
//! settled, or a confirmed regression with its size, at the newest commit recorded.

use super::changes::{Change, Status};
use super::Series;
use crate::report::html::esc;

/// What the badge says and its colour.
#[derive(Debug, Clone, PartialEq)]
pub struct Badge {
    pub message: String,
    pub colour: &'static str,
}

const RED: &str = "#d62728";
const ORANGE: &str = "#ff7f0e";
const GREEN: &str = "#2ca02c";
const GREY: &str = "#9f9f9f";

/// The latest night: the commit of the newest run recorded, and the steps whose first bad
/// commit it is — the worst confirmed regression first, then any step still open.
pub fn latest(series: &[Series], changes: &[Change]) -> Badge {
    let newest = series
        .iter()
        .flat_map(|s| &s.points)
        .filter(|p| p.commit.is_some())
        .max_by(|a, b| a.last_run.cmp(&b.last_run));
    let Some(commit) = newest.and_then(|p| p.commit.as_deref()) else {
        return Badge {
            message: "no night yet".into(),
            colour: GREY,
        };
    };
    let short = crate::units::prefix(commit, 7);
    let at: Vec<&Change> = changes
        .iter()
        .filter(|c| c.found.first_bad == commit)
        .collect();
    // How much worse a step made its figure: more CPU or latency, less throughput.
    let worse = |c: &Change| match c.found.key.figure.as_str() {
        "throughput" => 1.0 / c.found.ratio,
        _ => c.found.ratio,
    };
    let regressions: Vec<&&Change> = at
        .iter()
        .filter(|c| c.found.status == Status::Confirmed && worse(c) > 1.0)
        .collect();
    if let Some(w) = regressions
        .iter()
        .max_by(|a, b| worse(a).total_cmp(&worse(b)))
    {
        let size = crate::stats::notation::fmt_ratio(w.found.ratio);
        let message = match regressions.len() {
            1 => format!("regression {size} at {short}"),
            n => format!("{n} regressions, up to {size}, at {short}"),
        };
        return Badge {
            message,
            colour: RED,
        };
    }
    let open = at.iter().any(|c| {
        matches!(
            c.found.status,
            Status::Candidate | Status::Pending | Status::Inconclusive
        )
    });
    match open {
        true => Badge {
            message: format!("step unsettled at {short}"),
            colour: ORANGE,
        },
        false => Badge {
            message: format!("no regression at {short}"),
            colour: GREEN,
        },
    }
}

/// The badge as SVG: "bakeoff" on grey, the message on its colour, widths from the text.
pub fn svg(b: &Badge) -> String {
    let label = "bakeoff";
    // About 6.5 px a character at 11 px Verdana, and a margin each side.
    let width = |s: &str| (s.chars().count() as f64 * 6.5 + 12.0).round() as u32;
    let (lw, mw) = (width(label), width(&b.message));
    let total = lw + mw;
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{total}\" height=\"20\" role=\"img\" aria-label=\"{label}: {msg}\">\
<title>{label}: {msg}</title>\
<rect width=\"{lw}\" height=\"20\" fill=\"#555\"/><rect x=\"{lw}\" width=\"{mw}\" height=\"20\" fill=\"{colour}\"/>\
<g fill=\"#fff\" font-family=\"Verdana,DejaVu Sans,sans-serif\" font-size=\"11\" text-anchor=\"middle\">\
<text x=\"{lx}\" y=\"14\">{label}</text><text x=\"{mx}\" y=\"14\">{msg}</text></g></svg>\n",
        msg = esc(&b.message),
        colour = b.colour,
        lx = lw / 2,
        mx = lw + mw / 2,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::changes::{Found, Rule};
    use crate::history::{SeriesKey, SeriesPoint};

    fn key(figure: &str) -> SeriesKey {
        SeriesKey {
            plan: "p".into(),
            contender: "srv".into(),
            point: "get [clients=1]".into(),
            figure: figure.into(),
            env: "e".into(),
            against: Some("reference".into()),
        }
    }

    fn night(commit: &str, run: &str) -> SeriesPoint {
        SeriesPoint {
            commit: Some(commit.into()),
            time: None,
            depth: None,
            subject: None,
            reference: None,
            value: 1.0,
            lo: None,
            hi: None,
            runs: 1,
            spread: None,
            first_run: run.into(),
            last_run: run.into(),
        }
    }

    fn step(figure: &str, first_bad: &str, ratio: f64, status: Status) -> Change {
        Change {
            id: 1,
            found: Found {
                key: key(figure),
                last_good: "a".repeat(40),
                first_bad: first_bad.into(),
                ratio,
                lo: ratio,
                hi: ratio,
                p: 0.0,
                status,
                rule: Rule::Band,
            },
            verdict: None,
            confirm_dir: None,
        }
    }

    #[test]
    fn the_badge_is_of_the_newest_night_only() {
        let (old, new) = ("b".repeat(40), "c".repeat(40));
        let series = vec![Series {
            key: key("cpu_per_request"),
            env_words: String::new(),
            points: vec![
                night(&old, "2026-12-01T03:00:00Z"),
                night(&new, "2026-12-02T03:00:00Z"),
            ],
        }];
        assert_eq!(latest(&[], &[]).message, "no night yet");
        let quiet = latest(&series, &[]);
        assert_eq!(
            (quiet.message.as_str(), quiet.colour),
            ("no regression at ccccccc", GREEN)
        );
        // A regression confirmed on an earlier night does not colour tonight's.
        let before = step("cpu_per_request", &old, 1.2, Status::Confirmed);
        assert_eq!(latest(&series, &[before]).colour, GREEN);
        let tonight = step("cpu_per_request", &new, 1.06, Status::Confirmed);
        let red = latest(&series, std::slice::from_ref(&tonight));
        assert_eq!(red.colour, RED);
        assert!(
            red.message.starts_with("regression 1.06"),
            "{}",
            red.message
        );
        // Throughput that fell is a regression; one that rose is not.
        let slower = step("throughput", &new, 0.9, Status::Confirmed);
        assert_eq!(latest(&series, &[slower]).colour, RED);
        let faster = step("throughput", &new, 1.1, Status::Confirmed);
        assert_eq!(latest(&series, &[faster]).colour, GREEN);
        let open = step("p99", &new, 1.3, Status::Candidate);
        assert_eq!(latest(&series, &[open]).colour, ORANGE);
        let svg = svg(&red);
        assert!(svg.starts_with("<svg") && svg.contains(RED) && svg.contains("regression 1.06"));
    }

    #[test]
    fn the_badge_escapes_what_it_says() {
        let b = Badge {
            message: "<script>&".into(),
            colour: GREY,
        };
        assert!(svg(&b).contains("&lt;script&gt;&amp;"));
    }
}
