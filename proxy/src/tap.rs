//! Live taps: the admin `GET /tap` streams the access records of requests as they finish, as
//! NDJSON in the access log's own JSON schema (or its text line), filtered by route, model,
//! status and authority, only while someone listens (`ferry tap` is its client).
//!
//! Place: when a request's response headers are ready, [`crate::request_meta`] asks
//! [`Taps::listening`] (one relaxed atomic load); with no tap attached nothing more is done
//! for taps. With taps attached it builds the access record only when some tap's filter
//! admits the request's route, model, status and authority, and offers the finished record to
//! each tap that admits it.
//!
//! Bounded: each tap has a queue of [`QUEUE`] records; a full queue (a slow reader) loses the
//! record and counts it, and the stream says so with a `{"dropped":N}` line (N lost so far) at
//! most once a second. Traffic never waits for a tap. At most [`MAX_TAPS`] taps at once; the
//! next is answered 503. A tap detaches when its response body is dropped (the client went
//! away).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use arc_swap::ArcSwap;
use http::header::{CACHE_CONTROL, CONTENT_TYPE, HeaderValue, RETRY_AFTER};
use http::{Response, StatusCode};
use http_body_util::BodyExt;
use tokio::sync::mpsc;

use crate::access_log::AccessRecord;
use crate::body::{ProxyBody, full};

mod filter;
mod stream;

#[cfg(test)]
mod tests;

pub use filter::{Facts, TapFilter, TapQuery, TapQueryError};
pub use stream::TapBody;

/// Taps attached at once, at most: each costs the request path a filter check per request.
pub const MAX_TAPS: usize = 8;

/// Records one tap holds for its reader before it loses the next ones.
pub const QUEUE: usize = 1024;

/// The line format of a tap.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub enum TapFormat {
    /// The access log's JSON object per line.
    #[default]
    Json,
    /// The access log's text line.
    Text,
}

/// The taps of the process.
#[derive(Debug)]
pub struct Taps {
    /// How many are attached: the only thing the request path reads when none is.
    listening: AtomicUsize,
    /// The attached taps, read per tapped request without a lock.
    attached: ArcSwap<Vec<Arc<Tap>>>,
    /// Serializes attach and detach (the list is copied on write).
    changes: Mutex<()>,
    max: usize,
}

/// One attached tap.
#[derive(Debug)]
pub struct Tap {
    filter: TapFilter,
    queue: mpsc::Sender<AccessRecord>,
    /// Records its full queue lost.
    dropped: AtomicU64,
}

/// The tap limit was reached.
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("{0} taps are already attached (the limit)")]
pub struct TooManyTaps(pub usize);

// === impl Taps ===

impl Default for Taps {
    fn default() -> Self {
        Taps::new(MAX_TAPS)
    }
}

impl Taps {
    /// No tap attached; at most `max` at once.
    pub fn new(max: usize) -> Self {
        Taps {
            listening: AtomicUsize::new(0),
            attached: ArcSwap::from_pointee(Vec::new()),
            changes: Mutex::new(()),
            max,
        }
    }

    /// Whether any tap is attached. Relaxed: a tap attached a moment ago may miss the
    /// requests already under way, which is what a tap promises anyway.
    #[inline]
    pub fn listening(&self) -> bool {
        self.listening.load(Ordering::Relaxed) != 0
    }

    /// Taps attached now.
    pub fn count(&self) -> usize {
        self.listening.load(Ordering::Relaxed)
    }

    /// Whether some attached tap admits a request with these facts.
    pub fn interested(&self, facts: &Facts<'_>) -> bool {
        self.attached.load().iter().any(|t| t.filter.admits(facts))
    }

    /// Queues a finished record on every tap that admits it; never waits.
    pub fn offer(&self, record: &AccessRecord) {
        let facts = Facts {
            route: record.route.as_deref(),
            model: record.model.as_deref(),
            status: record.status,
            authority: record.authority(),
        };
        for tap in self.attached.load().iter() {
            if tap.filter.admits(&facts) && tap.queue.try_send(record.clone()).is_err() {
                tap.dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Attaches a tap; its records arrive on the returned body until the body is dropped.
    pub fn attach(self: &Arc<Self>, query: TapQuery) -> Result<TapBody, TooManyTaps> {
        let (queue, records) = mpsc::channel(QUEUE);
        let tap = Arc::new(Tap {
            filter: query.filter,
            queue,
            dropped: AtomicU64::new(0),
        });
        let _changing = self.changes.lock().unwrap_or_else(|p| p.into_inner());
        let now = self.attached.load_full();
        if now.len() >= self.max {
            return Err(TooManyTaps(self.max));
        }
        let mut next = Vec::with_capacity(now.len() + 1);
        next.extend(now.iter().cloned());
        next.push(tap.clone());
        self.listening.store(next.len(), Ordering::Relaxed);
        self.attached.store(Arc::new(next));
        Ok(TapBody::new(self.clone(), tap, records, query.format))
    }

    fn detach(&self, tap: &Arc<Tap>) {
        let _changing = self.changes.lock().unwrap_or_else(|p| p.into_inner());
        let next: Vec<_> = self
            .attached
            .load()
            .iter()
            .filter(|t| !Arc::ptr_eq(t, tap))
            .cloned()
            .collect();
        self.listening.store(next.len(), Ordering::Relaxed);
        self.attached.store(Arc::new(next));
    }
}

// === impl Tap ===

impl Tap {
    /// Records lost to a full queue so far.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

/// The admin answer to `GET /tap?…`: the stream, 400 naming a bad parameter, or 503 when
/// [`MAX_TAPS`] are attached.
pub fn answer(taps: &Arc<Taps>, query: Option<&str>) -> Response<ProxyBody> {
    let query = match TapQuery::parse(query) {
        Ok(q) => q,
        Err(e) => {
            let body = serde_json::json!({ "error": e.to_string(), "parameter": e.parameter() });
            return json(StatusCode::BAD_REQUEST, &body);
        }
    };
    let format = query.format;
    match taps.attach(query) {
        Ok(body) => {
            let mut resp = Response::new(body.boxed_unsync());
            let kind = match format {
                TapFormat::Json => "application/x-ndjson",
                TapFormat::Text => "text/plain; charset=utf-8",
            };
            let headers = resp.headers_mut();
            headers.insert(CONTENT_TYPE, HeaderValue::from_static(kind));
            headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
            resp
        }
        Err(e) => {
            let body = serde_json::json!({ "error": e.to_string(), "limit": e.0 });
            let mut resp = json(StatusCode::SERVICE_UNAVAILABLE, &body);
            resp.headers_mut()
                .insert(RETRY_AFTER, HeaderValue::from_static("1"));
            resp
        }
    }
}

fn json(status: StatusCode, body: &serde_json::Value) -> Response<ProxyBody> {
    let mut resp = Response::new(full(format!("{body}\n")));
    *resp.status_mut() = status;
    resp.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    resp
}
