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

/// Writes `raw` on a fresh connection and reads until the server closes it (bounded).
async fn exchange(stack: &Stack, raw: &[u8]) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut conn = stack.raw("main");
    conn.write_all(raw).await.unwrap();
    let mut out = Vec::new();
    let read = tokio::time::timeout(
        std::time::Duration::from_secs(5),
        conn.read_to_end(&mut out),
    );
    read.await
        .expect("the server closes the connection")
        .unwrap();
    String::from_utf8_lossy(&out).into_owned()
}

#[tokio::test]
async fn a_malformed_chunked_body_is_the_callers_fault() {
    let stack = Stack::new(CONFIG, echo());
    for body in [
        "zz\r\nabc\r\n0\r\n\r\n".to_owned(),
        "100000000000000000000\r\nabc\r\n0\r\n\r\n".to_owned(),
        format!("3;{}\r\nabc\r\n0\r\n\r\n", "x".repeat(70_000)),
    ] {
        let raw = format!(
            "POST /plain/x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n{body}"
        );
        let answer = exchange(&stack, raw.as_bytes()).await;
        assert!(
            answer.starts_with("HTTP/1.1 400"),
            "{}",
            &answer[..answer.len().min(300)]
        );
    }
    // Nothing counts against the upstream.
    assert!(
        !stack.metrics().contains("code=\"503\""),
        "{}",
        stack.metrics()
    );
}

#[tokio::test]
async fn an_http11_request_without_host_is_400_and_http10_is_served() {
    let stack = Stack::new(CONFIG, echo());
    let answer = exchange(
        &stack,
        b"GET /plain/x HTTP/1.1\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
    assert!(answer.contains("Host"), "{answer}");
    assert!(stack.seen().is_empty());
    let answer = exchange(&stack, b"GET /plain/x HTTP/1.0\r\n\r\n").await;
    assert!(
        answer.starts_with("HTTP/1.0 200") || answer.starts_with("HTTP/1.1 200"),
        "{answer}"
    );
}

#[tokio::test]
async fn an_absolute_form_target_wins_over_host() {
    let stack = Stack::new(CONFIG, echo());
    let answer = exchange(
        &stack,
        b"GET http://a.example/plain/x HTTP/1.1\r\nHost: b.example\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert_eq!(stack.seen()[0].headers["host"], "a.example");
}

#[tokio::test]
async fn an_h2_host_header_that_differs_from_authority_is_400() {
    let stack = Stack::new(CONFIG, echo());
    let req = http::Request::builder()
        .uri("http://evil.example/plain/x")
        .header("host", "good.example")
        .body(http_body_util::Full::new(bytes::Bytes::new()))
        .unwrap();
    let answer = stack.h2("main", req).await;
    assert_eq!(answer.status, StatusCode::BAD_REQUEST);
    assert!(stack.seen().is_empty());
}
