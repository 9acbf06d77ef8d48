//! The answer a report opens with (docs/report.md): the gates' lines when the run had gates,
//! then each point that reads *different* (figure, ratio, interval), then the contenders with
//! the commits they were built from — before the summary, the tables and the findings about
//! the machine.

use super::analysis::Analysis;
use crate::stats::paired::Call;

/// The verdict's lines, each a Markdown list item's text (the gates' lines in bold).
pub fn lines(a: &Analysis) -> Vec<String> {
    let mut out: Vec<String> = a.gates.iter().map(|g| format!("**{g}**")).collect();
    let differs: Vec<String> = a
        .verdicts
        .iter()
        .flat_map(|p| {
            p.verdicts
                .iter()
                .filter(|v| matches!(v.call, Call::Higher | Call::Lower))
                .map(move |v| format!("{} against {} at {}: {v}", p.contender, p.baseline, p.point))
        })
        .collect();
    let judged: usize = a.verdicts.iter().map(|p| p.verdicts.len()).sum();
    match (differs.len(), judged) {
        (_, 0) => {}
        (0, n) => out.push(format!(
            "No point reads different: {} judged",
            crate::units::count(n as u64, "verdict")
        )),
        (_, _) => out.extend(differs),
    }
    for c in a.results.contenders.iter().filter(|c| c.noise_of.is_none()) {
        let Some(s) = &c.source else { continue };
        let at = match (&s.reference, &s.commit) {
            (Some(r), Some(id)) => format!("{r} ({})", crate::units::prefix(id, 12)),
            (None, Some(id)) => format!("the working tree ({})", crate::units::prefix(id, 12)),
            (_, None) => "a folder".to_string(),
        };
        let dirty = if s.dirty && s.commit.is_some() {
            ", with uncommitted changes"
        } else {
            ""
        };
        out.push(format!(
            "`{}`: {} @ {at}{dirty}",
            c.name.escape_debug(),
            s.repository.escape_debug()
        ));
    }
    out
}
