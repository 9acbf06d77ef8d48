//! The history's database (docs/history.md): one SQLite file, bakeoff's by its application
//! id and schema version, in WAL mode with a busy timeout so that two runs recording at once
//! both land. A file that is not bakeoff's history is refused before anything is written to
//! it; an older schema is upgraded after a backup copy.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{anyhow, bail, Context as _};
use rusqlite::{Connection, TransactionBehavior};

/// The schema this bakeoff writes.
pub const SCHEMA: i64 = 4;

/// SQLite's `application_id` of a bakeoff history: the bytes `bkof`.
pub const APPLICATION_ID: i64 = 0x626b_6f66;

/// How long a write waits for another process's.
const BUSY: Duration = Duration::from_secs(30);

/// The first 16 bytes of every SQLite database file.
const HEADER: &[u8; 16] = b"SQLite format 3\0";

/// Each schema's tables, in order: `MIGRATIONS[k]` takes a database of schema `k` to `k + 1`
/// (schema 0 is a new, empty database).
const MIGRATIONS: &[&str] = &[
    r#"
CREATE TABLE runs (
    id INTEGER PRIMARY KEY,
    plan_name TEXT NOT NULL,
    plan_hash TEXT NOT NULL,
    started_at TEXT NOT NULL,
    recorded_at TEXT NOT NULL,
    results_dir TEXT NOT NULL,
    bakeoff TEXT NOT NULL,
    env_key TEXT NOT NULL,
    env TEXT NOT NULL,
    -- A hash of the run's measurements: a results folder recorded twice is one run.
    fingerprint TEXT NOT NULL UNIQUE
);
CREATE TABLE contenders (
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    commit_id TEXT,
    branch TEXT,
    commit_time INTEGER,
    subject TEXT,
    dirty INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (run_id, name)
);
CREATE TABLE figures (
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    contender TEXT NOT NULL,
    point TEXT NOT NULL,
    figure TEXT NOT NULL,
    estimate REAL NOT NULL,
    lo REAL,
    hi REAL,
    per_repetition TEXT NOT NULL,
    PRIMARY KEY (run_id, contender, point, figure)
);
CREATE TABLE verdicts (
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    contender TEXT NOT NULL,
    baseline TEXT NOT NULL,
    point TEXT NOT NULL,
    figure TEXT NOT NULL,
    call TEXT NOT NULL,
    ratio REAL NOT NULL,
    lo REAL NOT NULL,
    hi REAL NOT NULL,
    noise REAL NOT NULL,
    equivalence REAL NOT NULL,
    PRIMARY KEY (run_id, contender, point, figure)
);
CREATE TABLE changes (
    id INTEGER PRIMARY KEY,
    plan_name TEXT NOT NULL,
    contender TEXT NOT NULL,
    point TEXT NOT NULL,
    figure TEXT NOT NULL,
    env_key TEXT NOT NULL,
    last_good TEXT NOT NULL,
    first_bad TEXT NOT NULL,
    ratio REAL NOT NULL,
    lo REAL,
    hi REAL,
    p REAL NOT NULL,
    status TEXT NOT NULL,
    detected_at TEXT NOT NULL,
    confirmed_at TEXT,
    confirm_dir TEXT,
    UNIQUE (plan_name, contender, point, figure, env_key, first_bad)
);
CREATE INDEX figures_series ON figures (contender, point, figure);
"#,
    r#"
-- Schema 2: what `history confirm` needs to measure a step again (the plan's file), what
-- the dashboard links commits with, and the verdict a confirmation read.
ALTER TABLE runs ADD COLUMN plan_path TEXT;
ALTER TABLE runs ADD COLUMN commit_url TEXT;
ALTER TABLE changes ADD COLUMN verdict TEXT;
"#,
    r#"
-- Schema 3: each commit's place on its first-parent line, which orders a series (a commit
-- recorded before it has none, and its series is ordered by commit time).
ALTER TABLE contenders ADD COLUMN depth INTEGER;
"#,
    r#"
-- Schema 4: a step of a ratio series (a contender's figure over the baseline it ran beside,
-- its reference: docs/history.md, "Over time, side by side") is kept apart from a step of
-- the same contender's absolute series (`against` names the baseline; '' for an absolute
-- series), and says which rule found it. SQLite cannot change a table's UNIQUE constraint
-- in place: the table is made again and its rows copied.
CREATE TABLE changes4 (
    id INTEGER PRIMARY KEY,
    plan_name TEXT NOT NULL,
    contender TEXT NOT NULL,
    point TEXT NOT NULL,
    figure TEXT NOT NULL,
    env_key TEXT NOT NULL,
    against TEXT NOT NULL DEFAULT '',
    last_good TEXT NOT NULL,
    first_bad TEXT NOT NULL,
    ratio REAL NOT NULL,
    lo REAL,
    hi REAL,
    p REAL NOT NULL,
    status TEXT NOT NULL,
    detected_at TEXT NOT NULL,
    confirmed_at TEXT,
    confirm_dir TEXT,
    verdict TEXT,
    rule TEXT NOT NULL DEFAULT 'e-divisive',
    UNIQUE (plan_name, contender, point, figure, env_key, against, first_bad)
);
INSERT INTO changes4 (id, plan_name, contender, point, figure, env_key, last_good, first_bad,
                      ratio, lo, hi, p, status, detected_at, confirmed_at, confirm_dir, verdict)
    SELECT id, plan_name, contender, point, figure, env_key, last_good, first_bad,
           ratio, lo, hi, p, status, detected_at, confirmed_at, confirm_dir, verdict
    FROM changes;
