//! Data-plane listeners: accept TCP connections and serve HTTP/1.1 and HTTP/2 (h2c prior
//! knowledge, detected per connection) through the listener's stack ([`crate::stack`]). The
//! HTTP server is generic over the transport, so a TLS stream or an in-memory pipe is served
//! the same way ([`serve_connection`]).
//!
//! Each listener owns its connections. Draining a listener stops accepting, then asks every
//! connection to finish (HTTP/1.1: `connection: close` after the current response; HTTP/2:
//! GOAWAY) and waits for them up to a deadline. A reload that leaves a listener unchanged
//! never touches it, so its connections and streams are unaffected.

mod framing;
mod idle;
mod tracked;

pub use self::framing::{FramingGuard, Verdicts};
pub use self::idle::{ActiveGuard, Activity};
pub use self::tracked::track;

use ferry_filters::body_limit::MalformedBody;
use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use ferry_filters::connection::Connection;
use ferry_filters::failure;
use futures_util::future::Either;
use http::{Request, Response};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use prometheus_client::metrics::gauge::Gauge;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;
use tower::Service;

use crate::body::{BoxError, ProxyBody};
use crate::failure::{CLASSIFIERS, Failure};
use crate::h2_settings::{H2_CONN_WINDOW, H2_MAX_FRAME, H2_STREAM_WINDOW};
use crate::metrics::{ListenerLabels, Name};
use crate::request_body::AmbiguousFraming;
use crate::shared::Shared;
use crate::tls::Accepted;

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
                Ok((stream, peer)) => serve_tcp(&name, stream, peer, &shared, draining.clone()),
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

fn serve_tcp(
    name: &Arc<str>,
    stream: TcpStream,
    peer: SocketAddr,
    shared: &Arc<Shared>,
    draining: watch::Receiver<bool>,
) {
    let _ = stream.set_nodelay(true);
    let conn = Connection::plaintext(name.clone(), peer);
    let tls = shared
        .table
        .load()
        .listeners
        .get(&**name)
        .and_then(|l| l.tls.clone());
    let Some(tls) = tls else {
        tokio::spawn(serve_connection(
            stream,
            Arc::new(conn),
            shared.clone(),
            Some(draining),
        ));
        return;
    };
    let shared = shared.clone();
    tokio::spawn(async move {
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
/// in-memory pipe) until it closes, `draining` turns true, or it stays idle past the
/// listener's `idle_timeout`. Every request goes through the listener's stack from the table
/// current when it arrives, with `conn` in its extensions.
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
    let header_limit = limits
        .as_ref()
        .map_or(64 * 1024, |l| l.max_request_headers_bytes);
    let idle_timeout = limits.as_ref().and_then(|l| l.idle_timeout);
    let builder = http_builder(
        header_limit,
        limits.as_ref().and_then(|l| l.request_headers_timeout),
    );
    let verdicts = Arc::new(Verdicts::new());
    let labels = ListenerLabels {
        listener: Name(conn.listener.clone()),
    };
    let activity = Activity::new();
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
    let conn = builder
        .serve_connection_with_upgrades(
            TokioIo::new(FramingGuard::new(io, verdicts)),
            hyper::service::service_fn(move |req| service.call(req)),
        )
        .into_owned();
    let gauge = shared
        .metrics
        .active_connections
        .get_or_create(&labels)
        .clone();
    let idle_closes = shared.metrics.idle_closes.get_or_create(&labels).clone();
    gauge.inc();
    let mut conn = std::pin::pin!(conn);
    let idle = async {
        match idle_timeout {
            Some(timeout) => activity.idle_for(timeout).await,
            None => std::future::pending().await,
        }
    };
    // The receiver lives until the connection is done: the listener's drain waits for every
    // receiver to be dropped.
    let mut draining = draining;
    let drain = async {
        match draining.as_mut() {
            Some(d) => drop(d.wait_for(|d| *d).await),
            None => std::future::pending().await,
        }
    };
    let ended = tokio::select! {
        // The connection is what wakes this task almost every time: poll it first rather
        // than in random order (which also costs a random number per wake-up).
        biased;
        ended = conn.as_mut() => Some(ended),
        () = drain => None,
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
}

fn http_builder(
    header_limit: u32,
    header_timeout: Option<Duration>,
) -> auto::Builder<TokioExecutor> {
    let mut builder = auto::Builder::new(TokioExecutor::new());
    // hyper starts this clock whenever an HTTP/1.1 connection waits for a request head, so
    // it also bounds keep-alive idleness; `None` switches off hyper's own 30 s default.
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
        // Whatever goes wrong reading the caller's body is the caller's doing: typed here so
        // an attempt that fails on it answers 400 and does not count against the upstream.
        let mut req = req.map(|b| {
            b.map_err(|e| -> BoxError {
                Box::new(MalformedBody {
                    source: Box::new(e),
                })
            })
            .boxed_unsync()
        });
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
            return Either::Right(std::future::ready(
                Ok(gone.map(|b| track(b, gauge, active))),
            ));
        };
        Either::Left(async move {
            // The stack renders its own errors; rendering here only backs that up.
            let resp = service
                .call(req)
                .await
                .unwrap_or_else(|e| failure::render_error(e.as_ref(), CLASSIFIERS, grpc));
            Ok(resp.map(|b| track(b, gauge, active)))
        })
    }
}
