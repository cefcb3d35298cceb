//! Span export: the `tracing` block's OTLP exporter behind a bounded queue.
//!
//! Kept hops ([`ferry_filters::trace_context::HopTrace`]) hand their spans to [`TraceExport`],
//! which only `try_send`s into a queue of `queue` spans: a full queue drops the hop's spans
//! and counts them, so a slow or dead backend never delays a request nor grows memory. One
//! task drains the queue, encoding each span into the batch's OTLP protobuf as it arrives
//! ([`encode`]), and sends a batch (up to [`BATCH`] spans or [`DELAY`]) over its own
//! connection to the collector ([`client`]: gRPC or HTTP/protobuf) within the configured
//! timeout; a failed batch is dropped and counted, and the next one dials again.
//!
//! The SDK's `BatchSpanProcessor` is not used: it works on SDK spans (the request path here
//! records plain timings and builds `SpanData` only for kept hops), and it reports drops only
//! through its internal log, while `ferry_trace_spans_dropped_total{reason}` is what an
//! operator alerts on.
//!
//! [`Traces`] keeps the exporter across reloads while the `tracing` block is unchanged.

mod client;
mod encode;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ferry_config::{OtlpProtocol, Propagation as CfgPropagation, Tracing};
use ferry_filters::trace_context::{Propagation, SpanSink, TailRules};
use http::{HeaderMap, HeaderName, HeaderValue};
use opentelemetry::KeyValue;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::SpanData;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

use self::client::OtlpClient;
use self::encode::Batch;
use crate::metrics::{DropLabels, Metrics};

/// Spans per export call at most (the OpenTelemetry SDK's default batch size).
const BATCH: usize = 512;
/// How long a partial batch waits for more spans.
const DELAY: Duration = Duration::from_secs(1);
/// At most one "export failed" warning per this long.
const WARN_EVERY: Duration = Duration::from_secs(30);

/// Why the exporter could not be built.
#[derive(Debug, thiserror::Error)]
#[error("tracing: cannot build the OTLP exporter for {endpoint}: {reason}")]
pub struct TracesError {
    endpoint: String,
    reason: String,
}

/// What a route's trace layer is built with.
#[derive(Debug, Clone)]
pub struct RouteTracing {
    /// The sink kept hops go to.
    pub sink: Arc<dyn SpanSink>,
    /// Formats read and written.
    pub propagation: Arc<[Propagation]>,
    /// Head ratio.
    pub ratio: f64,
    /// Tail rules.
    pub tail: TailRules,
}

/// The exporter of the current `tracing` block, kept while the block is unchanged.
#[derive(Debug, Default)]
pub struct Traces {
    current: Mutex<Option<(Tracing, RouteTracing, Arc<TraceExport>)>>,
}

impl Traces {
    /// What routes trace with under `config` (none without a `tracing` block). A changed
    /// block starts a new exporter; the old one flushes what it holds and stops once no
    /// route uses it.
    pub fn for_config(
        &self,
        config: Option<&Tracing>,
        metrics: &Arc<Metrics>,
    ) -> Result<Option<RouteTracing>, TracesError> {
        let Ok(mut current) = self.current.lock() else {
            return Ok(None);
        };
        let Some(cfg) = config else {
            *current = None;
            return Ok(None);
        };
        if let Some((old, route, _)) = current.as_ref()
            && old == cfg
        {
            return Ok(Some(route.clone()));
        }
        let export = TraceExport::start(cfg, metrics.clone())?;
        let route = RouteTracing {
            sink: export.clone(),
            propagation: cfg.propagation.iter().map(|p| propagation(*p)).collect(),
            ratio: cfg.sampling.ratio,
            tail: TailRules {
                always_errors: cfg.sampling.always_errors,
                slower_than: cfg.sampling.slower_than,
            },
        };
        *current = Some((cfg.clone(), route.clone(), export));
        Ok(Some(route))
    }

    /// Exports what is queued, within `deadline` (SIGTERM drain).
    pub async fn flush(&self, deadline: Duration) {
        let export = self
            .current
            .lock()
            .ok()
            .and_then(|c| c.as_ref().map(|(_, _, e)| e.clone()));
        if let Some(e) = export {
            e.flush(deadline).await;
        }
    }
}

fn propagation(p: CfgPropagation) -> Propagation {
    match p {
        CfgPropagation::W3c => Propagation::W3c,
        CfgPropagation::B3 => Propagation::B3,
        CfgPropagation::B3Multi => Propagation::B3Multi,
    }
}

