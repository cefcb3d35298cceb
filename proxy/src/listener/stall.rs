//! Stalled-write guard: closes a downstream connection whose peer has stopped reading.
//!
//! A peer that never reads holds its connection open for ever once the socket buffers fill:
//! hyper waits to write, and h2 stops reading new frames until its one pending PING or
//! SETTINGS ack can be written (so a control-frame flood costs at most the socket buffers, not
//! memory in ferry), but nothing ever closes the connection, and a GOAWAY cannot be delivered
//! to a peer that does not read. This wrapper notes when a write or flush first returns
//! `Pending` and clears it on any progress; [`Stall::stalled_for`] resolves once the connection
//! has made no write progress for the listener's `stalled_write_timeout`, and the connection
//! is then dropped (closed without a GOAWAY). The cost is one atomic per write.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::Notify;
use tokio::time::Instant;

/// Write progress of one connection, shared between its transport and its watchdog.
#[derive(Debug)]
pub struct Stall {
    /// When writes started to wait, in milliseconds since `epoch`, plus one; 0 = not waiting.
    since: AtomicU64,
    epoch: Instant,
    /// Woken when writes start to wait.
    started: Notify,
}

/// A transport that reports its write progress to a [`Stall`].
#[derive(Debug)]
pub struct StallGuard<IO> {
    inner: IO,
    stall: Arc<Stall>,
}

// === impl Stall ===

impl Stall {
    /// A connection whose writes are not waiting.
    pub fn new() -> Arc<Stall> {
        Arc::new(Stall {
            since: AtomicU64::new(0),
            epoch: Instant::now(),
            started: Notify::new(),
        })
    }

    fn waiting(&self) {
        let now = u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX - 1) + 1;
        if self
            .since
            .compare_exchange(0, now, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            self.started.notify_one();
        }
    }

    fn progressed(&self) {
        self.since.store(0, Ordering::Release);
    }

    /// Resolves once writes have waited, without any progress, for `timeout`.
    pub async fn stalled_for(&self, timeout: Duration) {
        loop {
            let since = self.since.load(Ordering::Acquire);
            if since == 0 {
                // `notify_one` keeps a permit if nobody waits yet, so a stall that starts
                // between the load and here is not missed.
                self.started.notified().await;
                continue;
            }
            let deadline = self.epoch + Duration::from_millis(since - 1) + timeout;
            tokio::time::sleep_until(deadline).await;
            if self.since.load(Ordering::Acquire) == since {
                return;
            }
        }
    }
}

// === impl StallGuard ===

impl<IO> StallGuard<IO> {
    /// Wraps `inner`, reporting to `stall`.
    pub fn new(inner: IO, stall: Arc<Stall>) -> Self {
        Self { inner, stall }
    }

    fn note<T>(&self, poll: Poll<io::Result<T>>) -> Poll<io::Result<T>> {
        match &poll {
            Poll::Pending => self.stall.waiting(),
            Poll::Ready(_) => self.stall.progressed(),
        }
        poll
    }
}

impl<IO: AsyncRead + Unpin> AsyncRead for StallGuard<IO> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<IO: AsyncWrite + Unpin> AsyncWrite for StallGuard<IO> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let poll = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.note(poll)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let poll = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.note(poll)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let poll = Pin::new(&mut self.inner).poll_flush(cx);
        self.note(poll)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let poll = Pin::new(&mut self.inner).poll_shutdown(cx);
        self.note(poll)
    }
}

#[cfg(test)]
mod tests {
    // Real time with short periods, as in `idle`'s tests: only lower bounds are asserted.
    use super::*;
    use tokio::io::AsyncWriteExt;

    const PERIOD: Duration = Duration::from_millis(100);

    #[tokio::test]
    async fn a_peer_that_never_reads_is_reported_after_the_timeout() {
        // A 64-byte pipe whose far end is never read: the second write waits.
        let (near, _far) = tokio::io::duplex(64);
        let stall = Stall::new();
        let mut io = StallGuard::new(near, stall.clone());
        let writer = tokio::spawn(async move { io.write_all(&[0; 1024]).await });
        let started = Instant::now();
        stall.stalled_for(PERIOD).await;
        assert!(started.elapsed() >= PERIOD);
        writer.abort();
    }

    #[tokio::test]
    async fn a_reading_peer_is_never_reported() {
        let (near, mut far) = tokio::io::duplex(64);
        let stall = Stall::new();
        let mut io = StallGuard::new(near, stall.clone());
        let watcher = {
            let stall = stall.clone();
            tokio::spawn(async move { stall.stalled_for(PERIOD).await })
        };
        let reader = tokio::spawn(async move {
            let mut sink = Vec::new();
            tokio::io::AsyncReadExt::read_to_end(&mut far, &mut sink).await
        });
        // Many writes that each wait briefly for the reader: progress every time.
        for _ in 0..50 {
            io.write_all(&[0; 256]).await.unwrap();
        }
        tokio::time::sleep(PERIOD * 2).await;
        assert!(
            !watcher.is_finished(),
            "reported a connection that made progress"
        );
        drop(io);
        reader.await.unwrap().unwrap();
        watcher.abort();
    }
}
