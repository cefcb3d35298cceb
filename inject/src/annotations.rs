//! The injection contract: `ferry.dev/*` annotations on a pod (template).
//!
//! | key | values | effect |
//! | --- | --- | --- |
//! | `ferry.dev/inject` | `enabled`, `disabled` | opt in or out (also honoured as a label) |
//! | `ferry.dev/ports` | `8000,8001` | model server ports ferry forwards to on 127.0.0.1 |
//! | `ferry.dev/protocol` | `rest`, `grpc`, `oip-v2`, `openai` | what the model server speaks |
//! | `ferry.dev/config-map` | name | ConfigMap with the route config (`config.yaml`) |
//! | `ferry.dev/cpu-request`, `cpu-limit`, `memory-request`, `memory-limit` | quantity | sidecar resources |
//! | `ferry.dev/log-level` | `error` … `trace` | sidecar log level |
//! | `ferry.dev/tracing-endpoint` | URL | OTLP endpoint for traces |
//! | `ferry.dev/native-sidecar` | `"true"`, `"false"` | `false` = regular container with hooks |
//! | `ferry.dev/redirect` | `ports`, `iptables` | how traffic reaches ferry (see [`crate::redirect`]) |
//! | `ferry.dev/redirect-exclude-inbound-ports` | `22,9100` | iptables mode: inbound ports not redirected |
//! | `ferry.dev/redirect-exclude-outbound-ports` | `5432` | iptables mode: outbound ports not redirected |
//! | `ferry.dev/injected` | written by ferry | marks a pod as injected (idempotency) |

use serde_json::Value;

use crate::{error::ObjectError, redirect::RedirectMode, settings};

/// Prefix of every annotation ferry reads or writes.
pub const PREFIX: &str = "ferry.dev/";
/// Opt-in/out annotation (and label).
pub const INJECT: &str = "ferry.dev/inject";
/// Model server ports.
pub const PORTS: &str = "ferry.dev/ports";
/// Model server protocol.
pub const PROTOCOL: &str = "ferry.dev/protocol";
/// Route config ConfigMap.
pub const CONFIG_MAP: &str = "ferry.dev/config-map";
/// Sidecar CPU request.
pub const CPU_REQUEST: &str = "ferry.dev/cpu-request";
/// Sidecar CPU limit.
pub const CPU_LIMIT: &str = "ferry.dev/cpu-limit";
/// Sidecar memory request.
pub const MEMORY_REQUEST: &str = "ferry.dev/memory-request";
/// Sidecar memory limit.
pub const MEMORY_LIMIT: &str = "ferry.dev/memory-limit";
/// Sidecar log level.
pub const LOG_LEVEL: &str = "ferry.dev/log-level";
/// OTLP endpoint.
pub const TRACING_ENDPOINT: &str = "ferry.dev/tracing-endpoint";
/// Native sidecar switch.
pub const NATIVE_SIDECAR: &str = "ferry.dev/native-sidecar";
/// Traffic redirect mode.
pub const REDIRECT: &str = "ferry.dev/redirect";
/// Inbound ports the iptables mode leaves alone.
pub const REDIRECT_EXCLUDE_INBOUND: &str = "ferry.dev/redirect-exclude-inbound-ports";
/// Outbound ports the iptables mode leaves alone.
pub const REDIRECT_EXCLUDE_OUTBOUND: &str = "ferry.dev/redirect-exclude-outbound-ports";
/// Status written by the injector.
pub const INJECTED: &str = "ferry.dev/injected";

/// Labels naming the workload, most specific first (Kubernetes' recommended label, then the
/// common `app`): what traces show as the sidecar's service.
const APP_LABELS: [&str; 2] = ["app.kubernetes.io/name", "app"];

const KNOWN: [&str; 15] = [
    INJECT,
    PORTS,
    PROTOCOL,
    CONFIG_MAP,
    CPU_REQUEST,
    CPU_LIMIT,
    MEMORY_REQUEST,
    MEMORY_LIMIT,
    LOG_LEVEL,
    TRACING_ENDPOINT,
    NATIVE_SIDECAR,
    REDIRECT,
    REDIRECT_EXCLUDE_INBOUND,
    REDIRECT_EXCLUDE_OUTBOUND,
    INJECTED,
];