/// The queue and its export task.
#[derive(Debug)]
pub struct TraceExport {
    queue: mpsc::Sender<SpanData>,
    metrics: Arc<Metrics>,
    flush: watch::Sender<bool>,
    task: Mutex<Option<JoinHandle<()>>>,
}

impl SpanSink for TraceExport {
    fn export(&self, spans: Vec<SpanData>) {
        let n = spans.len();
        // All of a hop's spans or none: a trace missing its SERVER span reads as broken.
        match self.queue.try_reserve_many(n) {
            Ok(permits) => {
                for (permit, span) in permits.zip(spans) {
                    permit.send(span);
                }
            }
            Err(e) => {
                let reason = match e {
                    mpsc::error::TrySendError::Full(()) => "queue_full",
                    mpsc::error::TrySendError::Closed(()) => "shutdown",
                };
                self.dropped(reason, n);
            }
        }
    }
}

impl TraceExport {
    fn start(cfg: &Tracing, metrics: Arc<Metrics>) -> Result<Arc<Self>, TracesError> {
        let exporter = build_exporter(cfg)?;
        let batch = Batch::new(&resource(cfg));
        let (queue, rx) = mpsc::channel(cfg.queue.max(1));
        let (flush, flushing) = watch::channel(false);
        let export = Arc::new(TraceExport {
            queue,
            metrics: metrics.clone(),
            flush,
            task: Mutex::new(None),
        });
        let task = tokio::spawn(run(
            rx,
            Exporter {
                client: exporter,
                batch,
                timeout: cfg.otlp.timeout,
                metrics,
                warned: None,
            },
            flushing,
        ));
        if let Ok(mut slot) = export.task.lock() {
            *slot = Some(task);
        }
        Ok(export)
    }

    fn dropped(&self, reason: &'static str, n: usize) {
        self.metrics
            .trace_spans_dropped
            .get_or_create(&DropLabels { reason })
            .inc_by(n as u64);
    }

    async fn flush(&self, deadline: Duration) {
        let _ = self.flush.send(true);
        let task = self.task.lock().ok().and_then(|mut t| t.take());
        if let Some(task) = task
            && tokio::time::timeout(deadline, task).await.is_err()
        {
            tracing::warn!(
                ?deadline,
                "tracing: spans not exported within the drain deadline"
            );
        }
    }
}

/// The collector client of `cfg`: its endpoint, protocol and headers (the config's, over
/// `OTEL_EXPORTER_OTLP_TRACES_HEADERS`, over `OTEL_EXPORTER_OTLP_HEADERS`).
fn build_exporter(cfg: &Tracing) -> Result<OtlpClient, TracesError> {
    let endpoint = endpoint(cfg);
    let fail = |reason: String| TracesError {
        endpoint: endpoint.clone(),
        reason,
    };
    let mut map = HeaderMap::new();
    let env = [
        "OTEL_EXPORTER_OTLP_HEADERS",
        "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
    ]
    .into_iter()
    .filter_map(|k| std::env::var(k).ok())
    .flat_map(|v| env_headers(&v));
    for (k, v) in env.chain(cfg.otlp.headers.iter().cloned()) {
        let name =
            HeaderName::try_from(k.as_str()).map_err(|e| fail(format!("header {k}: {e}")))?;
        let value =
            HeaderValue::try_from(v.as_str()).map_err(|e| fail(format!("header {k}: {e}")))?;
        map.insert(name, value);
    }
    OtlpClient::new(&endpoint, cfg.otlp.protocol == OtlpProtocol::Grpc, map)
        .map_err(|e| fail(e.to_string()))
}

/// `OTEL_EXPORTER_OTLP_HEADERS`: `key=value` pairs separated by commas, values
/// percent-encoded (the OpenTelemetry environment-variable spec); a malformed pair is skipped.
fn env_headers(v: &str) -> Vec<(String, String)> {
    v.split(',')
        .filter_map(|pair| pair.split_once('='))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), percent_decode(v.trim())))
        .filter(|(k, _)| !k.is_empty())
        .collect()
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        match (
            b[i],
            b.get(i + 1).copied().and_then(hex),
            b.get(i + 2).copied().and_then(hex),
        ) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (c, _, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The endpoint: the config's, else the OTLP environment's, else the protocol's default on
/// localhost. OTLP/HTTP gets `/v1/traces` when the endpoint has no path (as the OTLP spec
/// does for `OTEL_EXPORTER_OTLP_ENDPOINT`).
fn endpoint(cfg: &Tracing) -> String {
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    let http = cfg.otlp.protocol == OtlpProtocol::Http;
    if let Some(e) = &cfg.otlp.endpoint {
        return if http && !has_path(e) {
            format!("{}/v1/traces", e.trim_end_matches('/'))
        } else {
            e.clone()
        };
    }
    // The signal's own variable is the full URL; the generic one is a base the OTLP spec
    // appends the signal's path to.
    if let Some(e) = env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
        return e;
    }
    match (env("OTEL_EXPORTER_OTLP_ENDPOINT"), http) {
        (Some(base), true) => format!("{}/v1/traces", base.trim_end_matches('/')),
        (Some(base), false) => base,
        (None, true) => "http://localhost:4318/v1/traces".into(),
        (None, false) => "http://localhost:4317".into(),
    }
}

