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

use ferry_config::{Action, ClusterTls, Config, ListenerLimits, Route, StringMatch, TlsMode};
use ferry_filters::authorization::AuthorizationSettings;

use crate::cluster::Cluster;
use crate::descriptors::Descriptors;
use crate::filter_settings;
use crate::metrics::{ClusterLabels, Name, RouteLabels, RouteRequests};
use crate::route::RouteEntry;
use crate::router::Router;
use crate::routing::Routes;
use crate::stack::{self, Context, ListenerService};
use crate::state::{RouteKey, RouteState};
use crate::tls::{Originator, Terminator};

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
    /// The contents of the TLS files it was built with (reload compares it: a rotation
    /// changes files, not the config).
    pub tls_fingerprint: String,
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
    /// TLS termination; `None` when `tls.mode` is disabled.
    pub tls: Option<Arc<Terminator>>,
}

/// A cluster name a route refers to was missing from the table (validation should have
/// caught it).
#[derive(Debug, thiserror::Error)]
#[error("route {route:?} refers to unknown cluster {cluster:?}")]
pub struct UnknownCluster {
    route: String,
    cluster: String,
}

/// Why a validated config could still not be built into a table.
#[derive(Debug, thiserror::Error)]
pub enum TableError {
    /// A route names a cluster that does not exist.
    #[error(transparent)]
    UnknownCluster(#[from] UnknownCluster),
    /// A route names a limit this build cannot enforce.
    #[error(transparent)]
    Limits(#[from] crate::limits::Unsupported),
    /// A listener's or cluster's TLS settings were refused by the TLS stack.
    #[error("{what}: {message}")]
    Tls {
        /// `listener "x"` or `cluster "y"`.
        what: String,
        /// The TLS stack's reason.
        message: String,
    },
}

fn tls_error(what: String, e: impl std::fmt::Display) -> TableError {
    TableError::Tls {
        what,
        message: e.to_string(),
    }
}

// === impl Table ===

impl Table {
    /// Builds the table, reusing what `previous` has for unchanged clusters and routes.
    pub fn build(
        config: Config,
        descriptors: Descriptors,
        previous: Option<&Table>,
        cx: Context<'_>,
    ) -> Result<Self, TableError> {
        let metrics = cx.metrics;
        let mut clusters = HashMap::new();
        for c in &config.clusters {
            let ca = cx.tls.ca_fingerprint(c);
            let reused = previous
                .and_then(|p| p.clusters.get(&c.name))
                .filter(|old| old.same_config(c) && old.ca_fingerprint == ca)
                .cloned();
            let cluster = match reused {
                Some(c) => c,
                None => {
                    let tls = originator(c, cx)
                        .map_err(|e| tls_error(format!("cluster {:?}", c.name), e))?;
                    let mut cluster = Cluster::new(c.clone(), metrics, cx.transport.clone(), tls);
                    cluster.ca_fingerprint = ca;
                    Arc::new(cluster)
                }
            };
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
                let mirrors = mirrors(r, &clusters)?;
                let reused = old
                    .get(r.name.as_str())
                    .filter(|e| {
                        e.definition == definition && same_clusters(&e.clusters, &targets, &mirrors)
                    })
                    .filter(|_| r.translate.as_ref().is_none_or(|t| t.descriptor.is_none()));
                let entry = match reused {
                    Some(e) => Arc::clone(e),
                    None => Arc::new(RouteEntry::new(
                        r,
                        &name,
                        definition,
                        (targets, mirrors),
                        descriptors.transcoder(&l.name, &r.name),
                        Checks {
                            authorization: route_authorization(r)?,
                            rate_limit: crate::limits::rate_limit_layer(
                                &l.name,
                                r,
                                config.redis.as_ref(),
                                cx.limits,
                                metrics,
                            )?,
                        },
                        cx,
                    )),
                };
                routes.push((r.matcher.clone(), entry));
            }
            let authorization = match &l.authorization {
                Some(a) => Some(crate::routing::ListenerAuthorization::new(
                    filter_settings::authorization(a).map_err(|e| {
                        tls_error(format!("listener {:?} authorization", l.name), e)
                    })?,
                    &name,
                    metrics,
                )),
                None => None,
            };
            let router = Router::new(routes);
            let names_models = |a: &Option<ferry_config::Authorization>| {
                a.as_ref()
                    .is_some_and(|a| a.rules.iter().any(|r| !r.models.is_empty()))
            };
            // Limits keyed on the model, and concurrency slots (per model), need it too.
            let keys_on_model = |r: &Route| {
                r.concurrency.is_some()
                    || r.rate_limit.iter().any(|l| {
                        l.key.contains(&ferry_config::KeyPart::Model)
                            || l.overrides.iter().any(|o| {
                                o.matches
                                    .iter()
                                    .any(|(p, _)| *p == ferry_config::KeyPart::Model)
                            })
                    })
            };
            let sniff_model = router.uses_model()
                || names_models(&l.authorization)
                || l.routes
                    .iter()
                    .any(|r| names_models(&r.authorization) || keys_on_model(r));
            let routes = Arc::new(Routes {
                router,
                model_sniff_bytes: l.limits.model_sniff_bytes as usize,
                authorization,
                sniff_model,
            });
            let tls = match l.tls.mode {
                TlsMode::Disabled => None,
                mode => {
                    let peers = l
                        .tls
                        .peers
                        .as_ref()
                        .map(crate::tls::identity_match)
                        .transpose()
                        .map_err(|e| tls_error(format!("listener {:?} tls.peers", l.name), e))?;
                    let terminator = Terminator::new(
                        name.clone(),
                        mode,
                        peers,
                        l.tls.handshake_timeout,
                        cx.identity.clone(),
                    )
                    .map_err(|e| tls_error(format!("listener {:?}", l.name), e))?;
                    Some(Arc::new(terminator))
                }
            };
            let service = stack::listener(name.clone(), &l.limits, routes.clone(), cx);
            listeners.insert(
                l.name.clone(),
                Arc::new(ListenerTable {
                    name,
                    routes,
                    limits: l.limits.clone(),
                    service,
                    tls,
                }),
            );
        }
        cx.limits.retain(|listener, route| {
            config
                .listeners
                .iter()
                .any(|l| l.name == listener && l.routes.iter().any(|r| r.name == route))
        });
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
            tls_fingerprint: cx.tls.fingerprint(),
        })
    }
}

