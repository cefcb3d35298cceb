use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;
use http::header::CONTENT_TYPE;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use tower::{Layer, ServiceExt};

use super::*;
use crate::connection::Connection;
use crate::failure::{Classify, RenderErrorsLayer, Side};
use crate::translate::{BoxError, TranslateBody};

fn id(text: &str) -> PeerIdentity {
    PeerIdentity(Arc::from(text))
}

fn matches(m: &IdentityMatch, peer: &str) -> bool {
    m.matches(&SpiffeId::parse(peer).unwrap())
}

fn deny_unless(rules: Vec<Rule>) -> AuthorizationSettings {
    AuthorizationSettings {
        default: Decision::Deny,
        rules,
    }
}

fn allow(matchers: &[IdentityMatch]) -> Rule {
    Rule {
        allow: matchers.to_vec(),
        models: Vec::new(),
    }
}

fn model(name: &str) -> ModelRef {
    ModelRef {
        name: name.into(),
        version: None,
    }
}

#[test]
fn exact_matches_only_itself() {
    let m = IdentityMatch::exact("spiffe://cluster.local/ns/prep/sa/client").unwrap();
    assert!(matches(&m, "spiffe://cluster.local/ns/prep/sa/client"));
    assert!(!matches(&m, "spiffe://cluster.local/ns/prep/sa/client2"));
    assert!(!matches(&m, "spiffe://cluster.local/ns/prep/sa/client/x"));
    assert!(!matches(
        &m,
        "spiffe://cluster.local.evil/ns/prep/sa/client"
    ));
}

#[test]
fn prefixes_match_whole_segments() {
    for text in ["spiffe://td/ns/prep/", "spiffe://td/ns/prep"] {
        let m = IdentityMatch::prefix(text).unwrap();
        assert!(matches(&m, "spiffe://td/ns/prep/sa/x"), "{text}");
        assert!(matches(&m, "spiffe://td/ns/prep"), "{text}");
        assert!(!matches(&m, "spiffe://td/ns/prepx/sa/x"), "{text}");
        assert!(!matches(&m, "spiffe://td/ns/pre"), "{text}");
        assert!(!matches(&m, "spiffe://other/ns/prep/sa/x"), "{text}");
    }
}

#[test]
fn a_trust_domain_prefix_never_accepts_a_longer_trust_domain() {
    for text in ["spiffe://cluster.local", "spiffe://cluster.local/"] {
        let m = IdentityMatch::prefix(text).unwrap();
        assert!(matches(&m, "spiffe://cluster.local/ns/a/sa/b"));
        assert!(matches(&m, "spiffe://cluster.local"));
        assert!(!matches(&m, "spiffe://cluster.local.evil/ns/a/sa/b"));
        assert!(!matches(&m, "spiffe://cluster.localx"));
    }
    let td = IdentityMatch::trust_domain("cluster.local").unwrap();
    assert!(matches(&td, "spiffe://cluster.local/ns/a/sa/b"));
    assert!(!matches(&td, "spiffe://cluster.local.evil/ns/a/sa/b"));
    assert!(!matches(&td, "spiffe://evil.cluster.local/ns/a/sa/b"));
}

#[test]
fn matchers_reject_bad_text() {
    assert!(IdentityMatch::exact("spiffe://td/ns/a/").is_err());
    assert!(IdentityMatch::prefix("spiffe://td/ns//").is_err());
    assert!(IdentityMatch::prefix("http://td/ns/").is_err());
    assert!(IdentityMatch::trust_domain("Cluster.Local").is_err());
}

#[test]
fn the_default_decides_when_no_rule_allows() {
    let peer = id("spiffe://td/ns/other/sa/x");
    let rules = vec![allow(&[
        IdentityMatch::prefix("spiffe://td/ns/prep/").unwrap()
    ])];
    let open = AuthorizationSettings {
        default: Decision::Allow,
        rules: rules.clone(),
    };
    assert_eq!(open.decide(Some(&peer), None), Ok(()));
    assert_eq!(AuthorizationSettings::default().decide(None, None), Ok(()));
    let closed = deny_unless(rules);
    assert_eq!(
        closed.decide(Some(&peer), None),
        Err(DenyCause::NoRuleMatched)
    );
    assert_eq!(
        closed.decide(Some(&id("spiffe://td/ns/prep/sa/x")), None),
        Ok(())
    );
    assert_eq!(
        deny_unless(Vec::new()).decide(Some(&peer), None),
        Err(DenyCause::NoRuleMatched)
    );
}

