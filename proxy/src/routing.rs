//! Routing: the last layer of a listener's stack. It learns the model the request names (the
//! OIP path; only when some route looks at models, or the call is OIP gRPC, also the first
//! gRPC message or the JSON body's `model`, read without losing a byte), finds the first
//! matching route and hands the request to that route's own stack. No match: 404 /
//! UNIMPLEMENTED.

mod sniff;

use std::sync::Arc;
use std::task::{Context, Poll};

use ferry_filters::model_name;
use http::{Request, Response};

use crate::body::{BoxError, BoxFuture, ProxyBody};
use crate::failure::Failure;
use crate::headers::{self, authority_of};
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
        let routes = self.routes.clone();
        Box::pin(async move {
            let (req, model) = learn_model(&routes, req).await?;
            let route = find(&routes.router, &req, model.as_ref())?;
            if let (Some(model), Some(outcome)) = (model, Outcome::of(&req)) {
                outcome.set_model(model);
            }
            if let Some(outcome) = Outcome::of(&req) {
                outcome.set_route(route.clone());
            }
            route.service.call_ref(req).await
        })
    }
}

/// Finds the model (path first; the body only when worth it).
async fn learn_model(
    routes: &Routes,
    req: Request<ProxyBody>,
) -> Result<(Request<ProxyBody>, Option<model_name::ModelRef>), Failure> {
    let path = req.uri().path();
    let mut model = model_name::from_oip_path(path);
    // OIP gRPC calls name their model in the first message, which arrives with the headers,
    // so reading it costs no extra wait and lets logs and metrics name the model.
    let oip_grpc = model_name::is_oip_grpc_model_method(path) && headers::is_grpc(req.headers());
    let mut req = req;
    if model.is_none() && (routes.router.uses_model() || oip_grpc) {
        let (parts, body) = req.into_parts();
        let (found, replay) = sniff::model(&parts, body, routes.model_sniff_bytes).await?;
        model = found;
        req = Request::from_parts(parts, replay);
    }
    Ok((req, model))
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
