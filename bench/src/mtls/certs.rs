//! Throwaway SPIFFE certificates for the mutual-TLS scenarios, made at the start of a run: one
//! ECDSA P-256 CA and two ECDSA P-256 workload certificates whose only SAN is a SPIFFE URI
//! (the shape an Istio, Linkerd or SPIRE mesh issues), written as PEM into the run's work
//! directory for every proxy to read.

use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose, PKCS_ECDSA_P256_SHA256, SanType,
};

use crate::error::{BenchError, IoContext, Result};

/// The trust domain every bench identity lives in.
pub const TRUST_DOMAIN: &str = "cluster.local";
/// The SPIFFE ID of the server side of the hop (ferry or Envoy inbound).
pub const INBOUND_ID: &str = "spiffe://cluster.local/ns/bench/sa/inbound";
/// The SPIFFE ID of the client side of the hop (ferry or Envoy outbound, the handshake client).
pub const OUTBOUND_ID: &str = "spiffe://cluster.local/ns/bench/sa/outbound";

/// PEM files of one workload.
#[derive(Debug, Clone)]
pub struct Workload {
    /// Certificate chain (the leaf; the CA is in the trust bundle).
    pub cert: PathBuf,
    /// PKCS#8 private key.
    pub key: PathBuf,
}

/// The CA bundle and the two workloads' files.
#[derive(Debug, Clone)]
pub struct Certs {
    /// The CA certificate, every side's trust bundle.
    pub ca: PathBuf,
    /// The server side of the hop.
    pub inbound: Workload,
    /// The client side of the hop.
    pub outbound: Workload,
}

// === impl Certs ===

impl Certs {
    /// Generates the CA and both workloads into `dir` (created when missing).
    pub fn generate(dir: &Path) -> Result<Self> {
        std::fs::create_dir_all(dir).ctx(|| format!("creating {}", dir.display()))?;
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).map_err(cert_error)?;
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(DnType::CommonName, "ferry-bench CA");
        ca_params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let ca = CertifiedIssuer::self_signed(ca_params, p256()?).map_err(cert_error)?;
        let ca_path = dir.join("ca.crt");
        write(&ca_path, &ca.pem())?;
        let leaf = |name: &str, id: &str| -> Result<Workload> {
            let key = p256()?;
            let mut params = CertificateParams::new(Vec::<String>::new()).map_err(cert_error)?;
            params.distinguished_name.push(DnType::CommonName, name);
            params.subject_alt_names = vec![SanType::URI(id.try_into().map_err(cert_error)?)];
            params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
            params.extended_key_usages = vec![
                ExtendedKeyUsagePurpose::ServerAuth,
                ExtendedKeyUsagePurpose::ClientAuth,
            ];
            let cert = params.signed_by(&key, &ca).map_err(cert_error)?;
            let files = Workload {
                cert: dir.join(format!("{name}.crt")),
                key: dir.join(format!("{name}.key")),
            };
            write(&files.cert, &cert.pem())?;
            write(&files.key, &key.serialize_pem())?;
            Ok(files)
        };
        let inbound = leaf("inbound", INBOUND_ID)?;
        let outbound = leaf("outbound", OUTBOUND_ID)?;
        Ok(Self {
            ca: ca_path,
            inbound,
            outbound,
        })
    }
}

fn p256() -> Result<KeyPair> {
    KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).map_err(cert_error)
}

fn write(path: &Path, pem: &str) -> Result<()> {
    std::fs::write(path, pem).ctx(|| format!("writing {}", path.display()))
}

fn cert_error(e: impl std::fmt::Display) -> BenchError {
    BenchError::Process(format!("generating bench certificates: {e}"))
}
