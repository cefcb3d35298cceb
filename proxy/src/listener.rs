//! Data-plane listeners: accept TCP connections and serve HTTP/1.1 and HTTP/2 (h2c prior
//! knowledge, detected per connection) through the listener's stack ([`crate::stack`]). The
//! HTTP server is generic over the transport, so a TLS stream or an in-memory pipe is served
//! the same way ([`serve_connection`]).
//!
//! Each listener owns its connections. Draining a listener stops accepting, then asks every
//! connection to finish (HTTP/1.1: `connection: close` after the current response; HTTP/2:
//! GOAWAY) and waits for them up to a deadline. A reload that leaves a listener unchanged
//! never touches it, so its connections and streams are unaffected.
//!
//! Against slow and flooding clients every listener has, by default: a connection cap
//! ([`cap`]), a request-head timeout (hyper's for HTTP/1.1, [`Activity::no_request_within`]
//! for a new connection of either protocol), the idle timeout ([`idle`]), a stalled-write
//! timeout for peers that never read ([`stall`]), and h2's own bounds (concurrent streams,
//! reset streams, header list size). docs/security.md lists them.

mod cap;
mod close;
mod framing;
mod idle;
mod stall;
mod tracked;
mod woken;

pub use self::cap::{ConnPermit, ConnectionCap};
pub use self::framing::{FramingGuard, Verdicts};
pub use self::idle::{ActiveGuard, Activity};
pub use self::stall::{Stall, StallGuard};
pub use self::tracked::track;

use self::close::Watch;

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use ferry_config::ListenerLimits;
use ferry_filters::connection::Connection;
use ferry_filters::failure;
use futures_util::future::Either;
use http::{Request, Response};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use prometheus_client::metrics::gauge::Gauge;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;
use tower::Service;

use crate::body::ProxyBody;
use crate::failure::{CLASSIFIERS, Failure};
use crate::h2_settings::{H2_CONN_WINDOW, H2_MAX_FRAME, H2_STREAM_WINDOW};
use crate::metrics::{ListenerLabels, Name};
use crate::request_body::AmbiguousFraming;
use crate::request_meta::Outcome;
use crate::shared::Shared;
use crate::tls::{Accepted, Terminator};

