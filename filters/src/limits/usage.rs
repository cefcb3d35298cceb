//! Token accounting for OpenAI-compatible answers: the `usage` object an answer reports
//! (`prompt_tokens`, `completion_tokens`, `total_tokens`), read as the body passes. A JSON
//! answer carries it at its end; a streamed one (`stream: true`, SSE) in its last chunk before
//! `data: [DONE]`. Either way it is near the end, so only a bounded tail of the body is kept:
//! nothing is buffered or delayed on the way to the caller.

use bytes::{Bytes, BytesMut};

/// How much of an answer's end is kept to find `usage` in.
pub const TAIL: usize = 16 * 1024;

/// Which figure of `usage` a budget is charged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Charge {
    /// `total_tokens` (or prompt + completion when absent).
    Total,
    /// `prompt_tokens`.
    Prompt,
    /// `completion_tokens`.
    Completion,
}

/// Usage figures.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// `prompt_tokens`.
    pub prompt: u64,
    /// `completion_tokens`.
    pub completion: u64,
    /// `total_tokens`.
    pub total: u64,
}

impl Usage {
    /// The figure `charge` names.
    pub fn charged(&self, charge: Charge) -> u64 {
        match charge {
            Charge::Total if self.total > 0 => self.total,
            Charge::Total => self.prompt.saturating_add(self.completion),
            Charge::Prompt => self.prompt,
            Charge::Completion => self.completion,
        }
    }
}

/// The last [`TAIL`] bytes of a body.
#[derive(Debug, Default)]
pub struct Tail {
    buf: BytesMut,
}

impl Tail {
    /// Keeps the end of `chunk`.
    pub fn push(&mut self, chunk: &Bytes) {
        if chunk.len() >= TAIL {
            self.buf.clear();
            self.buf.extend_from_slice(&chunk[chunk.len() - TAIL..]);
            return;
        }
        self.buf.extend_from_slice(chunk);
        if self.buf.len() > TAIL {
            let excess = self.buf.len() - TAIL;
            let _ = self.buf.split_to(excess);
        }
    }

    /// The last `usage` object in the kept bytes, if any.
    pub fn usage(&self) -> Option<Usage> {
        find_usage(&self.buf)
    }
}

/// The last `"usage": {...}` in `bytes` whose object parses.
pub fn find_usage(bytes: &[u8]) -> Option<Usage> {
    let needle = b"\"usage\"";
    let mut end = bytes.len();
    while let Some(at) = memrchr_slice(&bytes[..end], needle) {
        let rest = &bytes[at + needle.len()..];
        let rest = skip_ws(rest);
        if let Some(rest) = rest.strip_prefix(b":") {
            let rest = skip_ws(rest);
            let mut values =
                serde_json::Deserializer::from_slice(rest).into_iter::<serde_json::Value>();
            if let Some(Ok(serde_json::Value::Object(o))) = values.next() {
                let n = |k: &str| o.get(k).and_then(serde_json::Value::as_u64).unwrap_or(0);
                let usage = Usage {
                    prompt: n("prompt_tokens"),
                    completion: n("completion_tokens"),
                    total: n("total_tokens"),
                };
                if usage != Usage::default() {
                    return Some(usage);
                }
            }
        }
        end = at;
    }
    None
}

fn skip_ws(b: &[u8]) -> &[u8] {
    let n = b.iter().take_while(|c| c.is_ascii_whitespace()).count();
    &b[n..]
}

fn memrchr_slice(hay: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.len() > hay.len() {
        return None;
    }
    (0..=hay.len() - needle.len())
        .rev()
        .find(|&i| &hay[i..i + needle.len()] == needle)
}