#[test]
fn model_scoped_rules_need_the_model() {
    let prep = IdentityMatch::prefix("spiffe://td/ns/prep/").unwrap();
    let admin = IdentityMatch::exact("spiffe://td/ns/ops/sa/admin").unwrap();
    let settings = deny_unless(vec![
        Rule {
            allow: vec![prep],
            models: vec![
                ModelMatch::Prefix("resnet".into()),
                ModelMatch::Exact("bert".into()),
            ],
        },
        allow(&[admin]),
    ]);
    let peer = id("spiffe://td/ns/prep/sa/x");
    assert_eq!(
        settings.decide(Some(&peer), Some(&model("resnet50"))),
        Ok(())
    );
    assert_eq!(settings.decide(Some(&peer), Some(&model("bert"))), Ok(()));
    assert_eq!(
        settings.decide(Some(&peer), Some(&model("bert-large"))),
        Err(DenyCause::ModelNotAllowed)
    );
    assert_eq!(
        settings.decide(Some(&peer), None),
        Err(DenyCause::ModelNotAllowed)
    );
    // A rule without models allows any model, and none.
    let ops = id("spiffe://td/ns/ops/sa/admin");
    assert_eq!(
        settings.decide(Some(&ops), Some(&model("bert-large"))),
        Ok(())
    );
    assert_eq!(settings.decide(Some(&ops), None), Ok(()));
}

#[test]
fn unverified_or_invalid_identities_match_no_rule() {
    let settings = deny_unless(vec![allow(&[IdentityMatch::trust_domain("td").unwrap()])]);
    assert_eq!(settings.decide(None, None), Err(DenyCause::NoIdentity));
    for bad in [
        "spiffe://td/ns/a/../b",
        "spiffe://TD/ns/a",
        "https://td/ns/a",
        "",
    ] {
        assert_eq!(
            settings.decide(Some(&id(bad)), None),
            Err(DenyCause::InvalidIdentity),
            "{bad}"
        );
    }
    let nobody = deny_unless(vec![Rule::default()]);
    assert_eq!(
        nobody.decide(Some(&id("spiffe://td/ns/a")), None),
        Err(DenyCause::NoRuleMatched)
    );
}

#[test]
fn permission_denied_classifies_as_a_client_403() {
    let denied = PermissionDenied::new(DenyCause::NoRuleMatched, Some(id("spiffe://td/x")));
    assert_eq!(denied.side(), Side::Client);
    assert_eq!(denied.http_status(), StatusCode::FORBIDDEN);
    assert_eq!(denied.grpc_code(), 7);
    assert_eq!(Classify::reason(&denied), "permission_denied");
    assert_eq!(denied.cause().as_str(), "no_rule_matched");
    assert_eq!(denied.to_string(), "permission denied");
}

// === the layer ===

/// A renderer over the authorization layer over a counting upstream answering 200 "ok".
fn stack(
    layer: AuthorizationLayer,
    calls: Arc<AtomicUsize>,
) -> impl tower::Service<Request<Full<Bytes>>, Response = Response<TranslateBody>, Error = BoxError>
+ Clone {
    let upstream = tower::service_fn(move |_: Request<Full<Bytes>>| {
        calls.fetch_add(1, Ordering::SeqCst);
        async {
            let body = Full::new(Bytes::from_static(b"ok"))
                .map_err(|never| match never {})
                .boxed_unsync();
            Ok::<_, Infallible>(Response::new(body))
        }
    });
    RenderErrorsLayer::new().layer(layer.layer(upstream))
}

