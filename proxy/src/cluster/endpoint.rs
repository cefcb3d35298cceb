//! One upstream endpoint: its load (in-flight requests, peak-EWMA latency) and outlier state.

use std::net::SocketAddr;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ferry_config::{OutlierDetection, SlowStart};

/// Decay time constant of the latency estimate. Linkerd and Finagle use 10 s; with two
/// identical replicas and ordinary jitter, one slow answer (a peak, taken at once) then keeps
/// a replica out of favour for ~10 s, which at 200 req/s is thousands of requests to its twin.
/// 2 s forgets a peak within seconds while a replica 10× slower still waits ~4.6 s between
/// probes (see `balance::tests` for the spreads this gives).
const EWMA_DECAY: Duration = Duration::from_secs(2);
/// How long without an answer before an endpoint's estimate is stale and it is probed with one
/// request at a time: the estimate has then decayed to half (EWMA_DECAY × ln 2).
const PROBE_AFTER: Duration = Duration::from_millis(1386);
/// Latency assumed for an endpoint nothing is known about yet. Not zero: a new endpoint
/// whose first answer is slow (a cold model) must not take every request until it answers;
/// the estimate decays toward zero, so it is tried within seconds even when idle.
const DEFAULT_RTT: Duration = Duration::from_millis(1);
/// Time constant over which a load report fades: an endpoint reported busy gets fewer
/// requests and so sends fewer reports, and its last "busy" must not keep it out for ever (the
/// same reason the latency estimate decays). At 2 s, as the latency estimate, a report 2 s old
/// counts 37 %; at a few requests per second to the endpoint it is refreshed long before.
const LOAD_REPORT_DECAY: Duration = Duration::from_secs(2);
/// A report older than this is ignored outright (it would count under 1 %).
const LOAD_REPORT_MAX_AGE: Duration = Duration::from_secs(10);

/// An upstream endpoint and what we have learned about it.
#[derive(Debug)]
pub struct Endpoint {
    /// Socket address.
    pub addr: SocketAddr,
    /// The endpoint's pooled connections.
    pub conns: crate::upstream::Conns,
    /// The address's IP as span attributes carry it, rendered once (a recorded attempt
    /// would otherwise format and allocate it each time).
    pub ip_text: opentelemetry::StringValue,
    in_flight: AtomicUsize,
    /// Answers whose last attempt went here, for `/stats`.
    pub stats: Arc<crate::stats::Cell>,
    consecutive_failures: AtomicU32,
    /// End of the current ejection in nanoseconds after [`epoch`] (0: never ejected). An
    /// atomic, not in `state`: every pick checks it, often for endpoints it does not take.
    ejected_until: AtomicU64,
    /// When the endpoint joined, in nanoseconds after [`epoch`]; 0 for one present when its
    /// cluster was built (slow start ramps only endpoints that join later).
    joined: u64,
    /// The metric of the endpoint's last load report (`f64` bits), and when it came in
    /// nanoseconds after [`epoch`] (0: never). Atomics, not in `state`: written on answers and
    /// read on every pick, neither may wait. The two are not read as a pair: a pick that sees a
    /// new value with the previous time misjudges one decay step, harmless.
    load: AtomicU64,
    load_at: AtomicU64,
    /// The cluster's own in-flight count, kept beside the endpoint's for clusters that need
    /// the total on every pick (consistent hashing's load bound): summing 256 endpoints per
    /// pick would cost more than the pick.
    cluster_in_flight: Option<Arc<AtomicUsize>>,
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    ewma_ns: f64,
    updated: Instant,
    ejections: u32,
}

/// Decrements the in-flight count when the attempt is over (however it ends).
#[derive(Debug)]
pub struct InFlight<'a>(&'a Endpoint);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.finish();
    }
}

/// [`InFlight`] that owns its endpoint (for futures that outlive a borrow).
#[derive(Debug)]
pub struct InFlightOwned(Arc<Endpoint>);

impl Drop for InFlightOwned {
    fn drop(&mut self) {
        self.0.finish();
    }
}

// === impl Endpoint ===

