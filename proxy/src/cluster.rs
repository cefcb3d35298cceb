//! Clusters at run time: their endpoints (static, DNS-refreshed or the request's own
//! authority), load balancing, passive outlier detection and the upstream client pools.
//!
//! A cluster whose config did not change survives a reload as the same object, so its pooled
//! connections, EWMA latencies and ejections carry over.

mod balance;
mod discovery;
mod endpoint;
mod members;
pub mod ring;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::time::Instant;

use ferry_config::{Cluster as ClusterConfig, Endpoints, LbPolicy, LoadMetric};
use ferry_filters::load_report::{Field, MetricName};
use tokio::task::JoinHandle;

pub use self::balance::may_eject;
pub use self::endpoint::{Endpoint, InFlightOwned};
use self::members::Members;
use crate::tls::Originator;
use crate::upstream::{Transport, UpstreamClient};

/// A cluster at run time.
#[derive(Debug)]
pub struct Cluster {
    /// Name (metric label).
    pub name: Arc<str>,
    /// The config it was built from; compared on reload to decide whether to keep it.
    pub config: ClusterConfig,
    endpoints: Arc<Members>,
    next: AtomicUsize,
    /// Pooled upstream connections.
    pub client: UpstreamClient,
    /// How endpoints are reached (the network, or an in-memory upstream in tests).
    pub transport: Transport,
    /// `ferry_upstream_duration_seconds` of this cluster, registered once.
    pub upstream_duration: prometheus_client::metrics::histogram::Histogram,
    /// The metric read from answers' load reports, when `lb.load_report` is set (`None`: reports
    /// are not read at all).
    pub load_report: Option<LoadReporting>,
    /// The contents of its CA files when it was built (server-mode TLS), compared on reload.
    pub ca_fingerprint: String,
    /// Its attempts' CLIENT span names, made on the first recorded attempt.
    span_names: std::sync::OnceLock<ferry_filters::trace_context::SpanNames>,
    refresh: Option<JoinHandle<()>>,
}

/// What a cluster balancing on load reports reads from answers.
#[derive(Debug, Clone)]
pub struct LoadReporting {
    /// The metric, converted once from the config.
    pub metric: Arc<MetricName>,
    /// `lb.load_report.weight`.
    pub weight: f64,
}

/// A request's consistent-hashing key (`lb: hash`), computed once per request before its
/// attempts; a request without one is balanced by the cluster's `fallback`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HashKey(pub u64);

/// Why no endpoint could be picked.
#[derive(Debug, thiserror::Error)]
pub enum PickError {
    /// The cluster has no endpoints (e.g. DNS returned none yet).
    #[error("no endpoints")]
    NoEndpoints,
    /// The request's authority could not be turned into an address.
    #[error("cannot resolve destination {0:?}: {1}")]
    Resolve(String, String),
}

// === impl Cluster ===

impl Cluster {
    /// Builds a cluster; DNS clusters start a refresh task (needs a tokio runtime).
    pub fn new(
        config: ClusterConfig,
        metrics: &crate::metrics::Metrics,
        transport: Transport,
        tls: Option<Arc<Originator>>,
    ) -> Self {
        let endpoints = Arc::new(Members::new(config.hash.is_some()));
        if let Endpoints::Static(addrs) = &config.endpoints {
            let initial = addrs
                .iter()
                .map(|a| Arc::new(endpoints.endpoint(*a, false)))
                .collect();
            endpoints.store(initial);
        }
        let refresh = match &config.endpoints {
            Endpoints::Dns { names, refresh } => Some(tokio::spawn(discovery::refresh_dns(
                config.name.clone(),
                names.clone(),
                *refresh,
                Arc::downgrade(&endpoints),
            ))),
            _ => None,
        };
        let client = UpstreamClient::new(&config, tls);
        let name: Arc<str> = config.name.as_str().into();
        let upstream_duration = metrics
            .upstream_duration
            .get_or_create(&crate::metrics::ClusterLabels {
                cluster: crate::metrics::Name(name.clone()),
            })
            .clone();
        let load_report = config.load_report.as_ref().map(|r| LoadReporting {
            metric: Arc::new(metric_name(&r.metric)),
            weight: r.weight,
        });
        Self {
            name,
            upstream_duration,
            load_report,
            config,
            endpoints,
            next: AtomicUsize::new(0),
            client,
            transport,
            ca_fingerprint: String::new(),
            span_names: std::sync::OnceLock::new(),
            refresh,
        }
    }

