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

/// The copy itself: head as it comes, then the tail rewritten after it. When the log cannot
/// be written (a full disk), the member's output is still read to its end and dropped: a
/// member whose pipe closed would die of it, and be recorded as having exited by itself.
pub fn copy_capped(mut src: impl Read, file: File, limit: u64) -> std::io::Result<()> {
    let mut buf = vec![0u8; 64 * 1024];
    let copied = copy_into(&mut src, file, limit, &mut buf);
    if copied.is_err() {
        loop {
            match src.read(&mut buf) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
    }
    copied
}

fn copy_into(
    src: &mut impl Read,
    mut file: File,
    limit: u64,
    buf: &mut [u8],
) -> std::io::Result<()> {
    let head_max = limit / 2;
    let tail_max = (limit - head_max) as usize;
    // A log that already holds something (a second setup step) is added to after it.
    let base = file.seek(SeekFrom::End(0))?;
    let mut head = 0u64;
    let mut tail: VecDeque<u8> = VecDeque::new();
    let mut dropped = 0u64;
    let mut dirty = false;
    let mut last = Instant::now();
    loop {
        let n = match src.read(buf) {
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
            write_tail(&mut file, base + head, head, &tail, dropped)?;
            dirty = false;
            last = Instant::now();
        }
    }
    if dirty {
        write_tail(&mut file, base + head, head, &tail, dropped)?;
    }
    Ok(())
}

/// Writes the tail at offset `at` of the file, after a head of `head` bytes.
fn write_tail(
    file: &mut File,
    at: u64,
    head: u64,
    tail: &VecDeque<u8>,
    dropped: u64,
) -> std::io::Result<()> {
    file.seek(SeekFrom::Start(at))?;
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

    /// A log that cannot be written (a full disk: /dev/full) still has its whole input read,
    /// so the member writing it never sees its pipe close (issue 25, item 13).
    #[test]
    fn a_log_that_cannot_be_written_is_still_read_to_its_end() {
        struct Counting<'a>(&'a [u8], &'a std::cell::Cell<usize>);
        impl Read for Counting<'_> {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                let n = self.0.len().min(buf.len()).min(100);
                buf[..n].copy_from_slice(&self.0[..n]);
                self.0 = &self.0[n..];
                self.1.set(self.1.get() + n);
                Ok(n)
            }
        }
        let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") else {
            return;
        };
        let input = vec![b'x'; 10_000];
        let read = std::cell::Cell::new(0);
        let r = copy_capped(Counting(&input, &read), full, 1 << 20);
        assert!(r.is_err(), "the write failed");
        assert_eq!(
            read.get(),
            input.len(),
            "and the input was still read to its end"
        );
    }
}