DROP TABLE changes;
ALTER TABLE changes4 RENAME TO changes;
CREATE INDEX verdicts_series ON verdicts (contender, point, figure);
"#,
];

/// An open history.
pub struct Store {
    pub(super) conn: Connection,
    pub path: PathBuf,
}

/// The history's file: `flag` (`--history`), else `BAKEOFF_HISTORY`, else
/// `$XDG_DATA_HOME/bakeoff/history.sqlite` (`~/.local/share/…` without it).
pub fn path(flag: Option<&Path>) -> PathBuf {
    let set = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    if let Some(p) = flag
        .map(Path::to_path_buf)
        .or_else(|| set("BAKEOFF_HISTORY"))
    {
        return p;
    }
    let data = set("XDG_DATA_HOME")
        .or_else(|| set("HOME").map(|h| h.join(".local/share")))
        .unwrap_or_else(std::env::temp_dir);
    data.join("bakeoff").join("history.sqlite")
}

impl Store {
    /// Opens (or makes) the history at `path`. Refused, and left untouched: a file that is
    /// not SQLite, a damaged one, another program's database, a newer bakeoff's history.
    pub fn open(path: &Path) -> anyhow::Result<Store> {
        Store::open_with(path, MIGRATIONS)
    }

    /// Opens the history at `path` to read it: as [`Store::open`] where the caller may write
    /// the file and its folder, else read-only — a history in a folder the caller cannot
    /// write (another user's, a read-only mount) is still listed, shown and drawn. A
    /// read-only history of an older schema cannot be upgraded, and says so.
    pub fn open_read(path: &Path) -> anyhow::Result<Store> {
        if !path.exists() || writable(path) {
            return Store::open(path);
        }
        let name = path.display();
        foreign(path)?;
        use rusqlite::OpenFlags;
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI;
        let check = |conn: &Connection| -> rusqlite::Result<String> {
            conn.query_row("PRAGMA quick_check", [], |r| r.get(0))
        };
        // A history in WAL mode needs its `-shm` file, which a folder the caller cannot
        // write may not hold: then it is read as immutable (what a writer adds meanwhile is
        // not seen).
        let plain =
            Connection::open_with_flags(path, flags).and_then(|c| check(&c).map(|ok| (c, ok)));
        let (conn, ok) = match plain {
            Ok(x) => x,
            Err(_) => {
                let uri = format!(
                    "file:{}?immutable=1",
                    path.to_string_lossy()
                        .replace('%', "%25")
                        .replace('?', "%3f")
                        .replace('#', "%23")
                );
                let c = Connection::open_with_flags(&uri, flags)
                    .with_context(|| format!("opening history `{name}` to read it"))?;
                let ok = check(&c).map_err(|e| {
                    anyhow!("`{name}` is not a readable SQLite database ({e}); left as it is")
                })?;
                (c, ok)
            }
        };
        if ok != "ok" {
            bail!("`{name}` is damaged ({ok}); left as it is");
        }
        conn.busy_timeout(BUSY)?;
        let app: i64 = conn.pragma_query_value(None, "application_id", |r| r.get(0))?;
        let version: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
        let latest = MIGRATIONS.len() as i64;
        match (app, version) {
            (APPLICATION_ID, v) if v == latest => {}
            (APPLICATION_ID, v) if (1..latest).contains(&v) => bail!(
                "`{name}` is a history of schema {v}, which this bakeoff reads once upgraded to {latest}, and you cannot write it or its folder: run any history command where you can"
            ),
            (APPLICATION_ID, v) if v > latest => bail!(
                "`{name}` is a history of schema {v}, written by a newer bakeoff; this one reads schemas up to {latest}"
            ),
            (APPLICATION_ID, v) => bail!(
                "`{name}` carries bakeoff's id but schema version {v}, which no bakeoff writes: it is damaged; left as it is"
            ),
            _ => bail!("`{name}` is an SQLite database, but not a bakeoff history (application id {app:#x}); left as it is"),
        }
        Ok(Store {
            conn,
            path: path.to_path_buf(),
        })
    }

