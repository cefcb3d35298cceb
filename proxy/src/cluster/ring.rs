//! Consistent hashing with bounded load: a ring of points, several per endpoint, and a key's
//! endpoint is the owner of the first point at or after the key's hash.
//!
//! Why a ring and not Maglev: a ring moves only the keys of the arcs an added or removed
//! endpoint takes or gives up (about 1/N), where a Maglev table also reshuffles some slots
//! between the endpoints that stayed; and the bounded-load rule (Mirrokni, Thorup and
//! Zadimoghaddam, "Consistent Hashing with Bounded Loads") is defined on the ring: a full
//! endpoint passes the request on to the next endpoint clockwise, so a hot key spills over to
//! the same few neighbours, not to random ones. The price is a binary search per pick instead
//! of one table lookup, made short by an index on the hashes' top bits (see
//! bench/results/2026-12-05-hash-lb for the figures).
//!
//! Points are `xxh3(ip:port "#" i)`, so every ferry with the same endpoints builds the same
//! ring and sends a key to the same replica.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use super::Endpoint;

/// Points per endpoint. More points spread keys more evenly (the spread of an endpoint's share
/// shrinks with the square root of its points) and cost memory and a search step per
/// doubling; 160, as ketama, keeps the busiest of ten endpoints within about 15 % of the mean
/// (`ring::tests`).
pub const POINTS_PER_ENDPOINT: usize = 160;

/// A hash ring over one set of endpoints (rebuilt when the set changes).
#[derive(Debug, Default)]
pub struct Ring {
    /// Point hashes, ascending.
    hashes: Vec<u64>,
    /// The endpoint (index into `members`) owning each point.
    owners: Vec<u32>,
    /// `index[b]` is the first point whose hash's top bits are `b` or more (one more entry
    /// than buckets): a lookup searches one bucket of about two points instead of the whole
    /// ring, whose 16 dependent steps at 256 endpoints miss the cache.
    index: Vec<u32>,
    /// `64 - log2(buckets)`.
    shift: u32,
    members: Vec<Arc<Endpoint>>,
}

/// What a pick must respect besides the key.
#[derive(Debug, Clone, Copy)]
pub struct Bounds {
    /// `bounded_load`; `None` = unbounded.
    pub factor: Option<f64>,
    /// Requests in flight to the cluster (all endpoints), before this one.
    pub in_flight: usize,
    /// Skip this endpoint if another is usable (the one a retry avoids).
    pub avoid: Option<SocketAddr>,
    /// Whether ejections apply (the cluster has outlier detection).
    pub ejections: bool,
}

// === impl Ring ===

impl Ring {
    /// The ring of `members`.
    pub fn new(members: &[Arc<Endpoint>]) -> Self {
        let mut points: Vec<(u64, u32)> = Vec::with_capacity(members.len() * POINTS_PER_ENDPOINT);
        for (owner, e) in members.iter().enumerate() {
            let Ok(owner) = u32::try_from(owner) else {
                break;
            };
            let name = e.addr.to_string();
            for i in 0..POINTS_PER_ENDPOINT {
                points.push((point_hash(&name, i), owner));
            }
        }
        // Ties (vanishingly rare) broken by owner, so every ferry orders them alike.
        points.sort_unstable();
        let hashes: Vec<u64> = points.iter().map(|p| p.0).collect();
        // About two points per bucket.
        let bits = (usize::BITS - (hashes.len() / 2).max(1).leading_zeros()).clamp(1, 24);
        let shift = 64 - bits;
        let mut index = Vec::with_capacity((1 << bits) + 1);
        let mut at = 0usize;
        for bucket in 0..(1u64 << bits) {
            while hashes.get(at).is_some_and(|&h| (h >> shift) < bucket) {
                at += 1;
            }
            index.push(u32::try_from(at).unwrap_or(u32::MAX));
        }
        index.push(u32::try_from(hashes.len()).unwrap_or(u32::MAX));
        Ring {
            owners: points.iter().map(|p| p.1).collect(),
            hashes,
            index,
            shift,
            members: members.to_vec(),
        }
    }

