//! Where a contender's time goes (docs/profiles.md): `perf record` on every process of the
//! contender while a point's load runs — the software `cpu-clock` event (hardware counters
//! are missing on many VMs, this one included) with DWARF call graphs (Rust release builds
//! have no frame pointers), and the scheduler's `sched_switch` tracepoint for the time spent
//! off the CPU — then `perf script`, folded into stacks (`a;b;c N`) for flame graphs.
//!
//! On-CPU stacks are weighted by samples; off-CPU stacks by microseconds: from a thread's
//! switch-out to its next event (a sample or its next switch-out), which overstates a wait
//! by at most one sampling period.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Samples per second of the on-CPU profile: prime, so it does not beat with timers.
pub const FREQUENCY_HZ: u32 = 499;
/// Bytes of stack copied per sample for DWARF unwinding.
const STACK_BYTES: u32 = 16384;

/// `perf`, or why it cannot be used.
pub fn perf() -> Result<PathBuf, String> {
    let found = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .map(|d| d.join("perf"))
        .find(|p| p.is_file());
    found.ok_or_else(|| {
        "perf is not installed, so `profile = true` records nothing (Debian: apt-get install linux-perf)".to_string()
    })
}

/// A `perf record` running on a contender's processes. Dropped, it is killed.
pub struct Recording {
    child: Option<Child>,
    data: PathBuf,
    started: Instant,
    log: PathBuf,
}

impl Recording {
    /// Starts recording `pids` into `data` (its log next to it). Waits until perf has
    /// attached (it writes the file's header), at most 5 s.
    pub fn start(pids: &[i32], data: &Path) -> Result<Recording, String> {
        let perf = perf()?;
        if pids.is_empty() {
            return Err("the contender has no running process to profile".into());
        }
        if let Some(d) = data.parent() {
            std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
        }
        let _ = std::fs::remove_file(data);
        let log = data.with_extension("log");
        let err = std::fs::File::create(&log).map_err(|e| format!("{}: {e}", log.display()))?;
        let list = pids
            .iter()
            .map(i32::to_string)
            .collect::<Vec<_>>()
            .join(",");
        let mut cmd = Command::new(perf);
        cmd.args(["record", "-q", "-e", "cpu-clock", "-F"])
            .arg(FREQUENCY_HZ.to_string())
            .args(["-e", "sched:sched_switch", "--call-graph"])
            .arg(format!("dwarf,{STACK_BYTES}"))
            .arg("-p")
            .arg(&list)
            .arg("-o")
            .arg(data)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(err);
        {
            use std::os::unix::process::CommandExt;
            // SAFETY: prctl is async-signal-safe; perf ends with bakeoff, whatever kills it.
            unsafe {
                cmd.pre_exec(|| {
                    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
                    Ok(())
                });
            }
        }
        let mut child =
            crate::sys::children::spawn(&mut cmd).map_err(|e| format!("cannot run perf: {e}"))?;
        let started = Instant::now();
        // perf writes the header once the events are open.
        while started.elapsed() < Duration::from_secs(5) {
            if let Ok(Some(status)) = child.try_wait() {
                crate::sys::children::reaped(child.id() as i32);
                let text = std::fs::read_to_string(&log).unwrap_or_default();
                return Err(format!(
                    "perf record ended at once ({status}): {}",
                    text.trim()
                ));
            }
            if std::fs::metadata(data).is_ok_and(|m| m.len() > 0) {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Ok(Recording {
            child: Some(child),
            data: data.to_path_buf(),
            started,
            log,
        })
    }

    /// Stops perf (SIGINT, as Ctrl-C: it writes what it has), folds the stacks into
    /// `folded` (on-CPU) and `off_cpu` files beside the data, and removes the data.
    pub fn stop(mut self) -> Result<Profile, String> {
        let mut child = self.child.take().expect("running");
        let seconds = self.started.elapsed().as_secs_f64();
        // SAFETY: signalling our own child.
        unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            match child.try_wait() {
                Ok(Some(_)) => break,
                _ if Instant::now() > deadline => {
                    let _ = child.kill();
                    let _ = child.wait();
                    crate::sys::children::reaped(child.id() as i32);
                    return Err("perf record did not stop within 20 s of SIGINT".into());
                }
                _ => std::thread::sleep(Duration::from_millis(20)),
            }
        }
        crate::sys::children::reaped(child.id() as i32);
        let script = script(&self.data, SCRIPT_TIMEOUT);
        let _ = std::fs::remove_file(&self.data);
        let _ = std::fs::remove_file(self.data.with_extension("data.old"));
        let mut p = match script {
            Ok(p) => p,
            Err(e) => {
                let log = std::fs::read_to_string(&self.log).unwrap_or_default();
                return Err(format!("{e} {}", log.trim()).trim_end().to_string());
            }
        };
        let _ = std::fs::remove_file(&self.log);
        p.seconds = seconds;
        Ok(p)
    }
}

impl Drop for Recording {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
            crate::sys::children::reaped(c.id() as i32);
            let _ = std::fs::remove_file(&self.data);
        }
    }
}

