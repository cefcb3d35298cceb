//! The endpoint's HTTP/1.1 keep-alive connections.
//!
//! hyper-util's pooled client keys its pool by (scheme, authority) in a SipHash map, boxes a
//! checkout future per request and returns each connection through a spawned readiness wait;
//! under callgrind that bookkeeping was a tenth of ferry's instructions per proxied request. An
//! endpoint is already the pool key, so a small vector of hyper connection handles owned by the
//! endpoint does the same job: a handle goes back in as soon as its request is handed to the
//! connection, and hyper's own readiness flag (`is_ready`: the previous response has been read
//! off the socket and the connection wants the next request) says which one is free.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use http::{Request, Response};
use hyper::body::Incoming;
use hyper::client::conn::http1::{self, SendRequest};
use hyper_util::rt::TokioIo;

use super::{Dial, SendError};
use crate::body::ProxyBody;
use crate::tls::connect::Alpn;

/// Connections kept per endpoint, busy and idle together; beyond this a request still gets a
/// connection but it is not kept afterwards. Bounds file descriptors under a burst.
const MAX_KEPT: usize = 512;

/// A pooled connection that came back unsent (it closed between being picked and being used)
/// is retried on another one this many times before a fresh connection is made.
const STALE_TRIES: usize = 3;

/// The endpoint's HTTP/1.1 connections.
#[derive(Debug, Default)]
pub struct H1Pool {
    shared: Arc<Shared>,
}

#[derive(Debug, Default)]
struct Shared {
    conns: Mutex<Vec<Conn>>,
    /// Whether a task is pruning idle connections.
    reaping: AtomicBool,
}

#[derive(Debug)]
struct Conn {
    sender: SendRequest<ProxyBody>,
    /// When the reaper first saw the connection idle; reset whenever it is used.
    idle_since: Option<Instant>,
}

// === impl H1Pool ===

impl H1Pool {
    /// Sends `req` (origin-form URI, `Host` header set) on an idle connection, or a new one.
    pub async fn send(
        &self,
        mut req: Request<ProxyBody>,
        addr: SocketAddr,
        dial: &Dial,
        idle_timeout: Duration,
    ) -> Result<Response<Incoming>, SendError> {
        let mut stale = 0;
        loop {
            let pooled = if stale < STALE_TRIES {
                self.checkout()
            } else {
                None
            };
            let fresh = pooled.is_none();
            let mut dialed = None;
            let mut sender = match pooled {
                Some(sender) => sender,
                // Boxed: connecting is rare, and inline its state would sit in every
                // request's future (see `forward::handle`).
                None => {
                    let started = Instant::now();
                    let sender = Box::pin(connect(addr, dial)).await?;
                    dialed = Some(super::Dialed(started.elapsed()));
                    sender
                }
            };
            // The future owns everything it needs, so the handle can go back at once: it stays
            // not-ready until this response has been read.
            let sent = sender.try_send_request(req);
            self.keep(sender, idle_timeout);
            match sent.await {
                Ok(mut resp) => {
                    if let Some(d) = dialed {
                        resp.extensions_mut().insert(d);
                    }
                    return Ok(resp);
                }
                Err(mut e) => match e.take_message() {
                    // The connection closed before the request was written: nothing reached
                    // the upstream, so another connection may carry it.
                    Some(back) if !fresh => {
                        stale += 1;
                        req = back;
                    }
                    Some(_) => {
                        return Err(SendError::connect(addr, e.into_error()));
                    }
                    None => {
                        return Err(SendError::request(addr, e.into_error()));
                    }
                },
            }
        }
    }

    /// An idle connection, most recently used first; closed ones are dropped on the way.
    fn checkout(&self) -> Option<SendRequest<ProxyBody>> {
        let mut conns = self.shared.conns.lock().ok()?;
        let mut i = conns.len();
        while i > 0 {
            i -= 1;
            let sender = &conns[i].sender;
            if sender.is_closed() {
                conns.swap_remove(i);
            } else if sender.is_ready() {
                return Some(conns.swap_remove(i).sender);
            }
        }
        None
    }

