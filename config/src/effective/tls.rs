//! The effective form of the identity, listener TLS, authorization and cluster TLS blocks.
//! File paths are shown resolved (as the proxy opens them), so the dump names the real files.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use crate::ir::{
    Authorization, AuthzDecision, ClusterTls, Identity, IdentityMatcher, ListenerTls,
    ModelNameMatcher, TlsMode,
};
use crate::validate::format_duration;

pub(super) fn identity(i: &Identity) -> Value {
    json!({ "cert": path(&i.cert), "key": path(&i.key), "trust": paths(&i.trust) })
}

pub(super) fn listener_tls(t: &ListenerTls) -> Value {
    let mode = match t.mode {
        TlsMode::Disabled => "disabled",
        TlsMode::Permissive => "permissive",
        TlsMode::Strict => "strict",
    };
    let mut out = Map::new();
    out.insert("mode".into(), mode.into());
    if let Some(peers) = &t.peers {
        out.insert("peers".into(), identity_matcher(peers));
    }
    out.insert(
        "handshake_timeout".into(),
        format_duration(t.handshake_timeout).into(),
    );
    Value::Object(out)
}

pub(super) fn authorization(a: &Authorization) -> Value {
    let default = match a.default {
        AuthzDecision::Allow => "allow",
        AuthzDecision::Deny => "deny",
    };
    let rules: Vec<Value> = a
        .rules
        .iter()
        .map(|r| {
            let mut rule = Map::new();
            let allow: Vec<Value> = r.allow.iter().map(identity_matcher).collect();
            rule.insert("allow".into(), allow.into());
            if !r.models.is_empty() {
                let models: Vec<Value> = r.models.iter().map(model_matcher).collect();
                rule.insert("models".into(), models.into());
            }
            Value::Object(rule)
        })
        .collect();
    json!({ "default": default, "rules": rules })
}

pub(super) fn cluster_tls(t: &ClusterTls) -> Value {
    let mut out = Map::new();
    match t {
        ClusterTls::Mesh { server, sni } => {
            out.insert("mode".into(), "mesh".into());
            if let Some(server) = server {
                out.insert("server".into(), identity_matcher(server));
            }
            if let Some(sni) = sni {
                out.insert("sni".into(), sni.clone().into());
            }
        }
        ClusterTls::Server { sni, ca, .. } => {
            out.insert("mode".into(), "server".into());
            if let Some(sni) = sni {
                out.insert("sni".into(), sni.clone().into());
            }
            out.insert("ca".into(), paths(ca));
        }
    }
    Value::Object(out)
}

fn identity_matcher(m: &IdentityMatcher) -> Value {
    match m {
        IdentityMatcher::Exact(s) => json!({ "exact": s }),
        IdentityMatcher::Prefix(s) => json!({ "prefix": s }),
        IdentityMatcher::TrustDomain(s) => json!({ "trust_domain": s }),
    }
}

fn model_matcher(m: &ModelNameMatcher) -> Value {
    match m {
        ModelNameMatcher::Exact(s) => json!({ "exact": s }),
        ModelNameMatcher::Prefix(s) => json!({ "prefix": s }),
    }
}

fn path(p: &Path) -> Value {
    p.display().to_string().into()
}

fn paths(list: &[PathBuf]) -> Value {
    list.iter().map(PathBuf::as_path).map(path).collect()
}
