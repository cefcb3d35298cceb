//! The first bytes of an OpenAI-style request's prompt, from a prefix of its JSON body: the
//! `prompt` string (or the strings of a `prompt` array), or the text of `messages` in order (a
//! message's `content` string, or the `text` of its content parts). Consistent hashing on it
//! sends prompts that share a long system prompt to the same replica, whose KV cache holds
//! that prefix.
//!
//! A small scanner, as `model_name`'s: it reads only as far as the wanted bytes, so a large
//! body is never looked at past its prompt, and it says when the prefix it was given ends too
//! early, so the caller reads more (within its own bound) and asks again.

/// What a body prefix says about its prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PromptPrefix {
    /// The first bytes of the prompt text: `n` of them, or all there are when shorter.
    Found(Vec<u8>),
    /// The prefix ends before `n` bytes of prompt text or the end of the JSON object.
    NeedMore,
    /// No prompt text: not a JSON object, no `prompt` or `messages` text, or malformed.
    Absent,
}

/// Why the scan stopped early.
enum Stop {
    /// The bytes ran out.
    Eof,
    /// `n` bytes of text collected.
    Full,
    /// Not JSON of the expected shape.
    Bad,
}

type Step = Result<(), Stop>;

struct Scan<'a> {
    b: &'a [u8],
    i: usize,
    out: Vec<u8>,
    n: usize,
}

/// The first `n` bytes of prompt text in `json`, a prefix of a request body. `complete` says
/// no more bytes will come (the body ended, or the caller's read bound was reached): the text
/// found so far is then the answer rather than [`PromptPrefix::NeedMore`].
pub fn prompt_prefix(json: &[u8], n: usize, complete: bool) -> PromptPrefix {
    let mut s = Scan {
        b: json,
        i: 0,
        out: Vec::with_capacity(n.min(4096)),
        n,
    };
    let found = |mut out: Vec<u8>| {
        out.truncate(n);
        if out.is_empty() {
            PromptPrefix::Absent
        } else {
            PromptPrefix::Found(out)
        }
    };
    match s.object(Scan::top_member) {
        Ok(()) | Err(Stop::Full) => found(s.out),
        Err(Stop::Eof) if complete => found(s.out),
        Err(Stop::Eof) => PromptPrefix::NeedMore,
        Err(Stop::Bad) => PromptPrefix::Absent,
    }
}

// === impl Scan ===

impl<'a> Scan<'a> {
    fn peek(&mut self) -> Result<u8, Stop> {
        while self.b.get(self.i).is_some_and(u8::is_ascii_whitespace) {
            self.i += 1;
        }
        self.b.get(self.i).copied().ok_or(Stop::Eof)
    }

    fn expect(&mut self, c: u8) -> Step {
        if self.peek()? != c {
            return Err(Stop::Bad);
        }
        self.i += 1;
        Ok(())
    }

    /// An object, calling `member` after each key's `:` to consume its value.
    fn object(&mut self, member: fn(&mut Self, &'a [u8]) -> Step) -> Step {
        self.expect(b'{')?;
        if self.peek()? == b'}' {
            self.i += 1;
            return Ok(());
        }
        loop {
            let key = self.raw_string()?;
            self.expect(b':')?;
            member(self, key)?;
            match self.peek()? {
                b',' => self.i += 1,
                b'}' => {
                    self.i += 1;
                    return Ok(());
                }
                _ => return Err(Stop::Bad),
            }
        }
    }

    /// An array, calling `item` to consume each element.
    fn array(&mut self, item: fn(&mut Self) -> Step) -> Step {
        self.expect(b'[')?;
        if self.peek()? == b']' {
            self.i += 1;
            return Ok(());
        }
        loop {
            item(self)?;
            match self.peek()? {
                b',' => self.i += 1,
                b']' => {
                    self.i += 1;
                    return Ok(());
                }
                _ => return Err(Stop::Bad),
            }
        }
    }

    fn top_member(&mut self, key: &[u8]) -> Step {
        match key {
            b"prompt" => match self.peek()? {
                b'"' => self.text(),
                b'[' => self.array(Self::text_or_skip),
                _ => self.skip(),
            },
            b"messages" if self.peek()? == b'[' => self.array(Self::message),
            _ => self.skip(),
        }
    }

    fn message(&mut self) -> Step {
        if self.peek()? != b'{' {
            return self.skip();
        }
        self.object(|s, key| match key {
            b"content" => match s.peek()? {
                b'"' => s.text(),
                b'[' => s.array(Self::content_part),
                _ => s.skip(),
            },
            _ => s.skip(),
        })
    }

    fn content_part(&mut self) -> Step {
        if self.peek()? != b'{' {
            return self.skip();
        }
        self.object(|s, key| match key {
            b"text" => s.text_or_skip(),
            _ => s.skip(),
        })
    }

    fn text_or_skip(&mut self) -> Step {
        if self.peek()? == b'"' {
            self.text()
        } else {
            self.skip()
        }
    }

    /// A string's raw bytes (keys are compared as written; escaped keys match nothing).
    fn raw_string(&mut self) -> Result<&'a [u8], Stop> {
        self.expect(b'"')?;
        let b = self.b;
        let start = self.i;
        loop {
            match b.get(self.i) {
                None => return Err(Stop::Eof),
                Some(b'\\') => self.i += 2,
                Some(b'"') => {
                    self.i += 1;
                    return Ok(&b[start..self.i - 1]);
                }
                Some(_) => self.i += 1,
            }
        }
    }

