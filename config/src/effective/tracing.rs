//! The effective form of `tracing`, with every default spelled out. Header values are shown
//! as `<redacted>`: they usually carry a vendor's API key, and `/config_dump` is for
//! operators, not for secrets (the config version still counts the real values).

use serde_json::{Map, Value};

use crate::ir::{OtlpProtocol, Propagation, Tracing};
use crate::validate::format_duration;

/// What `/config_dump` shows instead of a header value.
const REDACTED: &str = "<redacted>";

pub(super) fn tracing(t: &Tracing) -> Value {
    let mut otlp = Map::new();
    if let Some(endpoint) = &t.otlp.endpoint {
        otlp.insert("endpoint".into(), endpoint.clone().into());
    }
    let protocol = match t.otlp.protocol {
        OtlpProtocol::Grpc => "grpc",
        OtlpProtocol::Http => "http",
    };
    otlp.insert("protocol".into(), protocol.into());
    let headers: Map<String, Value> = t
        .otlp
        .headers
        .iter()
        .map(|(name, _)| (name.clone(), REDACTED.into()))
        .collect();
    otlp.insert("headers".into(), headers.into());
    otlp.insert("timeout".into(), format_duration(t.otlp.timeout).into());

    let mut out = Map::new();
    out.insert("otlp".into(), otlp.into());
    if let Some(name) = &t.service_name {
        out.insert("service_name".into(), name.clone().into());
    }
    let propagation: Vec<Value> = t
        .propagation
        .iter()
        .map(|p| match p {
            Propagation::W3c => "w3c".into(),
            Propagation::B3 => "b3".into(),
            Propagation::B3Multi => "b3multi".into(),
        })
        .collect();
    out.insert("propagation".into(), propagation.into());
    let mut sampling = Map::new();
    sampling.insert("ratio".into(), t.sampling.ratio.into());
    sampling.insert("always_errors".into(), t.sampling.always_errors.into());
    if let Some(d) = t.sampling.slower_than {
        sampling.insert("slower_than".into(), format_duration(d).into());
    }
    out.insert("sampling".into(), sampling.into());
    out.insert("queue".into(), t.queue.into());
    Value::Object(out)
}