impl Endpoint {
    /// A fresh endpoint.
    pub fn new(addr: SocketAddr) -> Self {
        Self {
            addr,
            conns: crate::upstream::Conns::new(addr),
            ip_text: opentelemetry::StringValue::from(Arc::<str>::from(
                ferry_filters::trace_context::ip_text(addr.ip()),
            )),
            in_flight: AtomicUsize::new(0),
            stats: Arc::default(),
            consecutive_failures: AtomicU32::new(0),
            ejected_until: AtomicU64::new(0),
            joined: 0,
            load: AtomicU64::new(0),
            load_at: AtomicU64::new(0),
            cluster_in_flight: None,
            state: Mutex::new(State {
                ewma_ns: DEFAULT_RTT.as_nanos() as f64,
                updated: Instant::now(),
                ejections: 0,
            }),
        }
    }

    /// An endpoint joining a running cluster (a DNS answer that added it): slow start, when
    /// configured, ramps its share from now.
    pub fn joining(addr: SocketAddr) -> Self {
        Self {
            joined: since_epoch(Instant::now()),
            ..Self::new(addr)
        }
    }

    /// The share of its traffic the endpoint should get now under `slow`, in (0, 1]: ramping
    /// linearly from `slow.initial` to 1 over `slow.window` after it joined or came back from
    /// an ejection (as Envoy's `slow_start_config` with aggression 1).
    pub fn share(&self, now: Instant, slow: Option<&SlowStart>) -> f64 {
        let Some(slow) = slow else {
            return 1.0;
        };
        let start = self.joined.max(self.ejected_until.load(Ordering::Relaxed));
        let now = since_epoch(now);
        if start == 0 || now <= start {
            return 1.0;
        }
        let done = (now - start) as f64 / slow.window.as_nanos() as f64;
        if done >= 1.0 {
            1.0
        } else {
            slow.initial + (1.0 - slow.initial) * done
        }
    }

    /// The endpoint with its requests also counted in `total` (its cluster's count).
    pub fn counted_in(self, total: Option<Arc<AtomicUsize>>) -> Self {
        Self {
            cluster_in_flight: total,
            ..self
        }
    }

    /// Counts a request in flight until the returned guard drops.
    pub fn start_owned(self: &Arc<Self>) -> InFlightOwned {
        self.begin();
        InFlightOwned(self.clone())
    }