    fn open_with(path: &Path, migrations: &[&str]) -> anyhow::Result<Store> {
        let name = path.display();
        let latest = migrations.len() as i64;
        match std::fs::symlink_metadata(path) {
            Ok(m) if !m.is_file() => bail!("history `{name}` is not a regular file"),
            Ok(m) if m.len() > 0 => foreign(path)?,
            Ok(_) => eprintln!(
                "bakeoff: history `{name}` was an empty file: a new history is made in it"
            ),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                if let Some(d) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                    std::fs::create_dir_all(d).with_context(|| {
                        format!("making the history's folder `{}`", d.display())
                    })?;
                }
            }
            Err(e) => bail!("history `{name}`: {e}"),
        }
        if path.exists() && !writable(path) {
            bail!(
                "you cannot write history `{name}` or its folder, and this command records in it; `history list`, `show`, `export` and `report` read it as it is"
            );
        }
        let mut conn =
            Connection::open(path).with_context(|| format!("opening history `{name}`"))?;
        conn.busy_timeout(BUSY)?;
        let check: String = conn
            .query_row("PRAGMA quick_check", [], |r| r.get(0))
            .map_err(|e| {
                anyhow!("`{name}` is not a readable SQLite database ({e}); left as it is")
            })?;
        if check != "ok" {
            bail!("`{name}` is damaged ({check}); left as it is");
        }
        // Read and made under a write lock: two runs opening a new history at once make
        // its tables once.
        let mut backed_up = false;
        loop {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let app: i64 = tx.pragma_query_value(None, "application_id", |r| r.get(0))?;
            let version: i64 = tx.pragma_query_value(None, "user_version", |r| r.get(0))?;
            let tables: i64 =
                tx.query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))?;
            match (app, version) {
                (0, 0) if tables == 0 => migrate(&tx, 0, migrations)?,
                (APPLICATION_ID, v) if v == latest => {}
                (APPLICATION_ID, v) if v < 1 => bail!(
                    "`{name}` carries bakeoff's id but schema version {v}, which no bakeoff writes: it is damaged; left as it is"
                ),
                (APPLICATION_ID, v) if (1..latest).contains(&v) && backed_up => {
                    migrate(&tx, v, migrations)?
                }
                (APPLICATION_ID, v) if (1..latest).contains(&v) => {
                    drop(tx);
                    backup(&conn, path, v)?;
                    backed_up = true;
                    continue;
                }
                (APPLICATION_ID, v) => bail!(
                    "`{name}` is a history of schema {v}, written by a newer bakeoff; this one reads schemas up to {latest}"
                ),
                _ => bail!(
                    "`{name}` is an SQLite database, but not a bakeoff history (application id {app:#x}, {}); left as it is",
                    crate::units::count(tables as u64, "table")
                ),
            }
            tx.commit()?;
            break;
        }
        let _: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
        conn.pragma_update(None, "foreign_keys", true)?;
        Ok(Store {
            conn,
            path: path.to_path_buf(),
        })
    }

    pub fn schema(&self) -> anyhow::Result<i64> {
        Ok(self
            .conn
            .pragma_query_value(None, "user_version", |r| r.get(0))?)
    }
}

/// `e` said as what it means for the history at `path`: SQLite's "Error code 5" (the lock
/// another bakeoff held past the 30 s wait) and "Error code 8" (a read-only file or folder)
/// in words, with what to do; any other error as it is.
pub fn explain(e: anyhow::Error, path: &Path) -> anyhow::Error {
    use rusqlite::ErrorCode;
    let code = e
        .chain()
        .find_map(|c| match c.downcast_ref::<rusqlite::Error>() {
            Some(rusqlite::Error::SqliteFailure(f, _)) => Some(f.code),
            _ => None,
        });
    let name = path.display();
    match code {
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => anyhow!(
            "history `{name}` stayed locked by another bakeoff writing to it for {} s: run this again once that one has finished",
            BUSY.as_secs()
        ),
        Some(ErrorCode::ReadOnly) => anyhow!(
            "history `{name}` cannot be written here (the file or its folder is read-only, and even reading it takes a lock file beside it): copy it somewhere writable, or give --history a writable path"
        ),
        _ => e,
    }
}

