//! The balancer: picks the endpoint for one attempt (round robin or power-of-two-choices on
//! peak-EWMA latency, skipping ejected endpoints and the one a retry should avoid), bounds the
//! attempt by the route's `per_try_timeout`, and keeps each endpoint's health: latency,
//! in-flight count, consecutive failures toward outlier ejection. Send errors become the
//! typed [`Failure`] the caller is answered with (503 / UNAVAILABLE, 502).

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::time::{Duration, Instant};

use http::{Request, Response};
use prometheus_client::metrics::counter::Counter;

use super::client::{Dispatch, DispatchFuture};
use super::trace::AttemptSpan;
use crate::body::{BoxError, ProxyBody};
use crate::cluster::{Cluster, Endpoint, HashKey, InFlightOwned};
use crate::failure::Failure;
use crate::headers::{self, authority_of};
use crate::metrics::{ClusterLabels, Metrics, Name};
use crate::request_meta::{Forwarded, Outcome};
use crate::upstream::{SendError, Wire};

mod send_failure;

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
    type Future = ResponseFuture;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<ProxyBody>) -> ResponseFuture {
        let avoid = req.extensions().get::<Avoid>().map(|a| a.0);
        // Only hash clusters look for a key: the others skip the extension lookup.
        let key = match self.shared.cluster.config.hash {
            Some(_) => req.extensions().get::<HashKey>().copied(),
            None => None,
        };
        match self.shared.cluster.pick_now(avoid, key) {
            // Known endpoints: the attempt starts now, in a future written out (no box of
            // its own: it runs for every request).
            Some(Ok(endpoint)) => match self.shared.start(&mut self.inner, endpoint, req) {
                Ok(sending) => ResponseFuture::Sending { sending },
                Err(failure) => ResponseFuture::Done {
                    failure: Some(failure),
                },
            },
            Some(Err(e)) => ResponseFuture::Done {
                failure: Some(self.shared.unavailable(e.to_string())),
            },
            // Original-authority clusters resolve the request's authority first.
            None => {
                let shared = self.shared.clone();
                let mut client = self.inner.clone();
                ResponseFuture::Resolving {
                    resolving: Box::pin(async move {
                        let endpoint = shared
                            .cluster
                            .pick(authority_of(&req).as_deref(), avoid)
                            .await
                            .map_err(|e| shared.unavailable(e.to_string()))?;
                        shared.start(&mut client, endpoint, req)?.await
                    }),
                }
            }
        }
    }
}

pin_project_lite::pin_project! {
    /// One attempt in flight.
    #[project = ResponseProj]
    pub enum ResponseFuture {
        /// Sending on a chosen endpoint.
        Sending { #[pin] sending: Sending },
        /// Resolving the endpoint first (rare), then sending.
        Resolving {
            resolving: Pin<Box<dyn Future<Output = Result<Response<ProxyBody>, Failure>> + Send>>,
        },
        /// Failed before sending.
        Done { failure: Option<Failure> },
    }
}

impl Future for ResponseFuture {
    type Output = Result<Response<ProxyBody>, BoxError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project() {
            ResponseProj::Sending { sending } => sending.poll(cx).map_err(Into::into),
            ResponseProj::Resolving { resolving } => {
                resolving.as_mut().poll(cx).map_err(Into::into)
            }
            ResponseProj::Done { failure } => Poll::Ready(Err(failure
                .take()
                .unwrap_or_else(|| Failure::BadGateway("attempt polled after completion".into()))
                .into())),
        }
    }
}

pin_project_lite::pin_project! {
    /// An attempt on a chosen endpoint: the send, bounded by `per_try_timeout` when set, and
    /// the endpoint's bookkeeping when it ends.
    pub struct Sending {
        #[pin]
        send: MaybeTimeout,
        endpoint: Arc<Endpoint>,
        in_flight: Option<InFlightOwned>,
        sent: Instant,
        attempt: u32,
        // GET, HEAD or OPTIONS: safe to send again after a failure before any answer.
        idempotent: bool,
        outcome: Option<Arc<Outcome>>,
        trace: Option<AttemptSpan>,
        shared: Arc<Shared>,
    }
}

pin_project_lite::pin_project! {
    #[project = MaybeTimeoutProj]
    enum MaybeTimeout {
        Plain { send: DispatchFuture },
        Timed { #[pin] send: tokio::time::Timeout<DispatchFuture>, timeout: Duration },
    }
}

impl Future for Sending {
    type Output = Result<Response<ProxyBody>, Failure>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let result = match this.send.project() {
            MaybeTimeoutProj::Plain { send } => Ok(ready!(send.as_mut().poll(cx))),
            MaybeTimeoutProj::Timed { send, timeout } => {
                ready!(send.poll(cx)).map_err(|_| *timeout)
            }
        };
        drop(this.in_flight.take());
        let answer = this.shared.finish(
            this.endpoint,
            *this.sent,
            (*this.attempt, *this.idempotent),
            this.outcome.as_deref(),
            result,
        );
        Poll::Ready(match (this.trace.take(), answer) {
            (None, answer) => answer,
            (Some(span), Ok(resp)) => Ok(span.answered(resp)),
            (Some(span), Err(failure)) => {
                span.fail(failure.to_string());
                Err(failure)
            }
        })
    }
}

