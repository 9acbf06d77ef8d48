//! The history (docs/history.md): every recorded run in one SQLite database, read back as
//! series — one (plan, contender, point, figure, environment) over commits.

pub mod alert;
pub mod badge;
pub mod band;
pub mod changes;
pub mod dashboard;
pub mod detect;
pub mod record;
pub mod store;

use std::collections::BTreeMap;

pub use store::Store;

/// A 64-bit FNV-1a hash of `bytes`, as 16 hex digits: the history's keys and fingerprints.
pub(crate) fn fnv(bytes: impl IntoIterator<Item = u8>) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// The page of commit `id` from a `[history] commit_url` template, when it is a link that is
/// safe to write: `http://` or `https://` (lower case, at the very start) once `{commit}` is
/// filled in, with no space or control character anywhere. Anything else (`javascript:`,
/// `data:`, a leading space, a commit id that is itself a URL) is shown as text, not linked.
pub fn commit_link(template: &str, id: &str) -> Option<String> {
    let url = template.replace("{commit}", id);
    let scheme = url.starts_with("https://") || url.starts_with("http://");
    let clean = !url.chars().any(|c| c.is_whitespace() || c.is_control());
    (scheme && clean).then_some(url)
}

/// What a series is one of.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct SeriesKey {
    pub plan: String,
    pub contender: String,
    pub point: String,
    pub figure: String,
    pub env: String,
    /// For a ratio series, the baseline the contender ran beside (its reference): each
    /// point is the paired ratio of the figure to it. `None`: the absolute figure.
    pub against: Option<String>,
}

impl SeriesKey {
    /// Eight hex digits that name the series on the command line (`history show ID`).
    pub fn id(&self) -> String {
        let parts = [
            &self.plan,
            &self.contender,
            &self.point,
            &self.figure,
            &self.env,
        ];
        // An absolute series' id is what it was before ratio series were kept.
        let against = self
            .against
            .iter()
            .flat_map(|a| "÷".bytes().chain(a.bytes()));
        fnv(parts
            .iter()
            .flat_map(|p| p.bytes().chain([0xff]))
            .chain(against))[..8]
            .to_string()
    }

    /// A value of the series: the figure in its unit, or a ratio (`1.79×`).
    pub fn value(&self, v: f64) -> String {
        match (self.against.is_some(), self.figure.as_str()) {
            (true, _) => crate::stats::notation::fmt_ratio(v),
            (false, "throughput") => format!("{v:.0} req/s"),
            (false, _) => crate::units::fmt_us(v),
        }
    }

    /// `plan · contender · point · figure` (`figure ÷ baseline` for a ratio series), as
    /// lists show it.
    pub fn words(&self) -> String {
        let against = match &self.against {
            Some(a) => format!(" ÷ {a}"),
            None => String::new(),
        };
        let p = crate::units::printable;
        format!(
            "{} · {} · {} · {}{}",
            p(&self.plan),
            p(&self.contender),
            p(&self.point),
            p(&self.figure),
            p(&against)
        )
    }
}

/// One commit of a series: the runs of that commit as one point.
#[derive(Debug, Clone, PartialEq)]
pub struct SeriesPoint {
    /// None for a run whose contender had no commit to record.
    pub commit: Option<String>,
    pub time: Option<i64>,
    /// Its place on its first-parent line (None when recorded from a shallow clone, or by
    /// a bakeoff before it was recorded).
    pub depth: Option<i64>,
    pub subject: Option<String>,
    /// For a ratio series: the commit of the reference the runs were paired with (a commit
    /// measured against two references is two points).
    pub reference: Option<String>,
    /// The median of its runs' estimates; the interval of the run nearest it.
    pub value: f64,
    pub lo: Option<f64>,
    pub hi: Option<f64>,
    pub runs: usize,
    /// For a ratio series: how far apart the repetitions of the run nearest the median were
    /// (the interval's run), where both figures were recorded repetition by repetition.
    pub spread: Option<band::Spread>,
    /// When its first and last runs started.
    pub first_run: String,
    pub last_run: String,
}

