//! The demo's contender: a tiny block service in two versions, run as a hidden subcommand of
//! bakeoff itself so the demo needs nothing installed.
//!
//! - v1 builds its index slowly, leaves Nagle's algorithm on and writes each answer in two
//!   packets (so every answer waits ~40 ms for the client's delayed ACK), and answers bad
//!   input with a generic 500.
//! - v2 builds its index fast, sets TCP_NODELAY and writes once, answers bad input with 400,
//!   and — its one incompatibility — writes block hashes in reversed byte order.
//!
//! `GET /health` is 503 until the index is built, then 200; `GET /block/N` (N < 10000) is a
//! JSON block; a height past the end is 404.
//!
//! `--work 5us` burns a fixed amount of CPU on every answer (a counted hash loop, never a
//! sleep; the count is calibrated against the thread's CPU clock when the server starts, so
//! the amount is the same in a debug and a release build), so a contender that costs a known
//! few percent more than another can be made on purpose: it is how the verdicts are
//! calibrated (`benches/calibrate.sh`).

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::rng::mix;

const BLOCKS: u64 = 10_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Version {
    V1,
    V2,
}

/// Runs the server until killed. `work`: extra CPU time spent on every answer.
pub fn serve(version: Version, port: u16, state: PathBuf, work: Duration) -> anyhow::Result<()> {
    let work = rounds_for(work);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let listener = TcpListener::bind(("127.0.0.1", port)).await?;
        let ready = Arc::new(AtomicBool::new(false));
        let index: Arc<std::sync::OnceLock<Vec<[u8; 32]>>> = Arc::default();
        {
            let (ready, index) = (ready.clone(), index.clone());
            // Build the index on a blocking thread; the server answers (503) meanwhile.
            tokio::task::spawn_blocking(move || {
                let rounds = match version {
                    Version::V1 => 12_000,
                    Version::V2 => 400,
                };
                let built: Vec<[u8; 32]> = (0..BLOCKS).map(|h| hash(h, rounds)).collect();
                // (v1 and v2 compute the same hashes; v1 just spends longer doing it.)
                let bytes: Vec<u8> = built.iter().flatten().copied().collect();
                let _ = std::fs::create_dir_all(&state);
                let _ = std::fs::write(state.join("index.bin"), bytes);
                let _ = index.set(built);
                ready.store(true, Ordering::SeqCst);
            });
        }
        loop {
            let (stream, _) = listener.accept().await?;
            let (ready, index) = (ready.clone(), index.clone());
            tokio::spawn(async move {
                let _ = connection(stream, version, work, ready, index).await;
            });
        }
    })
}

/// How many rounds of [`burn`] take `cpu` of this thread's CPU time, measured over about
/// 20 ms of burning (the best of three, so a preemption does not inflate it).
pub fn rounds_for(cpu: Duration) -> u32 {
    if cpu.is_zero() {
        return 0;
    }
    let clock = || crate::sys::thread_cpu_time().total();
    let mut per_round = f64::INFINITY;
    for _ in 0..3 {
        let mut n: u32 = 1 << 12;
        loop {
            let t0 = clock();
            burn(n);
            let spent = clock() - t0;
            if spent >= Duration::from_millis(20) || n >= 1 << 30 {
                per_round = per_round.min(spent.as_secs_f64() / f64::from(n));
                break;
            }
            n *= 2;
        }
    }
    (cpu.as_secs_f64() / per_round)
        .round()
        .clamp(1.0, f64::from(u32::MAX)) as u32
}

/// `rounds` rounds of the hash's mixing, kept from being optimised away: CPU time that grows
/// linearly with `rounds` and does nothing else.
pub fn burn(rounds: u32) -> u64 {
    let mut w = u64::from(rounds);
    for _ in 0..rounds {
        w = std::hint::black_box(mix(w ^ 0x9e37_79b9));
    }
    std::hint::black_box(w)
}

/// A block hash. `rounds` is the work spent per block (so building the index takes time);
/// the hash itself does not depend on it.
fn hash(height: u64, rounds: u32) -> [u8; 32] {
    burn(rounds);
    let mut out = [0u8; 32];
    for (i, chunk) in out.chunks_mut(8).enumerate() {
        chunk.copy_from_slice(&mix(mix(height).wrapping_add(i as u64)).to_be_bytes());
    }
    out
}

