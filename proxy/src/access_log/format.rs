//! The two line formats, written by hand into the writer's reused buffer: no intermediate
//! `serde_json::Value`, no allocation per line (bench/results/2026-12-05-access-log).
//!
//! JSON: one object a line, keys in the documented order, absent facts left out. Text: the
//! fixed order of docs/observability.md, space-separated, `-` for an absent fact; values that
//! could contain a space, a quote or a control character (model names come from request
//! bodies) have those bytes written as `\xHH`, so a line always splits on spaces.

use std::cell::Cell;
use std::io::Write;
use std::net::SocketAddr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::AccessRecord;

/// Appends `r` as one JSON object and a newline.
pub fn json_line(out: &mut Vec<u8>, r: &AccessRecord) {
    out.extend_from_slice(b"{\"ts\":\"");
    rfc3339(out, r.start);
    out.push(b'"');
    json_str(out, b",\"listener\":", Some(&r.listener));
    json_str(out, b",\"route\":", r.route.as_deref());
    json_str(out, b",\"cluster\":", r.cluster.as_deref());
    if let Some(e) = r.endpoint {
        out.extend_from_slice(b",\"endpoint\":\"");
        addr(out, e);
        out.push(b'"');
    }
    json_str(out, b",\"protocol\":", Some(protocol(r.protocol)));
    json_str(out, b",\"method\":", Some(r.method.as_str()));
    json_str(out, b",\"authority\":", r.authority());
    json_str(out, b",\"path\":", Some(r.path()));
    if let Some((service, method)) = r.grpc_parts() {
        json_str(out, b",\"grpc_service\":", Some(service));
        json_str(out, b",\"grpc_method\":", Some(method));
    }
    if let Some(status) = r.status {
        json_num(out, b",\"status\":", u64::from(status));
    }
    if let Some(code) = r.grpc_status {
        json_num(out, b",\"grpc_status\":", u64::from(code));
    }
    json_str(out, b",\"model\":", r.model.as_deref());
    json_str(out, b",\"model_version\":", r.model_version.as_deref());
    json_str(out, b",\"translate\":", r.translate);
    json_num(out, b",\"bytes_in\":", r.bytes_in);
    json_num(out, b",\"bytes_out\":", r.bytes_out);
    json_ms(out, b",\"duration_ms\":", Some(r.total));
    json_ms(out, b",\"upstream_ms\":", r.upstream_duration);
    json_ms(out, b",\"ferry_ms\":", Some(r.ferry_duration));
    json_ms(out, b",\"ttfb_ms\":", Some(r.duration));
    if r.attempts > 0 {
        json_num(out, b",\"attempts\":", u64::from(r.attempts));
    }
    json_str(out, b",\"failure\":", r.failure);
    json_str(out, b",\"request_id\":", r.request_id());
    if let Some(t) = r.trace_id {
        json_hex(out, b",\"trace_id\":", &t.0);
    }
    if let Some(s) = r.span_id {
        json_hex(out, b",\"span_id\":", &s.0);
    }
    json_str(out, b",\"peer_identity\":", r.peer_identity.as_deref());
    if let Some(l) = r.ratelimit {
        json_num(out, b",\"ratelimit\":{\"limit\":", l.limit);
        json_num(out, b",\"remaining\":", l.remaining);
        json_num(out, b",\"reset_s\":", l.reset_s);
        out.push(b'}');
    }
    if let Some(t) = r.tokens {
        json_num(out, b",\"input_tokens\":", t.input);
        json_num(out, b",\"output_tokens\":", t.output);
    }
    out.extend_from_slice(b"}\n");
}

