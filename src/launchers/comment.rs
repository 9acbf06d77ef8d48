//! `bakeoff ci comment` (docs/scale-out.md): a run's verdict as one comment on its pull
//! request, posted with the runner's `gh` and updated in place on the next run (the comment
//! carries a hidden marker). Where the token cannot write — a fork's pull request — the
//! verdict stays in the step summary, and that is no failure.

use std::path::Path;
use std::time::Duration;

use crate::cancel::Cancel;
use crate::report::export::COMMENT_MARKER;

/// The most of a comment GitHub takes (65,536 characters); the verdict is far less.
const MAX_BODY: u64 = 60 << 10;

/// How long one `gh` call may take.
const GH_TIMEOUT: Duration = Duration::from_secs(120);

/// What posting came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Posted {
    Created,
    /// The comment an earlier run made, by its id.
    Updated(u64),
    /// Not posted, and why (the step summary has the verdict).
    Not(String),
}

/// Posts `dir/report/verdict.md` on pull request `pr` of `repo` (`owner/name`): the comment
/// of an earlier run (found by its marker) is updated, else one is made.
pub fn comment(dir: &Path, repo: &str, pr: u64, cancel: &Cancel) -> anyhow::Result<Posted> {
    let file = dir.join("report").join("verdict.md");
    let meta = std::fs::metadata(&file).map_err(|e| {
        anyhow::anyhow!(
            "`{}`: {e} (a results folder of run or merge?)",
            file.display()
        )
    })?;
    if !meta.is_file() || meta.len() > MAX_BODY {
        anyhow::bail!(
            "`{}` is not a verdict to post (a file of at most {} bytes)",
            file.display(),
            MAX_BODY
        );
    }
    valid_repo(repo)?;
    let body = format!("body=@{}", file.display());
    let listed = gh(
        cancel,
        &[
            "api",
            &format!("repos/{repo}/issues/{pr}/comments"),
            "--paginate",
        ],
    );
    let listed = match listed {
        Ok(out) => out,
        Err(e) => return Ok(Posted::Not(e)),
    };
    let made = match ours(&listed) {
        Some(id) => gh(
            cancel,
            &[
                "api",
                "-X",
                "PATCH",
                &format!("repos/{repo}/issues/comments/{id}"),
                "-F",
                &body,
            ],
        )
        .map(|_| Posted::Updated(id)),
        None => gh(
            cancel,
            &[
                "api",
                &format!("repos/{repo}/issues/{pr}/comments"),
                "-F",
                &body,
            ],
        )
        .map(|_| Posted::Created),
    };
    Ok(made.unwrap_or_else(Posted::Not))
}

/// The id of the comment carrying the marker, in `gh api --paginate`'s output (one JSON
/// array a page, one after another).
fn ours(listed: &[u8]) -> Option<u64> {
    serde_json::Deserializer::from_slice(listed)
        .into_iter::<Vec<serde_json::Value>>()
        .map_while(Result::ok)
        .flatten()
        .find(|c| {
            c["body"]
                .as_str()
                .is_some_and(|b| b.contains(COMMENT_MARKER))
        })
        .and_then(|c| c["id"].as_u64())
}

/// `repo` as OWNER/NAME, each a plain name.
pub(super) fn valid_repo(repo: &str) -> anyhow::Result<()> {
    let valid = repo.split_once('/').is_some_and(|(o, n)| {
        let ok = |s: &str| {
            !s.is_empty()
                && !s.starts_with('-')
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        };
        ok(o) && ok(n)
    });
    if !valid {
        anyhow::bail!("--repo {repo:?}: give OWNER/NAME, as GITHUB_REPOSITORY holds it");
    }
    Ok(())
}

/// `gh ARGS`, under a guard and the command's cancel, bounded in time and output.
pub(super) fn gh(cancel: &Cancel, args: &[&str]) -> Result<Vec<u8>, String> {
    crate::contender::capture(&crate::contender::Capture {
        program: Path::new("gh"),
        args,
        dir: None,
        env: &[("GH_PROMPT_DISABLED", "1")],
        cancel,
        limit: GH_TIMEOUT,
        max_output: 64 << 20,
    })
    .map_err(|e| format!("`gh {}`: {e}", args.first().copied().unwrap_or_default()))
}

#[cfg(test)]
mod tests {
    #[test]
    fn our_comment_is_found_on_any_page() {
        let pages = format!(
            "[{{\"id\": 1, \"body\": \"lgtm\"}}]\n[{{\"id\": 7, \"body\": \"{}\\n**gate: …**\"}}]",
            super::COMMENT_MARKER
        );
        assert_eq!(super::ours(pages.as_bytes()), Some(7));
        assert_eq!(super::ours(b"[]"), None);
        assert_eq!(super::ours(b"not json"), None);
    }
}