async fn connection(
    mut s: TcpStream,
    version: Version,
    work: u32,
    ready: Arc<AtomicBool>,
    index: Arc<std::sync::OnceLock<Vec<[u8; 32]>>>,
) -> std::io::Result<()> {
    s.set_nodelay(version == Version::V2)?;
    let mut buf = Vec::with_capacity(4096);
    loop {
        let mut chunk = [0u8; 4096];
        let n = s.read(&mut chunk).await?;
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&chunk[..n]);
        while let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).into_owned();
            buf.drain(..end + 4);
            let path = head.split_whitespace().nth(1).unwrap_or("/").to_string();
            let (status, body) = answer(&path, version, &ready, &index);
            burn(work);
            let head = format!(
                "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
                body.len()
            );
            if version == Version::V1 {
                // Two writes without TCP_NODELAY: the second waits for the client's ACK.
                s.write_all(head.as_bytes()).await?;
                s.write_all(body.as_bytes()).await?;
            } else {
                s.write_all(format!("{head}{body}").as_bytes()).await?;
            }
        }
    }
}

fn answer(
    path: &str,
    version: Version,
    ready: &AtomicBool,
    index: &std::sync::OnceLock<Vec<[u8; 32]>>,
) -> (&'static str, String) {
    if path == "/health" {
        return if ready.load(Ordering::SeqCst) {
            ("200 OK", "{\"status\":\"ready\"}".into())
        } else {
            (
                "503 Service Unavailable",
                "{\"status\":\"building index\"}".into(),
            )
        };
    }
    let Some(arg) = path.strip_prefix("/block/") else {
        return ("404 Not Found", "{\"error\":\"no such path\"}".into());
    };
    let Some(index) = index.get() else {
        return (
            "503 Service Unavailable",
            "{\"error\":\"index not built yet\"}".into(),
        );
    };
    let height: u64 = match arg.parse() {
        Ok(h) => h,
        Err(_) => {
            return match version {
                Version::V1 => (
                    "500 Internal Server Error",
                    "{\"error\":\"internal error\"}".into(),
                ),
                Version::V2 => (
                    "400 Bad Request",
                    format!("{{\"error\":\"height must be a number, not '{arg}'\"}}"),
                ),
            }
        }
    };
    let Some(h) = index.get(height as usize) else {
        return (
            "404 Not Found",
            format!("{{\"error\":\"no block {height}\"}}"),
        );
    };
    let mut bytes = *h;
    if version == Version::V2 {
        bytes.reverse();
    }
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    (
        "200 OK",
        format!(
            "{{\"height\":{height},\"hash\":\"{hex}\",\"txs\":{}}}",
            height % 7
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn work_costs_the_cpu_time_asked_for() {
        let cpu = || crate::sys::thread_cpu_time().total();
        let n = rounds_for(Duration::from_millis(10));
        let t0 = cpu();
        for _ in 0..5 {
            burn(n);
        }
        // Five times 10 ms of the thread's own CPU clock (not wall time: a preempted thread
        // is not charged), within the calibration's accuracy.
        let spent = (cpu() - t0).as_secs_f64();
        assert!((0.035..0.075).contains(&spent), "{spent}");
        assert_eq!(rounds_for(Duration::ZERO), 0);
        assert_eq!(burn(0), 0);
    }

    #[test]
    fn the_two_versions_differ_where_the_demo_says() {
        let ready = AtomicBool::new(true);
        let index = std::sync::OnceLock::new();
        let _ = index.set((0..BLOCKS).map(|h| hash(h, 1)).collect::<Vec<_>>());
        let (s1, b1) = answer("/block/5", Version::V1, &ready, &index);
        let (s2, b2) = answer("/block/5", Version::V2, &ready, &index);
        assert_eq!((s1, s2), ("200 OK", "200 OK"));
        let h = |b: &str| b.split("\"hash\":\"").nth(1).unwrap()[..64].to_string();
        let reversed: String = (0..32)
            .rev()
            .map(|i| h(&b1)[2 * i..2 * i + 2].to_string())
            .collect();
        assert_eq!(h(&b2), reversed);
        assert_eq!(
            answer("/block/x", Version::V1, &ready, &index).0,
            "500 Internal Server Error"
        );
        assert_eq!(
            answer("/block/x", Version::V2, &ready, &index).0,
            "400 Bad Request"
        );
        assert_eq!(
            answer("/block/10000", Version::V2, &ready, &index).0,
            "404 Not Found"
        );
    }
}
