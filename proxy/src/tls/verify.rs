//! Certificate verification by SPIFFE ID. Chains are verified against the current identity's
//! trust bundles (webpki, through rustls); then the peer's single URI SAN must be a SPIFFE ID
//! the listener's `peers` (inbound) or the cluster's `server` (outbound) matcher accepts. DNS
//! names are never looked at in mesh mode.

use std::sync::Arc;

use ferry_filters::authorization::IdentityMatch;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::server::ParsedCertificate;
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{CertificateError, DigitallySignedStruct, DistinguishedName, Error, SignatureScheme};
use rustls_pki_types::{CertificateDer, ServerName, UnixTime};

use super::san;
use super::store::IdentityStore;

/// Why a certificate that chains to a trusted anchor was still refused.
#[derive(Debug, thiserror::Error)]
pub enum BadIdentity {
    /// No usable SPIFFE ID in it.
    #[error("{0}")]
    San(#[from] san::SanError),
    /// A SPIFFE ID the matcher does not accept.
    #[error("identity {0} is not allowed")]
    NotAllowed(String),
    /// No identity is loaded, so nothing can be verified.
    #[error("no identity loaded")]
    NoIdentity,
}

fn refuse(why: BadIdentity) -> Error {
    Error::InvalidCertificate(CertificateError::Other(rustls::OtherError(Arc::new(why))))
}

/// Checks the SPIFFE ID of `end_entity` against `allowed` (`None`: any valid ID).
fn check_identity(
    end_entity: &CertificateDer<'_>,
    allowed: Option<&IdentityMatch>,
) -> Result<(), Error> {
    let id = san::spiffe_id(end_entity).map_err(|e| refuse(e.into()))?;
    match allowed {
        Some(m) if !m.matches(&id) => Err(refuse(BadIdentity::NotAllowed(id.to_string()))),
        _ => Ok(()),
    }
}

/// Inbound: verifies client certificates (mandatory on TLS connections).
#[derive(Debug)]
pub struct ClientVerifier {
    store: Arc<IdentityStore>,
    peers: Option<IdentityMatch>,
    algorithms: WebPkiSupportedAlgorithms,
}

impl ClientVerifier {
    /// Verifies against the store's trust bundles and `peers`.
    pub fn new(store: Arc<IdentityStore>, peers: Option<IdentityMatch>) -> Self {
        ClientVerifier {
            store,
            peers,
            algorithms: super::material::provider().signature_verification_algorithms,
        }
    }
}

impl ClientCertVerifier for ClientVerifier {
    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        // The anchors change on rotation; clients send their certificate without hints.
        &[]
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        now: UnixTime,
    ) -> Result<ClientCertVerified, Error> {
        let material = self
            .store
            .current()
            .ok_or_else(|| refuse(BadIdentity::NoIdentity))?;
        material
            .client_chain
            .verify_client_cert(end_entity, intermediates, now)?;
        check_identity(end_entity, self.peers.as_ref())?;
        Ok(ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

/// Outbound mesh: verifies the server's chain and SPIFFE ID (the name dialled is ignored).
#[derive(Debug)]
pub struct ServerVerifier {
    store: Arc<IdentityStore>,
    server: Option<IdentityMatch>,
    algorithms: WebPkiSupportedAlgorithms,
}

impl ServerVerifier {
    /// Verifies against the store's trust bundles and `server`.
    pub fn new(store: Arc<IdentityStore>, server: Option<IdentityMatch>) -> Self {
        ServerVerifier {
            store,
            server,
            algorithms: super::material::provider().signature_verification_algorithms,
        }
    }
}

impl ServerCertVerifier for ServerVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        let material = self
            .store
            .current()
            .ok_or_else(|| refuse(BadIdentity::NoIdentity))?;
        let cert = ParsedCertificate::try_from(end_entity)?;
        rustls::client::verify_server_cert_signed_by_trust_anchor(
            &cert,
            &material.roots,
            intermediates,
            now,
            self.algorithms.all,
        )?;
        check_identity(end_entity, self.server.as_ref())?;
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}
