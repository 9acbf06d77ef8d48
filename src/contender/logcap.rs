//! Members' output, piped through bakeoff and capped: the first half of the limit is kept
//! as it came, then a rolling tail of the other half, with a line saying how much was
//! dropped between them. A member writing 50 MB/s cannot fill the disk, and the end of its
//! log — what explains a crash — is always there. The pump threads are bakeoff's, pinned
//! off the contender CPUs, so their work is neither on the contender's CPUs nor in its CPU
//! figures.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::time::{Duration, Instant};

/// How often the tail is written out while output keeps coming.
const TAIL_EVERY: Duration = Duration::from_millis(250);

/// Starts a thread copying `src` into `file` under `limit` bytes; it ends at end of input.
pub fn pump(
    src: impl Read + Send + 'static,
    file: File,
    limit: u64,
    cpus: Option<Vec<usize>>,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    std::thread::Builder::new()
        .name("bakeoff-log".into())
        .spawn(move || {
            if let Some(c) = cpus.filter(|c| !c.is_empty()) {
                let _ = crate::sys::pin_current_thread(&c);
            }
            let _ = copy_capped(src, file, limit);
        })
}

/// The copy itself: head as it comes, then the tail rewritten after it.
pub fn copy_capped(mut src: impl Read, mut file: File, limit: u64) -> std::io::Result<()> {
    let head_max = limit / 2;
    let tail_max = (limit - head_max) as usize;
    let mut head = 0u64;
    let mut tail: VecDeque<u8> = VecDeque::new();
    let mut dropped = 0u64;
    let mut dirty = false;
    let mut last = Instant::now();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match src.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        let mut data = &buf[..n];
        if head < head_max {
            let take = data.len().min((head_max - head) as usize);
            file.write_all(&data[..take])?;
            head += take as u64;
            data = &data[take..];
        }
        if !data.is_empty() {
            if data.len() >= tail_max {
                dropped += (tail.len() + data.len() - tail_max) as u64;
                tail.clear();
                tail.extend(&data[data.len() - tail_max..]);
            } else {
                let over = (tail.len() + data.len()).saturating_sub(tail_max);
                dropped += over as u64;
                tail.drain(..over);
                tail.extend(data);
            }
            dirty = true;
        }
        if dirty && last.elapsed() >= TAIL_EVERY {
            write_tail(&mut file, head, &tail, dropped)?;
            dirty = false;
            last = Instant::now();
        }
    }
    if dirty {
        write_tail(&mut file, head, &tail, dropped)?;
    }
    Ok(())
}

fn write_tail(
    file: &mut File,
    head: u64,
    tail: &VecDeque<u8>,
    dropped: u64,
) -> std::io::Result<()> {
    file.seek(SeekFrom::Start(head))?;
    if dropped > 0 {
        write!(
            file,
            "\n[bakeoff: {dropped} bytes of output dropped here; the log keeps the first {head} and the last {} bytes (raise `log_limit` in the plan)]\n",
            tail.len()
        )?;
    }
    let (a, b) = tail.as_slices();
    file.write_all(a)?;
    file.write_all(b)?;
    let end = file.stream_position()?;
    file.set_len(end)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The size a log capped at `limit` can reach (the limit and the dropped-bytes line).
    fn bound(limit: u64) -> u64 {
        limit + 200
    }

    fn capped(input: &[u8], limit: u64) -> Vec<u8> {
        let dir = std::env::temp_dir().join(format!(
            "bakeoff-logcap-{}-{limit}-{}",
            std::process::id(),
            input.len()
        ));
        let f = File::create(&dir).unwrap();
        copy_capped(input, f, limit).unwrap();
        let out = std::fs::read(&dir).unwrap();
        let _ = std::fs::remove_file(&dir);
        out
    }

    #[test]
    fn small_logs_are_kept_whole_and_large_ones_keep_head_and_tail() {
        assert_eq!(capped(b"hello\n", 100), b"hello\n");
        let input: Vec<u8> = (0..10_000u32)
            .flat_map(|i| format!("{i}\n").into_bytes())
            .collect();
        assert_eq!(capped(&input, input.len() as u64), input);
        let out = capped(&input, 1000);
        let text = String::from_utf8(out).unwrap();
        assert!(text.starts_with("0\n1\n2\n"), "{text}");
        assert!(text.ends_with("9998\n9999\n"), "{text}");
        let dropped = input.len() - 1000;
        assert!(
            text.contains(&format!("[bakeoff: {dropped} bytes of output dropped here")),
            "{text}"
        );
        assert!(text.len() as u64 <= bound(1000));
    }
}