/// A copy of the database at schema `v` beside it (`history.sqlite.v1.bak`), before an
/// upgrade.
/// Whether the caller may write the file at `path` and its folder (SQLite makes its journal
/// files there).
fn writable(path: &Path) -> bool {
    let can = |p: &Path| {
        let Ok(c) = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()) else {
            return false;
        };
        unsafe { libc::access(c.as_ptr(), libc::W_OK) == 0 }
    };
    let folder = path.parent().filter(|d| !d.as_os_str().is_empty());
    can(path) && can(folder.unwrap_or(Path::new(".")))
}

/// Refuses a file that is not SQLite by its first 16 bytes, before SQLite opens it.
fn foreign(path: &Path) -> anyhow::Result<()> {
    use std::io::Read as _;
    let name = path.display();
    let mut head = Vec::with_capacity(16);
    std::fs::File::open(path)
        .and_then(|f| f.take(16).read_to_end(&mut head))
        .with_context(|| format!("reading history `{name}`"))?;
    if head != HEADER {
        bail!("`{name}` is not a bakeoff history: it is not an SQLite database (left as it is)");
    }
    Ok(())
}

fn backup(conn: &Connection, path: &Path, v: i64) -> anyhow::Result<()> {
    let to = PathBuf::from(format!("{}.v{v}.bak", path.display()));
    let _ = std::fs::remove_file(&to);
    conn.execute("VACUUM INTO ?1", [to.to_string_lossy()])
        .with_context(|| {
            format!(
                "copying the history to `{}` before upgrading it",
                to.display()
            )
        })?;
    eprintln!(
        "bakeoff: history `{}` upgraded from schema {v}; the old one is kept as `{}`",
        path.display(),
        to.display()
    );
    Ok(())
}

