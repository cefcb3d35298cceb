//! Serving certificates read from files and re-read when they change.
//!
//! cert-manager (or the chart's pre-install job) writes a Secret that the kubelet projects into
//! the pod and updates in place on renewal. Polling the file contents catches every way that
//! update can land (atomic symlink swaps included) without a filesystem-event dependency; a bad
//! new pair is logged and counted while the old one keeps serving.

use std::{
    path::{Path, PathBuf},
    sync::Arc,
    time::Duration,
};

use arc_swap::ArcSwap;
use rustls::{
    ServerConfig,
    server::{ClientHello, ResolvesServerCert},
    sign::CertifiedKey,
};
use rustls_pki_types::{CertificateDer, PrivateKeyDer, pem::PemObject};

use super::metrics::Metrics;
use crate::error::InjectError;

/// Hands rustls whichever certificate was loaded last.
#[derive(Debug)]
pub struct ReloadingCert {
    current: ArcSwap<CertifiedKey>,
    cert_path: PathBuf,
    key_path: PathBuf,
    loaded: std::sync::Mutex<(Vec<u8>, Vec<u8>)>,
}

impl ResolvesServerCert for ReloadingCert {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.current.load_full())
    }
}

// === impl ReloadingCert ===

impl ReloadingCert {
    /// Loads the pair once; fails when either file is missing or unusable.
    pub async fn load(cert_path: &Path, key_path: &Path) -> Result<Self, InjectError> {
        let (cert_pem, key_pem) = read_pair(cert_path, key_path).await?;
        let key = parse_pair(cert_path, key_path, &cert_pem, &key_pem)?;
        Ok(Self {
            current: ArcSwap::from_pointee(key),
            cert_path: cert_path.to_owned(),
            key_path: key_path.to_owned(),
            loaded: std::sync::Mutex::new((cert_pem, key_pem)),
        })
    }

    /// Re-reads the files; swaps in the new pair when the contents changed and parse. Returns
    /// `Ok(true)` when a new pair was installed.
    pub async fn reload(&self) -> Result<bool, InjectError> {
        let (cert_pem, key_pem) = read_pair(&self.cert_path, &self.key_path).await?;
        let unchanged = match self.loaded.lock() {
            Ok(loaded) => loaded.0 == cert_pem && loaded.1 == key_pem,
            Err(_) => false,
        };
        if unchanged {
            return Ok(false);
        }
        let key = parse_pair(&self.cert_path, &self.key_path, &cert_pem, &key_pem)?;
        self.current.store(Arc::new(key));
        if let Ok(mut loaded) = self.loaded.lock() {
            *loaded = (cert_pem, key_pem);
        }
        Ok(true)
    }

    /// Polls for changes every `interval` until the task is dropped.
    pub async fn watch(self: Arc<Self>, interval: Duration, metrics: Arc<Metrics>) {
        let mut ticker = tokio::time::interval(interval);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        ticker.tick().await;
        loop {
            ticker.tick().await;
            match self.reload().await {
                Ok(false) => {}
                Ok(true) => {
                    tracing::info!(cert = %self.cert_path.display(), "serving certificate reloaded");
                    metrics.cert_reload(true);
                }
                Err(e) => {
                    tracing::warn!(error = %e, "serving certificate reload failed; keeping the old one");
                    metrics.cert_reload(false);
                }
            }
        }
    }
}

/// A rustls server config (ring provider, TLS 1.2 and 1.3, ALPN h2 and http/1.1) whose
/// certificate comes from `cert`.
pub fn server_config(cert: Arc<ReloadingCert>) -> Result<ServerConfig, InjectError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| InjectError::Tls {
            path: cert.cert_path.clone(),
            problem: e.to_string(),
        })?
        .with_no_client_auth()
        .with_cert_resolver(cert);
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(config)
}

async fn read_pair(cert_path: &Path, key_path: &Path) -> Result<(Vec<u8>, Vec<u8>), InjectError> {
    let read = |path: &Path| {
        let path = path.to_owned();
        async move {
            tokio::fs::read(&path).await.map_err(|e| InjectError::Tls {
                path,
                problem: e.to_string(),
            })
        }
    };
    Ok((read(cert_path).await?, read(key_path).await?))
}

fn parse_pair(
    cert_path: &Path,
    key_path: &Path,
    cert_pem: &[u8],
    key_pem: &[u8],
) -> Result<CertifiedKey, InjectError> {
    let cert_err = |problem: String| InjectError::Tls {
        path: cert_path.to_owned(),
        problem,
    };
    let key_err = |problem: String| InjectError::Tls {
        path: key_path.to_owned(),
        problem,
    };
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(cert_pem)
        .collect::<Result<_, _>>()
        .map_err(|e| cert_err(format!("invalid PEM: {e}")))?;
    if certs.is_empty() {
        return Err(cert_err("no CERTIFICATE block found".into()));
    }
    let key = PrivateKeyDer::from_pem_slice(key_pem)
        .map_err(|e| key_err(format!("no usable private key: {e}")))?;
    let provider = rustls::crypto::ring::default_provider();
    let signing_key = provider
        .key_provider
        .load_private_key(key)
        .map_err(|e| key_err(e.to_string()))?;
    let certified = CertifiedKey::new(certs, signing_key);
    match certified.keys_match() {
        Ok(()) | Err(rustls::Error::InconsistentKeys(rustls::InconsistentKeys::Unknown)) => {
            Ok(certified)
        }
        Err(e) => Err(key_err(format!("does not match the certificate: {e}"))),
    }
}
