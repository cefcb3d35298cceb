//! Inbound: a listener's TLS mode applied to each accepted TCP connection. Strict listeners
//! run a mutual-TLS handshake and refuse anything else; permissive listeners look at the first
//! byte (a TLS record starts with 0x16, handshake; HTTP/1.1 with a method letter; the HTTP/2
//! preface with `P`) and serve plaintext as before. The handshake (and the wait for the first
//! byte) is bounded by the listener's `handshake_timeout`.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use ferry_config::TlsMode;
use ferry_filters::authorization::IdentityMatch;
use ferry_filters::connection::{Alpn, Connection, PeerIdentity};
use rustls::ServerConfig;
use tokio::net::TcpStream;
use tokio_rustls::server::TlsStream;

use super::material::{hex_sha256, provider};
use super::reason::Reason;
use super::san;
use super::store::IdentityStore;
use super::verify::ClientVerifier;
use crate::metrics::{HandshakeFailureLabels, ListenerLabels, Metrics, Name};

/// The first byte of a TLS record carrying a handshake message.
const TLS_HANDSHAKE_RECORD: u8 = 0x16;

/// Refusals are logged at warn at most this often per listener (the rest at debug), so a
/// scanner hammering the port does not flood the log.
const WARN_EVERY: Duration = Duration::from_secs(10);

/// A listener's TLS termination.
#[derive(Debug)]
pub struct Terminator {
    listener: Arc<str>,
    mode: TlsMode,
    config: Arc<ServerConfig>,
    handshake_timeout: Duration,
    store: Arc<IdentityStore>,
    last_warn: AtomicU64,
    started: Instant,
}

/// What an accepted connection turned out to be.
pub enum Accepted {
    /// A completed mutual-TLS handshake.
    Tls(Box<TlsStream<TcpStream>>, Connection),
    /// Plaintext (permissive listeners only).
    Plain(TcpStream),
}

/// The TLS versions ferry speaks: 1.3, and 1.2 because stock Envoy clients offer at most 1.2.
pub(crate) static VERSIONS: &[&rustls::SupportedProtocolVersion] =
    &[&rustls::version::TLS13, &rustls::version::TLS12];

// === impl Terminator ===

impl Terminator {
    /// Termination for `listener` in `mode` (not `Disabled`), admitting `peers`.
    pub fn new(
        listener: Arc<str>,
        mode: TlsMode,
        peers: Option<IdentityMatch>,
        handshake_timeout: Duration,
        store: Arc<IdentityStore>,
    ) -> Result<Self, rustls::Error> {
        let verifier = Arc::new(ClientVerifier::new(store.clone(), peers));
        let mut config = ServerConfig::builder_with_provider(provider())
            .with_protocol_versions(VERSIONS)?
            .with_client_cert_verifier(verifier)
            .with_cert_resolver(store.resolver());
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok(Terminator {
            listener,
            mode,
            config: Arc::new(config),
            handshake_timeout,
            store,
            last_warn: AtomicU64::new(0),
            started: Instant::now(),
        })
    }

    /// The listener's name.
    pub fn listener(&self) -> &Arc<str> {
        &self.listener
    }

    /// Applies the mode to `stream`: `Ok` to serve, `Err` when refused (already counted and
    /// logged; the caller drops the stream, which closes it).
    pub async fn accept(
        &self,
        stream: TcpStream,
        conn: Connection,
        metrics: &Metrics,
    ) -> Result<Accepted, Reason> {
        let outcome = tokio::time::timeout(self.handshake_timeout, self.handshake(stream, conn))
            .await
            .unwrap_or(Err(Reason::Timeout));
        let listener = Name(self.listener.clone());
        match &outcome {
            Ok(Accepted::Tls(..)) => {
                metrics
                    .tls_handshakes
                    .get_or_create(&ListenerLabels { listener })
                    .inc();
            }
            Ok(Accepted::Plain(_)) => {
                metrics
                    .tls_plaintext
                    .get_or_create(&ListenerLabels { listener })
                    .inc();
            }
            Err(reason) => {
                metrics
                    .tls_handshake_failures
                    .get_or_create(&HandshakeFailureLabels {
                        listener,
                        reason: reason.as_str(),
                    })
                    .inc();
                self.log_refusal(*reason);
            }
        }
        outcome
    }

    async fn handshake(&self, stream: TcpStream, mut conn: Connection) -> Result<Accepted, Reason> {
        let mut first = [0u8; 1];
        let n = stream.peek(&mut first).await.map_err(|_| Reason::Io)?;
        if n == 0 {
            return Err(Reason::Io);
        }
        if first[0] != TLS_HANDSHAKE_RECORD {
            return match self.mode {
                TlsMode::Permissive | TlsMode::Disabled => Ok(Accepted::Plain(stream)),
                TlsMode::Strict => Err(Reason::Plaintext),
            };
        }
        if self.store.current().is_none() {
            // No identity loaded: nothing to present. Validation refuses such a config; this
            // only guards a transient state.
            return Err(Reason::Protocol);
        }
        let tls = tokio_rustls::TlsAcceptor::from(self.config.clone())
            .accept(stream)
            .await
            .map_err(|e| Reason::of_io(&e))?;
        let (_, session) = tls.get_ref();
        conn.alpn = match session.alpn_protocol() {
            Some(b"h2") => Some(Alpn::H2),
            Some(b"http/1.1") => Some(Alpn::Http1),
            _ => None,
        };
        if let Some(leaf) = session.peer_certificates().and_then(|c| c.first()) {
            // The verifier already accepted this ID; parsing cannot fail differently now.
            conn.identity = san::spiffe_id(leaf)
                .ok()
                .map(|id| PeerIdentity(Arc::from(id.as_str())));
            conn.peer_cert_sha256 = Some(Arc::from(hex_sha256(leaf)));
        }
        Ok(Accepted::Tls(Box::new(tls), conn))
    }

    fn log_refusal(&self, reason: Reason) {
        let now = self.started.elapsed().as_secs() + 1;
        let last = self.last_warn.load(Ordering::Relaxed);
        if now >= last + WARN_EVERY.as_secs()
            && self
                .last_warn
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            tracing::warn!(listener = %self.listener, reason = reason.as_str(), "TLS handshake refused (further refusals within 10s are logged at debug)");
        } else {
            tracing::debug!(listener = %self.listener, reason = reason.as_str(), "TLS handshake refused");
        }
    }
}
