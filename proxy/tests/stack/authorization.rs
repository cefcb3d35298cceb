//! Authorization by peer identity and model, at listener and route level, and the
//! `x-forwarded-client-cert` header, on connections whose identity the test sets as a
//! mutual-TLS listener would.

use http::StatusCode;

use crate::support::{Stack, echo, request};

const CONFIG: &str = r#"
apiVersion: ferry/v1
listeners:
  - name: main
    address: 127.0.0.1:0
    authorization:
      default: deny
      rules:
        - allow: [{ prefix: spiffe://cluster.local/ns/prep/ }]
          models: [{ prefix: resnet }]
        - allow: [{ exact: spiffe://cluster.local/ns/ops/sa/admin }]
    routes:
      - name: models
        match: { path: { prefix: /v2/ } }
        to: models
      - name: openai
        match: { path: { prefix: /v1/ } }
        to: models
      - name: admin-only
        match: { path: { prefix: /admin/ } }
        to: models
        authorization:
          default: deny
          rules:
            - allow: [{ trust_domain: cluster.local }]
  - name: open
    address: 127.0.0.1:0
    routes:
      - { name: all, to: models }
clusters:
  - { name: models, endpoints: [127.0.0.1:1001] }
"#;

const PREP: &str = "spiffe://cluster.local/ns/prep/sa/client";
const ADMIN: &str = "spiffe://cluster.local/ns/ops/sa/admin";
const INFER: &str = "/v2/models/resnet50/infer";

#[tokio::test]
async fn listener_rules_see_the_model_and_refuse_with_403() {
    let stack = Stack::new(CONFIG, echo());
    let allowed = stack
        .h1_as("main", PREP, request("POST", INFER, &[], "{}"))
        .await;
    assert_eq!(allowed.status, StatusCode::OK, "{allowed:?}");

    // Same caller, a model the rule does not cover.
    let other = "/v2/models/bert/infer";
    let denied = stack
        .h1_as("main", PREP, request("POST", other, &[], "{}"))
        .await;
    assert_eq!(denied.status, StatusCode::FORBIDDEN);
    assert_eq!(&denied.body[..], br#"{"error":"permission denied"}"#);

    // No identity (plaintext) matches no rule.
    let plain = stack.h1("main", request("POST", INFER, &[], "{}")).await;
    assert_eq!(plain.status, StatusCode::FORBIDDEN);

    // A refused caller learns nothing about routes: 403 before 404; an allowed one gets 404.
    let unrouted = stack.h1("main", request("GET", "/nowhere", &[], "")).await;
    assert_eq!(unrouted.status, StatusCode::FORBIDDEN);
    let admin_unrouted = stack
        .h1_as("main", ADMIN, request("GET", "/nowhere", &[], ""))
        .await;
    assert_eq!(admin_unrouted.status, StatusCode::NOT_FOUND);

    let metrics = stack.metrics();
    let line = r#"ferry_authz_denied_total{listener="main",route="models"} 2"#;
    assert!(metrics.contains(line), "{metrics}");
    let line = r#"ferry_authz_denied_total{listener="main",route=""} 1"#;
    assert!(metrics.contains(line), "{metrics}");
    // Only the allowed request reached the upstream.
    assert_eq!(stack.seen().len(), 1);
}

#[tokio::test]
async fn a_route_policy_applies_after_the_listener_policy() {
    let stack = Stack::new(CONFIG, echo());
    // The admin passes the listener's rule and the route's trust-domain rule.
    let ok = stack
        .h1_as("main", ADMIN, request("GET", "/admin/x", &[], ""))
        .await;
    assert_eq!(ok.status, StatusCode::OK);
    // A prep caller fails the listener's rule for a request naming no model.
    let no = stack
        .h1_as("main", PREP, request("GET", "/admin/x", &[], ""))
        .await;
    assert_eq!(no.status, StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn grpc_callers_get_permission_denied() {
    let stack = Stack::new(CONFIG, echo());
    let grpc = request(
        "POST",
        "/inference.GRPCInferenceService/ModelReady",
        &[("content-type", "application/grpc")],
        "",
    );
    let answer = stack.h1("main", grpc).await;
    assert_eq!(answer.status, StatusCode::OK);
    let status = answer
        .headers
        .get("grpc-status")
        .or_else(|| answer.trailers.as_ref().and_then(|t| t.get("grpc-status")));
    assert_eq!(status.map(|v| v.as_bytes()), Some(&b"7"[..]), "{answer:?}");
}

#[tokio::test]
async fn client_cert_header_is_ferrys_own() {
    let stack = Stack::new(CONFIG, echo());
    let spoof = [(
        "x-forwarded-client-cert",
        "URI=spiffe://cluster.local/ns/ops/sa/admin",
    )];
    // Removed on a listener without TLS, and never replaced: no verified peer.
    stack.h1("open", request("GET", "/x", &spoof, "")).await;
    // Replaced on a connection with a verified peer.
    stack
        .h1_as("open", PREP, request("GET", "/y", &spoof, ""))
        .await;
    let seen = stack.seen();
    assert_eq!(seen.len(), 2);
    assert!(seen[0].headers.get("x-forwarded-client-cert").is_none());
    let xfcc = seen[1].headers.get_all("x-forwarded-client-cert");
    let values: Vec<_> = xfcc.iter().map(|v| v.to_str().unwrap()).collect();
    let hash = "ab".repeat(32);
    assert_eq!(values, [format!("Hash={hash};URI={PREP}")]);
}

#[tokio::test]
async fn model_rules_read_the_model_from_a_json_body() {
    // No route matches on the model, but a listener rule names models: routing reads the
    // OpenAI-style `model` field for it.
    let stack = Stack::new(CONFIG, echo());
    let chat = |model: &str| {
        let body = format!(r#"{{"model":"{model}","messages":[]}}"#);
        request(
            "POST",
            "/v1/chat/completions",
            &[("content-type", "application/json")],
            body,
        )
    };
    let allowed = stack.h1_as("main", PREP, chat("resnet-xl")).await;
    assert_eq!(allowed.status, StatusCode::OK, "{allowed:?}");
    let denied = stack.h1_as("main", PREP, chat("bert")).await;
    assert_eq!(denied.status, StatusCode::FORBIDDEN);
    // The allowed request's body arrived whole.
    let seen = stack.seen();
    assert_eq!(seen.len(), 1);
    assert!(seen[0].body.starts_with(br#"{"model":"resnet-xl""#));
}
