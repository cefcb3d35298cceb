//! The rate-limit layer: every limit of the route must admit the request.
//!
//! Local request limits are GCRA buckets decided synchronously; a route with only those pays
//! no allocation or await. Limits whose counters live in a [`WindowStore`] (global limits,
//! token budgets) are decided in an async step that awaits the store, then the request goes
//! on. Token budgets admit while the key's window has tokens left and are charged when the
//! answer ends, from the `usage` it reports.

use crate::trace_context::HopTrace;
use opentelemetry::KeyValue;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use http::{HeaderValue, Request, Response};
use http_body_util::BodyExt;

use super::errors::{RateLimited, StoreUnavailable, ceil_secs};
use super::key::{KeyPart, key_of};
use super::local::{Check, LocalBucket};
use super::metered::{Charging, Metered};
use super::usage::Charge;
use super::window::WindowStore;
use crate::translate::{BoxError, TranslateBody};

/// Whether a limit refuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitMode {
    /// Refuse over the limit.
    Enforce,
    /// Count what would be refused, admit it.
    Shadow,
}

/// What a limit decides when its store cannot answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnStoreFailure {
    /// Admit (fail open).
    Allow,
    /// Refuse with 503 / UNAVAILABLE (fail closed).
    Deny,
}

/// Where a limit counts.
#[derive(Debug, Clone)]
pub enum Counter {
    /// A GCRA bucket in this process (request limits, local scope).
    Bucket(Arc<LocalBucket>),
    /// Fixed windows in a store (global limits; token budgets).
    Window(Arc<dyn WindowStore>),
}

/// A token budget's settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TokenSettings {
    /// Which usage figure is charged.
    pub charge: Charge,
    /// Charged when an answer reports no usage.
    pub fallback: u64,
    /// Ask streamed requests for usage (`stream_options.include_usage`).
    pub request_usage: bool,
}

/// One limit: its key, amount and counter (shared state, kept by the caller across reloads).
#[derive(Debug, Clone)]
pub struct Limit {
    /// Name (metric label, 429 body, store key).
    pub name: Arc<str>,
    /// What tells callers apart.
    pub key: Vec<KeyPart>,
    /// Requests (or tokens) per window.
    pub amount: u64,
    /// The window.
    pub per: Duration,
    /// Enforce or shadow.
    pub mode: LimitMode,
    /// Where it counts.
    pub counter: Counter,
    /// `Some`: a token budget (needs a [`Counter::Window`]).
    pub tokens: Option<TokenSettings>,
    /// When the store fails.
    pub on_failure: OnStoreFailure,
    /// Keys whose parts have these values count elsewhere (first match wins).
    pub overrides: Vec<LimitOverride>,
}

/// A per-key amount.
#[derive(Debug, Clone)]
pub struct LimitOverride {
    /// Each part must have this value.
    pub matches: Vec<(KeyPart, String)>,
    /// Its amount per window.
    pub amount: u64,
    /// Its counter.
    pub counter: Counter,
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
    /// The store failed and the limit fails open: admitted.
    FailedOpen,
}

/// Called once per limit per request: the limit's index in the route's list, and its decision.
pub type OnDecision = Arc<dyn Fn(usize, Decision) + Send + Sync>;

/// Asked once per request on a route with token budgets, with the request's extensions: what
/// to tell the answer's token usage once it is read (e.g. the access log's record).
pub type OnUsage = Arc<dyn Fn(&http::Extensions) -> Option<UsageReport> + Send + Sync>;

/// Told the usage an answer reported, when it reported one.
pub type UsageReport = Box<dyn FnOnce(super::Usage) + Send>;

