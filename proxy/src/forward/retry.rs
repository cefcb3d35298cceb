//! Retries within the route's budget. A request is retried only when the route has a retry
//! policy, its body was small enough to keep whole (`max_body_bytes`, replayed from memory,
//! never re-read from the caller) and the failure is one the policy names (connect failure,
//! 503, 5xx, gRPC UNAVAILABLE or RESOURCE_EXHAUSTED) or a `per_try_timeout`. Each retry must
//! withdraw from the route's budget (a share of recent requests, kept across reloads), so a
//! failing upstream is not hit with a retry storm; without budget the last answer stands.

use std::sync::Arc;
use std::task::{Context, Poll};

use ferry_config::{RetryOn, RetryPolicy};
use ferry_filters::trace_context::HopTrace;
use http::{Request, Response, StatusCode};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use tower::retry::budget::{Budget, TpsBudget};

use super::balance::{Attempt, Avoid};
use crate::body::{BoxError, BoxFuture, Peeked, ProxyBody, StackService};
use crate::cluster::HashKey;
use crate::failure::Failure;
use crate::headers;
use crate::metrics::{RetryLabels, RouteLabels};
use crate::request_meta::Outcome;
use crate::route::{RouteService, ShareableService};

/// Every `reason` label of `ferry_retries_total`.
pub const REASONS: [&str; 4] = ["connect_failure", "reset", "per_try_timeout", "answer"];

/// Registers the route's retry series at config load, so dashboards and `rate()` alerts see
/// 0 for a route that never retried, not a gap.
pub fn register(retries: &Family<RetryLabels, Counter>, route: &RouteLabels) {
    for reason in REASONS {
        // Creating the series is the point; the guard it returns is not needed.
        drop(retries.get_or_create(&RetryLabels {
            listener: route.listener.clone(),
            route: route.route.clone(),
            reason,
        }));
    }
}

/// Tower layer retrying under a policy and a shared budget.
#[derive(Debug, Clone)]
pub struct RetryLayer {
    shared: Arc<Shared>,
}

/// The service made by [`RetryLayer`]. Its inner service is boxed: attempts are awaited in a
/// loop, which needs a nameable future (retrying routes pay one allocation per attempt).
#[derive(Debug, Clone)]
pub struct Retry {
    inner: RouteService,
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    policy: RetryPolicy,
    budget: Option<Arc<TpsBudget>>,
    retries: Family<RetryLabels, Counter>,
    route: RouteLabels,
}

/// How one attempt ended, as the policy sees it.
enum Verdict {
    Done(Result<Response<ProxyBody>, BoxError>),
    /// The policy would retry (for the reason given, a `ferry_retries_total` label); if no
    /// retry follows, this is the caller's answer as it is.
    Again(Result<Response<ProxyBody>, BoxError>, &'static str),
}

impl RetryLayer {
    /// Retries under `policy`, withdrawing from `budget`; `retries` counts them
    /// (`ferry_retries_total`) under `route`'s labels and the reason.
    pub fn new(
        policy: RetryPolicy,
        budget: Option<Arc<TpsBudget>>,
        retries: Family<RetryLabels, Counter>,
        route: RouteLabels,
    ) -> Self {
        RetryLayer {
            shared: Arc::new(Shared {
                policy,
                budget,
                retries,
                route,
            }),
        }
    }
}

impl<S> tower::Layer<S> for RetryLayer
where
    S: ShareableService,
{
    type Service = Retry;

    fn layer(&self, inner: S) -> Retry {
        Retry {
            inner: RouteService::new(inner),
            shared: self.shared.clone(),
        }
    }
}

// === impl Retry ===

impl tower::Service<Request<ProxyBody>> for Retry {
    type Response = Response<ProxyBody>;
    type Error = BoxError;
    type Future = BoxFuture;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<ProxyBody>) -> Self::Future {
        if let Some(budget) = &self.shared.budget {
            budget.deposit();
        }
        // An upgrade's body is the rest of the connection: never held for a replay.
        if self.shared.policy.attempts <= 1 || headers::is_upgrade(req.headers()) {
            return self.inner.call(req);
        }
        let shared = self.shared.clone();
        let inner = self.inner.clone();
        Box::pin(async move { shared.run(inner, req).await })
    }
}

// === impl Shared ===

