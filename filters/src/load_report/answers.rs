//! Load reports on a route's answers ([`AnswerReportsLayer`]): ferry's own report added, the
//! upstream's stripped, or both.
//!
//! - **report**: every answer carries `endpoint-load-metrics: TEXT
//!   named_metrics.ferry_inflight=<n>, named_metrics.ferry_queued=<q>`, where `n` is the
//!   route's requests in ferry when the answer's head leaves (this one excluded; a request
//!   counts until its answer's body ends, so a long stream counts for its whole length) and `q`
//!   those of them waiting for a concurrency slot for the same model. An outbound ferry
//!   balancing with `lb.load_report.metric: named_metrics.ferry_inflight` then steers by how
//!   busy each replica really is, whatever serves the model. An upstream TEXT or JSON report is
//!   kept and ferry's metrics merged into it, so a balancer may read either.
//! - **strip**: `endpoint-load-metrics*` headers and trailers from the upstream are removed,
//!   for callers outside the mesh (they say how full each GPU is).
//!
//! The layer sits outside the concurrency limit, so queued requests are counted in flight.
//! Neither setting can fail a request.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll, ready};

use http::{HeaderMap, HeaderValue, Request, Response};
use http_body_util::BodyExt;

use super::{HEADER, HEADER_BIN, OnTrailers};
use crate::limits::ConcurrencyState;
use crate::model_name::ModelRef;
use crate::translate::{BoxError, TranslateBody};

/// The name ferry reports its in-flight requests under (`named_metrics.<this>`).
pub const IN_FLIGHT_METRIC: &str = "ferry_inflight";
/// The name ferry reports its queued requests under.
pub const QUEUED_METRIC: &str = "ferry_queued";

/// A route's `load_report` settings.
#[derive(Debug, Clone, Default)]
pub struct AnswerReports {
    /// Add ferry's own report.
    pub report: bool,
    /// Remove the upstream's reports.
    pub strip: bool,
    /// The route's concurrency limit, whose queue the report counts.
    pub concurrency: Option<Arc<ConcurrencyState>>,
}

/// Tower layer for [`AnswerReports`].
#[derive(Debug, Clone)]
pub struct AnswerReportsLayer {
    shared: Arc<Shared>,
}

/// The service made by [`AnswerReportsLayer`].
#[derive(Debug, Clone)]
pub struct AnswerReportsService<S> {
    inner: S,
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    settings: AnswerReports,
    in_flight: Arc<AtomicU64>,
}

/// Counts a request in flight until dropped (with the answer's body, or the failed future).
#[derive(Debug)]
struct InFlight(Arc<Shared>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

pin_project_lite::pin_project! {
    /// The future of [`AnswerReportsService`]: the inner answer, edited.
    pub struct ResponseFuture<F> {
        #[pin]
        inner: F,
        guard: Option<InFlight>,
        model: Option<String>,
    }
}

// === impl AnswerReportsLayer ===

impl AnswerReportsLayer {
    /// A layer with these settings counting in `in_flight` (the caller keeps it across
    /// reloads); `None` when the settings do nothing (no layer at all).
    pub fn new(settings: AnswerReports, in_flight: Arc<AtomicU64>) -> Option<Self> {
        (settings.report || settings.strip).then(|| AnswerReportsLayer {
            shared: Arc::new(Shared {
                settings,
                in_flight,
            }),
        })
    }
}

impl<S> tower::Layer<S> for AnswerReportsLayer {
    type Service = AnswerReportsService<S>;

    fn layer(&self, inner: S) -> AnswerReportsService<S> {
        AnswerReportsService {
            inner,
            shared: self.shared.clone(),
        }
    }
}

// === impl AnswerReportsService ===

impl<S, B> tower::Service<Request<B>> for AnswerReportsService<S>
where
    S: tower::Service<Request<B>, Response = Response<TranslateBody>>,
    S::Error: Into<BoxError>,
{
    type Response = Response<TranslateBody>;
    type Error = BoxError;
    type Future = ResponseFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        let report = self.shared.settings.report;
        // The model only matters for the queue of a route with a concurrency limit.
        let model = (report && self.shared.settings.concurrency.is_some()).then(|| {
            req.extensions()
                .get::<ModelRef>()
                .map(|m| m.name.clone())
                .unwrap_or_default()
        });
        let guard = report.then(|| {
            self.shared.in_flight.fetch_add(1, Ordering::Relaxed);
            InFlight(self.shared.clone())
        });
        ResponseFuture {
            inner: self.inner.call(req),
            guard,
            model,
        }
    }
}

