//! What a run records of its compat sets: each set, its reference, its cases, and every answer.

use super::*;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CompatSetInfo {
    pub name: String,
    pub call: String,
    pub mode: crate::plan::CompatMode,
    pub ignore: Vec<String>,
    pub unordered: Vec<String>,
    pub byte_order: Vec<String>,
    pub cases: Vec<CaseInfo>,
    /// The outside server some fields are checked against, if any.
    pub reference: Option<ReferenceInfo>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ReferenceInfo {
    /// Where it was asked (a member reference: as written, empty for the member's endpoint).
    pub endpoint: String,
    /// A member reference: `member` of `contender`, asked where compat ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub member: Option<MemberRef>,
    pub call: String,
    pub fields: Vec<crate::plan::FieldMap>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct MemberRef {
    pub contender: String,
    pub member: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CaseInfo {
    pub request: String,
    /// `cases.jsonl:12`, `requests[3]`, `generate #7`.
    pub origin: String,
}

/// One contender's answer to one compat case.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CompatAnswer {
    pub set: String,
    /// Index into the set's cases.
    pub case: usize,
    /// e.g. `gRPC OK`, `HTTP 404`, `timeout`.
    pub outcome: String,
    pub success: bool,
    /// The status message or error text, if any.
    pub detail: Option<String>,
    /// Each message (one for unary calls) in canonical JSON: gRPC decoded with proto field
    /// names and defaults included; HTTP and JSON-RPC bodies parsed when they are JSON.
    pub messages: Vec<serde_json::Value>,
    /// Each message's bytes, base64.
    pub raw: Vec<String>,
    /// gRPC trailers other than the status (which is `outcome` and `detail`).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub trailers: std::collections::BTreeMap<String, String>,
}

impl From<&crate::plan::CompatSet> for CompatSetInfo {
    fn from(s: &crate::plan::CompatSet) -> CompatSetInfo {
        CompatSetInfo {
            name: s.name.clone(),
            call: s.call.describe(),
            mode: s.mode,
            ignore: s.ignore.clone(),
            unordered: s.unordered.clone(),
            byte_order: s.byte_order.clone(),
            cases: s
                .cases
                .iter()
                .map(|c| CaseInfo {
                    request: c.request.clone(),
                    origin: c.origin.clone(),
                })
                .collect(),
            reference: s.reference.as_ref().map(|r| ReferenceInfo {
                endpoint: r.endpoint.clone(),
                member: r.member.as_ref().map(|(c, m)| MemberRef {
                    contender: c.clone(),
                    member: m.clone(),
                }),
                call: r.call.describe(),
                fields: r.fields.clone(),
            }),
        }
    }
}
