//! The route's concurrency layer: its slots kept in [`LimitStates`] across reloads, its queue
//! waits observed into metrics and `/stats`.

use std::sync::Arc;

use ferry_config::{Concurrency as ConcurrencyConfig, Route};
use ferry_filters::limits::{ConcurrencyLayer, ConcurrencySettings, ConcurrencyState};

use super::LimitStates;
use crate::metrics::{Metrics, Name, RouteLabels};

/// The route's concurrency layer, its slots taken from (or added to) `states`.
pub fn concurrency_layer(
    listener: &str,
    r: &Route,
    states: &LimitStates,
    metrics: &Metrics,
    stats: Arc<crate::stats::Cell>,
) -> Option<ConcurrencyLayer> {
    let c: &ConcurrencyConfig = r.concurrency.as_ref()?;
    let settings = ConcurrencySettings {
        max: c.max,
        queue: c.queue,
        queue_timeout: c.queue_timeout,
        route_timeout: r.timeout,
        adaptive: c.adaptive,
    };
    let definition = format!("{settings:?}");
    let state = states.slots((listener.to_owned(), r.name.clone()), definition, || {
        ConcurrencyState::new(settings.clone())
    });
    let waited = metrics
        .concurrency_queue_seconds
        .get_or_create(&RouteLabels {
            listener: Name(listener.into()),
            route: Name(r.name.as_str().into()),
        })
        .clone();
    Some(
        ConcurrencyLayer::new(state).on_queued(Arc::new(move |_, d, _| {
            waited.observe(d.as_secs_f64());
            stats.queued();
        })),
    )
}
