//! The 1 Hz sampler and its ring of per-second deltas.
//!
//! Each second the sampler reads every route's and endpoint's [`Cell`], subtracts what it
//! read the second before, derives the model rows (the sum of their routes) and the cluster
//! rows (the sum of their endpoints), and pushes the deltas of the rows that changed. The ring
//! keeps [`SECONDS`] of them, so memory is bounded by `SECONDS × rows that changed in a
//! second (at most MAX_ROWS) × size_of::<Delta>()` (184 bytes): 300 × 256 × 184 B ≈ 14 MB at
//! worst, 300 × 20 × 184 B ≈ 1.1 MB for a sidecar with 20 busy rows.

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::sync::watch;

use super::{BUCKETS, Cell, Counts};
use crate::shared::Shared;
use crate::table::Table;

/// Seconds of history kept: the longest window.
pub const SECONDS: usize = 300;

/// Rows kept per second; beyond it (thousands of discovered endpoints) the rest are dropped
/// from that second, to keep the bound.
const MAX_ROWS: usize = 256;

/// What a row is grouped by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum By {
    /// Listener and route.
    Route,
    /// The route's configured model (its exact `match.model`), as the `model` metric label.
    Model,
    /// Cluster of the last attempt.
    Cluster,
    /// Endpoint of the last attempt.
    Endpoint,
}

/// A row's identity.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum RowKey {
    /// A route of a listener, with its configured model.
    Route {
        /// Listener name.
        listener: Arc<str>,
        /// Route name.
        route: Arc<str>,
    },
    /// A configured model (`""`: routes that match none).
    Model(Arc<str>),
    /// A cluster.
    Cluster(Arc<str>),
    /// An endpoint of a cluster.
    Endpoint {
        /// Cluster name.
        cluster: Arc<str>,
        /// Address.
        endpoint: SocketAddr,
    },
}

/// One second's additions to one row, compact (u32 is ample for a second).
#[derive(Debug, Clone)]
pub(super) struct Delta {
    pub(super) buckets: [u32; BUCKETS],
    pub(super) failures: u32,
    pub(super) retries: u32,
    pub(super) limited: u32,
    pub(super) queued: u32,
}

/// The deltas of the second ending at `unix`.
#[derive(Debug)]
pub(super) struct Second {
    pub(super) unix: u64,
    pub(super) rows: Vec<(RowKey, Delta)>,
}

/// A row as the last sample saw it.
#[derive(Debug, Clone)]
pub(super) struct RowNow {
    pub(super) key: RowKey,
    /// The route's model, for route rows.
    pub(super) model: Option<Arc<str>>,
    pub(super) in_flight: u64,
}

/// The ring and the sampler's memory of the previous second.
#[derive(Debug, Default)]
pub struct Windows {
    inner: Mutex<Ring>,
}

#[derive(Debug, Default)]
pub(super) struct Ring {
    pub(super) seconds: VecDeque<Second>,
    /// Cumulative counts of route and endpoint rows at the last sample.
    last: HashMap<RowKey, Counts>,
    /// Every row of the current table, in table order.
    pub(super) now: Vec<RowNow>,
}

// === impl RowKey ===

impl RowKey {
    /// The grouping this row belongs to.
    pub fn by(&self) -> By {
        match self {
            RowKey::Route { .. } => By::Route,
            RowKey::Model(_) => By::Model,
            RowKey::Cluster(_) => By::Cluster,
            RowKey::Endpoint { .. } => By::Endpoint,
        }
    }
}

// === impl Delta ===

impl Delta {
    fn of(c: &Counts) -> Self {
        let small = |n: u64| u32::try_from(n).unwrap_or(u32::MAX);
        let mut d = Delta {
            buckets: [0; BUCKETS],
            failures: small(c.failures),
            retries: small(c.retries),
            limited: small(c.limited),
            queued: small(c.queued),
        };
        for (out, n) in d.buckets.iter_mut().zip(&c.buckets) {
            *out = small(*n);
        }
        d
    }

    /// Adds this delta to `c`.
    pub(super) fn add_to(&self, c: &mut Counts) {
        for (a, b) in c.buckets.iter_mut().zip(&self.buckets) {
            *a += u64::from(*b);
        }
        c.failures += u64::from(self.failures);
        c.retries += u64::from(self.retries);
        c.limited += u64::from(self.limited);
        c.queued += u64::from(self.queued);
    }
}

