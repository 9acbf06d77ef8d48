//! HPACK (RFC 7541) for the lean HTTP/2 client (`lean2`): a decoder that keeps the dynamic
//! table in step with the server's encoder and hands each field to the caller from reused
//! buffers, and the encoding of a fixed request head — inserted into the server's table once,
//! then sent as a few index bytes per request, as nghttp2 and `h2` do.

use std::collections::VecDeque;
use std::sync::OnceLock;

/// The table size both ends start with (SETTINGS_HEADER_TABLE_SIZE's default); the client
/// never announces another, so the server's encoder may use this much.
pub const DEFAULT_TABLE: usize = 4096;

/// A decoded string (a name or a value) may be at most this long: more is an error before
/// anything is allocated for it.
const MAX_STRING: usize = 64 * 1024;

/// The dynamic table: every entry's name and value in one buffer, oldest first, so entering
/// a field allocates nothing once the buffer has grown (nginx enters five with every answer).
#[derive(Default)]
struct Table {
    bytes: Vec<u8>,
    /// Newest first (dynamic index 62 is `entries[0]`): where its bytes start, the name's
    /// length and the value's.
    entries: VecDeque<(usize, usize, usize)>,
}

impl Table {
    fn get(&self, i: usize) -> Option<(&[u8], &[u8])> {
        let &(at, n, v) = self.entries.get(i)?;
        Some((&self.bytes[at..at + n], &self.bytes[at + n..at + n + v]))
    }

    fn push_front(&mut self, name: &[u8], value: &[u8]) {
        // The bytes before the oldest entry are dead: dropped once they outgrow the table a
        // few times over, so the buffer stays within a few table sizes.
        let dead = self.entries.back().map_or(self.bytes.len(), |e| e.0);
        if dead > 4 * DEFAULT_TABLE {
            self.bytes.drain(..dead);
            for e in &mut self.entries {
                e.0 -= dead;
            }
        }
        let at = self.bytes.len();
        self.bytes.extend_from_slice(name);
        self.bytes.extend_from_slice(value);
        self.entries.push_front((at, name.len(), value.len()));
    }

    /// Drops the oldest entry; its size as the table counts it.
    fn pop_back(&mut self) -> Option<usize> {
        let (_, n, v) = self.entries.pop_back()?;
        Some(n + v + 32)
    }

    fn clear(&mut self) {
        self.entries.clear();
        self.bytes.clear();
    }
}

pub struct Decoder {
    table: Table,
    size: usize,
    /// The size the server's encoder last set, at most [`DEFAULT_TABLE`].
    max: usize,
    name: Vec<u8>,
    value: Vec<u8>,
    recent: Recent,
}

/// How many Huffman-coded strings [`Recent`] keeps, and the longest it keeps (coded bytes).
const RECENT: usize = 16;
const RECENT_LONGEST: usize = 64;

/// The Huffman-coded strings decoded lately, by their coded bytes. A server sends the same
/// values with every answer — nginx enters its `server`, `content-type`, `last-modified`,
/// `etag` and `date` into the table with each one, Huffman-coded, and a load asks for the
/// same resource again and again — so each is decoded once and then only compared (the
/// decoding was a quarter of the engine's own instructions a request at 64 h2c connections).
/// Bounded: [`RECENT`] strings of at most [`RECENT_LONGEST`] coded bytes, their buffers
/// reused; a string found again is passed over once when the next is kept (a second chance),
/// so values that change with every answer replace each other, not the ones that repeat.
#[derive(Default)]
struct Recent {
    /// Coded bytes, what they decode to, and whether they were found again since last passed.
    kept: [(Vec<u8>, Vec<u8>, bool); RECENT],
    /// Where the search for the next to replace starts.
    next: usize,
    #[cfg(test)]
    found: usize,
}

impl Recent {
    /// Decodes the Huffman-coded `raw` into `out`, from what was kept when it was seen lately.
    fn decode(&mut self, raw: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
        if let Some((_, plain, again)) = self.kept.iter_mut().find(|(coded, ..)| coded[..] == *raw)
        {
            *again = true;
            out.extend_from_slice(plain);
            #[cfg(test)]
            {
                self.found += 1;
            }
            return Ok(());
        }
        huffman_decode(raw, out)?;
        if raw.len() <= RECENT_LONGEST {
            // Within RECENT + 1 steps: each step passed over clears a mark.
            while std::mem::take(&mut self.kept[self.next].2) {
                self.next = (self.next + 1) % RECENT;
            }
            let (coded, plain, _) = &mut self.kept[self.next];
            coded.clear();
            coded.extend_from_slice(raw);
            plain.clear();
            plain.extend_from_slice(out);
            self.next = (self.next + 1) % RECENT;
        }
        Ok(())
    }
}