impl<F, E> Future for ResponseFuture<F>
where
    F: Future<Output = Result<Response<TranslateBody>, E>>,
    E: Into<BoxError>,
{
    type Output = Result<Response<TranslateBody>, BoxError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let mut resp = ready!(this.inner.poll(cx)).map_err(Into::into)?;
        let guard = this.guard.take();
        let shared = match &guard {
            Some(g) => g.0.clone(),
            None => return Poll::Ready(Ok(strip_only(resp))),
        };
        let settings = &shared.settings;
        if settings.strip {
            strip(resp.headers_mut());
        }
        let in_flight = shared.in_flight.load(Ordering::Relaxed).saturating_sub(1);
        let queued = match (&settings.concurrency, this.model.as_deref()) {
            (Some(c), Some(model)) => c.queued(model),
            _ => 0,
        };
        add_own(resp.headers_mut(), in_flight, queued);
        let strip_trailers = settings.strip;
        // The request counts until its answer's body is over (or dropped).
        Poll::Ready(Ok(resp.map(move |body| {
            OnTrailers::new(body, move |t: &mut HeaderMap| {
                if strip_trailers {
                    strip(t);
                }
                drop(guard);
            })
            .boxed_unsync()
        })))
    }
}

fn strip_only(mut resp: Response<TranslateBody>) -> Response<TranslateBody> {
    strip(resp.headers_mut());
    resp.map(|body| OnTrailers::new(body, strip).boxed_unsync())
}

fn strip(headers: &mut HeaderMap) {
    headers.remove(HEADER);
    headers.remove(HEADER_BIN);
}

/// Adds ferry's metrics to the answer's report, in the upstream report's own form: appended to
/// a TEXT report, put into a JSON report's `named_metrics` (ferry's names win over the
/// upstream's same names), or as a TEXT report when there is none. A report ferry cannot read
/// (not text, malformed JSON, over the size bound) is left as it is: one header, one form.
fn add_own(headers: &mut HeaderMap, in_flight: u64, queued: u32) {
    let metrics = [
        (IN_FLIGHT_METRIC, in_flight as f64),
        (QUEUED_METRIC, f64::from(queued)),
    ];
    let value = match headers.get(HEADER).map(HeaderValue::to_str) {
        None => super::text_report(metrics),
        Some(Ok(text)) if text.len() > super::MAX_REPORT => return,
        Some(Ok(text)) if text.starts_with("TEXT ") => {
            let own = super::text_report(metrics);
            format!("{text}, {}", own.trim_start_matches("TEXT "))
        }
        Some(Ok(text)) if text.starts_with("JSON ") => {
            match merge_json(text.trim_start_matches("JSON "), metrics) {
                Some(merged) => merged,
                None => return,
            }
        }
        Some(_) => return,
    };
    if let Ok(v) = HeaderValue::try_from(value) {
        headers.insert(HEADER, v);
    }
}

/// `report` (proto3 JSON of an OrcaLoadReport) with `metrics` set in its `named_metrics`.
fn merge_json<'a>(
    report: &str,
    metrics: impl IntoIterator<Item = (&'a str, f64)>,
) -> Option<String> {
    let mut report: serde_json::Value = serde_json::from_str(report).ok()?;
    let named = report
        .as_object_mut()?
        .entry("named_metrics")
        .or_insert_with(|| serde_json::Value::Object(serde_json::Map::new()))
        .as_object_mut()?;
    for (name, value) in metrics {
        named.insert(name.to_owned(), serde_json::Value::from(value));
    }
    Some(format!("JSON {report}"))
}

#[cfg(test)]
mod tests;
