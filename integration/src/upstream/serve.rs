//! The accept loop every test upstream shares: hyper-util's auto server on a loopback listener,
//! with a handle that can kill the server for real (listener closed, every connection dropped),
//! so "endpoint killed mid-test" is a refused connect, not a simulated one.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;

use anyhow::Context as _;
use bytes::Bytes;
use http::{Request, Response};
use http_body_util::combinators::UnsyncBoxBody;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::{JoinHandle, JoinSet};

/// Error type carried by upstream response bodies.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;
/// Response body type every upstream answers with.
pub type RespBody = UnsyncBoxBody<Bytes, BoxError>;

/// Which HTTP versions an upstream accepts on its port.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Protocols {
    /// HTTP/1.1 and h2c prior knowledge, detected per connection (like ferry itself).
    #[default]
    Auto,
    /// HTTP/1.1 only: an h2 preface is a protocol error, as with many model servers.
    Http1Only,
    /// h2c prior knowledge only.
    Http2Only,
}

/// A running upstream. Dropping it kills the server.
#[derive(Debug)]
pub struct ServerHandle {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<()>>,
}

/// Binds `127.0.0.1:0` and serves `handler` on every connection until the handle is killed.
pub async fn serve<F, Fut>(protocols: Protocols, handler: F) -> anyhow::Result<ServerHandle>
where
    F: Fn(Request<Incoming>) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Response<RespBody>> + Send + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .context("binding a test upstream on 127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    let (stop_tx, stop_rx) = oneshot::channel();
    let task = tokio::spawn(accept_loop(listener, protocols, handler, stop_rx));
    Ok(ServerHandle {
        addr,
        stop: Some(stop_tx),
        task: Some(task),
    })
}

async fn accept_loop<F, Fut>(
    listener: TcpListener,
    protocols: Protocols,
    handler: F,
    mut stop: oneshot::Receiver<()>,
) where
    F: Fn(Request<Incoming>) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Response<RespBody>> + Send + 'static,
{
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder = match protocols {
        Protocols::Auto => builder,
        Protocols::Http1Only => builder.http1_only(),
        Protocols::Http2Only => builder.http2_only(),
    };
    // Connections live in a JoinSet owned by this loop so that stopping the loop can abort and
    // await every one of them: after `kill()` returns, no socket of this server is open.
    let mut conns = JoinSet::new();
    loop {
        tokio::select! {
            _ = &mut stop => break,
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                let _ = stream.set_nodelay(true);
                let builder = builder.clone();
                let handler = handler.clone();
                conns.spawn(async move {
                    let svc = hyper::service::service_fn(move |req| {
                        let fut = handler(req);
                        async move { Ok::<_, Infallible>(fut.await) }
                    });
                    let io = TokioIo::new(stream);
                    // hyper-util ignores http1_only/http2_only with upgrades enabled, so the
                    // restricted modes serve without them.
                    if protocols == Protocols::Auto {
                        let _ = builder.serve_connection_with_upgrades(io, svc).await;
                    } else {
                        let _ = builder.serve_connection(io, svc).await;
                    }
                });
            }
            // Reap finished connections so the set does not grow over long tests.
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
        }
    }
    drop(listener);
    conns.shutdown().await;
}

// === impl ServerHandle ===

impl ServerHandle {
    /// The bound loopback address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops the server: closes the listener (new connects are refused) and drops every open
    /// connection. Returns once all of that has happened.
    pub async fn kill(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}
