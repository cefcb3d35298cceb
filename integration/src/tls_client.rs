//! A mutual-TLS client for the tests (rustls, ring), for what curl and openssl cannot do: present
//! a certificate with a key that does not belong to it (both tools check the pair locally and
//! refuse), and speak HTTP/1.1 over the TLS connection to read a whole answer in one call.
//!
//! It verifies the server against the given CA and the name `127.0.0.1`, so server certificates
//! need the loopback IP SAN ([`crate::certs::Workload::loopback`]).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, bail};
use bytes::Bytes;
use http::Request;
use http_body_util::{BodyExt as _, Empty};
use hyper_util::rt::TokioIo;
use rustls::client::ResolvesClientCert;
use rustls::crypto::ring::default_provider;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::sign::CertifiedKey;
use rustls::{ClientConfig, RootCertStore, SignatureScheme};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

use crate::client::Reply;

/// How long a connect plus handshake may take.
const PATIENCE: Duration = Duration::from_secs(10);

/// A client presenting one certificate (and whatever key it was given).
#[derive(Clone)]
pub struct TlsClient {
    connector: TlsConnector,
}

/// Offers the configured certificate without checking that the key matches it.
#[derive(Debug)]
struct Unchecked(Arc<CertifiedKey>);

// === impl TlsClient ===

impl TlsClient {
    /// A client trusting `ca_pem` and presenting `cert_pem` signed with `key_pem`; the two need
    /// not match. ALPN offers `h2` and `http/1.1`, like ferry's own outbound side.
    pub fn new(ca_pem: &str, cert_pem: &str, key_pem: &str) -> anyhow::Result<TlsClient> {
        let provider = Arc::new(default_provider());
        let mut roots = RootCertStore::empty();
        for ca in CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
            roots.add(ca.context("parsing the CA PEM")?)?;
        }
        let chain = CertificateDer::pem_slice_iter(cert_pem.as_bytes())
            .collect::<Result<Vec<_>, _>>()
            .context("parsing the client certificate PEM")?;
        let key = PrivateKeyDer::from_pem_slice(key_pem.as_bytes())
            .context("parsing the client key PEM")?;
        let signer = provider.key_provider.load_private_key(key)?;
        // CertifiedKey::new does not compare the key with the certificate (from_der would).
        let certified = Arc::new(CertifiedKey::new(chain, signer));
        let mut config = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_root_certificates(roots)
            .with_client_cert_resolver(Arc::new(Unchecked(certified)));
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(TlsClient {
            connector: TlsConnector::from(Arc::new(config)),
        })
    }

    /// Connects and completes the handshake (as the client sees it: with TLS 1.3 the server may
    /// still refuse the client's certificate, which the client learns on its first read).
    pub async fn connect(&self, addr: SocketAddr) -> anyhow::Result<TlsStream<TcpStream>> {
        let name = ServerName::IpAddress(addr.ip().into());
        tokio::time::timeout(PATIENCE, async {
            let tcp = TcpStream::connect(addr).await?;
            self.connector
                .connect(name, tcp)
                .await
                .context("TLS handshake")
        })
        .await
        .with_context(|| format!("TLS connect to {addr} timed out"))?
    }

    /// `GET path` over a fresh TLS connection with HTTP/1.1; an error when the server refuses
    /// the handshake or closes the connection.
    pub async fn get(
        &self,
        addr: SocketAddr,
        path: &str,
        headers: &[(&str, &str)],
    ) -> anyhow::Result<Reply> {
        let tls = self.connect(addr).await?;
        let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
            .await
            .context("HTTP/1.1 handshake over TLS")?;
        let driver = tokio::spawn(conn);
        let mut req = Request::get(path).header("host", addr.to_string());
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let req = req.body(Empty::<Bytes>::new())?;
        let result = tokio::time::timeout(PATIENCE, async {
            let resp = sender.send_request(req).await.context("sending over TLS")?;
            let (parts, body) = resp.into_parts();
            let body = body.collect().await?.to_bytes();
            Ok::<_, anyhow::Error>(Reply {
                status: parts.status,
                headers: parts.headers,
                body,
            })
        })
        .await;
        driver.abort();
        match result {
            Ok(reply) => reply,
            Err(_) => bail!("no answer over TLS from {addr} within {PATIENCE:?}"),
        }
    }
}

impl std::fmt::Debug for TlsClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsClient").finish_non_exhaustive()
    }
}

// === impl Unchecked ===

impl ResolvesClientCert for Unchecked {
    fn resolve(&self, _: &[&[u8]], schemes: &[SignatureScheme]) -> Option<Arc<CertifiedKey>> {
        self.0
            .key
            .choose_scheme(schemes)
            .is_some()
            .then(|| self.0.clone())
    }

    fn has_certs(&self) -> bool {
        true
    }
}
