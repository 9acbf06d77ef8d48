//! Typed identities. A run is (contender, variant, repetition, shard); a point
//! ([`PointId`], made by the plan's matrix expansion) is (scenario, variables, clients,
//! target, rate, stage). Labels are rendered from them for people and never parsed back;
//! reports, `compare` and merges match identities as values.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::plan::WhatIf;
pub use crate::plan::{PointId, Vars};

/// One start of one contender: which contender, which what-if variant of it (none for the
/// contender as written), which repetition (from 1) and which shard of a scaled-out run
/// (none for a run on one machine).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RunId {
    pub contender: String,
    #[serde(default)]
    pub variant: Option<WhatIf>,
    /// 1-based.
    pub repetition: u32,
    /// 1-based, as in `--shard 2/3`.
    #[serde(default)]
    pub shard: Option<u32>,
}

impl RunId {
    pub fn new(contender: &str, repetition: u32) -> RunId {
        RunId {
            contender: contender.to_string(),
            variant: None,
            repetition,
            shard: None,
        }
    }

    /// Whether this is a run of contender `of` with variant `variant` (none: as written).
    pub fn is(&self, of: &str, variant: Option<&WhatIf>) -> bool {
        self.contender == of && self.variant.as_ref() == variant
    }

    /// The name the contender (with its variant) is shown as: `etcd-3.5` or `v1+nodelay`.
    pub fn subject(&self) -> String {
        match &self.variant {
            Some(v) => format!("{}+{v}", self.contender),
            None => self.contender.clone(),
        }
    }
}

impl fmt::Display for RunId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} repetition {}", self.subject(), self.repetition)?;
        if let Some(s) = self.shard {
            write!(f, " (shard {s})")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_name_their_variant_and_shard() {
        let mut r = RunId::new("v1", 2);
        assert_eq!(r.to_string(), "v1 repetition 2");
        r.variant = Some(WhatIf::NoDelay);
        r.shard = Some(3);
        assert_eq!(r.subject(), "v1+nodelay");
        assert!(r.is("v1", Some(&WhatIf::NoDelay)) && !r.is("v1", None));
        assert!(RunId::new("v1", 1).is("v1", None));
        assert!(!RunId::new("v1", 1).is("v1", Some(&WhatIf::NoDelay)));
        assert_eq!(r.to_string(), "v1+nodelay repetition 2 (shard 3)");
    }
}
