//! `bakeoff ci issue` (docs/scale-out.md, "The nightly"): each confirmed regression of a
//! nightly's `alerts.json` as one GitHub issue per culprit, opened once and updated in place
//! on a later night (the issue carries a hidden marker naming its culprit), with the runner's
//! `gh`. A token that cannot write issues is said, not a failure: the step summary has the
//! alert.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{bail, Context as _};

use super::comment::{gh, valid_repo};
use crate::cancel::Cancel;
use crate::history::alert::{Alert, Culprit};

/// The most of an `alerts.json` read.
const MAX_ALERTS: u64 = 4 << 20;

/// What filing one culprit's issue came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Filed {
    /// A new issue, by its number.
    Opened(u64),
    /// The issue an earlier night opened, by its number.
    Updated(u64),
    /// Not filed, and why.
    Not(String),
}

/// The marker an issue of `key`'s culprit carries.
fn marker(key: &str) -> String {
    format!("<!-- bakeoff alert {key} -->")
}

/// A culprit's key and the issue's title.
fn name(c: &Culprit) -> (String, String) {
    let short = |id: &str| crate::units::prefix(id, 10).to_string();
    match c {
        Culprit::Commit { id, subject, .. } => {
            let subject: String = crate::units::printable(subject).chars().take(72).collect();
            (
                id.clone(),
                format!(
                    "bakeoff: a regression confirmed at {} “{subject}”",
                    short(id)
                ),
            )
        }
        Culprit::Range { after, to, .. } => (
            format!("{after}..{to}"),
            format!(
                "bakeoff: a regression confirmed after {} up to {}",
                short(after),
                short(to)
            ),
        ),
    }
}

/// Reads `dir/alerts.json` (as `history detect --confirm` writes it).
fn read(dir: &Path) -> anyhow::Result<Vec<Alert>> {
    let file = dir.join("alerts.json");
    let meta = std::fs::metadata(&file).with_context(|| format!("`{}`", file.display()))?;
    if !meta.is_file() || meta.len() > MAX_ALERTS {
        bail!(
            "`{}` is not an alerts file (at most {MAX_ALERTS} bytes)",
            file.display()
        );
    }
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&file)?)
        .with_context(|| format!("`{}` is not JSON", file.display()))?;
    match v["schema"].as_u64() {
        Some(s) if s == u64::from(crate::history::alert::SCHEMA) => {}
        Some(s) => bail!(
            "`{}` is of schema {s}, this bakeoff reads {}",
            file.display(),
            crate::history::alert::SCHEMA
        ),
        None => bail!("`{}` names no schema: not an alerts file", file.display()),
    }
    serde_json::from_value(v["alerts"].clone())
        .with_context(|| format!("`{}`: its alerts cannot be read", file.display()))
}

/// Files every confirmed regression of `dir/alerts.json` on `repo` (`owner/name`), one
/// issue per culprit; `run_link` (the workflow run) is added to each. Each culprit's key
/// and what filing it came to.
pub fn issue(
    dir: &Path,
    repo: &str,
    run_link: Option<&str>,
    cancel: &Cancel,
) -> anyhow::Result<Vec<(String, Filed)>> {
    valid_repo(repo)?;
    let alerts = read(dir)?;
    let mut by: BTreeMap<String, (String, Vec<Alert>)> = BTreeMap::new();
    for a in alerts.into_iter().filter(|a| a.regression) {
        let (key, title) = name(&a.culprit);
        by.entry(key)
            .or_insert_with(|| (title, Vec::new()))
            .1
            .push(a);
    }
    if by.is_empty() {
        return Ok(Vec::new());
    }
    let listed = match gh(
        cancel,
        &[
            "api",
            &format!("repos/{repo}/issues?state=open&per_page=100"),
            "--paginate",
        ],
    ) {
        Ok(out) => out,
        Err(e) => return Ok(by.into_keys().map(|k| (k, Filed::Not(e.clone()))).collect()),
    };
    let open = issues(&listed);
    let mut out = Vec::new();
    for (key, (title, alerts)) in by {
        let mark = marker(&key);
        let mut body = format!("{mark}\n{}", crate::history::alert::markdown(&alerts));
        if let Some(l) = run_link {
            body.push_str(&format!("\nThe night's run: {l}\n"));
        }
        let file = dir.join(format!("issue-{}.md", crate::history::fnv(key.bytes())));
        crate::results::write_atomic(&file, body.as_bytes())?;
        let body_field = format!("body=@{}", file.display());
        let title_field = format!("title={title}");
        let filed = match open.iter().find(|(_, b)| b.contains(&mark)) {
            Some((n, _)) => gh(
                cancel,
                &[
                    "api",
                    "-X",
                    "PATCH",
                    &format!("repos/{repo}/issues/{n}"),
                    "-F",
                    &body_field,
                ],
            )
            .map(|_| Filed::Updated(*n)),
            None => gh(
                cancel,
                &[
                    "api",
                    &format!("repos/{repo}/issues"),
                    "-f",
                    &title_field,
                    "-F",
                    &body_field,
                ],
            )
            .map(|made| {
                let n = serde_json::from_slice::<serde_json::Value>(&made)
                    .ok()
                    .and_then(|v| v["number"].as_u64())
                    .unwrap_or(0);
                Filed::Opened(n)
            }),
        };
        out.push((key, filed.unwrap_or_else(Filed::Not)));
    }
    Ok(out)
}

/// The open issues' numbers and bodies in `gh api --paginate`'s output (one JSON array a
/// page, one after another).
fn issues(listed: &[u8]) -> Vec<(u64, String)> {
    serde_json::Deserializer::from_slice(listed)
        .into_iter::<Vec<serde_json::Value>>()
        .map_while(Result::ok)
        .flatten()
        .filter_map(|i| Some((i["number"].as_u64()?, i["body"].as_str()?.to_string())))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_issue_is_found_by_its_culprit_on_any_page() {
        let key = "c".repeat(40);
        let pages = format!(
            "[{{\"number\": 3, \"body\": \"flaky test\"}}, {{\"number\": 4, \"body\": null}}]\n[{{\"number\": 9, \"body\": \"{}\\n**bakeoff**\"}}]",
            marker(&key)
        );
        let open = issues(pages.as_bytes());
        assert_eq!(open.len(), 2);
        assert!(open
            .iter()
            .any(|(n, b)| *n == 9 && b.contains(&marker(&key))));
        assert!(issues(b"not json").is_empty());
    }

    #[test]
    fn a_title_holds_no_control_character() {
        let (key, title) = name(&Culprit::Commit {
            id: "c".repeat(40),
            subject: "evil\n\u{1b}[31m subject".into(),
            link: None,
        });
        assert_eq!(key, "c".repeat(40));
        assert!(!title.chars().any(char::is_control), "{title}");
    }
}
