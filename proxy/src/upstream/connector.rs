//! The connector of hyper-util's pooled clients (original-authority clusters): the pool hands
//! it the endpoint's address as a URI; it dials through the cluster's [`Dial`], so these
//! clusters originate TLS exactly like the others.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};

use http::Uri;
use hyper::rt::{Read, ReadBufCursor, Write};
use hyper_util::client::legacy::connect::{Connected, Connection};
use hyper_util::rt::TokioIo;

use super::Dial;
use crate::body::BoxError;
use crate::tls::UpstreamIo;
use crate::tls::connect::Alpn;

/// Dials the URI's `ip:port` (the pool has already chosen and resolved the endpoint).
#[derive(Debug, Clone)]
pub struct Connector {
    dial: Dial,
    alpn: Alpn,
}

impl Connector {
    /// A connector for one wire protocol (its ALPN).
    pub fn new(dial: Dial, alpn: Alpn) -> Self {
        Connector { dial, alpn }
    }
}

impl tower::Service<Uri> for Connector {
    type Response = Conn;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Conn, BoxError>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        let dial = self.dial.clone();
        let alpn = self.alpn;
        Box::pin(async move {
            let addr: SocketAddr = uri
                .authority()
                .map(|a| a.as_str())
                .unwrap_or_default()
                .parse()
                .map_err(|e| format!("endpoint {uri} is not ip:port: {e}"))?;
            let io = dial.connect(addr, alpn, None).await?;
            Ok(Conn {
                io: TokioIo::new(io),
            })
        })
    }
}

pin_project_lite::pin_project! {
    /// A dialled connection as hyper's pool takes it.
    #[derive(Debug)]
    pub struct Conn {
        #[pin]
        io: TokioIo<UpstreamIo>,
    }
}

impl Connection for Conn {
    fn connected(&self) -> Connected {
        Connected::new()
    }
}

impl Read for Conn {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        self.project().io.poll_read(cx, buf)
    }
}

impl Write for Conn {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.project().io.poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.project().io.poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.project().io.poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.project().io.poll_shutdown(cx)
    }
}
