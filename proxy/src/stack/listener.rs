//! A listener's stack, outermost first. Every request on the listener goes through it; the
//! routing service at the bottom hands the request to its route's stack
//! ([`super::route`]). Reordering these lines is reviewed like an API change.

use std::sync::Arc;

use ferry_config::ListenerLimits;
use ferry_filters::failure::RenderErrorsLayer;
use tower::ServiceBuilder;

use super::Context;
use super::ListenerService;
use crate::failure::CLASSIFIERS;
use crate::request_body::RequestBodyLayer;
use crate::request_id::RequestIdLayer;
use crate::request_meta::RequestMetaLayer;
use crate::routing::{Routes, Routing};

/// Builds the stack of listener `name`.
pub fn listener(
    name: Arc<str>,
    limits: &ListenerLimits,
    routes: Arc<Routes>,
    cx: Context<'_>,
) -> ListenerService {
    ServiceBuilder::new()
        // Outermost, so every answer carries the id, rendered errors included.
        .layer(RequestIdLayer)
        // Outside the renderer: metrics and access records see the answer the caller got
        // (a gRPC failure is HTTP 200 with grpc-status), inner layers fill in route and
        // upstream facts through the request's `Outcome`.
        .layer(RequestMetaLayer::new(
            name,
            cx.metrics,
            cx.access_log.cloned(),
            cx.taps.clone(),
        ))
        // The one place an error becomes an answer: HTTP status + JSON, or gRPC status.
        .layer(RenderErrorsLayer::with_classifiers(CLASSIFIERS))
        // Before anything reads the body: ambiguous framing refused, the size bounded.
        .layer(RequestBodyLayer::new(limits.max_request_body_bytes))
        // Model sniffing and route match; the rest is the route's own stack.
        .service(Routing::new(routes))
}
