//! SPIFFE ID checks for identity matchers (`{exact|prefix|trust_domain: ...}`), by the rules
//! of the SPIFFE ID specification: scheme `spiffe://` in lowercase; a non-empty trust domain of
//! lowercase letters, digits, `.`, `-` and `_` (no user info, no port, at most 255 bytes); a
//! path of non-empty segments of letters, digits, `.`, `-` and `_`, none `.` or `..`, no
//! trailing `/`; no query or fragment; at most 2048 bytes.
//!
//! The same rules as the authorization filter's parser (`filters::authorization::spiffe`),
//! which this crate cannot depend on: whatever passes here, the proxy can turn into the
//! filter's matchers. An `exact` ID must also have a path: the trust domain's own ID names no
//! workload, and writing it is almost always a mistake for `{trust_domain: ...}`.

use std::fmt;

/// Every SPIFFE ID starts with this.
const SCHEME: &str = "spiffe://";
/// Longest SPIFFE ID, in bytes (the specification's limit).
const MAX_ID_BYTES: usize = 2048;
/// Longest trust domain, in bytes (the specification's limit).
const MAX_TRUST_DOMAIN_BYTES: usize = 255;

const EXACT_EXAMPLE: &str = "\"spiffe://cluster.local/ns/prep/sa/client\"";
const PREFIX_EXAMPLE: &str = "\"spiffe://cluster.local/ns/prep/\"";

/// What is wrong with a SPIFFE ID, prefix or trust domain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    NotSpiffe,
    SchemeCase,
    TooLong(usize),
    QueryOrFragment,
    UserInfo,
    Port,
    EmptyTrustDomain,
    TrustDomainTooLong(usize),
    TrustDomainChar(char),
    NoPath,
    TrailingSlash,
    EmptySegment,
    DotSegment,
    PathChar(char),
}

/// `{exact: ...}`: a SPIFFE ID with a path.
pub(super) fn exact(text: &str) -> Result<(), String> {
    let fault = match split(text) {
        Ok((_, "")) => Fault::NoPath,
        Ok(_) => return Ok(()),
        Err(fault) => fault,
    };
    Err(match fault {
        Fault::NotSpiffe => {
            format!(
                "{text:?} is not a spiffe:// URI (expected a SPIFFE ID such as {EXACT_EXAMPLE})"
            )
        }
        Fault::NoPath => format!(
            "invalid SPIFFE ID {text:?}: {fault} (expected a workload's ID such as {EXACT_EXAMPLE}, or {{trust_domain: ...}} for a whole trust domain)"
        ),
        Fault::TrailingSlash => format!(
            "invalid SPIFFE ID {text:?}: {fault} (expected no trailing \"/\"; IDs under a path go in {{prefix: ...}})"
        ),
        _ => format!("invalid SPIFFE ID {text:?}: {fault} (expected e.g. {EXACT_EXAMPLE})"),
    })
}

/// `{prefix: ...}`: a SPIFFE ID (its path may be empty) with at most one trailing `/`.
pub(super) fn prefix(text: &str) -> Result<(), String> {
    let trimmed = text.strip_suffix('/').unwrap_or(text);
    match split(trimmed) {
        Ok(_) => Ok(()),
        Err(Fault::NotSpiffe) => Err(format!(
            "{text:?} is not a spiffe:// URI (expected a SPIFFE ID prefix such as {PREFIX_EXAMPLE}, or {{trust_domain: ...}} for a bare trust domain)"
        )),
        // `trimmed` lost one `/`; a second one shows as an empty last segment.
        Err(Fault::TrailingSlash) => Err(format!(
            "invalid SPIFFE ID prefix {text:?}: {} (expected e.g. {PREFIX_EXAMPLE})",
            Fault::EmptySegment
        )),
        Err(fault) => Err(format!(
            "invalid SPIFFE ID prefix {text:?}: {fault} (expected e.g. {PREFIX_EXAMPLE})"
        )),
    }
}

