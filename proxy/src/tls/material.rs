//! Reading the files TLS needs: the workload's identity (certificate chain, key, trust
//! bundles) and the CA bundles of `server`-mode clusters. Blocking (run on the blocking pool);
//! every fault is a config error at the field that names the file, so `ferry validate`, start
//! and reload report it the same way.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use ferry_config::{ClusterTls, Config, ConfigError, ConfigErrors, FieldLocation, Identity};
use ferry_filters::authorization::SpiffeId;
use rustls::RootCertStore;
use rustls::crypto::CryptoProvider;
use rustls::server::WebPkiClientVerifier;
use rustls::server::danger::ClientCertVerifier;
use rustls::sign::CertifiedKey;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use sha2::{Digest, Sha256};

use super::san;

/// A loaded, checked identity: what new handshakes present and trust.
#[derive(Debug)]
pub struct Material {
    /// Chain and signing key, presented by listeners and mesh clusters.
    pub key: Arc<CertifiedKey>,
    /// The trust bundles' anchors.
    pub roots: Arc<RootCertStore>,
    /// Chain verification of client certificates against `roots` (names not checked: the
    /// SPIFFE ID is, by the caller).
    pub client_chain: Arc<dyn ClientCertVerifier>,
    /// The SPIFFE ID in our own certificate (`By=` of `x-forwarded-client-cert`).
    pub id: SpiffeId,
    /// Our certificate's notAfter, Unix seconds.
    pub not_after: i64,
    /// The certificate file (metric label, `/config_dump`).
    pub cert_path: PathBuf,
    /// Every file read, with its sha256: a change of any is a rotation.
    pub files: BTreeMap<PathBuf, String>,
}

/// Every TLS file one config names.
#[derive(Debug, Clone, Default)]
pub struct TlsFiles {
    /// The workload identity; `None` when the config has no `identity:`.
    pub identity: Option<Arc<Material>>,
    /// `server`-mode clusters' trust anchors by cluster name (the system roots when the
    /// cluster names no `ca`).
    pub server_roots: HashMap<String, Arc<RootCertStore>>,
    /// sha256 of every CA file of `server`-mode clusters.
    ca_files: BTreeMap<PathBuf, String>,
}

/// The crypto provider: ring, as rustls is built (no C toolchain needed).
pub fn provider() -> Arc<CryptoProvider> {
    static PROVIDER: std::sync::OnceLock<Arc<CryptoProvider>> = std::sync::OnceLock::new();
    PROVIDER
        .get_or_init(|| Arc::new(rustls::crypto::ring::default_provider()))
        .clone()
}

// === impl TlsFiles ===

impl TlsFiles {
    /// Reads every TLS file `config` names. Blocking.
    pub fn load(config: &Config) -> Result<TlsFiles, ConfigErrors> {
        let mut errors = Vec::new();
        let identity = match &config.identity {
            Some(identity) => match Material::load(identity) {
                Ok(m) => Some(Arc::new(m)),
                Err(mut e) => {
                    errors.append(&mut e);
                    None
                }
            },
            None => None,
        };
        let mut out = TlsFiles {
            identity,
            ..TlsFiles::default()
        };
        for c in &config.clusters {
            let Some(ClusterTls::Server { ca, ca_at, .. }) = &c.tls else {
                continue;
            };
            let roots = if ca.is_empty() {
                system_roots()
            } else {
                let mut roots = RootCertStore::empty();
                for (path, at) in ca.iter().zip(ca_at) {
                    match read_certs(path, at, "CA bundle") {
                        Ok((certs, digest)) => {
                            out.ca_files.insert(path.clone(), digest);
                            add_roots(&mut roots, certs, path, at, &mut errors);
                        }
                        Err(e) => errors.push(e),
                    }
                }
                Arc::new(roots)
            };
            out.server_roots.insert(c.name.clone(), roots);
        }
        if errors.is_empty() {
            Ok(out)
        } else {
            Err(ConfigErrors { errors })
        }
    }

