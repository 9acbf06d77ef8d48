//! `report.html`: one self-contained page (inline CSS and SVG, no script, nothing fetched at
//! view time) with the report's tables and charts — start-up bars, throughput against
//! clients with min–max whiskers, latency percentile curves per contender — and the compat
//! matrix with each class of difference's shortest example.

pub(crate) mod charts;

use std::fmt::Write as _;

use super::analysis::Analysis;
use super::table::Table;
use crate::compat::CompatReport;

pub(crate) fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

pub fn render(a: &Analysis, flames: &[super::profiles::Flame]) -> String {
    let r = a.results;
    let mut out = String::new();
    let _ = write!(
        out,
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title>\n<style>\
         body{{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:1100px;color:#222}}\
         table{{border-collapse:collapse;margin:.5em 0 1.5em}}td,th{{border:1px solid #ccc;padding:3px 8px;text-align:right}}\
         td:first-child,th:first-child{{text-align:left}}th{{background:#f4f4f4}}\
         .charts{{display:flex;flex-wrap:wrap;gap:16px}}svg{{background:#fff;border:1px solid #ddd}}\
         .finding{{background:#fff6e0;border-left:4px solid #f0a000;padding:4px 8px;margin:4px 0}}\
         details{{margin:2px 0 2px 1em}}pre{{background:#f7f7f7;padding:6px;white-space:pre-wrap;word-break:break-all}}\
         td.different{{font-weight:600;background:#fdecea}}td.equivalent{{background:#e8f5e9}}td.inconclusive{{color:#666;font-style:italic}}\
         </style></head><body>\n<h1>{}</h1>\n",
        esc(&super::summary::title(r)),
        esc(&super::summary::title(r))
    );
    let verdict = super::verdict::lines(a);
    if !verdict.is_empty() {
        out.push_str("<h2 id=\"verdict\">Verdict</h2><ul class=\"verdict\">");
        for l in &verdict {
            let _ = write!(out, "<li>{}</li>", inline(l));
        }
        out.push_str("</ul>\n");
    }
    if !a.summary.is_empty() {
        out.push_str("<h2>Summary</h2><ul>");
        for b in &a.summary {
            let _ = write!(out, "<li>{}</li>", inline(b));
        }
        out.push_str("</ul>\n");
    }
    // The serving tables come before the start-up's and the findings about the machine.
    for s in &a.scenarios {
        scenario_html(r, s, flames, &mut out);
    }
    out.push_str(&table_html(&a.startup));
    if let Some(t) = &a.members {
        out.push_str(&table_html(t));
    }
    out.push_str(&charts::startup(r));
    for rep in &a.compat {
        compat_html(rep, &mut out);
    }
    for t in a.machines.iter().chain(&a.by_machine) {
        out.push_str(&table_html(t));
    }
    findings_html(a, &mut out);
    let _ = write!(
        out,
        "<h2>Environment</h2><p>{}</p>\n</body></html>\n",
        esc(&super::markdown::environment_line(r))
    );
    out
}

/// The findings, after the tables: each folded to its first clause, the rest under it.
fn findings_html(a: &Analysis, out: &mut String) {
    if a.findings.is_empty() {
        return;
    }
    let _ = writeln!(out, "<h2>Findings ({})</h2>", a.findings.len());
    for f in &a.findings {
        let text = f.to_string();
        let head = text.split(" — ").next().unwrap_or(&text);
        let _ = writeln!(
            out,
            "<details class=\"finding\"><summary>{}</summary>{}</details>",
            inline(head),
            inline(&text)
        );
    }
}

/// A scenario's tables, its charts and its flame graphs.
fn scenario_html(
    r: &crate::results::Results,
    s: &super::analysis::ScenarioTables,
    flames: &[super::profiles::Flame],
    out: &mut String,
) {
    out.push_str(&table_html(&s.serving));
    if let Some(t) = &s.scaling {
        out.push_str(&table_html(t));
    }
    if let Some(t) = &s.edges {
        out.push_str(&table_html(t));
    }
    out.push_str("<div class=\"charts\">");
    let scaling = charts::scaling(r, &s.name);
    if scaling.is_empty() {
        out.push_str(&charts::throughput(r, &s.name));
    } else {
        out.push_str(&scaling);
    }
    out.push_str(&charts::rate_curves(r, &s.name));
    out.push_str(&charts::edges(r, &s.name));
    out.push_str(&charts::latency(r, &s.name));
    out.push_str("</div>\n");
    if let Some(t) = &s.profile {
        out.push_str(&table_html(t));
    }
    for f in flames.iter().filter(|f| f.scenario == s.name) {
        // Inline, without the XML prolog a page does not need.
        let svg = f.svg.find("<svg").map_or(f.svg.as_str(), |i| &f.svg[i..]);
        let _ = writeln!(
            out,
            "<figure class=\"flame\"><figcaption>{}</figcaption>{svg}</figure>",
            esc(&f.title)
        );
    }
}

/// The Markdown a summary line or finding uses, as HTML: `code spans` and every **bold**
/// pair (`**confirmed**` showed as written).
fn inline(text: &str) -> String {
    let html = code_spans(text);
    if html.matches("**").count() % 2 != 0 {
        return html;
    }
    let mut out = String::with_capacity(html.len());
    for (i, part) in html.split("**").enumerate() {
        if i > 0 {
            out.push_str(if i % 2 == 1 { "<b>" } else { "</b>" });
        }
        out.push_str(part);
    }
    out
}

/// Text with its `code spans` set as code, the rest escaped (titles are written for the
/// Markdown, whose backticks would show as they are).
fn code_spans(text: &str) -> String {
    let mut out = String::new();
    for (i, part) in text.split('`').enumerate() {
        if i % 2 == 1 {
            let _ = write!(out, "<code>{}</code>", esc(part));
        } else {
            out.push_str(&esc(part));
        }
    }
    out
}

fn table_html(t: &Table) -> String {
    let mut out = format!("<h2>{}</h2>\n<table><tr>", code_spans(&t.title));
    for h in &t.head {
        let _ = write!(out, "<th>{}</th>", esc(h));
    }
    out.push_str("</tr>\n");
    for row in &t.rows {
        out.push_str("<tr>");
        for c in row {
            // A verdict's cell is styled by what it proved (its reading, not its text).
            match c.reading {
                Some(r) => {
                    let _ = write!(out, "<td class=\"{}\">{}</td>", r.class(), esc(&c.text));
                }
                None => {
                    let _ = write!(out, "<td>{}</td>", esc(&c.text));
                }
            }
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table>\n");
    out
}

/// The matrix (share identical per call and contender), then per contender each class of
/// difference with its shortest example, folded.
fn compat_html(rep: &CompatReport, out: &mut String) {
    let service = super::compat::one_service(rep);
    let _ = writeln!(
        out,
        "<h2>Compatibility against {}{}</h2>",
        esc(&rep.baseline),
        service.as_ref().map_or(String::new(), |s| format!(
            ", calls of <code>{}</code>",
            esc(s)
        ))
    );
    let names: Vec<String> = rep
        .sets
        .first()
        .map(|s| s.contenders.iter().map(|c| c.contender.clone()).collect())
        .unwrap_or_default();
    let _ = write!(out, "<table><tr><th>call</th><th>cases</th>");
    for n in &names {
        let _ = write!(out, "<th>{}</th>", esc(n));
    }
    out.push_str("</tr>\n");
    for s in &rep.sets {
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td>",
            esc(super::compat::shown_name(&s.name, service.as_deref())),
            s.cases
        );
        for c in &s.contenders {
            let share = if c.compared > 0 {
                (c.identical + c.same_failure) as f64 / c.compared as f64
            } else {
                1.0
            };
            let bg = if share >= 1.0 { "#e6f4e6" } else { "#fde8e8" };
            let _ = write!(
                out,
                "<td style=\"background:{bg}\">{}/{} identical</td>",
                c.identical, c.compared
            );
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table>\n");
    for name in &names {
        compat_differences(rep, name, out);
    }
}

/// How contender `name` differs from the baseline: each class of difference with its
/// shortest example, folded.
fn compat_differences(rep: &CompatReport, name: &str, out: &mut String) {
    let mut any = false;
    for s in &rep.sets {
        let Some(c) = s.contenders.iter().find(|c| c.contender == name) else {
            continue;
        };
        for class in c.classes.iter().filter(|k| k.kind != "both_failed") {
            if !any {
                let _ = writeln!(
                    out,
                    "<h3>{}: how it differs from {}</h3>",
                    esc(name),
                    esc(&rep.baseline)
                );
                any = true;
            }
            let e = &class.example;
            let mut body = format!(
                "request: {}\n{}: {}\n{name}: {}",
                e.request, rep.baseline, e.baseline, e.other
            );
            for d in e.diff.iter().take(5) {
                let _ = write!(body, "\ndiff: {d}");
            }
            let _ = writeln!(
                out,
                "<details><summary><b>{}</b> — {} of {} cases of <code>{}</code>; shortest example ({})</summary><pre>{}</pre></details>",
                esc(&class.class),
                class.cases,
                c.compared,
                esc(&s.name),
                esc(&e.origin),
                esc(&body)
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_in_summary_lines_and_findings_becomes_html() {
        assert_eq!(
            inline("**Findings:** v1 — Nagle, **confirmed**: `TCP_NODELAY` <set>"),
            "<b>Findings:</b> v1 — Nagle, <b>confirmed</b>: <code>TCP_NODELAY</code> &lt;set&gt;"
        );
        // An unpaired `**` is left as written rather than bolding the rest of the page.
        assert_eq!(inline("a ** b"), "a ** b");
    }

    #[test]
    fn the_three_verdicts_are_told_apart_at_a_glance() {
        use crate::analysis::verdicts::{fixtures::v, Figure};
        use crate::report::cells::verdict_cell;
        let t = Table {
            id: "t".into(),
            title: "T".into(),
            head: vec!["x".into(); 5],
            rows: vec![vec![
                verdict_cell("cpu", Some(&v(Figure::CpuPerRequest, 1.34, 1.29, 1.40))),
                verdict_cell("t", Some(&v(Figure::Throughput, 1.0, 0.99, 1.01))),
                verdict_cell("t", Some(&v(Figure::Throughput, 1.03, 0.98, 1.08))),
                verdict_cell("t", None),
                super::super::table::Cell::shown("3 × 30 (limit)"),
            ]],
        };
        let html = table_html(&t);
        for (class, text) in [
            ("different", "1.34× (1.29×–1.40×) more CPU per request"),
            (
                "equivalent",
                "≈ 1.00× (0.990×–1.01×) throughput equal within ±2%",
            ),
            (
                "inconclusive",
                "? 1.03× (0.980×–1.08×) throughput inconclusive",
            ),
        ] {
            assert!(
                html.contains(&format!("<td class=\"{class}\">{text}")),
                "{html}"
            );
        }
        assert!(html.contains("<td></td><td>3 × 30 (limit)</td>"), "{html}");
    }
}
