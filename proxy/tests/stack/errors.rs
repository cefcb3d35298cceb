//! One renderer: the same fault gets the same answer on every kind of route, in the caller's
//! protocol.

use http::StatusCode;

use crate::support::{Stack, echo, request};

const CONFIG: &str = r#"
apiVersion: ferry/v1
listeners:
  - name: main
    address: 127.0.0.1:0
    limits: { max_request_body_bytes: 64 }
    routes:
      - name: translated
        match: { path: { prefix: /v2/ } }
        translate: { from: rest, to: grpc, protocol: oip-v2 }
        to: grpc
      - name: plain
        match: { path: { prefix: /plain/ } }
        timeout: 50ms
        to: slow
clusters:
  - { name: grpc, endpoints: [127.0.0.1:2001], protocol: h2 }
  - { name: slow, endpoints: [127.0.0.1:2002] }
"#;

#[tokio::test]
async fn no_route_is_404_json_or_unimplemented() {
    let stack = Stack::new(CONFIG, echo());
    let http = stack
        .h1("main", request("GET", "http://svc/x", &[], ""))
        .await;
    assert_eq!(http.status, StatusCode::NOT_FOUND);
    assert_eq!(http.json()["error"], "no route matches GET /x");
    let grpc = stack
        .h2(
            "main",
            request(
                "POST",
                "http://svc/pkg.Svc/Call",
                &[("content-type", "application/grpc")],
                "",
            ),
        )
        .await;
    assert_eq!(grpc.status, StatusCode::OK);
    assert_eq!(grpc.grpc_status().as_deref(), Some("12"));
    assert!(stack.metrics().contains(
        r#"ferry_requests_total{listener="main",route="",cluster="",model="",code="404"} 1"#
    ));
}

#[tokio::test]
async fn an_oversized_body_is_413_on_plain_and_translated_routes_alike() {
    let stack = Stack::new(CONFIG, echo());
    let big = vec![b'x'; 100];
    for path in ["/plain/upload", "/v2/models/m/infer"] {
        let answer = stack
            .h1(
                "main",
                request("POST", &format!("http://svc{path}"), &[], big.clone()),
            )
            .await;
        assert_eq!(answer.status, StatusCode::PAYLOAD_TOO_LARGE, "{path}");
        assert_eq!(
            answer.json()["error"],
            "request body exceeds the limit of 64 bytes",
            "{path}"
        );
    }
    assert!(stack.seen().is_empty(), "nothing oversized went upstream");
}

#[tokio::test]
async fn a_slow_upstream_is_504_or_deadline_exceeded() {
    let stack = Stack::new(CONFIG, echo());
    let slow = [("x-test-delay-ms", "2000")];
    let http = stack
        .h1("main", request("GET", "http://svc/plain/x", &slow, ""))
        .await;
    assert_eq!(http.status, StatusCode::GATEWAY_TIMEOUT);
    assert_eq!(
        http.json()["error"],
        "upstream cluster \"slow\" did not answer within 50 ms"
    );
    let grpc = stack
        .h2(
            "main",
            request(
                "POST",
                "http://svc/plain/pkg.Svc/Call",
                &[slow[0], ("content-type", "application/grpc")],
                "",
            ),
        )
        .await;
    assert_eq!(grpc.grpc_status().as_deref(), Some("4"));
}