/// How long `perf script` may take over a recording (a minute of DWARF call graphs takes a
/// few seconds here): past it, it is killed and the profile is an error.
const SCRIPT_TIMEOUT: Duration = Duration::from_secs(120);
/// The longest line of `perf script` output read; longer ones (no real frame is) are cut.
const LINE_LIMIT: u64 = 64 * 1024;
/// The most distinct stacks a profile keeps per kind; the rest are counted under
/// [`OTHER_STACKS`], so a pathological recording cannot grow the folded map without end.
const STACK_LIMIT: usize = 100_000;
/// Where the stacks past [`STACK_LIMIT`] are counted.
pub const OTHER_STACKS: &str = "[other stacks]";

/// `perf script` over `data`, folded as it streams (its output is never held whole), killed
/// when it overstays `limit`.
fn script(data: &Path, limit: Duration) -> Result<Profile, String> {
    script_with(&perf()?, data, limit)
}

/// [`script`] with `perf` at `program`.
fn script_with(program: &Path, data: &Path, limit: Duration) -> Result<Profile, String> {
    use std::io::BufRead as _;
    use std::io::Read as _;
    let mut cmd = Command::new(program);
    cmd.args(["script", "-F", "comm,tid,time,event,ip,sym,dso", "-i"])
        .arg(data)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut child = crate::sys::children::spawn(&mut cmd)
        .map_err(|e| format!("cannot run perf script: {e}"))?;
    let out = child.stdout.take().expect("piped");
    let reader = std::thread::spawn(move || {
        let mut r = std::io::BufReader::new(out);
        let lines = std::iter::from_fn(move || {
            let mut line = Vec::new();
            let n = (&mut r)
                .take(LINE_LIMIT)
                .read_until(b'\n', &mut line)
                .ok()?;
            if n == 0 {
                return None;
            }
            if line.last() != Some(&b'\n') {
                // Cut at the limit: skip to the end of the line.
                let _ = r.skip_until(b'\n');
            }
            Some(String::from_utf8_lossy(&line).trim_end().to_string())
        });
        fold_lines(lines)
    });
    let deadline = Instant::now() + limit;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                let _ = reader.join();
                crate::sys::children::reaped(child.id() as i32);
                return Err(format!(
                    "perf script did not finish within {} s, so this point has no profile",
                    limit.as_secs()
                ));
            }
        }
    };
    crate::sys::children::reaped(child.id() as i32);
    let p = reader
        .join()
        .map_err(|_| "the thread reading perf script failed".to_string())?;
    if !status.success() {
        return Err("perf script failed:".into());
    }
    Ok(p)
}

/// Folded stacks of one recording.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Profile {
    /// `root;…;leaf` → samples on the CPU.
    pub on_cpu: BTreeMap<String, u64>,
    /// `root;…;leaf` (where the thread was switched out) → microseconds off the CPU.
    pub off_cpu: BTreeMap<String, u64>,
    pub samples: u64,
    /// Shared objects (binaries, libraries) whose frames had no symbol, by frames.
    pub unresolved: BTreeMap<String, u64>,
    pub frames: u64,
    pub seconds: f64,
}

impl Profile {
    /// `stack count` lines, the folded format flame graph tools read.
    pub fn folded(stacks: &BTreeMap<String, u64>) -> String {
        let mut s = String::new();
        for (stack, n) in stacks.iter().filter(|(_, n)| **n > 0) {
            s.push_str(stack);
            s.push(' ');
            s.push_str(&n.to_string());
            s.push('\n');
        }
        s
    }

    /// The functions with the most self time (the leaf of each on-CPU stack), most first.
    pub fn top_self(&self, n: usize) -> Vec<(String, u64)> {
        let mut by: BTreeMap<&str, u64> = BTreeMap::new();
        for (stack, count) in &self.on_cpu {
            let leaf = stack.rsplit(';').next().unwrap_or(stack);
            *by.entry(leaf).or_default() += count;
        }
        let mut v: Vec<(String, u64)> = by.into_iter().map(|(f, c)| (f.to_string(), c)).collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        v.truncate(n);
        v
    }

