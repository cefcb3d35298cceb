//! Request-smuggling guard for HTTP/1.1 connections.
//!
//! hyper resolves ambiguous framing the way RFC 9112 §6.3 allows (Transfer-Encoding wins over
//! Content-Length, equal duplicate Content-Length values are merged) and by the time a request
//! reaches the proxy the evidence is gone. ferry rejects such requests outright, as proxies
//! should, so this wrapper watches the raw bytes of each request head as hyper reads them and
//! records which request (by its position on the connection) was ambiguous; the request handler
//! then answers that request with 400 and closes the connection.
//!
//! It tracks message framing only far enough to find the next head (skipping fixed-length and
//! chunked bodies) and switches itself off for HTTP/2, upgrades and anything it does not
//! understand, leaving hyper's own parser in charge.

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// A head larger than this is hyper's to reject (431); the guard stops looking.
const MAX_HEAD: usize = 256 * 1024;

/// The blank line ending a head. Built once: `memmem::find` builds its searcher on every call,
/// which on a ~100-byte head cost more than the search.
static END_OF_HEAD: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
    std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"\r\n\r\n"));

/// The `\n`-separated lines of a head (the last one possibly empty).
struct LineIter<'a> {
    rest: &'a [u8],
}

impl<'a> Iterator for LineIter<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        if self.rest.is_empty() {
            return None;
        }
        let (line, rest) = match memchr::memchr(b'\n', self.rest) {
            Some(nl) => (&self.rest[..nl], &self.rest[nl + 1..]),
            None => (self.rest, &[][..]),
        };
        self.rest = rest;
        Some(line)
    }
}

/// What the guard learned, shared with the request handler.
#[derive(Debug)]
pub struct Verdicts {
    first_bad: AtomicU64,
    reason: std::sync::Mutex<&'static str>,
    served: AtomicU64,
}

// === impl Verdicts ===

impl Verdicts {
    /// No verdict yet.
    pub fn new() -> Self {
        Self {
            first_bad: AtomicU64::new(u64::MAX),
            reason: std::sync::Mutex::new(""),
            served: AtomicU64::new(0),
        }
    }

    /// Called once per HTTP/1.1 request in order: returns the reason if this request's head
    /// had ambiguous framing.
    pub fn next_request(&self) -> Option<&'static str> {
        let n = self.served.fetch_add(1, Ordering::Relaxed);
        if self.first_bad.load(Ordering::Acquire) == n {
            return self.reason.lock().ok().map(|r| *r);
        }
        None
    }

    fn flag(&self, ordinal: u64, reason: &'static str) {
        if let Ok(mut r) = self.reason.lock() {
            *r = reason;
        }
        let _ =
            self.first_bad
                .compare_exchange(u64::MAX, ordinal, Ordering::AcqRel, Ordering::Acquire);
    }
}

impl Default for Verdicts {
    fn default() -> Self {
        Self::new()
    }
}

#[derive(Debug)]
enum State {
    Head(Vec<u8>),
    Fixed(u64),
    ChunkSize(Vec<u8>),
    ChunkData(u64),
    ChunkEnd(u8),
    Trailers(Vec<u8>),
    Off,
}

/// An I/O wrapper that scans request heads as they are read.
#[derive(Debug)]
pub struct FramingGuard<T> {
    inner: T,
    state: State,
    heads: u64,
    verdicts: std::sync::Arc<Verdicts>,
}

// === impl FramingGuard ===

impl<T> FramingGuard<T> {
    /// Wraps `inner`.
    pub fn new(inner: T, verdicts: std::sync::Arc<Verdicts>) -> Self {
        Self {
            inner,
            state: State::Head(Vec::new()),
            heads: 0,
            verdicts,
        }
    }

