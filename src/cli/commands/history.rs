//! `bakeoff history …` and `run --record` (docs/history.md).

use std::path::Path;

use anyhow::Context as _;

use super::*;
use crate::history::{self, Store};

/// `history import`: each folder recorded; `commit` for contenders that name none.
fn import(
    flag: Option<&Path>,
    dirs: &[std::path::PathBuf],
    commit: Option<&str>,
) -> anyhow::Result<u8> {
    let given = match commit {
        Some(rev) => {
            let cancel = crate::cancel::Cancel::new();
            let d = crate::build::history::details(Path::new("."), rev, &cancel);
            Some(d.with_context(|| {
                format!("--commit {rev}: not a commit of a git repository in this folder")
            })?)
        }
        None => None,
    };
    for d in dirs {
        crate::drive::record::record_at(d, flag, given.as_ref())?;
    }
    Ok(0)
}

/// `backfill` and `import`, which record into the history (made when missing); `None` for
/// the actions that read an existing one.
fn without_a_store(flag: Option<&Path>, action: &HistoryAction) -> Option<anyhow::Result<u8>> {
    if let HistoryAction::Backfill {
        plan,
        contender,
        from,
        to,
        every,
        out,
    } = action
    {
        let cancel = install_handler(on_interrupt_run, 0);
        crate::sys::raise_open_files_limit();
        crate::sys::children::adopt();
        let b = crate::drive::backfill::Backfill {
            plan,
            contender,
            from,
            to,
            every: *every,
            out: out.as_deref(),
            history: flag,
        };
        return Some(crate::drive::backfill::backfill(&b, &cancel));
    }
    if let HistoryAction::Import { dirs, commit } = action {
        return Some(import(flag, dirs, commit.as_deref()));
    }
    None
}

pub(crate) fn run_history(flag: Option<&Path>, action: &HistoryAction) -> anyhow::Result<u8> {
    let path = history::store::path(flag);
    act(flag, action).map_err(|e| history::store::explain(e, &path))
}

fn act(flag: Option<&Path>, action: &HistoryAction) -> anyhow::Result<u8> {
    if let Some(done) = without_a_store(flag, action) {
        return done;
    }
    let path = history::store::path(flag);
    if !path.exists() {
        anyhow::bail!(
            "no history at `{}` yet: record a run with `bakeoff run PLAN --record`",
            path.display()
        );
    }
    // Reading a history needs no write: one in a folder the caller cannot write is read.
    let reads = matches!(
        action,
        HistoryAction::List
            | HistoryAction::Show { .. }
            | HistoryAction::Export { .. }
            | HistoryAction::Report { .. }
    );
    let mut store = match reads {
        true => Store::open_read(&path)?,
        false => Store::open(&path)?,
    };
    match action {
        HistoryAction::List => list(&path, &store.series()?)?,
        HistoryAction::Show { id } => show(&path, &store.series()?, id)?,
        HistoryAction::Export { .. } => emit(&history::csv(&store.series()?))?,
        HistoryAction::Detect {
            window,
            max_p,
            fdr,
            confirm,
            with,
        } => {
            let settings = history::detect::Settings {
                window: *window,
                max_p: *max_p,
                min_magnitude: with.min_magnitude / 100.0,
            };
            let found = detect(&mut store, settings, fdr / 100.0)?;
            if *confirm {
                let open: Vec<_> = found
                    .into_iter()
                    .filter(|c| c.found.status == history::changes::Status::Candidate)
                    .collect();
                return confirm_steps(&mut store, &open, with);
            }
        }
        HistoryAction::Confirm { ids, with } => {
            let steps: Vec<_> = store
                .changes(ids)?
                .into_iter()
                .filter(|c| {
                    !ids.is_empty() || c.found.status == history::changes::Status::Candidate
                })
                .collect();
            return confirm_steps(&mut store, &steps, with);
        }
        HistoryAction::Report { out } => {
            let page = history::dashboard::write(&store, out)?;
            eprintln!("history: {}", page.display());
        }
        HistoryAction::Import { .. } | HistoryAction::Backfill { .. } => {
            unreachable!("handled above")
        }
    }
    Ok(0)
}

/// `detect --confirm` and `history confirm`: the steps measured again as `with` says.
fn confirm_steps(
    store: &mut Store,
    steps: &[history::changes::Change],
    with: &run_flags::ConfirmArgs,
) -> anyhow::Result<u8> {
    let settings = crate::drive::confirm::Settings {
        plan: with.plan.clone(),
        budget: with.budget.map(|b| b.0),
        out: with.out.clone(),
        min_magnitude: with.min_magnitude,
        bisect: with.bisect,
    };
    let cancel = install_handler(on_interrupt_run, 0);
    crate::sys::raise_open_files_limit();
    crate::sys::children::adopt();
    crate::drive::confirm::confirm(store, steps, &settings, &cancel)
}

/// `history list`: every series, its commits and latest value.
fn list(path: &Path, series: &[history::Series]) -> anyhow::Result<()> {
    emit(&list_table(series))?;
    eprintln!(
        "{} in {}",
        crate::units::count(series.len() as u64, "series"),
        path.display()
    );
    Ok(())
}

