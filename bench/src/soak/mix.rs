//! The soak's traffic: five request classes sent open loop at a fixed total rate, each class
//! on its own connections, with per-class counters the sampler reads every interval.
//!
//! One pacing thread ([`crate::loadgen::pace`]) releases request *k* at `start + k / rate` to
//! the lane of the class in slot `k mod 20` of a fixed interleaved pattern, so every class
//! keeps its share of the rate at any moment of the run. Workers of a lane take the next due
//! time from a shared queue (any idle worker serves it) and charge latency from the due time.
//! Unlike the benchmark's load runs, a failed request does not stop its worker: the soak counts
//! failures per interval and goes on, reconnecting when the connection closed.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::{BufMut, BytesMut};
use http::Method;
use http_body_util::BodyExt;
use tokio::sync::{Mutex, mpsc};
use tokio::task::JoinSet;

use crate::error::{BenchError, Result};
use crate::loadgen::{Conn, Proto, RequestSpec, RunStats};
use crate::upstream::{GRPC_PATH, GRPC_STREAM_PATH, SMALL_BODY, SSE_FIRST, STREAM_MESSAGES};

/// The body of `GET /sse` from the bench upstream, both events.
const SSE_BYTES: usize = SSE_FIRST.len() + b"data: done\n\n".len();
/// Bytes of the gRPC message payload sent by both gRPC classes.
const GRPC_PAYLOAD: usize = 64;
/// How many failures are kept with their time and message for the report.
const KEPT_ERRORS: usize = 50;

/// A request class of the mix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Class {
    /// `GET /` over HTTP/1.1 keep-alive.
    H1Unary,
    /// `GET /` over h2c.
    H2Unary,
    /// gRPC unary echo over h2c.
    GrpcUnary,
    /// `GET /sse` over HTTP/1.1: two events 200 ms apart.
    Sse,
    /// gRPC server streaming over h2c: five messages 10 ms apart.
    GrpcStream,
}

/// What one class did over the whole run.
#[derive(Debug)]
pub(crate) struct ClassStats {
    /// Which.
    pub class: Class,
    /// Requests, failures and latency (to the first message for streams).
    pub stats: RunStats,
}

/// Live counters the sampler reads.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    ok: AtomicU64,
    failed: AtomicU64,
    errors: std::sync::Mutex<Vec<String>>,
}

/// The running mix.
pub(crate) struct Mix {
    workers: JoinSet<Result<ClassStats>>,
    pacer: std::thread::JoinHandle<()>,
}

// === impl Class ===

impl Class {
    /// Every class, in report order.
    pub(crate) const ALL: [Class; 5] = [
        Class::H1Unary,
        Class::H2Unary,
        Class::GrpcUnary,
        Class::Sse,
        Class::GrpcStream,
    ];

    /// Report name.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Class::H1Unary => "unary HTTP/1.1",
            Class::H2Unary => "unary h2c",
            Class::GrpcUnary => "gRPC unary",
            Class::Sse => "SSE stream (HTTP/1.1)",
            Class::GrpcStream => "gRPC server stream",
        }
    }

    /// Share of the rate, in twentieths.
    pub(crate) fn weight(self) -> usize {
        match self {
            Class::H1Unary | Class::H2Unary => 6,
            Class::GrpcUnary => 2,
            Class::Sse | Class::GrpcStream => 3,
        }
    }

    /// (protocol, connections, workers per connection). HTTP/1.1 holds one request per
    /// connection, so the SSE lane needs rate × 0.2 s = 30 connections busy on average. On a
    /// shared machine a round trip can take tens of milliseconds while other builds hold the
    /// cores, and an open-loop lane whose capacity drops below its rate falls behind for good
    /// (a trial with 8 and 48 connections reached seconds of queueing), so every lane has
    /// about three times what a slow minute needs.
    pub(crate) fn shape(self) -> (Proto, usize, usize) {
        match self {
            Class::H1Unary => (Proto::Http1, 16, 1),
            Class::Sse => (Proto::Http1, 96, 1),
            Class::H2Unary | Class::GrpcStream => (Proto::H2c, 1, 64),
            Class::GrpcUnary => (Proto::H2c, 1, 32),
        }
    }

    fn spec(self) -> RequestSpec {
        match self {
            Class::H1Unary | Class::H2Unary => RequestSpec::get("/"),
            Class::Sse => RequestSpec::get("/sse"),
            Class::GrpcUnary | Class::GrpcStream => {
                let mut frame = BytesMut::with_capacity(5 + GRPC_PAYLOAD);
                frame.put_u8(0);
                frame.put_u32(GRPC_PAYLOAD as u32);
                frame.put_bytes(b'x', GRPC_PAYLOAD);
                let path = if self == Class::GrpcUnary {
                    GRPC_PATH
                } else {
                    GRPC_STREAM_PATH
                };
                RequestSpec {
                    method: Method::POST,
                    path: path.to_owned(),
                    body: frame.freeze(),
                    grpc: true,
                    headers: Vec::new(),
                }
            }
        }
    }
}

