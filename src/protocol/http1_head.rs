//! The head of an HTTP/1.x response, read in one pass over its lines: the status and what
//! frames the body, nothing else.
//!
//! It accepts what `httparse` accepted before it (its tests hold the two side by side): empty
//! lines before the status line skipped; `HTTP/1.0` or `HTTP/1.1`, a three-digit status and a
//! reason of visible characters; header names of token characters followed at once by a
//! colon, values without control characters other than tab; lines ended by CRLF or a bare LF;
//! at most 64 header lines. Where a head is cut short it waits for more bytes, except that a
//! status line that cannot be HTTP/1.x is refused at once. `httparse` kept every header for a
//! reader that wanted them; the load engine wants three, and the general parser cost it a
//! third of its user-space instructions a request (BENCHMARKS.md, 2026-12-03 11:00 UTC).

use super::CallError;

/// How a response's body ends.
#[derive(Debug)]
pub(super) enum Framing {
    Length(u64),
    Chunked,
    UntilClose,
}

#[derive(Debug)]
pub(super) struct Head {
    pub(super) status: u16,
    pub(super) framing: Framing,
    /// The server closes the connection after this response.
    pub(super) close: bool,
}

/// Header lines a head may hold, as `httparse` was given room for.
const MAX_HEADERS: usize = 64;

/// RFC 9110's `tchar`: the bytes of a header's name.
const TOKEN: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        t[b] = c.is_ascii_alphanumeric()
            || matches!(
                c,
                b'!' | b'#'
                    | b'$'
                    | b'%'
                    | b'&'
                    | b'\''
                    | b'*'
                    | b'+'
                    | b'-'
                    | b'.'
                    | b'^'
                    | b'_'
                    | b'`'
                    | b'|'
                    | b'~'
            );
        b += 1;
    }
    t
};

/// A byte a header's value or the reason may hold: tab, visible ASCII, space, or any byte of
/// 0x80 and above (obs-text).
fn text(b: u8) -> bool {
    b == b'\t' || (b >= 0x20 && b != 0x7f)
}

/// Every byte of `bytes` is [`text`]; without an early exit, so the check runs wide.
fn all_text(bytes: &[u8]) -> bool {
    bytes.iter().fold(true, |ok, &b| ok & text(b))
}

/// `value` without the spaces and tabs around it.
fn trim_blanks(value: &[u8]) -> &[u8] {
    let blank = |b: &u8| *b == b' ' || *b == b'\t';
    let start = value.iter().position(|b| !blank(b)).unwrap_or(value.len());
    let end = value
        .iter()
        .rposition(|b| !blank(b))
        .map_or(start, |e| e + 1);
    &value[start..end]
}

fn bad(what: &str) -> CallError {
    CallError::Protocol(format!("bad HTTP response: {what}"))
}

/// The line starting at `at`, without its CRLF or LF, and where the next one starts; `None`
/// while its end has not arrived.
fn line(bytes: &[u8], at: usize) -> Option<(&[u8], usize)> {
    let rest = &bytes[at..];
    let nl = memchr::memchr(b'\n', rest)?;
    let l = &rest[..nl];
    Some((l.strip_suffix(b"\r").unwrap_or(l), at + nl + 1))
}