/// A series over its commits, oldest first.
#[derive(Debug, Clone)]
pub struct Series {
    pub key: SeriesKey,
    pub env_words: String,
    pub points: Vec<SeriesPoint>,
}

/// One recorded figure, as read to make series.
struct Row {
    key: SeriesKey,
    env_words: String,
    commit: Option<String>,
    time: Option<i64>,
    depth: Option<i64>,
    subject: Option<String>,
    estimate: f64,
    lo: Option<f64>,
    hi: Option<f64>,
    started: String,
    reference: Option<String>,
    spread: Option<band::Spread>,
}

impl Store {
    /// Every series, each over its commits in commit order (see [`order`]): several runs of
    /// one commit are one point. The absolute series first, then the ratio series, one per
    /// paired comparison a run recorded (docs/history.md, "Over time, side by side").
    pub fn series(&self) -> anyhow::Result<Vec<Series>> {
        let absolute = "SELECT r.plan_name, f.contender, f.point, f.figure, r.env_key, r.env,
                    c.commit_id, c.commit_time, c.subject, f.estimate, f.lo, f.hi, r.started_at,
                    c.depth, NULL, NULL, NULL, NULL
             FROM figures f
             JOIN runs r ON r.id = f.run_id
             LEFT JOIN contenders c ON c.run_id = f.run_id AND c.name = f.contender";
        let ratios = "SELECT r.plan_name, v.contender, v.point, v.figure, r.env_key, r.env,
                    c.commit_id, c.commit_time, c.subject, v.ratio, v.lo, v.hi, r.started_at,
                    c.depth, v.baseline, b.commit_id, fc.per_repetition, fb.per_repetition
             FROM verdicts v
             JOIN runs r ON r.id = v.run_id
             LEFT JOIN contenders c ON c.run_id = v.run_id AND c.name = v.contender
             LEFT JOIN contenders b ON b.run_id = v.run_id AND b.name = v.baseline
             LEFT JOIN figures fc ON fc.run_id = v.run_id AND fc.contender = v.contender
                 AND fc.point = v.point AND fc.figure = v.figure
             LEFT JOIN figures fb ON fb.run_id = v.run_id AND fb.contender = v.baseline
                 AND fb.point = v.point AND fb.figure = v.figure";
        let mut by: BTreeMap<SeriesKey, (String, Vec<Row>)> = BTreeMap::new();
        for sql in [absolute, ratios] {
            let mut q = self.conn.prepare(sql)?;
            let rows = q.query_map([], |r| {
                Ok(Row {
                    key: SeriesKey {
                        plan: r.get(0)?,
                        contender: r.get(1)?,
                        point: r.get(2)?,
                        figure: r.get(3)?,
                        env: r.get(4)?,
                        against: r.get(14)?,
                    },
                    env_words: r.get(5)?,
                    commit: r.get(6)?,
                    time: r.get(7)?,
                    subject: r.get(8)?,
                    estimate: r.get(9)?,
                    lo: r.get(10)?,
                    hi: r.get(11)?,
                    started: r.get(12)?,
                    depth: r.get(13)?,
                    reference: r.get(15)?,
                    spread: spread(r.get(16)?, r.get(17)?),
                })
            })?;
            for row in rows {
                let row = row?;
                by.entry(row.key.clone())
                    .or_insert_with(|| (row.env_words.clone(), Vec::new()))
                    .1
                    .push(row);
            }
        }
        let mut out: Vec<Series> = by
            .into_iter()
            .map(|(key, (env_words, rows))| Series {
                key,
                env_words,
                points: points(rows),
            })
            .collect();
        out.sort_by_key(|s| s.key.against.is_some());
        Ok(out)
    }
}

/// The spread of a ratio's repetitions from the two figures' recorded values (JSON lists,
/// in repetition order); none where either is missing or unreadable.
fn spread(of: Option<String>, to: Option<String>) -> Option<band::Spread> {
    let read = |x: Option<String>| serde_json::from_str::<Vec<f64>>(&x?).ok();
    band::Spread::of(&read(of)?, &read(to)?)
}

