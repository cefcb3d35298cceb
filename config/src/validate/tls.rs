//! Mutual TLS and authorization: the top-level `identity`, `listeners[].tls`, `authorization`
//! (listener and route) and `clusters[].tls`.
//!
//! Files are only named here: each path is resolved against the config file's directory and
//! its position recorded, so the proxy, which reads them, reports a missing file, bad PEM or a
//! key that does not match its certificate at `file:line:col`.

use std::path::PathBuf;

use super::Ctx;
use super::spiffe;
use super::values::parse_sni;
use crate::defaults;
use crate::ir::{
    Authorization, AuthzDecision, AuthzRule, ClusterTls, FieldLocation, Identity, IdentityMatcher,
    ListenerTls, ModelNameMatcher, TlsMode,
};
use crate::raw::{
    AuthorizationSpec, AuthzDecisionSpec, AuthzRuleSpec, ClusterTlsModeSpec, ClusterTlsSpec,
    IdentityMatcherSpec, IdentitySpec, ListenerTlsSpec, ModelNameMatcherSpec, Paths, Text,
    TlsModeSpec,
};

/// The top-level `identity`; `None` when absent or invalid (the error is then recorded).
pub(super) fn identity(ctx: &mut Ctx<'_>, spec: Option<&IdentitySpec>) -> Option<Identity> {
    let spec = spec?;
    let cert = file(ctx, "identity.cert", &spec.cert);
    let key = file(ctx, "identity.key", &spec.key);
    let trust = files(ctx, "identity.trust", &spec.trust);
    if spec.trust.is_empty() {
        ctx.error(
            "identity.trust",
            "empty list (expected at least one CA bundle, e.g. trust: [/var/run/ferry/ca.crt])",
        );
        return None;
    }
    let ((cert, cert_at), (key, key_at)) = (cert?, key?);
    let (trust, trust_at) = trust?;
    Some(Identity {
        cert,
        cert_at,
        key,
        key_at,
        trust,
        trust_at,
    })
}

/// `listeners[i].tls`; `has_identity` says whether the file has a top-level `identity`.
pub(super) fn listener_tls(
    ctx: &mut Ctx<'_>,
    path: &str,
    spec: Option<&ListenerTlsSpec>,
    has_identity: bool,
) -> ListenerTls {
    let Some(spec) = spec else {
        return ListenerTls::default();
    };
    let mode = match spec.mode {
        None | Some(TlsModeSpec::Disabled) => TlsMode::Disabled,
        Some(TlsModeSpec::Permissive) => TlsMode::Permissive,
        Some(TlsModeSpec::Strict) => TlsMode::Strict,
    };
    if mode != TlsMode::Disabled && !has_identity {
        let name = if mode == TlsMode::Strict {
            "strict"
        } else {
            "permissive"
        };
        ctx.error(
            &format!("{path}.mode"),
            format!(
                "mode {name} needs a top-level identity (expected identity: {{cert, key, trust}}, or mode: disabled)"
            ),
        );
    }
    let timeout_at = format!("{path}.handshake_timeout");
    let handshake_timeout = ctx.duration_or(
        &timeout_at,
        spec.handshake_timeout.as_ref(),
        defaults::TLS_HANDSHAKE_TIMEOUT,
    );
    if handshake_timeout.is_zero() {
        ctx.error(
            &timeout_at,
            "invalid handshake_timeout 0s (expected a duration > 0, e.g. \"10s\")",
        );
    }
    ListenerTls {
        mode,
        peers: spec
            .peers
            .as_ref()
            .and_then(|p| identity_matcher(ctx, &format!("{path}.peers"), p)),
        handshake_timeout,
    }
}

/// `authorization` on a listener or a route.
pub(super) fn authorization(
    ctx: &mut Ctx<'_>,
    path: &str,
    spec: Option<&AuthorizationSpec>,
) -> Option<Authorization> {
    let spec = spec?;
    let rules = spec
        .rules
        .iter()
        .enumerate()
        .map(|(i, r)| rule(ctx, &format!("{path}.rules[{i}]"), r))
        .collect::<Vec<_>>();
    Some(Authorization {
        default: match spec.default {
            None | Some(AuthzDecisionSpec::Allow) => AuthzDecision::Allow,
            Some(AuthzDecisionSpec::Deny) => AuthzDecision::Deny,
        },
        // Stand-ins for bad rules are never used: their errors stop the config.
        rules: rules.into_iter().flatten().collect(),
    })
}

fn rule(ctx: &mut Ctx<'_>, path: &str, spec: &AuthzRuleSpec) -> Option<AuthzRule> {
    if spec.allow.is_empty() {
        ctx.error(
            &format!("{path}.allow"),
            "empty list would allow nobody (expected at least one peer, e.g. allow: [{trust_domain: cluster.local}])",
        );
    }
    let allow: Vec<_> = spec
        .allow
        .iter()
        .enumerate()
        .map(|(i, m)| identity_matcher(ctx, &format!("{path}.allow[{i}]"), m))
        .collect();
    let models: Vec<_> = spec
        .models
        .iter()
        .flatten()
        .enumerate()
        .map(|(i, m)| model_matcher(ctx, &format!("{path}.models[{i}]"), m))
        .collect();
    Some(AuthzRule {
        allow: allow.into_iter().collect::<Option<_>>()?,
        models: models.into_iter().collect::<Option<_>>()?,
    })
}

