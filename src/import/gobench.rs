//! Go's benchmark format (<https://go.googlesource.com/proposal/+/master/design/14313-benchmark-format.md>):
//! `key: value` configuration lines, and result lines
//! `BenchmarkName-8  1000000  155 ns/op  16 B/op  2 allocs/op` with any number of
//! value-unit pairs. Several lines for one benchmark are several samples (`-count 10`).
//! `Unit ns/op better=lower` lines (from `benchfmt`) set a unit's direction. Other lines —
//! `PASS`, `ok`, test logs — are skipped; a result line that does not parse is an error.

use super::{error, BenchSet, Format, ImportError};
use crate::stats::Direction;

pub fn parse(label: &str, text: &str) -> Result<BenchSet, ImportError> {
    let mut set = BenchSet::new(label, Format::GoBench);
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        let line = line.trim_end();
        if let Some(rest) = line.strip_prefix("Unit ") {
            unit_metadata(&mut set, rest, label, n)?;
        } else if is_result_line(line) {
            result_line(&mut set, line, label, n)?;
        } else if let Some((k, v)) = config_line(line) {
            set.config.push((k.to_string(), v.to_string()));
        }
    }
    if set.rows.is_empty() {
        return Err(error(
            label,
            None,
            "no benchmark results found (lines like `BenchmarkX-8  1000  155 ns/op`)",
        ));
    }
    Ok(set)
}

/// `Benchmark` followed by nothing or a character that cannot start a lower-case word
/// (`Benchmarking is fun` is prose, not a result).
fn is_result_line(line: &str) -> bool {
    line.strip_prefix("Benchmark")
        .is_some_and(|rest| rest.chars().next().is_none_or(|c| !c.is_lowercase()))
}

fn result_line(set: &mut BenchSet, line: &str, label: &str, n: usize) -> Result<(), ImportError> {
    let fields: Vec<&str> = line.split_whitespace().collect();
    if fields.len() == 1 {
        // With -v, Go prints the name alone before a benchmark's own output.
        return Ok(());
    }
    let name = fields[0];
    if fields[1].parse::<u64>().is_err() {
        return Err(error(
            label,
            Some(n),
            format!("`{name}`: `{}` is not an iteration count", fields[1]),
        ));
    }
    let pairs = &fields[2..];
    if pairs.is_empty() {
        return Err(error(
            label,
            Some(n),
            format!("`{name}` has an iteration count but no measurements (a truncated line?)"),
        ));
    }
    if pairs.len() % 2 != 0 {
        return Err(error(
            label,
            Some(n),
            format!(
                "`{name}`: `{}` has no unit; measurements come in value-unit pairs",
                pairs[pairs.len() - 1]
            ),
        ));
    }
    for pair in pairs.chunks(2) {
        let value: f64 = pair[0]
            .parse()
            .ok()
            .filter(|v: &f64| v.is_finite())
            .ok_or_else(|| {
                error(
                    label,
                    Some(n),
                    format!(
                        "`{name}`: `{}` is not a number (before unit `{}`)",
                        pair[0], pair[1]
                    ),
                )
            })?;
        set.push(name, pair[1], value);
    }
    Ok(())
}

fn unit_metadata(set: &mut BenchSet, rest: &str, label: &str, n: usize) -> Result<(), ImportError> {
    let mut fields = rest.split_whitespace();
    let unit = fields
        .next()
        .ok_or_else(|| error(label, Some(n), "`Unit` needs a unit name"))?;
    for kv in fields {
        match kv.split_once('=') {
            Some(("better", "higher")) => {
                set.better
                    .insert(unit.to_string(), Direction::HigherIsBetter);
            }
            Some(("better", "lower")) => {
                set.better
                    .insert(unit.to_string(), Direction::LowerIsBetter);
            }
            Some(("better", other)) => {
                return Err(error(
                    label,
                    Some(n),
                    format!("`better={other}`: use `better=higher` or `better=lower`"),
                ))
            }
            Some(_) => {}
            None => {
                return Err(error(
                    label,
                    Some(n),
                    format!("`{kv}` in a Unit line is not key=value"),
                ))
            }
        }
    }
    Ok(())
}

/// `key: value` with a key that starts with a lower-case letter and has no spaces.
fn config_line(line: &str) -> Option<(&str, &str)> {
    let (k, v) = line.split_once(':')?;
    let ok = k.chars().next().is_some_and(|c| c.is_lowercase())
        && !k.chars().any(|c| c.is_whitespace() || c.is_uppercase())
        && (v.is_empty() || v.starts_with(' ') || v.starts_with('\t'));
    ok.then(|| (k, v.trim()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_config_and_units_parse() {
        let text = "goos: linux\npkg: example.com/enc\nBenchmarkEnc-8   \t 1000000\t 155 ns/op\t 16 B/op\t 2 allocs/op\n\
                    BenchmarkEnc-8 1000000 150 ns/op 16 B/op 2 allocs/op\nBenchmarkApp-8 300 44.7 ns/op 313.29 MB/s\n\
                    Unit frobs/op better=higher\nPASS\nok  \texample.com/enc\t3.1s\n";
        let s = parse("old.txt", text).unwrap();
        assert_eq!(
            s.config,
            [
                ("goos".into(), "linux".into()),
                ("pkg".into(), "example.com/enc".into())
            ]
        );
        assert_eq!(s.rows.len(), 5);
        assert_eq!(s.rows[0].name, "BenchmarkEnc-8");
        assert_eq!(s.rows[0].unit, "ns/op");
        assert_eq!(s.rows[0].values, [155.0, 150.0]);
        assert_eq!(s.rows[4].unit, "MB/s");
        assert_eq!(s.direction("MB/s"), Direction::HigherIsBetter);
        assert_eq!(s.direction("frobs/op"), Direction::HigherIsBetter);
        assert_eq!(s.direction("ns/op"), Direction::LowerIsBetter);
    }

    #[test]
    fn malformed_result_lines_name_the_line() {
        let e = parse("f.txt", "goos: linux\nBenchmarkX-8 100 5 ns/op 7\n").unwrap_err();
        assert_eq!(e.line, Some(2));
        assert!(
            e.to_string()
                .starts_with("f.txt:2: `BenchmarkX-8`: `7` has no unit"),
            "{e}"
        );
        let e = parse("f.txt", "BenchmarkX-8 100\n").unwrap_err();
        assert!(e.message.contains("truncated"), "{e}");
        let e = parse("f.txt", "BenchmarkX-8 many 5 ns/op\n").unwrap_err();
        assert!(e.message.contains("iteration count"), "{e}");
        let e = parse("f.txt", "BenchmarkX-8 1 five ns/op\n").unwrap_err();
        assert!(e.message.contains("not a number"), "{e}");
        let e = parse("f.txt", "").unwrap_err();
        assert_eq!(e.line, None);
        assert!(e.message.contains("no benchmark results"), "{e}");
        // Prose and lone names are not results.
        assert!(parse(
            "f.txt",
            "Benchmarking is fun\nBenchmarkY\nBenchmarkZ 1 2 ns/op\n"
        )
        .is_ok());
    }
}
