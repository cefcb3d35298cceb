//! The handshake client of `mtls_handshakes`: every request on a new TCP connection with a full
//! TLS handshake (session resumption disabled, so no ticket or session-id shortcut), presenting
//! the outbound workload's client certificate, then one HTTP/1.1 request with
//! `connection: close`. What it costs the proxy per connection is the price of a full mutual
//! handshake plus one proxied request.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::{Resumption, WebPkiServerVerifier};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_rustls::TlsConnector;

use super::Certs;
use crate::error::{BenchError, IoContext, Result};
use crate::loadgen::RunStats;

/// The request sent on each connection: the proxy answers and closes.
const REQUEST: &[u8] = b"GET / HTTP/1.1\r\nhost: bench\r\nconnection: close\r\n\r\n";

/// A mutual-TLS client that never resumes a session.
#[derive(Clone)]
pub struct HandshakeClient {
    connector: TlsConnector,
    server_name: ServerName<'static>,
}

/// Verifies the server's chain against the bench CA but not a DNS name: mesh certificates
/// carry only a SPIFFE URI SAN (the proxies under test check the URI; this client stands for
/// the outbound side of a mesh hop, whose cost is the chain verification).
#[derive(Debug)]
struct ChainOnly {
    inner: Arc<WebPkiServerVerifier>,
}

// === impl HandshakeClient ===

impl std::fmt::Debug for HandshakeClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HandshakeClient")
            .field("server_name", &self.server_name)
            .finish_non_exhaustive()
    }
}

impl HandshakeClient {
    /// A client trusting `certs.ca` and presenting the outbound workload's certificate.
    pub fn new(certs: &Certs) -> Result<Self> {
        let mut config = client_config(certs)?;
        config.resumption = Resumption::disabled();
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Self {
            connector: TlsConnector::from(Arc::new(config)),
            server_name: ServerName::try_from("inbound.bench").map_err(tls_error)?,
        })
    }

    /// One connection: TCP connect, full handshake, one request, the whole answer until the
    /// proxy closes. Returns the answer's length.
    pub async fn once(&self, addr: SocketAddr) -> Result<usize> {
        let tcp = TcpStream::connect(addr)
            .await
            .ctx(|| format!("connecting to {addr}"))?;
        let _ = tcp.set_nodelay(true);
        // The proxy closes first (`connection: close`), so without this every connection
        // would leave a TIME_WAIT socket on the proxy's side of loopback for 60 s, where
        // `tcp_tw_reuse` cannot recycle it: at a few thousand handshakes per second the
        // ephemeral ports run out within a run and connect() slows down more with every
        // repetition (measured: 2,926 → 1,607 handshakes/s over four repetitions). Answering
        // the proxy's FIN with a reset leaves no TIME_WAIT on either side.
        tcp.set_zero_linger()
            .ctx(|| "setting SO_LINGER 0 on the handshake client's socket".into())?;
        let mut tls = self
            .connector
            .connect(self.server_name.clone(), tcp)
            .await
            .map_err(|e| BenchError::Http(format!("TLS handshake with {addr}: {e}")))?;
        tls.write_all(REQUEST)
            .await
            .map_err(|e| BenchError::Http(format!("writing the request: {e}")))?;
        let mut answer = Vec::with_capacity(512);
        // A peer that closes without close_notify still delivered a whole answer: judge by it.
        let read = tls.read_to_end(&mut answer).await;
        if !answer.starts_with(b"HTTP/1.1 200") {
            let head = String::from_utf8_lossy(&answer[..answer.len().min(64)]).into_owned();
            return Err(BenchError::Http(format!(
                "answer {head:?} (read: {read:?})"
            )));
        }
        Ok(answer.len())
    }

    /// Closed loop: `workers` tasks each open the next connection as soon as the last closed,
    /// for `duration`.
    pub async fn closed_loop(
        &self,
        addr: SocketAddr,
        workers: usize,
        duration: Duration,
    ) -> Result<RunStats> {
        let started = Instant::now();
        let deadline = started + duration;
        let mut set = JoinSet::new();
        for _ in 0..workers {
            let client = self.clone();
            set.spawn(async move {
                let mut stats = RunStats::new()?;
                while Instant::now() < deadline {
                    let t = Instant::now();
                    let outcome = client.once(addr).await;
                    let failed = outcome.is_err();
                    stats.record(outcome, t.elapsed());
                    if failed {
                        // The run fails on any error; stop rather than spin on refusals.
                        break;
                    }
                }
                Ok::<_, BenchError>(stats)
            });
        }
        crate::loadgen::join(set, started).await
    }
}

// === impl ChainOnly ===

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        // webpki checks the chain first and the name last, so a name error means the chain
        // was good.
        match self.inner.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        ) {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

/// A client config trusting `certs.ca` (chain only, see [`ChainOnly`]) and presenting the
/// outbound workload's certificate; callers set ALPN and resumption.
pub fn client_config(certs: &Certs) -> Result<ClientConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(&certs.ca).map_err(tls_error)? {
        roots.add(cert.map_err(tls_error)?).map_err(tls_error)?;
    }
    let inner = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
        .build()
        .map_err(tls_error)?;
    let chain = CertificateDer::pem_file_iter(&certs.outbound.cert)
        .map_err(tls_error)?
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(tls_error)?;
    let key = PrivateKeyDer::from_pem_file(&certs.outbound.key).map_err(tls_error)?;
    ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(tls_error)?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(ChainOnly { inner }))
        .with_client_auth_cert(chain, key)
        .map_err(tls_error)
}

fn tls_error(e: impl std::fmt::Display) -> BenchError {
    BenchError::Process(format!("handshake client TLS set-up: {e}"))
}
