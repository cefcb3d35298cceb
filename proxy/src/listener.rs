//! Data-plane listeners: accept TCP connections and serve HTTP/1.1 and HTTP/2 (h2c prior
//! knowledge, detected per connection) through [`crate::forward::handle`].
//!
//! Each listener owns its connections. Draining a listener stops accepting, then asks every
//! connection to finish (HTTP/1.1: `connection: close` after the current response; HTTP/2:
//! GOAWAY) and waits for them up to a deadline. A reload that leaves a listener unchanged
//! never touches it, so its connections and streams are unaffected.

mod framing;
mod idle;

pub use self::framing::{FramingGuard, Verdicts};
pub use self::idle::{ActiveGuard, Activity};

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;

use crate::forward::{self, ConnInfo};
use crate::metrics::{ListenerLabels, Name};
use crate::state::Shared;

/// HTTP/2 flow-control windows (both directions use the same sizes).
pub(crate) const H2_STREAM_WINDOW: u32 = 1024 * 1024;
pub(crate) const H2_CONN_WINDOW: u32 = 4 * 1024 * 1024;
/// HTTP/2 `SETTINGS_MAX_FRAME_SIZE` ferry advertises, as server and as client. Tensor-sized
/// messages cost a frame (header, flow-control bookkeeping, a wakeup) per 16 KiB at the
/// protocol's default; at 1 MiB a 1 MiB gRPC call costs 20–25 % less CPU (bench `grpc_1mib`),
/// while one frame, which is buffered whole before delivery, stays bounded. grpc-core peers
/// advertise 4 MiB.
pub(crate) const H2_MAX_FRAME: u32 = 1024 * 1024;

/// hyper refuses HTTP/1 read buffers smaller than this.
const MIN_H1_BUF: usize = 8192;

/// A running listener.
#[derive(Debug)]
pub struct ListenerHandle {
    /// Listener name.
    pub name: Arc<str>,
    /// The configured address (compared on reload).
    pub configured: SocketAddr,
    /// The bound address (differs from `configured` for port 0).
    pub local_addr: SocketAddr,
    stop: Option<oneshot::Sender<Duration>>,
    task: JoinHandle<()>,
}

/// Binds a listener socket.
pub async fn bind(addr: SocketAddr) -> io::Result<TcpListener> {
    TcpListener::bind(addr).await
}

/// Starts accepting on `listener`.
pub fn spawn(
    name: Arc<str>,
    configured: SocketAddr,
    listener: TcpListener,
    shared: Arc<Shared>,
) -> io::Result<ListenerHandle> {
    let local_addr = listener.local_addr()?;
    let (stop, stopped) = oneshot::channel();
    let task = tokio::spawn(accept_loop(name.clone(), listener, shared, stopped));
    tracing::info!(listener = %name, address = %local_addr, "listening");
    Ok(ListenerHandle {
        name,
        configured,
        local_addr,
        stop: Some(stop),
        task,
    })
}

// === impl ListenerHandle ===

impl ListenerHandle {
    /// Stops accepting and waits (up to `deadline`) for open connections to finish.
    pub async fn drain(mut self, deadline: Duration) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(deadline);
        }
        let _ = (&mut self.task).await;
    }
}

