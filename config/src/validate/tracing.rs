//! The top-level `tracing`: OTLP endpoint, headers and timeout, propagation formats, sampling
//! and the export queue.
//!
//! The endpoint is only checked for shape here (scheme, host, port, path); whether a collector
//! answers there is the proxy's concern at run time, where export failures never fail requests.
//! Header values may be API keys, so no message here repeats one.

use std::time::Duration;

use super::Ctx;
use super::values::{header_name, is_dns_name, parse_duration};
use crate::defaults;
use crate::ir::{Otlp, OtlpProtocol, Propagation, Sampling, Tracing};
use crate::raw::{
    DurationText, OtlpProtocolSpec, OtlpSpec, PropagationSpec, SamplingSpec, TracingSpec,
};

/// `tracing`; `None` when absent. Problems are recorded in `ctx` (stand-in defaults fill
/// their place).
pub(super) fn tracing(ctx: &mut Ctx<'_>, spec: Option<&TracingSpec>) -> Option<Tracing> {
    let spec = spec?;
    let otlp = otlp(ctx, spec.otlp.as_ref().unwrap_or(&OtlpSpec::default()));
    let service_name = spec.service_name.as_ref().and_then(|name| {
        let name = name.as_str();
        let ok = !name.trim().is_empty() && !name.chars().any(char::is_control);
        ctx.check(
            "tracing.service_name",
            ok.then(|| name.to_owned()).ok_or_else(|| {
                format!(
                    "invalid service_name {name:?} (expected a non-empty name without control \
                     characters, e.g. \"ferry\", or omit it to use OTEL_SERVICE_NAME)"
                )
            }),
        )
    });
    let propagation = match &spec.propagation {
        None => defaults::TRACING_PROPAGATION.to_vec(),
        Some(list) => propagation(ctx, list),
    };
    let sampling = sampling(
        ctx,
        spec.sampling.as_ref().unwrap_or(&SamplingSpec::default()),
    );
    let queue = match spec.queue {
        None => defaults::TRACING_QUEUE,
        Some(q) => ctx
            .check(
                "tracing.queue",
                usize::try_from(q)
                    .ok()
                    .filter(|q| (1..=defaults::MAX_TRACING_QUEUE).contains(q))
                    .ok_or_else(|| {
                        format!(
                            "invalid queue {q} (expected an integer from 1 to {})",
                            defaults::MAX_TRACING_QUEUE
                        )
                    }),
            )
            .unwrap_or(defaults::TRACING_QUEUE),
    };
    Some(Tracing {
        otlp,
        service_name,
        propagation,
        sampling,
        queue,
    })
}

fn otlp(ctx: &mut Ctx<'_>, spec: &OtlpSpec) -> Otlp {
    let protocol = match spec.protocol {
        None | Some(OtlpProtocolSpec::Grpc) => OtlpProtocol::Grpc,
        Some(OtlpProtocolSpec::Http) => OtlpProtocol::Http,
    };
    let endpoint = spec.endpoint.as_ref().and_then(|e| {
        ctx.check(
            "tracing.otlp.endpoint",
            parse_endpoint(e.as_str(), protocol),
        )
    });
    let mut headers: Vec<(String, String)> = Vec::new();
    let mut names: Vec<String> = Vec::new();
    for (name, value) in spec.headers.iter().flat_map(|h| &h.0) {
        let at = format!("tracing.otlp.headers.{}", name.as_str());
        let lower = match header_name(name.as_str()) {
            Ok(lower) => lower,
            Err(why) => {
                ctx.error_at_key(&at, why);
                continue;
            }
        };
        if names.contains(&lower) {
            ctx.error_at_key(
                &at,
                format!("duplicate header {lower:?} (expected each name once; names ignore case)"),
            );
            continue;
        }
        names.push(lower.clone());
        match header_value(value) {
            Ok(()) => headers.push((lower, value.clone())),
            Err(why) => ctx.error(&at, why),
        }
    }
    Otlp {
        endpoint,
        protocol,
        headers,
        timeout: positive_duration(ctx, "tracing.otlp.timeout", spec.timeout.as_ref(), "5s")
            .unwrap_or(defaults::OTLP_TIMEOUT),
    }
}

