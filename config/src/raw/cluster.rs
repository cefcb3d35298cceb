//! Raw cluster types.

use schemars::JsonSchema;
use serde::Deserialize;

use super::scalars::{DurationText, HostPortText, SocketAddrText, Text};

/// An upstream cluster. Endpoints come from exactly one of `endpoints`, `dns`,
/// `original_authority`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Cluster")]
pub struct RawCluster {
    /// Unique name; routes refer to it.
    pub name: Text,
    /// Fixed endpoint addresses `ip:port`.
    pub endpoints: Option<Vec<SocketAddrText>>,
    /// DNS names re-resolved periodically.
    pub dns: Option<DnsSpec>,
    /// Send to the request's own authority (dynamic forward proxy).
    pub original_authority: Option<OriginalAuthoritySpec>,
    /// How to speak to the upstream. Default `auto`.
    pub protocol: Option<RawProtocol>,
    /// Load-balancing policy: a name (`p2c-ewma`, `round-robin`) or `{policy, load_report}`, or
    /// `{policy: hash, key, bounded_load, fallback}`.
    /// Default `p2c-ewma`.
    pub lb: Option<super::LbSpec>,
    /// TCP connect timeout. Default `1s`.
    pub connect_timeout: Option<DurationText>,
    /// Idle pooled connections are closed after this. Default `90s`.
    pub idle_timeout: Option<DurationText>,
    /// Passive outlier detection; omitted = on with defaults, `{enabled: false}` = off.
    pub outlier: Option<OutlierSpec>,
    /// TLS to the endpoints; omitted = plaintext.
    pub tls: Option<super::ClusterTlsSpec>,
    /// Ramp new and returning endpoints up to their full share; omitted = off.
    pub slow_start: Option<SlowStartSpec>,
}

/// Slow start: an endpoint that is new (added by DNS or by a reload that rebuilt the
/// cluster, but not one present when the cluster was built) or back from an ejection starts at
/// `initial` of its share and reaches its full share over `window`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "SlowStart")]
pub struct SlowStartSpec {
    /// How long the ramp takes, e.g. `60s`.
    pub window: DurationText,
    /// Share at the start of the ramp. Default `10%`.
    pub initial: Option<super::scalars::PercentText>,
}

/// DNS-discovered endpoints.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Dns")]
pub struct DnsSpec {
    /// `host:port` names; every A/AAAA record is an endpoint.
    pub names: Vec<HostPortText>,
    /// Re-resolution interval. Default `5s`.
    pub refresh: Option<DurationText>,
}

/// The request's authority is the destination.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "OriginalAuthority")]
pub struct OriginalAuthoritySpec {
    /// Port used when the authority has none. Default 80.
    pub default_port: Option<u16>,
}

/// Upstream protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
#[schemars(rename = "Protocol")]
pub enum RawProtocol {
    /// gRPC over HTTP/2, everything else HTTP/1.1.
    Auto,
    /// HTTP/1.1 only.
    Http1,
    /// HTTP/2 with prior knowledge (h2c).
    H2,
}

/// Load-balancing policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
#[schemars(rename = "Lb")]
pub enum RawLb {
    /// Round robin over healthy endpoints.
    RoundRobin,
    /// Power of two choices on EWMA latency.
    P2cEwma,
    /// Consistent hashing (a ring) on `key`, with `bounded_load`.
    Hash,
}

/// Passive outlier detection.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Outlier")]
pub struct OutlierSpec {
    /// `false` turns outlier detection off. Default true.
    pub enabled: Option<bool>,
    /// Consecutive failures that eject an endpoint, >= 1. Default 5.
    pub consecutive_failures: Option<u32>,
    /// First ejection length (doubles on re-ejection). Default `10s`.
    pub ejection: Option<DurationText>,
    /// Cap on the ejection length. Default `5m`.
    pub max_ejection: Option<DurationText>,
    /// Never eject more than this percentage of endpoints, 0..=100. Default 50.
    pub max_ejection_percent: Option<i64>,
}
