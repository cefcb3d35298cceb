//! The adaptive cap of a concurrency slot (`adaptive: true`).

use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// A gradient limiter (after Netflix's concurrency-limits "gradient2"): the cap follows the
/// ratio of the best recent hold time to the current average, so when the model slows down
/// under load the cap shrinks until latency recovers, then grows back by a small headroom.
/// Lowering the cap takes permits out of the semaphore (held here); raising gives them back.
#[derive(Debug)]
pub(super) struct Gradient {
    pub(super) limit: f64,
    /// Slowly decaying minimum hold time, microseconds.
    pub(super) best_us: f64,
    /// Short average hold time, microseconds.
    pub(super) recent_us: f64,
    pub(super) samples: u32,
    pub(super) reserved: Vec<OwnedSemaphorePermit>,
}

/// Samples between adjustments.
const ADJUST_EVERY: u32 = 10;

impl Gradient {
    pub(super) fn sample(&mut self, held_us: f64, max: u32, semaphore: &Arc<Semaphore>) {
        let held_us = held_us.max(1.0);
        self.recent_us = if self.samples == 0 && self.recent_us == 0.0 {
            held_us
        } else {
            self.recent_us * 0.8 + held_us * 0.2
        };
        self.best_us = if self.best_us == 0.0 {
            held_us
        } else {
            // Forget an old best slowly, so a model that became slower for good is re-measured.
            (self.best_us * 1.001).min(held_us.max(self.best_us * 0.5))
        };
        self.samples += 1;
        if self.samples < ADJUST_EVERY {
            return;
        }
        self.samples = 0;
        let gradient = (self.best_us / self.recent_us).clamp(0.5, 1.0);
        let headroom = self.limit.sqrt();
        let target = (self.limit * gradient + headroom).clamp(1.0, f64::from(max));
        self.limit = self.limit * 0.8 + target * 0.2;
        let want_reserved = max.saturating_sub(self.limit.round() as u32) as usize;
        while self.reserved.len() > want_reserved {
            self.reserved.pop();
        }
        while self.reserved.len() < want_reserved {
            // Only free permits can be taken; the rest are taken on a later adjustment.
            match semaphore.clone().try_acquire_owned() {
                Ok(p) => self.reserved.push(p),
                Err(_) => break,
            }
        }
    }
}
