//! The balancer: picks the endpoint for one attempt (round robin or power-of-two-choices on
//! peak-EWMA latency, skipping ejected endpoints and the one a retry should avoid), bounds the
//! attempt by the route's `per_try_timeout`, and keeps each endpoint's health: latency,
//! in-flight count, consecutive failures toward outlier ejection. Send errors become the
//! typed [`Failure`] the caller is answered with (503 / UNAVAILABLE, 502).

use std::net::SocketAddr;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use http::{Request, Response};
use prometheus_client::metrics::counter::Counter;
use tower::ServiceExt;

use super::client::{Dispatch, DispatchFuture};
use crate::body::{BoxError, BoxFuture, ProxyBody};
use crate::cluster::{Cluster, Endpoint};
use crate::failure::Failure;
use crate::headers::{self, authority_of};
use crate::metrics::{ClusterLabels, Metrics, Name};
use crate::request_meta::{Forwarded, Outcome};
use crate::upstream::{SendError, Wire};

/// Which attempt a request is (set by the retry layer; absent means the first and only).
#[derive(Debug, Clone, Copy)]
pub struct Attempt(pub u32);

/// An endpoint the retry layer asks to avoid (the one that just failed).
#[derive(Debug, Clone, Copy)]
pub struct Avoid(pub SocketAddr);

/// Tower layer balancing over one cluster.
#[derive(Debug, Clone)]
pub struct BalanceLayer {
    shared: Arc<Shared>,
}

/// The service made by [`BalanceLayer`].
#[derive(Debug, Clone)]
pub struct Balance<S> {
    inner: S,
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    cluster: Arc<Cluster>,
    per_try_timeout: Option<Duration>,
    connect_errors: Counter,
    ejections: Counter,
}

impl BalanceLayer {
    /// Balances over `cluster`, each attempt bounded by `per_try_timeout`.
    pub fn new(
        cluster: Arc<Cluster>,
        per_try_timeout: Option<Duration>,
        metrics: &Metrics,
    ) -> Self {
        let labels = ClusterLabels {
            cluster: Name(cluster.name.clone()),
        };
        let connect_errors = metrics.connect_errors.get_or_create(&labels).clone();
        let ejections = metrics.ejections.get_or_create(&labels).clone();
        BalanceLayer {
            shared: Arc::new(Shared {
                cluster,
                per_try_timeout,
                connect_errors,
                ejections,
            }),
        }
    }
}

impl<S> tower::Layer<S> for BalanceLayer {
    type Service = Balance<S>;

    fn layer(&self, inner: S) -> Balance<S> {
        Balance {
            inner,
            shared: self.shared.clone(),
        }
    }
}

// === impl Balance ===

impl<S> tower::Service<Request<ProxyBody>> for Balance<S>
where
    S: tower::Service<
            Dispatch,
            Response = Response<ProxyBody>,
            Error = SendError,
            Future = DispatchFuture,
        > + Clone
        + Send
        + 'static,
{
    type Response = Response<ProxyBody>;
    type Error = BoxError;
    type Future = BoxFuture;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<ProxyBody>) -> Self::Future {
        let shared = self.shared.clone();
        let client = self.inner.clone();
        Box::pin(async move { shared.attempt(client, req).await.map_err(Into::into) })
    }
}

// === impl Shared ===

impl Shared {
    async fn attempt<S>(
        &self,
        client: S,
        req: Request<ProxyBody>,
    ) -> Result<Response<ProxyBody>, Failure>
    where
        S: tower::Service<
                Dispatch,
                Response = Response<ProxyBody>,
                Error = SendError,
                Future = DispatchFuture,
            >,
    {
        let cluster = &self.cluster;
        let avoid = req.extensions().get::<Avoid>().map(|a| a.0);
        let attempt = req.extensions().get::<Attempt>().map_or(1, |a| a.0);
        let outcome = Outcome::of(&req).cloned();
        let endpoint = cluster
            .pick(authority_of(&req).as_deref(), avoid)
            .await
            .map_err(|e| Failure::Unavailable {
                cluster: cluster.name.to_string(),
                reason: e.to_string(),
                connect: false,
            })?;
        let grpc = headers::is_grpc(req.headers());
        let wire = cluster
            .client
            .wire_for(grpc, headers::is_upgrade(req.headers()));
        if grpc && wire == Wire::Http1 {
            return Err(Failure::BadGateway(format!(
                "gRPC needs HTTP/2 but cluster {:?} is http1",
                cluster.name
            )));
        }
        let in_flight = endpoint.start();
        let sent = Instant::now();
        let send = client.oneshot(Dispatch {
            endpoint: endpoint.clone(),
            wire,
            request: req,
        });
        let result = match self.per_try_timeout {
            Some(t) => tokio::time::timeout(t, send).await.map_err(|_| t),
            None => Ok(send.await),
        };
        drop(in_flight);
        if let Some(outcome) = &outcome {
            outcome.set_forwarded(Forwarded {
                cluster: cluster.name.clone(),
                endpoint: endpoint.addr,
                upstream_duration: sent.elapsed(),
                attempts: attempt,
            });
        }
        match result {
            Ok(Ok(resp)) => {
                let elapsed = sent.elapsed();
                endpoint.observe_latency(elapsed);
                cluster.upstream_duration.observe(elapsed.as_secs_f64());
                if resp.status().is_server_error() {
                    self.record_failure(&endpoint);
                } else {
                    endpoint.success();
                }
                Ok(resp)
            }
            Ok(Err(e)) => Err(self.send_failure(&endpoint, e)),
            Err(t) => {
                self.record_failure(&endpoint);
                Err(Failure::Timeout {
                    cluster: cluster.name.to_string(),
                    timeout_ms: t.as_millis(),
                    per_try: true,
                })
            }
        }
    }

    fn send_failure(&self, endpoint: &Endpoint, e: SendError) -> Failure {
        let cluster = self.cluster.name.to_string();
        match e {
            SendError::Connect { addr, source } => {
                self.connect_errors.inc();
                self.record_failure(endpoint);
                Failure::Unavailable {
                    cluster,
                    reason: format!("connect to {addr} failed: {}", error_chain(source.as_ref())),
                    connect: true,
                }
            }
            e @ SendError::Request { .. } => {
                // Our own body limit cut the request stream: the caller's fault, not the
                // upstream's.
                if let Some(too_large) = ferry_filters::body_limit::find(&e) {
                    return Failure::BodyTooLarge {
                        limit: too_large.limit,
                    };
                }
                self.record_failure(endpoint);
                Failure::Unavailable {
                    cluster,
                    reason: error_chain(&e),
                    connect: false,
                }
            }
            e @ SendError::Uri(_) => Failure::BadGateway(e.to_string()),
        }
    }

    fn record_failure(&self, endpoint: &Endpoint) {
        let cluster = &self.cluster;
        let Some(outlier) = cluster.config.outlier.as_ref() else {
            return;
        };
        let endpoints = cluster.endpoints();
        let may_eject = crate::cluster::may_eject(&endpoints, outlier);
        if endpoint.failure(outlier, may_eject) {
            tracing::warn!(cluster = %cluster.name, endpoint = %endpoint.addr, "endpoint ejected after consecutive failures");
            self.ejections.inc();
        }
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
