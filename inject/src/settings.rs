//! Injection defaults shared by `ferry inject` and `ferry injector`.
//!
//! Both commands flatten [`SidecarArgs`] so that a CLI run and a webhook configured with the same
//! flags inject byte-for-byte the same sidecar. Pods override some of these per object with
//! `ferry.dev/*` annotations (see [`crate::annotations`]).

use std::time::Duration;

use crate::{error::InjectError, redirect::RedirectMode};

/// The ports ferry's sidecar listens on, fixed so that Services, probes and docs agree.
pub mod ports {
    /// Admin listener: `/live`, `/ready`, `/metrics`.
    pub const ADMIN: u16 = 15000;
    /// Outbound listener (127.0.0.1 only): the app's calls to other models.
    pub const OUTBOUND: u16 = 15001;
    /// Inbound listener: what the pod's Service targets.
    pub const INBOUND: u16 = 15006;
    /// All reserved ports with the listener each belongs to, for conflict messages.
    pub const RESERVED: [(u16, &str); 3] = [
        (ADMIN, "admin"),
        (OUTBOUND, "outbound"),
        (INBOUND, "inbound"),
    ];
}

/// Where the sidecar's workload certificate comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum WorkloadCerts {
    /// A cert-manager CSI driver volume issuing a SPIFFE certificate per pod.
    CertManagerCsi,
    /// No workload certificate volume (plaintext mesh, or certificates managed elsewhere).
    None,
}

/// Flags that set the sidecar every injected pod gets.
#[derive(Debug, Clone, clap::Args)]
pub struct SidecarArgs {
    /// Container image of the ferry sidecar.
    #[arg(long, default_value = concat!("ferry:", env!("CARGO_PKG_VERSION")))]
    pub image: String,
    /// imagePullPolicy of the sidecar.
    #[arg(long, default_value = "IfNotPresent")]
    pub image_pull_policy: String,
    /// ConfigMap holding the route config (key `config.yaml`), unless a pod names its own with
    /// `ferry.dev/config-map`.
    #[arg(long, default_value = "ferry-mesh-config")]
    pub config_map: String,
    /// SPIFFE trust domain of the mesh.
    #[arg(long, default_value = "cluster.local")]
    pub trust_domain: String,
    /// Default log level of the sidecar (`ferry.dev/log-level` overrides).
    #[arg(long, default_value = "info")]
    pub log_level: String,
    /// Default OTLP endpoint for traces (`ferry.dev/tracing-endpoint` overrides); none = off.
    #[arg(long)]
    pub tracing_endpoint: Option<String>,
    /// Sidecar CPU request.
    #[arg(long, default_value = "100m")]
    pub cpu_request: String,
    /// Sidecar memory request.
    #[arg(long, default_value = "64Mi")]
    pub memory_request: String,
    /// Sidecar CPU limit (none by default: CPU limits throttle latency-critical proxies).
    #[arg(long)]
    pub cpu_limit: Option<String>,
    /// Sidecar memory limit.
    #[arg(long, default_value = "256Mi")]
    pub memory_limit: String,
    /// Source of the workload certificate.
    #[arg(long, value_enum, default_value = "cert-manager-csi")]
    pub workload_certs: WorkloadCerts,
    /// cert-manager issuer for workload certificates.
    #[arg(long, default_value = "ferry-mesh-ca")]
    pub cert_issuer: String,
    /// Kind of that issuer (`Issuer` or `ClusterIssuer`).
    #[arg(long, default_value = "ClusterIssuer")]
    pub cert_issuer_kind: String,
    /// UID the sidecar runs as.
    #[arg(long, default_value_t = 1337)]
    pub proxy_uid: i64,
    /// How traffic reaches ferry in pods that do not say (`ferry.dev/redirect` overrides):
    /// `ports` (explicit ports) or `iptables` (a `ferry-init` container redirects it).
    #[arg(long, value_enum, default_value = "ports")]
    pub redirect: RedirectMode,
    /// Image of the `ferry-init` container of the iptables mode; it needs `/bin/sh`,
    /// `iptables` and `iptables-restore`.
    #[arg(long, default_value = concat!("ferry-init:", env!("CARGO_PKG_VERSION")))]
    pub init_image: String,
    /// With legacy (non-native) sidecars, how long the preStop hook keeps ferry up after the pod
    /// is asked to stop, so the model container can finish in-flight requests first.
    #[arg(long, default_value = "5s", value_parser = parse_duration)]
    pub drain: Duration,
}

