//! Upstream clusters: where their endpoints come from, how to speak to them, how to balance
//! load across them and when to eject one.

use std::net::SocketAddr;
use std::time::Duration;

/// An upstream cluster.
#[derive(Debug, Clone)]
pub struct Cluster {
    /// Unique name; metric label.
    pub name: String,
    /// Where the endpoints come from.
    pub endpoints: Endpoints,
    /// How to speak to the upstream.
    pub protocol: UpstreamProtocol,
    /// Load-balancing policy.
    pub lb: LbPolicy,
    /// The load-report metric folded into the pick (`p2c-ewma` only); `None` = latency and
    /// in-flight requests alone, and answers' reports are not read.
    pub load_report: Option<LoadReportLb>,
    /// Consistent hashing settings; `Some` exactly when `lb` is [`LbPolicy::Hash`].
    pub hash: Option<HashLb>,
    /// TCP connect timeout. Default 1s.
    pub connect_timeout: Duration,
    /// Idle pooled connections are closed after this. Default 90s.
    pub idle_timeout: Duration,
    /// Passive outlier detection; `None` = off. Default on (5 failures, 10s).
    pub outlier: Option<OutlierDetection>,
    /// TLS to the endpoints; `None` = plaintext.
    pub tls: Option<super::ClusterTls>,
    /// Ramp for new and returning endpoints; `None` = off.
    pub slow_start: Option<SlowStart>,
}

/// Slow start settings.
#[derive(Debug, Clone, PartialEq)]
pub struct SlowStart {
    /// Ramp length (> 0).
    pub window: Duration,
    /// Share at the start of the ramp, in (0, 1].
    pub initial: f64,
}

/// Where a cluster's endpoints come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoints {
    /// Fixed socket addresses.
    Static(Vec<SocketAddr>),
    /// DNS names re-resolved every `refresh` (e.g. a headless Service); every A/AAAA record is
    /// an endpoint.
    Dns {
        /// `host:port` pairs.
        names: Vec<HostPort>,
        /// Re-resolution interval. Default 5s.
        refresh: Duration,
    },
    /// The request's own authority is the destination (like Envoy's dynamic forward proxy):
    /// used by the default outbound listener, where the app addresses the target by Host.
    OriginalAuthority {
        /// Port used when the authority has none. Default 80.
        default_port: u16,
    },
}

/// A DNS name and port.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct HostPort {
    /// Host name (or IP literal).
    pub host: String,
    /// Port.
    pub port: u16,
}

/// Upstream protocol choice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpstreamProtocol {
    /// HTTP/1.1 only (gRPC cannot reach this cluster; such requests get 502).
    Http1,
    /// HTTP/2 with prior knowledge (h2c), multiplexed.
    H2,
    /// gRPC requests (content-type application/grpc*) ride HTTP/2, everything else HTTP/1.1.
    Auto,
}

/// Load-balancing policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LbPolicy {
    /// Round robin over healthy endpoints.
    RoundRobin,
    /// Power of two choices, least loaded by in-flight requests weighted by EWMA latency
    /// (as linkerd2-proxy's "PeakEwma").
    P2cEwma,
    /// Consistent hashing on a request key, with bounded load ([`Cluster::hash`]).
    Hash,
}

/// Consistent hashing with bounded load.
#[derive(Debug, Clone, PartialEq)]
pub struct HashLb {
    /// What the key is made of, in order (at least one part).
    pub key: Vec<HashKeyPart>,
    /// No endpoint takes a request while its in-flight count would pass `ceil(factor × mean
    /// in-flight, this request counted)`; `None` = unbounded. When `Some`, >= 1.
    pub bounded_load: Option<f64>,
    /// The policy for requests with none of the key parts (never `Hash`).
    pub fallback: LbPolicy,
}

/// One part of a hash key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HashKeyPart {
    /// A request header's value (lower-case name).
    Header(String),
    /// A cookie's value.
    Cookie(String),
    /// The model name (and version) the request names.
    Model,
    /// The caller: its SPIFFE ID over mutual TLS, else its IP address.
    Client,
    /// The first N bytes of an OpenAI-style body's `prompt`, or of the text of its `messages`
    /// in order.
    PromptPrefix(std::num::NonZeroUsize),
}

impl std::fmt::Display for HashKeyPart {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HashKeyPart::Header(n) => write!(f, "header:{n}"),
            HashKeyPart::Cookie(n) => write!(f, "cookie:{n}"),
            HashKeyPart::Model => f.write_str("model"),
            HashKeyPart::Client => f.write_str("client"),
            HashKeyPart::PromptPrefix(n) => write!(f, "prompt_prefix:{n}"),
        }
    }
}

/// Balancing on the endpoints' own load reports (ORCA `endpoint-load-metrics*`).
#[derive(Debug, Clone, PartialEq)]
pub struct LoadReportLb {
    /// Which metric of the report.
    pub metric: LoadMetric,
    /// An endpoint's cost is multiplied by `1 + weight × metric`; finite and > 0.
    pub weight: f64,
}

/// A metric an ORCA load report carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoadMetric {
    /// `cpu_utilization`.
    CpuUtilization,
    /// `mem_utilization`.
    MemUtilization,
    /// `application_utilization`.
    ApplicationUtilization,
    /// `rps_fractional`.
    RpsFractional,
    /// `eps`.
    Eps,
    /// `named_metrics.<name>` (vLLM's `kv_cache_usage_perc`, ferry's `ferry_inflight`).
    Named(String),
    /// `utilization.<name>`.
    Utilization(String),
    /// `request_cost.<name>`.
    RequestCost(String),
}

impl std::fmt::Display for LoadMetric {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LoadMetric::CpuUtilization => f.write_str("cpu_utilization"),
            LoadMetric::MemUtilization => f.write_str("mem_utilization"),
            LoadMetric::ApplicationUtilization => f.write_str("application_utilization"),
            LoadMetric::RpsFractional => f.write_str("rps_fractional"),
            LoadMetric::Eps => f.write_str("eps"),
            LoadMetric::Named(k) => write!(f, "named_metrics.{k}"),
            LoadMetric::Utilization(k) => write!(f, "utilization.{k}"),
            LoadMetric::RequestCost(k) => write!(f, "request_cost.{k}"),
        }
    }
}

/// Passive outlier detection settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutlierDetection {
    /// Consecutive connect errors / 5xx that eject an endpoint.
    pub consecutive_failures: u32,
    /// First ejection length; doubles on each re-ejection up to `max_ejection`.
    pub base_ejection: Duration,
    /// Cap on the ejection length. Default 5m.
    pub max_ejection: Duration,
    /// Never eject more than this percentage of a cluster's endpoints (0..=100). Default 50.
    pub max_ejection_percent: u8,
}
