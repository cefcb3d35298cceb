//! Sending a request upstream: endpoint choice, per-try and overall timeouts, retries within
//! the route's budget, outlier bookkeeping.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ferry_config::{RetryOn, RetryPolicy};
use http::{Request, Response, StatusCode};
use hyper::body::Incoming;
use tower::retry::budget::Budget;

use crate::body::{Peeked, ProxyBody};
use crate::cluster::Cluster;
use crate::failure::Failure;
use crate::metrics::{ClusterLabels, Metrics, Name, RouteLabels};
use crate::table::RouteEntry;
use crate::upstream::{SendError, Wire};

/// Where a request went.
#[derive(Debug, Clone)]
pub struct Forwarded {
    /// Cluster.
    pub cluster: Arc<str>,
    /// Endpoint of the last attempt.
    pub endpoint: SocketAddr,
    /// Last attempt: sent → response headers.
    pub upstream_duration: Duration,
    /// Attempts made.
    pub attempts: u32,
}

/// One request's forwarding job.
pub(super) struct Attempts<'a> {
    pub(super) route: &'a Arc<RouteEntry>,
    pub(super) listener: &'a Arc<str>,
    pub(super) grpc: bool,
    pub(super) upgrade: bool,
    pub(super) authority: Option<&'a str>,
    pub(super) metrics: &'a Metrics,
}

enum TryError {
    Failure(Failure),
    /// Safe to retry: the request never reached the upstream.
    Retryable(Failure),
    /// The upstream answered with something the policy retries; if no retry is left, this
    /// answer goes to the caller as it is.
    RetryableResponse(Response<Incoming>),
}

impl TryError {
    /// What the caller gets when no retry follows: a retryable answer as it is, else the failure.
    fn into_answer(self) -> Result<Response<Incoming>, Failure> {
        match self {
            TryError::RetryableResponse(resp) => Ok(resp),
            TryError::Retryable(f) | TryError::Failure(f) => Err(f),
        }
    }
}

impl Attempts<'_> {
    pub(super) async fn run(
        self,
        parts: http::request::Parts,
        body: ProxyBody,
        forwarded: &mut Option<Forwarded>,
    ) -> Result<Response<Incoming>, Failure> {
        let Some(cluster) = self.route.pick_cluster().cloned() else {
            return Err(Failure::BadGateway("route has no cluster".into()));
        };
        let timeout = self.route.config.timeout;
        let work = self.attempts(&cluster, parts, body, forwarded);
        match timeout {
            Some(t) => tokio::time::timeout(t, work).await.unwrap_or_else(|_| {
                Err(Failure::Timeout {
                    cluster: cluster.name.to_string(),
                    timeout_ms: t.as_millis(),
                })
            }),
            None => work.await,
        }
    }

    async fn attempts(
        &self,
        cluster: &Arc<Cluster>,
        parts: http::request::Parts,
        body: ProxyBody,
        forwarded: &mut Option<Forwarded>,
    ) -> Result<Response<Incoming>, Failure> {
        let policy = self
            .route
            .config
            .retry
            .as_ref()
            .filter(|p| p.attempts > 1 && !self.upgrade);
        if let Some(budget) = &self.route.budget {
            budget.deposit();
        }
        let mut peeked = match policy {
            Some(p) => Peeked::read_small(body, p.max_body_bytes as usize)
                .await
                .map_err(|e| Failure::BadRequest(format!("reading request body: {e}")))?,
            None => Peeked {
                chunks: Default::default(),
                len: 0,
                trailers: None,
                rest: Some(body),
            },
        };
        let replayable = policy.is_some() && peeked.is_complete();
        let max_attempts = if replayable {
            policy.map_or(1, |p| p.attempts)
        } else {
            1
        };
        let mut avoid = None;
        for attempt in 1..max_attempts {
            // A retry may follow, so this attempt sends a copy of the head.
            let req = rebuild(&parts, peeked.replay());
            match self
                .try_once(cluster, req, avoid, policy, forwarded, attempt)
                .await
            {
                Ok(resp) => return Ok(resp),
                Err(TryError::Failure(f)) => return Err(f),
                Err(retryable) => {
                    if !self.route.budget.as_ref().is_none_or(|b| b.withdraw()) {
                        return retryable.into_answer();
                    }
                    avoid = forwarded.as_ref().map(|f| f.endpoint);
                    tracing::debug!(route = %self.route.name, attempt, "retrying");
                    self.metrics
                        .retries
                        .get_or_create(&RouteLabels {
                            listener: Name(self.listener.clone()),
                            route: Name(self.route.name.clone()),
                        })
                        .inc();
                }
            }
        }
        // The last possible attempt takes the head itself: only retries pay for a copy.
        let req = Request::from_parts(parts, peeked.replay());
        self.try_once(cluster, req, avoid, policy, forwarded, max_attempts)
            .await
            .or_else(TryError::into_answer)
    }

    async fn try_once(
        &self,
        cluster: &Arc<Cluster>,
        req: Request<ProxyBody>,
        avoid: Option<SocketAddr>,
        policy: Option<&RetryPolicy>,
        forwarded: &mut Option<Forwarded>,
        attempt: u32,
    ) -> Result<Response<Incoming>, TryError> {
        let endpoint = cluster.pick(self.authority, avoid).await.map_err(|e| {
            TryError::Failure(Failure::Unavailable {
                cluster: cluster.name.to_string(),
                reason: e.to_string(),
            })
        })?;
        let wire = cluster.client.wire_for(self.grpc, self.upgrade);
        if self.grpc && wire == Wire::Http1 {
            return Err(TryError::Failure(Failure::BadGateway(format!(
                "gRPC needs HTTP/2 but cluster {:?} is http1",
                cluster.name
            ))));
        }
        let in_flight = endpoint.start();
        let sent = Instant::now();
        let send = cluster.client.send(req, &endpoint, wire);
        let result = match policy.and_then(|p| p.per_try_timeout) {
            Some(t) => match tokio::time::timeout(t, send).await {
                Ok(r) => r,
                Err(_) => {
                    drop(in_flight);
                    record_failure(self.metrics, cluster, &endpoint);
                    *forwarded = Some(self.forwarded(cluster, endpoint.addr, sent, attempt));
                    return Err(TryError::Retryable(Failure::Timeout {
                        cluster: cluster.name.to_string(),
                        timeout_ms: t.as_millis(),
                    }));
                }
            },
            None => send.await,
        };
        drop(in_flight);
        *forwarded = Some(self.forwarded(cluster, endpoint.addr, sent, attempt));
        let on = policy.map(|p| p.on.as_slice()).unwrap_or_default();
        match result {
            Ok(resp) => {
                let elapsed = sent.elapsed();
                endpoint.observe_latency(elapsed);
                cluster.upstream_duration.observe(elapsed.as_secs_f64());
                if resp.status().is_server_error() {
                    record_failure(self.metrics, cluster, &endpoint);
                } else {
                    endpoint.success();
                }
                if retry_wanted(on, &resp) {
                    tracing::debug!(cluster = %cluster.name, answer = %describe(&resp), "retryable answer");
                    return Err(TryError::RetryableResponse(resp));
                }
                Ok(resp)
            }
            Err(SendError::Connect { addr, source }) => {
                self.metrics
                    .connect_errors
                    .get_or_create(&ClusterLabels {
                        cluster: Name(cluster.name.clone()),
                    })
                    .inc();
                record_failure(self.metrics, cluster, &endpoint);
                let failure = Failure::Unavailable {
                    cluster: cluster.name.to_string(),
                    reason: format!("connect to {addr} failed: {}", error_chain(source.as_ref())),
                };
                if on.contains(&RetryOn::ConnectFailure) {
                    Err(TryError::Retryable(failure))
                } else {
                    Err(TryError::Failure(failure))
                }
            }
            Err(e @ SendError::Request { .. }) => {
                // Our own body limit cut the request stream: the caller's fault, not the
                // upstream's.
                if let Some(limit) = body_limit_in(&e) {
                    return Err(TryError::Failure(Failure::BodyTooLarge { limit }));
                }
                record_failure(self.metrics, cluster, &endpoint);
                Err(TryError::Failure(Failure::Unavailable {
                    cluster: cluster.name.to_string(),
                    reason: error_chain(&e),
                }))
            }
            Err(e @ SendError::Uri(_)) => {
                Err(TryError::Failure(Failure::BadGateway(e.to_string())))
            }
        }
    }

    fn forwarded(
        &self,
        cluster: &Cluster,
        endpoint: SocketAddr,
        sent: Instant,
        attempts: u32,
    ) -> Forwarded {
        Forwarded {
            cluster: cluster.name.clone(),
            endpoint,
            upstream_duration: sent.elapsed(),
            attempts,
        }
    }
}