/// The route's rate limits.
#[derive(Clone)]
pub struct RateLimitLayer {
    route: Arc<str>,
    limits: Arc<[Limit]>,
    /// Whether any limit needs the async step.
    needs_store: bool,
    on_decision: Option<OnDecision>,
    on_usage: Option<OnUsage>,
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
        let needs_store = limits.iter().any(|l| {
            matches!(l.counter, Counter::Window(_))
                || l.overrides
                    .iter()
                    .any(|o| matches!(o.counter, Counter::Window(_)))
        });
        RateLimitLayer {
            route,
            limits: limits.into(),
            needs_store,
            on_decision: None,
            on_usage: None,
        }
    }

    /// Asks `f` where each metered answer's token usage goes.
    pub fn on_usage(mut self, f: OnUsage) -> Self {
        self.on_usage = Some(f);
        self
    }

    /// Calls `f` with each limit's decision.
    pub fn on_decision(mut self, f: OnDecision) -> Self {
        self.on_decision = Some(f);
        self
    }

    fn report(&self, i: usize, d: Decision) {
        if let Some(f) = &self.on_decision {
            f(i, d);
        }
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

/// The tightest enforced limit's figures, written on admitted answers.
#[derive(Debug, Clone, Copy)]
struct Quota {
    limit: u64,
    remaining: u64,
    reset: Duration,
}

fn tighten(tightest: &mut Option<Quota>, q: Quota) {
    if tightest.is_none_or(|t| q.remaining < t.remaining) {
        *tightest = Some(q);
    }
}

/// A store-backed limit still to decide, and a token budget to charge afterwards.
struct Pending {
    index: usize,
    store: Arc<dyn WindowStore>,
    /// `route \x1f limit \x1f key`: what the store counts under.
    key: String,
    amount: u64,
}

impl RateLimitLayer {
    /// The local buckets' decisions (the first enforced refusal ends the walk); store-backed
    /// limits are returned for the async step.
    fn decide_local<B>(
        &self,
        req: &Request<B>,
        tightest: &mut Option<Quota>,
    ) -> Result<Vec<Pending>, RateLimited> {
        let mut pending = Vec::new();
        for (i, limit) in self.limits.iter().enumerate() {
            let key = key_of(&limit.key, &self.route, req);
            let (counter, amount) = limit
                .overrides
                .iter()
                .find(|o| {
                    o.matches
                        .iter()
                        .all(|(part, value)| part.value(&self.route, req) == *value)
                })
                .map_or((&limit.counter, limit.amount), |o| (&o.counter, o.amount));
            let bucket = match counter {
                Counter::Bucket(b) => b,
                Counter::Window(store) => {
                    pending.push(Pending {
                        index: i,
                        store: store.clone(),
                        key: format!("{}\u{1f}{}\u{1f}{key}", self.route, limit.name),
                        amount,
                    });
                    continue;
                }
            };
            let decision = match bucket.check(&key) {
                Check::Allowed { remaining, reset } => {
                    // A shadow limit is invisible to callers, its figures included.
                    if limit.mode == LimitMode::Enforce {
                        tighten(
                            tightest,
                            Quota {
                                limit: amount,
                                remaining,
                                reset,
                            },
                        );
                    }
                    Decision::Allowed
                }
                Check::Limited { retry_after } => match limit.mode {
                    LimitMode::Shadow => Decision::ShadowLimited,
                    LimitMode::Enforce => {
                        self.report(i, Decision::Limited);
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
            self.report(i, decision);
        }
        Ok(pending)
    }

    /// The store-backed limits' decisions, in order; the token budgets to charge.
    async fn decide_stored(
        self,
        pending: Vec<Pending>,
        mut tightest: Option<Quota>,
    ) -> Result<(Vec<Charging>, Option<Quota>), BoxError> {
        let mut charging = Vec::new();
        for p in pending {
            let limit = self.limits[p.index].clone();
            let outcome = match limit.tokens {
                // A budget admits while tokens are left; the answer is charged afterwards.
                Some(_) => p.store.get(&p.key, limit.per).await,
                None => p.store.add(&p.key, limit.per, 1).await,
            };
            let decision = match outcome {
                Ok(w) => {
                    let over = match limit.tokens {
                        Some(_) => w.count >= p.amount,
                        None => w.count > p.amount,
                    };
                    if !over {
                        if limit.mode == LimitMode::Enforce {
                            tighten(
                                &mut tightest,
                                Quota {
                                    limit: p.amount,
                                    remaining: p.amount.saturating_sub(w.count),
                                    reset: w.reset,
                                },
                            );
                        }
                        Decision::Allowed
                    } else if limit.mode == LimitMode::Shadow {
                        Decision::ShadowLimited
                    } else {
                        self.report(p.index, Decision::Limited);
                        return Err(
                            RateLimited::new(&limit.name, p.amount, limit.per, w.reset).into()
                        );
                    }
                }
                Err(error) => match limit.on_failure {
                    OnStoreFailure::Allow => Decision::FailedOpen,
                    OnStoreFailure::Deny => {
                        self.report(p.index, Decision::Limited);
                        return Err(StoreUnavailable::new(&limit.name, error).into());
                    }
                },
            };
            self.report(p.index, decision);
            if let Some(settings) = limit.tokens
                && decision != Decision::FailedOpen
            {
                charging.push(Charging {
                    store: p.store,
                    key: p.key,
                    per: limit.per,
                    settings,
                });
            }
        }
        Ok((charging, tightest))
    }

    fn asks_for_usage(&self) -> bool {
        self.limits
            .iter()
            .any(|l| l.tokens.is_some_and(|t| t.request_usage))
    }
}

impl<S> tower::Service<Request<TranslateBody>> for RateLimit<S>
where
    S: tower::Service<Request<TranslateBody>, Response = Response<TranslateBody>>
        + Clone
        + Send
        + 'static,
    S::Error: Into<BoxError>,
    S::Future: Send,
{
    type Response = Response<TranslateBody>;
    type Error = BoxError;
    type Future = ResponseFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, req: Request<TranslateBody>) -> Self::Future {
        let mut tightest = None;
        let pending = match self.layer.decide_local(&req, &mut tightest) {
            Ok(p) => p,
            Err(limited) => {
                return ResponseFuture {
                    state: State::Refused {
                        error: Some(limited.into()),
                    },
                };
            }
        };
        if !self.layer.needs_store {
            return ResponseFuture {
                state: State::Called {
                    inner: self.inner.call(req),
                    quota: tightest,
                },
            };
        }
        // The clone serves this request after the store answers; `self.inner` stays ready.
        let mut inner = self.inner.clone();
        std::mem::swap(&mut inner, &mut self.inner);
        let layer = self.layer.clone();
        ResponseFuture {
            state: State::Stored {
                future: Box::pin(async move {
                    let asks = layer.asks_for_usage();
                    let on_usage = layer.on_usage.clone();
                    let started = std::time::Instant::now();
                    let decided = layer.decide_stored(pending, tightest).await;
                    // The shared store's round trip: what a global limit adds to a request.
                    if let Some(hop) = HopTrace::of(&req) {
                        let attributes =
                            vec![KeyValue::new("ferry.ratelimit.admitted", decided.is_ok())];
                        hop.phase(
                            "ratelimit.global",
                            started,
                            std::time::Instant::now(),
                            attributes,
                        );
                    }
                    let (charging, tightest) = decided?;
                    let req = if !charging.is_empty() && asks {
                        super::stream_usage::ask_for_usage(req).await
                    } else {
                        req
                    };
                    // Boxed at once: holding `S::Future` itself across this await trips
                    // rustc's Send inference (its error type's default object lifetime).
                    let hop = HopTrace::of(&req).cloned();
                    let report = match (&on_usage, charging.is_empty()) {
                        (Some(f), false) => f(req.extensions()),
                        _ => None,
                    };
                    let call: InnerCall<S::Error> = Box::pin(inner.call(req));
                    let mut resp = call.await.map_err(Into::into)?;
                    if let Some(q) = tightest {
                        quota_headers(&mut resp, q);
                    }
                    if charging.is_empty() {
                        return Ok(resp);
                    }
                    Ok(resp.map(|body| Metered::new(body, charging, hop, report).boxed_unsync()))
                }),
            },
        }
    }
}

fn quota_headers<B>(resp: &mut Response<B>, q: Quota) {
    let h = resp.headers_mut();
    h.insert("x-ratelimit-limit", HeaderValue::from(q.limit));
    h.insert("x-ratelimit-remaining", HeaderValue::from(q.remaining));
    h.insert("x-ratelimit-reset", HeaderValue::from(ceil_secs(q.reset)));
}

type InnerCall<E> = Pin<Box<dyn Future<Output = Result<Response<TranslateBody>, E>> + Send>>;

type Stored = Pin<Box<dyn Future<Output = Result<Response<TranslateBody>, BoxError>> + Send>>;

pin_project_lite::pin_project! {
    /// The inner answer with the quota headers, the store step, or the refusal.
    pub struct ResponseFuture<F> {
        #[pin]
        state: State<F>,
    }
}

pin_project_lite::pin_project! {
    #[project = StateProj]
    enum State<F> {
        Called { #[pin] inner: F, quota: Option<Quota> },
        Stored { future: Stored },
        Refused { error: Option<BoxError> },
    }
}

impl<F, E> Future for ResponseFuture<F>
where
    F: Future<Output = Result<Response<TranslateBody>, E>>,
    E: Into<BoxError>,
{
    type Output = Result<Response<TranslateBody>, BoxError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project().state.project() {
            StateProj::Refused { error } => Poll::Ready(Err(match error.take() {
                Some(e) => e,
                None => "rate-limit future polled after completion".into(),
            })),
            StateProj::Stored { future } => future.as_mut().poll(cx),
            StateProj::Called { inner, quota } => {
                let mut resp = std::task::ready!(inner.poll(cx)).map_err(Into::into)?;
                if let Some(q) = quota {
                    quota_headers(&mut resp, *q);
                }
                Poll::Ready(Ok(resp))
            }
        }
    }
}
