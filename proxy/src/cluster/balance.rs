//! Endpoint selection: round robin or power of two choices over peak-EWMA cost, skipping
//! ejected endpoints. When every endpoint is ejected, all are used again (Envoy's "panic
//! mode"): better a possibly-bad endpoint than a certain 503.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use ferry_config::{LbPolicy, OutlierDetection, SlowStart};
use rand::Rng;

use super::Endpoint;

/// Two costs closer than this fraction of the larger count as equal and the pick between
/// them is random: latency jitter between identical replicas is noise, and letting it
/// decide sends runs of requests to whichever replica was last lucky.
const TIE: f64 = 0.25;

pub(super) fn pick(
    p: &Policy<'_>,
    endpoints: &[Arc<Endpoint>],
    next: &AtomicUsize,
    avoid: Option<SocketAddr>,
) -> Option<Arc<Endpoint>> {
    pick_at(p, endpoints, next, avoid, Instant::now())
}

/// A cluster's balancing settings.
#[derive(Debug, Clone, Copy)]
pub(super) struct Policy<'a> {
    pub(super) lb: LbPolicy,
    pub(super) outlier: Option<&'a OutlierDetection>,
    pub(super) slow: Option<&'a SlowStart>,
    /// `lb.load_report.weight`, when the cluster balances on load reports.
    pub(super) load_weight: Option<f64>,
}

fn pick_at(
    p: &Policy<'_>,
    endpoints: &[Arc<Endpoint>],
    next: &AtomicUsize,
    avoid: Option<SocketAddr>,
    now: Instant,
) -> Option<Arc<Endpoint>> {
    let (policy, outlier) = (p.lb, p.outlier);
    if endpoints.is_empty() {
        return None;
    }
    let usable = |e: &Endpoint| Some(e.addr) != avoid && (outlier.is_none() || !e.is_ejected(now));
    // The common case in O(1): candidates drawn from all endpoints are usable. Only when
    // they are not (ejections, `avoid`) is the table scanned, so a pick over 256 endpoints
    // costs what a pick over 2 does.
    let fast = match policy {
        LbPolicy::RoundRobin => {
            let n = next.fetch_add(1, Ordering::Relaxed);
            let len = endpoints.len();
            match endpoints.get(n % len).filter(|e| usable(e)) {
                // A ramping endpoint passes its turn to the next with the share it lacks.
                Some(e) if skip(e.share(now, p.slow)) => {
                    endpoints.get((n + 1) % len).filter(|e| usable(e))
                }
                other => other,
            }
        }
        // `Hash` never reaches here (the cluster passes its fallback); P2C if it did.
        LbPolicy::P2cEwma | LbPolicy::Hash => p2c_over_all(p, endpoints, &usable, now),
    };
    if let Some(e) = fast {
        return Some(e.clone());
    }
    let healthy = endpoints.iter().filter(|e| usable(e)).count();
    if healthy == 0 {
        // Panic mode: ignore ejections (but still prefer not to reuse `avoid`).
        let n = next.fetch_add(1, Ordering::Relaxed);
        let fallback = endpoints
            .iter()
            .cycle()
            .skip(n % endpoints.len())
            .take(endpoints.len())
            .find(|e| Some(e.addr) != avoid)
            .or_else(|| endpoints.get(n % endpoints.len()));
        return fallback.cloned();
    }
    match policy {
        LbPolicy::RoundRobin => {
            let n = next.fetch_add(1, Ordering::Relaxed);
            nth_usable(endpoints, n % healthy, &usable)
        }
        LbPolicy::P2cEwma | LbPolicy::Hash => {
            if healthy == 1 {
                return nth_usable(endpoints, 0, &usable);
            }
            let mut rng = rand::rng();
            let a = rng.random_range(0..healthy);
            let mut b = rng.random_range(0..healthy - 1);
            if b >= a {
                b += 1;
            }
            let ea = nth_usable(endpoints, a, &usable)?;
            let eb = nth_usable(endpoints, b, &usable)?;
            Some(cheaper(p, &ea, &eb, now).clone())
        }
    }
}

/// P2C over two distinct random endpoints, when both are usable (a few draws at most).
fn p2c_over_all<'a>(
    p: &Policy<'_>,
    endpoints: &'a [Arc<Endpoint>],
    usable: &impl Fn(&Endpoint) -> bool,
    now: Instant,
) -> Option<&'a Arc<Endpoint>> {
    let n = endpoints.len();
    if n < 2 {
        return endpoints.first().filter(|e| usable(e));
    }
    let mut rng = rand::rng();
    for _ in 0..3 {
        let a = rng.random_range(0..n);
        let mut b = rng.random_range(0..n - 1);
        if b >= a {
            b += 1;
        }
        let (ea, eb) = (endpoints.get(a)?, endpoints.get(b)?);
        if usable(ea) && usable(eb) {
            return Some(cheaper(p, ea, eb, now));
        }
    }
    None
}

/// The cheaper of two endpoints, `a` (the random one of the two) on a tie: costs within
/// [`TIE`] of each other are a tie. A ramping endpoint's cost is divided by its share, so at
/// 10 % it must look ten times cheaper to be taken; with load reports it is multiplied by
/// `1 + weight × metric` (see docs/balancing.md).
fn cheaper<'a>(
    p: &Policy<'_>,
    a: &'a Arc<Endpoint>,
    b: &'a Arc<Endpoint>,
    now: Instant,
) -> &'a Arc<Endpoint> {
    let cost = |e: &Endpoint| {
        let base = e.cost(now) / e.share(now, p.slow);
        match p.load_weight {
            Some(w) => base * e.load_factor(now, w),
            None => base,
        }
    };
    let (ca, cb) = (cost(a), cost(b));
    // A probed endpoint costs infinity: never a tie.
    if ca <= cb || (ca.is_finite() && (ca - cb) <= TIE * ca) {
        a
    } else {
        b
    }
}

/// Whether a ramping endpoint at `share` passes its turn (with probability 1 − share).
fn skip(share: f64) -> bool {
    share < 1.0 && rand::rng().random::<f64>() >= share
}

fn nth_usable(
    endpoints: &[Arc<Endpoint>],
    n: usize,
    usable: &impl Fn(&Endpoint) -> bool,
) -> Option<Arc<Endpoint>> {
    endpoints.iter().filter(|e| usable(e)).nth(n).cloned()
}

/// Whether one more endpoint may be ejected without passing `max_ejection_percent`.
pub fn may_eject(endpoints: &[Arc<Endpoint>], outlier: &OutlierDetection) -> bool {
    let now = Instant::now();
    let ejected = endpoints.iter().filter(|e| e.is_ejected(now)).count();
    let total = endpoints.len().max(1);
    (ejected + 1) * 100 <= total * usize::from(outlier.max_ejection_percent)
}

#[cfg(test)]
mod tests;
