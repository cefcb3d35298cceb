//! At most `max` requests in flight per route and model, the next `queue` waiting in FIFO
//! order (tokio's semaphore is fair) up to `queue_timeout`. A slot is held until the answer's
//! body ends, so a streamed answer (SSE, a gRPC stream) holds it for the whole stream.

mod gradient;
mod hold;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use dashmap::DashMap;
use http::{HeaderMap, Request, Response};
use http_body_util::BodyExt;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use self::gradient::Gradient;
use self::hold::{Held, HoldSlot};
use super::errors::Overloaded;
use crate::model_name::ModelRef;
use crate::trace_context::HopTrace;
use crate::translate::{BoxError, TranslateBody};

/// A route's `concurrency`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConcurrencySettings {
    /// In flight at most (≥ 1).
    pub max: u32,
    /// Waiting at most.
    pub queue: u32,
    /// Longest wait.
    pub queue_timeout: Duration,
    /// The route's own deadline, which bounds the wait when the caller gives none.
    pub route_timeout: Option<Duration>,
    /// Adapt the cap (between 1 and `max`) to observed latency.
    pub adaptive: bool,
}

/// The slots of one route, per model: kept by the caller across reloads.
#[derive(Debug)]
pub struct ConcurrencyState {
    settings: ConcurrencySettings,
    slots: DashMap<String, Arc<Slot>>,
}

/// One model's slots.
#[derive(Debug)]
pub struct Slot {
    semaphore: Arc<Semaphore>,
    queued: AtomicU32,
    /// Moving average of how long a slot is held, in microseconds (0 = no sample yet).
    held_us: AtomicU64,
    max: u32,
    /// `Some` with `adaptive: true`.
    adaptive: Option<std::sync::Mutex<Gradient>>,
}

/// A model's figures, for metrics and `/config_dump`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlotStats {
    /// The model (`""` for requests naming none).
    pub model: String,
    /// Requests holding a slot.
    pub in_flight: u32,
    /// Requests waiting.
    pub queued: u32,
    /// The cap now (`max`, or the adaptive limit).
    pub limit: u32,
}

impl ConcurrencyState {
    /// No slots taken yet.
    pub fn new(settings: ConcurrencySettings) -> Self {
        ConcurrencyState {
            settings,
            slots: DashMap::new(),
        }
    }

    /// The settings this state was made for.
    pub fn settings(&self) -> &ConcurrencySettings {
        &self.settings
    }

    fn slot(&self, model: &str) -> Arc<Slot> {
        if let Some(s) = self.slots.get(model) {
            return s.clone();
        }
        self.slots
            .entry(model.to_owned())
            .or_insert_with(|| {
                Arc::new(Slot {
                    semaphore: Arc::new(Semaphore::new(self.settings.max as usize)),
                    queued: AtomicU32::new(0),
                    held_us: AtomicU64::new(0),
                    max: self.settings.max,
                    adaptive: self.settings.adaptive.then(|| {
                        std::sync::Mutex::new(Gradient {
                            limit: f64::from(self.settings.max),
                            best_us: 0.0,
                            recent_us: 0.0,
                            samples: 0,
                            reserved: Vec::new(),
                        })
                    }),
                })
            })
            .clone()
    }

    /// How many requests for `model` wait for a slot now (a route's load report).
    pub fn queued(&self, model: &str) -> u32 {
        self.slots
            .get(model)
            .map_or(0, |s| s.queued.load(Ordering::Relaxed))
    }

    /// Every model's figures now.
    pub fn stats(&self) -> Vec<SlotStats> {
        let mut out: Vec<SlotStats> = self
            .slots
            .iter()
            .map(|e| {
                let reserved = e
                    .adaptive
                    .as_ref()
                    .and_then(|g| g.lock().ok().map(|g| g.reserved.len()))
                    .unwrap_or(0);
                let reserved = u32::try_from(reserved).unwrap_or(u32::MAX);
                let free = u32::try_from(e.semaphore.available_permits()).unwrap_or(0);
                SlotStats {
                    model: e.key().clone(),
                    in_flight: e.max.saturating_sub(free).saturating_sub(reserved),
                    queued: e.queued.load(Ordering::Relaxed),
                    limit: e.max.saturating_sub(reserved),
                }
            })
            .collect();
        out.sort_by(|a, b| a.model.cmp(&b.model));
        out
    }
}

/// Called when a request waited in the queue: how long, whether it got a slot.
pub type OnQueued = Arc<dyn Fn(&str, Duration, bool) + Send + Sync>;

/// The layer.
#[derive(Clone)]
pub struct ConcurrencyLayer {
    state: Arc<ConcurrencyState>,
    on_queued: Option<OnQueued>,
}

impl std::fmt::Debug for ConcurrencyLayer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConcurrencyLayer")
            .field("state", &self.state)
            .finish_non_exhaustive()
    }
}

impl ConcurrencyLayer {
    /// Limits through `state`.
    pub fn new(state: Arc<ConcurrencyState>) -> Self {
        ConcurrencyLayer {
            state,
            on_queued: None,
        }
    }

    /// Calls `f` for each request that waited.
    pub fn on_queued(mut self, f: OnQueued) -> Self {
        self.on_queued = Some(f);
        self
    }

    /// The slots it limits through.
    pub fn state(&self) -> &Arc<ConcurrencyState> {
        &self.state
    }
}

impl<S> tower::Layer<S> for ConcurrencyLayer {
    type Service = Concurrency<S>;