/// A run's estimate, interval and spread.
type Estimate = (f64, Option<f64>, Option<f64>, Option<band::Spread>);

/// Commit order, first parent: by each commit's place on its first-parent line when every
/// commit has one (a merge is one step, however old the commits it brings), else by commit
/// time; then by when it was first run. `of` gives an item's commit, depth, time and start.
fn order<T>(items: &mut [T], of: impl Fn(&T) -> (bool, Option<i64>, Option<i64>, &str)) {
    let by_depth = items.iter().map(&of).all(|(c, d, _, _)| !c || d.is_some());
    items.sort_by(|a, b| {
        let (a, b) = (of(a), of(b));
        let depth = |d: Option<i64>| d.filter(|_| by_depth);
        (depth(a.1), a.2, a.3).cmp(&(depth(b.1), b.2, b.3))
    });
}

/// A series' rows as points: one per commit (a run without a commit is a point of its
/// own), in commit order.
fn points(mut rows: Vec<Row>) -> Vec<SeriesPoint> {
    order(&mut rows, |r| {
        (r.commit.is_some(), r.depth, r.time, r.started.as_str())
    });
    let mut out: Vec<(SeriesPoint, Vec<Estimate>)> = Vec::new();
    // Where each (commit, reference) already has its point: one look-up a row, not a scan
    // of the points so far (a series of 50,000 commits listed in seconds, not minutes).
    let mut seen: std::collections::HashMap<(String, Option<String>), usize> =
        std::collections::HashMap::new();
    for r in rows {
        let key = r.commit.clone().map(|c| (c, r.reference.clone()));
        let at = key.as_ref().and_then(|k| seen.get(k).copied());
        if let (None, Some(k)) = (at, key) {
            seen.insert(k, out.len());
        }
        let est = (r.estimate, r.lo, r.hi, r.spread);
        match at {
            Some(i) => {
                out[i].1.push(est);
                out[i].0.last_run = r.started.clone();
            }
            None => out.push((
                SeriesPoint {
                    commit: r.commit,
                    time: r.time,
                    depth: r.depth,
                    subject: r.subject,
                    reference: r.reference,
                    value: 0.0,
                    lo: None,
                    hi: None,
                    runs: 0,
                    spread: None,
                    first_run: r.started.clone(),
                    last_run: r.started,
                },
                vec![est],
            )),
        }
    }
    out.into_iter()
        .map(|(mut p, mut ests)| {
            ests.sort_by(|a, b| a.0.total_cmp(&b.0));
            let mid = &ests[(ests.len() - 1) / 2];
            let median = match ests.len() % 2 {
                1 => mid.0,
                _ => (mid.0 + ests[ests.len() / 2].0) / 2.0,
            };
            p.value = median;
            // A positive figure's interval that is not (recorded before intervals were on
            // the log scale) is no interval.
            (p.lo, p.hi) = match mid.1 {
                Some(lo) if lo <= 0.0 && median > 0.0 => (None, None),
                _ => (mid.1, mid.2),
            };
            p.spread = mid.3;
            p.runs = ests.len();
            p
        })
        .collect()
}

