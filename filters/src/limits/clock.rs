//! governor's clock on tokio's time, so buckets follow `tokio::time::pause` in tests and the
//! runtime's clock in the proxy.

use std::time::Duration;

use governor::clock::Clock;

/// Time since this clock was made, read from tokio.
#[derive(Debug, Clone)]
pub struct TokioClock {
    origin: tokio::time::Instant,
}

impl Default for TokioClock {
    fn default() -> Self {
        TokioClock {
            origin: tokio::time::Instant::now(),
        }
    }
}

impl Clock for TokioClock {
    type Instant = Duration;

    fn now(&self) -> Duration {
        tokio::time::Instant::now().saturating_duration_since(self.origin)
    }
}
