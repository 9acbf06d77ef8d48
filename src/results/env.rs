//! The machine a bake-off ran on, recorded with its results so a report can say where the
//! numbers come from and a comparison can notice when two runs came from different machines.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Environment {
    pub cpu_model: String,
    /// `uname -sr`, e.g. `Linux 6.1.0-26-amd64`.
    pub kernel: String,
    pub hostname: String,
    /// `BAKEOFF_MACHINE` when set: the machine under a container's own hostname (the
    /// Kubernetes Job that `bakeoff ci k8s` writes sets it to the node's name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<String>,
    /// CPUs online on the machine.
    pub cpus_online: usize,
    /// CPUs bakeoff was allowed to use.
    pub cpus_allowed: Vec<usize>,
    /// Where contenders and the load engine were pinned (none when not pinned).
    pub contender_cpus: Option<Vec<usize>>,
    pub load_cpus: Option<Vec<usize>>,
}

impl Environment {
    /// Which machine this is, as merged reports group blocks: `BAKEOFF_MACHINE`, else the
    /// host name.
    pub fn machine(&self) -> &str {
        self.machine.as_deref().unwrap_or(&self.hostname)
    }

    pub fn detect() -> Environment {
        let m = crate::sys::machine();
        Environment {
            cpu_model: m.cpu_model,
            kernel: m.kernel,
            hostname: m.hostname,
            machine: std::env::var("BAKEOFF_MACHINE")
                .ok()
                .filter(|m| !m.trim().is_empty()),
            cpus_online: m.cpus_online,
            cpus_allowed: crate::sys::allowed_cpus(),
            contender_cpus: None,
            load_cpus: None,
        }
    }
}
