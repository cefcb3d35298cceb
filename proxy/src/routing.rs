//! Routing: the last layer of a listener's stack. It learns the model the request names (the
//! OIP path; only when some route looks at models, or the call is OIP gRPC, also the first
//! gRPC message or the JSON body's `model`, read without losing a byte), finds the first
//! matching route and hands the request to that route's own stack. No match: 404 /
//! UNIMPLEMENTED.

mod sniff;

use std::sync::Arc;
use std::task::{Context, Poll};

use ferry_filters::authorization::{AuthorizationSettings, PermissionDenied};
use ferry_filters::connection::Connection;
use ferry_filters::model_name;
use http::{Request, Response};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;

use crate::body::{BoxError, BoxFuture, ProxyBody};
use crate::failure::Failure;
use crate::headers::{self, authority_of};
use crate::metrics::{Metrics, Name, RouteLabels};
use crate::request_meta::Outcome;
use crate::route::RouteEntry;
use crate::router::{RequestView, Router};

/// One listener's routes, as the routing service reads them.
#[derive(Debug)]
pub struct Routes {
    /// Routes in priority order.
    pub router: Router<Arc<RouteEntry>>,
    /// How much of a body may be read to find the model.
    pub model_sniff_bytes: usize,
    /// The listener's `authorization`, if any.
    pub authorization: Option<ListenerAuthorization>,
    /// Read the model from the body when the path does not name it: some route matches on
    /// the model, or some authorization rule (listener or route) names models.
    pub sniff_model: bool,
}

/// A listener's authorization policy. Routing checks it once it knows the route and model, so
/// model-scoped listener rules work, and before answering "no route", so a refused peer
/// learns nothing about the routes (403, not 404). Route policies are layers in each route's
/// stack, after this one: a request must pass both.
#[derive(Debug)]
pub struct ListenerAuthorization {
    settings: AuthorizationSettings,
    /// The listener's `ferry_authz_denied_total` series with no route (nothing matched).
    unrouted: Counter,
    family: Family<RouteLabels, Counter>,
}

impl ListenerAuthorization {
    /// Enforces `settings`, counting denials in `metrics`.
    pub fn new(settings: AuthorizationSettings, listener: &Arc<str>, metrics: &Metrics) -> Self {
        let unrouted = metrics
            .authz_denied
            .get_or_create(&RouteLabels {
                listener: Name(listener.clone()),
                route: Name(metrics.empty.clone()),
            })
            .clone();
        ListenerAuthorization {
            settings,
            unrouted,
            family: metrics.authz_denied.clone(),
        }
    }

    fn check(
        &self,
        req: &Request<ProxyBody>,
        model: Option<&model_name::ModelRef>,
        route: Option<&RouteEntry>,
    ) -> Result<(), PermissionDenied> {
        let conn = Connection::of(req);
        let identity = conn.and_then(|c| c.identity.as_ref());
        let Err(cause) = self.settings.decide(identity, model) else {
            return Ok(());
        };
        tracing::debug!(
            listener = conn.map(|c| &*c.listener),
            route = route.map(|r| &*r.name),
            identity = identity.map(|i| &*i.0),
            model = model.map(|m| m.name.as_str()),
            cause = cause.as_str(),
            "listener authorization denied the request",
        );
        match (route, conn) {
            (Some(route), Some(conn)) => self
                .family
                .get_or_create(&RouteLabels {
                    listener: Name(conn.listener.clone()),
                    route: Name(route.name.clone()),
                })
                .inc(),
            _ => self.unrouted.inc(),
        };
        Err(PermissionDenied::new(cause, identity.cloned()))
    }
}

/// The routing service of one listener.
#[derive(Debug, Clone)]
pub struct Routing {
    routes: Arc<Routes>,
}

type RouteFuture = BoxFuture;

// === impl Routing ===

impl Routing {
    /// Routes over `routes`.
    pub fn new(routes: Arc<Routes>) -> Self {
        Routing { routes }
    }
}

impl tower::Service<Request<ProxyBody>> for Routing {
    type Response = Response<ProxyBody>;
    type Error = BoxError;
    type Future = RouteFuture;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<ProxyBody>) -> RouteFuture {
        let path = req.uri().path();
        let model = model_name::from_oip_path(path).or_else(|| model_name::from_v1_path(path));
        // OIP gRPC calls name their model in the first message, which arrives with the
        // headers, so reading it costs no extra wait and lets logs and metrics name the model.
        let oip_grpc =
            model_name::is_oip_grpc_model_method(path) && headers::is_grpc(req.headers());
        if model.is_none() && (self.routes.sniff_model || oip_grpc) {
            // The body must be read first: the rare path, boxed.
            let routes = self.routes.clone();
            return Box::pin(async move {
                let (req, model) = sniff_model(&routes, req).await?;
                dispatch(&routes, req, model)?.await
            });
        }
        // No body to read: the route's own future is the whole answer.
        match dispatch(&self.routes, req, model) {
            Ok(answer) => answer,
            Err(failure) => Box::pin(std::future::ready(Err(failure))),
        }
    }
}

/// Finds the route, applies the listener's authorization, records the route and the model,
/// and calls the route's stack.
fn dispatch(
    routes: &Routes,
    mut req: Request<ProxyBody>,
    model: Option<model_name::ModelRef>,
) -> Result<BoxFuture, BoxError> {
    let route = find(&routes.router, &req, model.as_ref());
    if let Some(authz) = &routes.authorization {
        authz.check(&req, model.as_ref(), route.as_ref().ok().map(|r| &**r))?;
    }
    let route = route?;
    if let Some(outcome) = Outcome::of(&req) {
        if let Some(model) = &model {
            outcome.set_model(model.clone());
        }
        outcome.set_route(route.clone());
    }
    if let Some(model) = model {
        // Filters that look at the model (authorization) read it here.
        req.extensions_mut().insert(model);
    }
    Ok(route.service.call_ref(req))
}

/// Reads the model from the body (the first gRPC message or the JSON `model`), replaying
/// every byte read.
async fn sniff_model(
    routes: &Routes,
    req: Request<ProxyBody>,
) -> Result<(Request<ProxyBody>, Option<model_name::ModelRef>), Failure> {
    let (parts, body) = req.into_parts();
    let (found, replay) = sniff::model(&parts, body, routes.model_sniff_bytes).await?;
    Ok((Request::from_parts(parts, replay), found))
}

fn find(
    router: &Router<Arc<RouteEntry>>,
    req: &Request<ProxyBody>,
    model: Option<&model_name::ModelRef>,
) -> Result<Arc<RouteEntry>, Failure> {
    let authority = authority_of(req);
    let view = RequestView {
        method: req.method(),
        authority: authority.as_deref(),
        path: req.uri().path(),
        headers: req.headers(),
        model,
    };
    router
        .route(&view)
        .cloned()
        .ok_or_else(|| Failure::NoRoute {
            method: req.method().to_string(),
            path: req.uri().path().to_owned(),
        })
}
