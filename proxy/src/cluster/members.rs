//! A cluster's current endpoints and, for consistent hashing, their ring: a DNS change
//! replaces both, the ring first, so a pick never sees a ring without its endpoints.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use arc_swap::{ArcSwap, Guard};

use super::Endpoint;
use super::ring::Ring;

/// The endpoints of one cluster.
#[derive(Debug)]
pub(super) struct Members {
    list: ArcSwap<Vec<Arc<Endpoint>>>,
    /// `lb: hash` only.
    ring: Option<ArcSwap<Ring>>,
    /// Requests in flight to the cluster (`lb: hash` only: its load bound needs the total).
    in_flight: Option<Arc<AtomicUsize>>,
}

// === impl Members ===

impl Members {
    /// No endpoints yet; `hashed` clusters keep a ring and an in-flight total.
    pub(super) fn new(hashed: bool) -> Self {
        Members {
            list: ArcSwap::from_pointee(Vec::new()),
            ring: hashed.then(|| ArcSwap::from_pointee(Ring::default())),
            in_flight: hashed.then(|| Arc::new(AtomicUsize::new(0))),
        }
    }

    /// A new endpoint of this cluster (`joining` a running cluster: slow start ramps it).
    pub(super) fn endpoint(&self, addr: std::net::SocketAddr, joining: bool) -> Endpoint {
        let e = if joining {
            Endpoint::joining(addr)
        } else {
            Endpoint::new(addr)
        };
        e.counted_in(self.in_flight.clone())
    }

    /// Replaces the endpoints (and rebuilds the ring).
    pub(super) fn store(&self, list: Vec<Arc<Endpoint>>) {
        if let Some(ring) = &self.ring {
            ring.store(Arc::new(Ring::new(&list)));
        }
        self.list.store(Arc::new(list));
    }

    pub(super) fn load(&self) -> Guard<Arc<Vec<Arc<Endpoint>>>> {
        self.list.load()
    }

    pub(super) fn load_full(&self) -> Arc<Vec<Arc<Endpoint>>> {
        self.list.load_full()
    }

    pub(super) fn ring(&self) -> Option<Guard<Arc<Ring>>> {
        self.ring.as_ref().map(ArcSwap::load)
    }

    /// Requests in flight to the cluster (0 when not counted).
    pub(super) fn in_flight(&self) -> usize {
        self.in_flight
            .as_ref()
            .map_or(0, |n| n.load(Ordering::Relaxed))
    }
}