    /// `"{METHOD} {cluster}"` span names, shared by its recorded attempts.
    pub fn span_names(&self) -> &ferry_filters::trace_context::SpanNames {
        self.span_names
            .get_or_init(|| ferry_filters::trace_context::SpanNames::new(&self.name))
    }

    /// Whether a reload with `other` can keep this object.
    pub fn same_config(&self, other: &ClusterConfig) -> bool {
        let a = &self.config;
        a.name == other.name
            && a.endpoints == other.endpoints
            && a.protocol == other.protocol
            && a.lb == other.lb
            && a.connect_timeout == other.connect_timeout
            && a.idle_timeout == other.idle_timeout
            && a.outlier == other.outlier
            && a.tls == other.tls
            && a.slow_start == other.slow_start
            && a.load_report == other.load_report
            && a.hash == other.hash
    }

    /// Picks an endpoint for one attempt, avoiding `avoid` (the one that just failed) when
    /// another is available. `authority` is the request's, for original-authority clusters.
    pub async fn pick(
        &self,
        authority: Option<&str>,
        avoid: Option<SocketAddr>,
    ) -> Result<Arc<Endpoint>, PickError> {
        if let Endpoints::OriginalAuthority { default_port } = &self.config.endpoints {
            let authority = authority.unwrap_or_default();
            let addr = discovery::resolve_authority(authority, *default_port)
                .await
                .map_err(|e| PickError::Resolve(authority.to_owned(), e.to_string()))?;
            return Ok(Arc::new(Endpoint::new(addr)));
        }
        let endpoints = self.endpoints.load();
        balance::pick(&self.policy(), &endpoints, &self.next, avoid).ok_or(PickError::NoEndpoints)
    }

    /// [`Cluster::pick`] without waiting, for clusters whose endpoints are known (static or
    /// DNS-refreshed); `None` for original-authority clusters, which resolve per request.
    /// `key` is the request's hash key (`lb: hash` clusters; without one, the fallback policy).
    pub fn pick_now(
        &self,
        avoid: Option<SocketAddr>,
        key: Option<HashKey>,
    ) -> Option<Result<Arc<Endpoint>, PickError>> {
        if let Endpoints::OriginalAuthority { .. } = &self.config.endpoints {
            return None;
        }
        if let (Some(key), Some(ring), Some(hash)) =
            (key, self.endpoints.ring(), self.config.hash.as_ref())
        {
            let bounds = ring::Bounds {
                factor: hash.bounded_load,
                in_flight: self.endpoints.in_flight(),
                avoid,
                ejections: self.config.outlier.is_some(),
            };
            if let Some(e) = ring.pick(key.0, bounds, Instant::now) {
                return Some(Ok(e.clone()));
            }
            // No usable endpoint on the ring: the fallback's panic mode picks one.
        }
        let endpoints = self.endpoints.load();
        Some(
            balance::pick(&self.policy(), &endpoints, &self.next, avoid)
                .ok_or(PickError::NoEndpoints),
        )
    }

    fn policy(&self) -> balance::Policy<'_> {
        balance::Policy {
            // A hash cluster balances requests without a key by its fallback.
            lb: match (self.config.lb, &self.config.hash) {
                (LbPolicy::Hash, Some(h)) => h.fallback,
                (lb, _) => lb,
            },
            outlier: self.config.outlier.as_ref(),
            slow: self.config.slow_start.as_ref(),
            load_weight: self.load_report.as_ref().map(|r| r.weight),
        }
    }

    /// Current endpoints (for the admin endpoint and tests).
    pub fn endpoints(&self) -> Arc<Vec<Arc<Endpoint>>> {
        self.endpoints.load_full()
    }
}

/// The filter's name for a config metric (config and filters do not know each other).
fn metric_name(m: &LoadMetric) -> MetricName {
    match m {
        LoadMetric::CpuUtilization => MetricName::Field(Field::CpuUtilization),
        LoadMetric::MemUtilization => MetricName::Field(Field::MemUtilization),
        LoadMetric::ApplicationUtilization => MetricName::Field(Field::ApplicationUtilization),
        LoadMetric::RpsFractional => MetricName::Field(Field::RpsFractional),
        LoadMetric::Eps => MetricName::Field(Field::Eps),
        LoadMetric::Named(k) => MetricName::Named(k.clone()),
        LoadMetric::Utilization(k) => MetricName::Utilization(k.clone()),
        LoadMetric::RequestCost(k) => MetricName::RequestCost(k.clone()),
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if let Some(task) = self.refresh.take() {
            task.abort();
        }
    }
}
