//! HTTP/1.1's chunked transfer coding, decoded as the bytes arrive.

/// A decoder for `Transfer-Encoding: chunked` (RFC 9112 §7.1) that consumes what it can
/// from each slice and keeps its place between reads.
#[derive(Default)]
pub(super) struct Chunked {
    state: ChunkState,
}

#[derive(Default, PartialEq)]
enum ChunkState {
    #[default]
    Size,
    Data(u64),
    DataEnd,
    Trailer,
    Done,
}

impl Chunked {
    pub(super) fn done(&self) -> bool {
        self.state == ChunkState::Done
    }

    pub(super) fn feed(
        &mut self,
        input: &[u8],
        body: &mut Option<Vec<u8>>,
        total: &mut u64,
    ) -> Result<usize, &'static str> {
        let mut i = 0;
        loop {
            match self.state {
                ChunkState::Done => return Ok(i),
                ChunkState::Size => {
                    let Some(nl) = input[i..].iter().position(|&b| b == b'\n') else {
                        return Ok(i);
                    };
                    let line = &input[i..i + nl];
                    let hex = line.split(|&b| b == b';').next().unwrap_or(b"");
                    let hex = std::str::from_utf8(hex)
                        .map_err(|_| "bad chunk size")?
                        .trim();
                    let size = u64::from_str_radix(hex, 16).map_err(|_| "bad chunk size")?;
                    i += nl + 1;
                    self.state = if size == 0 {
                        ChunkState::Trailer
                    } else {
                        ChunkState::Data(size)
                    };
                }
                ChunkState::Data(left) => {
                    let n = ((input.len() - i) as u64).min(left) as usize;
                    if n == 0 {
                        return Ok(i);
                    }
                    if let Some(b) = body {
                        b.extend_from_slice(&input[i..i + n]);
                    }
                    *total += n as u64;
                    i += n;
                    self.state = if left == n as u64 {
                        ChunkState::DataEnd
                    } else {
                        ChunkState::Data(left - n as u64)
                    };
                }
                ChunkState::DataEnd | ChunkState::Trailer => {
                    let Some(nl) = input[i..].iter().position(|&b| b == b'\n') else {
                        return Ok(i);
                    };
                    let line_empty = input[i..i + nl].iter().all(|&b| b == b'\r');
                    i += nl + 1;
                    if self.state == ChunkState::DataEnd {
                        if !line_empty {
                            return Err("chunk data longer than its size");
                        }
                        self.state = ChunkState::Size;
                    } else if line_empty {
                        self.state = ChunkState::Done;
                    }
                }
            }
        }
    }
}