fn rebuild(parts: &http::request::Parts, body: ProxyBody) -> Request<ProxyBody> {
    let mut req = Request::new(body);
    *req.method_mut() = parts.method.clone();
    *req.uri_mut() = parts.uri.clone();
    *req.version_mut() = parts.version;
    *req.headers_mut() = parts.headers.clone();
    req
}

fn record_failure(metrics: &Metrics, cluster: &Cluster, endpoint: &crate::cluster::Endpoint) {
    let Some(outlier) = cluster.config.outlier.as_ref() else {
        return;
    };
    let endpoints = cluster.endpoints();
    let may_eject = crate::cluster::may_eject(&endpoints, outlier);
    if endpoint.failure(outlier, may_eject) {
        tracing::warn!(cluster = %cluster.name, endpoint = %endpoint.addr, "endpoint ejected after consecutive failures");
        metrics
            .ejections
            .get_or_create(&ClusterLabels {
                cluster: Name(cluster.name.clone()),
            })
            .inc();
    }
}

fn grpc_status(resp: &Response<Incoming>) -> Option<u32> {
    resp.headers()
        .get("grpc-status")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
}

fn retry_wanted(on: &[RetryOn], resp: &Response<Incoming>) -> bool {
    let status = resp.status();
    let grpc = grpc_status(resp);
    on.iter().any(|r| match r {
        RetryOn::ConnectFailure => false,
        RetryOn::Http503 => status == StatusCode::SERVICE_UNAVAILABLE,
        RetryOn::Http5xx => status.is_server_error(),
        RetryOn::Unavailable => grpc == Some(14),
        RetryOn::ResourceExhausted => grpc == Some(8) || status == StatusCode::TOO_MANY_REQUESTS,
    })
}

fn describe(resp: &Response<Incoming>) -> String {
    match grpc_status(resp) {
        Some(code) => format!("grpc-status {code}"),
        None => resp.status().to_string(),
    }
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}

fn body_limit_in(e: &(dyn std::error::Error + 'static)) -> Option<u64> {
    ferry_filters::body_limit::find(e).map(|t| t.limit)
}