    /// Binaries most of whose frames had no symbol (stripped, or no symbol table).
    pub fn stripped(&self) -> Vec<String> {
        self.unresolved
            .iter()
            .filter(|(_, n)| **n * 2 > self.frames.max(1) / 10)
            .map(|(d, _)| d.clone())
            .collect()
    }
}

/// `perf script -F comm,tid,time,event,ip,sym,dso` output → folded stacks.
pub fn fold(script: &str) -> Profile {
    fold_lines(script.lines().map(str::to_string))
}

/// [`fold`] over lines as they come (no line ending).
fn fold_lines(lines: impl Iterator<Item = String>) -> Profile {
    let mut p = Profile::default();
    // Per thread: the stack and time of its last switch-out, until its next event.
    let mut switched: BTreeMap<u32, (String, f64)> = BTreeMap::new();
    let mut lines = lines.peekable();
    let add = |map: &mut BTreeMap<String, u64>, stack: String, n: u64| {
        if map.len() >= STACK_LIMIT && !map.contains_key(&stack) {
            *map.entry(OTHER_STACKS.to_string()).or_default() += n;
        } else {
            *map.entry(stack).or_default() += n;
        }
    };
    while let Some(line) = lines.next() {
        let line = line.as_str();
        let Some((comm, tid, time, event)) = header(line) else {
            continue; // a frame of a sample we could not read, or a blank line
        };
        let mut frames = Vec::new();
        while let Some(f) = lines.peek() {
            if f.trim().is_empty() || header(f).is_some() {
                break;
            }
            frames.push(frame(f, &mut p));
            lines.next();
        }
        if let Some((stack, at)) = switched.remove(&tid) {
            let us = ((time - at) * 1e6).max(0.0) as u64;
            add(&mut p.off_cpu, stack, us);
        }
        frames.reverse(); // root first
        let mut stack = comm.replace([';', ' '], "_");
        for f in &frames {
            stack.push(';');
            stack.push_str(f);
        }
        if event == "sched:sched_switch" {
            switched.insert(tid, (stack, time));
        } else {
            add(&mut p.on_cpu, stack, 1);
            p.samples += 1;
        }
    }
    p
}

/// `bakeoff 14661 33402.645116: cpu-clock: ` (the command may hold spaces, the event a
/// colon: `sched:sched_switch`) → (command, thread, seconds, event).
fn header(line: &str) -> Option<(String, u32, f64, String)> {
    static RE: std::sync::OnceLock<regex_lite::Regex> = std::sync::OnceLock::new();
    let re = RE.get_or_init(|| {
        regex_lite::Regex::new(r"^\s*(.*?)\s+(\d+)\s+(\d+\.\d+):\s+(\S+?):(?:\s|$)")
            .expect("a valid pattern")
    });
    let c = re.captures(line)?;
    Some((
        c[1].to_string(),
        c[2].parse().ok()?,
        c[3].parse().ok()?,
        c[4].to_string(),
    ))
}

