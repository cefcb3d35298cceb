//! A byte cursor over one JSON document: just what the OIP infer parser needs (objects,
//! arrays, strings, number tokens, literals, skipping), with two departures from strict JSON
//! that Triton's REST makes: the tokens `NaN`, `Infinity` and `-Infinity` are numbers.
//!
//! Numbers are returned as their token text, so the caller parses each straight into the
//! element type it needs (an FP32 token into `f32` directly, no `f64` detour and no double
//! rounding). Nesting is bounded, so hostile input cannot exhaust the stack. Number tokens
//! are scanned and converted in [`number`].

use std::borrow::Cow;

mod number;

pub(crate) use self::number::Num;

/// Deepest nesting accepted (serde_json's own default is 128).
const MAX_DEPTH: usize = 128;

/// A cursor over a JSON document.
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    depth: usize,
}

// === impl Reader ===

impl<'a> Reader<'a> {
    /// A cursor at the start of `buf`.
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Reader {
            buf,
            pos: 0,
            depth: 0,
        }
    }

    /// `msg` with the current line and column, like serde_json's messages. Cold: kept out of
    /// the per-element loops.
    #[cold]
    #[inline(never)]
    pub(crate) fn error(&self, msg: impl std::fmt::Display) -> String {
        let upto = &self.buf[..self.pos.min(self.buf.len())];
        let line = upto.iter().filter(|&&b| b == b'\n').count() + 1;
        let col = upto.iter().rev().take_while(|&&b| b != b'\n').count() + 1;
        format!("{msg} at line {line} column {col}")
    }

    #[inline]
    fn ws(&mut self) {
        while let Some(b' ' | b'\n' | b'\r' | b'\t') = self.buf.get(self.pos) {
            self.pos += 1;
        }
    }

    /// The next significant byte, without consuming it.
    pub(crate) fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.buf.get(self.pos).copied()
    }

    fn expect(&mut self, b: u8, what: &str) -> Result<(), String> {
        if self.peek() == Some(b) {
            self.pos += 1;
            Ok(())
        } else {
            Err(self.error(format!("expected {what}")))
        }
    }

    /// Succeeds at the end of the document (only whitespace left).
    pub(crate) fn end(&mut self) -> Result<(), String> {
        match self.peek() {
            None => Ok(()),
            Some(_) => Err(self.error("trailing characters")),
        }
    }

    fn enter(&mut self) -> Result<(), String> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.error("recursion limit exceeded"));
        }
        Ok(())
    }

    /// Calls `each` with every key of an object, the cursor on its value; `each` must consume
    /// the value.
    pub(crate) fn object(
        &mut self,
        mut each: impl FnMut(&mut Self, Cow<'a, str>) -> Result<(), String>,
    ) -> Result<(), String> {
        self.expect(b'{', "an object")?;
        self.enter()?;
        if self.peek() == Some(b'}') {
            self.pos += 1;
            self.depth -= 1;
            return Ok(());
        }
        loop {
            if self.peek() != Some(b'"') {
                return Err(self.error("expected a string key"));
            }
            let key = self.string()?;
            self.expect(b':', "`:`")?;
            each(self, key)?;
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    self.depth -= 1;
                    return Ok(());
                }
                _ => return Err(self.error("expected `,` or `}`")),
            }
        }
    }

    /// Calls `each` with the cursor on every element of an array; `each` must consume it.
    pub(crate) fn array(
        &mut self,
        mut each: impl FnMut(&mut Self) -> Result<(), String>,
    ) -> Result<(), String> {
        self.expect(b'[', "an array")?;
        self.enter()?;
        if self.peek() == Some(b']') {
            self.pos += 1;
            self.depth -= 1;
            return Ok(());
        }
        loop {
            each(self)?;
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    self.depth -= 1;
                    return Ok(());
                }
                _ => return Err(self.error("expected `,` or `]`")),
            }
        }
    }

    /// A string; borrowed from the document unless it has escapes.
    pub(crate) fn string(&mut self) -> Result<Cow<'a, str>, String> {
        self.expect(b'"', "a string")?;
        let start = self.pos;
        let mut escaped = false;
        loop {
            match self.buf.get(self.pos) {
                None => return Err(self.error("EOF while parsing a string")),
                Some(b'"') => break,
                Some(b'\\') => {
                    escaped = true;
                    self.pos += 2;
                }
                Some(&c) if c < 0x20 => {
                    return Err(self.error("control character in a string"));
                }
                Some(_) => self.pos += 1,
            }
        }
        let end = self.pos;
        self.pos += 1;
        if escaped {
            // Rare in OIP traffic: let serde_json decode the escapes of this one string.
            let text = self.buf.get(start - 1..end + 1).unwrap_or_default();
            serde_json::from_slice::<String>(text)
                .map(Cow::Owned)
                .map_err(|e| self.error(format!("invalid string: {e}")))
        } else {
            let text = self.buf.get(start..end).unwrap_or_default();
            std::str::from_utf8(text)
                .map(Cow::Borrowed)
                .map_err(|_| self.error("invalid UTF-8 in a string"))
        }
    }

    /// Hands the document and the cursor (on the next significant byte) to `scan`, a
    /// scanner of one whole array kept outside this module (the bridge's numeric fast path);
    /// when it returns `Some((value, end))` the cursor moves to `end`, otherwise nothing is
    /// consumed and the caller reads the value the generic way. Refused where one more level
    /// of nesting would pass the limit, so such input still meets the limit's error.
    pub(crate) fn scan_with<T>(
        &mut self,
        scan: impl FnOnce(&'a [u8], usize) -> Option<(T, usize)>,
    ) -> Option<T> {
        if self.depth >= MAX_DEPTH {
            return None;
        }
        self.ws();
        let (value, end) = scan(self.buf, self.pos)?;
        self.pos = end;
        Some(value)
    }

    /// Consumes `lit` if the document continues with it.
    pub(crate) fn literal(&mut self, lit: &[u8]) -> bool {
        self.ws();
        if self.buf[self.pos.min(self.buf.len())..].starts_with(lit) {
            self.pos += lit.len();
            true
        } else {
            false
        }
    }

    /// Skips one value of any kind.
    pub(crate) fn skip(&mut self) -> Result<(), String> {
        match self.peek() {
            Some(b'{') => self.object(|r, _| r.skip()),
            Some(b'[') => self.array(Self::skip),
            Some(b'"') => self.string().map(drop),
            Some(b't') if self.literal(b"true") => Ok(()),
            Some(b'f') if self.literal(b"false") => Ok(()),
            Some(b'n') if self.literal(b"null") => Ok(()),
            Some(_) => self.number().map(drop),
            None => Err(self.error("EOF while parsing a value")),
        }
    }
}

#[cfg(test)]
mod tests;
