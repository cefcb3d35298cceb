//! What an authorization rule matches: the peer's identity ([`IdentityMatch`]: exact, prefix
//! on whole path segments, or trust domain) and the model a request names ([`ModelMatch`]).
//!
//! Prefixes compare parsed parts, never raw text: the trust domains must be equal and the
//! prefix's path must end at a segment boundary of the peer's path, so
//! `spiffe://cluster.local` never accepts `spiffe://cluster.local.evil/...` and
//! `spiffe://td/ns/prep/` never accepts `spiffe://td/ns/prepx/...`.

use std::sync::Arc;

use super::spiffe::{SpiffeId, SpiffeIdError, TrustDomain};

/// Matches a peer's SPIFFE ID. Config: `{ exact: ... } | { prefix: ... } | { trust_domain: ... }`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IdentityMatch {
    /// This ID and no other.
    Exact(SpiffeId),
    /// IDs in this trust domain whose path starts with this prefix's, segment by segment.
    Prefix(IdentityPrefix),
    /// Every ID in this trust domain.
    TrustDomain(TrustDomain),
}

/// A SPIFFE ID prefix on whole path segments: `spiffe://td/ns/prep/` (or without the trailing
/// `/`: the same prefix) accepts `spiffe://td/ns/prep` and `spiffe://td/ns/prep/sa/x`;
/// `spiffe://td` (or `spiffe://td/`) accepts every ID in trust domain `td`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdentityPrefix {
    trust_domain: TrustDomain,
    /// Empty, or `/seg(/seg)*` without a trailing `/`.
    path: Arc<str>,
}

/// Matches the name of the model a request names (its version is not looked at).
/// Config: `{ exact: resnet } | { prefix: resnet }`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelMatch {
    /// This name and no other.
    Exact(String),
    /// Names starting with this text (plain text, not segments: `resnet` accepts `resnet50`).
    Prefix(String),
}

// === impl IdentityMatch ===

impl IdentityMatch {
    /// `{ exact: spiffe://... }`.
    pub fn exact(id: &str) -> Result<Self, SpiffeIdError> {
        SpiffeId::parse(id).map(IdentityMatch::Exact)
    }

    /// `{ prefix: spiffe://.../ }`.
    pub fn prefix(prefix: &str) -> Result<Self, SpiffeIdError> {
        IdentityPrefix::parse(prefix).map(IdentityMatch::Prefix)
    }

    /// `{ trust_domain: cluster.local }`.
    pub fn trust_domain(name: &str) -> Result<Self, SpiffeIdError> {
        TrustDomain::parse(name).map(IdentityMatch::TrustDomain)
    }

    /// Whether a peer whose validated ID splits into `trust_domain` and `path` matches.
    pub(crate) fn matches_parts(&self, trust_domain: &str, path: &str) -> bool {
        match self {
            IdentityMatch::Exact(id) => id.trust_domain() == trust_domain && id.path() == path,
            IdentityMatch::Prefix(prefix) => prefix.matches_parts(trust_domain, path),
            IdentityMatch::TrustDomain(td) => td.as_str() == trust_domain,
        }
    }

    /// Whether `id` matches.
    pub fn matches(&self, id: &SpiffeId) -> bool {
        self.matches_parts(id.trust_domain(), id.path())
    }
}

// === impl IdentityPrefix ===

impl IdentityPrefix {
    /// Parses a prefix: a SPIFFE ID, optionally with one trailing `/`.
    pub fn parse(text: &str) -> Result<Self, SpiffeIdError> {
        let id = SpiffeId::parse(text.strip_suffix('/').unwrap_or(text))?;
        Ok(IdentityPrefix {
            trust_domain: TrustDomain::parse(id.trust_domain())?,
            path: Arc::from(id.path()),
        })
    }

    /// The prefix's trust domain.
    pub fn trust_domain(&self) -> &TrustDomain {
        &self.trust_domain
    }

    /// The prefix's path: empty, or `/seg(/seg)*` without a trailing `/`.
    pub fn path(&self) -> &str {
        &self.path
    }

    fn matches_parts(&self, trust_domain: &str, path: &str) -> bool {
        self.trust_domain.as_str() == trust_domain
            && path
                .strip_prefix(&*self.path)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
    }
}

// === impl ModelMatch ===

impl ModelMatch {
    /// Whether the model named `name` matches.
    pub fn matches(&self, name: &str) -> bool {
        match self {
            ModelMatch::Exact(exact) => name == exact,
            ModelMatch::Prefix(prefix) => name.starts_with(prefix.as_str()),
        }
    }
}