/// What the pod says about injection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OptIn {
    /// `ferry.dev/inject: enabled`.
    Enabled,
    /// `ferry.dev/inject: disabled`.
    Disabled,
    /// Nothing said: the caller's default applies.
    Unset,
}

/// The protocol of the model server behind the sidecar.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// Plain HTTP/JSON (TF Serving REST, TorchServe).
    Rest,
    /// gRPC.
    Grpc,
    /// Open Inference Protocol v2 (Triton, MLServer, KServe), REST and gRPC.
    OipV2,
    /// OpenAI-compatible HTTP (vLLM).
    Openai,
}

impl Protocol {
    fn parse(s: &str) -> Option<Self> {
        match s {
            "rest" => Some(Self::Rest),
            "grpc" => Some(Self::Grpc),
            "oip-v2" => Some(Self::OipV2),
            "openai" => Some(Self::Openai),
            _ => None,
        }
    }

    /// The annotation spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Rest => "rest",
            Self::Grpc => "grpc",
            Self::OipV2 => "oip-v2",
            Self::Openai => "openai",
        }
    }
}

/// Everything a pod's annotations ask for, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodAnnotations {
    /// Opt-in state.
    pub opt_in: OptIn,
    /// Whether the pod was already injected.
    pub injected: bool,
    /// Explicit model ports, if given.
    pub ports: Option<Vec<u16>>,
    /// Model protocol, if given.
    pub protocol: Option<Protocol>,
    /// Route config ConfigMap override.
    pub config_map: Option<String>,
    /// Resource overrides: (cpu request, cpu limit, memory request, memory limit).
    pub cpu_request: Option<String>,
    /// CPU limit override.
    pub cpu_limit: Option<String>,
    /// Memory request override.
    pub memory_request: Option<String>,
    /// Memory limit override.
    pub memory_limit: Option<String>,
    /// Log level override.
    pub log_level: Option<String>,
    /// Tracing endpoint override.
    pub tracing_endpoint: Option<String>,
    /// The workload's name from its `app.kubernetes.io/name` label, else its `app` label: the
    /// sidecar's `OTEL_SERVICE_NAME` when tracing is on.
    pub app_name: Option<String>,
    /// `false` only when the pod asks for a legacy sidecar.
    pub native_sidecar: bool,
    /// Redirect mode, if given (the injector's `--redirect` applies otherwise).
    pub redirect: Option<RedirectMode>,
    /// Inbound ports the iptables mode must not redirect.
    pub exclude_inbound_ports: Vec<u16>,
    /// Outbound ports the iptables mode must not redirect.
    pub exclude_outbound_ports: Vec<u16>,
    /// Unknown `ferry.dev/*` keys, reported as warnings (likely typos).
    pub unknown: Vec<String>,
}