/// Appends `r` as one text line:
/// `ts listener route "method path protocol" status grpc_status bytes_in bytes_out
/// duration_ms upstream_ms ferry_ms ttfb_ms attempts failure cluster endpoint authority model
/// model_version grpc_service/grpc_method translate request_id trace_id span_id peer_identity
/// ratelimit` (`limit/remaining/reset_s`).
pub fn text_line(out: &mut Vec<u8>, r: &AccessRecord) {
    rfc3339(out, r.start);
    text_field(out, Some(&r.listener));
    text_field(out, r.route.as_deref());
    out.extend_from_slice(b" \"");
    text_value(out, r.method.as_str());
    out.push(b' ');
    text_value(out, r.path());
    out.push(b' ');
    out.extend_from_slice(protocol(r.protocol).as_bytes());
    out.push(b'"');
    out.push(b' ');
    match r.status {
        Some(status) => uint(out, u64::from(status)),
        None => out.push(b'-'),
    }
    out.push(b' ');
    match r.grpc_status {
        Some(code) => uint(out, u64::from(code)),
        None => out.push(b'-'),
    }
    for n in [r.bytes_in, r.bytes_out] {
        out.push(b' ');
        uint(out, n);
    }
    text_ms(out, Some(r.total));
    text_ms(out, r.upstream_duration);
    text_ms(out, Some(r.ferry_duration));
    text_ms(out, Some(r.duration));
    out.push(b' ');
    uint(out, u64::from(r.attempts));
    text_field(out, r.failure);
    text_field(out, r.cluster.as_deref());
    out.push(b' ');
    match r.endpoint {
        Some(e) => addr(out, e),
        None => out.push(b'-'),
    }
    text_field(out, r.authority());
    text_field(out, r.model.as_deref());
    text_field(out, r.model_version.as_deref());
    match r.grpc_parts() {
        Some((service, method)) => {
            out.push(b' ');
            text_value(out, service);
            out.push(b'/');
            text_value(out, method);
        }
        None => out.extend_from_slice(b" -"),
    }
    text_field(out, r.translate);
    text_field(out, r.request_id());
    out.push(b' ');
    match r.trace_id {
        Some(t) => hex(out, &t.0),
        None => out.push(b'-'),
    }
    out.push(b' ');
    match r.span_id {
        Some(s) => hex(out, &s.0),
        None => out.push(b'-'),
    }
    text_field(out, r.peer_identity.as_deref());
    out.push(b' ');
    match r.ratelimit {
        Some(l) => {
            uint(out, l.limit);
            out.push(b'/');
            uint(out, l.remaining);
            out.push(b'/');
            uint(out, l.reset_s);
        }
        None => out.push(b'-'),
    }
    out.push(b'\n');
}

/// `HTTP/1.1`, `HTTP/2`: Envoy's `%PROTOCOL%` spelling.
fn protocol(v: http::Version) -> &'static str {
    match v {
        http::Version::HTTP_09 => "HTTP/0.9",
        http::Version::HTTP_10 => "HTTP/1.0",
        http::Version::HTTP_2 => "HTTP/2",
        http::Version::HTTP_3 => "HTTP/3",
        _ => "HTTP/1.1",
    }
}

fn json_str(out: &mut Vec<u8>, key: &[u8], value: Option<&str>) {
    let Some(value) = value else { return };
    json_key(out, key);
    out.push(b'"');
    // Runs of plain bytes are copied whole; valid UTF-8 (a `&str`) needs no escaping. The
    // common case, nothing to escape, is one branch-free scan (vectorized) and one copy.
    let bytes = value.as_bytes();
    if !bytes.iter().fold(false, |any, &b| any | json_special(b)) {
        out.extend_from_slice(bytes);
        out.push(b'"');
        return;
    }
    let mut plain = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let escaped: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0..0x20 | 0x7f => b"",
            _ => continue,
        };
        out.extend_from_slice(bytes.get(plain..i).unwrap_or_default());
        plain = i + 1;
        if escaped.is_empty() {
            let _ = write!(out, "\\u{b:04x}");
        } else {
            out.extend_from_slice(escaped);
        }
    }
    out.extend_from_slice(bytes.get(plain..).unwrap_or_default());
    out.push(b'"');
}

fn json_special(b: u8) -> bool {
    b < 0x20 || b == b'"' || b == b'\\' || b == 0x7f
}

/// Milliseconds with microsecond precision: `12.345`.
fn json_ms(out: &mut Vec<u8>, key: &[u8], d: Option<Duration>) {
    let Some(d) = d else { return };
    json_key(out, key);
    ms(out, d);
}

fn json_num(out: &mut Vec<u8>, key: &[u8], n: u64) {
    json_key(out, key);
    uint(out, n);
}

fn json_hex(out: &mut Vec<u8>, key: &[u8], bytes: &[u8]) {
    json_key(out, key);
    out.push(b'"');
    hex(out, bytes);
    out.push(b'"');
}

/// `key` is the whole `,"name":` prefix, one copy.
fn json_key(out: &mut Vec<u8>, key: &[u8]) {
    out.extend_from_slice(key);
}

fn text_ms(out: &mut Vec<u8>, d: Option<Duration>) {
    out.push(b' ');
    match d {
        Some(d) => ms(out, d),
        None => out.push(b'-'),
    }
}