/// A route's filters that can fail to build, built before its entry.
struct Checks {
    authorization: Option<AuthorizationSettings>,
    rate_limit: Option<ferry_filters::limits::RateLimitLayer>,
}

/// A route's `authorization` as the filter's settings.
fn route_authorization(r: &Route) -> Result<Option<AuthorizationSettings>, TableError> {
    r.authorization
        .as_ref()
        .map(|a| {
            filter_settings::authorization(a)
                .map_err(|e| tls_error(format!("route {:?} authorization", r.name), e))
        })
        .transpose()
}

/// A cluster's TLS origination, if it has `tls`.
fn originator(
    c: &ferry_config::Cluster,
    cx: Context<'_>,
) -> Result<Option<Arc<Originator>>, String> {
    let originator = match &c.tls {
        None => return Ok(None),
        Some(ClusterTls::Mesh { server, sni }) => {
            let server = server
                .as_ref()
                .map(crate::tls::identity_match)
                .transpose()
                .map_err(|e| format!("tls.server: {e}"))?;
            Originator::mesh(cx.identity, server, sni.as_deref())
        }
        Some(ClusterTls::Server { sni, .. }) => {
            let roots = cx
                .tls
                .server_roots
                .get(&c.name)
                .cloned()
                .ok_or("CA bundles were not loaded")?;
            Originator::server(roots, sni.as_deref())
        }
    };
    originator
        .map(|o| Some(Arc::new(o)))
        .map_err(|e| e.to_string())
}

/// The route's effective-config JSON: what "the route's definition is unchanged" compares.
fn definition(config: &Config, listener: usize, route: usize) -> String {
    let route_json = &config.effective_json["listeners"][listener]["routes"][route];
    let global = config.listeners[listener].routes[route]
        .rate_limit
        .iter()
        .any(|l| l.scope == ferry_config::Scope::Global);
    if global {
        // The store is part of what a global limit is: a new redis is a new stack.
        format!("{route_json}{}", config.effective_json["redis"])
    } else {
        route_json.to_string()
    }
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

/// The route's mirrors' candidate clusters, in `mirror` order.
fn mirrors(
    r: &Route,
    clusters: &HashMap<String, Arc<Cluster>>,
) -> Result<Vec<Arc<Cluster>>, UnknownCluster> {
    r.mirror
        .iter()
        .map(|m| {
            clusters
                .get(&m.cluster)
                .cloned()
                .ok_or_else(|| UnknownCluster {
                    route: r.name.clone(),
                    cluster: m.cluster.clone(),
                })
        })
        .collect()
}

fn same_clusters(
    old: &[Arc<Cluster>],
    new: &[(u32, Arc<Cluster>)],
    mirrors: &[Arc<Cluster>],
) -> bool {
    let new = new.iter().map(|(_, c)| c).chain(mirrors);
    old.len() == new.clone().count() && old.iter().zip(new).all(|(a, b)| Arc::ptr_eq(a, b))
}

/// A route's weighted clusters and its mirrors' clusters.
type RouteClusters = (Vec<(u32, Arc<Cluster>)>, Vec<Arc<Cluster>>);

// === impl RouteEntry ===

impl RouteEntry {
    fn new(
        r: &Route,
        listener: &Arc<str>,
        definition: String,
        (targets, mirrors): RouteClusters,
        transcoder: Option<ferry_filters::transcode::Transcoder>,
        checks: Checks,
        cx: Context<'_>,
    ) -> Self {
        let metrics = cx.metrics;
        let name: Arc<str> = r.name.as_str().into();
        let labels = RouteLabels {
            listener: Name(listener.clone()),
            route: Name(name.clone()),
        };
        let duration = metrics.request_duration.get_or_create(&labels).clone();
        let request_size = metrics.request_size.get_or_create(&labels).clone();
        let response_size = metrics.response_size.get_or_create(&labels).clone();
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
        let overhead = crate::metrics::RouteOverhead::new(
            metrics,
            listener.clone(),
            name.clone(),
            model_label.clone(),
        );
        let service = stack::route(
            stack::RouteParts {
                route: r,
                labels,
                targets: &targets,
                mirrors: &mirrors,
                transcoder,
                state: &state,
                authorization: checks.authorization,
                identity: Some(cx.identity.clone()),
                rate_limit: checks.rate_limit,
                concurrency: crate::limits::concurrency_layer(
                    listener,
                    r,
                    cx.limits,
                    metrics,
                    state.stats.clone(),
                ),
                tracing: cx
                    .tracing
                    .map(|t| stack::route_trace_layer(t, listener, r, &targets)),
            },
            metrics,
        );
        Self {
            name,
            config: r.clone(),
            definition,
            clusters: targets.into_iter().map(|(_, c)| c).chain(mirrors).collect(),
            state,
            service,
            model_label,
            duration,
            overhead,
            request_size,
            response_size,
            requests,
        }
    }
}
