//! The `tracing` block's export settings as the exporter uses them: the collector's
//! endpoint (config, then the OTLP environment variables, then the protocol's default), its
//! headers, and the resource every span is reported under.

use ferry_config::{OtlpProtocol, Tracing};
use http::{HeaderMap, HeaderName, HeaderValue};
use opentelemetry::KeyValue;
use opentelemetry_sdk::Resource;

use super::TracesError;
use super::client::OtlpClient;

/// The collector client of `cfg`: its endpoint, protocol and headers (the config's, over
/// `OTEL_EXPORTER_OTLP_TRACES_HEADERS`, over `OTEL_EXPORTER_OTLP_HEADERS`).
pub(super) fn build_exporter(cfg: &Tracing) -> Result<OtlpClient, TracesError> {
    let endpoint = endpoint(cfg);
    let fail = |reason: String| TracesError {
        endpoint: endpoint.clone(),
        reason,
    };
    let mut map = HeaderMap::new();
    let env = [
        "OTEL_EXPORTER_OTLP_HEADERS",
        "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
    ]
    .into_iter()
    .filter_map(|k| std::env::var(k).ok())
    .flat_map(|v| env_headers(&v));
    for (k, v) in env.chain(cfg.otlp.headers.iter().cloned()) {
        let name =
            HeaderName::try_from(k.as_str()).map_err(|e| fail(format!("header {k}: {e}")))?;
        let value =
            HeaderValue::try_from(v.as_str()).map_err(|e| fail(format!("header {k}: {e}")))?;
        map.insert(name, value);
    }
    OtlpClient::new(&endpoint, cfg.otlp.protocol == OtlpProtocol::Grpc, map)
        .map_err(|e| fail(e.to_string()))
}

/// `OTEL_EXPORTER_OTLP_HEADERS`: `key=value` pairs separated by commas, values
/// percent-encoded (the OpenTelemetry environment-variable spec); a malformed pair is skipped.
fn env_headers(v: &str) -> Vec<(String, String)> {
    v.split(',')
        .filter_map(|pair| pair.split_once('='))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), percent_decode(v.trim())))
        .filter(|(k, _)| !k.is_empty())
        .collect()
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        match (
            b[i],
            b.get(i + 1).copied().and_then(hex),
            b.get(i + 2).copied().and_then(hex),
        ) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (c, _, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The endpoint: the config's, else the OTLP environment's, else the protocol's default on
/// localhost. OTLP/HTTP gets `/v1/traces` when the endpoint has no path (as the OTLP spec
/// does for `OTEL_EXPORTER_OTLP_ENDPOINT`).
fn endpoint(cfg: &Tracing) -> String {
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    let http = cfg.otlp.protocol == OtlpProtocol::Http;
    if let Some(e) = &cfg.otlp.endpoint {
        return if http && !has_path(e) {
            format!("{}/v1/traces", e.trim_end_matches('/'))
        } else {
            e.clone()
        };
    }
    // The signal's own variable is the full URL; the generic one is a base the OTLP spec
    // appends the signal's path to.
    if let Some(e) = env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
        return e;
    }
    match (env("OTEL_EXPORTER_OTLP_ENDPOINT"), http) {
        (Some(base), true) => format!("{}/v1/traces", base.trim_end_matches('/')),
        (Some(base), false) => base,
        (None, true) => "http://localhost:4318/v1/traces".into(),
        (None, false) => "http://localhost:4317".into(),
    }
}

fn has_path(url: &str) -> bool {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    rest.split_once('/').is_some_and(|(_, p)| !p.is_empty())
}

pub(super) fn resource(cfg: &Tracing) -> Resource {
    let name = cfg
        .service_name
        .clone()
        .or_else(|| {
            std::env::var("OTEL_SERVICE_NAME")
                .ok()
                .filter(|v| !v.is_empty())
        })
        .unwrap_or_else(|| "ferry".into());
    // The builder reads OTEL_RESOURCE_ATTRIBUTES; the name set here wins over both.
    Resource::builder()
        .with_service_name(name)
        .with_attributes([KeyValue::new("service.version", env!("CARGO_PKG_VERSION"))])
        .build()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_endpoints_get_the_traces_path_only_when_they_have_none() {
        let mut cfg = Tracing::default();
        cfg.otlp.protocol = OtlpProtocol::Http;
        cfg.otlp.endpoint = Some("http://c:4318".into());
        assert_eq!(endpoint(&cfg), "http://c:4318/v1/traces");
        cfg.otlp.endpoint = Some("http://c:4318/custom/traces".into());
        assert_eq!(endpoint(&cfg), "http://c:4318/custom/traces");
        cfg.otlp.protocol = OtlpProtocol::Grpc;
        cfg.otlp.endpoint = Some("http://c:4317".into());
        assert_eq!(endpoint(&cfg), "http://c:4317");
    }

    #[test]
    fn environment_headers_are_split_trimmed_and_percent_decoded() {
        assert_eq!(
            env_headers("api-key=a%20b%2Cc , X-Tenant=t1,broken,=v"),
            vec![
                ("api-key".to_owned(), "a b,c".to_owned()),
                ("x-tenant".to_owned(), "t1".to_owned()),
            ]
        );
        assert_eq!(percent_decode("100%"), "100%");
    }
}
