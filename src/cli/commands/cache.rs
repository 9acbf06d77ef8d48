//! `bakeoff cache list|prune` (docs/from-source.md): the builds the cache keeps, and their
//! removal with the incremental work trees.

use super::*;

/// `bakeoff cache list|prune`.
pub(crate) fn run_cache(action: &CacheAction) -> anyhow::Result<u8> {
    use crate::build::cache;
    let root = cache::root();
    let age = |secs: u64| {
        let d = cache::now().saturating_sub(secs);
        match d {
            0..=3599 => format!("{} min", d / 60),
            3600..=86_399 => format!("{} h", d / 3600),
            _ => format!("{} d", d / 86_400),
        }
    };
    let line = |l: &cache::Listed| {
        let s = &l.entry.source;
        let at = match (&s.commit, s.dirty) {
            (Some(c), false) => crate::units::prefix(c, 12).to_string(),
            (Some(c), true) => format!("{}, dirty", crate::units::prefix(c, 12)),
            (None, _) => "folder".into(),
        };
        format!(
            "{}  {} @ {} ({at})  {}  for {}  built {} ago, used {} ago",
            l.key,
            crate::build::redact(&s.repository),
            s.reference.as_deref().unwrap_or("working tree"),
            report::fmt_bytes(l.bytes as f64),
            l.entry.contenders(),
            age(l.entry.built_at),
            age(l.entry.used_at)
        )
    };
    match action {
        CacheAction::List => {
            let all = cache::list(&root);
            for l in &all {
                emit(&format!("{}\n", line(l)))?;
            }
            let bytes: u64 = all.iter().map(|l| l.bytes).sum();
            eprintln!(
                "{} in {} ({})",
                crate::units::count(all.len() as u64, "build"),
                root.display(),
                report::fmt_bytes(bytes as f64)
            );
        }
        CacheAction::Prune { older_than, all } => {
            if root.exists() {
                cache::ready(&root).map_err(anyhow::Error::msg)?;
            }
            let older = if *all {
                None
            } else {
                Some(older_than.unwrap_or(Duration::from_secs(30 * 86_400)))
            };
            let gone = cache::prune(&root, older);
            for l in &gone {
                eprintln!("removed {}", line(l));
            }
            let bytes: u64 = gone.iter().map(|l| l.bytes).sum();
            let trees = crate::build::work::prune(&root, older);
            eprintln!(
                "removed {} ({}){} from {}",
                crate::units::count(gone.len() as u64, "build"),
                report::fmt_bytes(bytes as f64),
                match trees {
                    0 => String::new(),
                    n => format!(
                        " and {}",
                        crate::units::count(n as u64, "incremental work tree")
                    ),
                },
                root.display()
            );
        }
    }
    Ok(0)
}