    /// [`TlsFiles::load`] on the blocking pool.
    pub async fn load_async(config: &Config) -> Result<TlsFiles, ConfigErrors> {
        let any = config.identity.is_some()
            || config
                .clusters
                .iter()
                .any(|c| matches!(c.tls, Some(ClusterTls::Server { .. })));
        if !any {
            return Ok(TlsFiles::default());
        }
        let config = config.clone();
        tokio::task::spawn_blocking(move || Self::load(&config))
            .await
            .unwrap_or_else(|e| {
                Err(ConfigErrors::single(ConfigError {
                    file: String::new(),
                    line: 0,
                    col: 0,
                    path: String::new(),
                    message: format!("TLS file load task failed: {e}"),
                }))
            })
    }

    /// Changes whenever any file's contents change.
    pub fn fingerprint(&self) -> String {
        let identity = self.identity.iter().flat_map(|m| m.files.values());
        identity
            .chain(self.ca_files.values())
            .cloned()
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The contents of a cluster's CA files (a reload keeps the cluster only if unchanged).
    pub fn ca_fingerprint(&self, cluster: &ferry_config::Cluster) -> String {
        match &cluster.tls {
            Some(ClusterTls::Server { ca, .. }) => ca
                .iter()
                .filter_map(|p| self.ca_files.get(p))
                .cloned()
                .collect::<Vec<_>>()
                .join(","),
            _ => String::new(),
        }
    }

    /// The directories holding the files, to watch.
    pub fn dirs(&self) -> Vec<PathBuf> {
        let identity = self.identity.iter().flat_map(|m| m.files.keys());
        let mut dirs: Vec<PathBuf> = identity
            .chain(self.ca_files.keys())
            .map(|p| parent(p))
            .collect();
        dirs.sort();
        dirs.dedup();
        dirs
    }
}

/// The directories of the files a config's TLS settings name (before they are read, so a
/// missing file's directory is watched too).
pub fn configured_dirs(config: &Config) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Some(i) = &config.identity {
        dirs.push(parent(&i.cert));
        dirs.push(parent(&i.key));
        dirs.extend(i.trust.iter().map(|p| parent(p)));
    }
    for c in &config.clusters {
        if let Some(ClusterTls::Server { ca, .. }) = &c.tls {
            dirs.extend(ca.iter().map(|p| parent(p)));
        }
    }
    dirs.sort();
    dirs.dedup();
    dirs
}

