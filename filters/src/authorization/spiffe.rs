//! SPIFFE IDs (`spiffe://<trust-domain>/<path>`) parsed and validated once, by the rules of the
//! SPIFFE ID specification: the `spiffe` scheme in lowercase; a non-empty trust domain of
//! lowercase letters, digits, `.`, `-` and `_` (no user info, no port); a path of non-empty
//! segments of letters, digits, `.`, `-` and `_`, none of them `.` or `..`, no trailing `/`;
//! no query, no fragment, no percent-encoding. Anything else is a typed [`SpiffeIdError`].
//!
//! The same checks run, without allocating, on the peer identity of every request
//! ([`split`]): a certificate's URI SAN is text the peer chose, so `spiffe://td/ns/a/../b` must
//! not reach a prefix comparison.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

/// The scheme and authority separator every SPIFFE ID starts with.
const SCHEME: &str = "spiffe://";

/// Longest SPIFFE ID accepted, in bytes (the specification's limit for the whole URI).
const MAX_ID_BYTES: usize = 2048;

/// Longest trust domain accepted, in bytes (the specification's limit).
const MAX_TRUST_DOMAIN_BYTES: usize = 255;

/// A validated SPIFFE ID, e.g. `spiffe://cluster.local/ns/prep/sa/client`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SpiffeId {
    text: Arc<str>,
    /// Where the path starts in `text` (the end of the trust domain).
    path_at: usize,
}

/// A validated SPIFFE trust domain, e.g. `cluster.local`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TrustDomain(Arc<str>);

/// Why a text is not a SPIFFE ID (or a trust domain).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpiffeIdError {
    /// It does not start with `spiffe://`.
    #[error("a SPIFFE ID starts with \"spiffe://\"")]
    Scheme,
    /// Nothing between `spiffe://` and the path.
    #[error("the trust domain is empty")]
    EmptyTrustDomain,
    /// A character a trust domain may not hold (uppercase, `:`, `@`, ...).
    #[error(
        "the trust domain may hold only lowercase letters, digits, '.', '-' and '_' (found {0:?})"
    )]
    TrustDomainChar(char),
    /// `//` or a trailing `/`.
    #[error("empty path segment (\"//\" or a trailing \"/\")")]
    EmptySegment,
    /// A `.` or `..` segment.
    #[error("\".\" and \"..\" path segments are not allowed")]
    DotSegment,
    /// A character a path segment may not hold (`%`, `:`, ...).
    #[error("path segments may hold only letters, digits, '.', '-' and '_' (found {0:?})")]
    PathChar(char),
    /// A `?query` or `#fragment`.
    #[error("a SPIFFE ID has no query or fragment")]
    QueryOrFragment,
    /// Over the specification's length limits.
    #[error("too long ({0} bytes)")]
    TooLong(usize),
}

/// Splits and validates a SPIFFE ID without allocating: its trust domain and its path (empty,
/// or starting with `/`).
pub(crate) fn split(text: &str) -> Result<(&str, &str), SpiffeIdError> {
    if text.len() > MAX_ID_BYTES {
        return Err(SpiffeIdError::TooLong(text.len()));
    }
    let rest = text.strip_prefix(SCHEME).ok_or(SpiffeIdError::Scheme)?;
    if rest.contains(['?', '#']) {
        return Err(SpiffeIdError::QueryOrFragment);
    }
    let (trust_domain, path) = match rest.find('/') {
        Some(at) => rest.split_at(at),
        None => (rest, ""),
    };
    check_trust_domain(trust_domain)?;
    check_path(path)?;
    Ok((trust_domain, path))
}

fn check_trust_domain(td: &str) -> Result<(), SpiffeIdError> {
    if td.is_empty() {
        return Err(SpiffeIdError::EmptyTrustDomain);
    }
    if td.len() > MAX_TRUST_DOMAIN_BYTES {
        return Err(SpiffeIdError::TooLong(td.len()));
    }
    match td
        .chars()
        .find(|&c| !matches!(c, 'a'..='z' | '0'..='9' | '.' | '-' | '_'))
    {
        Some(c) => Err(SpiffeIdError::TrustDomainChar(c)),
        None => Ok(()),
    }
}

/// `path` is empty or `/seg(/seg)*`.
fn check_path(path: &str) -> Result<(), SpiffeIdError> {
    let Some(segments) = path.strip_prefix('/') else {
        return Ok(());
    };
    for segment in segments.split('/') {
        match segment {
            "" => return Err(SpiffeIdError::EmptySegment),
            "." | ".." => return Err(SpiffeIdError::DotSegment),
            _ => {}
        }
        if let Some(c) = segment
            .chars()
            .find(|&c| !matches!(c, 'a'..='z' | 'A'..='Z' | '0'..='9' | '.' | '-' | '_'))
        {
            return Err(SpiffeIdError::PathChar(c));
        }
    }
    Ok(())
}

// === impl SpiffeId ===

impl SpiffeId {
    /// Parses and validates `text`.
    pub fn parse(text: &str) -> Result<Self, SpiffeIdError> {
        let (trust_domain, _) = split(text)?;
        Ok(SpiffeId {
            text: Arc::from(text),
            path_at: SCHEME.len() + trust_domain.len(),
        })
    }

    /// The whole ID.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The trust domain, e.g. `cluster.local`.
    pub fn trust_domain(&self) -> &str {
        self.text.get(SCHEME.len()..self.path_at).unwrap_or("")
    }

    /// The path: empty (the trust domain's own ID) or `/seg(/seg)*`.
    pub fn path(&self) -> &str {
        self.text.get(self.path_at..).unwrap_or("")
    }
}

impl FromStr for SpiffeId {
    type Err = SpiffeIdError;

    fn from_str(s: &str) -> Result<Self, SpiffeIdError> {
        Self::parse(s)
    }
}

impl fmt::Display for SpiffeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

// === impl TrustDomain ===

impl TrustDomain {
    /// Parses and validates a trust domain name (`cluster.local`, not `spiffe://cluster.local`).
    pub fn parse(text: &str) -> Result<Self, SpiffeIdError> {
        check_trust_domain(text)?;
        Ok(TrustDomain(Arc::from(text)))
    }

    /// The trust domain's name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl FromStr for TrustDomain {
    type Err = SpiffeIdError;

    fn from_str(s: &str) -> Result<Self, SpiffeIdError> {
        Self::parse(s)
    }
}

impl fmt::Display for TrustDomain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests;