fn propagation(ctx: &mut Ctx<'_>, list: &[PropagationSpec]) -> Vec<Propagation> {
    if list.is_empty() {
        ctx.error(
            "tracing.propagation",
            "empty list (expected at least one of w3c, b3, b3multi; omit propagation for [w3c])",
        );
    }
    let mut out: Vec<Propagation> = Vec::with_capacity(list.len());
    for (i, p) in list.iter().enumerate() {
        let (p, name) = match p {
            PropagationSpec::W3c => (Propagation::W3c, "w3c"),
            PropagationSpec::B3 => (Propagation::B3, "b3"),
            PropagationSpec::B3Multi => (Propagation::B3Multi, "b3multi"),
        };
        if out.contains(&p) {
            ctx.error(
                &format!("tracing.propagation[{i}]"),
                format!("duplicate propagation {name:?} (expected each format at most once)"),
            );
        } else {
            out.push(p);
        }
    }
    out
}

fn sampling(ctx: &mut Ctx<'_>, spec: &SamplingSpec) -> Sampling {
    let ratio = spec
        .ratio
        .as_ref()
        .and_then(|r| ctx.check("tracing.sampling.ratio", parse_ratio(r.as_str())));
    Sampling {
        ratio: ratio.unwrap_or(defaults::SAMPLING_RATIO),
        always_errors: spec.always_errors.unwrap_or(false),
        slower_than: positive_duration(
            ctx,
            "tracing.sampling.slower_than",
            spec.slower_than.as_ref(),
            "1s",
        ),
    }
}

/// An optional duration that must be > 0 when given; `None` when absent or invalid.
pub(super) fn positive_duration(
    ctx: &mut Ctx<'_>,
    path: &str,
    text: Option<&DurationText>,
    example: &str,
) -> Option<Duration> {
    let d = text.and_then(|t| ctx.check(path, parse_duration(t.as_str())))?;
    if d.is_zero() {
        let field = path.rsplit('.').next().unwrap_or(path);
        ctx.error(
            path,
            format!("invalid {field} 0s (expected a duration > 0, e.g. {example:?})"),
        );
        return None;
    }
    Some(d)
}

/// `0.01`, `1`, `0`: a finite number from 0 to 1.
pub(super) fn parse_ratio(text: &str) -> Result<f64, String> {
    let bad = || format!("invalid ratio {text:?} (expected a number from 0 to 1, e.g. 0.01)");
    // Rust also reads `inf`, `NaN` and `+1`; the file only has plain decimals.
    let plain = text
        .bytes()
        .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'-'));
    let ratio: f64 = text.parse().ok().filter(|_| plain).ok_or_else(bad)?;
    if !ratio.is_finite() || !(0.0..=1.0).contains(&ratio) {
        return Err(bad());
    }
    // `-0` is 0.
    Ok(ratio + 0.0)
}

/// A header value a gRPC metadata entry and an HTTP header can both carry: visible ASCII,
/// spaces and tabs. The value itself is never quoted back.
fn header_value(value: &str) -> Result<(), String> {
    match value
        .bytes()
        .position(|b| !(b == b'\t' || (b' '..=b'~').contains(&b)))
    {
        None => Ok(()),
        Some(at) => Err(format!(
            "invalid header value: byte {at} is a control or non-ASCII character (expected \
             visible ASCII, spaces and tabs; the value is not shown)"
        )),
    }
}

