//! HTTP routes of the injector: `/inject` on the TLS port, probes and metrics on both.

use std::{
    convert::Infallible,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::Instant,
};

use http::{Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming};

use super::{metrics::Metrics, review};
use crate::settings::SidecarArgs;

/// The API server caps admission requests well below this; anything larger is not a review.
const MAX_REVIEW_BYTES: usize = 8 * 1024 * 1024;

/// Shared state of both listeners.
#[derive(Debug)]
pub struct State {
    /// The sidecar injected into every pod.
    pub sidecar: SidecarArgs,
    /// Metrics.
    pub metrics: Arc<Metrics>,
    /// False before serving and while draining, so the Service stops routing to us first.
    pub ready: AtomicBool,
}

/// Which listener a request came in on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Listener {
    /// The HTTPS webhook port.
    Webhook,
    /// The plaintext admin port.
    Admin,
}

/// Routes one request.
pub async fn handle(
    state: Arc<State>,
    listener: Listener,
    req: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let path = req.uri().path();
    Ok(match (req.method(), path) {
        (&Method::POST, "/inject") if listener == Listener::Webhook => inject(&state, req).await,
        (&Method::GET, "/live") => text(StatusCode::OK, "live\n"),
        (&Method::GET, "/ready") if state.ready.load(Ordering::Acquire) => {
            text(StatusCode::OK, "ready\n")
        }
        (&Method::GET, "/ready") => text(StatusCode::SERVICE_UNAVAILABLE, "not ready\n"),
        (&Method::GET, "/metrics") => Response::builder()
            .header(
                header::CONTENT_TYPE,
                "application/openmetrics-text; version=1.0.0; charset=utf-8",
            )
            .body(Full::new(Bytes::from(state.metrics.encode())))
            .unwrap_or_else(|_| text(StatusCode::INTERNAL_SERVER_ERROR, "")),
        _ => text(StatusCode::NOT_FOUND, "not found\n"),
    })
}

async fn inject(state: &State, req: Request<Incoming>) -> Response<Full<Bytes>> {
    let started = Instant::now();
    let body = match Limited::new(req.into_body(), MAX_REVIEW_BYTES)
        .collect()
        .await
    {
        Ok(collected) => collected.to_bytes(),
        Err(e) => {
            tracing::warn!(error = %e, "admission review body unreadable");
            state.metrics.review(
                review::ReviewResult::Malformed,
                started.elapsed().as_secs_f64(),
            );
            return text(
                StatusCode::PAYLOAD_TOO_LARGE,
                "admission review body unreadable or too large\n",
            );
        }
    };
    let (response, result) = review::review(&body, &state.sidecar);
    state
        .metrics
        .review(result, started.elapsed().as_secs_f64());
    tracing::debug!(result = result.as_str(), "admission review answered");
    let bytes = serde_json::to_vec(&response).unwrap_or_default();
    Response::builder()
        .header(header::CONTENT_TYPE, "application/json")
        .body(Full::new(Bytes::from(bytes)))
        .unwrap_or_else(|_| text(StatusCode::INTERNAL_SERVER_ERROR, ""))
}

fn text(status: StatusCode, body: &'static str) -> Response<Full<Bytes>> {
    let mut resp = Response::new(Full::new(Bytes::from_static(body.as_bytes())));
    *resp.status_mut() = status;
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("text/plain"),
    );
    resp
}