/// Takes the database from schema `from` to the latest, inside the caller's transaction.
fn migrate(tx: &rusqlite::Transaction, from: i64, migrations: &[&str]) -> anyhow::Result<()> {
    for sql in &migrations[from as usize..] {
        tx.execute_batch(sql)?;
    }
    tx.pragma_update(None, "application_id", APPLICATION_ID)?;
    tx.pragma_update(None, "user_version", migrations.len() as i64)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 68 item 16: SQLite's codes said in words; a schema version no bakeoff writes is
    /// damage, not a newer bakeoff's; an empty file is said to be adopted.
    #[test]
    fn what_sqlite_says_is_said_in_words() {
        let p = Path::new("/somewhere/h.sqlite");
        let coded = |code: i32| {
            anyhow::Error::new(rusqlite::Error::SqliteFailure(
                rusqlite::ffi::Error::new(code),
                None,
            ))
            .context("recording the run")
        };
        let busy = explain(coded(5), p).to_string();
        assert!(busy.contains("stayed locked by another bakeoff"), "{busy}");
        let ro = explain(coded(8), p).to_string();
        assert!(ro.contains("cannot be written here"), "{ro}");
        let other = format!("{:#}", explain(coded(1), p));
        assert!(other.contains("recording the run"), "{other}");

        let dir = std::env::temp_dir().join(format!("bakeoff-store-v0-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for v in [0, -1] {
            let f = dir.join(format!("v{v}.sqlite"));
            let _ = std::fs::remove_file(&f);
            let c = Connection::open(&f).unwrap();
            c.execute_batch("CREATE TABLE t (x)").unwrap();
            c.pragma_update(None, "application_id", APPLICATION_ID)
                .unwrap();
            c.pragma_update(None, "user_version", v).unwrap();
            drop(c);
            let e = Store::open(&f).err().unwrap().to_string();
            assert!(e.contains("damaged") && !e.contains("newer"), "{v}: {e}");
        }
        let empty = dir.join("empty.sqlite");
        std::fs::write(&empty, b"").unwrap();
        assert_eq!(Store::open(&empty).unwrap().schema().unwrap(), SCHEMA);
        let _ = std::fs::remove_dir_all(&dir);
    }

    fn tmp(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("bakeoff-store-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn a_new_history_is_made_and_opened_again() {
        let d = tmp("new");
        let p = d.join("sub/history.sqlite");
        let s = Store::open(&p).unwrap();
        assert_eq!(s.schema().unwrap(), SCHEMA);
        drop(s);
        assert_eq!(Store::open(&p).unwrap().schema().unwrap(), SCHEMA);
        let _ = std::fs::remove_dir_all(d);
    }

    #[test]
    fn what_is_not_a_bakeoff_history_is_refused_and_left_untouched() {
        let d = tmp("refused");
        let text = d.join("notes.txt");
        std::fs::write(&text, "a shopping list\n").unwrap();
        let e = Store::open(&text).err().unwrap().to_string();
        assert!(e.contains("not an SQLite database"), "{e}");
        assert_eq!(std::fs::read_to_string(&text).unwrap(), "a shopping list\n");

        let other = d.join("other.sqlite");
        Connection::open(&other)
            .unwrap()
            .execute_batch("CREATE TABLE t (x); INSERT INTO t VALUES (1);")
            .unwrap();
        let before = std::fs::read(&other).unwrap();
        let e = Store::open(&other).err().unwrap().to_string();
        assert!(
            e.contains("not a bakeoff history") && e.contains("1 table"),
            "{e}"
        );
        assert_eq!(std::fs::read(&other).unwrap(), before);

        // A history cut short.
        let good = d.join("good.sqlite");
        drop(Store::open(&good).unwrap());
        let bytes = std::fs::read(&good).unwrap();
        let cut = d.join("cut.sqlite");
        std::fs::write(&cut, &bytes[..bytes.len().min(4096) - 100]).unwrap();
        let before = std::fs::read(&cut).unwrap();
        assert!(Store::open(&cut).is_err());
        assert_eq!(std::fs::read(&cut).unwrap(), before);

        // A newer bakeoff's.
        let newer = d.join("newer.sqlite");
        let c = Connection::open(&newer).unwrap();
        c.pragma_update(None, "application_id", APPLICATION_ID)
            .unwrap();
        c.pragma_update(None, "user_version", SCHEMA + 1).unwrap();
        drop(c);
        let e = Store::open(&newer).err().unwrap().to_string();
        assert!(e.contains("written by a newer bakeoff"), "{e}");
        let _ = std::fs::remove_dir_all(d);
    }

    #[test]
    fn a_history_of_schema_1_is_upgraded_with_its_rows() {
        let d = tmp("schema1");
        let p = d.join("h.sqlite");
        let s = Store::open_with(&p, &MIGRATIONS[..1]).unwrap();
        s.conn
            .execute_batch(
                "INSERT INTO runs (plan_name, plan_hash, started_at, recorded_at, results_dir, bakeoff, env_key, env, fingerprint)
                 VALUES ('p', 'h', 't0', 't1', '/r', 'bakeoff 0', 'e', 'words', 'f');",
            )
            .unwrap();
        drop(s);
        let s = Store::open(&p).unwrap();
        assert_eq!(s.schema().unwrap(), SCHEMA);
        let (name, plan): (String, Option<String>) = s
            .conn
            .query_row("SELECT plan_name, plan_path FROM runs", [], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .unwrap();
        assert_eq!((name.as_str(), plan), ("p", None));
        assert!(d.join("h.sqlite.v1.bak").is_file());
        let _ = std::fs::remove_dir_all(d);
    }

    #[test]
    fn an_older_schema_is_upgraded_after_a_backup() {
        let d = tmp("upgrade");
        let p = d.join("h.sqlite");
        let old: &[&str] = &["CREATE TABLE a (x INTEGER); INSERT INTO a VALUES (7);"];
        drop(Store::open_with(&p, old).unwrap());
        let newer: &[&str] = &[old[0], "ALTER TABLE a ADD COLUMN y TEXT DEFAULT 'new';"];
        let s = Store::open_with(&p, newer).unwrap();
        assert_eq!(s.schema().unwrap(), 2);
        let (x, y): (i64, String) = s
            .conn
            .query_row("SELECT x, y FROM a", [], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap();
        assert_eq!((x, y.as_str()), (7, "new"));
        let bak = Connection::open(d.join("h.sqlite.v1.bak")).unwrap();
        let v: i64 = bak
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .unwrap();
        assert_eq!(v, 1);
        let _ = std::fs::remove_dir_all(d);
    }
}