/// Checks an OTLP endpoint and lower-cases its scheme and host.
fn parse_endpoint(text: &str, protocol: OtlpProtocol) -> Result<String, String> {
    let bad = |why: &str| {
        format!(
            "invalid endpoint {text:?}: {why} (expected http:// or https:// and a host, e.g. \
             \"http://127.0.0.1:4317\"{})",
            match protocol {
                OtlpProtocol::Grpc => "",
                OtlpProtocol::Http => " or \"http://collector:4318/v1/traces\"",
            }
        )
    };
    let Some((scheme, rest)) = text.split_once("://") else {
        return Err(bad("not an absolute URL"));
    };
    let scheme = scheme.to_ascii_lowercase();
    if scheme != "http" && scheme != "https" {
        return Err(bad(&format!("unsupported scheme {scheme:?}")));
    }
    if rest.contains(['?', '#']) {
        return Err(bad("query strings and fragments are not supported"));
    }
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    if authority.contains('@') {
        return Err(bad(
            "user info is not supported (send credentials in headers)",
        ));
    }
    let (host, port) = split_port(authority).ok_or_else(|| bad("invalid port"))?;
    let host_ok = match host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        Some(v6) => v6.parse::<std::net::Ipv6Addr>().is_ok(),
        None => is_dns_name(host),
    };
    if !host_ok {
        return Err(bad(if host.is_empty() {
            "no host"
        } else {
            "invalid host"
        }));
    }
    if path.chars().any(|c| c.is_control() || c == ' ') {
        return Err(bad("invalid path"));
    }
    if protocol == OtlpProtocol::Grpc && path.len() > 1 {
        return Err(bad(
            "a path is only allowed with protocol: http (gRPC names its own)",
        ));
    }
    let port = port.map(|p| format!(":{p}")).unwrap_or_default();
    Ok(format!(
        "{scheme}://{}{port}{path}",
        host.to_ascii_lowercase()
    ))
}

/// `host`, `host:port`, `[v6]` or `[v6]:port`; `None` for a bad port.
fn split_port(authority: &str) -> Option<(&str, Option<u16>)> {
    match authority.rfind(':') {
        // A colon inside brackets belongs to an IPv6 address.
        Some(i) if !authority[i..].contains(']') => {
            let port = authority[i + 1..].parse().ok().filter(|p| *p != 0)?;
            Some((&authority[..i], Some(port)))
        }
        _ => Some((authority, None)),
    }
}

#[cfg(test)]
mod tests {
    use super::{parse_endpoint, parse_ratio};
    use crate::ir::OtlpProtocol::{Grpc, Http};

    #[test]
    fn endpoints_are_checked_and_lower_cased() {
        for (text, protocol, want) in [
            ("http://127.0.0.1:4317", Grpc, "http://127.0.0.1:4317"),
            ("HTTPS://Collector.NS.svc", Grpc, "https://collector.ns.svc"),
            ("http://[::1]:4317/", Grpc, "http://[::1]:4317/"),
            ("http://c:4318/v1/traces", Http, "http://c:4318/v1/traces"),
            (
                "https://api.Vendor.io/otlp/v1/Traces",
                Http,
                "https://api.vendor.io/otlp/v1/Traces",
            ),
        ] {
            assert_eq!(
                parse_endpoint(text, protocol).as_deref(),
                Ok(want),
                "{text}"
            );
        }
    }

    #[test]
    fn bad_endpoints_are_refused() {
        for (text, protocol) in [
            ("127.0.0.1:4317", Grpc),
            ("grpc://c:4317", Grpc),
            ("http://", Grpc),
            ("http://:4317", Grpc),
            ("http://c:0", Grpc),
            ("http://c:65536", Grpc),
            ("http://c:port", Grpc),
            ("http://bad host:1", Grpc),
            ("http://[zz]:1", Grpc),
            ("http://u:p@c:4317", Grpc),
            ("http://c:4318/v1/traces?x=1", Http),
            ("http://c:4318/v1/traces#x", Http),
            ("http://c:4317/v1/traces", Grpc),
            ("http://c/a b", Http),
        ] {
            assert!(parse_endpoint(text, protocol).is_err(), "{text} accepted");
        }
    }

    #[test]
    fn ratios_are_finite_and_between_zero_and_one() {
        for (text, want) in [
            ("0", 0.0),
            ("1", 1.0),
            ("0.01", 0.01),
            ("1e-3", 0.001),
            ("-0", 0.0),
        ] {
            assert_eq!(parse_ratio(text), Ok(want), "{text}");
        }
        assert!(parse_ratio("-0").unwrap().is_sign_positive());
        for text in [
            "", "1.5", "-0.1", "inf", ".nan", "NaN", "+0.5", "1e400", "50%", "0,5",
        ] {
            assert!(parse_ratio(text).is_err(), "{text} accepted");
        }
    }
}
