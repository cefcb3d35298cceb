//! The spans Phoenix's REST API returns (`GET /v1/projects/{project}/spans`), typed.
//!
//! Shape as Phoenix 20.26.1 answers (found by sending real OTLP spans to it):
//! `{"id", "name", "context": {"trace_id", "span_id"}, "span_kind", "parent_id",
//! "start_time", "end_time", "status_code", "status_message", "attributes", "events"}` with
//! hex ids, ISO 8601 times with microseconds and an offset, and `status_code` one of
//! `UNSET`/`OK`/`ERROR`. `span_kind` is OpenInference's (almost always `UNKNOWN`), not the
//! OTel SpanKind, so it is left out; resource attributes are not returned at all.

use serde::Deserialize;
use serde_json::Value;

/// One span as Phoenix stored it.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(try_from = "wire::Span")]
pub struct Span {
    /// The span name.
    pub name: String,
    /// 32 lowercase hex digits.
    pub trace_id: String,
    /// 16 lowercase hex digits.
    pub span_id: String,
    /// The parent's `span_id`; `None` for a root span.
    pub parent_id: Option<String>,
    /// As Phoenix printed it, e.g. `2026-12-05T01:54:41.713007+00:00`.
    pub start_time: String,
    /// As Phoenix printed it.
    pub end_time: String,
    /// The OTel status code.
    pub status_code: StatusCode,
    /// The status description (empty unless the sender set one with `ERROR`).
    pub status_message: String,
    /// The span attributes: a JSON object, read through [`Span::attr`].
    pub attributes: Value,
    /// Events in the order recorded.
    pub events: Vec<SpanEvent>,
    start_micros: i64,
    end_micros: i64,
}

/// An OTel span status code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum StatusCode {
    /// No status set.
    Unset,
    /// Explicitly successful.
    Ok,
    /// Failed.
    Error,
}

/// A span event.
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct SpanEvent {
    /// The event name (`exception` for a recorded exception).
    pub name: String,
    /// When it happened, as Phoenix printed it.
    pub timestamp: String,
    /// The event attributes, read through [`SpanEvent::attr`].
    #[serde(default)]
    pub attributes: Value,
}

mod wire {
    use serde::Deserialize;
    use serde_json::Value;

    #[derive(Deserialize)]
    pub(super) struct Span {
        pub(super) name: String,
        pub(super) context: Context,
        pub(super) parent_id: Option<String>,
        pub(super) start_time: String,
        pub(super) end_time: String,
        pub(super) status_code: super::StatusCode,
        #[serde(default)]
        pub(super) status_message: Option<String>,
        #[serde(default)]
        pub(super) attributes: Value,
        #[serde(default)]
        pub(super) events: Vec<super::SpanEvent>,
    }

    #[derive(Deserialize)]
    pub(super) struct Context {
        pub(super) trace_id: String,
        pub(super) span_id: String,
    }
}

// === impl Span ===

impl TryFrom<wire::Span> for Span {
    type Error = String;

    fn try_from(w: wire::Span) -> Result<Span, String> {
        let time =
            |s: &str| unix_micros(s).ok_or_else(|| format!("span {:?}: bad time {s:?}", w.name));
        let start_micros = time(&w.start_time)?;
        let end_micros = time(&w.end_time)?;
        Ok(Span {
            start_micros,
            end_micros,
            name: w.name,
            trace_id: w.context.trace_id,
            span_id: w.context.span_id,
            parent_id: w.parent_id,
            start_time: w.start_time,
            end_time: w.end_time,
            status_code: w.status_code,
            status_message: w.status_message.unwrap_or_default(),
            attributes: w.attributes,
            events: w.events,
        })
    }
}

impl Span {
    /// The attribute `key` (dotted OTel name), whether Phoenix returned it flat
    /// (`{"http.request.method": …}`) or nested (`{"http": {"request": {"method": …}}}`).
    pub fn attr(&self, key: &str) -> Option<&Value> {
        lookup(&self.attributes, key)
    }

    /// The attribute `key` if it is a string.
    pub fn attr_str(&self, key: &str) -> Option<&str> {
        self.attr(key).and_then(Value::as_str)
    }

    /// The attribute `key` if it is an integer.
    pub fn attr_i64(&self, key: &str) -> Option<i64> {
        self.attr(key).and_then(Value::as_i64)
    }

