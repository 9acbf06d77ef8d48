//! What the measurements prove, computed once from results before anything is rendered:
//! paired verdicts with the report's error control (`verdicts`), capacity ratios
//! (`capacity`), the gates and the findings drawn from verdicts (`gates`), and where
//! trimming hid one side's stall (`trim`). `report` renders these; `diagnose` (beside it)
//! reads the runs for machine findings of its own.

pub mod capacity;
pub mod figure;
pub mod gates;
pub mod settle;
pub mod trim;
pub mod verdicts;