/// `\t ffffffff8207fe94 tcp_rcv_established+0x3c4 ([kernel.kallsyms])` → the function.
fn frame(line: &str, p: &mut Profile) -> String {
    let t = line.trim();
    let (addr_sym, dso) = match t.rsplit_once(" (") {
        Some((a, d)) => (a, d.trim_end_matches(')')),
        None => (t, ""),
    };
    let sym = addr_sym.split_once(' ').map_or("", |(_, s)| s).trim();
    p.frames += 1;
    // `+0x3c4` and `(inlined)` are not part of the function's name.
    let sym = sym.strip_suffix("(inlined)").unwrap_or(sym).trim();
    let sym = match sym.rfind("+0x") {
        Some(i) => &sym[..i],
        None => sym,
    };
    if (sym.is_empty() || sym == "[unknown]") && dso != "inlined" {
        let name = Path::new(dso)
            .file_name()
            .map_or(dso.to_string(), |f| f.to_string_lossy().into_owned());
        *p.unresolved.entry(dso.to_string()).or_default() += 1;
        return format!("[{}]", if name.is_empty() { "unknown" } else { &name });
    }
    sym.replace([';', ' '], "_")
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCRIPT: &str = "bakeoff 14661 33402.645116: cpu-clock: \n\
\tffffffff8207fe94 tcp_rcv_established+0x3c4 ([kernel.kallsyms])\n\
\t          911b45 <std::net::TcpStream as std::io::Write>::write+0x15 (inlined)\n\
\t          911b45 bakeoff::demo::server::serve+0x15 (/usr/bin/bakeoff)\n\
\n\
bakeoff 14661 33402.647116: cpu-clock: \n\
\t          911b46 bakeoff::demo::server::serve+0x16 (/usr/bin/bakeoff)\n\
\n\
worker one 14662 33402.650000: sched:sched_switch: prev_comm=x prev_pid=14662\n\
\t          12345 [unknown] (/opt/stripped)\n\
\t          911b45 bakeoff::demo::server::serve+0x15 (/usr/bin/bakeoff)\n\
\n\
worker one 14662 33402.690000: cpu-clock: \n\
\t          911b45 bakeoff::demo::server::serve+0x15 (/usr/bin/bakeoff)\n\
\n";

    #[test]
    fn perf_script_folds_into_on_and_off_cpu_stacks() {
        let p = fold(SCRIPT);
        assert_eq!(p.samples, 3);
        assert_eq!(
            p.on_cpu.get("bakeoff;bakeoff::demo::server::serve;<std::net::TcpStream_as_std::io::Write>::write;tcp_rcv_established"),
            Some(&1)
        );
        assert_eq!(
            p.on_cpu.get("bakeoff;bakeoff::demo::server::serve"),
            Some(&1)
        );
        // Switched out at .650, next seen at .690: 40 ms off the CPU, at that stack.
        assert_eq!(
            p.off_cpu
                .get("worker_one;bakeoff::demo::server::serve;[stripped]"),
            Some(&40_000)
        );
        // Self time: the leaf, over every thread.
        assert_eq!(
            p.top_self(1),
            [("bakeoff::demo::server::serve".to_string(), 2)]
        );
        assert_eq!(p.unresolved.get("/opt/stripped"), Some(&1));
        assert_eq!(
            Profile::folded(&p.off_cpu),
            "worker_one;bakeoff::demo::server::serve;[stripped] 40000\n"
        );
    }

    /// A stand-in for `perf` that prints `SCRIPT`, then whatever `tail` says, then exits.
    fn fake_perf(dir: &Path, tail: &str) -> PathBuf {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join("script.txt"), SCRIPT).unwrap();
        let p = dir.join("perf");
        std::fs::write(
            &p,
            format!(
                "#!/bin/sh\ncat '{}'\n{tail}\n",
                dir.join("script.txt").display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        p
    }

    #[test]
    fn perf_script_streams_and_is_killed_past_its_deadline() {
        let dir = std::env::temp_dir().join(format!("bakeoff-perf-{}", std::process::id()));
        // A line far past the limit (8 MiB of one frame) does not disturb the stacks around
        // it (that it is cut at 64 KiB rather than held is `LINE_LIMIT`'s reading, not
        // asserted here).
        let perf = fake_perf(&dir, "head -c 8388608 /dev/zero | tr '\\0' x; echo");
        let p = script_with(&perf, Path::new("/nonexistent"), Duration::from_secs(60)).unwrap();
        assert_eq!(p, fold(SCRIPT));
        // One that never ends is killed at its deadline, and says so.
        let perf = fake_perf(&dir, "exec sleep 600");
        let started = Instant::now();
        let e =
            script_with(&perf, Path::new("/nonexistent"), Duration::from_millis(300)).unwrap_err();
        assert!(e.contains("did not finish within"), "{e}");
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{:?}",
            started.elapsed()
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn distinct_stacks_past_the_limit_are_counted_together() {
        let lines = (0..STACK_LIMIT + 10).flat_map(|i| {
            [
                format!("srv 1 {}.000001: cpu-clock: ", 100 + i),
                format!("\t 1 f{i}+0x1 (/usr/bin/srv)"),
                String::new(),
            ]
        });
        let p = fold_lines(lines);
        assert_eq!(p.on_cpu.len(), STACK_LIMIT + 1);
        assert_eq!(p.on_cpu.get(OTHER_STACKS), Some(&10));
        assert_eq!(p.samples, (STACK_LIMIT + 10) as u64);
    }

    #[test]
    fn headers_keep_commands_with_spaces() {
        assert_eq!(
            header("tokio-runtime-w 101 5.5: cpu-clock: "),
            Some(("tokio-runtime-w".into(), 101, 5.5, "cpu-clock".into()))
        );
        let h = header("a b 7 1.25: sched:sched_switch: prev_comm=a").unwrap();
        assert_eq!(h, ("a b".into(), 7, 1.25, "sched:sched_switch".into()));
        assert_eq!(header("\t          911b45 serve (/usr/bin/bakeoff)"), None);
    }
}