impl Default for Decoder {
    fn default() -> Decoder {
        Decoder {
            table: Table::default(),
            size: 0,
            max: DEFAULT_TABLE,
            name: Vec::new(),
            value: Vec::new(),
            recent: Recent::default(),
        }
    }
}

impl Decoder {
    /// Decodes one whole header block, calling `field` with each name and value in order —
    /// except fields sent without indexing whose name `wanted` refuses: their values are
    /// skipped undecoded (the `date`, `etag` and the like a server may send with every
    /// answer, Huffman-coded).
    pub fn decode(
        &mut self,
        mut block: &[u8],
        wanted: impl Fn(&[u8]) -> bool,
        mut field: impl FnMut(&[u8], &[u8]),
    ) -> Result<(), String> {
        while let Some(&b) = block.first() {
            if b & 0x80 != 0 {
                let i = integer(&mut block, 7)?;
                let (n, v) = lookup(&self.table, i)?;
                field(n, v);
            } else if b & 0xe0 == 0x20 {
                let size = integer(&mut block, 5)?;
                if size > DEFAULT_TABLE {
                    return Err(format!(
                        "the server set its header table to {size} bytes, over the {DEFAULT_TABLE} allowed"
                    ));
                }
                self.max = size;
                self.evict(0);
            } else {
                // 01: with incremental indexing (6-bit index); 0000 / 0001: without (4-bit).
                let indexing = b & 0xc0 == 0x40;
                let i = integer(&mut block, if indexing { 6 } else { 4 })?;
                let Decoder {
                    table,
                    name,
                    value,
                    recent,
                    ..
                } = self;
                name.clear();
                match i {
                    0 => string(&mut block, name, recent)?,
                    i => name.extend_from_slice(lookup(table, i)?.0),
                }
                if !indexing && !wanted(name) {
                    skip_string(&mut block)?;
                    continue;
                }
                string(&mut block, value, recent)?;
                field(name, value);
                if indexing {
                    self.insert();
                }
            }
        }
        Ok(())
    }

    /// Adds the field in `name` / `value` as the newest entry, evicting the oldest to make
    /// room; a field larger than the whole table empties it (RFC 7541 §4.4).
    fn insert(&mut self) {
        let size = self.name.len() + self.value.len() + 32;
        if size > self.max {
            self.table.clear();
            self.size = 0;
            return;
        }
        self.evict(size);
        self.table.push_front(&self.name, &self.value);
        self.size += size;
    }

    /// Drops the oldest entries until `room` more bytes fit.
    fn evict(&mut self, room: usize) {
        while self.size + room > self.max {
            let Some(size) = self.table.pop_back() else {
                break;
            };
            self.size -= size;
        }
    }
}

fn lookup(table: &Table, i: usize) -> Result<(&[u8], &[u8]), String> {
    match i {
        0 => Err("header index 0".into()),
        1..=61 => {
            let (n, v) = STATIC[i - 1];
            Ok((n.as_bytes(), v.as_bytes()))
        }
        _ => table
            .get(i - 62)
            .ok_or_else(|| format!("header index {i} is past the table's end")),
    }
}

/// An integer with an `n`-bit prefix (RFC 7541 §5.1); anything past 2²⁸ is an error.
fn integer(block: &mut &[u8], n: u8) -> Result<usize, String> {
    let short = || "a header block ends inside a number".to_string();
    let (&first, rest) = block.split_first().ok_or_else(short)?;
    *block = rest;
    let mask = (1u16 << n) as usize - 1;
    let mut v = first as usize & mask;
    if v < mask {
        return Ok(v);
    }
    let mut shift = 0;
    loop {
        let (&b, rest) = block.split_first().ok_or_else(short)?;
        *block = rest;
        v += ((b & 0x7f) as usize) << shift;
        if b & 0x80 == 0 {
            return Ok(v);
        }
        shift += 7;
        if shift > 21 {
            return Err("a number in a header block is too large".into());
        }
    }
}

/// Passes over a string literal without decoding it.
fn skip_string(block: &mut &[u8]) -> Result<(), String> {
    let len = integer(block, 7)?;
    *block = block
        .get(len..)
        .ok_or_else(|| "a header block ends inside a string".to_string())?;
    Ok(())
}

/// A string literal (RFC 7541 §5.2), Huffman-coded or not, into `out`.
fn string(block: &mut &[u8], out: &mut Vec<u8>, recent: &mut Recent) -> Result<(), String> {
    let huffman = block.first().is_some_and(|b| b & 0x80 != 0);
    let len = integer(block, 7)?;
    if len > block.len() {
        return Err("a header block ends inside a string".into());
    }
    let (raw, rest) = block.split_at(len);
    *block = rest;
    out.clear();
    if !huffman {
        if len > MAX_STRING {
            return Err(format!("a header is longer than {MAX_STRING} bytes"));
        }
        out.extend_from_slice(raw);
        return Ok(());
    }
    recent.decode(raw, out)
}

