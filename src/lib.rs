//! bakeoff: reproducible side-by-side bake-offs between builds or implementations of a server.
//!
//! The pipeline is plain data through plain functions (see `../shared/DESIGN.md`): the
//! [`protocol`] clients speak to a server, the [`load`] engine drives them and measures, the
//! [`report`] module turns results into text. [`cli`] parses flags into checked commands once.

pub mod analysis;
pub mod bisect;
pub mod build;
pub mod cancel;
pub mod cli;
pub mod client;
pub mod compare;
pub mod compat;
pub mod contender;
pub mod demo;
pub mod diagnose;
pub mod drive;
pub mod history;
pub mod import;
pub mod launchers;
pub mod load;
pub mod plan;
pub mod protocol;
pub mod report;
pub mod results;
pub mod rng;
pub mod runner;
pub mod stats;
pub mod sys;
pub mod units;
