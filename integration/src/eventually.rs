//! Eventual assertions: retry a check until it passes or the patience runs out, instead of
//! sleeping a fixed time and hoping. The poll interval backs off from 5 ms to 100 ms.

use std::future::Future;
use std::time::Duration;

use anyhow::Context as _;
use tokio::time::Instant;

/// Runs `check` until it returns `Ok`, for at most `patience`. On timeout returns the last
/// error, annotated with how long and how many times it was tried.
pub async fn eventually<T, F, Fut>(patience: Duration, mut check: F) -> anyhow::Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = anyhow::Result<T>>,
{
    let deadline = Instant::now() + patience;
    let mut interval = Duration::from_millis(5);
    let mut attempts = 0u32;
    loop {
        attempts += 1;
        let last = match tokio::time::timeout_at(deadline, check()).await {
            Ok(Ok(v)) => return Ok(v),
            Ok(Err(e)) => e,
            Err(_) => anyhow::anyhow!("the check itself was still running at the deadline"),
        };
        if Instant::now() + interval >= deadline {
            return Err(last)
                .with_context(|| format!("not true after {patience:?} ({attempts} attempts)"));
        }
        tokio::time::sleep(interval).await;
        interval = (interval * 2).min(Duration::from_millis(100));
    }
}