/// The response's head at the start of `bytes` and how many bytes it took, `None` while it is
/// not all there. `head_only`: the answer to a HEAD request, which has no body whatever its
/// headers say.
pub(super) fn parse_head(
    bytes: &[u8],
    head_only: bool,
) -> Result<Option<(Head, usize)>, CallError> {
    let mut at = 0;
    loop {
        match bytes.get(at) {
            Some(b'\n') => at += 1,
            Some(b'\r') => match bytes.get(at + 1) {
                Some(b'\n') => at += 2,
                Some(_) => return Err(bad("invalid new line")),
                None => return Ok(None),
            },
            Some(_) => break,
            None => return Ok(None),
        }
    }
    let Some((status_line, mut at)) = line(bytes, at) else {
        // Refused at once when it cannot become HTTP/1.x, as a server that speaks something
        // else may wait for us without ever ending a line.
        let got = &bytes[at..bytes.len().min(at + 8)];
        let fits = |v: &[u8]| v.starts_with(got);
        return if fits(b"HTTP/1.1") || fits(b"HTTP/1.0") {
            Ok(None)
        } else {
            Err(bad("invalid HTTP version"))
        };
    };
    let (version, status) = status_of(status_line)?;
    let mut framing = Framing::UntilClose;
    let mut close = version == 0;
    let mut headers = 0;
    loop {
        let Some((l, next)) = line(bytes, at) else {
            return Ok(None);
        };
        at = next;
        if l.is_empty() {
            break;
        }
        headers += 1;
        if headers > MAX_HEADERS {
            return Err(bad("too many headers"));
        }
        let colon = l
            .iter()
            .position(|&b| !TOKEN[b as usize])
            .unwrap_or(l.len());
        if colon == 0 || l.get(colon) != Some(&b':') {
            return Err(bad("invalid header name"));
        }
        let name = &l[..colon];
        let value = trim_blanks(&l[colon + 1..]);
        if !all_text(value) {
            return Err(bad("invalid header value"));
        }
        // Only three names matter; their lengths tell them apart before any comparison.
        match name.len() {
            14 if name.eq_ignore_ascii_case(b"content-length") => {
                let len = std::str::from_utf8(value)
                    .ok()
                    .and_then(|v| v.parse().ok())
                    .ok_or_else(|| CallError::Protocol("bad Content-Length".into()))?;
                if matches!(framing, Framing::Length(other) if other != len) {
                    // Two lengths: which one frames the body is the classic smuggling question.
                    return Err(CallError::Protocol(
                        "two different Content-Length headers".into(),
                    ));
                }
                if !matches!(framing, Framing::Chunked) {
                    framing = Framing::Length(len);
                }
            }
            // The last coding named is what frames the body.
            17 if name.eq_ignore_ascii_case(b"transfer-encoding")
                && value.len() >= 7
                && value[value.len() - 7..].eq_ignore_ascii_case(b"chunked") =>
            {
                framing = Framing::Chunked;
            }
            10 if name.eq_ignore_ascii_case(b"connection") => {
                if value.eq_ignore_ascii_case(b"close") {
                    close = true;
                } else if value.eq_ignore_ascii_case(b"keep-alive") {
                    close = false;
                }
            }
            _ => {}
        }
    }
    if head_only || status == 204 || status == 304 || (100..200).contains(&status) {
        framing = Framing::Length(0);
    }
    Ok(Some((
        Head {
            status,
            framing,
            close,
        },
        at,
    )))
}

