//! What the reader of a run should know that is not a measurement: a CPU set the machine
//! does not have, a compat reference that answered nothing, a stop that left something.
//! Typed where bakeoff raises them; written into results.json as their text (as always), and
//! read back as that text.

use std::fmt;

use super::RunId;

#[derive(Debug, Clone)]
pub enum Warning {
    /// The plan pins `what` (contenders, the load engine) to CPUs the machine does not let
    /// bakeoff use: they run unpinned.
    Unpinned {
        what: &'static str,
        asked: Vec<usize>,
        allowed: Vec<usize>,
        missing: Vec<usize>,
    },
    /// A compat set's `setup` failed for a run: its cases were not asked.
    CompatSetup { run: RunId, error: String },
    /// Stopping a run left something behind or could not clean up.
    Stop { run: RunId, problem: String },
    /// A compat reference answered none of the set's cases.
    ReferenceSilent {
        set: String,
        who: String,
        cases: usize,
        first: String,
    },
    /// A compat reference that is a member of a contender could not be asked.
    ReferenceUnreachable {
        set: String,
        member: String,
        who: String,
        error: String,
    },
    /// A warning read from a results file: its text.
    Written(String),
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Warning::Unpinned { what, asked, allowed, missing } => write!(
                f,
                "the plan pins {what} to CPUs {asked:?}, but this machine lets bakeoff use only {allowed:?} (CPUs {missing:?} are missing): {what} run unpinned"
            ),
            Warning::CompatSetup { run, error } => write!(f, "{run}: {error}"),
            Warning::Stop { run, problem } => write!(f, "{run}: {problem}"),
            Warning::ReferenceSilent { set, who, cases, first } => write!(
                f,
                "compat `{set}`: the reference {who} answered none of {cases} cases (first: {first})"
            ),
            Warning::ReferenceUnreachable { set, member, who, error } => write!(
                f,
                "compat `{set}`: cannot ask the reference, member `{member}` of `{who}`: {error}"
            ),
            Warning::Written(text) => f.write_str(text),
        }
    }
}

/// Two warnings are the same when they read the same (one raised now, one read back from
/// the results of an earlier start of the run).
impl PartialEq for Warning {
    fn eq(&self, other: &Warning) -> bool {
        self.to_string() == other.to_string()
    }
}

impl serde::Serialize for Warning {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Warning {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Warning, D::Error> {
        String::deserialize(d).map(Warning::Written)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_warning_is_written_as_its_text_and_read_back_equal() {
        let w = Warning::Unpinned {
            what: "contenders",
            asked: vec![2, 3],
            allowed: vec![0, 1],
            missing: vec![2, 3],
        };
        let json = serde_json::to_string(&w).unwrap();
        assert!(
            json.starts_with("\"the plan pins contenders to CPUs [2, 3]"),
            "{json}"
        );
        let back: Warning = serde_json::from_str(&json).unwrap();
        assert!(matches!(back, Warning::Written(_)));
        assert_eq!(back, w);
        assert_ne!(back, Warning::Written("other".into()));
    }
}