    fn scan(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            match &mut self.state {
                State::Off => return,
                State::Head(buf) => {
                    if buf.is_empty() {
                        // Empty lines before a request line are allowed (RFC 9112 §2.2).
                        while bytes.starts_with(b"\r\n") {
                            bytes = &bytes[2..];
                        }
                        if bytes.is_empty() {
                            return;
                        }
                        // The common case: the whole head arrived in this read. Judge it in
                        // place; copying it first was the guard's main per-request cost.
                        if let Some(pos) = END_OF_HEAD.find(bytes) {
                            let (head, rest) = bytes.split_at(pos + 4);
                            bytes = rest;
                            self.state = self.after_head(head);
                            continue;
                        }
                    }
                    let before = buf.len();
                    buf.extend_from_slice(bytes);
                    let from = before.saturating_sub(3);
                    let Some(pos) = END_OF_HEAD.find(&buf[from..]) else {
                        if buf.len() > MAX_HEAD {
                            self.state = State::Off;
                        }
                        return;
                    };
                    let end = from + pos + 4;
                    let mut head = std::mem::take(buf);
                    head.truncate(end);
                    bytes = &bytes[end - before..];
                    self.state = self.after_head(&head);
                }
                State::Fixed(left) => {
                    let take = (*left).min(bytes.len() as u64);
                    *left -= take;
                    bytes = &bytes[take as usize..];
                    if *left == 0 {
                        self.state = State::Head(Vec::new());
                    }
                }
                State::ChunkSize(line) => {
                    let Some(nl) = bytes.iter().position(|&b| b == b'\n') else {
                        line.extend_from_slice(bytes);
                        if line.len() > 4096 {
                            self.state = State::Off;
                        }
                        return;
                    };
                    line.extend_from_slice(&bytes[..nl]);
                    bytes = &bytes[nl + 1..];
                    let text = std::str::from_utf8(line).unwrap_or("");
                    let hex = text.split([';', '\r']).next().unwrap_or("").trim();
                    self.state = match u64::from_str_radix(hex, 16) {
                        Ok(0) => State::Trailers(Vec::new()),
                        Ok(n) => State::ChunkData(n),
                        Err(_) => State::Off,
                    };
                }
                State::ChunkData(left) => {
                    let take = (*left).min(bytes.len() as u64);
                    *left -= take;
                    bytes = &bytes[take as usize..];
                    if *left == 0 {
                        self.state = State::ChunkEnd(2);
                    }
                }
                State::ChunkEnd(left) => {
                    let take = usize::from(*left).min(bytes.len());
                    *left -= take as u8;
                    bytes = &bytes[take..];
                    if *left == 0 {
                        self.state = State::ChunkSize(Vec::new());
                    }
                }
                State::Trailers(line) => {
                    let Some(nl) = bytes.iter().position(|&b| b == b'\n') else {
                        line.extend_from_slice(bytes);
                        if line.len() > MAX_HEAD {
                            self.state = State::Off;
                        }
                        return;
                    };
                    line.extend_from_slice(&bytes[..nl]);
                    bytes = &bytes[nl + 1..];
                    if line.as_slice() == b"\r" || line.is_empty() {
                        self.state = State::Head(Vec::new());
                    } else {
                        line.clear();
                    }
                }
            }
        }
    }

    /// Judges one complete head and returns the framing state for its body.
    ///
    /// Works on bytes: only the three framing headers matter, so lines are split with memchr
    /// and names compared case-insensitively without building strings.
    fn after_head(&mut self, head: &[u8]) -> State {
        let ordinal = self.heads;
        self.heads += 1;
        if head.starts_with(b"PRI * HTTP/2.0") {
            return State::Off;
        }
        // memchr finds each line end a word at a time; `split` on a closure tested every byte.
        let mut lines = LineIter { rest: head };
        let request_line = lines.next().unwrap_or_default();
        let mut content_lengths = 0usize;
        let mut content_length: Option<&[u8]> = None;
        let mut transfer_encoding = false;
        let mut upgrade = request_line.starts_with(b"CONNECT ");
        for line in lines {
            let Some(colon) = memchr::memchr(b':', line) else {
                continue;
            };
            let name = line[..colon].trim_ascii();
            if name.eq_ignore_ascii_case(b"content-length") {
                content_lengths += 1;
                content_length.get_or_insert(line[colon + 1..].trim_ascii());
            } else if name.eq_ignore_ascii_case(b"transfer-encoding") {
                transfer_encoding = true;
            } else if name.eq_ignore_ascii_case(b"upgrade") {
                upgrade = true;
            }
        }
        if transfer_encoding && content_lengths > 0 {
            self.verdicts.flag(
                ordinal,
                "both Content-Length and Transfer-Encoding are present",
            );
            return State::Off;
        }
        if content_lengths > 1 {
            self.verdicts.flag(ordinal, "duplicate Content-Length");
            return State::Off;
        }
        if upgrade {
            return State::Off;
        }
        if transfer_encoding {
            return State::ChunkSize(Vec::new());
        }
        match content_length.map(parse_decimal) {
            Some(Some(0)) | None => State::Head(Vec::new()),
            Some(Some(n)) => State::Fixed(n),
            Some(None) => State::Off,
        }
    }
}

/// A Content-Length value: ASCII digits only (no sign, no spaces), without overflow.
fn parse_decimal(v: &[u8]) -> Option<u64> {
    if v.is_empty() {
        return None;
    }
    v.iter().try_fold(0u64, |n, &b| {
        if !b.is_ascii_digit() {
            return None;
        }
        n.checked_mul(10)?.checked_add(u64::from(b - b'0'))
    })
}

impl<T: AsyncRead + Unpin> AsyncRead for FramingGuard<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = &polled
            && !matches!(self.state, State::Off)
        {
            let this = self.get_mut();
            this.scan(&buf.filled()[before..]);
        }
        polled
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for FramingGuard<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    fn judge(chunks: &[&[u8]]) -> (Arc<Verdicts>, u64) {
        let v = Arc::new(Verdicts::new());
        let mut g = FramingGuard::new((), v.clone());
        for c in chunks {
            g.scan(c);
        }
        let heads = g.heads;
        (v, heads)
    }

    #[test]
    fn flags_the_right_request() {
        let (v, heads) = judge(&[
            b"POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc",
            b"POST /b HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
            b"GET /c HTTP/1.1\r\nHost: x\r\n\r\n",
            b"POST /d HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        ]);
        assert_eq!(heads, 4);
        assert_eq!(v.next_request(), None);
        assert_eq!(v.next_request(), None);
        assert_eq!(v.next_request(), None);
        assert!(v.next_request().is_some());
    }

    #[test]
    fn duplicate_content_length_split_across_reads() {
        let (v, _) = judge(&[
            b"POST / HTTP/1.1\r\nContent-Le",
            b"ngth: 5\r\ncontent-length: 5\r",
            b"\n\r\nhello",
        ]);
        assert_eq!(v.next_request(), Some("duplicate Content-Length"));
    }

    #[test]
    fn h2_and_garbage_switch_off() {
        let (v, _) = judge(&[
            b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
            b"Content-Length: 1\r\nContent-Length: 2\r\n\r\n",
        ]);
        assert_eq!(v.next_request(), None);
        let (v, _) = judge(&[
            b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
            b"GET / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\n",
        ]);
        assert_eq!(v.next_request(), None);
    }
}