async fn accept_loop(
    name: Arc<str>,
    listener: TcpListener,
    shared: Arc<Shared>,
    mut stopped: oneshot::Receiver<Duration>,
) {
    // Every connection task holds a receiver: `true` asks it to close gracefully, and
    // `closed()` resolves once the last one has finished.
    let (drain, draining) = watch::channel(false);
    let deadline = loop {
        tokio::select! {
            deadline = &mut stopped => break deadline.unwrap_or(Duration::ZERO),
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => serve(&name, stream, peer, &shared, draining.clone()),
                Err(error) => {
                    // Usually EMFILE: back off briefly instead of spinning.
                    tracing::warn!(listener = %name, %error, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
        }
    };
    drop(listener);
    drop(draining);
    tracing::info!(listener = %name, "draining connections");
    let _ = drain.send(true);
    tokio::select! {
        _ = drain.closed() => tracing::info!(listener = %name, "all connections closed"),
        _ = tokio::time::sleep(deadline) => {
            tracing::warn!(listener = %name, "drain deadline passed with connections still open");
        }
    }
}

fn serve(
    name: &Arc<str>,
    stream: TcpStream,
    peer: SocketAddr,
    shared: &Arc<Shared>,
    mut draining: watch::Receiver<bool>,
) {
    let _ = stream.set_nodelay(true);
    let limits = shared
        .table
        .load()
        .listeners
        .get(&**name)
        .map(|l| l.limits.clone());
    let header_limit = limits
        .as_ref()
        .map_or(64 * 1024, |l| l.max_request_headers_bytes);
    let idle_timeout = limits.as_ref().and_then(|l| l.idle_timeout);
    // hyper starts this clock whenever an HTTP/1.1 connection waits for a request head, so
    // it also bounds keep-alive idleness; `None` switches off hyper's own 30 s default.
    let header_timeout = limits.as_ref().and_then(|l| l.request_headers_timeout);
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(header_timeout)
        .max_buf_size((header_limit as usize).max(MIN_H1_BUF));
    builder
        .http2()
        .timer(TokioTimer::new())
        .max_header_list_size(header_limit)
        .max_concurrent_streams(1024)
        // Fixed, generous windows instead of BDP probing: on loopback and pod networks the
        // probe pings cost more CPU than they win, and tensor-sized bodies need > 64 KiB.
        .initial_stream_window_size(H2_STREAM_WINDOW)
        .initial_connection_window_size(H2_CONN_WINDOW)
        .max_frame_size(H2_MAX_FRAME);
    let verdicts = Arc::new(Verdicts::new());
    let labels = ListenerLabels {
        listener: Name(name.clone()),
    };
    let activity = Activity::new();
    let info = Arc::new(ConnInfo {
        listener: name.clone(),
        peer,
        framing: verdicts.clone(),
        client: crate::headers::ClientAddr::new(peer),
        active_requests: shared
            .metrics
            .active_requests
            .get_or_create(&labels)
            .clone(),
        activity: activity.clone(),
    });
    let svc_shared = shared.clone();
    let service = service_fn(move |req| forward::handle(svc_shared.clone(), info.clone(), req));
    let conn = builder
        .serve_connection_with_upgrades(TokioIo::new(FramingGuard::new(stream, verdicts)), service)
        .into_owned();
    let gauge = shared
        .metrics
        .active_connections
        .get_or_create(&labels)
        .clone();
    let idle_closes = shared.metrics.idle_closes.get_or_create(&labels).clone();
    gauge.inc();
    tokio::spawn(async move {
        let mut conn = std::pin::pin!(conn);
        let idle = async {
            match idle_timeout {
                Some(timeout) => activity.idle_for(timeout).await,
                None => std::future::pending().await,
            }
        };
        let ended = tokio::select! {
            // The connection is what wakes this task almost every time: poll it first rather
            // than in random order (which also costs a random number per wake-up).
            biased;
            ended = conn.as_mut() => Some(ended),
            _ = draining.wait_for(|d| *d) => None,
            () = idle => {
                idle_closes.inc();
                tracing::debug!(%peer, "closing idle connection");
                None
            }
        };
        let ended = match ended {
            Some(ended) => ended,
            None => {
                // HTTP/1.1: close after the current response; HTTP/2: GOAWAY, then close once
                // the open streams are done.
                conn.as_mut().graceful_shutdown();
                conn.await
            }
        };
        if let Err(error) = ended {
            tracing::debug!(%peer, %error, "connection ended with an error");
        }
        gauge.dec();
        drop(draining);
    });
}