/// The series as a table; when they were measured in more than one environment (a series is
/// one environment's), a column says which, with its words below the table.
fn list_table(series: &[history::Series]) -> String {
    let mut envs: Vec<&str> = Vec::new();
    for s in series {
        if !envs.contains(&s.env_words.as_str()) {
            envs.push(&s.env_words);
        }
    }
    let label = |words: &str| {
        let k = envs.iter().position(|e| *e == words).unwrap_or(0);
        match k < 26 {
            true => char::from(b'A' + k as u8).to_string(),
            false => (k + 1).to_string(),
        }
    };
    let several = envs.len() > 1;
    let mut out = String::from("| series | plan · contender · point · figure |");
    out.push_str(if several { " machine |" } else { "" });
    out.push_str(" commits | latest | at |\n|---|---|---|---|---|");
    out.push_str(if several { "---|\n" } else { "\n" });
    for s in series {
        let last = s.points.last();
        let machine = match several {
            true => format!(" {} |", label(&s.env_words)),
            false => String::new(),
        };
        out.push_str(&format!(
            "| `{}` | {} |{machine} {} | {} | {} |\n",
            s.key.id(),
            s.key.words(),
            s.points.len(),
            last.map(|p| s.key.value(p.value)).unwrap_or_default(),
            last.and_then(|p| p.commit.as_deref())
                .map(|c| crate::units::prefix(c, 10).to_string())
                .unwrap_or_else(|| "–".into())
        ));
    }
    if several {
        out.push('\n');
        for e in &envs {
            out.push_str(&format!(
                "machine {}: {}\n",
                label(e),
                crate::units::printable(e)
            ));
        }
    }
    out
}

/// `history show ID`: one series' points.
fn show(path: &Path, series: &[history::Series], id: &str) -> anyhow::Result<()> {
    let Some(s) = series.iter().find(|s| s.key.id() == id) else {
        anyhow::bail!(
            "no series `{id}` in `{}`; `bakeoff history list` shows them",
            path.display()
        );
    };
    let mut out = format!(
            "{}\n{}\n\n| commit | time | subject | value | interval | runs |\n|---|---|---|---|---|---|\n",
            s.key.words(),
            crate::units::printable(&s.env_words)
        );
    for p in &s.points {
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} |\n",
            p.commit
                .as_deref()
                .map(|c| format!("`{}`", crate::units::prefix(c, 10)))
                .unwrap_or_else(|| "–".into()),
            p.time.map(history::iso).unwrap_or_default(),
            p.subject.as_deref().unwrap_or("").replace('|', "\\|"),
            s.key.value(p.value),
            match (p.lo, p.hi) {
                (Some(lo), Some(hi)) => format!("{}–{}", s.key.value(lo), s.key.value(hi)),
                _ => String::new(),
            },
            p.runs
        ));
    }
    emit(&out)?;
    Ok(())
}

/// `history detect`: the steps found, recorded, as a table.
fn detect(
    store: &mut Store,
    settings: history::detect::Settings,
    fdr: f64,
) -> anyhow::Result<Vec<history::changes::Change>> {
    let found = store.detect(settings, fdr)?;
    let mut out = String::from(
        "| step | series | last good | first bad | size | found by | status |\n|---|---|---|---|---|---|---|\n",
    );
    for c in &found {
        let f = &c.found;
        out.push_str(&format!(
            "| {} | {} | `{}` | `{}` | {} ({}–{}) | {} | {} |\n",
            c.id,
            f.key.words(),
            crate::units::prefix(&f.last_good, 10),
            crate::units::prefix(&f.first_bad, 10),
            crate::stats::notation::fmt_ratio(f.ratio),
            crate::stats::notation::fmt_ratio(f.lo),
            crate::stats::notation::fmt_ratio(f.hi),
            match f.rule {
                history::changes::Rule::Band => "the night's band".to_string(),
                history::changes::Rule::EDivisive => format!("p {:.1e}", f.p),
            },
            f.status.word()
        ));
    }
    emit(&out)?;
    eprintln!(
        "{} in {} series",
        crate::units::count(found.len() as u64, "step"),
        store.series()?.len()
    );
    Ok(found)
}

#[cfg(test)]
mod tests {
    use crate::history::{Series, SeriesKey};

    fn series(figure: &str, env: &str) -> Series {
        Series {
            key: SeriesKey {
                plan: "p".into(),
                contender: "a".into(),
                point: "get".into(),
                figure: figure.into(),
                env: env.into(),
                against: None,
            },
            env_words: format!("CPU {env} · contenders [1] load [0]"),
            points: Vec::new(),
        }
    }

    #[test]
    fn series_of_two_machines_say_which_is_which() {
        let one = super::list_table(&[series("throughput", "x"), series("p99", "x")]);
        assert!(!one.contains("machine"), "{one}");
        let two = super::list_table(&[series("throughput", "x"), series("throughput", "y")]);
        let rows: Vec<&str> = two.lines().filter(|l| l.starts_with("| `")).collect();
        assert!(
            rows[0].contains("| A |") && rows[1].contains("| B |"),
            "{two}"
        );
        assert!(
            two.lines()
                .nth(1)
                .is_some_and(|l| l.matches('|').count() == 7),
            "{two}"
        );
        assert!(
            two.contains("machine B: CPU y · contenders [1] load [0]"),
            "{two}"
        );
    }
}
