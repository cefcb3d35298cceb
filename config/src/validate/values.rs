//! Scalar value parsers: durations, percentages, addresses, header names, regexes, methods.
//!
//! Each returns `Err(message)` worded as `invalid X "text" (expected …)`; the caller adds the
//! file position and field path.

use std::net::{Ipv6Addr, SocketAddr};
use std::time::Duration;

use regex::{Regex, RegexBuilder};

use crate::ir::HostPort;

const NANOS_PER_MS: u128 = 1_000_000;
const NANOS_PER_S: u128 = 1_000 * NANOS_PER_MS;
const NANOS_PER_M: u128 = 60 * NANOS_PER_S;
const NANOS_PER_H: u128 = 60 * NANOS_PER_M;
/// Compiled regexes are capped so a pathological pattern cannot eat the sidecar's memory.
const REGEX_SIZE_LIMIT: usize = 1 << 20;

/// Parses `500ms`, `2s`, `1.5s`, `5m`, `1h`, `0s`.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let bad = || format!("invalid duration {text:?} (expected e.g. \"500ms\", \"2s\", \"5m\")");
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .ok_or_else(bad)?;
    let (number, unit) = text.split_at(split);
    let unit_nanos = match unit {
        "ms" => NANOS_PER_MS,
        "s" => NANOS_PER_S,
        "m" => NANOS_PER_M,
        "h" => NANOS_PER_H,
        _ => return Err(bad()),
    };
    let (int, frac) = number.split_once('.').unwrap_or((number, ""));
    let digits_ok = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if int.is_empty() || !digits_ok(int) || (number.contains('.') && frac.is_empty()) {
        return Err(bad());
    }
    if !digits_ok(frac) || int.len() > 20 {
        return Err(bad());
    }
    // Digits past nanosecond precision cannot matter; dropping them keeps the maths in u128.
    let frac = &frac[..frac.len().min(18)];
    let whole: u128 = int.parse().map_err(|_| bad())?;
    let frac_value: u128 = if frac.is_empty() {
        0
    } else {
        frac.parse().map_err(|_| bad())?
    };
    let scale = 10u128.pow(u32::try_from(frac.len()).map_err(|_| bad())?);
    let nanos = whole
        .checked_mul(unit_nanos)
        .and_then(|n| n.checked_add(frac_value * unit_nanos / scale))
        .ok_or_else(bad)?;
    let secs = u64::try_from(nanos / NANOS_PER_S)
        .map_err(|_| format!("duration {text:?} is too large (expected e.g. \"5m\")"))?;
    // The remainder is below 1e9 and therefore fits.
    let sub = u32::try_from(nanos % NANOS_PER_S).map_err(|_| bad())?;
    Ok(Duration::new(secs, sub))
}

/// Renders a duration in the file's syntax, using the largest unit that divides it exactly,
/// so that `parse_duration(format_duration(d)) == d`.
pub fn format_duration(d: Duration) -> String {
    let nanos = d.as_nanos();
    if nanos == 0 {
        return "0s".into();
    }
    for (unit, size) in [
        ("h", NANOS_PER_H),
        ("m", NANOS_PER_M),
        ("s", NANOS_PER_S),
        ("ms", NANOS_PER_MS),
    ] {
        if nanos.is_multiple_of(size) {
            return format!("{}{unit}", nanos / size);
        }
    }
    let frac = format!("{:06}", nanos % NANOS_PER_MS);
    format!("{}.{}ms", nanos / NANOS_PER_MS, frac.trim_end_matches('0'))
}

/// Parses `20%` or `12.5%` into a ratio in 0.0..=1.0.
pub(crate) fn parse_percent(text: &str) -> Result<f64, String> {
    let bad = || format!("invalid percentage {text:?} (expected 0% to 100%, e.g. \"20%\")");
    let number = text.strip_suffix('%').ok_or_else(bad)?;
    let well_formed = !number.is_empty()
        && !number.starts_with('.')
        && !number.ends_with('.')
        && number.bytes().all(|b| b.is_ascii_digit() || b == b'.')
        && number.matches('.').count() <= 1;
    if !well_formed {
        return Err(bad());
    }
    let value: f64 = number.parse().map_err(|_| bad())?;
    if !(0.0..=100.0).contains(&value) {
        return Err(bad());
    }
    Ok(value / 100.0)
}

/// Renders a ratio as the file's percentage (`0.2` → `20%`).
pub(crate) fn format_percent(ratio: f64) -> String {
    let text = format!("{:.6}", ratio * 100.0);
    let text = text.trim_end_matches('0').trim_end_matches('.');
    format!("{text}%")
}

