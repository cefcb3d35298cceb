//! The current identity, shared by every listener and cluster and swapped whole on rotation:
//! handshakes read it when they start, so new connections use the new certificate and trust
//! bundles while open connections keep what they negotiated.

use std::sync::Arc;

use arc_swap::ArcSwapOption;
use rustls::SignatureScheme;
use rustls::client::ResolvesClientCert;
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;

use super::material::Material;

/// The identity new handshakes use.
#[derive(Debug, Default)]
pub struct IdentityStore {
    current: ArcSwapOption<Material>,
}

// === impl IdentityStore ===

impl IdentityStore {
    /// The identity now, if any.
    pub fn current(&self) -> Option<Arc<Material>> {
        self.current.load_full()
    }

    /// Swaps in `material` (`None`: no identity, e.g. the config dropped `identity:`).
    pub fn set(&self, material: Option<Arc<Material>>) {
        self.current.store(material);
    }

    /// Presents the current identity's chain and key (server and client side).
    pub fn resolver(self: &Arc<Self>) -> Arc<Resolver> {
        Arc::new(Resolver {
            store: self.clone(),
        })
    }
}

/// Resolves our certificate from the store at each handshake.
#[derive(Debug)]
pub struct Resolver {
    store: Arc<IdentityStore>,
}

impl Resolver {
    fn key(&self) -> Option<Arc<CertifiedKey>> {
        self.store.current.load().as_ref().map(|m| m.key.clone())
    }
}

impl ResolvesServerCert for Resolver {
    fn resolve(&self, _: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        self.key()
    }
}

impl ResolvesClientCert for Resolver {
    fn resolve(&self, _: &[&[u8]], sigschemes: &[SignatureScheme]) -> Option<Arc<CertifiedKey>> {
        // The server's CertificateRequest names the schemes it verifies; a key it cannot
        // check is not offered (the handshake then fails with a clear alert on its side).
        self.key()
            .filter(|k| k.key.choose_scheme(sigschemes).is_some())
    }

    fn has_certs(&self) -> bool {
        self.store.current.load().is_some()
    }
}
