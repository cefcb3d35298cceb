//! Authorization by peer identity: who may call a listener or a route, and which models.
//!
//! The peer's identity is the SPIFFE ID (`spiffe://<trust-domain>/ns/<ns>/sa/<sa>`) in the URI
//! SAN of its client certificate, verified by the listener's mutual-TLS handshake and put in
//! the request's [`Arc<Connection>`](crate::connection::Connection) extension. The model is
//! the [`ModelRef`] extension routing puts on the request once it knows the model.
//!
//! Place in the stack: per route in the `[authorization]` slot, after the header edits and
//! trace context and before rate limits, tensor checks and translation, so a refused request
//! costs nothing further; at listener level under the error renderer. A request under both a
//! listener and a route policy must pass both. Routing learns the model, so a listener-level
//! policy placed before routing sees no model and its model-scoped rules never match.
//!
//! Settings ([`AuthorizationSettings`], one-to-one with the config's `authorization:` block):
//! an ordered list of [`Rule`]s, each a list of identity matchers ([`IdentityMatch`]: exact,
//! prefix on whole path segments, trust domain) and optionally of model matchers
//! ([`ModelMatch`]); and a [`Decision`] for requests no rule allows (default: allow). The
//! first rule whose identity list matches the peer, and whose model list matches the model
//! (an empty list matches any model, or none), allows the request. A request without a
//! verified identity (plaintext, no client certificate, no connection facts) or whose
//! identity is not a valid SPIFFE ID matches no rule; a rule with an empty identity list
//! matches nobody.
//!
//! Failure: the default decision is deny and no rule allowed → [`PermissionDenied`]: 403
//! `{"error": "permission denied"}` / gRPC PERMISSION_DENIED (7). The body never says why;
//! the cause ([`DenyCause`]) is logged at debug with the identity and model, and offered to the
//! proxy's `ferry_authz_denied_total` counter through [`AuthorizationLayer::on_deny`].

mod layer;
mod matcher;
mod spiffe;

#[cfg(test)]
mod tests;

use crate::connection::PeerIdentity;
use crate::model_name::ModelRef;

pub use self::layer::{Authorization, AuthorizationLayer, OnDeny, ResponseFuture};
pub use self::matcher::{IdentityMatch, IdentityPrefix, ModelMatch};
pub use self::spiffe::{SpiffeId, SpiffeIdError, TrustDomain};

/// A listener's or route's authorization policy. Config: `authorization: { default, rules }`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuthorizationSettings {
    /// What happens to a request no rule allows. Config: `default: allow | deny`.
    pub default: Decision,
    /// Tried in order; the first that matches allows.
    pub rules: Vec<Rule>,
}

/// Allow or deny. (Not named `Default`, which would shadow the standard trait.)
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Decision {
    /// Let the request through.
    #[default]
    Allow,
    /// Answer 403 / PERMISSION_DENIED.
    Deny,
}

/// One allow rule. Config: `{ allow: [...], models: [...] }`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rule {
    /// Peers this rule allows (any one of them); empty allows nobody.
    pub allow: Vec<IdentityMatch>,
    /// Models they may call (any one of them); empty means any model, or none named.
    pub models: Vec<ModelMatch>,
}

/// Why a request was denied: a fixed label for metrics and logs, never sent to the caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DenyCause {
    /// No verified peer identity: plaintext, no client certificate, or no connection facts.
    NoIdentity,
    /// The peer's identity is not a valid SPIFFE ID.
    InvalidIdentity,
    /// A rule allows the peer, but not for this model (or the model is not known).
    ModelNotAllowed,
    /// No rule allows the peer.
    NoRuleMatched,
}

/// A request refused by an authorization policy: 403 / PERMISSION_DENIED.
///
/// Displays only "permission denied" (that is the caller's answer); [`cause`](Self::cause) and
/// [`identity`](Self::identity) are for logs and metrics.
#[derive(Debug, Clone, thiserror::Error)]
#[error("permission denied")]
pub struct PermissionDenied {
    cause: DenyCause,
    identity: Option<PeerIdentity>,
}

// === impl AuthorizationSettings ===

impl AuthorizationSettings {
    /// Decides for a peer (`None`: no verified identity) and the model the request names.
    pub fn decide(
        &self,
        identity: Option<&PeerIdentity>,
        model: Option<&ModelRef>,
    ) -> Result<(), DenyCause> {
        let cause = match self.first_match(identity, model) {
            Ok(()) => return Ok(()),
            Err(cause) => cause,
        };
        match self.default {
            Decision::Allow => Ok(()),
            Decision::Deny => Err(cause),
        }
    }

    /// `Ok` if a rule allows the request, else why none did.
    fn first_match(
        &self,
        identity: Option<&PeerIdentity>,
        model: Option<&ModelRef>,
    ) -> Result<(), DenyCause> {
        let identity = identity.ok_or(DenyCause::NoIdentity)?;
        let (trust_domain, path) =
            spiffe::split(&identity.0).map_err(|_| DenyCause::InvalidIdentity)?;
        let mut cause = DenyCause::NoRuleMatched;
        for rule in &self.rules {
            if !rule
                .allow
                .iter()
                .any(|m| m.matches_parts(trust_domain, path))
            {
                continue;
            }
            if rule.allows_model(model) {
                return Ok(());
            }
            cause = DenyCause::ModelNotAllowed;
        }
        Err(cause)
    }
}

// === impl Rule ===

impl Rule {
    fn allows_model(&self, model: Option<&ModelRef>) -> bool {
        if self.models.is_empty() {
            return true;
        }
        model.is_some_and(|m| self.models.iter().any(|mm| mm.matches(&m.name)))
    }
}

// === impl DenyCause ===

impl DenyCause {
    /// The cause as a metric label: `no_identity`, `invalid_identity`, `model_not_allowed`,
    /// `no_rule_matched`.
    pub fn as_str(self) -> &'static str {
        match self {
            DenyCause::NoIdentity => "no_identity",
            DenyCause::InvalidIdentity => "invalid_identity",
            DenyCause::ModelNotAllowed => "model_not_allowed",
            DenyCause::NoRuleMatched => "no_rule_matched",
        }
    }
}

// === impl PermissionDenied ===

impl PermissionDenied {
    /// A refusal for `cause`, naming the peer for logs.
    pub fn new(cause: DenyCause, identity: Option<PeerIdentity>) -> Self {
        PermissionDenied { cause, identity }
    }

    /// Why the request was refused (named `cause`, not `reason`, so it is not confused with
    /// [`Classify::reason`](crate::failure::Classify::reason), always `permission_denied`).
    pub fn cause(&self) -> DenyCause {
        self.cause
    }

    /// The peer's identity as its certificate gave it, if it had one.
    pub fn identity(&self) -> Option<&PeerIdentity> {
        self.identity.as_ref()
    }
}