fn parent(p: &Path) -> PathBuf {
    match p.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

// === impl Material ===

impl Material {
    /// Reads and checks `identity`'s files: readable PEM, a key matching the leaf, one SPIFFE
    /// URI SAN, not expired, at least one anchor per bundle. Blocking.
    pub fn load(identity: &Identity) -> Result<Material, Vec<ConfigError>> {
        let mut errors = Vec::new();
        let mut files = BTreeMap::new();
        let chain = match read_certs(&identity.cert, &identity.cert_at, "certificate chain") {
            Ok((chain, digest)) => {
                files.insert(identity.cert.clone(), digest);
                Some(chain)
            }
            Err(e) => {
                errors.push(e);
                None
            }
        };
        let key = match read_key(&identity.key, &identity.key_at) {
            Ok((key, digest)) => {
                files.insert(identity.key.clone(), digest);
                Some(key)
            }
            Err(e) => {
                errors.push(e);
                None
            }
        };
        let mut roots = RootCertStore::empty();
        for (path, at) in identity.trust.iter().zip(&identity.trust_at) {
            match read_certs(path, at, "trust bundle") {
                Ok((certs, digest)) => {
                    files.insert(path.clone(), digest);
                    add_roots(&mut roots, certs, path, at, &mut errors);
                }
                Err(e) => errors.push(e),
            }
        }
        let (Some(chain), Some(key)) = (chain, key) else {
            return Err(errors);
        };
        let cert_err = |m: String| identity.cert_at.error(m);
        let shown = identity.cert.display();
        let leaf = chain[0].clone();
        let id = san::spiffe_id(&leaf).map_err(|e| cert_err(format!("{shown}: {e}")));
        let expiry = san::not_after(&leaf).map_err(|e| cert_err(format!("{shown}: {e}")));
        let signing = provider().key_provider.load_private_key(key).map_err(|e| {
            identity.key_at.error(format!(
                "{}: unsupported private key ({e}; expected ECDSA P-256/P-384, RSA or Ed25519)",
                identity.key.display()
            ))
        });
        let certified = signing.and_then(|signing| {
            let certified = CertifiedKey::new(chain, signing);
            certified.keys_match().map(|()| certified).map_err(|_| {
                identity.key_at.error(format!(
                    "{}: the key does not match the certificate in {shown}",
                    identity.key.display()
                ))
            })
        });
        let now = unix_now();
        let expiry = expiry.and_then(|(end, text)| {
            if end < now {
                Err(cert_err(format!(
                    "{shown}: certificate expired (notAfter {text})"
                )))
            } else {
                Ok(end)
            }
        });
        let roots = Arc::new(roots);
        let client_chain = if roots.is_empty() {
            None
        } else {
            WebPkiClientVerifier::builder_with_provider(roots.clone(), provider())
                .build()
                .map_err(|e| {
                    errors.push(identity.trust_at.first().map_or_else(
                        || {
                            identity
                                .cert_at
                                .error(format!("trust bundles unusable: {e}"))
                        },
                        |at| at.error(format!("trust bundles unusable: {e}")),
                    ))
                })
                .ok()
        };
        match (id, expiry, certified, client_chain) {
            (Ok(id), Ok(not_after), Ok(certified), Some(client_chain)) if errors.is_empty() => {
                Ok(Material {
                    key: Arc::new(certified),
                    roots,
                    client_chain,
                    id,
                    not_after,
                    cert_path: identity.cert.clone(),
                    files,
                })
            }
            (id, expiry, certified, _) => {
                errors.extend(id.err());
                errors.extend(expiry.err());
                errors.extend(certified.err());
                if errors.is_empty() {
                    errors.push(identity.cert_at.error("identity unusable"));
                }
                Err(errors)
            }
        }
    }
}

fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

fn read(path: &Path, at: &FieldLocation, what: &str) -> Result<Vec<u8>, ConfigError> {
    std::fs::read(path).map_err(|e| at.error(format!("cannot read {what} {}: {e}", path.display())))
}

fn read_certs(
    path: &Path,
    at: &FieldLocation,
    what: &str,
) -> Result<(Vec<CertificateDer<'static>>, String), ConfigError> {
    let bytes = read(path, at, what)?;
    let certs = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| at.error(format!("{}: not PEM certificates ({e})", path.display())))?;
    if certs.is_empty() {
        return Err(at.error(format!(
            "{}: no CERTIFICATE block (expected a PEM {what})",
            path.display()
        )));
    }
    Ok((certs, hex_sha256(&bytes)))
}

fn read_key(
    path: &Path,
    at: &FieldLocation,
) -> Result<(PrivateKeyDer<'static>, String), ConfigError> {
    let bytes = read(path, at, "private key")?;
    let key = PrivateKeyDer::from_pem_slice(&bytes).map_err(|e| {
        at.error(format!(
            "{}: no usable private key ({e}; expected PEM PKCS#8, PKCS#1 or SEC1)",
            path.display()
        ))
    })?;
    Ok((key, hex_sha256(&bytes)))
}

fn add_roots(
    roots: &mut RootCertStore,
    certs: Vec<CertificateDer<'static>>,
    path: &Path,
    at: &FieldLocation,
    errors: &mut Vec<ConfigError>,
) {
    let (added, ignored) = roots.add_parsable_certificates(certs);
    if added == 0 {
        errors.push(at.error(format!(
            "{}: no usable CA certificate ({ignored} unparsable)",
            path.display()
        )));
    }
}

/// The system's trust anchors (rustls-native-certs: the distribution's bundle), read once.
pub(crate) fn system_roots() -> Arc<RootCertStore> {
    static ROOTS: std::sync::OnceLock<Arc<RootCertStore>> = std::sync::OnceLock::new();
    ROOTS
        .get_or_init(|| {
            let found = rustls_native_certs::load_native_certs();
            for error in &found.errors {
                tracing::warn!(%error, "reading the system's CA certificates");
            }
            let mut roots = RootCertStore::empty();
            let (added, _) = roots.add_parsable_certificates(found.certs);
            tracing::debug!(added, "system CA certificates loaded");
            Arc::new(roots)
        })
        .clone()
}

/// Lowercase hex SHA-256.
pub fn hex_sha256(bytes: &[u8]) -> String {
    use std::fmt::Write;
    Sha256::digest(bytes)
        .iter()
        .fold(String::with_capacity(64), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}