/// `export --csv`: one row per commit (its time, its id), one column per series, in the
/// shape Apache Otava reads; a commit a series has no point at is an empty cell.
pub fn csv(series: &[Series]) -> String {
    // In the series' commit order; each commit found through a map, not a scan.
    let mut commits: Vec<SeriesPoint> = Vec::new();
    let mut at: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for s in series {
        for p in &s.points {
            let (Some(c), Some(_)) = (p.commit.as_deref(), p.time) else {
                continue;
            };
            match at.get(c) {
                Some(&i) => {
                    let x = &mut commits[i];
                    if p.first_run < x.first_run {
                        x.first_run = p.first_run.clone();
                    }
                }
                None => {
                    at.insert(c, commits.len());
                    commits.push(p.clone());
                }
            }
        }
    }
    order(&mut commits, |p| {
        (true, p.depth, p.time, p.first_run.as_str())
    });
    // Every part of the series' identity, so no two series share a column (two plans, a
    // figure and its ratio to a reference).
    let column = |s: &Series| {
        let against = match &s.key.against {
            Some(a) => format!("-vs-{a}"),
            None => String::new(),
        };
        format!(
            "{}.{}.{}.{}{against}.{}",
            s.key.plan, s.key.contender, s.key.point, s.key.figure, s.key.env
        )
        .replace(|c: char| c == ',' || c == '"' || c.is_control(), " ")
    };
    let mut out = String::from("time,commit");
    for s in series {
        out.push(',');
        out.push_str(&column(s));
    }
    out.push('\n');
    // Each series' value at each commit, through a map a series.
    let values: Vec<std::collections::HashMap<&str, f64>> = series
        .iter()
        .map(|s| {
            let mut m = std::collections::HashMap::new();
            for p in &s.points {
                if let Some(c) = p.commit.as_deref() {
                    m.entry(c).or_insert(p.value);
                }
            }
            m
        })
        .collect();
    for row in &commits {
        let c = row.commit.as_deref().expect("only commits are rows");
        out.push_str(&format!("{},{c}", iso(row.time.unwrap_or_default())));
        for v in &values {
            out.push(',');
            if let Some(x) = v.get(c) {
                out.push_str(&format!("{x}"));
            }
        }
        out.push('\n');
    }
    out
}

/// Seconds since the epoch as `2026-12-04 23:13:12 +0000` (Otava's default time format).
pub(crate) fn iso(t: i64) -> String {
    let days = t.div_euclid(86_400);
    let secs = t.rem_euclid(86_400);
    // Civil from days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if m <= 2 { y + 1 } else { y };
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} +0000",
        secs / 3600,
        secs % 3600 / 60,
        secs % 60
    )
}

#[cfg(test)]
mod tests {
    /// (commit, depth, time, started) as ordered: by depth when every commit has one.
    fn ordered(items: &[(bool, Option<i64>, Option<i64>, &'static str)]) -> Vec<usize> {
        let mut at: Vec<usize> = (0..items.len()).collect();
        super::order(&mut at, |&k| items[k]);
        at
    }

    #[test]
    fn commits_are_in_first_parent_order_when_every_one_has_its_place() {
        // The second commit's clock was behind; the third is a merge of older work.
        let line = [
            (true, Some(10), Some(200), "r1"),
            (true, Some(11), Some(100), "r2"),
            (true, Some(12), Some(50), "r3"),
        ];
        assert_eq!(ordered(&line), [0, 1, 2]);
        // A commit recorded without its place: commit time for all.
        let mut mixed = line;
        mixed[0].1 = None;
        assert_eq!(ordered(&mixed), [2, 1, 0]);
        // A run without a commit does not count, and comes first; one commit's runs by start.
        let runs = [
            (true, Some(3), Some(9), "b"),
            (false, None, None, "z"),
            (true, Some(3), Some(9), "a"),
        ];
        assert_eq!(ordered(&runs), [1, 2, 0]);
    }

    /// Issue 68 item 9: two plans' series, and a figure beside its ratio to a reference, are
    /// columns of their own.
    #[test]
    fn every_series_is_a_column_of_its_own() {
        let point = super::SeriesPoint {
            commit: Some("a".repeat(40)),
            time: Some(1),
            depth: Some(1),
            subject: None,
            reference: None,
            value: 1.0,
            lo: None,
            hi: None,
            runs: 1,
            spread: None,
            first_run: "r".into(),
            last_run: "r".into(),
        };
        let series = |plan: &str, against: Option<&str>| super::Series {
            key: super::SeriesKey {
                plan: plan.into(),
                contender: "old".into(),
                point: "get [clients=2]".into(),
                figure: "throughput".into(),
                env: "f3093eb5697f".into(),
                against: against.map(str::to_string),
            },
            env_words: String::new(),
            points: vec![point.clone()],
        };
        let csv = super::csv(&[
            series("one", None),
            series("two", None),
            series("one", Some("reference")),
        ]);
        let head: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
        assert_eq!(head.len(), 5, "{csv}");
        let mut names = head[2..].to_vec();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), 3, "{csv}");
        assert!(head.contains(&"one.old.get [clients=2].throughput-vs-reference.f3093eb5697f"));
    }

