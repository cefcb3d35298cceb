//! One multiplexed HTTP/2 connection per endpoint, made on first use and remade when the
//! upstream closes it (GOAWAY, reset, idle close).
//!
//! The pooled client addresses a connection by the request URI's authority, so it would put
//! the endpoint's address in `:authority`; owning the connection lets the request keep the
//! caller's authority (as Envoy does) and skips the pool's per-request bookkeeping, which
//! matters for gRPC where every call is a stream on the same connection.

use std::net::SocketAddr;
use std::sync::Mutex;
use std::time::Duration;

use http::{Request, Response};
use hyper::body::Incoming;
use hyper::client::conn::http2::{self, SendRequest};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};

use super::{Dial, SendError};
use crate::body::ProxyBody;
use crate::tls::connect::Alpn;

/// The endpoint's HTTP/2 connection, if one is open.
#[derive(Debug, Default)]
pub struct H2Slot {
    sender: Mutex<Option<SendRequest<ProxyBody>>>,
    /// Serializes connection attempts so a burst of first requests opens one connection.
    connecting: tokio::sync::Mutex<()>,
}

// === impl H2Slot ===

impl H2Slot {
    /// Sends `req` (whose URI must carry scheme and authority) on the endpoint's connection.
    pub async fn send(
        &self,
        req: Request<ProxyBody>,
        addr: SocketAddr,
        dial: &Dial,
    ) -> Result<Response<Incoming>, SendError> {
        let mut dialed = None;
        let mut sender = match self.current() {
            Some(sender) => sender,
            // Boxed: connecting is rare, and inline its state would sit in every request's
            // future (see `forward::handle`).
            None => {
                let started = std::time::Instant::now();
                let sender = Box::pin(self.connect(addr, dial)).await?;
                dialed = Some(super::Dialed(started.elapsed()));
                sender
            }
        };
        // A connection that closed after we took it has not seen this request: as safe to
        // retry as a failed connect.
        sender
            .ready()
            .await
            .map_err(|e| SendError::connect(addr, e))?;
        let mut resp = sender
            .send_request(req)
            .await
            .map_err(|e| SendError::request(addr, e))?;
        if let Some(d) = dialed {
            resp.extensions_mut().insert(d);
        }
        Ok(resp)
    }

    fn current(&self) -> Option<SendRequest<ProxyBody>> {
        let guard = self.sender.lock().ok()?;
        guard.as_ref().filter(|s| !s.is_closed()).cloned()
    }

    /// Opens the connection, unless a request that waited on the lock before us already did.
    async fn connect(
        &self,
        addr: SocketAddr,
        dial: &Dial,
    ) -> Result<SendRequest<ProxyBody>, SendError> {
        let _one_at_a_time = self.connecting.lock().await;
        if let Some(sender) = self.current() {
            return Ok(sender);
        }
        let stream = dial.connect(addr, Alpn::H2, None).await?;
        let (sender, conn) = http2::Builder::new(TokioExecutor::new())
            .timer(TokioTimer::new())
            .initial_stream_window_size(crate::h2_settings::H2_STREAM_WINDOW)
            .initial_connection_window_size(crate::h2_settings::H2_CONN_WINDOW)
            .max_frame_size(crate::h2_settings::H2_MAX_FRAME)
            .keep_alive_interval(Duration::from_secs(30))
            .handshake(TokioIo::new(stream))
            .await
            .map_err(|e| SendError::connect(addr, e))?;
        tokio::spawn(async move {
            if let Err(error) = conn.await {
                tracing::debug!(%addr, %error, "upstream HTTP/2 connection ended");
            }
        });
        if let Ok(mut slot) = self.sender.lock() {
            *slot = Some(sender.clone());
        }
        Ok(sender)
    }
}
