//! A limit's key: the parts that tell callers apart, read from the request.

use std::fmt::Write;

use http::{HeaderName, Request};

use crate::connection::Connection;
use crate::model_name::ModelRef;

/// One part of a limit's key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyPart {
    /// The model name (and `@version` when given) the request names; `""` when none.
    Model,
    /// The caller: its verified SPIFFE ID, else its IP address.
    Client,
    /// A request header's value; a missing header is `""` (its own key, never a bypass).
    Header(HeaderName),
    /// The route's name.
    Route,
}

/// Parts longer than this are replaced by a hash, so a client sending huge header values
/// cannot make each key (and the key table) large.
const MAX_PART: usize = 128;

/// Between parts: a byte no header value or SPIFFE ID contains.
const SEPARATOR: char = '\u{1f}';

impl KeyPart {
    /// This part's value for `req` on `route`, appended to `out`.
    pub fn append<B>(&self, route: &str, req: &Request<B>, out: &mut String) {
        match self {
            KeyPart::Model => {
                if let Some(m) = req.extensions().get::<ModelRef>() {
                    push_bounded(out, m.name.as_bytes());
                    if let Some(v) = &m.version {
                        out.push('@');
                        push_bounded(out, v.as_bytes());
                    }
                }
            }
            KeyPart::Client => {
                if let Some(c) = Connection::of(req) {
                    match &c.identity {
                        Some(id) => push_bounded(out, id.0.as_bytes()),
                        None => out.push_str(c.client.ip()),
                    }
                }
            }
            KeyPart::Header(name) => {
                if let Some(v) = req.headers().get(name) {
                    push_bounded(out, v.as_bytes());
                }
            }
            KeyPart::Route => out.push_str(route),
        }
    }

    /// This part's value alone (override matching).
    pub fn value<B>(&self, route: &str, req: &Request<B>) -> String {
        let mut out = String::new();
        self.append(route, req, &mut out);
        out
    }
}

/// The key of `parts` for `req`.
pub fn key_of<B>(parts: &[KeyPart], route: &str, req: &Request<B>) -> String {
    let mut out = String::new();
    for (i, part) in parts.iter().enumerate() {
        if i > 0 {
            out.push(SEPARATOR);
        }
        part.append(route, req, &mut out);
    }
    out
}

fn push_bounded(out: &mut String, bytes: &[u8]) {
    if bytes.len() <= MAX_PART {
        out.push_str(&String::from_utf8_lossy(bytes));
    } else {
        // FNV-1a: stable across processes (global limits share keys), cheap, and collisions
        // only merge two abusive callers' buckets.
        let hash = bytes.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
        });
        let _ = write!(out, "#{hash:016x}");
    }
}
