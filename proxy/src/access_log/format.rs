//! The two line formats, written by hand into the writer's reused buffer: no intermediate
//! `serde_json::Value`, no allocation per line (bench/results/2026-12-05-access-log).
//!
//! JSON: one object a line, keys in the documented order, absent facts left out. Text: the
//! fixed order of docs/observability.md, space-separated, `-` for an absent fact; values that
//! could contain a space, a quote or a control character (model names come from request
//! bodies) have those bytes written as `\xHH`, so a line always splits on spaces.

use std::io::Write;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::AccessRecord;

/// Appends `r` as one JSON object and a newline.
pub fn json_line(out: &mut Vec<u8>, r: &AccessRecord) {
    out.extend_from_slice(b"{\"ts\":\"");
    rfc3339(out, r.start);
    out.push(b'"');
    json_str(out, "listener", Some(&r.listener));
    json_str(out, "route", r.route.as_deref());
    json_str(out, "cluster", r.cluster.as_deref());
    if let Some(e) = r.endpoint {
        let _ = write!(out, ",\"endpoint\":\"{e}\"");
    }
    json_str(out, "protocol", Some(protocol(r.protocol)));
    json_str(out, "method", Some(r.method.as_str()));
    json_str(out, "authority", r.authority.as_deref());
    json_str(out, "path", Some(&r.path));
    if let Some((service, method)) = &r.grpc {
        json_str(out, "grpc_service", Some(service));
        json_str(out, "grpc_method", Some(method));
    }
    let _ = write!(out, ",\"status\":{}", r.status);
    if let Some(code) = r.grpc_status {
        let _ = write!(out, ",\"grpc_status\":{code}");
    }
    json_str(out, "model", r.model.as_deref());
    json_str(out, "model_version", r.model_version.as_deref());
    json_str(out, "translate", r.translate);
    let _ = write!(
        out,
        ",\"bytes_in\":{},\"bytes_out\":{}",
        r.bytes_in, r.bytes_out
    );
    json_ms(out, "duration_ms", Some(r.total));
    json_ms(out, "upstream_ms", r.upstream_duration);
    json_ms(out, "ferry_ms", Some(r.ferry_duration));
    json_ms(out, "ttfb_ms", Some(r.duration));
    if r.attempts > 0 {
        let _ = write!(out, ",\"attempts\":{}", r.attempts);
    }
    json_str(out, "failure", r.failure);
    json_str(out, "request_id", r.request_id.as_deref());
    json_str(out, "trace_id", r.trace_id.as_deref());
    json_str(out, "span_id", r.span_id.as_deref());
    json_str(out, "peer_identity", r.peer_identity.as_deref());
    out.extend_from_slice(b"}\n");
}

/// Appends `r` as one text line:
/// `ts listener route "method path protocol" status grpc_status bytes_in bytes_out
/// duration_ms upstream_ms ferry_ms ttfb_ms attempts failure cluster endpoint authority model
/// model_version grpc_service/grpc_method translate request_id trace_id span_id peer_identity`.
pub fn text_line(out: &mut Vec<u8>, r: &AccessRecord) {
    rfc3339(out, r.start);
    text_field(out, Some(&r.listener));
    text_field(out, r.route.as_deref());
    out.extend_from_slice(b" \"");
    text_value(out, r.method.as_str());
    out.push(b' ');
    text_value(out, &r.path);
    out.push(b' ');
    out.extend_from_slice(protocol(r.protocol).as_bytes());
    out.push(b'"');
    let _ = write!(out, " {}", r.status);
    match r.grpc_status {
        Some(code) => {
            let _ = write!(out, " {code}");
        }
        None => out.extend_from_slice(b" -"),
    }
    let _ = write!(out, " {} {}", r.bytes_in, r.bytes_out);
    text_ms(out, Some(r.total));
    text_ms(out, r.upstream_duration);
    text_ms(out, Some(r.ferry_duration));
    text_ms(out, Some(r.duration));
    let _ = write!(out, " {}", r.attempts);
    text_field(out, r.failure);
    text_field(out, r.cluster.as_deref());
    match r.endpoint {
        Some(e) => {
            let _ = write!(out, " {e}");
        }
        None => out.extend_from_slice(b" -"),
    }
    text_field(out, r.authority.as_deref());
    text_field(out, r.model.as_deref());
    text_field(out, r.model_version.as_deref());
    match &r.grpc {
        Some((service, method)) => {
            out.push(b' ');
            text_value(out, service);
            out.push(b'/');
            text_value(out, method);
        }
        None => out.extend_from_slice(b" -"),
    }
    text_field(out, r.translate);
    text_field(out, r.request_id.as_deref());
    text_field(out, r.trace_id.as_deref());
    text_field(out, r.span_id.as_deref());
    text_field(out, r.peer_identity.as_deref());
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

fn json_str(out: &mut Vec<u8>, key: &str, value: Option<&str>) {
    let Some(value) = value else { return };
    out.extend_from_slice(b",\"");
    out.extend_from_slice(key.as_bytes());
    out.extend_from_slice(b"\":\"");
    for &b in value.as_bytes() {
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0..0x20 | 0x7f => {
                let _ = write!(out, "\\u{b:04x}");
            }
            // Valid UTF-8 (a `&str`) passes through byte by byte.
            _ => out.push(b),
        }
    }
    out.push(b'"');
}

/// Milliseconds with microsecond precision: `12.345`.
fn json_ms(out: &mut Vec<u8>, key: &str, d: Option<Duration>) {
    let Some(d) = d else { return };
    let _ = write!(out, ",\"{key}\":");
    ms(out, d);
}

fn text_ms(out: &mut Vec<u8>, d: Option<Duration>) {
    out.push(b' ');
    match d {
        Some(d) => ms(out, d),
        None => out.push(b'-'),
    }
}

fn ms(out: &mut Vec<u8>, d: Duration) {
    let micros = d.as_micros();
    let _ = write!(out, "{}.{:03}", micros / 1000, micros % 1000);
}

fn text_field(out: &mut Vec<u8>, value: Option<&str>) {
    out.push(b' ');
    match value {
        Some(v) if !v.is_empty() => text_value(out, v),
        _ => out.push(b'-'),
    }
}

fn text_value(out: &mut Vec<u8>, value: &str) {
    for &b in value.as_bytes() {
        if b <= b' ' || b == b'"' || b == b'\\' || b == 0x7f {
            let _ = write!(out, "\\x{b:02x}");
        } else {
            out.push(b);
        }
    }
}

/// `2026-12-05T07:30:00.123Z` (UTC, milliseconds).
fn rfc3339(out: &mut Vec<u8>, t: SystemTime) {
    let since = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs();
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(i64::try_from(days).unwrap_or(0));
    let _ = write!(
        out,
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        since.subsec_millis()
    );
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