/// Reads the `ferry.dev/*` annotations (and the `ferry.dev/inject` label) of pod metadata.
pub fn read(metadata: Option<&Value>) -> Result<PodAnnotations, ObjectError> {
    let annotations = metadata.and_then(|m| m.get("annotations"));
    let labels = metadata.and_then(|m| m.get("labels"));
    let get = |key: &str| -> Option<String> {
        annotations
            .and_then(|a| a.get(key))
            .map(|v| scalar_text(v).trim().to_owned())
    };
    let bad = |key: &str, value: String, expected: &'static str| ObjectError::BadAnnotation {
        key: key.to_owned(),
        value,
        expected,
    };

    // The annotation wins over the label: labels exist only because webhook selectors cannot
    // see annotations.
    let opt_value = get(INJECT).or_else(|| labels.and_then(|l| l.get(INJECT)).map(scalar_text));
    let opt_in = match opt_value.as_deref() {
        None => OptIn::Unset,
        Some("enabled" | "true") => OptIn::Enabled,
        Some("disabled" | "false") => OptIn::Disabled,
        Some(other) => return Err(bad(INJECT, other.to_owned(), "enabled or disabled")),
    };

    let ports = match get(PORTS) {
        None => None,
        Some(text) => Some(parse_ports(&text).ok_or_else(|| {
            bad(
                PORTS,
                text.clone(),
                "comma-separated ports 1-65535, e.g. \"8000,8001\"",
            )
        })?),
    };
    let protocol = match get(PROTOCOL) {
        None => None,
        Some(p) => Some(
            Protocol::parse(&p).ok_or_else(|| bad(PROTOCOL, p, "rest, grpc, oip-v2 or openai"))?,
        ),
    };
    let quantity = |key: &str| -> Result<Option<String>, ObjectError> {
        match get(key) {
            Some(q) if !settings::is_quantity(&q) => {
                Err(bad(key, q, "a Kubernetes quantity, e.g. 100m or 64Mi"))
            }
            other => Ok(other),
        }
    };
    let log_level = match get(LOG_LEVEL) {
        Some(l) if !settings::is_log_level(&l) => {
            return Err(bad(LOG_LEVEL, l, "error, warn, info, debug or trace"));
        }
        other => other,
    };
    let native_sidecar = match get(NATIVE_SIDECAR).as_deref() {
        None | Some("true") => true,
        Some("false") => false,
        Some(other) => {
            return Err(bad(
                NATIVE_SIDECAR,
                other.to_owned(),
                "\"true\" or \"false\"",
            ));
        }
    };
    let redirect = match get(REDIRECT) {
        None => None,
        Some(m) => {
            Some(RedirectMode::parse(&m).ok_or_else(|| bad(REDIRECT, m, "ports or iptables"))?)
        }
    };
    let exclude = |key: &str| -> Result<Vec<u16>, ObjectError> {
        match get(key) {
            None => Ok(Vec::new()),
            Some(text) if text.is_empty() => Ok(Vec::new()),
            Some(text) => parse_ports(&text)
                .ok_or_else(|| bad(key, text, "comma-separated ports 1-65535, e.g. \"22,5432\"")),
        }
    };
    let exclude_inbound_ports = exclude(REDIRECT_EXCLUDE_INBOUND)?;
    let exclude_outbound_ports = exclude(REDIRECT_EXCLUDE_OUTBOUND)?;
    let config_map = get(CONFIG_MAP);
    if let Some(name) = &config_map
        && !is_dns_subdomain(name)
    {
        return Err(bad(
            CONFIG_MAP,
            name.clone(),
            "a ConfigMap name (DNS subdomain)",
        ));
    }
    let app_name = APP_LABELS.iter().find_map(|key| {
        let value = labels.and_then(|l| l.get(*key)).map(scalar_text)?;
        let value = value.trim();
        (!value.is_empty()).then(|| value.to_owned())
    });
    let unknown = annotations
        .and_then(Value::as_object)
        .map(|a| {
            a.keys()
                .filter(|k| k.starts_with(PREFIX) && !KNOWN.contains(&k.as_str()))
                .cloned()
                .collect()
        })
        .unwrap_or_default();

    Ok(PodAnnotations {
        opt_in,
        injected: get(INJECTED).is_some(),
        ports,
        protocol,
        config_map,
        cpu_request: quantity(CPU_REQUEST)?,
        cpu_limit: quantity(CPU_LIMIT)?,
        memory_request: quantity(MEMORY_REQUEST)?,
        memory_limit: quantity(MEMORY_LIMIT)?,
        log_level,
        tracing_endpoint: get(TRACING_ENDPOINT).filter(|e| !e.is_empty()),
        app_name,
        native_sidecar,
        redirect,
        exclude_inbound_ports,
        exclude_outbound_ports,
        unknown,
    })
}

/// Annotation values are strings, but hand-written YAML often has `ferry.dev/ports: 8080`.
fn scalar_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn parse_ports(text: &str) -> Option<Vec<u16>> {
    let mut ports = Vec::new();
    for part in text.split(',') {
        let port: u16 = part.trim().parse().ok()?;
        if port == 0 {
            return None;
        }
        if !ports.contains(&port) {
            ports.push(port);
        }
    }
    Some(ports)
}

