//! The flags of `bakeoff history` (docs/history.md): list, show, export, detect, confirm,
//! report, backfill and import.

use std::path::PathBuf;

use clap::Subcommand;

use super::run_flags;

#[derive(Debug, Subcommand)]
pub enum HistoryAction {
    /// Every series (plan · contender · point · figure, on one machine) with its latest
    /// value and how many commits it has.
    List,
    /// One series' points: commit, time, value with its interval, runs.
    Show {
        /// The series' id, as `list` shows it.
        id: String,
    },
    /// Every series as one table: a row per commit, a column per series.
    Export {
        /// CSV in the shape Apache Otava reads (time, commit, one column per series).
        #[arg(long = "csv", required = true)]
        csv: bool,
    },
    /// The steps in every series: E-divisive means with a t-test (Otava's variant), held
    /// together to a false discovery rate; each kept as a candidate (docs/history.md).
    Detect {
        /// Points per window of the search (2 to 10000).
        #[arg(long = "window", value_name = "N", default_value_t = 50, value_parser = run_flags::parse_window)]
        window: usize,
        /// A step is kept when its t-test's p is below this (above 0, below 1).
        #[arg(long = "max-p", value_name = "P", default_value_t = 0.001, value_parser = run_flags::parse_p)]
        max_p: f64,
        /// The false discovery rate the steps of all series are held to together (above 0%,
        /// below 100%).
        #[arg(long = "fdr", value_name = "PERCENT", default_value = "5%", value_parser = run_flags::parse_share)]
        fdr: f64,
        /// Then measure each candidate again side by side, as `history confirm`; exit 4 on a
        /// confirmed regression.
        #[arg(long = "confirm")]
        confirm: bool,
        #[command(flatten)]
        with: run_flags::ConfirmArgs,
    },
    /// Measure steps again side by side: the plan's contender at the last good commit
    /// against the first bad one, paired; each becomes confirmed, rejected or inconclusive.
    /// Exit 4 on a confirmed regression.
    Confirm {
        /// The steps, by the number `history detect` gives them [default: every candidate].
        #[arg(value_name = "STEP")]
        ids: Vec<i64>,
        #[command(flatten)]
        with: run_flags::ConfirmArgs,
    },
    /// One self-contained HTML page of every series over its commits, steps marked.
    Report {
        /// The folder the page (index.html) is written to.
        #[arg(long = "out", value_name = "DIR", required = true)]
        out: PathBuf,
    },
    /// Record a range of commits of a contender built from git, one run each (with the
    /// plan's reference beside each when it has one), so a new history starts with them.
    Backfill {
        /// The plan file (TOML).
        #[arg(value_name = "PLAN")]
        plan: PathBuf,
        /// The contender whose commits are run (built from a git `source` in a folder here).
        #[arg(long = "contender", value_name = "NAME")]
        contender: String,
        /// The oldest commit to record.
        #[arg(long = "from", value_name = "REF")]
        from: String,
        /// The newest commit to record, on the first-parent line from --from.
        #[arg(long = "to", value_name = "REF")]
        to: String,
        /// Every K-th commit of the range (the newest always) [default: every one].
        #[arg(long = "every", value_name = "K", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
        every: u32,
        /// Where each run's results go, a folder each [default: a new folder under
        /// bakeoff-results/].
        #[arg(long = "out", value_name = "DIR")]
        out: Option<PathBuf>,
    },
    /// Record finished results folders, as `run --record` would have.
    Import {
        /// Results folders.
        #[arg(required = true)]
        dirs: Vec<PathBuf>,
        /// The commit the results measured, for contenders that name none (not built from
        /// source, the plan outside a repository): a ref of the repository in this folder,
        /// e.g. HEAD for a benchmark of this checkout.
        #[arg(long = "commit", value_name = "REV")]
        commit: Option<String>,
    },
}
