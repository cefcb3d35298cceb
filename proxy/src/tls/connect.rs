//! Outbound: a cluster's TLS origination. `mesh` presents the workload identity and verifies
//! the server's SPIFFE ID ([`super::verify::ServerVerifier`]); `server` is plain TLS to a
//! non-mesh upstream, verified by name against the cluster's CA bundles or the system roots.
//! Each wire protocol gets its own client config because ALPN names the protocol the pooled
//! connection will carry (`h2` for the HTTP/2 slot, `http/1.1` for the keep-alive pool).

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use ferry_filters::authorization::IdentityMatch;
use rustls::ClientConfig;
use rustls::RootCertStore;
use rustls_pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;

use super::accept::VERSIONS;
use super::material::provider;
use super::store::IdentityStore;
use super::verify::ServerVerifier;

/// A cluster's TLS origination.
#[derive(Debug)]
pub struct Originator {
    h1: Arc<ClientConfig>,
    h2: Arc<ClientConfig>,
    /// The configured SNI (and, in server mode, the name verified).
    sni: Option<ServerName<'static>>,
}

/// Which ALPN a connection offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Alpn {
    /// `http/1.1`.
    Http1,
    /// `h2`.
    H2,
}

/// Why an origination config could not be built.
#[derive(Debug, thiserror::Error)]
pub enum OriginateError {
    /// rustls refused the settings.
    #[error("TLS settings: {0}")]
    Rustls(#[from] rustls::Error),
    /// The SNI is not a DNS name.
    #[error("sni {0:?} is not a valid DNS name")]
    Sni(String),
}

// === impl Originator ===

impl Originator {
    /// Mutual TLS to another sidecar: our identity, their SPIFFE ID checked by `server`.
    pub fn mesh(
        store: &Arc<IdentityStore>,
        server: Option<IdentityMatch>,
        sni: Option<&str>,
    ) -> Result<Self, OriginateError> {
        let verifier = Arc::new(ServerVerifier::new(store.clone(), server));
        let base = ClientConfig::builder_with_provider(provider())
            .with_protocol_versions(VERSIONS)?
            .dangerous()
            .with_custom_certificate_verifier(verifier)
            .with_client_cert_resolver(store.resolver());
        Self::finish(base, sni)
    }

    /// Server-authenticated TLS verified against `roots` by name.
    pub fn server(roots: Arc<RootCertStore>, sni: Option<&str>) -> Result<Self, OriginateError> {
        let base = ClientConfig::builder_with_provider(provider())
            .with_protocol_versions(VERSIONS)?
            .with_root_certificates(roots)
            .with_no_client_auth();
        Self::finish(base, sni)
    }

    fn finish(base: ClientConfig, sni: Option<&str>) -> Result<Self, OriginateError> {
        let sni = sni
            .map(|s| {
                ServerName::try_from(s.to_owned()).map_err(|_| OriginateError::Sni(s.to_owned()))
            })
            .transpose()?;
        let mut h1 = base.clone();
        h1.alpn_protocols = vec![b"http/1.1".to_vec()];
        let mut h2 = base;
        h2.alpn_protocols = vec![b"h2".to_vec()];
        Ok(Originator {
            h1: Arc::new(h1),
            h2: Arc::new(h2),
            sni,
        })
    }

    /// Runs the client handshake on `tcp`. `host` is the name the request addressed (used for
    /// SNI and server-mode verification when no `sni` is configured); else the IP is used,
    /// for which no SNI is sent.
    pub async fn connect(
        &self,
        tcp: TcpStream,
        alpn: Alpn,
        host: Option<&str>,
    ) -> io::Result<TlsStream<TcpStream>> {
        let name = match (&self.sni, host) {
            (Some(sni), _) => sni.clone(),
            (None, Some(host)) => ServerName::try_from(host.to_owned())
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?,
            (None, None) => ServerName::IpAddress(tcp.peer_addr()?.ip().into()),
        };
        let config = match alpn {
            Alpn::Http1 => self.h1.clone(),
            Alpn::H2 => self.h2.clone(),
        };
        tokio_rustls::TlsConnector::from(config)
            .connect(name, tcp)
            .await
    }
}

/// An upstream connection: TCP, or TLS over TCP (boxed: the TLS state is large and the
/// plaintext case should not pay for its size).
#[derive(Debug)]
pub enum UpstreamIo {
    /// Plaintext.
    Plain(TcpStream),
    /// TLS.
    Tls(Box<TlsStream<TcpStream>>),
}

impl AsyncRead for UpstreamIo {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            UpstreamIo::Plain(s) => Pin::new(s).poll_read(cx, buf),
            UpstreamIo::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for UpstreamIo {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            UpstreamIo::Plain(s) => Pin::new(s).poll_write(cx, buf),
            UpstreamIo::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            UpstreamIo::Plain(s) => Pin::new(s).poll_write_vectored(cx, bufs),
            UpstreamIo::Tls(s) => Pin::new(s.as_mut()).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            UpstreamIo::Plain(s) => s.is_write_vectored(),
            UpstreamIo::Tls(s) => s.is_write_vectored(),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            UpstreamIo::Plain(s) => Pin::new(s).poll_flush(cx),
            UpstreamIo::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            UpstreamIo::Plain(s) => Pin::new(s).poll_shutdown(cx),
            UpstreamIo::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}
