//! A byte cursor over one JSON document: just what the OIP infer parser needs (objects,
//! arrays, strings, number tokens, literals, skipping), with two departures from strict JSON
//! that Triton's REST makes: the tokens `NaN`, `Infinity` and `-Infinity` are numbers.
//!
//! Numbers are returned as their token text, so the caller parses each straight into the
//! element type it needs (an FP32 token into `f32` directly, no `f64` detour and no double
//! rounding). Nesting is bounded, so hostile input cannot exhaust the stack.

use std::borrow::Cow;

/// Deepest nesting accepted (serde_json's own default is 128).
const MAX_DEPTH: usize = 128;

/// A cursor over a JSON document.
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    depth: usize,
}

/// A number token.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Num<'a> {
    /// Digits only, with an optional leading `-`.
    Int(&'a str),
    /// With a fraction or an exponent.
    Float(&'a str),
    /// `NaN`, `Infinity` or `-Infinity`.
    NonFinite(f64),
}

// === impl Num ===

impl Num<'_> {
    /// As `f32`, correctly rounded from the decimal text (std's parser: Eisel-Lemire with a
    /// slow-path fallback, so no precision is lost to a detour through `f64`).
    pub(crate) fn to_f32(self) -> Option<f32> {
        match self {
            Num::Int(t) | Num::Float(t) => t.parse().ok(),
            Num::NonFinite(v) => Some(v as f32),
        }
    }

    /// As `f64`.
    pub(crate) fn to_f64(self) -> Option<f64> {
        match self {
            Num::Int(t) | Num::Float(t) => t.parse().ok(),
            Num::NonFinite(v) => Some(v),
        }
    }
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

    /// `msg` with the current line and column, like serde_json's messages.
    pub(crate) fn error(&self, msg: impl std::fmt::Display) -> String {
        let upto = &self.buf[..self.pos.min(self.buf.len())];
        let line = upto.iter().filter(|&&b| b == b'\n').count() + 1;
        let col = upto.iter().rev().take_while(|&&b| b != b'\n').count() + 1;
        format!("{msg} at line {line} column {col}")
    }

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

    /// A number token (strict JSON grammar, plus `NaN`, `Infinity`, `-Infinity`).
    pub(crate) fn number(&mut self) -> Result<Num<'a>, String> {
        self.ws();
        if self.literal(b"NaN") {
            return Ok(Num::NonFinite(f64::NAN));
        }
        if self.literal(b"Infinity") {
            return Ok(Num::NonFinite(f64::INFINITY));
        }
        if self.literal(b"-Infinity") {
            return Ok(Num::NonFinite(f64::NEG_INFINITY));
        }
        let start = self.pos;
        let b = self.buf;
        let mut i = start;
        if b.get(i) == Some(&b'-') {
            i += 1;
        }
        let digits = |i: &mut usize| {
            let from = *i;
            while b.get(*i).is_some_and(u8::is_ascii_digit) {
                *i += 1;
            }
            *i - from
        };
        let int_start = i;
        let n = digits(&mut i);
        if n == 0 || (n > 1 && b.get(int_start) == Some(&b'0')) {
            self.pos = i;
            return Err(self.error("invalid number"));
        }
        let mut float = false;
        if b.get(i) == Some(&b'.') {
            i += 1;
            float = true;
            if digits(&mut i) == 0 {
                self.pos = i;
                return Err(self.error("invalid number"));
            }
        }
        if let Some(b'e' | b'E') = b.get(i) {
            i += 1;
            float = true;
            if let Some(b'+' | b'-') = b.get(i) {
                i += 1;
            }
            if digits(&mut i) == 0 {
                self.pos = i;
                return Err(self.error("invalid number"));
            }
        }
        self.pos = i;
        // Only ASCII digits, signs, '.', 'e' were accepted above.
        let text = std::str::from_utf8(b.get(start..i).unwrap_or_default()).unwrap_or_default();
        Ok(if float {
            Num::Float(text)
        } else {
            Num::Int(text)
        })
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
mod tests {
    use super::*;

    #[test]
    fn numbers_strings_and_nesting() {
        let mut r = Reader::new(
            br#" [1, -2.5e3, NaN, -Infinity, Infinity, "a\"b", "c", {"k": [true, null]}] "#,
        );
        let mut got = Vec::new();
        r.array(|r| {
            match r.peek() {
                Some(b'"') => got.push(format!("s:{}", r.string()?)),
                Some(b'{') => {
                    r.skip()?;
                    got.push("obj".into());
                }
                _ => got.push(format!("{:?}", r.number()?)),
            }
            Ok(())
        })
        .unwrap();
        r.end().unwrap();
        assert_eq!(
            got,
            [
                "Int(\"1\")",
                "Float(\"-2.5e3\")",
                "NonFinite(NaN)",
                "NonFinite(-inf)",
                "NonFinite(inf)",
                "s:a\"b",
                "s:c",
                "obj"
            ]
        );
    }

    #[test]
    fn malformed_input_is_an_error_not_a_panic() {
        for bad in [
            &b"[01]"[..],
            b"[1.]",
            b"[1e]",
            b"[-]",
            b"[\"abc",
            b"[\"\\",
            b"[1,]",
            b"{\"a\" 1}",
            b"[nul]",
            b"",
        ] {
            let mut r = Reader::new(bad);
            assert!(r.skip().and_then(|()| r.end()).is_err(), "{bad:?}");
        }
        let deep = "[".repeat(10_000);
        assert!(Reader::new(deep.as_bytes()).skip().is_err());
    }

    #[test]
    fn float_tokens_round_correctly_to_f32() {
        // Just above the midpoint of 1.0 and the next f32: via f64 it would round to the
        // midpoint exactly and then, ties to even, down to 1.0.
        let mut r = Reader::new(b"0.1");
        assert_eq!(r.number().unwrap().to_f32(), Some(0.1f32));
        let mut r = Reader::new(b"1.00000005960464477539062500000000001");
        assert_eq!(r.number().unwrap().to_f32(), Some(1.000_000_1_f32));
    }
}
