//! A route at run time: its stack, its state and its metric series, as the routing table
//! holds it and the routing layer calls it.

use std::sync::Arc;
use std::task::{Context, Poll};

use ferry_config::Route;
use http::{Request, Response};

use crate::body::{BoxError, BoxFuture, ProxyBody, StackService};
use crate::cluster::Cluster;
use crate::metrics::RouteRequests;
use crate::state::RouteState;

/// What [`RouteService::new`] can erase: a stack service that can be shared between requests
/// (a trait alias: the bound, written once).
pub trait ShareableService:
    tower::Service<
        Request<ProxyBody>,
        Response = Response<ProxyBody>,
        Error = BoxError,
        Future: Send + 'static,
    > + Clone
    + Send
    + Sync
    + 'static
{
}

impl<S> ShareableService for S where
    S: tower::Service<
            Request<ProxyBody>,
            Response = Response<ProxyBody>,
            Error = BoxError,
            Future: Send + 'static,
        > + Clone
        + Send
        + Sync
        + 'static
{
}

/// A route's stack (or a part of it) behind one type, so routes with different layers share
/// the route table. Unlike `tower::util::BoxCloneSyncService`, it is called through `&self`
/// (the routing layer holds routes in an `Arc`d table: no per-request clone of a boxed
/// service) and an inner future that is already boxed is not boxed again. Both cost an
/// allocation per request per boxed level; with them the first stacked version ran 6–10 %
/// more CPU per HTTP/1.1 request than the hand-written path (bench/results/2026-12-04-stack).
///
/// Calls skip `poll_ready`: every service in ferry's stacks is always ready, because layers
/// shed load with an answer (429/503) instead of applying back-pressure (style guide §10).
#[derive(Clone)]
pub struct RouteService(Arc<dyn CallShared>);

trait CallShared: Send + Sync + 'static {
    fn call_shared(&self, req: Request<ProxyBody>) -> BoxFuture;
}

/// A service whose future is boxed on the way out.
struct Boxing<S>(S);

/// A service whose future is a [`BoxFuture`] already.
struct Boxed<S>(S);

// === impl RouteService ===

impl RouteService {
    /// Erases `service`'s type, boxing its futures.
    pub fn new<S>(service: S) -> Self
    where
        S: ShareableService,
    {
        RouteService(Arc::new(Boxing(service)))
    }

    /// Erases `service`'s type; its futures are boxed already.
    pub fn from_boxed<S>(service: S) -> Self
    where
        S: StackService + Clone + Send + Sync + 'static,
    {
        RouteService(Arc::new(Boxed(service)))
    }

    /// Calls the service without taking it mutably.
    pub fn call_ref(&self, req: Request<ProxyBody>) -> BoxFuture {
        self.0.call_shared(req)
    }
}

impl std::fmt::Debug for RouteService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RouteService")
    }
}

impl tower::Service<Request<ProxyBody>> for RouteService {
    type Response = Response<ProxyBody>;
    type Error = BoxError;
    type Future = BoxFuture;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<ProxyBody>) -> BoxFuture {
        self.0.call_shared(req)
    }
}

impl<S> CallShared for Boxing<S>
where
    S: ShareableService,
{
    fn call_shared(&self, req: Request<ProxyBody>) -> BoxFuture {
        Box::pin(self.0.clone().call(req))
    }
}

impl<S> CallShared for Boxed<S>
where
    S: StackService + Clone + Send + Sync + 'static,
{
    fn call_shared(&self, req: Request<ProxyBody>) -> BoxFuture {
        self.0.clone().call(req)
    }
}

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
    pub duration: crate::metrics::ExemplarHistogram,
    /// `ferry_proxy_overhead_seconds` of this route.
    pub overhead: crate::metrics::RouteOverhead,
    /// `ferry_request_size_bytes` of this route.
    pub request_size: prometheus_client::metrics::histogram::Histogram,
    /// `ferry_response_size_bytes` of this route.
    pub response_size: prometheus_client::metrics::histogram::Histogram,
    /// `ferry_requests_total` of this route.
    pub requests: RouteRequests,
}
