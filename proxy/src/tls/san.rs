//! What ferry reads from an X.509 certificate: the SPIFFE ID in its URI SAN and its validity
//! end. rustls and webpki verify chains and signatures but do not expose URI SANs, so the
//! certificate is parsed once more here (x509-parser, no verification features).

use ferry_filters::authorization::SpiffeId;
use x509_parser::extensions::GeneralName;
use x509_parser::prelude::{FromDer, X509Certificate};

/// Why a certificate carries no usable SPIFFE ID.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SanError {
    /// The DER does not parse as a certificate.
    #[error("not a parsable X.509 certificate")]
    Unparsable,
    /// No URI SAN at all.
    #[error("no URI SAN (expected a SPIFFE ID like spiffe://cluster.local/ns/NS/sa/SA)")]
    NoUri,
    /// An SVID has exactly one URI SAN (SPIFFE X.509-SVID §4.1).
    #[error("more than one URI SAN (a SPIFFE certificate has exactly one)")]
    ManyUris,
    /// The URI SAN is not a valid SPIFFE ID.
    #[error("URI SAN {uri:?} is not a SPIFFE ID: {reason}")]
    NotSpiffe {
        /// The URI as written.
        uri: String,
        /// Why it is not one.
        reason: String,
    },
}

/// The SPIFFE ID of a DER certificate.
pub fn spiffe_id(der: &[u8]) -> Result<SpiffeId, SanError> {
    let (_, cert) = X509Certificate::from_der(der).map_err(|_| SanError::Unparsable)?;
    let mut found = None;
    if let Ok(Some(san)) = cert.subject_alternative_name() {
        for name in &san.value.general_names {
            if let GeneralName::URI(uri) = name {
                if found.is_some() {
                    return Err(SanError::ManyUris);
                }
                found = Some(*uri);
            }
        }
    }
    let uri = found.ok_or(SanError::NoUri)?;
    SpiffeId::parse(uri).map_err(|e| SanError::NotSpiffe {
        uri: uri.to_owned(),
        reason: e.to_string(),
    })
}

/// The certificate's notAfter as Unix seconds, and as text for messages.
pub fn not_after(der: &[u8]) -> Result<(i64, String), SanError> {
    let (_, cert) = X509Certificate::from_der(der).map_err(|_| SanError::Unparsable)?;
    let end = cert.validity().not_after;
    Ok((end.timestamp(), end.to_string()))
}
