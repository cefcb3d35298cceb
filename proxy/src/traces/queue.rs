//! The bounded span queue between the request path and the export task, holding spans already
//! encoded: a kept hop is written into the open batch under a short lock, where it lies (no
//! `SpanData`, no channel slot per span to copy in and out); a batch that reaches [`BATCH`]
//! spans is closed and waits for the task. The bound is in spans, across every batch held:
//! past it a hop is dropped whole (a trace missing its SERVER span reads as broken).

use std::collections::VecDeque;
use std::sync::Mutex;

use ferry_filters::trace_context::KeptHop;
use tokio::sync::Notify;

use super::encode::Batch;

/// Spans per export call at most (the OpenTelemetry SDK's default batch size).
pub const BATCH: usize = 512;

/// Why a hop was not queued (the `reason` of `ferry_trace_spans_dropped_total`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// The queue holds `queue` spans already.
    Full,
    /// The exporter is flushing for shutdown.
    Closed,
}

#[derive(Debug)]
struct Held {
    /// Batches that reached [`BATCH`], oldest first.
    full: VecDeque<Batch>,
    /// The batch being filled.
    open: Batch,
    /// Spans in `full` and `open`.
    spans: usize,
    closed: bool,
}

/// The queue; the export task waits on [`SpanQueue::notified`].
#[derive(Debug)]
pub struct SpanQueue {
    held: Mutex<Held>,
    capacity: usize,
    /// Woken when the queue stops being empty and when a batch fills (a stored permit when
    /// the task is busy, so no wake-up is lost).
    notify: Notify,
}

impl SpanQueue {
    /// A queue of at most `capacity` spans, its batches shaped like `template`.
    pub fn new(capacity: usize, template: Batch) -> Self {
        SpanQueue {
            held: Mutex::new(Held {
                full: VecDeque::new(),
                open: template,
                spans: 0,
                closed: false,
            }),
            capacity: capacity.max(1),
            notify: Notify::new(),
        }
    }

    fn held(&self) -> std::sync::MutexGuard<'_, Held> {
        // Encoding cannot leave a batch half-consistent in a way that matters more than a
        // lost span: a poisoned lock is used as is rather than stopping all tracing.
        self.held.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Encodes `hop`'s spans into the open batch, or says why not.
    pub fn push(&self, hop: &KeptHop<'_>) -> Result<(), Refused> {
        let n = hop.len();
        let mut h = self.held();
        if h.closed {
            return Err(Refused::Closed);
        }
        if h.spans + n > self.capacity {
            return Err(Refused::Full);
        }
        let was_empty = h.spans == 0;
        for span in hop.spans() {
            h.open.push(&span);
        }
        h.spans += n;
        let filled = h.open.len() >= BATCH;
        if filled {
            let next = h.open.empty_like();
            let done = std::mem::replace(&mut h.open, next);
            h.full.push_back(done);
        }
        drop(h);
        if was_empty || filled {
            self.notify.notify_one();
        }
        Ok(())
    }

    /// Resolves when spans may have arrived or a batch filled.
    pub async fn notified(&self) {
        self.notify.notified().await;
    }

    /// The oldest full batch.
    pub fn take_full(&self) -> Option<Batch> {
        let mut h = self.held();
        let b = h.full.pop_front()?;
        h.spans -= b.len();
        Some(b)
    }

    /// The open batch, when it holds any span.
    pub fn take_open(&self) -> Option<Batch> {
        let mut h = self.held();
        if h.open.is_empty() {
            return None;
        }
        let next = h.open.empty_like();
        let b = std::mem::replace(&mut h.open, next);
        h.spans -= b.len();
        Some(b)
    }

    /// Whether the open batch is empty (full ones aside).
    pub fn open_is_empty(&self) -> bool {
        self.held().open.is_empty()
    }

    /// Refuses spans from now on (what is held can still be taken).
    pub fn close(&self) {
        self.held().closed = true;
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Instant;

    use ferry_filters::trace_context::{
        HopStart, HopTrace, Propagation, SpanSink, TailRules, new_trace_id,
    };
    use opentelemetry_sdk::Resource;

    use super::*;

    /// Queues each hop, keeping what the queue answered.
    #[derive(Debug)]
    struct Sink(Arc<SpanQueue>, Mutex<Vec<Result<(), Refused>>>);

    impl SpanSink for Sink {
        fn export(&self, hop: &KeptHop<'_>) {
            let r = self.0.push(hop);
            self.1.lock().unwrap_or_else(|p| p.into_inner()).push(r);
        }
    }

    fn hops(sink: &Arc<Sink>, n: usize) {
        for _ in 0..n {
            drop(HopTrace::new(
                HopStart {
                    trace_id: new_trace_id(),
                    parent: None,
                    sampled: true,
                    tracestate: None,
                    start: Instant::now(),
                },
                "GET",
                Arc::from([Propagation::W3c]),
                TailRules::default(),
                sink.clone(),
            ));
        }
    }

    fn answers(sink: &Sink) -> Vec<Result<(), Refused>> {
        std::mem::take(&mut *sink.1.lock().unwrap_or_else(|p| p.into_inner()))
    }

    #[test]
    fn batches_close_at_the_batch_size_and_the_bound_counts_every_batch_held() {
        let queue = Arc::new(SpanQueue::new(
            BATCH + 10,
            Batch::new(&Resource::builder_empty().build()),
        ));
        let sink = Arc::new(Sink(queue.clone(), Mutex::new(Vec::new())));
        hops(&sink, BATCH + 10);
        assert!(answers(&sink).iter().all(Result::is_ok));
        hops(&sink, 1);
        assert_eq!(
            answers(&sink),
            vec![Err(Refused::Full)],
            "the bound is in spans"
        );
        let full = queue.take_full().map(|b| b.len());
        assert_eq!(full, Some(BATCH));
        assert!(queue.take_full().is_none());
        assert!(!queue.open_is_empty());
        // Taking a batch makes room again.
        hops(&sink, 1);
        assert_eq!(answers(&sink), vec![Ok(())]);
        assert_eq!(queue.take_open().map(|b| b.len()), Some(11));
        assert!(queue.take_open().is_none());
        queue.close();
        hops(&sink, 1);
        assert_eq!(answers(&sink), vec![Err(Refused::Closed)]);
    }
}
