//! The routing table: everything a request needs, built once per config load and swapped
//! atomically on reload. In-flight requests keep the `Arc<Table>` they started with.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use ferry_config::{Action, Config, ListenerLimits, Route, StringMatch};
use rand::Rng;
use tower::retry::budget::TpsBudget;

use crate::cluster::Cluster;
use crate::descriptors::Descriptors;
use crate::metrics::{ClusterLabels, Metrics, Name, RouteLabels, RouteRequests};
use crate::router::Router;

/// One loaded configuration, ready to serve.
#[derive(Debug)]
pub struct Table {
    /// The config it was built from.
    pub config: Config,
    /// When it was loaded.
    pub loaded_at: SystemTime,
    /// Per-listener routing.
    pub listeners: HashMap<String, Arc<ListenerTable>>,
    /// Clusters by name.
    pub clusters: HashMap<String, Arc<Cluster>>,
    /// The descriptor sets of `protocol: descriptor` routes (kept for `/config_dump`).
    pub descriptors: Descriptors,
}

/// One listener's routes and limits.
#[derive(Debug)]
pub struct ListenerTable {
    /// Listener name.
    pub name: Arc<str>,
    /// Routes in priority order.
    pub router: Router<Arc<RouteEntry>>,
    /// Request limits.
    pub limits: ListenerLimits,
}

/// A route ready to serve.
#[derive(Debug)]
pub struct RouteEntry {
    /// Route name.
    pub name: Arc<str>,
    /// The route's config.
    pub config: Route,
    /// Weighted targets with cumulative weights (empty for a direct response).
    targets: Vec<(u64, Arc<Cluster>)>,
    total_weight: u64,
    /// Shared retry budget of the route.
    pub budget: Option<TpsBudget>,
    /// The configured model name (metric label), or empty.
    pub model_label: Arc<str>,
    /// The route's OIP REST ⇄ gRPC translator, if it has `translate` with `oip-v2`.
    pub translator: Option<ferry_filters::translate::Translator>,
    /// The route's generic REST → gRPC transcoder, if it has `translate` with `descriptor`.
    pub transcoder: Option<ferry_filters::transcode::Transcoder>,
    /// The route's input tensor check, if it has `validate_tensors` (its metadata cache lives
    /// as long as this table).
    pub tensor_validator: Option<ferry_filters::tensor_check::TensorValidator>,
    /// `ferry_request_duration_seconds` of this route, registered once.
    pub duration: prometheus_client::metrics::histogram::Histogram,
    /// `ferry_requests_total` of this route.
    pub requests: RouteRequests,
}

/// A cluster name a route refers to was missing from the table (validation should have
/// caught it).
#[derive(Debug, thiserror::Error)]
#[error("route {route:?} refers to unknown cluster {cluster:?}")]
pub struct UnknownCluster {
    route: String,
    cluster: String,
}

// === impl Table ===

impl Table {
    /// Builds the table, reusing clusters from `previous` whose config did not change (their
    /// pools, latency estimates and ejections carry over).
    pub fn build(
        config: Config,
        descriptors: Descriptors,
        previous: Option<&Table>,
        metrics: &Metrics,
    ) -> Result<Self, UnknownCluster> {
        let mut clusters = HashMap::new();
        for c in &config.clusters {
            let reused = previous
                .and_then(|p| p.clusters.get(&c.name))
                .filter(|old| old.same_config(c))
                .cloned();
            let cluster = reused.unwrap_or_else(|| Arc::new(Cluster::new(c.clone(), metrics)));
            // Pre-register so dashboards see a 0 series before the first failure.
            let labels = ClusterLabels {
                cluster: Name(cluster.name.clone()),
            };
            drop(metrics.connect_errors.get_or_create(&labels));
            drop(metrics.ejections.get_or_create(&labels));
            clusters.insert(c.name.clone(), cluster);
        }
        let mut listeners = HashMap::new();
        for l in &config.listeners {
            let name: Arc<str> = l.name.as_str().into();
            let mut routes = Vec::with_capacity(l.routes.len());
            for r in &l.routes {
                drop(metrics.retries.get_or_create(&RouteLabels {
                    listener: Name(name.clone()),
                    route: Name(r.name.as_str().into()),
                }));
                let duration = metrics
                    .request_duration
                    .get_or_create(&RouteLabels {
                        listener: Name(name.clone()),
                        route: Name(r.name.as_str().into()),
                    })
                    .clone();
                routes.push((
                    r.matcher.clone(),
                    Arc::new(RouteEntry::new(
                        r,
                        &clusters,
                        duration,
                        descriptors.transcoder(&l.name, &r.name),
                        (metrics, &name),
                    )?),
                ));
            }
            listeners.insert(
                l.name.clone(),
                Arc::new(ListenerTable {
                    name,
                    router: Router::new(routes),
                    limits: l.limits.clone(),
                }),
            );
        }
        Ok(Self {
            config,
            loaded_at: SystemTime::now(),
            listeners,
            clusters,
            descriptors,
        })
    }
}

// === impl RouteEntry ===

impl RouteEntry {
    fn new(
        r: &Route,
        clusters: &HashMap<String, Arc<Cluster>>,
        duration: prometheus_client::metrics::histogram::Histogram,
        transcoder: Option<ferry_filters::transcode::Transcoder>,
        series: (&Metrics, &Arc<str>),
    ) -> Result<Self, UnknownCluster> {
        let mut targets = Vec::new();
        let mut total = 0u64;
        if let Action::Forward(list) = &r.action {
            for t in list {
                let cluster = clusters
                    .get(&t.cluster)
                    .cloned()
                    .ok_or_else(|| UnknownCluster {
                        route: r.name.clone(),
                        cluster: t.cluster.clone(),
                    })?;
                total += u64::from(t.weight.get());
                targets.push((total, cluster));
            }
        }
        let budget = r.retry.as_ref().map(|p| {
            TpsBudget::new(
                Duration::from_secs(10),
                p.min_retries_per_second,
                p.budget_ratio as f32,
            )
        });
        let model_label: Arc<str> = match r.matcher.model.as_ref().map(|m| &m.name) {
            Some(StringMatch::Exact(name)) => name.as_str().into(),
            _ => "".into(),
        };
        let name: Arc<str> = r.name.as_str().into();
        let (metrics, listener) = series;
        let requests =
            RouteRequests::new(metrics, listener.clone(), name.clone(), model_label.clone());
        Ok(Self {
            name,
            config: r.clone(),
            targets,
            total_weight: total,
            budget,
            model_label,
            translator: crate::forward::translate::translator(r.translate.as_ref()),
            transcoder,
            tensor_validator: crate::forward::tensor_check::validator(
                r.validate_tensors.as_ref(),
                r.translate.as_ref(),
            ),
            duration,
            requests,
        })
    }

    /// Picks a cluster by weight; `None` for a direct-response route.
    pub fn pick_cluster(&self) -> Option<&Arc<Cluster>> {
        match self.targets.as_slice() {
            [] => None,
            [(_, only)] => Some(only),
            many => {
                let x = rand::rng().random_range(0..self.total_weight.max(1));
                many.iter().find(|(cum, _)| x < *cum).map(|(_, c)| c)
            }
        }
    }
}