fn request(identity: Option<&str>, grpc: bool) -> Request<Full<Bytes>> {
    let mut builder = Request::builder().uri("/v2/models/resnet/infer");
    if grpc {
        builder = builder.header(CONTENT_TYPE, "application/grpc");
    }
    let mut req = builder.body(Full::default()).unwrap();
    let peer: SocketAddr = "127.0.0.1:4000".parse().unwrap();
    let mut conn = Connection::plaintext(Arc::from("inbound"), peer);
    conn.identity = identity.map(id);
    req.extensions_mut().insert(Arc::new(conn));
    req
}

async fn body_text(resp: Response<TranslateBody>) -> String {
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    String::from_utf8(bytes.to_vec()).unwrap()
}

fn prep_only() -> AuthorizationSettings {
    deny_unless(vec![Rule {
        allow: vec![IdentityMatch::prefix("spiffe://cluster.local/ns/prep/").unwrap()],
        models: vec![ModelMatch::Prefix("resnet".into())],
    }])
}

#[tokio::test]
async fn allowed_requests_reach_the_upstream() {
    let calls = Arc::new(AtomicUsize::new(0));
    let svc = stack(AuthorizationLayer::new(prep_only()), calls.clone());
    let mut req = request(Some("spiffe://cluster.local/ns/prep/sa/client"), false);
    req.extensions_mut().insert(model("resnet50"));
    let resp = svc.oneshot(req).await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(body_text(resp).await, "ok");
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn http_callers_get_a_bare_403() {
    let calls = Arc::new(AtomicUsize::new(0));
    let svc = stack(AuthorizationLayer::new(prep_only()), calls.clone());
    let mut req = request(Some("spiffe://cluster.local.evil/ns/prep/sa/client"), false);
    req.extensions_mut().insert(model("resnet50"));
    let resp = svc.oneshot(req).await.unwrap();
    assert_eq!(resp.status(), StatusCode::FORBIDDEN);
    assert_eq!(resp.headers()[CONTENT_TYPE], "application/json");
    // Neither the identity nor the rule is in the answer.
    assert_eq!(body_text(resp).await, r#"{"error":"permission denied"}"#);
    assert_eq!(calls.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn grpc_callers_get_permission_denied_trailers_only() {
    let calls = Arc::new(AtomicUsize::new(0));
    let svc = stack(AuthorizationLayer::new(prep_only()), calls.clone());
    let mut req = request(Some("spiffe://cluster.local/ns/prepx/sa/client"), true);
    req.extensions_mut().insert(model("resnet50"));
    let resp = svc.oneshot(req).await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(resp.headers()[CONTENT_TYPE], "application/grpc");
    assert_eq!(resp.headers()["grpc-status"], "7");
    assert_eq!(resp.headers()["grpc-message"], "permission denied");
    assert!(body_text(resp).await.is_empty());
    assert_eq!(calls.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn plaintext_and_bare_requests_are_denied_and_counted() {
    let calls = Arc::new(AtomicUsize::new(0));
    let causes = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = causes.clone();
    let layer = AuthorizationLayer::new(prep_only()).on_deny(Arc::new(move |d| {
        seen.lock().unwrap().push(d.cause());
    }));
    let svc = stack(layer, calls.clone());
    let resp = svc.clone().oneshot(request(None, false)).await.unwrap();
    assert_eq!(resp.status(), StatusCode::FORBIDDEN);
    // No connection facts at all.
    let bare = Request::new(Full::default());
    let resp = svc.clone().oneshot(bare).await.unwrap();
    assert_eq!(resp.status(), StatusCode::FORBIDDEN);
    // Allowed peer, model not known.
    let no_model = request(Some("spiffe://cluster.local/ns/prep/sa/client"), false);
    let resp = svc.oneshot(no_model).await.unwrap();
    assert_eq!(resp.status(), StatusCode::FORBIDDEN);
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    assert_eq!(
        *causes.lock().unwrap(),
        [
            DenyCause::NoIdentity,
            DenyCause::NoIdentity,
            DenyCause::ModelNotAllowed
        ]
    );
}

#[tokio::test]
async fn default_allow_lets_plaintext_through() {
    let calls = Arc::new(AtomicUsize::new(0));
    let settings = AuthorizationSettings {
        default: Decision::Allow,
        ..prep_only()
    };
    let svc = stack(AuthorizationLayer::new(settings), calls.clone());
    let resp = svc.oneshot(request(None, false)).await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}
