//! An upstream that holds every request until the test lets it through, and counts how many it
//! holds at once. Concurrency tests use it to see the proxy's in-flight cap from the far side:
//! the peak is the upstream's own count, not the proxy's claim.
//!
//! Each request (headers and body read) waits for one pass from [`Gate::release`] or, after
//! [`Gate::open`], none; then it answers `200 {"path": ...}`.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use http::StatusCode;
use http_body_util::BodyExt as _;
use tokio::sync::Semaphore;

use super::{Protocols, ServerHandle, json, serve::serve};

/// More passes than any test sends requests: [`Gate::open`] adds this many.
const OPEN: usize = 1 << 20;

/// A running gate upstream.
#[derive(Debug)]
pub struct Gate {
    counts: Arc<Counts>,
    passes: Arc<Semaphore>,
    server: ServerHandle,
}

#[derive(Debug, Default)]
struct Counts {
    /// Requests whose handler has started.
    arrived: AtomicU64,
    /// Requests inside the handler now (waiting for a pass or answering).
    in_flight: AtomicU64,
    /// The most `in_flight` has ever been.
    peak: AtomicU64,
    /// Requests answered.
    answered: AtomicU64,
}

/// Decrements `in_flight` when the handler ends, however it ends (a dropped connection too).
struct InFlight(Arc<Counts>);

// === impl Gate ===

impl Gate {
    /// Starts a closed gate (every request waits).
    pub async fn start() -> anyhow::Result<Gate> {
        let counts = Arc::new(Counts::default());
        let passes = Arc::new(Semaphore::new(0));
        let (c, p) = (counts.clone(), passes.clone());
        let server = serve(
            Protocols::Auto,
            move |req: http::Request<hyper::body::Incoming>| {
                let (counts, passes) = (c.clone(), p.clone());
                async move {
                    counts.arrived.fetch_add(1, Ordering::SeqCst);
                    let now = counts.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
                    counts.peak.fetch_max(now, Ordering::SeqCst);
                    let _guard = InFlight(counts.clone());
                    let path = req.uri().path().to_owned();
                    let _ = req.into_body().collect().await;
                    // The semaphore is never closed, so acquire only fails if it were.
                    if let Ok(pass) = passes.acquire().await {
                        pass.forget();
                    }
                    counts.answered.fetch_add(1, Ordering::SeqCst);
                    json(StatusCode::OK, &serde_json::json!({ "path": path }))
                }
            },
        )
        .await?;
        Ok(Gate {
            counts,
            passes,
            server,
        })
    }

    /// The bound address.
    pub fn addr(&self) -> std::net::SocketAddr {
        self.server.addr()
    }

    /// Lets `n` waiting (or future) requests through.
    pub fn release(&self, n: usize) {
        self.passes.add_permits(n);
    }

    /// Lets every request through from now on.
    pub fn open(&self) {
        self.passes.add_permits(OPEN);
    }

    /// Requests that reached the upstream so far.
    pub fn arrived(&self) -> u64 {
        self.counts.arrived.load(Ordering::SeqCst)
    }

    /// Requests held or being answered now.
    pub fn in_flight(&self) -> u64 {
        self.counts.in_flight.load(Ordering::SeqCst)
    }

    /// The most requests the upstream ever held at once.
    pub fn peak(&self) -> u64 {
        self.counts.peak.load(Ordering::SeqCst)
    }

    /// Requests answered so far.
    pub fn answered(&self) -> u64 {
        self.counts.answered.load(Ordering::SeqCst)
    }
}

// === impl InFlight ===

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}
