//! Open-loop load that survives faults: request *k* is due at `start + k / rate`, whoever is
//! free takes it, and a failure is recorded and the connection remade, never the end of a
//! worker (the saturation scenarios' generator stops a worker at its first error, right for a
//! benchmark, wrong for a fault).
//!
//! Workers share `connections` slots, `streams` workers per slot (1 for HTTP/1.1). A slot
//! holds one connection; a worker that finds it broken or missing connects while holding the
//! slot, so the other workers of an HTTP/2 slot wait for that connection instead of each
//! opening their own. With `recycle_after`, a slot replaces its connection after that many
//! requests: keep-alive clients would otherwise never handshake again and never see a
//! rotated certificate.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{Mutex, mpsc};
use tokio::task::JoinSet;

use super::client::{Dialer, Failed, Sender};
use super::phases::Sample;
use crate::error::{BenchError, Result};

/// Longest the client waits for one answer; ferry's route timeout (2 s) ends every request
/// well before, so hitting this means the proxy held a request past its own limits.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(10);

/// A run's shape.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Whom to send to, how.
    pub dialer: Dialer,
    /// Connection slots.
    pub connections: usize,
    /// Workers per slot.
    pub streams: usize,
    /// Requests per second.
    pub rate: u32,
    /// How long requests are due.
    pub duration: Duration,
    /// Requests per connection before a new one is opened (`None` = keep it).
    pub recycle_after: Option<u32>,
}

/// What a run recorded.
#[derive(Debug, Default)]
pub struct Recorded {
    /// Every request, in no particular order.
    pub samples: Vec<Sample>,
    /// TLS only: each distinct server leaf certificate seen on a new connection, with the
    /// time it was first seen and how many connections saw it.
    pub leaves: BTreeMap<Vec<u8>, (Duration, u64)>,
}

#[derive(Debug, Default)]
struct Slot {
    /// Bumped on every new connection, so a worker discards only the connection it saw break.
    generation: u64,
    sender: Option<Sender>,
    used: u32,
}

type Leaves = Arc<std::sync::Mutex<BTreeMap<Vec<u8>, (Duration, u64)>>>;

/// Runs `plan` with due times counted from `start`.
pub async fn run(plan: Plan, start: Instant) -> Result<Recorded> {
    let (tx, rx) = mpsc::unbounded_channel::<Instant>();
    let rx = Arc::new(Mutex::new(rx));
    let leaves: Leaves = Arc::default();
    let mut set = JoinSet::new();
    for _ in 0..plan.connections.max(1) {
        let slot = Arc::new(Mutex::new(Slot::default()));
        for _ in 0..plan.streams.max(1) {
            let (rx, slot, leaves) = (rx.clone(), slot.clone(), leaves.clone());
            let (dialer, recycle) = (plan.dialer.clone(), plan.recycle_after);
            set.spawn(worker(rx, slot, dialer, recycle, leaves, start));
        }
    }
    let total = (plan.duration.as_secs_f64() * f64::from(plan.rate)).ceil() as u64;
    let interval = Duration::from_secs_f64(1.0 / f64::from(plan.rate.max(1)));
    let pacer = std::thread::Builder::new()
        .name("faults-pacer".into())
        .spawn(move || pace(&tx, start, total, interval))
        .map_err(|e| BenchError::Http(format!("starting the pacing thread: {e}")))?;
    let mut recorded = Recorded::default();
    while let Some(joined) = set.join_next().await {
        let samples = joined.map_err(|e| BenchError::Http(format!("load worker: {e}")))?;
        recorded.samples.extend(samples);
    }
    let _ = pacer.join();
    if let Ok(mut seen) = leaves.lock() {
        recorded.leaves = std::mem::take(&mut *seen);
    }
    Ok(recorded)
}

async fn worker(
    rx: Arc<Mutex<mpsc::UnboundedReceiver<Instant>>>,
    slot: Arc<Mutex<Slot>>,
    dialer: Dialer,
    recycle: Option<u32>,
    leaves: Leaves,
    start: Instant,
) -> Vec<Sample> {
    let mut samples = Vec::new();
    loop {
        let due = { rx.lock().await.recv().await };
        let Some(due) = due else { break };
        let outcome = match checkout(&slot, &dialer, recycle, &leaves, start).await {
            Ok((generation, mut sender)) => {
                let sent = tokio::time::timeout(CLIENT_TIMEOUT, dialer.send(&mut sender)).await;
                let result = sent.unwrap_or_else(|_| {
                    Err(Failed {
                        reason: "client timeout".into(),
                        broken: true,
                    })
                });
                match &result {
                    Err(Failed { broken: true, .. }) => discard(&slot, generation).await,
                    _ => checkin(&slot, generation, sender).await,
                }
                result
            }
            Err(failed) => Err(failed),
        };
        samples.push(Sample {
            due: due.saturating_duration_since(start),
            latency: due.elapsed(),
            failure: outcome.err().map(|f| f.reason),
        });
    }
    samples
}

/// The slot's connection (a new one when it has none or is due for recycling).
async fn checkout(
    slot: &Mutex<Slot>,
    dialer: &Dialer,
    recycle: Option<u32>,
    leaves: &Leaves,
    start: Instant,
) -> std::result::Result<(u64, Sender), Failed> {
    let mut slot = slot.lock().await;
    let spent = recycle.is_some_and(|n| slot.used >= n);
    if slot.sender.is_none() || spent {
        let connected = tokio::time::timeout(CLIENT_TIMEOUT, dialer.connect()).await;
        let (sender, leaf) = connected.unwrap_or_else(|_| {
            Err(Failed {
                reason: "connect timeout".into(),
                broken: true,
            })
        })?;
        if let (Some(leaf), Ok(mut seen)) = (leaf, leaves.lock()) {
            let entry = seen.entry(leaf).or_insert((start.elapsed(), 0));
            entry.1 += 1;
        }
        slot.generation += 1;
        slot.sender = Some(sender);
        slot.used = 0;
    }
    slot.used += 1;
    // HTTP/2 senders are shared; an HTTP/1.1 sender is lent out (its slot has one worker)
    // and given back by `checkin`.
    let sender = match &slot.sender {
        Some(Sender::H2(s)) => Some(Sender::H2(s.clone())),
        _ => slot.sender.take(),
    };
    let sender = sender.ok_or_else(|| Failed {
        reason: "no connection".into(),
        broken: true,
    })?;
    Ok((slot.generation, sender))
}

/// Gives a lent HTTP/1.1 sender back to its slot, unless the slot moved on meanwhile.
async fn checkin(slot: &Mutex<Slot>, generation: u64, sender: Sender) {
    let mut slot = slot.lock().await;
    if slot.generation == generation && slot.sender.is_none() {
        slot.sender = Some(sender);
    }
}

async fn discard(slot: &Mutex<Slot>, generation: u64) {
    let mut slot = slot.lock().await;
    if slot.generation == generation {
        slot.sender = None;
    }
}

/// Releases request `k` at `start + k × interval`.
// Runs on its own OS thread, never on the runtime: blocking sleeps are the point here.
#[allow(clippy::disallowed_methods)]
fn pace(tx: &mpsc::UnboundedSender<Instant>, start: Instant, total: u64, interval: Duration) {
    for k in 0..total {
        let due = start + interval.mul_f64(k as f64);
        let now = Instant::now();
        if due > now {
            std::thread::sleep(due - now);
        }
        if tx.send(due).is_err() {
            return;
        }
    }
}