/// One step of the Huffman decoder: from an internal node of the code tree, four bits on.
#[derive(Clone, Copy, Default)]
struct Step {
    next: u8,
    /// The symbol completed on the way (0–255), [`NONE`], or [`FAIL`] (EOS inside a string).
    sym: u16,
}

const NONE: u16 = 256;
const FAIL: u16 = 257;

struct Machine {
    /// 256 internal nodes for 257 symbols: a `u8` names every one, so no index is checked.
    steps: [[Step; 16]; 256],
    /// Whether ending at this node leaves only padding: fewer than 8 one bits (§5.2).
    ends: [bool; 256],
}

/// The decoder's state machine, built once from the code table: 256 internal nodes, each
/// with a step per nibble (no code is shorter than 5 bits, so a nibble completes at most one
/// symbol).
fn machine() -> &'static Machine {
    static MACHINE: OnceLock<Machine> = OnceLock::new();
    MACHINE.get_or_init(|| {
        const LEAF: u16 = 0x8000;
        // children[node] = [zero, one]: an internal node's index, or LEAF | symbol.
        let mut children: Vec<[u16; 2]> = vec![[0, 0]];
        for (sym, &(code, len)) in CODES.iter().enumerate() {
            let mut node = 0usize;
            for bit in (0..len).rev() {
                let b = ((code >> bit) & 1) as usize;
                if bit == 0 {
                    children[node][b] = LEAF | sym as u16;
                } else {
                    if children[node][b] == 0 {
                        children.push([0, 0]);
                        children[node][b] = (children.len() - 1) as u16;
                    }
                    node = children[node][b] as usize;
                }
            }
        }
        assert_eq!(children.len(), 256, "a full tree of 257 leaves");
        let mut ends = [false; 256];
        let mut node = 0usize;
        for _ in 0..8 {
            ends[node] = true;
            node = children[node][1] as usize;
        }
        let mut steps = [[Step::default(); 16]; 256];
        for (start, row) in steps.iter_mut().enumerate() {
            for (nibble, step) in row.iter_mut().enumerate() {
                let (mut node, mut sym) = (start, NONE);
                for bit in (0..4).rev() {
                    let c = children[node][(nibble >> bit) & 1];
                    if c & LEAF != 0 {
                        sym = match c & !LEAF {
                            256 => FAIL,
                            s if sym == NONE => s,
                            _ => FAIL,
                        };
                        node = 0;
                    } else {
                        node = c as usize;
                    }
                }
                *step = Step {
                    next: node as u8,
                    sym,
                };
            }
        }
        Machine { steps, ends }
    })
}

fn huffman_decode(raw: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
    let m = machine();
    let bad = || "a header's Huffman code is not valid".to_string();
    // At most 8/5 symbols a byte (no code is shorter than 5 bits), and the block holding
    // `raw` is bounded: this reserve is the only allocation, and it is bounded too.
    out.reserve(raw.len() * 8 / 5 + 1);
    let mut node = 0u8;
    for &b in raw {
        for nibble in [b >> 4, b & 0xf] {
            let step = m.steps[node as usize][nibble as usize];
            match step.sym {
                NONE => {}
                FAIL => return Err(bad()),
                s => out.push(s as u8),
            }
            node = step.next;
        }
    }
    if out.len() > MAX_STRING {
        return Err(format!("a header is longer than {MAX_STRING} bytes"));
    }
    match m.ends[node as usize] {
        true => Ok(()),
        false => Err(bad()),
    }
}