/// The 20-slot pattern: smooth weighted round robin, so no class runs in bursts.
pub(crate) fn pattern() -> Vec<Class> {
    let total: usize = Class::ALL.iter().map(|c| c.weight()).sum();
    let mut current = [0i64; Class::ALL.len()];
    let mut out = Vec::with_capacity(total);
    for _ in 0..total {
        for (i, c) in Class::ALL.iter().enumerate() {
            current[i] += c.weight() as i64;
        }
        let best = (0..current.len()).max_by_key(|&i| (current[i], -(i as i64)));
        if let Some(i) = best {
            current[i] -= total as i64;
            out.push(Class::ALL[i]);
        }
    }
    out
}

// === impl Counters ===

impl Counters {
    /// Successful and failed requests so far.
    pub(crate) fn totals(&self) -> (u64, u64) {
        (
            self.ok.load(Ordering::Relaxed),
            self.failed.load(Ordering::Relaxed),
        )
    }

    /// The first failures, each with its time and class.
    pub(crate) fn kept_errors(&self) -> Vec<String> {
        self.errors.lock().map(|e| e.clone()).unwrap_or_default()
    }

    fn record<T>(&self, class: Class, outcome: &Result<T>, at: Duration) {
        match outcome {
            Ok(_) => self.ok.fetch_add(1, Ordering::Relaxed),
            Err(e) => {
                if let Ok(mut kept) = self.errors.lock()
                    && kept.len() < KEPT_ERRORS
                {
                    kept.push(format!("{:.1} s, {}: {e}", at.as_secs_f64(), class.name()));
                }
                self.failed.fetch_add(1, Ordering::Relaxed)
            }
        };
    }
}

// === impl Mix ===

impl Mix {
    /// Opens every lane's connections to ferry (HTTP/1.1 and h2c on `h1` and `h2`) and starts
    /// sending at `rate` for `duration`.
    pub(crate) async fn start(
        h1: SocketAddr,
        h2: SocketAddr,
        rate: u32,
        duration: Duration,
        counters: Arc<Counters>,
    ) -> Result<Self> {
        let started = tokio::time::Instant::now();
        let mut workers = JoinSet::new();
        let mut lanes = Vec::new();
        for class in Class::ALL {
            let (proto, connections, per_conn) = class.shape();
            let addr = if proto == Proto::Http1 { h1 } else { h2 };
            let (tx, rx) = mpsc::unbounded_channel();
            let rx = Arc::new(Mutex::new(rx));
            for _ in 0..connections {
                let conn = Conn::connect(addr, proto).await?;
                // h2c handles share the connection (one stream each); HTTP/1.1 has one.
                let mut handles: Vec<Conn> = (1..per_conn).filter_map(|_| conn.share()).collect();
                handles.push(conn);
                for conn in handles {
                    let lane = Lane {
                        class,
                        addr,
                        proto,
                        rx: Arc::clone(&rx),
                        counters: Arc::clone(&counters),
                        started,
                    };
                    workers.spawn(lane.serve(conn));
                }
            }
            lanes.push((class, tx));
        }
        let tickets: Vec<_> = pattern()
            .into_iter()
            .filter_map(|c| {
                lanes
                    .iter()
                    .find(|(l, _)| *l == c)
                    .map(|(_, tx)| tx.clone())
            })
            .collect();
        drop(lanes);
        let total = (duration.as_secs_f64() * f64::from(rate)).ceil() as u64;
        let interval = Duration::from_secs_f64(1.0 / f64::from(rate.max(1)));
        let pacer = std::thread::Builder::new()
            .name("soak-pacer".into())
            .spawn(move || crate::loadgen::pace(&tickets, total, interval))
            .map_err(|e| BenchError::Http(format!("starting the pacing thread: {e}")))?;
        Ok(Self { workers, pacer })
    }