/// `{trust_domain: ...}`: a bare trust domain name.
pub(super) fn trust_domain(text: &str) -> Result<(), String> {
    if text
        .get(..SCHEME.len())
        .is_some_and(|s| s.eq_ignore_ascii_case(SCHEME))
    {
        return Err(format!(
            "trust domain {text:?} is a URI (expected a bare name such as \"cluster.local\")"
        ));
    }
    check_trust_domain(text).map_err(|fault| {
        format!("invalid trust domain {text:?}: {fault} (expected e.g. \"cluster.local\")")
    })
}

/// Splits a SPIFFE ID into its trust domain and its path (empty or starting with `/`).
fn split(text: &str) -> Result<(&str, &str), Fault> {
    if text.len() > MAX_ID_BYTES {
        return Err(Fault::TooLong(text.len()));
    }
    let Some(rest) = text.strip_prefix(SCHEME) else {
        let upper = text
            .get(..SCHEME.len())
            .is_some_and(|s| s.eq_ignore_ascii_case(SCHEME));
        return Err(if upper {
            Fault::SchemeCase
        } else {
            Fault::NotSpiffe
        });
    };
    if rest.contains(['?', '#']) {
        return Err(Fault::QueryOrFragment);
    }
    let (trust_domain, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    check_trust_domain(trust_domain)?;
    check_path(path)?;
    Ok((trust_domain, path))
}

fn check_trust_domain(td: &str) -> Result<(), Fault> {
    if td.is_empty() {
        return Err(Fault::EmptyTrustDomain);
    }
    if td.contains('@') {
        return Err(Fault::UserInfo);
    }
    if td.contains(':') {
        return Err(Fault::Port);
    }
    if td.len() > MAX_TRUST_DOMAIN_BYTES {
        return Err(Fault::TrustDomainTooLong(td.len()));
    }
    match td
        .chars()
        .find(|&c| !matches!(c, 'a'..='z' | '0'..='9' | '.' | '-' | '_'))
    {
        Some(c) => Err(Fault::TrustDomainChar(c)),
        None => Ok(()),
    }
}

/// `path` is empty or `/seg(/seg)*`.
fn check_path(path: &str) -> Result<(), Fault> {
    let Some(segments) = path.strip_prefix('/') else {
        return Ok(());
    };
    let mut segments = segments.split('/').peekable();
    while let Some(segment) = segments.next() {
        match segment {
            "" if segments.peek().is_none() => return Err(Fault::TrailingSlash),
            "" => return Err(Fault::EmptySegment),
            "." | ".." => return Err(Fault::DotSegment),
            _ => {}
        }
        if let Some(c) = segment
            .chars()
            .find(|&c| !matches!(c, 'a'..='z' | 'A'..='Z' | '0'..='9' | '.' | '-' | '_'))
        {
            return Err(Fault::PathChar(c));
        }
    }
    Ok(())
}

// === impl Fault ===

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Fault::NotSpiffe => f.write_str("not a spiffe:// URI"),
            Fault::SchemeCase => f.write_str("the scheme must be lowercase \"spiffe://\""),
            Fault::TooLong(n) => write!(f, "{n} bytes long, over {MAX_ID_BYTES}"),
            Fault::QueryOrFragment => f.write_str("a SPIFFE ID has no query or fragment"),
            Fault::UserInfo => f.write_str("a SPIFFE ID has no user info"),
            Fault::Port => f.write_str("a SPIFFE ID has no port"),
            Fault::EmptyTrustDomain => f.write_str("empty trust domain"),
            Fault::TrustDomainTooLong(n) => write!(
                f,
                "trust domain {n} bytes long, over {MAX_TRUST_DOMAIN_BYTES}"
            ),
            Fault::TrustDomainChar(c) => write!(
                f,
                "{c:?} in the trust domain; only lowercase letters, digits, '.', '-' and '_' are allowed"
            ),
            Fault::NoPath => f.write_str("no path"),
            Fault::TrailingSlash => f.write_str("trailing \"/\""),
            Fault::EmptySegment => f.write_str("empty path segment \"//\""),
            Fault::DotSegment => f.write_str("\".\" or \"..\" path segment"),
            Fault::PathChar(c) => write!(
                f,
                "{c:?} in the path; only letters, digits, '.', '-' and '_' are allowed"
            ),
        }
    }
}

#[cfg(test)]
mod tests;