// === impl Shared ===

impl Shared {
    fn unavailable(&self, reason: String) -> Failure {
        Failure::Unavailable {
            cluster: self.cluster.name.to_string(),
            reason,
            connect: false,
            reset: false,
            unanswered: false,
        }
    }

    /// Starts an attempt on `endpoint`.
    fn start<S>(
        self: &Arc<Self>,
        client: &mut S,
        endpoint: Arc<Endpoint>,
        req: Request<ProxyBody>,
    ) -> Result<Sending, Failure>
    where
        S: tower::Service<Dispatch, Error = SendError, Future = DispatchFuture>,
    {
        let attempt = req.extensions().get::<Attempt>().map_or(1, |a| a.0);
        let outcome = Outcome::of(&req).cloned();
        let grpc = headers::is_grpc(req.headers());
        let wire = self
            .cluster
            .client
            .wire_for(grpc, headers::is_upgrade(req.headers()));
        if grpc && wire == Wire::Http1 {
            return Err(Failure::BadGateway(format!(
                "gRPC needs HTTP/2 but cluster {:?} is http1",
                self.cluster.name
            )));
        }
        let idempotent = matches!(
            *req.method(),
            http::Method::GET | http::Method::HEAD | http::Method::OPTIONS
        );
        let in_flight = endpoint.start_owned();
        let mut req = req;
        let trace = AttemptSpan::open(&mut req, &endpoint, &self.cluster, attempt);
        let sent = Instant::now();
        // The client is always ready (it sheds nothing; a connect failure is its answer).
        let send = client.call(Dispatch {
            endpoint: endpoint.clone(),
            wire,
            request: req,
        });
        let send = match &trace {
            Some(t) => t.scope(send),
            None => send,
        };
        let send = match self.per_try_timeout {
            Some(t) => MaybeTimeout::Timed {
                send: tokio::time::timeout(t, send),
                timeout: t,
            },
            None => MaybeTimeout::Plain { send },
        };
        Ok(Sending {
            send,
            endpoint,
            in_flight: Some(in_flight),
            sent,
            attempt,
            idempotent,
            outcome,
            trace,
            shared: self.clone(),
        })
    }

    /// The endpoint's bookkeeping for a finished attempt, and the attempt's answer.
    fn finish(
        &self,
        endpoint: &Arc<Endpoint>,
        sent: Instant,
        (attempt, idempotent): (u32, bool),
        outcome: Option<&Outcome>,
        result: Result<Result<Response<ProxyBody>, SendError>, Duration>,
    ) -> Result<Response<ProxyBody>, Failure> {
        let cluster = &self.cluster;
        if let Some(outcome) = outcome {
            outcome.set_forwarded(Forwarded {
                cluster: cluster.name.clone(),
                endpoint: endpoint.addr,
                upstream_duration: sent.elapsed(),
                attempts: attempt,
                sent,
                answered: Instant::now(),
                stats: endpoint.stats.clone(),
            });
        }
        match result {
            Ok(Ok(resp)) => {
                let elapsed = sent.elapsed();
                // The endpoint's latency, not the dial's: an attempt that opened the
                // connection (an endpoint's first, as a rule) would otherwise teach the
                // balancer a handshake, and a first estimate that high starves the endpoint
                // for seconds while it decays.
                let dial = resp
                    .extensions()
                    .get::<crate::upstream::Dialed>()
                    .map_or(Duration::ZERO, |d| d.0);
                endpoint.observe_latency(elapsed.saturating_sub(dial));
                cluster.upstream_duration.observe(elapsed.as_secs_f64());
                if resp.status().is_server_error() {
                    self.record_failure(endpoint);
                } else {
                    endpoint.success();
                }
                Ok(match &cluster.load_report {
                    Some(reporting) => super::load_report::observe(resp, endpoint, reporting),
                    None => resp,
                })
            }
            Ok(Err(e)) => Err(self.send_failure(endpoint, e, idempotent)),
            Err(t) => {
                self.record_failure(endpoint);
                Err(Failure::Timeout {
                    cluster: cluster.name.to_string(),
                    timeout_ms: t.as_millis(),
                    per_try: true,
                })
            }
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