fn ms(out: &mut Vec<u8>, d: Duration) {
    let micros = d.as_secs() * 1_000_000 + u64::from(d.subsec_micros());
    uint(out, micros / 1000);
    out.push(b'.');
    padded(out, micros % 1000, 3);
}

/// A decimal integer, without `core::fmt` (the writer formats every line of a busy proxy).
fn uint(out: &mut Vec<u8>, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[i..]);
}

/// `n` in exactly `width` digits, zero-padded (`n` is below 10^width).
fn padded(out: &mut Vec<u8>, mut n: u64, width: usize) {
    let start = out.len();
    out.resize(start + width, b'0');
    for slot in out[start..].iter_mut().rev() {
        *slot = b'0' + (n % 10) as u8;
        n /= 10;
    }
}

fn hex(out: &mut Vec<u8>, bytes: &[u8]) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    for b in bytes {
        out.push(DIGITS[usize::from(b >> 4)]);
        out.push(DIGITS[usize::from(b & 0xf)]);
    }
}

/// `ip:port`; IPv4 written directly, IPv6 through its `Display` (rare on loopback sidecars).
fn addr(out: &mut Vec<u8>, a: SocketAddr) {
    match a {
        SocketAddr::V4(v4) => {
            for (i, octet) in v4.ip().octets().into_iter().enumerate() {
                if i > 0 {
                    out.push(b'.');
                }
                uint(out, u64::from(octet));
            }
            out.push(b':');
            uint(out, u64::from(v4.port()));
        }
        SocketAddr::V6(_) => {
            let _ = write!(out, "{a}");
        }
    }
}

fn text_field(out: &mut Vec<u8>, value: Option<&str>) {
    out.push(b' ');
    match value {
        Some(v) if !v.is_empty() => text_value(out, v),
        _ => out.push(b'-'),
    }
}

fn text_value(out: &mut Vec<u8>, value: &str) {
    let bytes = value.as_bytes();
    if !bytes.iter().fold(false, |any, &b| any | text_special(b)) {
        out.extend_from_slice(bytes);
        return;
    }
    for &b in bytes {
        if text_special(b) {
            let _ = write!(out, "\\x{b:02x}");
        } else {
            out.push(b);
        }
    }
}

fn text_special(b: u8) -> bool {
    b <= b' ' || b == b'"' || b == b'\\' || b == 0x7f
}

thread_local! {
    /// The last second written and its `YYYY-MM-DDTHH:MM:SS` text: consecutive lines mostly
    /// share their second.
    static SECOND: Cell<(u64, [u8; 19])> = const { Cell::new((u64::MAX, [0; 19])) };
}

/// `2026-12-05T07:30:00.123Z` (UTC, milliseconds).
fn rfc3339(out: &mut Vec<u8>, t: SystemTime) {
    let since = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs();
    let (cached, text) = SECOND.get();
    if cached == secs {
        out.extend_from_slice(&text);
    } else {
        let start = out.len();
        seconds(out, secs);
        if let Some(written) = out.get(start..).and_then(|w| <[u8; 19]>::try_from(w).ok()) {
            SECOND.set((secs, written));
        }
    }
    out.push(b'.');
    padded(out, u64::from(since.subsec_millis()), 3);
    out.push(b'Z');
}

/// `YYYY-MM-DDTHH:MM:SS` of `secs` since the epoch.
fn seconds(out: &mut Vec<u8>, secs: u64) {
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(i64::try_from(days).unwrap_or(0));
    padded(out, u64::try_from(y).unwrap_or(0), 4);
    out.push(b'-');
    padded(out, u64::from(m), 2);
    out.push(b'-');
    padded(out, u64::from(d), 2);
    out.push(b'T');
    padded(out, rem / 3600, 2);
    out.push(b':');
    padded(out, rem % 3600 / 60, 2);
    out.push(b':');
    padded(out, rem % 60, 2);
}

/// Days since 1970-01-01 → (year, month, day) in the proleptic Gregorian calendar: count in
/// 400-year eras (146 097 days each) of years that start on 1 March, so the leap day is the
/// last day of a year.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (
        year,
        u32::try_from(month).unwrap_or(1),
        u32::try_from(day).unwrap_or(1),
    )
}

#[cfg(test)]
pub(super) fn date_of(days: i64) -> (i64, u32, u32) {
    civil_from_days(days)
}