// === impl SidecarArgs ===

impl SidecarArgs {
    /// Checks values that clap cannot, so a bad flag fails at start-up, not per object.
    pub fn validate(&self) -> Result<(), InjectError> {
        let quantities = [
            ("--cpu-request", Some(&self.cpu_request)),
            ("--memory-request", Some(&self.memory_request)),
            ("--cpu-limit", self.cpu_limit.as_ref()),
            ("--memory-limit", Some(&self.memory_limit)),
        ];
        for (flag, value) in quantities {
            if let Some(v) = value
                && !is_quantity(v)
            {
                return Err(InjectError::Args {
                    flag,
                    problem: format!("{v:?} is not a Kubernetes quantity (e.g. 100m, 64Mi)"),
                });
            }
        }
        if !is_log_level(&self.log_level) {
            return Err(InjectError::Args {
                flag: "--log-level",
                problem: format!(
                    "{:?} (expected error, warn, info, debug or trace)",
                    self.log_level
                ),
            });
        }
        for (flag, image) in [("--image", &self.image), ("--init-image", &self.init_image)] {
            if image.trim().is_empty() {
                return Err(InjectError::Args {
                    flag,
                    problem: "must not be empty".into(),
                });
            }
        }
        Ok(())
    }
}

/// Whether `s` is a level the sidecar understands.
pub(crate) fn is_log_level(s: &str) -> bool {
    matches!(s, "error" | "warn" | "info" | "debug" | "trace")
}

/// Whether `s` looks like a Kubernetes resource quantity: a decimal number with an optional
/// binary or decimal suffix. Checked here so a typo fails at injection, not at pod admission.
pub(crate) fn is_quantity(s: &str) -> bool {
    const SUFFIXES: [&str; 14] = [
        "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "n", "u", "m", "k", "M", "G", "T", "P",
    ];
    let number = SUFFIXES
        .iter()
        .find_map(|suffix| s.strip_suffix(suffix))
        .unwrap_or(s);
    let mut parts = number.splitn(2, '.');
    let whole = parts.next().unwrap_or("");
    let frac = parts.next();
    let digits = |p: &str| p.bytes().all(|b| b.is_ascii_digit());
    match frac {
        None => !whole.is_empty() && digits(whole),
        Some(f) => digits(whole) && digits(f) && !(whole.is_empty() && f.is_empty()),
    }
}

/// Parses `500ms`, `5s`, `2m`: the human units the rest of ferry uses.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let (number, unit) = s
        .find(|c: char| !c.is_ascii_digit())
        .map_or((s, ""), |i| s.split_at(i));
    let n: u64 = number
        .parse()
        .map_err(|_| format!("invalid duration {s:?} (expected e.g. \"500ms\", \"5s\")"))?;
    match unit {
        "ms" => Ok(Duration::from_millis(n)),
        "s" => Ok(Duration::from_secs(n)),
        "m" => Ok(Duration::from_secs(n.saturating_mul(60))),
        _ => Err(format!(
            "invalid duration {s:?} (expected a unit: ms, s or m, e.g. \"5s\")"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities() {
        for ok in ["100m", "1", "0.5", "64Mi", "1Gi", "2.5G", ".5"] {
            assert!(is_quantity(ok), "{ok}");
        }
        for bad in ["", "Mi", "64 Mi", "1x", "1..2", "-1", "abc"] {
            assert!(!is_quantity(bad), "{bad}");
        }
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("5s"), Ok(Duration::from_secs(5)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert!(parse_duration("5 sec").unwrap_err().contains("5 sec"));
        assert!(parse_duration("s").is_err());
    }
}
