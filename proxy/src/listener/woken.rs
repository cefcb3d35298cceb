//! A future polled only when one of its own wakers fired.
//!
//! A connection's task wakes for the connection (bytes to read, an upstream answer, room to
//! write) two or three times per request, and `tokio::select!` polls every branch on every
//! wake. The limits beside the connection (drain, idle, request-head and stalled-write timers)
//! almost never fire, yet polling them re-registers three timers and a watch each time:
//! about 2,000–3,000 instructions per HTTP/1.1 request by callgrind. Behind this gate they
//! are polled only after one of them woke the task; a wake-up for the connection costs the
//! gate one queue check.

use std::future::Future;

use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;

/// Runs `f`, polling it only after a waker it registered fired. `FuturesUnordered` gives
/// each of its futures its own waker (a well-kept implementation of exactly this); with one
/// future it costs two allocations per connection, none per request.
pub(super) async fn woken_only<F: Future>(f: F) -> F::Output {
    let mut one = FuturesUnordered::new();
    one.push(f);
    match one.next().await {
        Some(out) => out,
        // Not reached: the set held a future, and yields its output before ending.
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::Poll;
    use std::time::Duration;

    use super::woken_only;

    /// A future that counts its polls and is ready once `ready` is notified.
    async fn counted(polls: Arc<AtomicUsize>, ready: Arc<tokio::sync::Notify>) -> u32 {
        let notified = ready.notified();
        tokio::pin!(notified);
        std::future::poll_fn(|cx| {
            polls.fetch_add(1, Ordering::Relaxed);
            notified.as_mut().poll(cx).map(|()| 7)
        })
        .await
    }

    use std::future::Future;

    #[tokio::test]
    async fn polls_only_after_its_own_wake_and_yields_the_output() {
        let polls = Arc::new(AtomicUsize::new(0));
        let ready = Arc::new(tokio::sync::Notify::new());
        let mut gated = Box::pin(woken_only(counted(polls.clone(), ready.clone())));
        // Polling the gate many times (as other wake-ups of the task would) polls the inner
        // future once: it registered and has not been woken since.
        for _ in 0..10 {
            let out = std::future::poll_fn(|cx| Poll::Ready(gated.as_mut().poll(cx))).await;
            assert!(out.is_pending());
        }
        assert_eq!(polls.load(Ordering::Relaxed), 1);
        ready.notify_one();
        let out = tokio::time::timeout(Duration::from_secs(5), gated).await;
        assert_eq!(out.ok(), Some(7));
        assert_eq!(polls.load(Ordering::Relaxed), 2);
    }
}