fn has_path(url: &str) -> bool {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    rest.split_once('/').is_some_and(|(_, p)| !p.is_empty())
}

fn resource(cfg: &Tracing) -> Resource {
    let name = cfg
        .service_name
        .clone()
        .or_else(|| {
            std::env::var("OTEL_SERVICE_NAME")
                .ok()
                .filter(|v| !v.is_empty())
        })
        .unwrap_or_else(|| "ferry".into());
    // The builder reads OTEL_RESOURCE_ATTRIBUTES; the name set here wins over both.
    Resource::builder()
        .with_service_name(name)
        .with_attributes([KeyValue::new("service.version", env!("CARGO_PKG_VERSION"))])
        .build()
}

/// The export side of the task: the collector, the batch being filled, and the counters.
struct Exporter {
    client: OtlpClient,
    batch: Batch,
    timeout: Duration,
    metrics: Arc<Metrics>,
    warned: Option<Instant>,
}

/// The export loop: a batch is sent when full or [`DELAY`] after its first span; a flush
/// request exports everything queued and ends the loop.
async fn run(
    mut rx: mpsc::Receiver<SpanData>,
    mut ex: Exporter,
    mut flushing: watch::Receiver<bool>,
) {
    loop {
        tokio::select! {
            first = rx.recv() => match first {
                Some(span) => ex.batch.push(&span),
                None => break,
            },
            _ = flushing.changed() => break,
        }
        let until = tokio::time::sleep(DELAY);
        tokio::pin!(until);
        let mut stop = false;
        while ex.batch.len() < BATCH {
            tokio::select! {
                next = rx.recv() => match next {
                    Some(span) => ex.batch.push(&span),
                    None => { stop = true; break; }
                },
                _ = &mut until => break,
                _ = flushing.changed() => { stop = true; break; }
            }
        }
        ex.send().await;
        if stop {
            break;
        }
    }
    // Flush: what is queued now goes out; spans arriving later are dropped as `shutdown`.
    rx.close();
    while let Ok(span) = rx.try_recv() {
        ex.batch.push(&span);
        if ex.batch.len() == BATCH {
            ex.send().await;
        }
    }
    ex.send().await;
}

impl Exporter {
    async fn send(&mut self) {
        if self.batch.is_empty() {
            return;
        }
        let n = self.batch.len() as u64;
        let body = self.batch.take_request(self.client.is_grpc());
        match self.client.export(body, self.timeout).await {
            Ok(()) => {
                self.metrics.trace_spans_exported.inc_by(n);
            }
            Err(error) => {
                self.metrics
                    .trace_spans_dropped
                    .get_or_create(&DropLabels {
                        reason: "export_failed",
                    })
                    .inc_by(n);
                if self.warned.is_none_or(|at| at.elapsed() >= WARN_EVERY) {
                    self.warned = Some(Instant::now());
                    tracing::warn!(%error, spans = n, "tracing: export failed; spans dropped");
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_endpoints_get_the_traces_path_only_when_they_have_none() {
        let mut cfg = Tracing::default();
        cfg.otlp.protocol = OtlpProtocol::Http;
        cfg.otlp.endpoint = Some("http://c:4318".into());
        assert_eq!(endpoint(&cfg), "http://c:4318/v1/traces");
        cfg.otlp.endpoint = Some("http://c:4318/custom/traces".into());
        assert_eq!(endpoint(&cfg), "http://c:4318/custom/traces");
        cfg.otlp.protocol = OtlpProtocol::Grpc;
        cfg.otlp.endpoint = Some("http://c:4317".into());
        assert_eq!(endpoint(&cfg), "http://c:4317");
    }

    #[test]
    fn environment_headers_are_split_trimmed_and_percent_decoded() {
        assert_eq!(
            env_headers("api-key=a%20b%2Cc , X-Tenant=t1,broken,=v"),
            vec![
                ("api-key".to_owned(), "a b,c".to_owned()),
                ("x-tenant".to_owned(), "t1".to_owned()),
            ]
        );
        assert_eq!(percent_decode("100%"), "100%");
    }
}