// === impl Windows ===

impl Windows {
    /// Reads every cell of `table` and pushes the second that ended at `at`.
    pub fn sample(&self, table: &Table, at: SystemTime) {
        let unix = at.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
        let mut rows: Vec<(RowNow, Arc<Cell>)> = Vec::new();
        let mut listeners: Vec<_> = table.listeners.values().collect();
        listeners.sort_by(|a, b| a.name.cmp(&b.name));
        for l in listeners {
            for r in l.routes.router.iter() {
                let key = RowKey::Route {
                    listener: l.name.clone(),
                    route: r.name.clone(),
                };
                let now = RowNow {
                    key,
                    model: Some(r.model_label.clone()),
                    in_flight: r.state.stats.in_flight(),
                };
                rows.push((now, r.state.stats.clone()));
            }
        }
        let mut clusters: Vec<_> = table.clusters.values().collect();
        clusters.sort_by(|a, b| a.name.cmp(&b.name));
        for c in clusters {
            for e in c.endpoints().iter() {
                let key = RowKey::Endpoint {
                    cluster: c.name.clone(),
                    endpoint: e.addr,
                };
                let now = RowNow {
                    key,
                    model: None,
                    in_flight: e.in_flight() as u64,
                };
                rows.push((now, e.stats.clone()));
            }
        }
        let Ok(mut ring) = self.inner.lock() else {
            return;
        };
        ring.push(unix, rows);
    }

    /// Runs `f` over the ring.
    pub(super) fn read<T>(&self, f: impl FnOnce(&Ring) -> T) -> Option<T> {
        self.inner.lock().ok().map(|ring| f(&ring))
    }
}

// === impl Ring ===

impl Ring {
    fn push(&mut self, unix: u64, rows: Vec<(RowNow, Arc<Cell>)>) {
        let mut last = HashMap::with_capacity(rows.len());
        let mut deltas: Vec<(RowKey, Counts)> = Vec::new();
        let mut derived: Vec<(RowKey, Counts)> = Vec::new();
        let mut now = Vec::with_capacity(rows.len());
        let mut derived_now: Vec<RowNow> = Vec::new();
        for (row, cell) in rows {
            let counts = cell.read();
            let delta = match self.last.get(&row.key) {
                Some(before) => counts.since(before),
                // A row first seen: its past is not this second's.
                None => Counts::default(),
            };
            let parent = match (&row.key, &row.model) {
                (RowKey::Route { .. }, Some(m)) => RowKey::Model(m.clone()),
                (RowKey::Endpoint { cluster, .. }, _) => RowKey::Cluster(cluster.clone()),
                _ => row.key.clone(),
            };
            match derived_now.iter_mut().find(|p| p.key == parent) {
                Some(p) => p.in_flight += row.in_flight,
                None => derived_now.push(RowNow {
                    key: parent.clone(),
                    model: None,
                    in_flight: row.in_flight,
                }),
            }
            match derived.iter_mut().find(|(k, _)| *k == parent) {
                Some((_, c)) => c.add(&delta),
                None => derived.push((parent, delta.clone())),
            }
            deltas.push((row.key.clone(), delta));
            last.insert(row.key.clone(), counts);
            now.push(row);
        }
        self.last = last;
        now.extend(derived_now);
        self.now = now;
        let rows = deltas
            .into_iter()
            .chain(derived)
            .filter(|(_, c)| !c.is_zero())
            .take(MAX_ROWS)
            .map(|(k, c)| (k, Delta::of(&c)))
            .collect();
        if self.seconds.len() == SECONDS {
            self.seconds.pop_front();
        }
        self.seconds.push_back(Second { unix, rows });
    }
}

/// Samples `shared`'s cells every second until `stop` turns true.
pub async fn run_sampler(shared: Arc<Shared>, mut stop: watch::Receiver<bool>) {
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = stop.wait_for(|s| *s) => return,
            _ = tick.tick() => {}
        }
        shared
            .windows
            .sample(&shared.table.load(), SystemTime::now());
    }
}
