//! A route at run time: its stack, its state and its metric series, as the routing table
//! holds it and the routing layer calls it.

use std::sync::Arc;

use ferry_config::Route;
use http::{Request, Response};
use tower::util::BoxCloneSyncService;

use crate::body::{BoxError, ProxyBody};
use crate::cluster::Cluster;
use crate::metrics::RouteRequests;
use crate::state::RouteState;

/// A route's whole stack, boxed once at the route boundary so routes with different layers
/// share one type in the route table.
pub type RouteService = BoxCloneSyncService<Request<ProxyBody>, Response<ProxyBody>, BoxError>;

/// A route ready to serve.
#[derive(Debug)]
pub struct RouteEntry {
    /// Route name.
    pub name: Arc<str>,
    /// The route's config.
    pub config: Route,
    /// The route's definition as the effective config spells it (compared on reload).
    pub(crate) definition: String,
    /// The clusters its stack sends to (compared on reload by identity).
    pub(crate) clusters: Vec<Arc<Cluster>>,
    /// What the route remembers across reloads.
    pub state: Arc<RouteState>,
    /// The route's stack (edits → filters → split → timeout → retry → balance → client).
    pub service: RouteService,
    /// The configured model name (metric label), or empty.
    pub model_label: Arc<str>,
    /// `ferry_request_duration_seconds` of this route, registered once.
    pub duration: prometheus_client::metrics::histogram::Histogram,
    /// `ferry_requests_total` of this route.
    pub requests: RouteRequests,
}
