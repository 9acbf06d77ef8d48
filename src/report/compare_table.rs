//! `bakeoff compare` output: the same tables as text (aligned, for the terminal), Markdown,
//! CSV, or JSON. The cells are built once ([`cells`]); the formats only lay them out.

use std::fmt::Write as _;

use crate::compare::{Cell, Report, Table};
use crate::stats::{Direction, Verdict};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Text,
    Md,
    Csv,
    Json,
}

pub fn render(r: &Report, format: Format) -> String {
    match format {
        Format::Json => serde_json::to_string_pretty(r).expect("a report serializes") + "\n",
        Format::Csv => csv(r),
        Format::Text | Format::Md => tables(r, format == Format::Md),
    }
}

/// A number as a person writes it: whole numbers whole, others with 4 significant digits.
pub fn fmt_value(v: f64) -> String {
    if v == v.round() && v.abs() < 1e15 {
        return format!("{v:.0}");
    }
    let digits = if v == 0.0 {
        0
    } else {
        v.abs().log10().floor() as i32
    };
    let decimals = (3 - digits).clamp(0, 12) as usize;
    let s = format!("{v:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// The median with the half-width of its 95 % interval, e.g. `155 ±2%`.
fn with_ci(s: &crate::compare::Summary) -> String {
    match (s.ci_low, s.ci_high) {
        (Some(lo), Some(hi)) if s.median != 0.0 => {
            let w = ((s.median - lo).max(hi - s.median) / s.median.abs() * 100.0).round();
            format!("{} ±{w:.0}%", fmt_value(s.median))
        }
        _ => fmt_value(s.median),
    }
}

fn delta(c: &Cell) -> String {
    c.delta_pct.map_or("—".into(), |d| format!("{d:+.2}%"))
}

fn verdict(c: &Cell) -> String {
    let v = match c.verdict {
        Verdict::Better => "better",
        Verdict::Worse if c.tripped => "WORSE, beyond threshold",
        Verdict::Worse => "worse",
        Verdict::WithinNoise => "within noise",
        Verdict::NoChange => "~",
        Verdict::Underpowered => "too few samples",
    };
    v.to_string()
}

fn p(c: &Cell) -> String {
    if c.verdict == Verdict::Underpowered {
        "—".into()
    } else {
        format!("{:.3}", c.p)
    }
}

/// Header and body cells of one table.
fn cells(r: &Report, t: &Table) -> (Vec<String>, Vec<Vec<String>>) {
    let mut head = vec!["name".to_string(), r.inputs[0].label.clone()];
    for i in &r.inputs[1..] {
        head.extend([
            i.label.clone(),
            "delta".into(),
            "p".into(),
            "n".into(),
            "".into(),
        ]);
    }
    let mut body = Vec::new();
    for row in &t.rows {
        let mut line = vec![row.name.clone(), with_ci(&row.base)];
        for c in &row.cells {
            match c {
                Some(c) => line.extend([
                    with_ci(&c.summary),
                    delta(c),
                    p(c),
                    format!("{}+{}", row.base.n, c.summary.n),
                    verdict(c),
                ]),
                None => line.extend([
                    "—".into(),
                    "".into(),
                    "".into(),
                    "".into(),
                    "missing".into(),
                ]),
            }
        }
        body.push(line);
    }
    let mut geo = vec!["geomean".to_string(), String::new()];
    for g in &t.geomean_delta_pct {
        geo.extend([
            String::new(),
            g.map_or("—".into(), |g| format!("{g:+.2}%")),
            String::new(),
            String::new(),
            String::new(),
        ]);
    }
    body.push(geo);
    (head, body)
}

fn title(t: &Table) -> String {
    let dir = match t.direction {
        Direction::LowerIsBetter => "lower is better",
        Direction::HigherIsBetter => "higher is better",
    };
    format!("{} ({dir})", t.unit)
}

fn tables(r: &Report, md: bool) -> String {
    let mut out = String::new();
    for t in &r.tables {
        let (head, body) = cells(r, t);
        if md {
            let _ = writeln!(out, "### {}\n", title(t));
            let _ = writeln!(out, "| {} |", head.join(" | "));
            let align: Vec<&str> = head
                .iter()
                .enumerate()
                .map(|(i, _)| if i == 0 { "---" } else { "---:" })
                .collect();
            let _ = writeln!(out, "|{}|", align.join("|"));
            for line in &body {
                let _ = writeln!(out, "| {} |", line.join(" | "));
            }
        } else {
            let _ = writeln!(out, "{}", title(t));
            let widths: Vec<usize> = (0..head.len())
                .map(|i| {
                    body.iter()
                        .chain([&head])
                        .map(|l| l[i].chars().count())
                        .max()
                        .unwrap_or(0)
                })
                .collect();
            for line in std::iter::once(&head).chain(&body) {
                let mut s = String::new();
                for (i, cell) in line.iter().enumerate() {
                    let pad = widths[i] - cell.chars().count();
                    if i == 0 || (i > 1 && (i - 1) % 5 == 0) {
                        s.push_str(cell);
                        s.push_str(&" ".repeat(pad));
                    } else {
                        s.push_str(&" ".repeat(pad));
                        s.push_str(cell);
                    }
                    s.push_str("  ");
                }
                let _ = writeln!(out, "{}", s.trim_end());
            }
        }
        out.push('\n');
    }
    if r.pairing != "rows paired by name" {
        let _ = writeln!(out, "pairing: {}", r.pairing);
    }
    for b in &r.builds {
        let _ = writeln!(out, "built: {b}");
    }
    for w in &r.warnings {
        let _ = writeln!(out, "warning: {w}");
    }
    for m in &r.missing {
        let _ = writeln!(out, "{} lacks: {}", m.input, m.benchmarks.join(", "));
    }
    if let Some(t) = r.threshold_pct {
        let _ = writeln!(
            out,
            "threshold {t}%: {} significantly worse beyond it",
            r.tripped
        );
    }
    let needs = r
        .tables
        .iter()
        .flat_map(|t| &t.rows)
        .filter_map(|row| row.base.ci_needs)
        .max();
    if let Some(n) = needs {
        let _ = writeln!(
            out,
            "± is the 95% interval of the median; it needs ≥ {n} samples, so some values show none"
        );
    }
    if r.tables
        .iter()
        .flat_map(|t| &t.rows)
        .flat_map(|r| &r.cells)
        .flatten()
        .any(|c| c.verdict == Verdict::Underpowered)
    {
        let _ = writeln!(
            out,
            "too few samples: with so few runs per side no difference can reach p < {}; run each benchmark more often (go test -count 10)",
            r.alpha
        );
    }
    out
}

fn csv(r: &Report) -> String {
    let mut out = String::from(
        "unit,name,base,base_median,base_n,input,median,n,delta_pct,p,verdict,tripped\n",
    );
    let q = |s: &str| {
        if s.contains([',', '"', '\n']) {
            format!("\"{}\"", s.replace('"', "\"\""))
        } else {
            s.to_string()
        }
    };
    for t in &r.tables {
        for row in &t.rows {
            for (k, c) in row.cells.iter().enumerate() {
                let input = &r.inputs[k + 1].label;
                let fields = match c {
                    Some(c) => vec![
                        c.summary.median.to_string(),
                        c.summary.n.to_string(),
                        c.delta_pct.map_or(String::new(), |d| format!("{d:.4}")),
                        format!("{:.6}", c.p),
                        format!("{:?}", c.verdict).to_lowercase(),
                        c.tripped.to_string(),
                    ],
                    None => vec![
                        String::new(),
                        "0".into(),
                        String::new(),
                        String::new(),
                        "missing".into(),
                        "false".into(),
                    ],
                };
                let _ = writeln!(
                    out,
                    "{},{},{},{},{},{},{}",
                    q(&t.unit),
                    q(&row.name),
                    q(&r.inputs[0].label),
                    row.base.median,
                    row.base.n,
                    q(input),
                    fields.join(",")
                );
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_read_naturally() {
        assert_eq!(fmt_value(155.0), "155");
        assert_eq!(fmt_value(78.3), "78.3");
        assert_eq!(fmt_value(0.32), "0.32");
        assert_eq!(fmt_value(313.29), "313.3");
        assert_eq!(fmt_value(0.000123456), "0.0001235");
        assert_eq!(fmt_value(235440.0), "235440");
    }
}
