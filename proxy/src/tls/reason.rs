//! Why a handshake was refused, as a fixed set of metric label values.

use rustls::{AlertDescription, CertificateError, Error};

use super::verify::BadIdentity;

/// A refused connection's reason (`ferry_tls_handshake_failures_total{reason}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// Plaintext bytes on a strict listener.
    Plaintext,
    /// The client sent no certificate.
    NoClientCert,
    /// The peer's certificate has expired (or is not valid yet).
    Expired,
    /// The chain does not lead to a trusted anchor.
    UnknownCa,
    /// No SPIFFE URI SAN, or one the matcher refuses (e.g. a foreign trust domain).
    BadIdentity,
    /// A signature did not verify (the peer does not hold the key of its certificate).
    BadSignature,
    /// The peer refused us (its alert), e.g. our certificate is not trusted there.
    PeerRefused,
    /// Not TLS, or TLS the stack refuses (versions, ciphers, malformed messages).
    Protocol,
    /// The handshake did not finish within `handshake_timeout`.
    Timeout,
    /// The connection failed underneath.
    Io,
}

impl Reason {
    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Plaintext => "plaintext",
            Reason::NoClientCert => "no_client_cert",
            Reason::Expired => "expired",
            Reason::UnknownCa => "unknown_ca",
            Reason::BadIdentity => "bad_identity",
            Reason::BadSignature => "bad_signature",
            Reason::PeerRefused => "peer_refused",
            Reason::Protocol => "protocol",
            Reason::Timeout => "timeout",
            Reason::Io => "io",
        }
    }

    /// Classifies a handshake's I/O error (tokio-rustls wraps rustls errors in `io::Error`).
    pub fn of_io(error: &std::io::Error) -> Reason {
        match error.get_ref().and_then(|e| e.downcast_ref::<Error>()) {
            Some(e) => Reason::of(e),
            None if error.kind() == std::io::ErrorKind::InvalidData => Reason::Protocol,
            None => Reason::Io,
        }
    }

    /// Classifies a rustls error.
    pub fn of(error: &Error) -> Reason {
        match error {
            Error::NoCertificatesPresented => Reason::NoClientCert,
            Error::InvalidCertificate(c) => match c {
                CertificateError::Expired
                | CertificateError::ExpiredContext { .. }
                | CertificateError::NotValidYet
                | CertificateError::NotValidYetContext { .. } => Reason::Expired,
                CertificateError::UnknownIssuer => Reason::UnknownCa,
                CertificateError::BadSignature => Reason::BadSignature,
                CertificateError::Other(other)
                    if other.0.downcast_ref::<BadIdentity>().is_some() =>
                {
                    Reason::BadIdentity
                }
                CertificateError::NotValidForName
                | CertificateError::NotValidForNameContext { .. } => Reason::BadIdentity,
                _ => Reason::Protocol,
            },
            Error::AlertReceived(
                AlertDescription::BadCertificate
                | AlertDescription::UnknownCA
                | AlertDescription::CertificateExpired
                | AlertDescription::CertificateUnknown
                | AlertDescription::AccessDenied
                | AlertDescription::DecryptError,
            ) => Reason::PeerRefused,
            _ => Reason::Protocol,
        }
    }
}
