//! Each CPU's time-accounting counters from `/proc/stat`: what the hypervisor took (steal)
//! and what ran (busy) on named CPUs between two readings.

use std::time::Duration;

/// Time-accounting counters of each CPU from `/proc/stat` (clock ticks): all of them summed,
/// and `steal`, the time the hypervisor gave the CPU to someone else.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CpuTicks {
    pub total: u64,
    pub steal: u64,
    /// Time running tasks: user, nice and system (interrupts left out: the loopback's
    /// softirqs serve the load, whoever they are charged to).
    pub busy: u64,
}

/// Per-CPU counters, indexed by CPU number; empty where /proc/stat cannot be read.
pub fn cpu_ticks() -> Vec<Option<CpuTicks>> {
    parse_proc_stat(&std::fs::read_to_string("/proc/stat").unwrap_or_default())
}

fn parse_proc_stat(text: &str) -> Vec<Option<CpuTicks>> {
    let mut out: Vec<Option<CpuTicks>> = Vec::new();
    for line in text.lines() {
        let mut fields = line.split_whitespace();
        let Some(cpu) = fields
            .next()
            .and_then(|f| f.strip_prefix("cpu"))
            .and_then(|n| n.parse::<usize>().ok())
        else {
            continue;
        };
        // user nice system idle iowait irq softirq steal [guest guest_nice]: guest time is
        // already counted in user and nice.
        let v: Vec<u64> = fields.take(8).filter_map(|f| f.parse().ok()).collect();
        if v.len() < 8 {
            continue;
        }
        if out.len() <= cpu {
            out.resize(cpu + 1, None);
        }
        out[cpu] = Some(CpuTicks {
            total: v.iter().sum(),
            steal: v[7],
            busy: v[0] + v[1] + v[2],
        });
    }
    out
}

/// Clock ticks per second: the unit of the times in /proc/stat and /proc/PID/stat.
pub fn clock_ticks_per_s() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let v = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if v > 0 {
        v as f64
    } else {
        100.0
    }
}

/// Time the hypervisor took from `cpu` (steal) between two readings.
pub fn stolen_from(
    before: &[Option<CpuTicks>],
    after: &[Option<CpuTicks>],
    cpu: usize,
) -> Option<Duration> {
    let (a, b) = ((*before.get(cpu)?)?, (*after.get(cpu)?)?);
    Some(Duration::from_secs_f64(
        b.steal.saturating_sub(a.steal) as f64 / clock_ticks_per_s(),
    ))
}

/// Share of the time of `cpus` (all CPUs when empty) between two readings that the
/// hypervisor took (steal), 0..1; `None` when nothing elapsed or a CPU is missing.
pub fn steal_share(
    before: &[Option<CpuTicks>],
    after: &[Option<CpuTicks>],
    cpus: &[usize],
) -> Option<f64> {
    stolen_ticks(before, after, cpus).map(|(share, _)| share)
}

/// [`steal_share`] with the ticks stolen, which say how much that share can be trusted:
/// /proc/stat samples in ticks of 1/100 s, so over a short window one tick is a large share.
pub fn stolen_ticks(
    before: &[Option<CpuTicks>],
    after: &[Option<CpuTicks>],
    cpus: &[usize],
) -> Option<(f64, u64)> {
    let all: Vec<usize> = (0..after.len()).collect();
    let cpus = if cpus.is_empty() { &all } else { cpus };
    let (mut total, mut steal) = (0u64, 0u64);
    for &c in cpus {
        let (a, b) = ((*before.get(c)?)?, (*after.get(c)?)?);
        total += b.total.saturating_sub(a.total);
        steal += b.steal.saturating_sub(a.steal);
    }
    (total > 0).then(|| (steal as f64 / total as f64, steal))
}

/// Seconds the CPUs `cpus` spent running tasks between two readings; `None` where one of
/// them was not read.
pub fn busy_seconds(
    before: &[Option<CpuTicks>],
    after: &[Option<CpuTicks>],
    cpus: &[usize],
) -> Option<f64> {
    let mut busy = 0u64;
    for &c in cpus {
        let (a, b) = ((*before.get(c)?)?, (*after.get(c)?)?);
        busy += b.busy.saturating_sub(a.busy);
    }
    Some(busy as f64 / clock_ticks_per_s())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steal_is_a_share_of_the_named_cpus_time() {
        let before = parse_proc_stat(
            "cpu  30 0 10 100 0 0 0 6 0 0\ncpu0 10 0 5 50 0 0 0 1 0 0\ncpu1 20 0 5 50 0 0 0 5 0 0\nintr 1 2 3\n",
        );
        let after = parse_proc_stat(
            "cpu  60 0 20 200 0 0 0 26 0 0\ncpu0 20 0 10 100 0 0 0 6 0 0\ncpu1 40 0 10 100 0 0 0 20 0 0\n",
        );
        assert_eq!(before.len(), 2);
        // cpu1: 90 ticks passed (80 -> 170), 15 of them stolen.
        let one = steal_share(&before, &after, &[1]).unwrap();
        assert!((one - 15.0 / 90.0).abs() < 1e-9, "{one}");
        // Both: cpu0 adds 70 ticks, 5 stolen: 20 of 160.
        let both = steal_share(&before, &after, &[]).unwrap();
        assert!((both - 0.125).abs() < 1e-9, "{both}");
        assert_eq!(steal_share(&before, &after, &[7]), None);
        assert_eq!(steal_share(&before, &before, &[0]), None);
        assert_eq!(stolen_ticks(&before, &after, &[1]).map(|x| x.1), Some(15));
        let tick = Duration::from_secs_f64(1.0 / clock_ticks_per_s());
        assert_eq!(stolen_from(&before, &after, 1), Some(tick * 15));
        assert_eq!(stolen_from(&before, &after, 7), None);
        // Running tasks on cpu1: user 20 -> 40 and system 5 -> 10, 25 ticks.
        let busy = busy_seconds(&before, &after, &[1]).unwrap();
        assert!((busy - 25.0 / clock_ticks_per_s()).abs() < 1e-9, "{busy}");
        assert_eq!(busy_seconds(&before, &after, &[7]), None);
        // This machine's own /proc/stat parses into one entry per online CPU at most.
        let here = cpu_ticks();
        assert!(!here.is_empty() && here.iter().flatten().all(|t| t.steal <= t.total));
    }
}
