//! A tap's filter, parsed from the `/tap` query string: `route`, `model`, `authority` (exact,
//! repeatable: any of the values), `status` (`503`, `5xx`, `500-504`, comma-separated and
//! repeatable) and `format` (`json` or `text`). Anything else is refused, naming the
//! parameter, so a typo never silently taps everything.

use super::TapFormat;

/// Which records a tap wants; an empty dimension admits everything.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct TapFilter {
    routes: Vec<Box<str>>,
    models: Vec<Box<str>>,
    authorities: Vec<Box<str>>,
    statuses: Vec<StatusRange>,
}

/// The facts a filter looks at, all known once the response headers are ready.
#[derive(Debug, Clone, Copy, Default)]
pub struct Facts<'a> {
    /// Matched route.
    pub route: Option<&'a str>,
    /// Model the request named.
    pub model: Option<&'a str>,
    /// HTTP status; `None` when the caller went away before the answer.
    pub status: Option<u16>,
    /// `:authority` or `Host`.
    pub authority: Option<&'a str>,
}

/// An inclusive range of HTTP status codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct StatusRange {
    lo: u16,
    hi: u16,
}

/// What a `/tap` query asks for.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct TapQuery {
    /// The filter.
    pub filter: TapFilter,
    /// The line format.
    pub format: TapFormat,
}

/// Why a `/tap` query was refused; each names the parameter at fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TapQueryError {
    /// Not one of the known parameters.
    #[error("unknown filter parameter {0:?} (known: route, model, status, authority, format)")]
    Unknown(String),
    /// A parameter without a value.
    #[error("filter parameter {0:?} has no value")]
    Empty(String),
    /// A status item that is not `NNN`, `Nxx` or `NNN-MMM` within 100..=599.
    #[error("status {0:?} is not a status filter (expected e.g. 503, 5xx, 500-504)")]
    Status(String),
    /// A format other than `json` or `text`.
    #[error("format {0:?} is not json or text")]
    Format(String),
    /// A parameter whose percent-encoding is broken or not UTF-8.
    #[error("parameter {0:?} is not valid percent-encoded UTF-8")]
    Encoding(String),
}

// === impl TapFilter ===

impl TapFilter {
    /// Whether a request with these facts passes every dimension the filter sets.
    pub fn admits(&self, f: &Facts<'_>) -> bool {
        fn any(values: &[Box<str>], fact: Option<&str>, eq: fn(&str, &str) -> bool) -> bool {
            values.is_empty() || fact.is_some_and(|v| values.iter().any(|w| eq(w, v)))
        }
        any(&self.routes, f.route, |a, b| a == b)
            && any(&self.models, f.model, |a, b| a == b)
            // Host names compare without regard to case (RFC 9110 §4.2.3).
            && any(&self.authorities, f.authority, str::eq_ignore_ascii_case)
            && (self.statuses.is_empty()
                || f.status
                    .is_some_and(|s| self.statuses.iter().any(|r| (r.lo..=r.hi).contains(&s))))
    }

    fn add_statuses(&mut self, value: &str) -> Result<(), TapQueryError> {
        for item in value.split(',').map(str::trim) {
            let range = parse_status(item).ok_or_else(|| TapQueryError::Status(item.into()))?;
            self.statuses.push(range);
        }
        Ok(())
    }
}

// === impl TapQuery ===

impl TapQuery {
    /// Parses a `/tap` query string (`None`: no query, tap everything as JSON).
    pub fn parse(query: Option<&str>) -> Result<Self, TapQueryError> {
        let mut out = TapQuery::default();
        for pair in query
            .unwrap_or_default()
            .split('&')
            .filter(|p| !p.is_empty())
        {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            let key = decode(key).ok_or_else(|| TapQueryError::Encoding(key.into()))?;
            let value = decode(value).ok_or_else(|| TapQueryError::Encoding(key.clone()))?;
            let known = matches!(
                key.as_str(),
                "route" | "model" | "status" | "authority" | "format"
            );
            if !known {
                return Err(TapQueryError::Unknown(key));
            }
            if value.is_empty() {
                return Err(TapQueryError::Empty(key));
            }
            let f = &mut out.filter;
            match key.as_str() {
                "route" => f.routes.push(value.into()),
                "model" => f.models.push(value.into()),
                "authority" => f.authorities.push(value.into()),
                "status" => f.add_statuses(&value)?,
                _ => {
                    out.format = match value.as_str() {
                        "json" => TapFormat::Json,
                        "text" => TapFormat::Text,
                        _ => return Err(TapQueryError::Format(value)),
                    }
                }
            }
        }
        Ok(out)
    }
}

// === impl TapQueryError ===

impl TapQueryError {
    /// The parameter at fault, for the 400 answer's `parameter` field.
    pub fn parameter(&self) -> &str {
        match self {
            TapQueryError::Unknown(p) | TapQueryError::Empty(p) | TapQueryError::Encoding(p) => p,
            TapQueryError::Status(_) => "status",
            TapQueryError::Format(_) => "format",
        }
    }
}

/// `503`, `5xx` (or `5XX`), `500-504`.
fn parse_status(item: &str) -> Option<StatusRange> {
    let code = |s: &str| {
        s.parse::<u16>()
            .ok()
            .filter(|c| (100..=599).contains(c) && s.len() == 3)
    };
    let range = if let Some(class) = item.strip_suffix("xx").or_else(|| item.strip_suffix("XX")) {
        let digit = match class.as_bytes() {
            [d @ b'1'..=b'5'] => u16::from(d - b'0'),
            _ => return None,
        };
        StatusRange {
            lo: digit * 100,
            hi: digit * 100 + 99,
        }
    } else if let Some((lo, hi)) = item.split_once('-') {
        let (lo, hi) = (code(lo.trim())?, code(hi.trim())?);
        (lo <= hi).then_some(StatusRange { lo, hi })?
    } else {
        let c = code(item)?;
        StatusRange { lo: c, hi: c }
    };
    Some(range)
}

/// `application/x-www-form-urlencoded` decoding: `+` is a space, `%HH` a byte; `None` when
/// an escape is broken or the bytes are not UTF-8.
fn decode(s: &str) -> Option<String> {
    if !s.bytes().any(|b| b == b'%' || b == b'+') {
        return Some(s.to_owned());
    }
    let mut out = Vec::with_capacity(s.len());
    let mut bytes = s.bytes();
    while let Some(b) = bytes.next() {
        match b {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = |b: Option<u8>| (b? as char).to_digit(16);
                let (hi, lo) = (hex(bytes.next())?, hex(bytes.next())?);
                out.push(u8::try_from(hi * 16 + lo).ok()?);
            }
            _ => out.push(b),
        }
    }
    String::from_utf8(out).ok()
}