    fn layer(&self, inner: S) -> Concurrency<S> {
        Concurrency {
            inner,
            layer: self.clone(),
        }
    }
}

/// The service made by [`ConcurrencyLayer`].
#[derive(Clone)]
pub struct Concurrency<S> {
    inner: S,
    layer: ConcurrencyLayer,
}

impl<S: std::fmt::Debug> std::fmt::Debug for Concurrency<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Concurrency")
            .field("inner", &self.inner)
            .finish_non_exhaustive()
    }
}

type Boxed<T> = Pin<Box<dyn Future<Output = Result<T, BoxError>> + Send>>;

impl<S, B> tower::Service<Request<B>> for Concurrency<S>
where
    S: tower::Service<Request<B>, Response = Response<TranslateBody>> + Clone + Send + 'static,
    S::Error: Into<BoxError>,
    S::Future: Send,
    B: Send + 'static,
{
    type Response = Response<TranslateBody>;
    type Error = BoxError;
    type Future = Boxed<Response<TranslateBody>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        let model = req
            .extensions()
            .get::<ModelRef>()
            .map(|m| m.name.clone())
            .unwrap_or_default();
        let state = self.layer.state.clone();
        let on_queued = self.layer.on_queued.clone();
        let slot = state.slot(&model);
        // The clone serves this request; `self.inner` stays ready for the next (tower's rule
        // for services called after an await).
        let mut inner = self.inner.clone();
        std::mem::swap(&mut inner, &mut self.inner);
        Box::pin(async move {
            let permit = match slot.semaphore.clone().try_acquire_owned() {
                Ok(p) => p,
                Err(_) => {
                    let started = std::time::Instant::now();
                    let got = wait(&state, &slot, &model, deadline(&req, &state), on_queued).await;
                    // Only a request that queued has a phase worth a span.
                    if let Some(hop) = HopTrace::of(&req) {
                        let attributes = vec![opentelemetry::KeyValue::new(
                            "ferry.concurrency.admitted",
                            got.is_ok(),
                        )];
                        hop.phase(
                            "concurrency.wait",
                            started,
                            std::time::Instant::now(),
                            attributes,
                        );
                    }
                    got?
                }
            };
            let held = Held {
                slot: slot.clone(),
                since: tokio::time::Instant::now(),
                _permit: permit,
            };
            let resp = inner.call(req).await.map_err(Into::into)?;
            Ok(resp.map(|body| {
                HoldSlot {
                    inner: body,
                    held: Some(held),
                }
                .boxed_unsync()
            }))
        })
    }
}

/// The caller's deadline: `grpc-timeout`, else the route's timeout.
fn deadline<B>(req: &Request<B>, state: &ConcurrencyState) -> Option<Duration> {
    grpc_timeout(req.headers()).or(state.settings.route_timeout)
}

/// Queues for a slot, or refuses at once when the queue is full or the caller's deadline is
/// shorter than a slot is usually held (it would time out waiting anyway).
async fn wait(
    state: &ConcurrencyState,
    slot: &Slot,
    model: &str,
    deadline: Option<Duration>,
    on_queued: Option<OnQueued>,
) -> Result<OwnedSemaphorePermit, Overloaded> {
    let model_owned = || model.to_owned();
    let held = Duration::from_micros(slot.held_us.load(Ordering::Relaxed));
    if deadline.is_some_and(|d| !held.is_zero() && d < held) {
        return Err(Overloaded::Deadline {
            model: model_owned(),
        });
    }
    let queued = slot.queued.fetch_add(1, Ordering::AcqRel);
    if queued >= state.settings.queue {
        slot.queued.fetch_sub(1, Ordering::AcqRel);
        return Err(Overloaded::QueueFull {
            model: model_owned(),
        });
    }
    let limit = deadline.map_or(state.settings.queue_timeout, |d| {
        d.min(state.settings.queue_timeout)
    });
    let started = tokio::time::Instant::now();
    let got = tokio::time::timeout(limit, slot.semaphore.clone().acquire_owned()).await;
    slot.queued.fetch_sub(1, Ordering::AcqRel);
    let waited = started.elapsed();
    match got {
        Ok(Ok(permit)) => {
            if let Some(f) = &on_queued {
                f(model, waited, true);
            }
            Ok(permit)
        }
        // The semaphore is never closed; treat it like a timeout.
        Ok(Err(_)) | Err(_) => {
            if let Some(f) = &on_queued {
                f(model, waited, false);
            }
            Err(Overloaded::QueueTimeout {
                model: model_owned(),
            })
        }
    }
}

/// `grpc-timeout` (gRPC over HTTP/2: an integer of at most 8 digits and a unit H M S m u n).
fn grpc_timeout(headers: &HeaderMap) -> Option<Duration> {
    let v = headers.get("grpc-timeout")?.to_str().ok()?;
    let (digits, unit) = v.split_at(v.len().checked_sub(1)?);
    if digits.is_empty() || digits.len() > 8 {
        return None;
    }
    let n: u64 = digits.parse().ok()?;
    Some(match unit {
        "H" => Duration::from_secs(n.checked_mul(3600)?),
        "M" => Duration::from_secs(n.checked_mul(60)?),
        "S" => Duration::from_secs(n),
        "m" => Duration::from_millis(n),
        "u" => Duration::from_micros(n),
        "n" => Duration::from_nanos(n),
        _ => return None,
    })
}