pub(crate) fn parse_socket_addr(text: &str) -> Result<SocketAddr, String> {
    text.parse().map_err(|_| {
        format!("invalid socket address {text:?} (expected ip:port, e.g. \"127.0.0.1:8080\")")
    })
}

pub(crate) fn parse_host_port(text: &str) -> Result<HostPort, String> {
    let bad =
        || format!("invalid host:port {text:?} (expected e.g. \"svc.ns.svc.cluster.local:8000\")");
    let (host, port) = text.rsplit_once(':').ok_or_else(bad)?;
    let port: u16 = port.parse().map_err(|_| bad())?;
    if port == 0 {
        return Err(bad());
    }
    let host_ok = if let Some(v6) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        v6.parse::<Ipv6Addr>().is_ok()
    } else {
        is_dns_name(host)
    };
    if !host_ok {
        return Err(bad());
    }
    Ok(HostPort {
        host: host.to_ascii_lowercase(),
        port,
    })
}

/// Validates a TLS server name (SNI) as rustls will: a DNS name whose last label is not a
/// number (it would read as an IPv4 address). Lower-cased.
pub(crate) fn parse_sni(text: &str) -> Result<String, String> {
    const EXAMPLE: &str = "\"triton.models.svc.cluster.local\"";
    if text.parse::<std::net::IpAddr>().is_ok() {
        return Err(format!(
            "SNI {text:?} is an IP address (expected a DNS name such as {EXAMPLE}, or sni omitted)"
        ));
    }
    let host = text.strip_suffix('.').unwrap_or(text);
    let last = host.rsplit('.').next().unwrap_or_default();
    let hex = |s: &str| s.bytes().all(|b| b.is_ascii_hexdigit());
    let numeric = last.bytes().all(|b| b.is_ascii_digit())
        || last
            .strip_prefix("0x")
            .or_else(|| last.strip_prefix("0X"))
            .is_some_and(hex);
    if text.len() > 253 || !is_dns_name(text) || numeric {
        return Err(format!(
            "invalid SNI {text:?} (expected a DNS name such as {EXAMPLE})"
        ));
    }
    Ok(text.to_ascii_lowercase())
}

pub(super) fn is_dns_name(host: &str) -> bool {
    let host = host.strip_suffix('.').unwrap_or(host);
    !host.is_empty()
        && host.len() <= 253
        && host.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        })
}

/// RFC 9110 `tchar`: what header names and methods are made of.
fn is_token(text: &str) -> bool {
    !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// Validates a header name and lower-cases it.
pub(crate) fn header_name(text: &str) -> Result<String, String> {
    if is_token(text) {
        Ok(text.to_ascii_lowercase())
    } else {
        Err(format!(
            "invalid header name {text:?} (expected letters, digits and !#$%&'*+-.^_`|~)"
        ))
    }
}

/// Rejects values an HTTP header cannot carry (control characters other than tab).
pub(crate) fn header_value(text: &str) -> Result<String, String> {
    if text
        .chars()
        .any(|c| (c.is_control() && c != '\t') || c == '\u{7f}')
    {
        Err(format!(
            "invalid header value {text:?} (expected no control characters)"
        ))
    } else {
        Ok(text.to_owned())
    }
}

/// Validates a method and upper-cases it.
pub(crate) fn method(text: &str) -> Result<String, String> {
    if is_token(text) {
        Ok(text.to_ascii_uppercase())
    } else {
        Err(format!(
            "invalid method {text:?} (expected a token such as GET or POST)"
        ))
    }
}

/// Compiles `pattern` so that it must match the whole input.
pub(crate) fn anchored_regex(pattern: &str, case_insensitive: bool) -> Result<Regex, String> {
    let build = |p: &str| {
        RegexBuilder::new(p)
            .case_insensitive(case_insensitive)
            .size_limit(REGEX_SIZE_LIMIT)
            .build()
    };
    // Compiling the pattern alone first rejects unbalanced groups such as `a)|(b`, which would
    // otherwise escape the anchoring wrapper below.
    let checked = build(pattern).and_then(|_| build(&format!("^(?:{pattern})$")));
    checked.map_err(|e| {
        let reason = match &e {
            regex::Error::Syntax(text) => text
                .lines()
                .rev()
                .find_map(|l| l.strip_prefix("error: "))
                .unwrap_or("syntax error")
                .to_owned(),
            regex::Error::CompiledTooBig(_) => "pattern too large".to_owned(),
            _ => "unsupported pattern".to_owned(),
        };
        format!(
            "invalid regex {pattern:?}: {reason} (expected a Rust regex, e.g. \"^/v[0-9]+/.*\")"
        )
    })
}
