//! What ends a downstream connection besides the connection itself: the listener's drain,
//! `idle_timeout` (graceful: HTTP/1.1 closes between requests, HTTP/2 sends GOAWAY), and two
//! limits that drop the connection at once because the peer is not talking or not reading:
//! `request_headers_timeout` with no request head yet, and `stalled_write_timeout`. Each close
//! is counted per listener.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use ferry_config::ListenerLimits;
use tokio::sync::watch;

use super::woken::woken_only;
use super::{Activity, Stall};
use crate::body::BoxError;
use crate::metrics::ListenerLabels;
use crate::shared::Shared;

/// What may end a connection besides the connection itself.
pub(super) struct Watch<'a> {
    pub(super) limits: Option<ListenerLimits>,
    pub(super) activity: Arc<Activity>,
    pub(super) stall: Arc<Stall>,
    pub(super) draining: Option<watch::Receiver<bool>>,
    pub(super) shared: &'a Shared,
    pub(super) labels: &'a ListenerLabels,
}

/// Why the watch stopped waiting for the connection to end by itself.
enum Stop {
    /// Drain or idle: finish gracefully.
    Graceful,
    /// The peer is not talking or not reading: drop the connection now.
    Now,
}

impl Watch<'_> {
    /// Drives `conn` to its end; `None` when a limit dropped it unfinished.
    pub(super) async fn run<C, G>(
        mut self,
        conn: C,
        graceful: G,
        peer: SocketAddr,
    ) -> Option<Result<(), BoxError>>
    where
        C: Future<Output = Result<(), BoxError>>,
        G: FnOnce(Pin<&mut C>),
    {
        let stall = self.stall.clone();
        let stalled_after = self.limits.as_ref().and_then(|l| l.stalled_write_timeout);
        let mut stalled = std::pin::pin!(limit(stalled_after, |d| stall.stalled_for(d)));
        let mut conn = std::pin::pin!(conn);
        let stop = tokio::select! {
            // The connection is what wakes this task almost every time: poll it first rather
            // than in random order (which also costs a random number per wake-up).
            biased;
            ended = conn.as_mut() => {
                if let Err(e) = &ended
                    && e.downcast_ref::<hyper::Error>().is_some_and(hyper::Error::is_timeout)
                {
                    // hyper's own HTTP/1.1 request-head timeout.
                    self.count(Close::HeaderTimeout, peer);
                }
                return Some(ended);
            }
            // The limits are polled only when one of their timers or the drain woke the task,
            // not on each of the connection's own wake-ups (see `woken`).
            hit = woken_only(async {
                tokio::select! {
                    biased;
                    stop = self.limits_hit(peer) => Some(stop),
                    () = stalled.as_mut() => None,
                }
            }) => match hit {
                Some(stop) => stop,
                None => {
                    self.count(Close::Stalled, peer);
                    Stop::Now
                }
            },
        };
        if let Stop::Now = stop {
            return None;
        }
        // HTTP/1.1: close after the current response; HTTP/2: GOAWAY, then close once the
        // open streams are done, unless the peer has stopped reading.
        graceful(conn.as_mut());
        tokio::select! {
            biased;
            ended = conn.as_mut() => Some(ended),
            () = stalled => {
                self.count(Close::Stalled, peer);
                None
            }
        }
    }

    /// Resolves when draining starts or the idle or request-head timeout passes.
    async fn limits_hit(&mut self, peer: SocketAddr) -> Stop {
        let limits = self.limits.as_ref();
        let activity = &self.activity;
        let idle = limit(limits.and_then(|l| l.idle_timeout), |d| {
            activity.idle_for(d)
        });
        let head = limits.and_then(|l| l.request_headers_timeout);
        let silent = limit(head, |d| activity.no_request_within(d));
        // The receiver lives until the connection is done: the listener's drain waits for
        // every receiver to be dropped.
        let drain = async {
            match self.draining.as_mut() {
                Some(d) => drop(d.wait_for(|d| *d).await),
                None => std::future::pending().await,
            }
        };
        let (stop, close) = tokio::select! {
            () = drain => return Stop::Graceful,
            () = idle => (Stop::Graceful, Close::Idle),
            () = silent => (Stop::Now, Close::HeaderTimeout),
        };
        self.count(close, peer);
        stop
    }

    fn count(&self, close: Close, peer: SocketAddr) {
        let metrics = &self.shared.metrics;
        let (family, why) = match close {
            Close::Idle => (&metrics.idle_closes, "idle_timeout"),
            Close::HeaderTimeout => (&metrics.header_timeout_closes, "request_headers_timeout"),
            Close::Stalled => (&metrics.stalled_closes, "stalled_write_timeout"),
        };
        family.get_or_create(self.labels).inc();
        tracing::debug!(%peer, limit = why, "closing connection");
    }
}

/// Which limit closed a connection.
#[derive(Debug, Clone, Copy)]
enum Close {
    Idle,
    HeaderTimeout,
    Stalled,
}

/// Waits for `f(d)`, or for ever when the limit is off (`None`).
async fn limit<F>(d: Option<Duration>, f: impl FnOnce(Duration) -> F)
where
    F: Future<Output = ()>,
{
    match d {
        Some(d) => f(d).await,
        None => std::future::pending().await,
    }
}
