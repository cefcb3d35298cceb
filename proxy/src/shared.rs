//! Process-wide state shared by listeners, the admin endpoint and reload.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::access_log::AccessLogs;
use crate::limits::LimitStates;
use crate::metrics::Metrics;
use crate::state::RouteStates;
use crate::table::Table;
use crate::tap::Taps;
use crate::tls::IdentityStore;
use crate::traces::Traces;
use arc_swap::ArcSwap;

/// Shared state.
#[derive(Debug)]
pub struct Shared {
    /// The live routing table; readers take a snapshot per request.
    pub table: ArcSwap<Table>,
    /// Metrics.
    pub metrics: Arc<Metrics>,
    /// Per-route state, kept across reloads that leave a route's definition alone.
    pub routes: RouteStates,
    /// Set when SIGTERM starts draining: `/ready` answers 503.
    draining: AtomicBool,
    /// The access-log writers (kept across reloads) and `ferry demo`'s record channel.
    pub access_logs: Arc<AccessLogs>,
    /// The workload identity new TLS handshakes use.
    pub identity: Arc<IdentityStore>,
    /// Rate-limit buckets and concurrency slots, kept across reloads.
    pub limits: Arc<LimitStates>,
    /// The span exporter, kept across reloads that leave the `tracing` block alone.
    pub traces: Arc<Traces>,
    /// The live taps of the admin `/tap` endpoint.
    pub taps: Arc<Taps>,
    /// The last five minutes of `/stats`, second by second (the admin task samples it).
    pub windows: crate::stats::Windows,
}

// === impl Shared ===

impl Shared {
    /// New state serving `table`.
    #[allow(clippy::too_many_arguments, reason = "each is one process-wide piece")]
    pub fn new(
        table: Table,
        metrics: Arc<Metrics>,
        routes: RouteStates,
        access_logs: Arc<AccessLogs>,
        identity: Arc<IdentityStore>,
        limits: Arc<LimitStates>,
        traces: Arc<Traces>,
        taps: Arc<Taps>,
    ) -> Arc<Self> {
        Arc::new(Self {
            table: ArcSwap::from_pointee(table),
            metrics,
            routes,
            draining: AtomicBool::new(false),
            identity,
            limits,
            traces,
            access_logs,
            taps,
            windows: crate::stats::Windows::default(),
        })
    }

    /// Marks the process as draining.
    pub fn start_draining(&self) {
        self.draining.store(true, Ordering::SeqCst);
    }

    /// Whether the process is draining.
    pub fn is_draining(&self) -> bool {
        self.draining.load(Ordering::SeqCst)
    }
}
