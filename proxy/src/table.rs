//! The routing table: everything a request needs, built once per config load and swapped
//! atomically on reload. In-flight requests keep the `Arc<Table>` they started with.
//!
//! Each listener's and each route's service stack is built here (the order itself is read in
//! [`crate::stack`]). Clusters whose config did not change are reused (pools, latency,
//! ejections carry over); a route whose definition and clusters did not change keeps its
//! whole entry, stack included; a route whose clusters changed gets a new stack over the same
//! [`RouteState`] (retry budget) as long as its own definition is unchanged.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::SystemTime;

use ferry_config::{Action, Config, ListenerLimits, Route, StringMatch};

use crate::cluster::Cluster;
use crate::descriptors::Descriptors;
use crate::metrics::{ClusterLabels, Name, RouteLabels, RouteRequests};
use crate::route::RouteEntry;
use crate::router::Router;
use crate::routing::Routes;
use crate::stack::{self, Context, ListenerService};
use crate::state::{RouteKey, RouteState};

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

/// One listener's routes, limits and stack.
#[derive(Debug)]
pub struct ListenerTable {
    /// Listener name.
    pub name: Arc<str>,
    /// Routes in priority order.
    pub routes: Arc<Routes>,
    /// Request limits.
    pub limits: ListenerLimits,
    /// The listener's stack (request id → … → routing into the route stacks).
    pub service: ListenerService,
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
    /// Builds the table, reusing what `previous` has for unchanged clusters and routes.
    pub fn build(
        config: Config,
        descriptors: Descriptors,
        previous: Option<&Table>,
        cx: Context<'_>,
    ) -> Result<Self, UnknownCluster> {
        let metrics = cx.metrics;
        let mut clusters = HashMap::new();
        for c in &config.clusters {
            let reused = previous
                .and_then(|p| p.clusters.get(&c.name))
                .filter(|old| old.same_config(c))
                .cloned();
            let cluster = reused.unwrap_or_else(|| {
                Arc::new(Cluster::new(c.clone(), metrics, cx.transport.clone()))
            });
            // Pre-register so dashboards see a 0 series before the first failure.
            let labels = ClusterLabels {
                cluster: Name(cluster.name.clone()),
            };
            drop(metrics.connect_errors.get_or_create(&labels));
            drop(metrics.ejections.get_or_create(&labels));
            clusters.insert(c.name.clone(), cluster);
        }
        let mut listeners = HashMap::new();
        for (li, l) in config.listeners.iter().enumerate() {
            let name: Arc<str> = l.name.as_str().into();
            let old: HashMap<&str, &Arc<RouteEntry>> = previous
                .and_then(|p| p.listeners.get(&l.name))
                .map(|o| o.routes.router.iter().map(|e| (&*e.name, e)).collect())
                .unwrap_or_default();
            let mut routes = Vec::with_capacity(l.routes.len());
            for (ri, r) in l.routes.iter().enumerate() {
                let definition = definition(&config, li, ri);
                let targets = targets(r, &clusters)?;
                let reused = old
                    .get(r.name.as_str())
                    .filter(|e| e.definition == definition && same_clusters(&e.clusters, &targets))
                    .filter(|_| r.translate.as_ref().is_none_or(|t| t.descriptor.is_none()));
                let entry = match reused {
                    Some(e) => Arc::clone(e),
                    None => Arc::new(RouteEntry::new(
                        r,
                        &name,
                        definition,
                        targets,
                        descriptors.transcoder(&l.name, &r.name),
                        cx,
                    )),
                };
                routes.push((r.matcher.clone(), entry));
            }
            let routes = Arc::new(Routes {
                router: Router::new(routes),
                model_sniff_bytes: l.limits.model_sniff_bytes as usize,
            });
            let service = stack::listener(name.clone(), &l.limits, routes.clone(), cx);
            listeners.insert(
                l.name.clone(),
                Arc::new(ListenerTable {
                    name,
                    routes,
                    limits: l.limits.clone(),
                    service,
                }),
            );
        }
        cx.states.retain(|(listener, route)| {
            config
                .listeners
                .iter()
                .any(|l| l.name == *listener && l.routes.iter().any(|r| r.name == *route))
        });
        Ok(Self {
            config,
            loaded_at: SystemTime::now(),
            listeners,
            clusters,
            descriptors,
        })
    }
}

/// The route's effective-config JSON: what "the route's definition is unchanged" compares.
fn definition(config: &Config, listener: usize, route: usize) -> String {
    config.effective_json["listeners"][listener]["routes"][route].to_string()
}

/// The route's weighted clusters (empty for a direct response).
fn targets(
    r: &Route,
    clusters: &HashMap<String, Arc<Cluster>>,
) -> Result<Vec<(u32, Arc<Cluster>)>, UnknownCluster> {
    let Action::Forward(list) = &r.action else {
        return Ok(Vec::new());
    };
    list.iter()
        .map(|t| {
            let cluster = clusters
                .get(&t.cluster)
                .cloned()
                .ok_or_else(|| UnknownCluster {
                    route: r.name.clone(),
                    cluster: t.cluster.clone(),
                })?;
            Ok((t.weight.get(), cluster))
        })
        .collect()
}

fn same_clusters(old: &[Arc<Cluster>], new: &[(u32, Arc<Cluster>)]) -> bool {
    old.len() == new.len() && old.iter().zip(new).all(|(a, (_, b))| Arc::ptr_eq(a, b))
}

// === impl RouteEntry ===

impl RouteEntry {
    fn new(
        r: &Route,
        listener: &Arc<str>,
        definition: String,
        targets: Vec<(u32, Arc<Cluster>)>,
        transcoder: Option<ferry_filters::transcode::Transcoder>,
        cx: Context<'_>,
    ) -> Self {
        let metrics = cx.metrics;
        let name: Arc<str> = r.name.as_str().into();
        let labels = RouteLabels {
            listener: Name(listener.clone()),
            route: Name(name.clone()),
        };
        let duration = metrics.request_duration.get_or_create(&labels).clone();
        let key: RouteKey = (listener.to_string(), r.name.clone());
        let state = cx
            .states
            .get_or_make(&key, &definition, || RouteState::new(r.retry.as_ref()));
        let model_label: Arc<str> = match r.matcher.model.as_ref().map(|m| &m.name) {
            Some(StringMatch::Exact(name)) => name.as_str().into(),
            _ => "".into(),
        };
        let requests =
            RouteRequests::new(metrics, listener.clone(), name.clone(), model_label.clone());
        let service = stack::route(
            stack::RouteParts {
                route: r,
                labels,
                targets: &targets,
                transcoder,
                state: &state,
            },
            metrics,
        );
        Self {
            name,
            config: r.clone(),
            definition,
            clusters: targets.into_iter().map(|(_, c)| c).collect(),
            state,
            service,
            model_label,
            duration,
            requests,
        }
    }
}
