//! The rate-limit layer: every limit of the route must admit the request.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use http::{HeaderValue, Request, Response};

use super::errors::{RateLimited, ceil_secs};
use super::key::{KeyPart, key_of};
use super::local::{Check, LocalBucket};
use crate::translate::BoxError;

/// Whether a limit refuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitMode {
    /// Refuse over the limit.
    Enforce,
    /// Count what would be refused, admit it.
    Shadow,
}

/// One limit: its key, amount and bucket (shared state, kept by the caller across reloads).
#[derive(Debug, Clone)]
pub struct Limit {
    /// Name (metric label, 429 body).
    pub name: Arc<str>,
    /// What tells callers apart.
    pub key: Vec<KeyPart>,
    /// Amount per window (for the `x-ratelimit-limit` header).
    pub amount: u64,
    /// The window.
    pub per: Duration,
    /// Enforce or shadow.
    pub mode: LimitMode,
    /// The bucket.
    pub bucket: Arc<LocalBucket>,
    /// Keys whose parts have these values use another bucket (first match wins).
    pub overrides: Vec<LimitOverride>,
}

/// A per-key amount.
#[derive(Debug, Clone)]
pub struct LimitOverride {
    /// Each part must have this value.
    pub matches: Vec<(KeyPart, String)>,
    /// Its amount per window.
    pub amount: u64,
    /// Its bucket.
    pub bucket: Arc<LocalBucket>,
}

/// A limit's decision for one request, for metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Admitted.
    Allowed,
    /// Refused.
    Limited,
    /// Over the limit in shadow mode: admitted, counted.
    ShadowLimited,
}

/// Called once per limit per request: the limit's index in the route's list, and its decision.
pub type OnDecision = Arc<dyn Fn(usize, Decision) + Send + Sync>;

/// The route's rate limits.
#[derive(Clone)]
pub struct RateLimitLayer {
    route: Arc<str>,
    limits: Arc<[Limit]>,
    on_decision: Option<OnDecision>,
}

impl std::fmt::Debug for RateLimitLayer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RateLimitLayer")
            .field("route", &self.route)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl RateLimitLayer {
    /// Enforces `limits` on `route`'s requests.
    pub fn new(route: Arc<str>, limits: Vec<Limit>) -> Self {
        RateLimitLayer {
            route,
            limits: limits.into(),
            on_decision: None,
        }
    }

    /// Calls `f` with each limit's decision.
    pub fn on_decision(mut self, f: OnDecision) -> Self {
        self.on_decision = Some(f);
        self
    }
}

impl<S> tower::Layer<S> for RateLimitLayer {
    type Service = RateLimit<S>;

    fn layer(&self, inner: S) -> RateLimit<S> {
        RateLimit {
            inner,
            layer: self.clone(),
        }
    }
}

/// The service made by [`RateLimitLayer`].
#[derive(Clone)]
pub struct RateLimit<S> {
    inner: S,
    layer: RateLimitLayer,
}

impl<S: std::fmt::Debug> std::fmt::Debug for RateLimit<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RateLimit")
            .field("inner", &self.inner)
            .field("layer", &self.layer)
            .finish()
    }
}

/// The tightest limit's figures, written on admitted answers.
#[derive(Debug, Clone, Copy)]
struct Quota {
    limit: u64,
    remaining: u64,
    reset: Duration,
}

impl RateLimitLayer {
    /// Every limit's decision; the first enforced refusal ends the walk.
    fn decide<B>(&self, req: &Request<B>) -> Result<Option<Quota>, RateLimited> {
        let mut tightest: Option<Quota> = None;
        for (i, limit) in self.limits.iter().enumerate() {
            let key = key_of(&limit.key, &self.route, req);
            let (bucket, amount) = limit
                .overrides
                .iter()
                .find(|o| {
                    o.matches
                        .iter()
                        .all(|(part, value)| part.value(&self.route, req) == *value)
                })
                .map_or((&limit.bucket, limit.amount), |o| (&o.bucket, o.amount));
            let decision = match bucket.check(&key) {
                Check::Allowed { remaining, reset } => {
                    // A shadow limit is invisible to callers, its figures included.
                    let shown = limit.mode == LimitMode::Enforce;
                    if shown && tightest.is_none_or(|t| remaining < t.remaining) {
                        tightest = Some(Quota {
                            limit: amount,
                            remaining,
                            reset,
                        });
                    }
                    Decision::Allowed
                }
                Check::Limited { retry_after } => match limit.mode {
                    LimitMode::Shadow => Decision::ShadowLimited,
                    LimitMode::Enforce => {
                        if let Some(f) = &self.on_decision {
                            f(i, Decision::Limited);
                        }
                        tracing::debug!(route = %self.route, limit = %limit.name, key, "rate limited");
                        return Err(RateLimited::new(
                            &limit.name,
                            amount,
                            limit.per,
                            retry_after,
                        ));
                    }
                },
            };
            if let Some(f) = &self.on_decision {
                f(i, decision);
            }
        }
        Ok(tightest)
    }
}

impl<S, B, RB> tower::Service<Request<B>> for RateLimit<S>
where
    S: tower::Service<Request<B>, Response = Response<RB>>,
    S::Error: Into<BoxError>,
{
    type Response = Response<RB>;
    type Error = BoxError;
    type Future = ResponseFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        match self.layer.decide(&req) {
            Ok(quota) => ResponseFuture {
                state: State::Called {
                    inner: self.inner.call(req),
                    quota,
                },
            },
            Err(limited) => ResponseFuture {
                state: State::Refused {
                    error: Some(limited),
                },
            },
        }
    }
}

pin_project_lite::pin_project! {
    /// The inner answer with the quota headers, or the refusal.
    pub struct ResponseFuture<F> {
        #[pin]
        state: State<F>,
    }
}

pin_project_lite::pin_project! {
    #[project = StateProj]
    enum State<F> {
        Called { #[pin] inner: F, quota: Option<Quota> },
        Refused { error: Option<RateLimited> },
    }
}

impl<F, RB, E> Future for ResponseFuture<F>
where
    F: Future<Output = Result<Response<RB>, E>>,
    E: Into<BoxError>,
{
    type Output = Result<Response<RB>, BoxError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project().state.project() {
            StateProj::Refused { error } => Poll::Ready(Err(match error.take() {
                Some(e) => e.into(),
                None => "rate-limit future polled after completion".into(),
            })),
            StateProj::Called { inner, quota } => {
                let mut resp = std::task::ready!(inner.poll(cx)).map_err(Into::into)?;
                if let Some(q) = quota {
                    let h = resp.headers_mut();
                    h.insert("x-ratelimit-limit", HeaderValue::from(q.limit));
                    h.insert("x-ratelimit-remaining", HeaderValue::from(q.remaining));
                    h.insert("x-ratelimit-reset", HeaderValue::from(ceil_secs(q.reset)));
                }
                Poll::Ready(Ok(resp))
            }
        }
    }
}