    fn keep(&self, sender: SendRequest<ProxyBody>, idle_timeout: Duration) {
        let Ok(mut conns) = self.shared.conns.lock() else {
            return;
        };
        if conns.len() >= MAX_KEPT {
            return;
        }
        conns.push(Conn {
            sender,
            idle_since: None,
        });
        drop(conns);
        if !idle_timeout.is_zero()
            && !self.shared.reaping.load(Ordering::Relaxed)
            && !self.shared.reaping.swap(true, Ordering::AcqRel)
        {
            tokio::spawn(reap(Arc::downgrade(&self.shared), idle_timeout));
        }
    }

    /// Connections kept (busy or idle), for tests.
    #[cfg(test)]
    fn kept(&self) -> usize {
        self.shared.conns.lock().map(|c| c.len()).unwrap_or(0)
    }
}

/// Closes connections idle for `idle_timeout` (measured from when a pass first saw them idle,
/// so a connection closes between one and one and a half timeouts after its last use); ends
/// when the pool is empty or gone, and `keep` starts another when needed.
async fn reap(shared: Weak<Shared>, idle_timeout: Duration) {
    let period = (idle_timeout / 2).max(Duration::from_millis(10));
    loop {
        tokio::time::sleep(period).await;
        let Some(shared) = shared.upgrade() else {
            return;
        };
        let Ok(mut conns) = shared.conns.lock() else {
            return;
        };
        let now = Instant::now();
        conns.retain_mut(|c| {
            if c.sender.is_closed() {
                return false;
            }
            if !c.sender.is_ready() {
                c.idle_since = None;
                return true;
            }
            let since = *c.idle_since.get_or_insert(now);
            // Dropping the handle lets hyper close the idle connection.
            now.duration_since(since) < idle_timeout
        });
        if conns.is_empty() {
            // Cleared under the lock, so a `keep` that pushes after this sees it and respawns.
            shared.reaping.store(false, Ordering::Release);
            return;
        }
    }
}

async fn connect(addr: SocketAddr, dial: &Dial) -> Result<SendRequest<ProxyBody>, SendError> {
    let stream = dial.connect(addr, Alpn::Http1, None).await?;
    let (sender, conn) = http1::Builder::new()
        .handshake(TokioIo::new(stream))
        .await
        .map_err(|e| SendError::connect(addr, e))?;
    tokio::spawn(async move {
        // Upgrades (WebSocket) take the socket over after a 101.
        if let Err(error) = conn.with_upgrades().await {
            tracing::debug!(%addr, %error, "upstream HTTP/1.1 connection ended");
        }
    });
    Ok(sender)
}

#[cfg(test)]
mod tests {
    use std::convert::Infallible;

    use http_body_util::BodyExt;
    use hyper::service::service_fn;
    use hyper_util::rt::TokioIo;
    use tokio::net::TcpListener;

    use super::*;

    /// A real hyper HTTP/1.1 server on loopback counting the connections it accepted.
    async fn server() -> (SocketAddr, Arc<std::sync::atomic::AtomicUsize>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let accepted = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let count = accepted.clone();
        tokio::spawn(async move {
            loop {
                let (stream, _) = listener.accept().await.unwrap();
                count.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(async move {
                    let svc = service_fn(|req: Request<Incoming>| async move {
                        let body = format!("{} {}", req.method(), req.uri());
                        Ok::<_, Infallible>(Response::new(http_body_util::Full::new(
                            bytes::Bytes::from(body),
                        )))
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), svc)
                        .await;
                });
            }
        });
        (addr, accepted)
    }

    fn get(path: &str) -> Request<ProxyBody> {
        Request::builder()
            .uri(path)
            .header("host", "example")
            .body(crate::body::empty())
            .unwrap()
    }

    async fn text(resp: Response<Incoming>) -> String {
        let bytes = resp.into_body().collect().await.unwrap().to_bytes();
        String::from_utf8(bytes.to_vec()).unwrap()
    }

    const SECOND: Duration = Duration::from_secs(1);

