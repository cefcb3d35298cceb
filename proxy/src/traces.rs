//! Span export: the `tracing` block's OTLP exporter behind a bounded queue.
//!
//! Kept hops ([`ferry_filters::trace_context::HopTrace`]) hand their spans to [`TraceExport`],
//! which encodes them into the OTLP protobuf of a batch held by a queue of at most `queue`
//! spans ([`queue`], [`encode`]): a full queue drops the hop's spans and counts them, so a
//! slow or dead backend never delays a request nor grows memory. One task sends each batch
//! (up to [`queue::BATCH`] spans, or [`DELAY`] after the first) over its own connection to
//! the collector ([`client`]: gRPC or HTTP/protobuf) within the configured timeout; a failed
//! batch is dropped and counted, and the next one dials again.
//!
//! The SDK's `BatchSpanProcessor` is not used: it works on SDK spans (the request path here
//! records plain timings and never builds `SpanData`), and it reports drops only through its
//! internal log, while `ferry_trace_spans_dropped_total{reason}` is what an operator alerts on.
//!
//! [`Traces`] keeps the exporter across reloads while the `tracing` block is unchanged.

mod client;
mod encode;
mod queue;
mod settings;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ferry_config::{Propagation as CfgPropagation, Tracing};
use ferry_filters::trace_context::{KeptHop, Propagation, SpanSink, TailRules};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use self::client::OtlpClient;
use self::encode::Batch;
use self::queue::{Refused, SpanQueue};
use self::settings::{build_exporter, resource};
use crate::metrics::{DropLabels, Metrics};

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
    queue: Arc<SpanQueue>,
    metrics: Arc<Metrics>,
    flush: watch::Sender<bool>,
    task: Mutex<Option<JoinHandle<()>>>,
}

impl SpanSink for TraceExport {
    fn export(&self, hop: &KeptHop<'_>) {
        if let Err(refused) = self.queue.push(hop) {
            let reason = match refused {
                Refused::Full => "queue_full",
                Refused::Closed => "shutdown",
            };
            self.dropped(reason, hop.len());
        }
    }
}

impl TraceExport {
    fn start(cfg: &Tracing, metrics: Arc<Metrics>) -> Result<Arc<Self>, TracesError> {
        let client = build_exporter(cfg)?;
        let queue = Arc::new(SpanQueue::new(cfg.queue, Batch::new(&resource(cfg))));
        let (flush, flushing) = watch::channel(false);
        let export = Arc::new(TraceExport {
            queue: queue.clone(),
            metrics: metrics.clone(),
            flush,
            task: Mutex::new(None),
        });
        let task = tokio::spawn(run(
            queue,
            Exporter {
                client,
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

/// The export side of the task: the collector and the counters.
struct Exporter {
    client: OtlpClient,
    timeout: Duration,
    metrics: Arc<Metrics>,
    warned: Option<Instant>,
}

/// The export loop: a full batch is sent at once, a partial one [`DELAY`] after the queue
/// stopped being empty; a flush request sends everything held and ends the loop.
async fn run(queue: Arc<SpanQueue>, mut ex: Exporter, mut flushing: watch::Receiver<bool>) {
    'wait: loop {
        tokio::select! {
            _ = queue.notified() => {}
            _ = flushing.changed() => break 'wait,
        }
        let until = tokio::time::Instant::now() + DELAY;
        loop {
            while let Some(batch) = queue.take_full() {
                ex.send(batch).await;
            }
            if queue.open_is_empty() {
                continue 'wait;
            }
            tokio::select! {
                _ = tokio::time::sleep_until(until) => {
                    if let Some(batch) = queue.take_open() {
                        ex.send(batch).await;
                    }
                    continue 'wait;
                }
                // A batch filled (or a stale permit): send what is full, keep waiting.
                _ = queue.notified() => {}
                _ = flushing.changed() => break 'wait,
            }
        }
    }
    // Flush: what is held now goes out; spans arriving later are dropped as `shutdown`.
    queue.close();
    while let Some(batch) = queue.take_full() {
        ex.send(batch).await;
    }
    if let Some(batch) = queue.take_open() {
        ex.send(batch).await;
    }
}

impl Exporter {
    async fn send(&mut self, batch: Batch) {
        let n = batch.len() as u64;
        let body = batch.into_request(self.client.is_grpc());
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
