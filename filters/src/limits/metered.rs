//! The answer of a route with token budgets: every frame passes at once, its tail is kept,
//! and the budgets are charged (and the usage reported) when it ends or is dropped.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use opentelemetry::KeyValue;

use super::rate::{TokenSettings, UsageReport};
use super::usage::Tail;
use super::window::WindowStore;
use crate::trace_context::HopTrace;
use crate::translate::{BoxError, TranslateBody};

/// Charged when the answer ends.
pub(super) struct Charging {
    pub(super) store: Arc<dyn WindowStore>,
    pub(super) key: String,
    pub(super) per: Duration,
    pub(super) settings: TokenSettings,
}

pin_project_lite::pin_project! {
    /// An answer on a route with token budgets: passes every frame through at once, keeps
    /// its tail, and charges the budgets when it ends (or is dropped: a caller hanging up
    /// mid-stream still pays for what the model produced, or the fallback).
    pub(super) struct Metered {
        #[pin]
        inner: TranslateBody,
        tail: Tail,
        charging: Vec<Charging>,
        // The request's recorded hop: the usage read here goes on its span as well.
        hop: Option<Arc<HopTrace>>,
        // Where the usage read goes besides the budgets (the access record).
        report: Option<UsageReport>,
    }

    impl PinnedDrop for Metered {
        fn drop(this: Pin<&mut Self>) {
            let this = this.project();
            charge(this.tail, std::mem::take(this.charging), this.hop.take(), this.report.take());
        }
    }
}

impl Metered {
    pub(super) fn new(
        inner: TranslateBody,
        charging: Vec<Charging>,
        hop: Option<Arc<HopTrace>>,
        report: Option<UsageReport>,
    ) -> Self {
        Metered {
            inner,
            tail: Tail::default(),
            charging,
            hop,
            report,
        }
    }
}

fn charge(
    tail: &Tail,
    charging: Vec<Charging>,
    hop: Option<Arc<HopTrace>>,
    report: Option<UsageReport>,
) {
    if charging.is_empty() {
        return;
    }
    let usage = tail.usage();
    if let (Some(report), Some(u)) = (report, usage) {
        report(u);
    }
    if let (Some(hop), Some(u)) = (hop, usage) {
        // OpenTelemetry's GenAI conventions; read anyway for the budget, so free here.
        hop.add_attributes([
            KeyValue::new(
                "gen_ai.usage.input_tokens",
                i64::try_from(u.prompt).unwrap_or(i64::MAX),
            ),
            KeyValue::new(
                "gen_ai.usage.output_tokens",
                i64::try_from(u.completion).unwrap_or(i64::MAX),
            ),
        ]);
    }
    for c in charging {
        let tokens = usage.map_or(c.settings.fallback, |u| u.charged(c.settings.charge));
        if tokens == 0 {
            continue;
        }
        // The answer is done; charging must not hold up the caller, so it runs on its own.
        let add = c.store.add(&c.key, c.per, tokens);
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => {
                handle.spawn(async move {
                    if let Err(error) = add.await {
                        tracing::debug!(%error, "charging a token budget failed");
                    }
                });
            }
            Err(_) => tracing::debug!("no runtime to charge a token budget on"),
        }
    }
}

impl Body for Metered {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = self.project();
        let frame = std::task::ready!(this.inner.poll_frame(cx));
        match &frame {
            Some(Ok(f)) => {
                if let Some(data) = f.data_ref() {
                    this.tail.push(data);
                }
            }
            Some(Err(_)) | None => charge(
                this.tail,
                std::mem::take(this.charging),
                this.hop.take(),
                this.report.take(),
            ),
        }
        Poll::Ready(frame)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