fn is_dns_subdomain(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_contract() {
        let meta = json!({"annotations": {
            "ferry.dev/inject": "enabled", "ferry.dev/ports": "8000, 8001",
            "ferry.dev/protocol": "oip-v2", "ferry.dev/native-sidecar": "false",
            "ferry.dev/memory-limit": "1Gi", "ferry.dev/prots": "1"
        }});
        let a = read(Some(&meta)).unwrap();
        assert_eq!(a.opt_in, OptIn::Enabled);
        assert_eq!(a.ports, Some(vec![8000, 8001]));
        assert_eq!(a.protocol, Some(Protocol::OipV2));
        assert!(!a.native_sidecar);
        assert_eq!(a.memory_limit.as_deref(), Some("1Gi"));
        assert_eq!(a.unknown, vec!["ferry.dev/prots".to_owned()]);
    }

    #[test]
    fn label_opts_in_but_annotation_wins() {
        let meta = json!({"labels": {"ferry.dev/inject": "enabled"}});
        assert_eq!(read(Some(&meta)).unwrap().opt_in, OptIn::Enabled);
        let meta = json!({"labels": {"ferry.dev/inject": "enabled"},
                          "annotations": {"ferry.dev/inject": "disabled"}});
        assert_eq!(read(Some(&meta)).unwrap().opt_in, OptIn::Disabled);
        assert_eq!(read(None).unwrap().opt_in, OptIn::Unset);
    }

    #[test]
    fn app_name_from_the_recommended_label_then_app() {
        let name =
            |labels: serde_json::Value| read(Some(&json!({ "labels": labels }))).unwrap().app_name;
        let both = json!({"app.kubernetes.io/name": "resnet", "app": "legacy"});
        assert_eq!(name(both).as_deref(), Some("resnet"));
        assert_eq!(name(json!({"app": "triton"})).as_deref(), Some("triton"));
        let blank = json!({"app.kubernetes.io/name": " ", "app": "triton"});
        assert_eq!(name(blank).as_deref(), Some("triton"));
        assert_eq!(name(json!({"tier": "models"})), None);
        assert_eq!(read(None).unwrap().app_name, None);
    }

    #[test]
    fn bad_values_name_key_and_expectation() {
        let meta = json!({"annotations": {"ferry.dev/protocol": "soap"}});
        let e = read(Some(&meta)).unwrap_err().to_string();
        assert_eq!(
            e,
            "annotation ferry.dev/protocol: invalid value \"soap\" (expected rest, grpc, oip-v2 or openai)"
        );
        let meta = json!({"annotations": {"ferry.dev/ports": "80,0"}});
        assert!(read(Some(&meta)).is_err());
        let meta = json!({"annotations": {"ferry.dev/cpu-request": "lots"}});
        assert!(read(Some(&meta)).is_err());
    }

    #[test]
    fn redirect_mode_and_exclusions() {
        let meta = json!({"annotations": {
            "ferry.dev/redirect": "iptables",
            "ferry.dev/redirect-exclude-inbound-ports": "22, 9100",
            "ferry.dev/redirect-exclude-outbound-ports": 5432,
        }});
        let a = read(Some(&meta)).unwrap();
        assert_eq!(a.redirect, Some(RedirectMode::Iptables));
        assert_eq!(a.exclude_inbound_ports, vec![22, 9100]);
        assert_eq!(a.exclude_outbound_ports, vec![5432]);
        assert!(a.unknown.is_empty());
        assert_eq!(read(None).unwrap().redirect, None);

        let meta = json!({"annotations": {"ferry.dev/redirect": "tproxy"}});
        assert_eq!(
            read(Some(&meta)).unwrap_err().to_string(),
            "annotation ferry.dev/redirect: invalid value \"tproxy\" (expected ports or iptables)"
        );
        let meta = json!({"annotations": {"ferry.dev/redirect-exclude-outbound-ports": "5432,db"}});
        assert_eq!(
            read(Some(&meta)).unwrap_err().to_string(),
            "annotation ferry.dev/redirect-exclude-outbound-ports: invalid value \"5432,db\" \
             (expected comma-separated ports 1-65535, e.g. \"22,5432\")"
        );
    }
}