    /// Counts a request in flight until the guard drops.
    pub fn start(&self) -> InFlight<'_> {
        self.begin();
        InFlight(self)
    }

    fn begin(&self) {
        self.in_flight.fetch_add(1, Ordering::Relaxed);
        if let Some(total) = &self.cluster_in_flight {
            total.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn finish(&self) {
        self.in_flight.fetch_sub(1, Ordering::Relaxed);
        if let Some(total) = &self.cluster_in_flight {
            total.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// The load estimate P2C compares: latency × (in-flight + 1), as in peak-EWMA.
    ///
    /// One exception: an endpoint whose estimate has mostly decayed (no answer for over
    /// `PROBE_AFTER`) is being probed once it has a request in flight, and costs infinity
    /// until that answer comes. Its decayed estimate says nothing about it any more, and without
    /// this a slow replica that looks cheap again takes every request sent while its first one
    /// is still out (at 200 req/s a 10× slower replica got 1.8 % instead of a probe or two).
    pub fn cost(&self, now: Instant) -> f64 {
        let in_flight = self.in_flight.load(Ordering::Relaxed);
        let Ok(s) = self.state.lock() else {
            return f64::MAX;
        };
        if in_flight > 0 && now.saturating_duration_since(s.updated) > PROBE_AFTER {
            return f64::INFINITY;
        }
        decayed(&s, now) * (in_flight as f64 + 1.0)
    }

    /// Records a response latency: peaks are taken at once, improvements decay in.
    pub fn observe_latency(&self, rtt: Duration) {
        self.observe_latency_at(rtt, Instant::now());
    }

    /// [`Endpoint::observe_latency`] at a given time (tests drive a synthetic clock).
    pub(super) fn observe_latency_at(&self, rtt: Duration, now: Instant) {
        if let Ok(mut s) = self.state.lock() {
            let rtt = rtt.as_nanos() as f64;
            let w = weight(&s, now);
            s.ewma_ns = if rtt > s.ewma_ns * w {
                rtt
            } else {
                // The longer since the last answer, the more the new one counts.
                s.ewma_ns * w + rtt * (1.0 - w)
            };
            s.updated = now;
        }
    }

    /// Records the balanced-on metric of a load report the endpoint sent.
    pub fn observe_load(&self, metric: f64) {
        self.observe_load_at(metric, Instant::now());
    }

    /// [`Endpoint::observe_load`] at a given time.
    pub(super) fn observe_load_at(&self, metric: f64, now: Instant) {
        self.load.store(metric.to_bits(), Ordering::Relaxed);
        self.load_at.store(since_epoch(now), Ordering::Relaxed);
    }

    /// The factor a load report puts on the endpoint's cost: `1 + weight × metric`, the
    /// metric fading with the report's age (1 when there is none, or it is too old).
    pub fn load_factor(&self, now: Instant, weight: f64) -> f64 {
        let at = self.load_at.load(Ordering::Relaxed);
        if at == 0 {
            return 1.0;
        }
        let age = Duration::from_nanos(since_epoch(now).saturating_sub(at));
        if age > LOAD_REPORT_MAX_AGE {
            return 1.0;
        }
        let metric = f64::from_bits(self.load.load(Ordering::Relaxed));
        let fade = (-age.as_secs_f64() / LOAD_REPORT_DECAY.as_secs_f64()).exp();
        1.0 + weight * metric * fade
    }

    /// The last reported metric, if any (admin and tests).
    pub fn reported_load(&self) -> Option<f64> {
        (self.load_at.load(Ordering::Relaxed) != 0)
            .then(|| f64::from_bits(self.load.load(Ordering::Relaxed)))
    }

    /// Whether the endpoint was ever ejected (one atomic load, no clock read): a pick checks
    /// this before [`Endpoint::is_ejected`] reads the time.
    pub fn was_ever_ejected(&self) -> bool {
        self.ejected_until.load(Ordering::Relaxed) != 0
    }

    /// Whether the endpoint is currently ejected.
    pub fn is_ejected(&self, now: Instant) -> bool {
        self.ejected_until.load(Ordering::Relaxed) > since_epoch(now)
    }

    /// Records a success: resets the failure streak.
    pub fn success(&self) {
        self.consecutive_failures.store(0, Ordering::Relaxed);
    }

    /// Records a failure (connect error or 5xx). Returns true when this failure ejected the
    /// endpoint. `may_eject` says whether the cluster's ejection cap allows one more.
    pub fn failure(&self, outlier: &OutlierDetection, may_eject: bool) -> bool {
        let streak = self.consecutive_failures.fetch_add(1, Ordering::Relaxed) + 1;
        if streak < outlier.consecutive_failures || !may_eject {
            return false;
        }
        let now = Instant::now();
        let Ok(mut s) = self.state.lock() else {
            return false;
        };
        if self.is_ejected(now) {
            return false;
        }
        // Each re-ejection doubles the time out, as Envoy's base_ejection_time does.
        let factor = 1u32.checked_shl(s.ejections.min(16)).unwrap_or(u32::MAX);
        let length = outlier
            .base_ejection
            .saturating_mul(factor)
            .min(outlier.max_ejection);
        self.ejected_until
            .store(since_epoch(now + length), Ordering::Relaxed);
        s.ejections = s.ejections.saturating_add(1);
        self.consecutive_failures.store(0, Ordering::Relaxed);
        true
    }

    /// Current in-flight requests.
    pub fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::Relaxed)
    }
}

/// Nanoseconds from the first call in this process to `at` (at least 1, so 0 can mean
/// "never"); saturates rather than wraps (u64 nanoseconds last 584 years).
fn since_epoch(at: Instant) -> u64 {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    let epoch = *EPOCH.get_or_init(Instant::now);
    u64::try_from(at.saturating_duration_since(epoch).as_nanos())
        .unwrap_or(u64::MAX)
        .max(1)
}

/// How much of the estimate is left after the time since its last update.
fn weight(s: &State, now: Instant) -> f64 {
    let elapsed = now.saturating_duration_since(s.updated).as_secs_f64();
    (-elapsed / EWMA_DECAY.as_secs_f64()).exp()
}

fn decayed(s: &State, now: Instant) -> f64 {
    // With no new answers the estimate decays toward zero (as tower's and Linkerd's
    // peak-EWMA): an idle endpoint looks cheap again and is tried, so at low load, where
    // in-flight counts are all zero, no endpoint is starved by one old slow answer.
    s.ewma_ns * weight(s, now)
}
