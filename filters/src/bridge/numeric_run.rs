//! The numeric fast path of the bridge's element reader and writer: a leaf array of plain
//! number tokens (`[0.1, -2, 3e4]`, the whole of a typical tensor) is scanned in one tight
//! loop instead of one generic reader call, recursion and slot check per element, and runs of
//! tokens that sit in the body one after another with single commas between them are written
//! back as one slice instead of token by token.
//!
//! Both halves only ever agree with the generic path: the scanner accepts a strict subset of
//! what [`Reader::number`](crate::translate::json_in::reader::Reader) accepts (the JSON
//! number grammar, without `NaN`/`Infinity`) and gives up on anything else, after which the
//! generic reader reads the array again and produces exactly what it always did, errors
//! included; the writer copies a run only when the tokens are provably adjacent in the body,
//! so the bytes are the tokens joined by commas, as the per-token writer would emit them.

use super::nested::{Elem, write_elem};

/// Scans the array whose `[` is at `buf[at]` when every element is a number token of the
/// strict JSON grammar (whitespace allowed around them), appending each to `out`. Returns the
/// element count and the index just past the `]`, or `None` (the array is empty, holds
/// anything else, or is malformed); then whatever was appended is the caller's to drop.
pub(crate) fn scan_leaf<'a>(
    buf: &'a [u8],
    at: usize,
    out: &mut Vec<Elem<'a>>,
) -> Option<(usize, usize)> {
    if buf.get(at) != Some(&b'[') {
        return None;
    }
    let first = skip_ws(buf, at + 1);
    if !matches!(buf.get(first), Some(b'-' | b'0'..=b'9')) {
        return None;
    }
    // An array of numbers ends at its first `]` (anything else inside fails the scan below),
    // so the text up to it is checked as UTF-8 once, not token by token.
    let close = first + memchr::memchr(b']', buf.get(first..)?)?;
    let text = std::str::from_utf8(buf.get(first..close)?).ok()?;
    let b = text.as_bytes();
    let mut i = 0;
    let mut n = 0usize;
    loop {
        let (end, int) = token(b, i)?;
        out.push(Elem::Num {
            text: text.get(i..end)?,
            int,
        });
        n += 1;
        // Compact arrays put the separator right after the token: test that before looping
        // over whitespace.
        i = match b.get(end) {
            Some(b',') => end,
            _ => skip_ws(b, end),
        };
        match b.get(i) {
            Some(b',') => i = skip_ws(b, i + 1),
            // The `]`.
            None => return Some((n, close + 1)),
            Some(_) => return None,
        }
    }
}

#[inline(always)]
fn skip_ws(buf: &[u8], mut i: usize) -> usize {
    while let Some(b' ' | b'\n' | b'\r' | b'\t') = buf.get(i) {
        i += 1;
    }
    i
}

#[inline(always)]
fn digits(buf: &[u8], mut i: usize) -> usize {
    while buf.get(i).is_some_and(u8::is_ascii_digit) {
        i += 1;
    }
    i
}

/// The number token at `buf[start..]` by `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`, as
/// (end, whether it has neither fraction nor exponent); `None` for anything else.
#[inline(always)]
fn token(buf: &[u8], start: usize) -> Option<(usize, bool)> {
    let int_start = start + usize::from(buf.get(start) == Some(&b'-'));
    let mut i = digits(buf, int_start);
    let n = i - int_start;
    if n == 0 || (n > 1 && buf.get(int_start) == Some(&b'0')) {
        return None;
    }
    let mut int = true;
    if buf.get(i) == Some(&b'.') {
        let from = i + 1;
        i = digits(buf, from);
        if i == from {
            return None;
        }
        int = false;
    }
    if let Some(b'e' | b'E') = buf.get(i) {
        let mut from = i + 1;
        if let Some(b'+' | b'-') = buf.get(from) {
            from += 1;
        }
        i = digits(buf, from);
        if i == from {
            return None;
        }
        int = false;
    }
    Some((i, int))
}

/// Where `text` lies in `src`, if it is a slice of it.
#[inline(always)]
fn offset(src: &[u8], text: &str) -> Option<usize> {
    let at = text.as_ptr().addr().checked_sub(src.as_ptr().addr())?;
    (at.checked_add(text.len())? <= src.len()).then_some(at)
}

/// Writes `elems` comma-separated (no brackets). Number tokens that are slices of `src`
/// (the body they were read from) lying one after another with a single `,` between them
/// are copied as one slice; everything else element by element. With an empty `src` this is
/// the per-element writer.
pub(crate) fn write_list(
    out: &mut Vec<u8>,
    elems: &[Elem<'_>],
    src: &[u8],
    b64: bool,
) -> Result<(), String> {
    let mut i = 0;
    while let Some(e) = elems.get(i) {
        if i > 0 {
            out.push(b',');
        }
        i += 1;
        let run = match e {
            Elem::Num { text, .. } => offset(src, text).map(|at| (at, at + text.len())),
            _ => None,
        };
        let Some((from, mut to)) = run else {
            write_elem(out, e, b64)?;
            continue;
        };
        let first = i - 1;
        // Extend while the next token starts just past a comma that ends this one: then the
        // body's bytes from..to are exactly the tokens joined by commas.
        while let Some(Elem::Num { text, .. }) = elems.get(i) {
            if src.get(to) != Some(&b',') || offset(src, text) != Some(to + 1) {
                break;
            }
            to += 1 + text.len();
            i += 1;
        }
        match src.get(from..to) {
            Some(run) => out.extend_from_slice(run),
            // Not reached (every offset was checked against `src`); kept element-wise.
            None => {
                for (k, e) in elems.get(first..i).unwrap_or_default().iter().enumerate() {
                    if k > 0 {
                        out.push(b',');
                    }
                    write_elem(out, e, b64)?;
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