    /// The first event called `name`.
    pub fn event(&self, name: &str) -> Option<&SpanEvent> {
        self.events.iter().find(|e| e.name == name)
    }

    /// True when the span has no parent.
    pub fn is_root(&self) -> bool {
        self.parent_id.is_none()
    }

    /// Start, in microseconds since the Unix epoch.
    pub fn start_unix_micros(&self) -> i64 {
        self.start_micros
    }

    /// End, in microseconds since the Unix epoch.
    pub fn end_unix_micros(&self) -> i64 {
        self.end_micros
    }

    /// End minus start, in microseconds.
    pub fn duration_micros(&self) -> i64 {
        self.end_micros - self.start_micros
    }
}

// === impl SpanEvent ===

impl SpanEvent {
    /// The attribute `key`, flat or nested (see [`Span::attr`]).
    pub fn attr(&self, key: &str) -> Option<&Value> {
        lookup(&self.attributes, key)
    }

    /// When it happened, in microseconds since the Unix epoch (`None` if unparsable).
    pub fn unix_micros(&self) -> Option<i64> {
        unix_micros(&self.timestamp)
    }
}

/// Phoenix stores attributes nested and flattens them on the way out in some answers and not
/// others (and a sender may legitimately use both `a.b` and `a.b.c`), so every split of the
/// dotted key is tried, the longest flat prefix first. Numeric segments index arrays, as in
/// `llm.input_messages.0.message.role`.
fn lookup<'a>(value: &'a Value, key: &str) -> Option<&'a Value> {
    if let Some(flat) = lookup_one(value, key) {
        return Some(flat);
    }
    key.rmatch_indices('.').find_map(|(dot, _)| {
        let (head, rest) = key.split_at(dot);
        let inner = lookup_one(value, head)?;
        lookup(inner, rest.strip_prefix('.')?)
    })
}

fn lookup_one<'a>(value: &'a Value, segment: &str) -> Option<&'a Value> {
    match value {
        Value::Object(map) => map.get(segment),
        Value::Array(items) => segment.parse::<usize>().ok().and_then(|i| items.get(i)),
        _ => None,
    }
}

/// `YYYY-MM-DD[T ]HH:MM:SS[.fraction](Z|±HH:MM)` to microseconds since the epoch. Python's
/// `isoformat()` leaves out the fraction when it is zero, so it is optional.
pub(crate) fn unix_micros(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    let num = |from: usize, len: usize| -> Option<i64> {
        let digits = s.get(from..from + len)?;
        digits
            .bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| digits.parse().ok())?
    };
    let sep = |at: usize, allowed: &[u8]| b.get(at).is_some_and(|c| allowed.contains(c));
    if !(sep(4, b"-") && sep(7, b"-") && sep(10, b"Tt ") && sep(13, b":") && sep(16, b":")) {
        return None;
    }
    let (year, month, day) = (num(0, 4)?, num(5, 2)?, num(8, 2)?);
    let (hour, minute, second) = (num(11, 2)?, num(14, 2)?, num(17, 2)?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || minute > 59 {
        return None;
    }
    let mut rest = s.get(19..)?;
    let mut micros = 0;
    if let Some(frac) = rest.strip_prefix('.') {
        let len = frac.bytes().take_while(u8::is_ascii_digit).count();
        if len == 0 {
            return None;
        }
        // Beyond microseconds (nanosecond senders) is truncated.
        let digits = frac.get(..len.min(6))?;
        micros = digits.parse::<i64>().ok()? * 10_i64.pow(6 - u32::try_from(digits.len()).ok()?);
        rest = frac.get(len..)?;
    }
    let offset_secs = match rest {
        "Z" | "z" => 0,
        _ => {
            let sign = match rest.as_bytes().first()? {
                b'+' => 1,
                b'-' => -1,
                _ => return None,
            };
            if rest.len() != 6 || rest.as_bytes().get(3) != Some(&b':') {
                return None;
            }
            let hh: i64 = rest.get(1..3)?.parse().ok()?;
            let mm: i64 = rest.get(4..6)?.parse().ok()?;
            sign * (hh * 3600 + mm * 60)
        }
    };
    let days = days_from_civil(year, month, day);
    let secs = days * 86_400 + hour * 3600 + minute * 60 + second - offset_secs;
    Some(secs * 1_000_000 + micros)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests;
