//! Mutual TLS and authorization settings: `identity`, `listeners[].tls`, `authorization`
//! (listener and route) and `clusters[].tls`, from file to IR, to the effective config, and
//! every error as `ferry validate` prints it.

use std::path::PathBuf;
use std::time::Duration;

use ferry_config::{
    Authorization, AuthzDecision, AuthzRule, ClusterTls, Config, FieldLocation, Identity,
    IdentityMatcher, ListenerTls, ModelNameMatcher, TlsMode,
};
use serde_json::json;

/// Every TLS and authorization setting, with relative and absolute file paths.
const FULL: &str = r#"apiVersion: ferry/v1
identity:
  cert: tls.crt
  key: /var/run/ferry/tls.key
  trust: [ca.crt, /var/run/ferry/ca-next.crt]
listeners:
  - name: inbound
    address: 0.0.0.0:15006
    tls:
      mode: strict
      peers: { trust_domain: cluster.local }
      handshake_timeout: 5s
    authorization:
      default: deny
      rules:
        - { allow: [{ prefix: "spiffe://cluster.local/ns/prep/" }], models: [{ prefix: resnet }] }
        - allow: [{ exact: spiffe://cluster.local/ns/ops/sa/admin }, { trust_domain: partner.example }]
    routes:
      - name: infer
        to: triton
        authorization:
          rules:
            - allow: [{ exact: spiffe://cluster.local/ns/prep/sa/client }]
              models: [{ exact: resnet50 }]
  - name: outbound
    address: 127.0.0.1:15001
    tls: { mode: permissive }
    routes:
      - { name: all, to: passthrough }
clusters:
  - name: triton
    endpoints: [10.0.0.7:15006]
    tls:
      mode: mesh
      server: { exact: spiffe://cluster.local/ns/models/sa/triton }
      sni: Triton.models.svc.cluster.local
  - name: openai
    dns: { names: [api.openai.com:443] }
    tls: { mode: server, ca: certs/ca.pem }
  - name: passthrough
    original_authority: {}
    tls: { mode: server }
"#;

fn parse(text: &str) -> Config {
    ferry_config::parse("/etc/ferry/routes.yaml", text).unwrap_or_else(|e| panic!("{e}"))
}

fn at(line: usize, col: usize, path: &str) -> FieldLocation {
    FieldLocation {
        file: "/etc/ferry/routes.yaml".into(),
        line,
        col,
        path: path.into(),
    }
}

/// Parses `text` as `routes.yaml` and returns every error line.
fn errors(text: &str) -> Vec<String> {
    match ferry_config::parse("routes.yaml", text) {
        Ok(_) => panic!("expected errors, the config parsed:\n{text}"),
        Err(e) => e.to_string().lines().map(str::to_owned).collect(),
    }
}

/// An identity, then `listener` spliced in as the only listener's extra settings (indented 4
/// spaces, first line at line 10), then a cluster.
fn with_listener(listener: &str) -> String {
    format!(
        "apiVersion: ferry/v1\nidentity:\n  cert: tls.crt\n  key: tls.key\n  trust: ca.crt\nlisteners:\n  - name: inbound\n    address: 127.0.0.1:15006\n    routes: [{{ name: r, to: up }}]\n{listener}clusters:\n  - name: up\n    endpoints: [127.0.0.1:8080]\n"
    )
}

/// No identity; `tls` spliced in as the only cluster's `tls:` (indented 6 spaces, first line
/// at line 6).
fn with_cluster_tls(tls: &str) -> String {
    format!(
        "apiVersion: ferry/v1\nclusters:\n  - name: up\n    endpoints: [127.0.0.1:8080]\n    tls:\n{tls}"
    )
}

#[test]
fn full_example_becomes_the_expected_ir() {
    let config = parse(FULL);
    assert_eq!(
        config.identity,
        Some(Identity {
            cert: PathBuf::from("/etc/ferry/tls.crt"),
            cert_at: at(3, 9, "identity.cert"),
            key: PathBuf::from("/var/run/ferry/tls.key"),
            key_at: at(4, 8, "identity.key"),
            trust: vec![
                PathBuf::from("/etc/ferry/ca.crt"),
                PathBuf::from("/var/run/ferry/ca-next.crt"),
            ],
            trust_at: vec![
                at(5, 11, "identity.trust[0]"),
                at(5, 19, "identity.trust[1]")
            ],
        })
    );

    let inbound = &config.listeners[0];
    assert_eq!(
        inbound.tls,
        ListenerTls {
            mode: TlsMode::Strict,
            peers: Some(IdentityMatcher::TrustDomain("cluster.local".into())),
            handshake_timeout: Duration::from_secs(5),
        }
    );
    assert_eq!(
        inbound.authorization,
        Some(Authorization {
            default: AuthzDecision::Deny,
            rules: vec![
                AuthzRule {
                    allow: vec![IdentityMatcher::Prefix(
                        "spiffe://cluster.local/ns/prep/".into()
                    )],
                    models: vec![ModelNameMatcher::Prefix("resnet".into())],
                },
                AuthzRule {
                    allow: vec![
                        IdentityMatcher::Exact("spiffe://cluster.local/ns/ops/sa/admin".into()),
                        IdentityMatcher::TrustDomain("partner.example".into()),
                    ],
                    models: vec![],
                },
            ],
        })
    );
    assert_eq!(
        inbound.routes[0].authorization,
        Some(Authorization {
            default: AuthzDecision::Allow,
            rules: vec![AuthzRule {
                allow: vec![IdentityMatcher::Exact(
                    "spiffe://cluster.local/ns/prep/sa/client".into()
                )],
                models: vec![ModelNameMatcher::Exact("resnet50".into())],
            }],
        })
    );

    let outbound = &config.listeners[1];
    assert_eq!(outbound.tls.mode, TlsMode::Permissive);
    assert_eq!(outbound.tls.peers, None);
    assert_eq!(outbound.tls.handshake_timeout, Duration::from_secs(10));
    assert_eq!(outbound.authorization, None);
    assert_eq!(outbound.routes[0].authorization, None);

    assert_eq!(
        config.clusters[0].tls,
        Some(ClusterTls::Mesh {
            server: Some(IdentityMatcher::Exact(
                "spiffe://cluster.local/ns/models/sa/triton".into()
            )),
            sni: Some("triton.models.svc.cluster.local".into()),
        })
    );
    assert_eq!(
        config.clusters[1].tls,
        Some(ClusterTls::Server {
            sni: None,
            ca: vec![PathBuf::from("/etc/ferry/certs/ca.pem")],
            ca_at: vec![at(39, 30, "clusters[1].tls.ca")],
        })
    );
    assert_eq!(
        config.clusters[2].tls,
        Some(ClusterTls::Server {
            sni: None,
            ca: vec![],
            ca_at: vec![],
        })
    );
}

#[test]
fn without_tls_settings_everything_is_plaintext() {
    let config = parse(
        "apiVersion: ferry/v1\nlisteners:\n  - { name: a, address: 127.0.0.1:1, routes: [{ name: r, to: up }] }\nclusters:\n  - { name: up, endpoints: [127.0.0.1:2] }\n",
    );
    assert_eq!(config.identity, None);
    assert_eq!(config.listeners[0].tls, ListenerTls::default());
    assert_eq!(config.listeners[0].tls.mode, TlsMode::Disabled);
    assert_eq!(config.listeners[0].authorization, None);
    assert_eq!(config.listeners[0].routes[0].authorization, None);
    assert_eq!(config.clusters[0].tls, None);
    let effective = &config.effective_json;
    assert!(effective.get("identity").is_none());
    assert_eq!(
        effective["listeners"][0]["tls"],
        json!({ "mode": "disabled", "handshake_timeout": "10s" })
    );
    assert!(effective["listeners"][0].get("authorization").is_none());
    assert!(
        effective["listeners"][0]["routes"][0]
            .get("authorization")
            .is_none()
    );
    assert!(effective["clusters"][0].get("tls").is_none());
}

#[test]
fn trust_takes_one_path_or_a_list() {
    let config = parse(&with_listener(""));
    let identity = config.identity.unwrap();
    assert_eq!(identity.trust, [PathBuf::from("/etc/ferry/ca.crt")]);
    assert_eq!(identity.trust_at, [at(5, 10, "identity.trust")]);
    // A file name without a directory resolves against the current directory.
    let config = ferry_config::parse("routes.yaml", &with_listener("")).unwrap();
    assert_eq!(config.identity.unwrap().cert, PathBuf::from("tls.crt"));
}

#[test]
fn effective_config_shows_the_tls_and_authorization_blocks() {
    let config = parse(FULL);
    let effective = &config.effective_json;
    let keys: Vec<&str> = effective
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "apiVersion",
            "admin",
            "runtime",
            "identity",
            "listeners",
            "clusters"
        ]
    );
    assert_eq!(
        effective["identity"],
        json!({
            "cert": "/etc/ferry/tls.crt",
            "key": "/var/run/ferry/tls.key",
            "trust": ["/etc/ferry/ca.crt", "/var/run/ferry/ca-next.crt"],
        })
    );
    let inbound = &effective["listeners"][0];
    assert_eq!(
        inbound["tls"],
        json!({ "mode": "strict", "peers": { "trust_domain": "cluster.local" }, "handshake_timeout": "5s" })
    );
    assert_eq!(
        inbound["authorization"],
        json!({
            "default": "deny",
            "rules": [
                { "allow": [{ "prefix": "spiffe://cluster.local/ns/prep/" }], "models": [{ "prefix": "resnet" }] },
                { "allow": [
                    { "exact": "spiffe://cluster.local/ns/ops/sa/admin" },
                    { "trust_domain": "partner.example" },
                ] },
            ],
        })
    );
    assert_eq!(
        inbound["routes"][0]["authorization"],
        json!({
            "default": "allow",
            "rules": [{
                "allow": [{ "exact": "spiffe://cluster.local/ns/prep/sa/client" }],
                "models": [{ "exact": "resnet50" }],
            }],
        })
    );
    assert_eq!(
        effective["listeners"][1]["tls"],
        json!({ "mode": "permissive", "handshake_timeout": "10s" })
    );
    assert_eq!(
        effective["clusters"][0]["tls"],
        json!({
            "mode": "mesh",
            "server": { "exact": "spiffe://cluster.local/ns/models/sa/triton" },
            "sni": "triton.models.svc.cluster.local",
        })
    );
    assert_eq!(
        effective["clusters"][1]["tls"],
        json!({ "mode": "server", "ca": ["/etc/ferry/certs/ca.pem"] })
    );
    assert_eq!(
        effective["clusters"][2]["tls"],
        json!({ "mode": "server", "ca": [] })
    );
}

#[test]
fn effective_config_round_trips_with_the_same_version() {
    let config = parse(FULL);
    let text = serde_json::to_string_pretty(&*config.effective_json).unwrap();
    let again = ferry_config::parse("/elsewhere/effective.json", &text)
        .unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(again.effective_json, config.effective_json);
    assert_eq!(again.version, config.version);
    assert_eq!(
        again.identity.unwrap().cert,
        PathBuf::from("/etc/ferry/tls.crt")
    );
    // Authorization is part of the meaning, so of the version.
    let other = parse(&FULL.replace("default: deny", "default: allow"));
    assert_ne!(other.version, config.version);
}

#[test]
fn tls_modes_that_need_an_identity() {
    let text = "apiVersion: ferry/v1
listeners:
  - name: a
    address: 127.0.0.1:1
    tls: { mode: strict }
  - name: b
    address: 127.0.0.1:2
    tls:
      mode: permissive
  - name: c
    address: 127.0.0.1:3
    tls: { mode: disabled }
clusters:
  - name: up
    endpoints: [127.0.0.1:8080]
    tls: { mode: mesh }
  - name: web
    original_authority: {}
    tls: { mode: server }
";
    assert_eq!(
        errors(text),
        [
            "routes.yaml:5:18: listeners[0].tls.mode: mode strict needs a top-level identity (expected identity: {cert, key, trust}, or mode: disabled)",
            "routes.yaml:9:13: listeners[1].tls.mode: mode permissive needs a top-level identity (expected identity: {cert, key, trust}, or mode: disabled)",
            "routes.yaml:16:18: clusters[0].tls.mode: mode mesh needs a top-level identity (expected identity: {cert, key, trust}, or mode: server)",
        ]
    );
}

#[test]
fn bad_identity() {
    let text = "apiVersion: ferry/v1\nidentity:\n  cert: \"\"\n  key: tls.key\n  trust: []\n";
    assert_eq!(
        errors(text),
        [
            r#"routes.yaml:3:9: identity.cert: empty path (expected a file such as "/var/run/ferry/tls.crt")"#,
            "routes.yaml:5:10: identity.trust: empty list (expected at least one CA bundle, e.g. trust: [/var/run/ferry/ca.crt])",
        ]
    );
    assert_eq!(
        errors("apiVersion: ferry/v1\nidentity: { cert: a, trust: b }\n"),
        [r#"routes.yaml:2:11: identity.key: missing field "key" (expected it to be set)"#]
    );
    assert_eq!(
        errors("apiVersion: ferry/v1\nidentity: { cert: a, key: b, trust: c, ca: d }\n"),
        [
            r#"routes.yaml:2:40: identity.ca: unknown field "ca" (expected one of: cert, key, trust)"#
        ]
    );
}

#[test]
fn bad_listener_tls() {
    let got = errors(&with_listener(
        "    tls:\n      mode: strict\n      peers: { trust_domain: spiffe://cluster.local }\n      handshake_timeout: 0s\n",
    ));
    assert_eq!(
        got,
        [
            r#"routes.yaml:12:30: listeners[0].tls.peers.trust_domain: trust domain "spiffe://cluster.local" is a URI (expected a bare name such as "cluster.local")"#,
            r#"routes.yaml:13:26: listeners[0].tls.handshake_timeout: invalid handshake_timeout 0s (expected a duration > 0, e.g. "10s")"#,
        ]
    );
    let got = errors(&with_listener(
        "    tls: { mode: mutual, handshake_timeout: soon }\n",
    ));
    assert_eq!(
        got,
        [
            r#"routes.yaml:10:18: listeners[0].tls.mode: unknown value "mutual" (expected one of: strict, permissive, disabled)"#
        ]
    );
    let got = errors(&with_listener(
        "    tls: { handshake_timeout: soon, peers: { exact: a, prefix: b } }\n",
    ));
    assert_eq!(
        got,
        [
            r#"routes.yaml:10:31: listeners[0].tls.handshake_timeout: invalid duration "soon" (expected e.g. "500ms", "2s", "5m")"#,
            r#"routes.yaml:10:44: listeners[0].tls.peers: exactly one of exact, prefix, trust_domain must be set (expected e.g. {prefix: "spiffe://cluster.local/ns/prep/"})"#,
        ]
    );
}

#[test]
fn identity_matchers_must_be_spiffe() {
    let got = errors(&with_listener(concat!(
        "    authorization:\n",
        "      rules:\n",
        "        - allow:\n",
        "            - { exact: resnet }\n",
        "            - { exact: spiffe://cluster.local }\n",
        "            - { exact: \"spiffe://cluster.local/ns/a/\" }\n",
        "            - { exact: \"spiffe://cluster.local/ns/../sa\" }\n",
        "            - { exact: spiffe://Cluster.local/ns/a }\n",
        "            - { exact: \"spiffe://cluster.local:8443/ns/a\" }\n",
        "            - { prefix: cluster.local }\n",
        "            - { prefix: \"spiffe://cluster.local/ns//\" }\n",
        "            - { trust_domain: \"\" }\n",
        "            - {}\n",
    )));
    assert_eq!(
        got,
        [
            r#"routes.yaml:13:24: listeners[0].authorization.rules[0].allow[0].exact: "resnet" is not a spiffe:// URI (expected a SPIFFE ID such as "spiffe://cluster.local/ns/prep/sa/client")"#,
            r#"routes.yaml:14:24: listeners[0].authorization.rules[0].allow[1].exact: invalid SPIFFE ID "spiffe://cluster.local": no path (expected a workload's ID such as "spiffe://cluster.local/ns/prep/sa/client", or {trust_domain: ...} for a whole trust domain)"#,
            r#"routes.yaml:15:24: listeners[0].authorization.rules[0].allow[2].exact: invalid SPIFFE ID "spiffe://cluster.local/ns/a/": trailing "/" (expected no trailing "/"; IDs under a path go in {prefix: ...})"#,
            r#"routes.yaml:16:24: listeners[0].authorization.rules[0].allow[3].exact: invalid SPIFFE ID "spiffe://cluster.local/ns/../sa": "." or ".." path segment (expected e.g. "spiffe://cluster.local/ns/prep/sa/client")"#,
            r#"routes.yaml:17:24: listeners[0].authorization.rules[0].allow[4].exact: invalid SPIFFE ID "spiffe://Cluster.local/ns/a": 'C' in the trust domain; only lowercase letters, digits, '.', '-' and '_' are allowed (expected e.g. "spiffe://cluster.local/ns/prep/sa/client")"#,
            r#"routes.yaml:18:24: listeners[0].authorization.rules[0].allow[5].exact: invalid SPIFFE ID "spiffe://cluster.local:8443/ns/a": a SPIFFE ID has no port (expected e.g. "spiffe://cluster.local/ns/prep/sa/client")"#,
            r#"routes.yaml:19:25: listeners[0].authorization.rules[0].allow[6].prefix: "cluster.local" is not a spiffe:// URI (expected a SPIFFE ID prefix such as "spiffe://cluster.local/ns/prep/", or {trust_domain: ...} for a bare trust domain)"#,
            r#"routes.yaml:20:25: listeners[0].authorization.rules[0].allow[7].prefix: invalid SPIFFE ID prefix "spiffe://cluster.local/ns//": empty path segment "//" (expected e.g. "spiffe://cluster.local/ns/prep/")"#,
            r#"routes.yaml:21:31: listeners[0].authorization.rules[0].allow[8].trust_domain: invalid trust domain "": empty trust domain (expected e.g. "cluster.local")"#,
            r#"routes.yaml:22:15: listeners[0].authorization.rules[0].allow[9]: exactly one of exact, prefix, trust_domain must be set (expected e.g. {prefix: "spiffe://cluster.local/ns/prep/"})"#,
        ]
    );
}

#[test]
fn bad_authorization() {
    let got = errors(&with_listener(concat!(
        "    authorization:\n",
        "      default: block\n",
    )));
    assert_eq!(
        got,
        [
            r#"routes.yaml:11:16: listeners[0].authorization.default: unknown value "block" (expected allow or deny)"#
        ]
    );
    // Route level, same shape and checks.
    let text = with_listener("").replace(
        "routes: [{ name: r, to: up }]",
        concat!(
            "routes:\n",
            "      - name: r\n",
            "        to: up\n",
            "        authorization:\n",
            "          default: deny\n",
            "          rules:\n",
            "            - { allow: [] }\n",
            "            - { allow: [{ trust_domain: td }], models: [{ exact: \"\" }, { prefix: a, exact: b }] }\n",
            "            - { allow: [{ trust_domain: td }], peers: [] }",
        ),
    );
    assert_eq!(
        errors(&text),
        [
            "routes.yaml:15:24: listeners[0].routes[0].authorization.rules[0].allow: empty list would allow nobody (expected at least one peer, e.g. allow: [{trust_domain: cluster.local}])",
            r#"routes.yaml:16:66: listeners[0].routes[0].authorization.rules[1].models[0].exact: empty model name (expected e.g. {prefix: resnet})"#,
            "routes.yaml:16:72: listeners[0].routes[0].authorization.rules[1].models[1]: exactly one of exact, prefix must be set (expected e.g. {prefix: resnet})",
            r#"routes.yaml:17:48: listeners[0].routes[0].authorization.rules[2].peers: unknown field "peers" (expected allow or models)"#,
        ]
    );
}

#[test]
fn bad_cluster_tls() {
    // `server` only with mesh, `ca` only with server; sni a DNS name.
    let got = errors(&with_cluster_tls(concat!(
        "      mode: server\n",
        "      server: { trust_domain: cluster.local }\n",
        "      sni: \"bad name\"\n",
    )));
    assert_eq!(
        got,
        [
            "routes.yaml:7:15: clusters[0].tls.server: only applies to mode: mesh (expected it omitted; with mode: server the certificate must carry sni or the endpoint's host name)",
            r#"routes.yaml:8:12: clusters[0].tls.sni: invalid SNI "bad name" (expected a DNS name such as "triton.models.svc.cluster.local")"#,
        ]
    );
    let text = with_cluster_tls("      mode: mesh\n      ca: [my-ca.pem]\n      sni: 10.0.0.7\n")
        .replace(
            "\nclusters:",
            "\nidentity: { cert: c, key: k, trust: t }\nclusters:",
        );
    assert_eq!(
        errors(&text),
        [
            "routes.yaml:8:11: clusters[0].tls.ca: only applies to mode: server (expected it omitted; mesh servers are verified against identity.trust)",
            r#"routes.yaml:9:12: clusters[0].tls.sni: SNI "10.0.0.7" is an IP address (expected a DNS name such as "triton.models.svc.cluster.local", or sni omitted)"#,
        ]
    );
    let got = errors(&with_cluster_tls(
        "      mode: server\n      ca: [ok.pem, \"\"]\n      sni: a.0x1f\n",
    ));
    assert_eq!(
        got,
        [
            r#"routes.yaml:7:20: clusters[0].tls.ca[1]: empty path (expected a file such as "/var/run/ferry/tls.crt")"#,
            r#"routes.yaml:8:12: clusters[0].tls.sni: invalid SNI "a.0x1f" (expected a DNS name such as "triton.models.svc.cluster.local")"#,
        ]
    );
    assert_eq!(
        errors(&with_cluster_tls("      sni: a.example\n")),
        [r#"routes.yaml:6:7: clusters[0].tls.mode: missing field "mode" (expected it to be set)"#]
    );
    assert_eq!(
        errors(&with_cluster_tls("      mode: plain\n")),
        [
            r#"routes.yaml:6:13: clusters[0].tls.mode: unknown value "plain" (expected mesh or server)"#
        ]
    );
}

#[test]
fn cluster_tls_on_any_endpoint_source() {
    for endpoints in [
        "endpoints: [127.0.0.1:8443]",
        "dns: { names: [\"api.example.com:443\"] }",
        "original_authority: { default_port: 443 }",
    ] {
        for mode in ["mesh", "server"] {
            let text = format!(
                "apiVersion: ferry/v1\nidentity: {{ cert: c, key: k, trust: [t] }}\nclusters:\n  - name: up\n    {endpoints}\n    tls: {{ mode: {mode}, sni: API.example.com }}\n"
            );
            let config =
                ferry_config::parse("routes.yaml", &text).unwrap_or_else(|e| panic!("{e}"));
            let sni = match config.clusters[0].tls.as_ref().unwrap() {
                ClusterTls::Mesh { sni, .. } | ClusterTls::Server { sni, .. } => sni.clone(),
            };
            assert_eq!(
                sni.as_deref(),
                Some("api.example.com"),
                "{endpoints} {mode}"
            );
        }
    }
}

#[test]
fn all_errors_are_reported_together() {
    let text = "apiVersion: ferry/v1
identity: { cert: c, key: k, trust: [] }
listeners:
  - name: a
    address: 127.0.0.1:1
    tls: { mode: strict, handshake_timeout: 0s }
    authorization: { rules: [{ allow: [] }] }
clusters:
  - name: up
    endpoints: [127.0.0.1:2]
    tls: { mode: server, server: { exact: x } }
";
    assert_eq!(
        errors(text),
        [
            "routes.yaml:2:37: identity.trust: empty list (expected at least one CA bundle, e.g. trust: [/var/run/ferry/ca.crt])",
            r#"routes.yaml:6:45: listeners[0].tls.handshake_timeout: invalid handshake_timeout 0s (expected a duration > 0, e.g. "10s")"#,
            "routes.yaml:7:39: listeners[0].authorization.rules[0].allow: empty list would allow nobody (expected at least one peer, e.g. allow: [{trust_domain: cluster.local}])",
            "routes.yaml:11:34: clusters[0].tls.server: only applies to mode: mesh (expected it omitted; with mode: server the certificate must carry sni or the endpoint's host name)",
        ]
    );
}

/// Security defaults: a config that says nothing about them gets the safe ones.
#[test]
fn unstated_settings_default_to_the_safe_choice() {
    let c = parse(
        "apiVersion: ferry/v1\nlisteners:\n  - name: l\n    address: 0.0.0.0:8080\n    routes: [{ name: r, direct_response: { status: 200 } }]\n",
    );
    // The admin endpoint (config dump, metrics) is reachable from the pod only.
    assert!(c.admin.address.ip().is_loopback(), "{:?}", c.admin.address);
    let l = &c.listeners[0];
    assert_eq!(l.tls.mode, TlsMode::Disabled);
    assert!(l.limits.request_headers_timeout.is_some());
    assert!(l.limits.idle_timeout.is_some());
}