    /// Issue 68 item 13: a name from a results file reaches the terminal with its control
    /// characters escaped — no OSC title or clipboard, no clear-screen, no forged row.
    #[test]
    fn names_are_printed_without_control_characters() {
        let key = super::SeriesKey {
            plan: "p\u{1b}]0;owned\u{7}".into(),
            contender: "a\n| `ffffffff` | forged |".into(),
            point: "get\u{1b}[2J".into(),
            figure: "p99".into(),
            env: "e".into(),
            against: Some("ref\u{1b}]52;c;eA==\u{7}".into()),
        };
        let words = key.words();
        assert!(!words.chars().any(char::is_control), "{words:?}");
        assert!(
            words.contains("\\u{1b}]0;owned") && words.contains("a\\n| "),
            "{words}"
        );
    }

    #[test]
    fn times_read_as_dates() {
        assert_eq!(super::iso(0), "1970-01-01 00:00:00 +0000");
        assert_eq!(super::iso(1_796_425_992), "2026-12-04 23:13:12 +0000");
        assert_eq!(super::iso(951_782_400), "2000-02-29 00:00:00 +0000");
    }

    /// A ratio series' point carries the spread of its run's repetitions, read from the two
    /// figures recorded repetition by repetition; the absolute series none.
    #[test]
    fn a_ratio_point_keeps_the_spread_of_its_repetitions() {
        let d = std::env::temp_dir().join(format!("bakeoff-spread-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        let store = super::Store::open(&d.join("h.sqlite")).unwrap();
        store
            .conn
            .execute_batch(
                "INSERT INTO runs (id, plan_name, plan_hash, started_at, recorded_at, results_dir,
                     bakeoff, env_key, env, fingerprint)
                 VALUES (1, 'p', 'h', '2026-12-07T00:00:00Z', 'x', 'r', 'b', 'e', 'e', 'f');
                 INSERT INTO contenders (run_id, name, commit_id) VALUES (1, 'srv', 'aaaa'),
                     (1, 'reference', 'bbbb');
                 INSERT INTO figures VALUES (1, 'srv', 'get', 'cpu_per_request', 22, NULL, NULL,
                     '[20.0, 22.0, 24.2]');
                 INSERT INTO figures VALUES (1, 'reference', 'get', 'cpu_per_request', 20, NULL,
                     NULL, '[20.0, 20.0, 22.0]');
                 INSERT INTO verdicts VALUES (1, 'srv', 'reference', 'get', 'cpu_per_request',
                     'higher', 1.07, 1.0, 1.14, 0.01, 0.02);",
            )
            .unwrap();
        let all = store.series().unwrap();
        let ratio = all
            .iter()
            .find(|s| s.key.against.is_some())
            .expect("a ratio series");
        let spread = ratio.points[0].spread.expect("its spread");
        // Log ratios 0, l, l (l = ln 1.1): deviations −2l/3, l/3, l/3 from their mean, so
        // the standard deviation is √((6l²/9) / 2) = l / √3.
        let want = 1.1f64.ln() / 3f64.sqrt();
        assert_eq!(spread.n, 3);
        assert!((spread.sd - want).abs() < 1e-9, "{spread:?} against {want}");
        assert!(all
            .iter()
            .filter(|s| s.key.against.is_none())
            .all(|s| s.points.iter().all(|p| p.spread.is_none())));
        drop(store);
        let _ = std::fs::remove_dir_all(d);
    }
}