/// Appends an integer with an `n`-bit prefix, `flags` in the prefix's first byte.
pub fn put_integer(out: &mut Vec<u8>, flags: u8, n: u8, mut v: usize) {
    let mask = (1usize << n) - 1;
    if v < mask {
        out.push(flags | v as u8);
        return;
    }
    out.push(flags | mask as u8);
    v -= mask;
    while v >= 0x80 {
        out.push(0x80 | (v & 0x7f) as u8);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Appends a string literal as it is (no Huffman coding: the fixed head is sent whole once).
pub fn put_string(out: &mut Vec<u8>, s: &[u8]) {
    put_integer(out, 0, 7, s.len());
    out.extend_from_slice(s);
}

/// A request head whose fields never change, encoded three ways: `first` inserts the fields
/// the static table lacks into the server's table, `steady` names them by index afterwards,
/// and `plain` sends them without touching the table (when the server's table is too small).
#[derive(Debug, Clone)]
pub struct Head {
    pub first: Vec<u8>,
    pub steady: Vec<u8>,
    pub plain: Vec<u8>,
    /// What the inserted fields take of the server's table.
    pub table: usize,
}

impl Head {
    pub fn new(fields: &[(&str, &str)]) -> Head {
        let mut head = Head {
            first: Vec::new(),
            steady: Vec::new(),
            plain: Vec::new(),
            table: 0,
        };
        let inserted = fields
            .iter()
            .filter(|(n, v)| static_index(n, v).is_none())
            .count();
        let mut j = 0;
        for &(n, v) in fields {
            if let Some(i) = static_index(n, v) {
                for out in [&mut head.first, &mut head.steady, &mut head.plain] {
                    put_integer(out, 0x80, 7, i);
                }
                continue;
            }
            head.table += n.len() + v.len() + 32;
            match static_name(n) {
                Some(i) => {
                    put_integer(&mut head.first, 0x40, 6, i);
                    put_integer(&mut head.plain, 0x00, 4, i);
                }
                None => {
                    for (out, flags) in [(&mut head.first, 0x40), (&mut head.plain, 0x00)] {
                        out.push(flags);
                        put_string(out, n.as_bytes());
                    }
                }
            }
            put_string(&mut head.first, v.as_bytes());
            put_string(&mut head.plain, v.as_bytes());
            // Inserted in order, so the last is the newest: index 62.
            put_integer(&mut head.steady, 0x80, 7, 62 + inserted - 1 - j);
            j += 1;
        }
        head
    }
}

/// A field sent as a literal without indexing (a path that changes per request).
pub fn put_literal(out: &mut Vec<u8>, name: &str, value: &[u8]) {
    match static_name(name) {
        Some(i) => put_integer(out, 0x00, 4, i),
        None => {
            out.push(0);
            put_string(out, name.as_bytes());
        }
    }
    put_string(out, value);
}

fn static_index(name: &str, value: &str) -> Option<usize> {
    STATIC
        .iter()
        .position(|&(n, v)| n == name && v == value && !v.is_empty())
        .map(|i| i + 1)
}

fn static_name(name: &str) -> Option<usize> {
    STATIC.iter().position(|&(n, _)| n == name).map(|i| i + 1)
}

/// RFC 7541 Appendix B: each symbol's code (right-aligned) and its length in bits; 256 is EOS.
const CODES: [(u32, u8); 257] = [
    (0x1ff8, 13),
    (0x7fffd8, 23),
    (0xfffffe2, 28),
    (0xfffffe3, 28),
    (0xfffffe4, 28),
    (0xfffffe5, 28),
    (0xfffffe6, 28),
    (0xfffffe7, 28),
    (0xfffffe8, 28),
    (0xffffea, 24),
    (0x3ffffffc, 30),
    (0xfffffe9, 28),
    (0xfffffea, 28),
    (0x3ffffffd, 30),
    (0xfffffeb, 28),
    (0xfffffec, 28),
    (0xfffffed, 28),
    (0xfffffee, 28),
    (0xfffffef, 28),
    (0xffffff0, 28),
    (0xffffff1, 28),
    (0xffffff2, 28),
    (0x3ffffffe, 30),
    (0xffffff3, 28),
    (0xffffff4, 28),
    (0xffffff5, 28),
    (0xffffff6, 28),
    (0xffffff7, 28),
    (0xffffff8, 28),
    (0xffffff9, 28),
    (0xffffffa, 28),
    (0xffffffb, 28),
    (0x14, 6),
    (0x3f8, 10),
    (0x3f9, 10),
    (0xffa, 12),
    (0x1ff9, 13),
    (0x15, 6),
    (0xf8, 8),
    (0x7fa, 11),
    (0x3fa, 10),
    (0x3fb, 10),
    (0xf9, 8),
    (0x7fb, 11),
    (0xfa, 8),
    (0x16, 6),
    (0x17, 6),
    (0x18, 6),
    (0x0, 5),
    (0x1, 5),
    (0x2, 5),
    (0x19, 6),
    (0x1a, 6),
    (0x1b, 6),
    (0x1c, 6),
    (0x1d, 6),
    (0x1e, 6),
    (0x1f, 6),
    (0x5c, 7),
    (0xfb, 8),
    (0x7ffc, 15),
    (0x20, 6),
    (0xffb, 12),
    (0x3fc, 10),
    (0x1ffa, 13),
    (0x21, 6),
    (0x5d, 7),
    (0x5e, 7),
    (0x5f, 7),
    (0x60, 7),
    (0x61, 7),
    (0x62, 7),
    (0x63, 7),
    (0x64, 7),
    (0x65, 7),
    (0x66, 7),
    (0x67, 7),
    (0x68, 7),
    (0x69, 7),
    (0x6a, 7),
    (0x6b, 7),
    (0x6c, 7),
    (0x6d, 7),
    (0x6e, 7),
    (0x6f, 7),
    (0x70, 7),
    (0x71, 7),
    (0x72, 7),
    (0xfc, 8),
    (0x73, 7),
    (0xfd, 8),
    (0x1ffb, 13),
    (0x7fff0, 19),
    (0x1ffc, 13),
    (0x3ffc, 14),
    (0x22, 6),
    (0x7ffd, 15),
    (0x3, 5),
    (0x23, 6),
    (0x4, 5),
    (0x24, 6),
    (0x5, 5),
    (0x25, 6),
    (0x26, 6),
    (0x27, 6),
    (0x6, 5),
    (0x74, 7),
    (0x75, 7),
    (0x28, 6),
    (0x29, 6),
    (0x2a, 6),
    (0x7, 5),
    (0x2b, 6),
    (0x76, 7),
    (0x2c, 6),
    (0x8, 5),
    (0x9, 5),
    (0x2d, 6),
    (0x77, 7),
    (0x78, 7),
    (0x79, 7),
    (0x7a, 7),
    (0x7b, 7),
    (0x7ffe, 15),
    (0x7fc, 11),
    (0x3ffd, 14),
    (0x1ffd, 13),
    (0xffffffc, 28),
    (0xfffe6, 20),
    (0x3fffd2, 22),
    (0xfffe7, 20),
    (0xfffe8, 20),
    (0x3fffd3, 22),
    (0x3fffd4, 22),
    (0x3fffd5, 22),
    (0x7fffd9, 23),
    (0x3fffd6, 22),
    (0x7fffda, 23),
    (0x7fffdb, 23),
    (0x7fffdc, 23),
    (0x7fffdd, 23),
    (0x7fffde, 23),
    (0xffffeb, 24),
    (0x7fffdf, 23),
    (0xffffec, 24),
    (0xffffed, 24),
    (0x3fffd7, 22),
    (0x7fffe0, 23),
    (0xffffee, 24),
    (0x7fffe1, 23),
    (0x7fffe2, 23),
    (0x7fffe3, 23),
    (0x7fffe4, 23),
    (0x1fffdc, 21),
    (0x3fffd8, 22),
    (0x7fffe5, 23),
    (0x3fffd9, 22),
    (0x7fffe6, 23),
    (0x7fffe7, 23),
    (0xffffef, 24),
    (0x3fffda, 22),
    (0x1fffdd, 21),
    (0xfffe9, 20),
    (0x3fffdb, 22),
    (0x3fffdc, 22),
    (0x7fffe8, 23),
    (0x7fffe9, 23),
    (0x1fffde, 21),
    (0x7fffea, 23),
    (0x3fffdd, 22),
    (0x3fffde, 22),
    (0xfffff0, 24),
    (0x1fffdf, 21),
    (0x3fffdf, 22),
    (0x7fffeb, 23),
    (0x7fffec, 23),
    (0x1fffe0, 21),
    (0x1fffe1, 21),
    (0x3fffe0, 22),
    (0x1fffe2, 21),
    (0x7fffed, 23),
    (0x3fffe1, 22),
    (0x7fffee, 23),
    (0x7fffef, 23),
    (0xfffea, 20),
    (0x3fffe2, 22),
    (0x3fffe3, 22),
    (0x3fffe4, 22),
    (0x7ffff0, 23),
    (0x3fffe5, 22),
    (0x3fffe6, 22),
    (0x7ffff1, 23),
    (0x3ffffe0, 26),
    (0x3ffffe1, 26),
    (0xfffeb, 20),
    (0x7fff1, 19),
    (0x3fffe7, 22),
    (0x7ffff2, 23),
    (0x3fffe8, 22),
    (0x1ffffec, 25),
    (0x3ffffe2, 26),
    (0x3ffffe3, 26),
    (0x3ffffe4, 26),
    (0x7ffffde, 27),
    (0x7ffffdf, 27),
    (0x3ffffe5, 26),
    (0xfffff1, 24),
    (0x1ffffed, 25),
    (0x7fff2, 19),
    (0x1fffe3, 21),
    (0x3ffffe6, 26),
    (0x7ffffe0, 27),
    (0x7ffffe1, 27),
    (0x3ffffe7, 26),
    (0x7ffffe2, 27),
    (0xfffff2, 24),
    (0x1fffe4, 21),
    (0x1fffe5, 21),
    (0x3ffffe8, 26),
    (0x3ffffe9, 26),
    (0xffffffd, 28),
    (0x7ffffe3, 27),
    (0x7ffffe4, 27),
    (0x7ffffe5, 27),
    (0xfffec, 20),
    (0xfffff3, 24),
    (0xfffed, 20),
    (0x1fffe6, 21),
    (0x3fffe9, 22),
    (0x1fffe7, 21),
    (0x1fffe8, 21),
    (0x7ffff3, 23),
    (0x3fffea, 22),
    (0x3fffeb, 22),
    (0x1ffffee, 25),
    (0x1ffffef, 25),
    (0xfffff4, 24),
    (0xfffff5, 24),
    (0x3ffffea, 26),
    (0x7ffff4, 23),
    (0x3ffffeb, 26),
    (0x7ffffe6, 27),
    (0x3ffffec, 26),
    (0x3ffffed, 26),
    (0x7ffffe7, 27),
    (0x7ffffe8, 27),
    (0x7ffffe9, 27),
    (0x7ffffea, 27),
    (0x7ffffeb, 27),
    (0xffffffe, 28),
    (0x7ffffec, 27),
    (0x7ffffed, 27),
    (0x7ffffee, 27),
    (0x7ffffef, 27),
    (0x7fffff0, 27),
    (0x3ffffee, 26),
    (0x3fffffff, 30),
];

/// RFC 7541 Appendix A: the static table, index 1 first.
const STATIC: [(&str, &str); 61] = [
    (":authority", ""),
    (":method", "GET"),
    (":method", "POST"),
    (":path", "/"),
    (":path", "/index.html"),
    (":scheme", "http"),
    (":scheme", "https"),
    (":status", "200"),
    (":status", "204"),
    (":status", "206"),
    (":status", "304"),
    (":status", "400"),
    (":status", "404"),
    (":status", "500"),
    ("accept-charset", ""),
    ("accept-encoding", "gzip, deflate"),
    ("accept-language", ""),
    ("accept-ranges", ""),
    ("accept", ""),
    ("access-control-allow-origin", ""),
    ("age", ""),
    ("allow", ""),
    ("authorization", ""),
    ("cache-control", ""),
    ("content-disposition", ""),
    ("content-encoding", ""),
    ("content-language", ""),
    ("content-length", ""),
    ("content-location", ""),
    ("content-range", ""),
    ("content-type", ""),
    ("cookie", ""),
    ("date", ""),
    ("etag", ""),
    ("expect", ""),
    ("expires", ""),
    ("from", ""),
    ("host", ""),
    ("if-match", ""),
    ("if-modified-since", ""),
    ("if-none-match", ""),
    ("if-range", ""),
    ("if-unmodified-since", ""),
    ("last-modified", ""),
    ("link", ""),
    ("location", ""),
    ("max-forwards", ""),
    ("proxy-authenticate", ""),
    ("proxy-authorization", ""),
    ("range", ""),
    ("referer", ""),
    ("refresh", ""),
    ("retry-after", ""),
    ("server", ""),
    ("set-cookie", ""),
    ("strict-transport-security", ""),
    ("transfer-encoding", ""),
    ("user-agent", ""),
    ("vary", ""),
    ("via", ""),
    ("www-authenticate", ""),
];

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    fn fields(d: &mut Decoder, block: &[u8]) -> Result<Vec<(String, String)>, String> {
        let mut out = Vec::new();
        d.decode(
            block,
            |_| true,
            |n, v| {
                out.push((
                    String::from_utf8_lossy(n).into_owned(),
                    String::from_utf8_lossy(v).into_owned(),
                ))
            },
        )?;
        Ok(out)
    }

    /// `s` Huffman-coded (RFC 7541 Appendix B), padded with ones.
    fn huffman(s: &[u8]) -> Vec<u8> {
        let (mut out, mut acc, mut bits) = (Vec::new(), 0u64, 0u32);
        for &b in s {
            let (code, len) = CODES[b as usize];
            acc = (acc << len) | u64::from(code);
            bits += u32::from(len);
            while bits >= 8 {
                bits -= 8;
                out.push((acc >> bits) as u8);
            }
        }
        if bits > 0 {
            out.push(((acc << (8 - bits)) | ((1 << (8 - bits)) - 1)) as u8);
        }
        out
    }

    /// A field with incremental indexing, its name from the static table (`index`), its
    /// value Huffman-coded.
    fn indexed_huffman(block: &mut Vec<u8>, index: usize, value: &[u8]) {
        put_integer(block, 0x40, 6, index);
        let coded = huffman(value);
        put_integer(block, 0x80, 7, coded.len());
        block.extend_from_slice(&coded);
    }

    #[test]
    fn values_decoded_lately_are_reused_and_never_confused() {
        // Twelve answers, each entering ten Huffman-coded values into the table: five the same
        // every time, four new with each answer (over the twelve, more than are kept; two of
        // them the same length as another), the last too long to be kept.
        let mut d = Decoder::default();
        let long = "x".repeat(200);
        for n in 0..12 {
            let values: Vec<String> = [
                "nginx/1.22.1".to_string(),
                "text/html".to_string(),
                "Thu, 03 Dec 2026 01:30:05 GMT".to_string(),
                "\"692f7c1e-1d\"".to_string(),
                "bytes".to_string(),
                format!("{n:02}"),
                format!("{:02}", 99 - n),
                format!("a value {n}"),
                format!("Thu, 03 Dec 2026 01:30:{n:02} GMT"),
                long.clone(),
            ]
            .into();
            let mut block = Vec::new();
            for v in &values {
                indexed_huffman(&mut block, 54, v.as_bytes()); // `server`
            }
            let want: Vec<(String, String)> = values
                .iter()
                .map(|v| ("server".to_string(), v.clone()))
                .collect();
            assert_eq!(fields(&mut d, &block).unwrap(), want, "answer {n}");
        }
        // A coded value with bad padding is refused every time it comes, not kept.
        let mut bad = vec![0x40 | 54, 0x81, 0x00];
        bad.extend_from_slice(&bad.clone());
        assert!(fields(&mut d, &bad).is_err());
        assert!(fields(&mut d, &bad[3..]).is_err());
        // The five that repeat were found again in every answer after the first, whatever
        // the others did; what is kept stays bounded: its count and each string's length.
        assert!(d.recent.found >= 5 * 11, "{}", d.recent.found);
        assert_eq!(d.recent.kept.len(), RECENT);
        assert!(d
            .recent
            .kept
            .iter()
            .all(|(c, ..)| c.len() <= RECENT_LONGEST));
    }

    fn pairs(p: &[(&str, &str)]) -> Vec<(String, String)> {
        p.iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect()
    }

    // The blocks were made by another implementation, Python's `hpack` 4.0.0 (PyPI): an
    // Encoder fed the fields each assertion expects, Huffman-coded, the fourth block after
    // `header_table_size = 100` (a size update and evictions), the fifth the same fields
    // without Huffman.
    #[test]
    fn decodes_what_another_encoder_wrote_keeping_its_table_in_step() {
        let mut d = Decoder::default();
        let answer = |second: &str| {
            let date = format!("Thu, 03 Dec 2026 01:30:0{second} GMT");
            let head = [
                (":status", "200"),
                ("content-type", "application/grpc"),
                ("grpc-encoding", "identity"),
            ];
            let mut want = pairs(&head);
            want.push(("date".to_string(), date));
            want
        };
        let first = hex("885f8b1d75d0620d263d4c4d6564408a9acac8b16a21e435537f863485a9264faf6196df3dbf4a01952f948a0802714006e320b806d4c5a37f");
        assert_eq!(fields(&mut d, &first).unwrap(), answer("5"));
        // The second block names three fields by the indexes the first one made.
        let second = hex("88c0bf6196df3dbf4a01952f948a0802714006e320b80714c5a37f");
        assert_eq!(fields(&mut d, &second).unwrap(), answer("6"));
        let trailers = hex("40889acac8b21234da8f810740899acac8b5254207317f873f554404ce5abf");
        let want = [("grpc-status", "0"), ("grpc-message", "ok%20then")];
        assert_eq!(fields(&mut d, &trailers).unwrap(), pairs(&want));
        let want = [
            (":status", "404"),
            ("x-long-header-name", "a value that will not fit twice"),
            ("grpc-status", "5"),
        ];
        let shrunk = hex("3f458d408df2b507aa65a728e42d8b543a4b961a9dc745a551338d2a7835142951d2a4a64a89f0621740889acac8b21234da8f816f");
        assert_eq!(fields(&mut d, &shrunk).unwrap(), pairs(&want));
        assert!(d.size <= 100, "the table holds {} of 100 bytes", d.size);
        let raw = hex("8d4012782d6c6f6e672d6865616465722d6e616d651f612076616c756520746861742077696c6c206e6f7420666974207477696365400b677270632d7374617475730135");
        assert_eq!(fields(&mut d, &raw).unwrap(), pairs(&want));
    }

    #[test]
    fn huffman_decodes_every_byte_and_refuses_bad_padding() {
        let block = hex("4081f3ffc803ffc7fffd8fffffe2fffffe3fffffe4fffffe5fffffe6fffffe7fffffe8ffffeafffffff3fffffa7fffffabffffffdfffffebfffffecfffffedfffffeefffffefffffff0ffffff1ffffff2fffffffbfffffcffffffd3fffffd7fffffdbfffffdffffffe3fffffe7fffffebfffffed4fe3f9ffaffcabf1febfafefe7fdfd2cbb00089969b71d79fb9f7fff20ffbff3ff50ddbd7f061c58f265cd9f469d5af66dddbf871e5f9cff7ff7fffc3ff9ffe45fff4719242cb34e6e9d68a6a3d7dac426defe3cfaf7fffbfe7ffbffdffffffcfffe6ffff4bfff9ffffa3fffd3ffff53fffd5ffffb3fffeb7fffdaffffb7ffff73fffeeffffdeffffebffffbfffffd9ffffdbfffebffffe0ffffeeffffc3ffff8bffff1ffffe4fffee7fffb1ffff97fffd9ffffcdffff9fffffbffffdafffeeffff4ffffb7fffee7fffe8ffffd3fffdeffffd5fffeeffffbdffffe1fffdfffff7fffff5ffffecffff07fff87fffe0ffff17fffedffff87ffff77fffeffffeaffff8bfffe3ffff93ffff87fffcbffff37ffff1fffff83ffffe1fffebfffe3ffff3fffff2ffffa3ffffd9fffff17ffffc7fffff27ffffdefffffbffffff2fffff8fffffb7fff97fff8fffffe6fffffc1fffff87ffffe7fffffc5ffffe5fffe4ffff2fffffd1fffff4ffffffefffffe3fffffc9fffff97fffb3ffffcffffb7fffcdffff4ffff9ffffd1ffffcffffeaffffafffffddffffeffffff4fffff5fffffabffffa7ffffd7fffff9bffffecfffffb7fffff3fffffe8fffffd3fffffabfffff5fffffff7ffffecfffffdbfffffbbfffff7ffffff0fffffbbf");
        let mut got = Vec::new();
        Decoder::default()
            .decode(&block, |_| true, |n, v| got.push((n.to_vec(), v.to_vec())))
            .unwrap();
        assert_eq!(got, vec![(b"x".to_vec(), (0..=255u8).collect::<Vec<_>>())]);
        // "a" is 00011 (5 bits): three one bits of padding are right, zeros or a whole
        // byte of ones are not.
        let mut out = Vec::new();
        huffman_decode(&[0b0001_1111], &mut out).unwrap();
        assert_eq!(out, b"a");
        assert!(huffman_decode(&[0b0001_1000], &mut out).is_err());
        assert!(huffman_decode(&[0b0001_1111, 0xff], &mut out).is_err());
    }

    #[test]
    fn the_table_keeps_its_newest_entries_in_a_bounded_buffer() {
        let mut d = Decoder::default();
        let value = |k: usize| format!("{k}-{}", "v".repeat(k % 300));
        for k in 0..5000 {
            let mut block = vec![0x40];
            put_string(&mut block, b"x-k");
            put_string(&mut block, value(k).as_bytes());
            fields(&mut d, &block).unwrap();
            // Index 62 is the field just entered, 63 the one before.
            let got = fields(&mut d, &[0xbe, 0xbf][..if k > 0 { 2 } else { 1 }]).unwrap();
            assert_eq!(got[0].1, value(k));
            if k > 0 {
                assert_eq!(got[1].1, value(k - 1));
            }
            assert!(d.size <= DEFAULT_TABLE);
            assert!(
                d.table.bytes.len() <= 5 * DEFAULT_TABLE,
                "{}",
                d.table.bytes.len()
            );
        }
    }

    #[test]
    fn values_not_wanted_are_skipped_undecoded() {
        // :status 200 (indexed), then `date` (static name 33) without indexing, its value one
        // Huffman byte that is not valid (zero bits of padding).
        let block = [0x88, 0x0f, 0x12, 0x81, 0x00];
        let mut seen = Vec::new();
        Decoder::default()
            .decode(&block, |n| n == b":status", |n, _| seen.push(n.to_vec()))
            .unwrap();
        assert_eq!(seen, [b":status".to_vec()]);
        assert!(Decoder::default()
            .decode(&block, |_| true, |_, _| {})
            .is_err());
    }

    #[test]
    fn bad_blocks_are_errors_not_panics() {
        for block in [
            &[0x80][..],                           // index 0
            &[0xbf, 0x00],                         // index 63, past an empty table
            &[0x40, 0x05, b'a'],                   // a string cut short
            &[0x7f],                               // a number cut short
            &[0x3f, 0xe2, 0x1f],                   // a table of 4097 bytes
            &[0xff, 0xff, 0xff, 0xff, 0xff, 0x0f], // a number too large
        ] {
            assert!(
                Decoder::default()
                    .decode(block, |_| true, |_, _| {})
                    .is_err(),
                "{block:02x?}"
            );
        }
    }

    #[test]
    fn a_head_inserts_once_then_names_its_fields_by_index() {
        let sent = [
            (":method", "POST"),
            (":scheme", "http"),
            (":path", "/etcdserverpb.KV/Range"),
            (":authority", "127.0.0.1:2379"),
            ("content-type", "application/grpc"),
            ("te", "trailers"),
        ];
        let head = Head::new(&sent);
        let want = pairs(&sent);
        let mut d = Decoder::default();
        assert_eq!(fields(&mut d, &head.first).unwrap(), want);
        for _ in 0..3 {
            assert_eq!(fields(&mut d, &head.steady).unwrap(), want);
        }
        // Two static fields and four index bytes.
        assert_eq!(head.steady.len(), 6);
        assert_eq!(head.table, d.size);
        assert_eq!(fields(&mut Decoder::default(), &head.plain).unwrap(), want);
        let mut path = head.plain.clone();
        put_literal(&mut path, ":path", b"/a/b?c=1");
        put_literal(&mut path, "x-id", &[b'7'; 200]);
        let got = fields(&mut Decoder::default(), &path).unwrap();
        assert_eq!(got[6], (":path".to_string(), "/a/b?c=1".to_string()));
        assert_eq!(got[7].1.len(), 200);
    }
}