    /// The endpoints on the ring.
    pub fn members(&self) -> &[Arc<Endpoint>] {
        &self.members
    }

    /// The index of the first point at or after `key` (wrapping).
    fn locate(&self, key: u64) -> usize {
        let bucket = (key >> self.shift) as usize;
        let (Some(&lo), Some(&hi)) = (self.index.get(bucket), self.index.get(bucket + 1)) else {
            return 0;
        };
        let (lo, hi) = (lo as usize, hi as usize);
        let i = lo
            + self
                .hashes
                .get(lo..hi)
                .map_or(0, |b| b.partition_point(|&h| h < key));
        if i >= self.hashes.len() { 0 } else { i }
    }

    /// The endpoint for `key`: the owner of its point when usable and under the bound, else
    /// the next such endpoint clockwise. `None` when no endpoint is usable (the caller's panic
    /// mode takes over).
    /// `now` is read only for an endpoint that was ever ejected (a clock read costs about as
    /// much as the rest of a pick).
    pub fn pick(&self, key: u64, b: Bounds, now: impl Fn() -> Instant) -> Option<&Arc<Endpoint>> {
        let start = self.locate(key);
        let first = self.owner(start)?;
        let usable = |e: &Endpoint| {
            Some(e.addr) != b.avoid && !(b.ejections && e.was_ever_ejected() && e.is_ejected(now()))
        };
        // The common case, O(1): the key's own endpoint is usable and under the bound. The
        // bound here counts every endpoint, so it is never looser than the exact one below
        // (ejected endpoints carry little in flight, and counting them lowers the mean).
        let n = self.members.len();
        if usable(first)
            && b.factor
                .is_none_or(|f| first.in_flight() < cap(f, b.in_flight, n))
        {
            return Some(first);
        }
        // The exact bound over the usable endpoints, then the walk clockwise.
        let (load, count) = self
            .members
            .iter()
            .filter(|e| usable(e))
            .fold((0usize, 0usize), |(l, c), e| (l + e.in_flight(), c + 1));
        if count == 0 {
            return None;
        }
        let cap = b.factor.map(|f| cap(f, load, count));
        let mut seen = vec![false; n];
        let mut left = n;
        let mut least: Option<&Arc<Endpoint>> = None;
        for k in 0..self.hashes.len() {
            let at = (start + k) % self.hashes.len();
            let Some(&owner) = self.owners.get(at) else {
                break;
            };
            let Some(slot) = seen.get_mut(owner as usize) else {
                break;
            };
            if std::mem::replace(slot, true) {
                continue;
            }
            let e = self.members.get(owner as usize)?;
            if usable(e) {
                if cap.is_none_or(|c| e.in_flight() < c) {
                    return Some(e);
                }
                if least.is_none_or(|l| e.in_flight() < l.in_flight()) {
                    least = Some(e);
                }
            }
            left -= 1;
            if left == 0 {
                break;
            }
        }
        // Every usable endpoint is at the bound (counts moved under us): the least loaded.
        least
    }

    fn owner(&self, point: usize) -> Option<&Arc<Endpoint>> {
        let owner = *self.owners.get(point)?;
        self.members.get(owner as usize)
    }
}

/// The bound: an endpoint may take a request while its in-flight count is below
/// `ceil(factor × (in_flight + 1) / endpoints)`, the mean counting this request.
fn cap(factor: f64, in_flight: usize, endpoints: usize) -> usize {
    (factor * (in_flight + 1) as f64 / endpoints.max(1) as f64).ceil() as usize
}

/// A ring point's hash.
fn point_hash(name: &str, i: usize) -> u64 {
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    h.update(name.as_bytes());
    h.update(b"#");
    h.update(i.to_string().as_bytes());
    h.digest()
}

#[cfg(test)]
mod tests;
