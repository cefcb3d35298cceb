//! The admin endpoint: the page at `/` ([`page`]), `/live`, `/ready`, `/config_dump`,
//! `/metrics`, `/stats` (windowed request statistics), `/recent` (recent failed and slowest
//! requests) and `/tap` (live access records, [`crate::tap`]).
//!
//! Served on its own listener (default 127.0.0.1:15000) so probes and scrapes never queue
//! behind model traffic.

use std::sync::Arc;
use std::time::UNIX_EPOCH;

use http::header::{CONTENT_TYPE, HeaderValue};
use http::{Method, Request, Response, StatusCode};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::body::{ProxyBody, full};
use crate::shared::Shared;

pub mod page;

/// Serves admin requests until `stop` turns true.
pub async fn serve(listener: TcpListener, shared: Arc<Shared>, mut stop: watch::Receiver<bool>) {
    loop {
        let accepted = tokio::select! {
            _ = stop.wait_for(|s| *s) => return,
            accepted = listener.accept() => accepted,
        };
        let (stream, _) = match accepted {
            Ok(pair) => pair,
            Err(error) => {
                tracing::warn!(%error, "admin accept failed");
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                continue;
            }
        };
        let shared = shared.clone();
        tokio::spawn(async move {
            let service = service_fn(move |req| {
                let shared = shared.clone();
                async move { Ok::<_, std::convert::Infallible>(answer(&shared, &req)) }
            });
            let _ = auto::Builder::new(TokioExecutor::new())
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

fn answer(shared: &Shared, req: &Request<Incoming>) -> Response<ProxyBody> {
    if req.method() != Method::GET && req.method() != Method::HEAD {
        return text(StatusCode::METHOD_NOT_ALLOWED, "only GET\n");
    }
    match req.uri().path() {
        "/" => page::page(),
        "/live" => text(StatusCode::OK, "live\n"),
        "/ready" if shared.is_draining() => text(StatusCode::SERVICE_UNAVAILABLE, "draining\n"),
        "/ready" => text(StatusCode::OK, "ready\n"),
        "/config_dump" => config_dump(shared),
        "/tap" => crate::tap::answer(&shared.taps, req.uri().query()),
        "/stats" => stats(shared, req.uri().query()),
        "/recent" => {
            let mut resp = Response::new(full(shared.metrics.recent.json()));
            resp.headers_mut()
                .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
            resp
        }
        "/mirror" => {
            let mut resp = Response::new(full(shared.metrics.mirror.samples.json()));
            resp.headers_mut()
                .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
            resp
        }
        "/metrics" => {
            shared.limits.export(&shared.metrics);
            // Prometheus asks for OpenMetrics when exemplar storage is on; only that format
            // carries the trace ids.
            let openmetrics = req.headers().get_all(http::header::ACCEPT).iter().any(|v| {
                v.to_str()
                    .is_ok_and(|s| s.contains("application/openmetrics-text"))
            });
            let mut resp = Response::new(full(shared.metrics.encode(openmetrics)));
            resp.headers_mut().insert(
                CONTENT_TYPE,
                HeaderValue::from_static(if openmetrics {
                    "application/openmetrics-text; version=1.0.0; charset=utf-8"
                } else {
                    "text/plain; version=0.0.4; charset=utf-8"
                }),
            );
            resp
        }
        _ => text(
            StatusCode::NOT_FOUND,
            "not found; try / /live /ready /config_dump /metrics /stats /recent /mirror /tap\n",
        ),
    }
}

fn config_dump(shared: &Shared) -> Response<ProxyBody> {
    let table = shared.table.load();
    let loaded_at = table
        .loaded_at
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or_default();
    let clusters: serde_json::Map<String, serde_json::Value> = table
        .clusters
        .iter()
        .map(|(name, c)| {
            let now = std::time::Instant::now();
            let endpoints: Vec<_> = c
                .endpoints()
                .iter()
                .map(|e| {
                    serde_json::json!({
                        "address": e.addr.to_string(),
                        "ejected": e.is_ejected(now),
                        "in_flight": e.in_flight(),
                        // The balanced-on metric of its last load report (`lb.load_report`).
                        "load_report": e.reported_load(),
                    })
                })
                .collect();
            (name.clone(), serde_json::json!({ "endpoints": endpoints }))
        })
        .collect();
    let body = serde_json::json!({
        "version": table.config.version,
        "loaded_at": loaded_at,
        "draining": shared.is_draining(),
        "config": *table.config.effective_json,
        "endpoints": clusters,
        "descriptors": table.descriptors.dump(),
        "limits": shared.limits.dump(),
        "taps": { "attached": shared.taps.count(), "limit": crate::tap::MAX_TAPS },
        "identity": shared.identity.current().map(|m| serde_json::json!({
            "spiffe_id": m.id.as_str(),
            "cert": m.cert_path.display().to_string(),
            "not_after": m.not_after,
            "files": m.files,
        })),
    });
    let mut resp = Response::new(full(body.to_string()));
    resp.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    resp
}

/// `/stats?window=30s&by=route&series=1` (see docs/observability.md).
fn stats(shared: &Shared, query: Option<&str>) -> Response<ProxyBody> {
    match crate::stats::Query::parse(query) {
        Ok(q) => json(StatusCode::OK, &shared.windows.query(&q)),
        Err(e) => json(
            StatusCode::BAD_REQUEST,
            &serde_json::json!({ "error": e.to_string(), "parameter": e.parameter }),
        ),
    }
}

fn json(status: StatusCode, body: &serde_json::Value) -> Response<ProxyBody> {
    let mut resp = Response::new(full(body.to_string()));
    *resp.status_mut() = status;
    resp.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    resp
}

fn text(status: StatusCode, body: &'static str) -> Response<ProxyBody> {
    let mut resp = Response::new(full(body));
    *resp.status_mut() = status;
    resp.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    resp
}
