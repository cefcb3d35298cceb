//! HTTP/1.1 + h2c echo server. It answers with JSON describing what it received (method, path,
//! version, headers, body length) so a test can see exactly what ferry forwarded. Request
//! headers steer the answer: `x-test-status: 503` sets the status, `x-test-delay-ms: 500`
//! delays it (after the body is read), so timeouts, retries and drains can be provoked.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use http::{Request, Response, StatusCode};
use http_body_util::BodyExt as _;
use hyper::body::Incoming;
use serde::Deserialize;

use super::{Protocols, RespBody, ServerHandle, json, serve::serve};

/// Header that sets the echo's response status.
pub const STATUS_HEADER: &str = "x-test-status";
/// Header that delays the echo's response by this many milliseconds.
pub const DELAY_HEADER: &str = "x-test-delay-ms";

/// A running echo server.
#[derive(Debug)]
pub struct Echo {
    name: String,
    requests: Arc<AtomicU64>,
    server: ServerHandle,
}

/// What the echo server reports back, parsed from its JSON answer.
#[derive(Clone, Debug, Deserialize)]
pub struct EchoReport {
    /// Name given to the instance at start.
    pub instance: String,
    /// Request method.
    pub method: String,
    /// Path and query as received.
    pub path: String,
    /// `HTTP/1.1` or `HTTP/2.0`.
    pub version: String,
    /// Headers as received, lower-case names, repeated values joined with `, `.
    pub headers: BTreeMap<String, String>,
    /// Bytes of request body received.
    pub body_len: u64,
}

// === impl Echo ===

impl Echo {
    /// Starts an echo server named `name` accepting HTTP/1.1 and h2c.
    pub async fn start(name: &str) -> anyhow::Result<Echo> {
        Self::start_with(name, Protocols::Auto).await
    }

    /// Starts an echo server restricted to the given protocols.
    pub async fn start_with(name: &str, protocols: Protocols) -> anyhow::Result<Echo> {
        let requests = Arc::new(AtomicU64::new(0));
        let ctx = Arc::new((name.to_owned(), requests.clone()));
        let server = serve(protocols, move |req| {
            let ctx = ctx.clone();
            async move { answer(&ctx.0, &ctx.1, req).await }
        })
        .await?;
        Ok(Echo {
            name: name.to_owned(),
            requests,
            server,
        })
    }

    /// The bound address.
    pub fn addr(&self) -> std::net::SocketAddr {
        self.server.addr()
    }

    /// The instance name given at start.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Requests this instance has started answering.
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::SeqCst)
    }

    /// Kills the server: new connects are refused and open connections are dropped.
    pub async fn kill(&mut self) {
        self.server.kill().await;
    }
}

async fn answer(
    instance: &str,
    requests: &AtomicU64,
    req: Request<Incoming>,
) -> Response<RespBody> {
    requests.fetch_add(1, Ordering::SeqCst);
    let (parts, mut body) = req.into_parts();
    let mut headers: BTreeMap<String, String> = BTreeMap::new();
    for (name, value) in &parts.headers {
        let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
        headers
            .entry(name.as_str().to_owned())
            .and_modify(|v| {
                v.push_str(", ");
                v.push_str(&value);
            })
            .or_insert(value);
    }
    // Count the body frame by frame: the echo must never hold a large body in memory.
    let mut body_len = 0u64;
    while let Some(frame) = body.frame().await {
        match frame {
            Ok(frame) => {
                if let Some(data) = frame.data_ref() {
                    body_len += data.len() as u64;
                }
            }
            Err(e) => {
                return json(
                    StatusCode::BAD_REQUEST,
                    &serde_json::json!({ "error": format!("reading body: {e}") }),
                );
            }
        }
    }
    let status = headers
        .get(STATUS_HEADER)
        .and_then(|s| s.parse::<u16>().ok())
        .and_then(|s| StatusCode::from_u16(s).ok())
        .unwrap_or(StatusCode::OK);
    if let Some(ms) = headers
        .get(DELAY_HEADER)
        .and_then(|s| s.parse::<u64>().ok())
    {
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
    let report = serde_json::json!({
        "instance": instance,
        "method": parts.method.as_str(),
        "path": parts.uri.path_and_query().map(|p| p.as_str()).unwrap_or("/"),
        "version": format!("{:?}", parts.version),
        "headers": headers,
        "body_len": body_len,
    });
    json(status, &report)
}
