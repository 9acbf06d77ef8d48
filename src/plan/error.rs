//! Plan errors that point at the file, line and column, and suggest the nearest valid key
//! when a key is unknown.

use std::ops::Range;
use std::path::Path;

#[derive(Debug, thiserror::Error, PartialEq)]
#[error("{file}:{line}:{column}: {message}")]
pub struct PlanError {
    pub file: String,
    pub line: usize,
    pub column: usize,
    pub message: String,
}

/// Turns byte spans into `file:line:column` errors for one plan text.
pub struct Locator<'a> {
    file: String,
    text: &'a str,
}

impl<'a> Locator<'a> {
    pub fn new(file: &Path, text: &'a str) -> Locator<'a> {
        Locator {
            file: file.display().to_string(),
            text,
        }
    }

    /// The folder of the plan file, which relative paths in it are relative to.
    pub fn dir(&self) -> std::path::PathBuf {
        Path::new(&self.file)
            .parent()
            .map_or_else(|| std::path::PathBuf::from("."), Path::to_path_buf)
    }

    pub fn at(&self, span: Range<usize>, message: impl Into<String>) -> PlanError {
        let start = span.start.min(self.text.len());
        let before = &self.text[..start];
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        PlanError {
            file: self.file.clone(),
            line,
            column: self.text[line_start..start].chars().count() + 1,
            message: message.into(),
        }
    }

    /// A TOML syntax or shape error; unknown keys get the nearest valid key as a hint.
    pub fn from_toml(&self, e: &toml::de::Error) -> PlanError {
        let message = e.message().trim().to_string();
        let message = match unknown_field(&message) {
            Some((key, valid)) => {
                let mut m = format!("unknown key `{key}`");
                if let Some(n) = nearest(&key, valid.iter().map(String::as_str)) {
                    m.push_str(&format!("; did you mean `{n}`?"));
                }
                m.push_str(&format!(" (valid here: {})", valid.join(", ")));
                m
            }
            // serde's name for a key that takes one value or a list says nothing to a user.
            None if message.contains("expected u16") => {
                message.replace("expected u16", "expected a whole number from 0 to 65535")
            }
            None if message.contains("untagged enum OneOrMany") => {
                "expected one value or a list of them (e.g. `4` or `[1, 16, 64]`)".to_string()
            }
            None => message,
        };
        self.at(e.span().unwrap_or(0..0), message)
    }
}

/// Reads serde's "unknown field `x`, expected one of `a`, `b`" message.
fn unknown_field(message: &str) -> Option<(String, Vec<String>)> {
    let rest = message.strip_prefix("unknown field `")?;
    let (key, rest) = rest.split_once('`')?;
    let valid = rest
        .split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect();
    Some((key.to_string(), valid))
}

/// `; did you mean `NAME`?` for the nearest candidate, or nothing when none is close.
pub fn did_you_mean<'c>(word: &str, candidates: impl IntoIterator<Item = &'c str>) -> String {
    nearest(word, candidates)
        .map(|n| format!("; did you mean `{n}`?"))
        .unwrap_or_default()
}

/// The candidate closest to `word` by edit distance, when it is close enough to be a typo.
pub fn nearest<'c>(word: &str, candidates: impl IntoIterator<Item = &'c str>) -> Option<&'c str> {
    let limit = (word.chars().count() / 3).max(2);
    candidates
        .into_iter()
        .map(|c| (edit_distance(word, c), c))
        .filter(|&(d, _)| d <= limit)
        .min_by_key(|&(d, _)| d)
        .map(|(_, c)| c)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diag = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let next = (row[j + 1] + 1)
                .min(row[j] + 1)
                .min(diag + usize::from(ca != cb));
            diag = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_become_lines_and_columns() {
        let text = "a = 1\nbé = 2\n";
        let loc = Locator::new(Path::new("p.toml"), text);
        let e = loc.at(text.find('2').unwrap()..text.len(), "bad");
        assert_eq!((e.line, e.column), (2, 6));
        assert_eq!(e.to_string(), "p.toml:2:6: bad");
    }

    #[test]
    fn typos_find_the_nearest_key() {
        let keys = ["clients", "duration", "requests", "name"];
        assert_eq!(nearest("clinets", keys), Some("clients"));
        assert_eq!(nearest("durations", keys), Some("duration"));
        assert_eq!(nearest("zzzzzz", keys), None);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }

    #[test]
    fn serde_unknown_field_messages_are_read() {
        let (k, v) =
            unknown_field("unknown field `clinets`, expected one of `name`, `clients`").unwrap();
        assert_eq!(k, "clinets");
        assert_eq!(v, ["name", "clients"]);
    }
}