/// The minor version and the status of a whole status line.
fn status_of(l: &[u8]) -> Result<(u8, u16), CallError> {
    let version = match l.get(..8) {
        Some(b"HTTP/1.1") => 1,
        Some(b"HTTP/1.0") => 0,
        _ => return Err(bad("invalid HTTP version")),
    };
    let code = match l.get(8..12) {
        Some([b' ', a, b, c]) if [a, b, c].iter().all(|d| d.is_ascii_digit()) => {
            u16::from(a - b'0') * 100 + u16::from(b - b'0') * 10 + u16::from(c - b'0')
        }
        _ => return Err(bad("invalid response status")),
    };
    match &l[12..] {
        [] => {}
        [b' ', reason @ ..] if all_text(reason) => {}
        _ => return Err(bad("invalid response status")),
    }
    Ok((version, code))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A head as the tests compare it: the status, the length, chunked, close, the bytes
    /// taken; `Err` for an error, `None` while partial.
    type Read = Result<Option<(u16, Option<u64>, bool, bool, usize)>, ()>;

    /// What `httparse` made of a head, with what frames the body derived as the reader before
    /// this one derived it.
    fn httparse_head(bytes: &[u8]) -> Read {
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut resp = httparse::Response::new(&mut headers);
        let n = match resp.parse(bytes) {
            Ok(httparse::Status::Complete(n)) => n,
            Ok(httparse::Status::Partial) => return Ok(None),
            Err(_) => return Err(()),
        };
        let mut length = None;
        let mut chunked = false;
        let mut close = resp.version == Some(0);
        for h in resp.headers.iter() {
            if h.name.eq_ignore_ascii_case("content-length") {
                let len: u64 = std::str::from_utf8(h.value)
                    .ok()
                    .and_then(|v| v.trim().parse().ok())
                    .ok_or(())?;
                if length.is_some_and(|l| l != len) {
                    return Err(());
                }
                length = Some(len);
            } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
                chunked |= h.value.to_ascii_lowercase().ends_with(b"chunked");
            } else if h.name.eq_ignore_ascii_case("connection") {
                if h.value.eq_ignore_ascii_case(b"close") {
                    close = true;
                } else if h.value.eq_ignore_ascii_case(b"keep-alive") {
                    close = false;
                }
            }
        }
        let status = resp.code.unwrap();
        if status == 204 || status == 304 || (100..200).contains(&status) {
            (length, chunked) = (Some(0), false);
        } else if chunked {
            length = None;
        }
        Ok(Some((status, length, chunked, close, n)))
    }

    fn ours(bytes: &[u8]) -> Read {
        match parse_head(bytes, false) {
            Ok(Some((h, n))) => {
                let (length, chunked) = match h.framing {
                    Framing::Length(l) => (Some(l), false),
                    Framing::Chunked => (None, true),
                    Framing::UntilClose => (None, false),
                };
                Ok(Some((h.status, length, chunked, h.close, n)))
            }
            Ok(None) => Ok(None),
            Err(_) => Err(()),
        }
    }

    /// Heads every kind of which either parser could trip on.
    const HEADS: &[&[u8]] = &[
        b"HTTP/1.1 200 OK\r\nServer: nginx/1.22.1\r\nDate: Thu, 03 Dec 2026 11:00:00 GMT\r\nContent-Type: text/html\r\nContent-Length: 29\r\nLast-Modified: Thu, 03 Dec 2026 10:00:00 GMT\r\nConnection: keep-alive\r\nETag: \"6932-1d\"\r\nAccept-Ranges: bytes\r\n\r\nhello from nginx for bakeoff\n",
        b"HTTP/1.1 404 Not Found\r\nContent-Length: 3\r\n\r\nabc",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\nConnection: close\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: CHUNKED\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\n",
        b"HTTP/1.0 200 OK\r\n\r\n",
        b"HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 0\r\n\r\n",
        b"\r\n\nHTTP/1.1 204 No Content\n\n",
        b"HTTP/1.1 200\r\n\r\n",
        b"HTTP/1.1 200 \r\n\r\n",
        b"HTTP/1.1 599 \xe6\x97\xa5\xe6\x9c\xac\tok\r\nX-Obs: caf\xc3\xa9\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nX-Empty:\r\nX-Spaces:   padded \t \r\nContent-Length:  7  \r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 50\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: five\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: +5\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999999\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nweird!#$%&'*+-.^_`|~name: x\r\n\r\n",
        b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\n\r\n",
        b"HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\n",
        // Refused by both.
        b"HTTP/2 200 OK\r\n\r\n",
        b"HTTP/1.2 200 OK\r\n\r\n",
        b"http/1.1 200 OK\r\n\r\n",
        b"SMTP ready\r\n\r\n",
        b"HTTP/1.1 20 OK\r\n\r\n",
        b"HTTP/1.1 2000 OK\r\n\r\n",
        b"HTTP/1.1  200 OK\r\n\r\n",
        b"HTTP/1.1 200 O\x01K\r\n\r\n",
        b"HTTP/1.1 200 OK\r\rX: y\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nNo Colon\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nSpace : before\r\n\r\n",
        b"HTTP/1.1 200 OK\r\n: empty name\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nX: folded\r\n  more\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nX: a\x00b\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nX: a\x7fb\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nX: a\rb\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nX\x80: y\r\n\r\n",
        b"\r\rHTTP/1.1 200 OK\r\n\r\n",
    ];

    #[test]
    fn heads_read_as_httparse_read_them() {
        for &head in HEADS {
            let what = String::from_utf8_lossy(head);
            assert_eq!(ours(head), httparse_head(head), "{what}");
        }
    }

    #[test]
    fn a_head_cut_short_waits_or_is_refused_as_httparse_would() {
        for &head in HEADS {
            let whole = httparse_head(head);
            for cut in 0..head.len() {
                let what = format!("{} cut at {cut}", String::from_utf8_lossy(head));
                match (ours(&head[..cut]), httparse_head(&head[..cut])) {
                    (a, b) if a == b => {}
                    // Where httparse saw the error early, this one may wait for the line's
                    // end; where the error is in what frames the body (two lengths), this one
                    // sees it at its line, before the head's end. The whole head is refused
                    // all the same.
                    (Ok(None), Err(())) | (Err(()), Ok(None)) => {
                        assert_eq!(whole, Err(()), "{what}")
                    }
                    (a, b) => panic!("{what}: {a:?}, httparse {b:?}"),
                }
            }
        }
    }

    #[test]
    fn too_many_headers_are_refused() {
        let mut head = b"HTTP/1.1 200 OK\r\n".to_vec();
        for i in 0..MAX_HEADERS {
            head.extend_from_slice(format!("X-{i}: y\r\n").as_bytes());
        }
        let mut more = head.clone();
        head.extend_from_slice(b"\r\n");
        assert!(ours(&head).unwrap().is_some());
        more.extend_from_slice(b"X-last: y\r\n\r\n");
        assert!(parse_head(&more, false)
            .unwrap_err()
            .to_string()
            .contains("too many headers"));
    }

    #[test]
    fn what_frames_the_body() {
        let (h, n) = parse_head(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n", true)
            .unwrap()
            .unwrap();
        assert!(matches!(h.framing, Framing::Length(0)) && n == 38 && !h.close);
        let (h, _) = parse_head(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n", false)
            .unwrap()
            .unwrap();
        assert!(matches!(h.framing, Framing::UntilClose) && h.close);
    }
}