impl Shared {
    async fn run<S>(
        &self,
        mut inner: S,
        req: Request<ProxyBody>,
    ) -> Result<Response<ProxyBody>, BoxError>
    where
        S: StackService,
    {
        let policy = &self.policy;
        let (parts, body) = req.into_parts();
        let mut peeked = Peeked::read_small(body, policy.max_body_bytes as usize)
            .await
            .map_err(|e| Failure::BadRequest(format!("reading request body: {e}")))?;
        // Only a body held whole can be sent again.
        let max_attempts = if peeked.is_complete() {
            policy.attempts
        } else {
            1
        };
        let outcome = parts.extensions.get::<Arc<Outcome>>().cloned();
        let hop = parts.extensions.get::<Arc<HopTrace>>().cloned();
        let key = parts.extensions.get::<HashKey>().copied();
        let mut avoid = None;
        for attempt in 1..max_attempts {
            // A retry may follow, so this attempt sends a copy of the head.
            let req = copy(&parts, peeked.replay(), outcome.as_ref(), hop.as_ref(), key);
            let req = mark(req, attempt, avoid);
            match judge(&policy.on, inner.call(req).await) {
                Verdict::Done(answer) => return answer,
                Verdict::Again(answer, reason) => {
                    if !self.budget.as_ref().is_none_or(|b| b.withdraw()) {
                        return answer;
                    }
                    avoid = outcome.as_ref().and_then(|o| o.endpoint()).map(Avoid);
                    tracing::debug!(attempt, reason, "retrying");
                    // Retries are rare: a label lookup each is cheaper than a counter per
                    // reason built for every route.
                    self.retries
                        .get_or_create(&RetryLabels {
                            listener: self.route.listener.clone(),
                            route: self.route.route.clone(),
                            reason,
                        })
                        .inc();
                }
            }
        }
        // The last possible attempt takes the head itself: only retries pay for a copy.
        let req = mark(
            Request::from_parts(parts, peeked.replay()),
            max_attempts,
            avoid,
        );
        match judge(&policy.on, inner.call(req).await) {
            Verdict::Done(answer) | Verdict::Again(answer, _) => answer,
        }
    }
}

/// A copy of the head for one attempt. Of the extensions only the request's `Outcome`, its
/// recorded hop and its hash key go along: the layers below read nothing else (the balancer
/// the outcome and the key, the attempt's CLIENT span the hop), and cloning the whole map
/// would allocate a box per entry for every attempt.
fn copy(
    parts: &http::request::Parts,
    body: ProxyBody,
    outcome: Option<&Arc<Outcome>>,
    hop: Option<&Arc<HopTrace>>,
    key: Option<HashKey>,
) -> Request<ProxyBody> {
    let mut req = Request::new(body);
    *req.method_mut() = parts.method.clone();
    *req.uri_mut() = parts.uri.clone();
    *req.version_mut() = parts.version;
    *req.headers_mut() = parts.headers.clone();
    if let Some(outcome) = outcome {
        req.extensions_mut().insert(outcome.clone());
    }
    if let Some(hop) = hop {
        req.extensions_mut().insert(hop.clone());
    }
    if let Some(key) = key {
        req.extensions_mut().insert(key);
    }
    req
}

/// Tells the balancer which attempt this is and which endpoint to avoid.
fn mark(mut req: Request<ProxyBody>, attempt: u32, avoid: Option<Avoid>) -> Request<ProxyBody> {
    req.extensions_mut().insert(Attempt(attempt));
    if let Some(avoid) = avoid {
        req.extensions_mut().insert(avoid);
    }
    req
}

/// Whether the policy retries this answer, and why: a `per_try_timeout` always; with
/// `connect-failure`, a failed connect, and a failure before any answer when resending is safe
/// (an idempotent method, or a stream the upstream refused unprocessed; Envoy's `reset` and
/// `refused-stream`); with `reset`, any failure before an answer; an upstream answer when its
/// status is one the policy names.
fn judge(on: &[RetryOn], answer: Result<Response<ProxyBody>, BoxError>) -> Verdict {
    let connect_failure = on.contains(&RetryOn::ConnectFailure);
    let reason = match &answer {
        Ok(resp) => retry_wanted(on, resp).then_some("answer"),
        Err(e) => match e.downcast_ref::<Failure>() {
            Some(Failure::Timeout { per_try: true, .. }) => Some("per_try_timeout"),
            Some(Failure::Unavailable { connect: true, .. }) if connect_failure => {
                Some("connect_failure")
            }
            Some(Failure::Unavailable { reset: true, .. }) if connect_failure => Some("reset"),
            Some(Failure::Unavailable {
                unanswered: true, ..
            }) if on.contains(&RetryOn::Reset) => Some("reset"),
            _ => None,
        },
    };
    if let (Some(_), Ok(resp)) = (reason, &answer) {
        tracing::debug!(answer = %describe(resp), "retryable answer");
    }
    match reason {
        Some(reason) => Verdict::Again(answer, reason),
        None => Verdict::Done(answer),
    }
}

fn grpc_status(resp: &Response<ProxyBody>) -> Option<u32> {
    resp.headers()
        .get("grpc-status")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
}

fn retry_wanted(on: &[RetryOn], resp: &Response<ProxyBody>) -> bool {
    let status = resp.status();
    let grpc = grpc_status(resp);
    on.iter().any(|r| match r {
        RetryOn::ConnectFailure | RetryOn::Reset => false,
        RetryOn::Http503 => status == StatusCode::SERVICE_UNAVAILABLE,
        RetryOn::Http5xx => status.is_server_error(),
        RetryOn::Unavailable => grpc == Some(14),
        RetryOn::ResourceExhausted => grpc == Some(8) || status == StatusCode::TOO_MANY_REQUESTS,
    })
}

fn describe(resp: &Response<ProxyBody>) -> String {
    match grpc_status(resp) {
        Some(code) => format!("grpc-status {code}"),
        None => resp.status().to_string(),
    }
}