    #[tokio::test]
    async fn sequential_requests_reuse_one_connection() {
        let (addr, accepted) = server().await;
        let pool = H1Pool::default();
        for i in 0..5 {
            let resp = pool
                .send(
                    get(&format!("/r{i}")),
                    addr,
                    &Dial::plain(SECOND),
                    60 * SECOND,
                )
                .await
                .unwrap();
            assert_eq!(text(resp).await, format!("GET /r{i}"));
        }
        assert_eq!(accepted.load(Ordering::SeqCst), 1);
        assert_eq!(pool.kept(), 1);
    }

    #[tokio::test]
    async fn concurrent_requests_open_connections_and_keep_them() {
        let (addr, accepted) = server().await;
        let pool = H1Pool::default();
        // Both are in flight at once: the first connection is busy when the second is sent.
        let dial = Dial::plain(SECOND);
        let (a, b) = tokio::join!(
            pool.send(get("/a"), addr, &dial, 60 * SECOND),
            pool.send(get("/b"), addr, &dial, 60 * SECOND)
        );
        let (a, b) = (a.unwrap(), b.unwrap());
        assert_eq!(text(a).await, "GET /a");
        assert_eq!(text(b).await, "GET /b");
        assert_eq!(accepted.load(Ordering::SeqCst), 2);
        for _ in 0..4 {
            let r = pool
                .send(get("/c"), addr, &Dial::plain(SECOND), 60 * SECOND)
                .await
                .unwrap();
            assert_eq!(text(r).await, "GET /c");
        }
        assert_eq!(accepted.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn a_response_dropped_unread_does_not_poison_the_pool() {
        let (addr, _) = server().await;
        let pool = H1Pool::default();
        let resp = pool
            .send(get("/x"), addr, &Dial::plain(SECOND), 60 * SECOND)
            .await
            .unwrap();
        drop(resp);
        let again = pool
            .send(get("/y"), addr, &Dial::plain(SECOND), 60 * SECOND)
            .await
            .unwrap();
        assert_eq!(text(again).await, "GET /y");
    }

    #[tokio::test]
    async fn idle_connections_are_closed_after_the_timeout() {
        let (addr, accepted) = server().await;
        let pool = H1Pool::default();
        let idle = Duration::from_millis(100);
        let resp = pool
            .send(get("/x"), addr, &Dial::plain(SECOND), idle)
            .await
            .unwrap();
        assert_eq!(text(resp).await, "GET /x");
        assert_eq!(pool.kept(), 1);
        tokio::time::sleep(idle * 3).await;
        assert_eq!(
            pool.kept(),
            0,
            "idle connection still kept after 3× the timeout"
        );
        let resp = pool
            .send(get("/y"), addr, &Dial::plain(SECOND), idle)
            .await
            .unwrap();
        assert_eq!(text(resp).await, "GET /y");
        assert_eq!(accepted.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn a_closed_pooled_connection_is_replaced() {
        // The server closes after each answer (Connection: close).
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            loop {
                let (stream, _) = listener.accept().await.unwrap();
                tokio::spawn(async move {
                    let svc = service_fn(|_req: Request<Incoming>| async move {
                        Ok::<_, Infallible>(Response::new(http_body_util::Full::new(
                            bytes::Bytes::from_static(b"ok"),
                        )))
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .keep_alive(false)
                        .serve_connection(TokioIo::new(stream), svc)
                        .await;
                });
            }
        });
        let pool = H1Pool::default();
        for _ in 0..3 {
            let resp = pool
                .send(get("/"), addr, &Dial::plain(SECOND), 60 * SECOND)
                .await
                .unwrap();
            assert_eq!(text(resp).await, "ok");
        }
    }

    #[tokio::test]
    async fn connect_failure_is_a_connect_error() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        drop(listener);
        let pool = H1Pool::default();
        let err = pool
            .send(get("/"), addr, &Dial::plain(SECOND), SECOND)
            .await
            .unwrap_err();
        assert!(matches!(err, SendError::Connect { .. }), "{err:?}");
    }
}
