//! Raw mutual TLS and authorization types: the workload's `identity`, `listeners[].tls`,
//! `authorization` (listener and route) and `clusters[].tls`.

use schemars::JsonSchema;
use serde::Deserialize;

use super::scalars::{DurationText, Text};
use super::shorthand::Paths;

/// This workload's certificate, key and trust bundles (top-level `identity`).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Identity")]
pub struct IdentitySpec {
    /// PEM certificate chain, leaf first; its URI SAN is this workload's SPIFFE ID. Relative
    /// to the config file's directory.
    pub cert: Text,
    /// PEM private key of `cert` (PKCS#8, PKCS#1 or SEC1). Relative to the config file's
    /// directory.
    pub key: Text,
    /// CA bundles trusted for peers: one path or a list (more than one during a trust-anchor
    /// rotation). Relative to the config file's directory.
    pub trust: Paths,
}

/// How a listener terminates TLS.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "ListenerTls")]
pub struct ListenerTlsSpec {
    /// `strict` (mutual TLS only), `permissive` (TLS or plaintext on one port) or `disabled`.
    /// Default `disabled`. `strict` and `permissive` need a top-level `identity`.
    pub mode: Option<TlsModeSpec>,
    /// Which client identities may complete the handshake; omitted = any the trust bundles
    /// vouch for.
    pub peers: Option<IdentityMatcherSpec>,
    /// A handshake not finished within this is abandoned; > 0. Default `10s`.
    pub handshake_timeout: Option<DurationText>,
}

/// A listener's TLS mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(rename = "TlsMode")]
pub enum TlsModeSpec {
    /// Mutual TLS only: plaintext and clients without a certificate are refused.
    Strict,
    /// TLS and plaintext on one port; plaintext requests carry no identity.
    Permissive,
    /// Plaintext only.
    Disabled,
}

/// A SPIFFE ID matcher: exactly one of `exact`, `prefix`, `trust_domain`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(
    rename = "IdentityMatcher",
    extend("minProperties" = 1, "maxProperties" = 1)
)]
pub struct IdentityMatcherSpec {
    /// This SPIFFE ID only, e.g. `spiffe://cluster.local/ns/prep/sa/client`.
    pub exact: Option<Text>,
    /// SPIFFE IDs under this one, on whole path segments, e.g.
    /// `spiffe://cluster.local/ns/prep/` (a trailing `/` is allowed).
    pub prefix: Option<Text>,
    /// Any SPIFFE ID in this trust domain, written bare: `cluster.local`.
    pub trust_domain: Option<Text>,
}

/// A model name matcher: exactly one of `exact`, `prefix`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(
    rename = "ModelNameMatcher",
    extend("minProperties" = 1, "maxProperties" = 1)
)]
pub struct ModelNameMatcherSpec {
    /// This model name only.
    pub exact: Option<Text>,
    /// Model names starting with this text.
    pub prefix: Option<Text>,
}

/// Who may call a listener or a route, by peer identity and model.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Authorization")]
pub struct AuthorizationSpec {
    /// What happens to a request no rule allows: `allow` or `deny` (403 /
    /// PERMISSION_DENIED). Default `allow`.
    pub default: Option<AuthzDecisionSpec>,
    /// Tried in order; the first that matches the peer (and the model) allows the request.
    #[serde(default)]
    pub rules: Vec<AuthzRuleSpec>,
}

/// Allow or deny.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(rename = "AuthzDecision")]
pub enum AuthzDecisionSpec {
    /// Let the request through.
    Allow,
    /// 403 / PERMISSION_DENIED.
    Deny,
}

/// One authorization rule.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "AuthzRule")]
pub struct AuthzRuleSpec {
    /// Peer identities this rule admits (any one of them); at least one.
    #[schemars(length(min = 1))]
    pub allow: Vec<IdentityMatcherSpec>,
    /// Models the rule covers (any one of them); omitted or empty = any model, or none named.
    pub models: Option<Vec<ModelNameMatcherSpec>>,
}

/// How a cluster originates TLS to its endpoints.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "ClusterTls")]
pub struct ClusterTlsSpec {
    /// `mesh` (mutual TLS with `identity`, the server checked by SPIFFE ID) or `server`
    /// (server-authenticated TLS, the server checked by DNS name).
    pub mode: ClusterTlsModeSpec,
    /// `mesh` only: the SPIFFE ID the server must present; omitted = any the trust bundles
    /// vouch for.
    pub server: Option<IdentityMatcherSpec>,
    /// SNI to send (`server`: also the name the certificate must carry); a DNS name. Default:
    /// the endpoint's host name when it has one.
    pub sni: Option<Text>,
    /// `server` only: CA bundles to verify the server with, relative to the config file's
    /// directory; omitted or empty = the system's roots.
    pub ca: Option<Paths>,
}

/// How a cluster's TLS is authenticated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(rename = "ClusterTlsMode")]
pub enum ClusterTlsModeSpec {
    /// Mutual TLS to another sidecar, verified by SPIFFE ID.
    Mesh,
    /// TLS to a non-mesh upstream, verified by DNS name.
    Server,
}