/// hyper refuses HTTP/1 read buffers smaller than this.
const MIN_H1_BUF: usize = 8192;
/// `h2_max_concurrent_streams` of a listener not in the table.
const H2_MAX_CONCURRENT_STREAMS: u32 = 1024;
/// Streams a client may open and reset before ferry accepts them; h2's default (20) made
/// explicit. Over it: GOAWAY ENHANCE_YOUR_CALM.
const H2_MAX_PENDING_ACCEPT_RESET_STREAMS: usize = 20;
/// Streams ferry may reset for a client's protocol errors over a connection's life; hyper's
/// default (1024) made explicit. Over it: GOAWAY ENHANCE_YOUR_CALM.
const H2_MAX_LOCAL_ERROR_RESET_STREAMS: usize = 1024;
/// Response bytes h2 buffers per stream beyond the client's window; hyper's default (400 KiB).
const H2_MAX_SEND_BUF_SIZE: usize = 400 * 1024;

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
    let mut cap = ConnectionCap::default();
    let deadline = loop {
        tokio::select! {
            deadline = &mut stopped => break deadline.unwrap_or(Duration::ZERO),
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    let entry = shared.table.load().listeners.get(&*name).cloned();
                    let limit = entry.as_ref().and_then(|l| l.limits.max_connections);
                    let tls = entry.and_then(|l| l.tls.clone());
                    match cap.try_acquire(limit) {
                        Some(permit) => {
                            serve_tcp(&name, stream, peer, &shared, tls, draining.clone(), permit);
                        }
                        None => refuse(&name, stream, &shared, &mut cap),
                    }
                }
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

/// The listener is full: close the connection at once (no bytes written) and count it.
fn refuse(name: &Arc<str>, stream: TcpStream, shared: &Shared, cap: &mut ConnectionCap) {
    drop(stream);
    let labels = ListenerLabels {
        listener: Name(name.clone()),
    };
    shared
        .metrics
        .connections_refused
        .get_or_create(&labels)
        .inc();
    if let Some(refused) = cap.refused(tokio::time::Instant::now()) {
        tracing::warn!(
            listener = %name,
            refused,
            "listener at max_connections: refusing new connections"
        );
    }
}

/// Serves one accepted TCP connection (after its TLS handshake, if the listener has TLS) on
/// its own task, which holds the connection's permit until it is done.
fn serve_tcp(
    name: &Arc<str>,
    stream: TcpStream,
    peer: SocketAddr,
    shared: &Arc<Shared>,
    tls: Option<Arc<Terminator>>,
    draining: watch::Receiver<bool>,
    permit: ConnPermit,
) {
    let _ = stream.set_nodelay(true);
    let conn = Connection::plaintext(name.clone(), peer);
    let Some(tls) = tls else {
        let serve = serve_connection(stream, Arc::new(conn), shared.clone(), Some(draining));
        tokio::spawn(async move {
            serve.await;
            drop(permit);
        });
        return;
    };
    let shared = shared.clone();
    tokio::spawn(async move {
        let _permit = permit;
        // A refused handshake drops the stream (closing it); nothing else is touched.
        match tls.accept(stream, conn, &shared.metrics).await {
            Ok(Accepted::Tls(stream, conn)) => {
                serve_connection(stream, Arc::new(conn), shared, Some(draining)).await;
            }
            Ok(Accepted::Plain(stream)) => {
                let conn = Arc::new(Connection::plaintext(tls.listener().clone(), peer));
                serve_connection(stream, conn, shared, Some(draining)).await;
            }
            Err(_) => {}
        }
    });
}

/// Serves HTTP/1.1 and HTTP/2 on one accepted connection of any transport (TCP, TLS, an
/// in-memory pipe) until it closes, `draining` turns true, or one of the listener's limits
/// closes it: `idle_timeout` (graceful), `request_headers_timeout` with no request head yet, or
/// `stalled_write_timeout` (both closed at once: the peer is not talking or not reading). Every
/// request goes through the listener's stack from the table current when it arrives, with
/// `conn` in its extensions.
pub async fn serve_connection<IO>(
    io: IO,
    conn: Arc<Connection>,
    shared: Arc<Shared>,
    draining: Option<watch::Receiver<bool>>,
) where
    IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let limits = shared
        .table
        .load()
        .listeners
        .get(&*conn.listener)
        .map(|l| l.limits.clone());
    let builder = http_builder(limits.as_ref());
    let verdicts = Arc::new(Verdicts::new());
    let labels = ListenerLabels {
        listener: Name(conn.listener.clone()),
    };
    let activity = Activity::new();
    let stall = Stall::new();
    let peer = conn.peer;
    let service = ConnService {
        conn,
        shared: shared.clone(),
        verdicts: verdicts.clone(),
        active_requests: shared
            .metrics
            .active_requests
            .get_or_create(&labels)
            .clone(),
        activity: activity.clone(),
    };
    let io = FramingGuard::new(StallGuard::new(io, stall.clone()), verdicts);
    let conn = builder
        .serve_connection_with_upgrades(
            TokioIo::new(io),
            hyper::service::service_fn(move |req| service.call(req)),
        )
        .into_owned();
    let gauge = shared
        .metrics
        .active_connections
        .get_or_create(&labels)
        .clone();
    gauge.inc();
    let watch = Watch {
        limits,
        activity,
        stall,
        draining,
        shared: &shared,
        labels: &labels,
    };
    let ended = watch.run(conn, |c| c.graceful_shutdown(), peer).await;
    if let Some(Err(error)) = ended {
        tracing::debug!(%peer, %error, "connection ended with an error");
    }
    gauge.dec();
}

