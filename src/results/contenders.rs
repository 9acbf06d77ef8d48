//! What a run records of its contenders: members, what-if variants, and the source and build each was made from.

use super::*;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ContenderInfo {
    pub name: String,
    /// The contender this one is compared against.
    pub baseline: Option<String>,
    pub members: Vec<MemberInfo>,
    /// Set for a second instance of another contender's build, run only for compat noise.
    #[serde(default)]
    pub noise_of: Option<String>,
    /// A what-if variant (`v1+nodelay`): the contender it is a variant of, and what.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant: Option<VariantInfo>,
    /// Built from source: where from and how (docs/from-source.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<SourceInfo>,
}

impl ContenderInfo {
    /// Whether run `id` is a repetition of this contender (a variant: of its contender,
    /// with its what-if).
    pub fn ran(&self, id: &RunId) -> bool {
        match &self.variant {
            Some(v) => id.is(&v.of, Some(&v.what)),
            None => id.is(&self.name, None),
        }
    }

    /// Whether its build, or one of its members', failed (then it did not run).
    pub fn build_failed(&self) -> bool {
        let bad = |s: &Option<SourceInfo>| s.as_ref().is_some_and(|s| s.error.is_some());
        bad(&self.source) || self.members.iter().any(|m| bad(&m.source))
    }
}

/// A contender's provenance: the source it was built from and its build.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct SourceInfo {
    /// The repository (or folder) as the plan names it.
    pub repository: String,
    /// The ref as asked for (`--ref` included); none for the working tree or a folder.
    #[serde(rename = "ref", default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
    /// The commit the ref resolved to (none for a folder).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// Built with uncommitted or untracked changes (a working tree), or from a folder.
    pub dirty: bool,
    /// The build cache's key: what determines the build.
    pub key: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build: Option<BuildInfo>,
    /// Why it could not be built (the log's last lines included).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// What a build cost, or that the cache had it.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct BuildInfo {
    /// Found in the cache: the figures are of the build that made it.
    pub cached: bool,
    pub seconds: f64,
    /// User + system CPU time of the build processes.
    pub cpu_s: f64,
    /// The largest build process's peak resident set.
    pub peak_rss_bytes: u64,
    /// The build's output, relative to the results folder (`logs/NAME-build.log`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct VariantInfo {
    pub of: String,
    /// Written as `nodelay`, or `PORT+HOLD` for a delay (`rpc+1ms`).
    pub what: crate::plan::WhatIf,
    /// A delay on one edge between members: which port, how long each chunk is held, and
    /// the members that connect to it (typed, so nothing reads the name back).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay: Option<DelayInfo>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DelayInfo {
    pub port: String,
    pub hold_us: u64,
    pub connect: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct MemberInfo {
    pub name: String,
    /// As written in the plan, placeholders not filled in.
    pub command: Vec<String>,
    pub endpoint: String,
    /// A member built from a source of its own (docs/from-source.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<SourceInfo>,
}
