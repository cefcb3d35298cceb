//! Structural equality of two JSON documents: object keys in any order, numbers by value.

use serde_json::Value;

use super::{Difference, Verdict};

pub(super) fn compare(primary: &[u8], candidate: &[u8]) -> Verdict {
    let parse = |side: &str, b: &[u8]| {
        serde_json::from_slice::<Value>(b).map_err(|e| format!("{side} answer is not JSON: {e}"))
    };
    let (p, c) = match (parse("primary", primary), parse("candidate", candidate)) {
        (Ok(p), Ok(c)) => (p, c),
        (Err(e), _) | (_, Err(e)) => return Verdict::Error(e),
    };
    let mut walk = Walk::default();
    walk.value(&mut String::new(), &p, &c);
    match walk.first {
        None => Verdict::Match,
        Some(first) => Verdict::Mismatch {
            first,
            count: walk.count,
        },
    }
}

#[derive(Default)]
struct Walk {
    first: Option<Difference>,
    count: usize,
}

impl Walk {
    fn differ(&mut self, pointer: &str, p: Option<&Value>, c: Option<&Value>) {
        self.count += 1;
        if self.first.is_none() {
            let text = |v: Option<&Value>| v.map_or_else(|| "(absent)".to_owned(), short);
            self.first = Some(Difference {
                tensor: if pointer.is_empty() {
                    "/".to_owned()
                } else {
                    pointer.to_owned()
                },
                index: None,
                primary: text(p),
                candidate: text(c),
            });
        }
    }

    /// Walks `p` and `c` at JSON pointer `at` (extended and restored in place).
    fn value(&mut self, at: &mut String, p: &Value, c: &Value) {
        match (p, c) {
            (Value::Object(po), Value::Object(co)) => {
                for (k, pv) in po {
                    let len = at.len();
                    at.push('/');
                    at.push_str(&k.replace('~', "~0").replace('/', "~1"));
                    match co.get(k) {
                        Some(cv) => self.value(at, pv, cv),
                        None => self.differ(at, Some(pv), None),
                    }
                    at.truncate(len);
                }
                for (k, cv) in co {
                    if !po.contains_key(k) {
                        let pointer = format!("{at}/{}", k.replace('~', "~0").replace('/', "~1"));
                        self.differ(&pointer, None, Some(cv));
                    }
                }
            }
            (Value::Array(pa), Value::Array(ca)) if pa.len() == ca.len() => {
                for (i, (pv, cv)) in pa.iter().zip(ca).enumerate() {
                    let len = at.len();
                    at.push('/');
                    at.push_str(&i.to_string());
                    self.value(at, pv, cv);
                    at.truncate(len);
                }
            }
            (Value::Number(a), Value::Number(b)) => {
                let same = match (a.as_i64(), b.as_i64(), a.as_u64(), b.as_u64()) {
                    (Some(x), Some(y), _, _) => x == y,
                    (_, _, Some(x), Some(y)) => x == y,
                    _ => a.as_f64() == b.as_f64(),
                };
                if !same {
                    self.differ(at, Some(p), Some(c));
                }
            }
            _ if p == c => {}
            _ => self.differ(at, Some(p), Some(c)),
        }
    }
}

/// A value as text, at most 64 characters.
fn short(v: &Value) -> String {
    let text = v.to_string();
    match text.char_indices().nth(64) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text,
    }
}