/// hyper's HTTP/1.1 and HTTP/2 settings from the listener's limits (hyper's defaults where the
/// listener is unknown, e.g. removed by a reload in the meantime).
fn http_builder(limits: Option<&ListenerLimits>) -> auto::Builder<TokioExecutor> {
    let header_limit = limits.map_or(64 * 1024, |l| l.max_request_headers_bytes);
    let mut builder = auto::Builder::new(TokioExecutor::new());
    // hyper starts this clock whenever an HTTP/1.1 connection waits for a request head, so
    // it also bounds keep-alive idleness; `None` switches off hyper's own 30 s default.
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.and_then(|l| l.request_headers_timeout))
        .max_buf_size((header_limit as usize).max(MIN_H1_BUF));
    builder
        .http2()
        .timer(TokioTimer::new())
        .max_header_list_size(header_limit)
        .max_concurrent_streams(limits.map_or(Some(H2_MAX_CONCURRENT_STREAMS), |l| {
            l.h2_max_concurrent_streams.map(NonZeroU32::get)
        }))
        // Flood bounds, set explicitly rather than inherited: streams the client reset before
        // the stack saw them (rapid reset, CVE-2023-44487) and streams ferry had to reset
        // for the client's protocol errors; over either, GOAWAY ENHANCE_YOUR_CALM.
        .max_pending_accept_reset_streams(H2_MAX_PENDING_ACCEPT_RESET_STREAMS)
        .max_local_error_reset_streams(H2_MAX_LOCAL_ERROR_RESET_STREAMS)
        // Response bytes buffered per stream beyond what the client's window takes.
        .max_send_buf_size(H2_MAX_SEND_BUF_SIZE)
        // Fixed, generous windows instead of BDP probing: on loopback and pod networks the
        // probe pings cost more CPU than they win, and tensor-sized bodies need > 64 KiB.
        .initial_stream_window_size(H2_STREAM_WINDOW)
        .initial_connection_window_size(H2_CONN_WINDOW)
        .max_frame_size(H2_MAX_FRAME);
    builder
}

/// What hyper calls per request on one connection: connection facts into the request's
/// extensions, then the listener's stack from the current table. Never fails.
struct ConnService {
    conn: Arc<Connection>,
    shared: Arc<Shared>,
    verdicts: Arc<Verdicts>,
    active_requests: Gauge,
    activity: Arc<Activity>,
}

impl ConnService {
    fn call(
        &self,
        req: Request<Incoming>,
    ) -> impl Future<Output = Result<Response<ProxyBody>, Infallible>> + Send + use<> {
        // Held until the response body is done (or the request is abandoned), so the
        // connection counts as busy for its idle timer.
        let active = self.activity.begin();
        // The request's outcome: inner layers fill it in; the bodies count their bytes into
        // it, observed per route when the answer is done.
        let outcome = Arc::new(Outcome::default());
        let mut req = req.map(|b| tracked::request_body(b, outcome.clone()));
        req.extensions_mut().insert(outcome.clone());
        if matches!(
            req.version(),
            http::Version::HTTP_11 | http::Version::HTTP_10
        ) && let Some(reason) = self.verdicts.next_request()
        {
            req.extensions_mut().insert(AmbiguousFraming(reason));
        }
        req.extensions_mut().insert(self.conn.clone());
        let service = self
            .shared
            .table
            .load()
            .listeners
            .get(&*self.conn.listener)
            .map(|l| l.service.clone());
        let grpc = failure::is_grpc(req.headers());
        let gauge = self.active_requests.clone();
        let Some(mut service) = service else {
            // The listener was removed by a reload while this connection was open.
            let gone =
                failure::render(&Failure::ListenerGone(self.conn.listener.to_string()), grpc);
            return Either::Right(std::future::ready(Ok(
                gone.map(|b| track(b, gauge, active, outcome))
            )));
        };
        Either::Left(async move {
            // The stack renders its own errors; rendering here only backs that up.
            let resp = service
                .call(req)
                .await
                .unwrap_or_else(|e| failure::render_error(e.as_ref(), CLASSIFIERS, grpc));
            Ok(resp.map(|b| track(b, gauge, active, outcome)))
        })
    }
}
