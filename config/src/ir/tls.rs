//! Mutual TLS and authorization settings: the workload's identity, how a listener terminates
//! TLS, which peers and models it admits, and how a cluster originates TLS.
//!
//! Files (certificates, keys, CA bundles) are named here, resolved against the config file's
//! directory, and read by the proxy (at start, `ferry validate`, reload and rotation), which
//! reports their faults at the recorded [`FieldLocation`].

use std::path::PathBuf;
use std::time::Duration;

use super::FieldLocation;

/// This workload's certificate (top-level `identity:`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// PEM certificate chain, leaf first.
    pub cert: PathBuf,
    /// Where `cert` is written.
    pub cert_at: FieldLocation,
    /// PEM private key (PKCS#8, PKCS#1 or SEC1).
    pub key: PathBuf,
    /// Where `key` is written.
    pub key_at: FieldLocation,
    /// CA bundles trusted for peers (more than one during a trust-anchor rotation).
    pub trust: Vec<PathBuf>,
    /// Where each of `trust` is written, index for index.
    pub trust_at: Vec<FieldLocation>,
}

/// How a listener treats TLS (`listeners[].tls`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListenerTls {
    /// Strict, permissive or disabled. Default disabled.
    pub mode: TlsMode,
    /// Which client identities may complete the handshake; `None` = any the trust bundles
    /// vouch for.
    pub peers: Option<IdentityMatcher>,
    /// A handshake not finished within this is abandoned. Default 10s.
    pub handshake_timeout: Duration,
}

impl Default for ListenerTls {
    fn default() -> Self {
        ListenerTls {
            mode: TlsMode::Disabled,
            peers: None,
            handshake_timeout: crate::defaults::TLS_HANDSHAKE_TIMEOUT,
        }
    }
}

/// A listener's TLS mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TlsMode {
    /// Plaintext only (as before TLS existed).
    #[default]
    Disabled,
    /// TLS and plaintext on one port, told apart by the first bytes; plaintext requests carry
    /// no identity.
    Permissive,
    /// Mutual TLS only: plaintext clients and clients without a certificate are refused.
    Strict,
}

/// Matches a SPIFFE ID. Every string has been checked as a SPIFFE ID / prefix / trust domain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IdentityMatcher {
    /// `{ exact: spiffe://td/ns/a/sa/b }`.
    Exact(String),
    /// `{ prefix: spiffe://td/ns/a/ }`: whole path segments (a trailing `/` is allowed).
    Prefix(String),
    /// `{ trust_domain: td }`: any ID in this trust domain.
    TrustDomain(String),
}

/// Matches a model name (`{ exact: resnet } | { prefix: resnet }`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelNameMatcher {
    /// This name only.
    Exact(String),
    /// Names starting with this text.
    Prefix(String),
}

/// `authorization:` on a listener or a route.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Authorization {
    /// Allow or deny what no rule allows. Default allow.
    pub default: AuthzDecision,
    /// Tried in order; the first whose `allow` matches the peer and whose `models` (if any)
    /// match the model allows the request.
    pub rules: Vec<AuthzRule>,
}

/// Allow or deny.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AuthzDecision {
    /// Let the request through.
    #[default]
    Allow,
    /// 403 / PERMISSION_DENIED.
    Deny,
}

/// One authorization rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthzRule {
    /// Peer identities this rule admits; never empty.
    pub allow: Vec<IdentityMatcher>,
    /// Models this rule covers; empty = any model (or none).
    pub models: Vec<ModelNameMatcher>,
}

/// How a cluster originates TLS (`clusters[].tls`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClusterTls {
    /// Mutual TLS to another sidecar: present `identity`, verify the server's chain against the
    /// identity's trust bundles and its SPIFFE ID against `server` (never DNS names).
    Mesh {
        /// The identity the server must present; `None` = any ID the trust bundles vouch for.
        server: Option<IdentityMatcher>,
        /// SNI to send; `None` = the endpoint's host name when it has one, else none.
        sni: Option<String>,
    },
    /// Plain (server-authenticated) TLS to a non-mesh upstream, verified by DNS name.
    Server {
        /// Name sent as SNI and checked against the certificate; `None` = the endpoint's host.
        sni: Option<String>,
        /// CA bundles; empty = the system's roots.
        ca: Vec<PathBuf>,
        /// Where each of `ca` is written.
        ca_at: Vec<FieldLocation>,
    },
}
