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
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu_model = cpuinfo
            .lines()
            .find_map(|l| {
                let (k, v) = l.split_once(':')?;
                (k.trim() == "model name").then(|| v.trim().to_string())
            })
            .unwrap_or_else(|| "unknown".into());
        let read = |p: &str| {
            std::fs::read_to_string(p)
                .map(|s| s.trim().to_string())
                .unwrap_or_default()
        };
        let kernel = format!(
            "{} {}",
            read("/proc/sys/kernel/ostype"),
            read("/proc/sys/kernel/osrelease")
        );
        Environment {
            cpu_model,
            kernel: kernel.trim().to_string(),
            hostname: read("/proc/sys/kernel/hostname"),
            machine: std::env::var("BAKEOFF_MACHINE")
                .ok()
                .filter(|m| !m.trim().is_empty()),
            // SAFETY: sysconf has no preconditions.
            cpus_online: unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }.max(1) as usize,
            cpus_allowed: crate::sys::allowed_cpus(),
            contender_cpus: None,
            load_cpus: None,
        }
    }
}
