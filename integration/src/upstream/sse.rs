//! Server-Sent Events upstream whose events are released by the test, one at a time. Each
//! request opens a stream the test takes with [`Sse::next_stream`]; nothing is written until the
//! test calls [`SseStream::send`]. So a test can prove event 1 reached the client through ferry
//! before event 2 was even written by the upstream.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use bytes::Bytes;
use futures_util::StreamExt as _;
use http::{Response, StatusCode, header};
use http_body_util::{BodyExt as _, StreamBody};
use hyper::body::Frame;
use tokio::sync::{Mutex, mpsc};
use tokio_stream::wrappers::ReceiverStream;

use super::{BoxError, Protocols, RespBody, ServerHandle, serve::serve};

/// A running SSE server.
#[derive(Debug)]
pub struct Sse {
    streams: Mutex<mpsc::UnboundedReceiver<SseStream>>,
    server: ServerHandle,
}

/// One open event stream (one client request). Dropping it ends the response cleanly.
#[derive(Debug)]
pub struct SseStream {
    path: String,
    tx: mpsc::Sender<Result<Frame<Bytes>, BoxError>>,
}

// === impl Sse ===

impl Sse {
    /// Starts the SSE server.
    pub async fn start() -> anyhow::Result<Sse> {
        let (streams_tx, streams_rx) = mpsc::unbounded_channel();
        let streams_tx = Arc::new(streams_tx);
        let server = serve(Protocols::Auto, move |req| {
            let streams_tx = streams_tx.clone();
            async move {
                // Capacity 1: a send completes only when hyper has taken the previous frame,
                // so the upstream never runs ahead of what the test released.
                let (tx, rx) = mpsc::channel(1);
                let path = req.uri().path().to_owned();
                let _ = streams_tx.send(SseStream { path, tx });
                let body = StreamBody::new(ReceiverStream::new(rx).map(|f| f)).boxed_unsync();
                let mut resp = Response::new(body);
                *resp.status_mut() = StatusCode::OK;
                let h = resp.headers_mut();
                h.insert(
                    header::CONTENT_TYPE,
                    header::HeaderValue::from_static("text/event-stream"),
                );
                h.insert(
                    header::CACHE_CONTROL,
                    header::HeaderValue::from_static("no-cache"),
                );
                resp as Response<RespBody>
            }
        })
        .await?;
        Ok(Sse {
            streams: Mutex::new(streams_rx),
            server,
        })
    }

    /// The bound address.
    pub fn addr(&self) -> std::net::SocketAddr {
        self.server.addr()
    }

    /// Waits (up to `patience`) for the next client request and returns its stream.
    pub async fn next_stream(&self, patience: Duration) -> anyhow::Result<SseStream> {
        let mut rx = self.streams.lock().await;
        tokio::time::timeout(patience, rx.recv())
            .await
            .context("no SSE request reached the upstream in time")?
            .context("SSE server stopped")
    }
}

// === impl SseStream ===

impl SseStream {
    /// Path the client requested.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Writes one event (`data: <data>\n\n`) to the response.
    pub async fn send(&self, data: &str) -> anyhow::Result<()> {
        let event = Bytes::from(format!("data: {data}\n\n"));
        self.tx
            .send(Ok(Frame::data(event)))
            .await
            .context("the SSE response was dropped (client or proxy went away)")
    }
}