    /// A string value, decoded and appended to the text; stops once `n` bytes are collected.
    fn text(&mut self) -> Step {
        self.expect(b'"')?;
        loop {
            if self.out.len() >= self.n {
                return Err(Stop::Full);
            }
            let c = *self.b.get(self.i).ok_or(Stop::Eof)?;
            match c {
                b'"' => {
                    self.i += 1;
                    return Ok(());
                }
                b'\\' => self.escape()?,
                _ => {
                    self.out.push(c);
                    self.i += 1;
                }
            }
        }
    }

    /// One escape sequence at `i` (the backslash), decoded into the text.
    fn escape(&mut self) -> Step {
        let c = *self.b.get(self.i + 1).ok_or(Stop::Eof)?;
        let simple = match c {
            b'"' => Some(b'"'),
            b'\\' => Some(b'\\'),
            b'/' => Some(b'/'),
            b'b' => Some(0x08),
            b'f' => Some(0x0c),
            b'n' => Some(b'\n'),
            b'r' => Some(b'\r'),
            b't' => Some(b'\t'),
            b'u' => None,
            _ => return Err(Stop::Bad),
        };
        if let Some(byte) = simple {
            self.out.push(byte);
            self.i += 2;
            return Ok(());
        }
        let unit = self.hex4(self.i + 2)?;
        let (code, used) = if (0xD800..0xDC00).contains(&unit) {
            // A high surrogate pairs with the low one that must follow.
            if self.b.get(self.i + 6..self.i + 8).is_none() {
                return Err(Stop::Eof);
            }
            if self.b.get(self.i + 6..self.i + 8) != Some(b"\\u") {
                return Err(Stop::Bad);
            }
            let low = self.hex4(self.i + 8)?;
            if !(0xDC00..0xE000).contains(&low) {
                return Err(Stop::Bad);
            }
            (0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00), 12)
        } else {
            (unit, 6)
        };
        let ch = char::from_u32(code).ok_or(Stop::Bad)?;
        let mut buf = [0u8; 4];
        self.out
            .extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
        self.i += used;
        Ok(())
    }

    fn hex4(&self, at: usize) -> Result<u32, Stop> {
        let digits = self.b.get(at..at + 4).ok_or(Stop::Eof)?;
        let text = std::str::from_utf8(digits).map_err(|_| Stop::Bad)?;
        u32::from_str_radix(text, 16).map_err(|_| Stop::Bad)
    }

    /// Any value, not collected.
    fn skip(&mut self) -> Step {
        match self.peek()? {
            b'"' => self.raw_string().map(|_| ()),
            b'{' | b'[' => {
                let mut depth = 0usize;
                loop {
                    match *self.b.get(self.i).ok_or(Stop::Eof)? {
                        b'"' => {
                            self.raw_string()?;
                            continue;
                        }
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => {
                            depth -= 1;
                            if depth == 0 {
                                self.i += 1;
                                return Ok(());
                            }
                        }
                        _ => {}
                    }
                    self.i += 1;
                }
            }
            _ => {
                // A number, `true`, `false` or `null`: ends at a delimiter.
                while let Some(&c) = self.b.get(self.i) {
                    if matches!(c, b',' | b'}' | b']') || c.is_ascii_whitespace() {
                        return Ok(());
                    }
                    self.i += 1;
                }
                Err(Stop::Eof)
            }
        }
    }
}

#[cfg(test)]
mod tests;
