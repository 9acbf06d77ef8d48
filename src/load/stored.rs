//! What a stored histogram must be before it is decoded: results come from other machines
//! (shards), and the decoder trusts its header with an allocation.

/// The uncompressed HdrHistogram V2 cookie, the only encoding bakeoff writes.
const V2_COOKIE: u32 = 0x1c84_9313;

/// What a stored histogram's header must say before it is decoded: the uncompressed V2
/// encoding bakeoff writes (a compressed one would inflate to any size), a payload no longer
/// than the bytes that follow the header (the decoder allocates what `payload_len` says), and
/// the 1–3 significant digits and value range bakeoff records with (the counts array grows
/// with both).
pub(super) fn check_header(raw: &[u8]) -> Result<(), String> {
    const HEADER: usize = 40;
    let word = |at: usize| u32::from_be_bytes(raw[at..at + 4].try_into().expect("4 bytes"));
    let long = |at: usize| u64::from_be_bytes(raw[at..at + 8].try_into().expect("8 bytes"));
    if raw.len() < HEADER {
        return Err(format!(
            "histogram is {} bytes, shorter than its header",
            raw.len()
        ));
    }
    if word(0) != V2_COOKIE {
        return Err(format!(
            "histogram is not uncompressed HdrHistogram V2 (cookie {:#010x})",
            word(0)
        ));
    }
    let payload = word(4) as usize;
    if payload > raw.len() - HEADER {
        return Err(format!(
            "histogram says its payload is {payload} bytes, but {} follow its header",
            raw.len() - HEADER
        ));
    }
    let digits = word(12);
    let (lowest, highest) = (long(16), long(24));
    if !(1..=3).contains(&digits) || lowest == 0 || highest < 2 * lowest {
        return Err(format!(
            "histogram's header is not one bakeoff writes ({digits} significant digits, values {lowest}..{highest})"
        ));
    }
    Ok(())
}