    /// Waits for the last request and returns each class's totals.
    pub(crate) async fn finish(mut self) -> Result<Vec<ClassStats>> {
        let mut out: Vec<ClassStats> = Vec::new();
        while let Some(joined) = self.workers.join_next().await {
            let part = joined.map_err(|e| BenchError::Http(format!("soak worker: {e}")))??;
            match out.iter_mut().find(|c| c.class == part.class) {
                Some(total) => total.merge(part.stats)?,
                None => out.push(part),
            }
        }
        let _ = self.pacer.join();
        out.sort_by_key(|c| Class::ALL.iter().position(|k| *k == c.class));
        Ok(out)
    }
}

// === impl ClassStats ===

impl ClassStats {
    fn merge(&mut self, other: RunStats) -> Result<()> {
        self.stats.ok += other.ok;
        self.stats.errors += other.errors;
        self.stats.bytes += other.bytes;
        if self.stats.first_error.is_none() {
            self.stats.first_error = other.first_error;
        }
        self.stats
            .latency
            .add(&other.latency)
            .map_err(|e| BenchError::Http(format!("merging histograms: {e}")))
    }
}

/// One worker's view of its class's queue.
struct Lane {
    class: Class,
    addr: SocketAddr,
    proto: Proto,
    rx: Arc<Mutex<mpsc::UnboundedReceiver<std::time::Instant>>>,
    counters: Arc<Counters>,
    started: tokio::time::Instant,
}

// === impl Lane ===

impl Lane {
    async fn serve(self, first: Conn) -> Result<ClassStats> {
        let mut stats = RunStats::new()?;
        let spec = self.class.spec();
        let authority = self.addr.to_string();
        let mut conn = Some(first);
        loop {
            // The lock is a tokio one: waiting for the next due time while holding it is the
            // queue's point (one idle worker waits, the others wait for the lock).
            let due = self.rx.lock().await.recv().await;
            let Some(due) = due else { break };
            if conn.as_ref().is_none_or(is_closed) {
                conn = Conn::connect(self.addr, self.proto).await.ok();
            }
            let outcome = match conn.as_mut() {
                Some(c) => exchange(self.class, c, &authority, &spec, due).await,
                None => Err(BenchError::Http(format!("reconnecting to {}", self.addr))),
            };
            self.counters
                .record(self.class, &outcome, self.started.elapsed());
            let latency = outcome.as_ref().map_or(Duration::ZERO, |(_, l)| *l);
            stats.record(outcome.map(|(bytes, _)| bytes), latency);
        }
        Ok(ClassStats {
            class: self.class,
            stats,
        })
    }
}

fn is_closed(conn: &Conn) -> bool {
    match conn {
        Conn::Http1(s) => s.is_closed(),
        Conn::H2(s) => s.is_closed(),
    }
}

/// One request of `class`: (body bytes, latency from `due` to the whole answer for unary
/// calls, to the first message for streams). The answer is checked in full either way.
async fn exchange(
    class: Class,
    conn: &mut Conn,
    authority: &str,
    spec: &RequestSpec,
    due: std::time::Instant,
) -> Result<(usize, Duration)> {
    let expected = match class {
        Class::H1Unary | Class::H2Unary => SMALL_BODY.len(),
        Class::GrpcUnary => spec.body.len(),
        Class::Sse => SSE_BYTES,
        Class::GrpcStream => spec.body.len() * STREAM_MESSAGES,
    };
    let mut body = conn.send_streaming(authority, spec).await?;
    let mut first = None;
    let mut bytes = 0;
    let mut grpc_ok = false;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| BenchError::Http(format!("response body: {e}")))?;
        if let Some(data) = frame.data_ref() {
            bytes += data.len();
            if first.is_none() && !data.is_empty() {
                first = Some(due.elapsed());
            }
        } else if let Some(trailers) = frame.trailers_ref() {
            grpc_ok = trailers.get("grpc-status").is_some_and(|v| v == "0");
        }
    }
    let done = due.elapsed();
    if spec.grpc && !grpc_ok {
        return Err(BenchError::Http("gRPC call without grpc-status 0".into()));
    }
    if bytes != expected {
        return Err(BenchError::Http(format!(
            "{bytes} body bytes, expected {expected}"
        )));
    }
    let latency = match class {
        Class::Sse | Class::GrpcStream => first.unwrap_or(done),
        _ => done,
    };
    Ok((bytes, latency))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pattern_gives_each_class_its_weight_without_bursts() {
        let p = pattern();
        assert_eq!(p.len(), 20);
        for c in Class::ALL {
            assert_eq!(p.iter().filter(|k| **k == c).count(), c.weight(), "{c:?}");
        }
        // Smooth round robin never sends the same class more than twice in a row here.
        assert!(
            p.windows(3).all(|w| !(w[0] == w[1] && w[1] == w[2])),
            "{p:?}"
        );
    }
}