/// `clusters[i].tls`; `has_identity` says whether the file has a top-level `identity`.
pub(super) fn cluster_tls(
    ctx: &mut Ctx<'_>,
    path: &str,
    spec: Option<&ClusterTlsSpec>,
    has_identity: bool,
) -> Option<ClusterTls> {
    let spec = spec?;
    let sni = spec
        .sni
        .as_ref()
        .and_then(|s| ctx.check(&format!("{path}.sni"), parse_sni(s.as_str())));
    match spec.mode {
        ClusterTlsModeSpec::Mesh => {
            if !has_identity {
                ctx.error(
                    &format!("{path}.mode"),
                    "mode mesh needs a top-level identity (expected identity: {cert, key, trust}, or mode: server)",
                );
            }
            if spec.ca.is_some() {
                ctx.error(
                    &format!("{path}.ca"),
                    "only applies to mode: server (expected it omitted; mesh servers are verified against identity.trust)",
                );
            }
            let server = match &spec.server {
                None => Some(None),
                Some(m) => identity_matcher(ctx, &format!("{path}.server"), m).map(Some),
            };
            Some(ClusterTls::Mesh {
                server: server?,
                sni,
            })
        }
        ClusterTlsModeSpec::Server => {
            if spec.server.is_some() {
                ctx.error(
                    &format!("{path}.server"),
                    "only applies to mode: mesh (expected it omitted; with mode: server the certificate must carry sni or the endpoint's host name)",
                );
            }
            let (ca, ca_at) = match &spec.ca {
                None => (Vec::new(), Vec::new()),
                Some(paths) => files(ctx, &format!("{path}.ca"), paths)?,
            };
            Some(ClusterTls::Server { sni, ca, ca_at })
        }
    }
}

/// `{exact|prefix|trust_domain: ...}`, each checked as SPIFFE text.
fn identity_matcher(
    ctx: &mut Ctx<'_>,
    path: &str,
    spec: &IdentityMatcherSpec,
) -> Option<IdentityMatcher> {
    match (&spec.exact, &spec.prefix, &spec.trust_domain) {
        (Some(e), None, None) => ctx
            .check(&format!("{path}.exact"), spiffe::exact(e.as_str()))
            .map(|()| IdentityMatcher::Exact(e.0.clone())),
        (None, Some(p), None) => ctx
            .check(&format!("{path}.prefix"), spiffe::prefix(p.as_str()))
            .map(|()| IdentityMatcher::Prefix(p.0.clone())),
        (None, None, Some(td)) => ctx
            .check(
                &format!("{path}.trust_domain"),
                spiffe::trust_domain(td.as_str()),
            )
            .map(|()| IdentityMatcher::TrustDomain(td.0.clone())),
        _ => {
            ctx.error(
                path,
                "exactly one of exact, prefix, trust_domain must be set (expected e.g. {prefix: \"spiffe://cluster.local/ns/prep/\"})",
            );
            None
        }
    }
}

/// `{exact|prefix: ...}` on a model name.
fn model_matcher(
    ctx: &mut Ctx<'_>,
    path: &str,
    spec: &ModelNameMatcherSpec,
) -> Option<ModelNameMatcher> {
    let (field, text, matcher): (_, _, fn(String) -> ModelNameMatcher) =
        match (&spec.exact, &spec.prefix) {
            (Some(e), None) => ("exact", e, ModelNameMatcher::Exact),
            (None, Some(p)) => ("prefix", p, ModelNameMatcher::Prefix),
            _ => {
                ctx.error(
                    path,
                    "exactly one of exact, prefix must be set (expected e.g. {prefix: resnet})",
                );
                return None;
            }
        };
    if text.as_str().is_empty() {
        ctx.error(
            &format!("{path}.{field}"),
            "empty model name (expected e.g. {prefix: resnet})",
        );
        return None;
    }
    Some(matcher(text.0.clone()))
}

/// A file named in the config: resolved against the config's directory, with its position.
fn file(ctx: &mut Ctx<'_>, field: &str, text: &Text) -> Option<(PathBuf, FieldLocation)> {
    if text.as_str().trim().is_empty() {
        ctx.error(
            field,
            "empty path (expected a file such as \"/var/run/ferry/tls.crt\")",
        );
        return None;
    }
    Some((ctx.base_dir().join(text.as_str()), ctx.locate(field)))
}

/// Every file of a [`Paths`] field, in order.
fn files(
    ctx: &mut Ctx<'_>,
    field: &str,
    paths: &Paths,
) -> Option<(Vec<PathBuf>, Vec<FieldLocation>)> {
    let all: Vec<_> = paths
        .located(field)
        .map(|(at, text)| file(ctx, &at, text))
        .collect();
    Some(
        all.into_iter()
            .collect::<Option<Vec<_>>>()?
            .into_iter()
            .unzip(),
    )
}
