use std::sync::Arc;

use ferry_proxy::body::full;
use http::{Response, StatusCode};

use crate::support::{Stack, echo, request};

const CONFIG: &str = r#"
apiVersion: ferry/v1
listeners:
  - name: main
    address: 127.0.0.1:0
    routes:
      - name: by-header
        match: { path: { prefix: /a/ }, headers: [{ name: x-tenant, exact: gold }] }
        request_headers: { set: { x-route: by-header } }
        response_headers: { set: { x-answered-by: gold } }
        to: gold
      - name: by-model
        match: { model: { name: resnet } }
        prefix_rewrite: { from: /v2/, to: /api/v2/ }
        to: models
      - name: canned
        match: { path: { exact: /hello } }
        direct_response: { status: 202, body: hi }
      - name: rest
        match: { path: { prefix: /a/ } }
        to: plain
clusters:
  - { name: gold, endpoints: [127.0.0.1:1001] }
  - { name: models, endpoints: [127.0.0.1:1002] }
  - { name: plain, endpoints: [127.0.0.1:1003] }
"#;

#[tokio::test]
async fn routes_by_header_model_and_path_and_applies_their_edits() {
    let stack = Stack::new(CONFIG, echo());
    let gold = stack
        .h1(
            "main",
            request("GET", "http://svc/a/x", &[("x-tenant", "gold")], ""),
        )
        .await;
    assert_eq!(gold.status, StatusCode::OK);
    assert_eq!(gold.body, "from 127.0.0.1:1001 /a/x");
    assert_eq!(gold.headers["x-answered-by"], "gold");
    assert!(gold.headers.contains_key("x-request-id"));

    let plain = stack
        .h2("main", request("GET", "http://svc/a/x", &[], ""))
        .await;
    assert_eq!(plain.body, "from 127.0.0.1:1003 /a/x");
    assert!(!plain.headers.contains_key("x-answered-by"));

    // The model comes from the JSON body; the body reaches the upstream untouched.
    let body = r#"{"model":"resnet","inputs":[]}"#;
    let model = stack
        .h1(
            "main",
            request(
                "POST",
                "http://svc/v2/infer",
                &[("content-type", "application/json")],
                body,
            ),
        )
        .await;
    assert_eq!(model.body, "from 127.0.0.1:1002 /api/v2/infer");

    let canned = stack
        .h1("main", request("GET", "http://svc/hello", &[], ""))
        .await;
    assert_eq!(
        (canned.status, &canned.body[..]),
        (StatusCode::ACCEPTED, &b"hi"[..])
    );

    let seen = stack.seen();
    assert_eq!(seen.len(), 3, "the direct response called no upstream");
    assert_eq!(seen[0].headers["x-route"], "by-header");
    assert_eq!(seen[0].headers["x-forwarded-for"], "192.0.2.7");
    assert_eq!(seen[2].body, body);
    assert_eq!(seen[2].method, http::Method::POST);
}

#[tokio::test]
async fn every_answer_carries_the_request_id_it_came_with() {
    let stack = Stack::new(CONFIG, Arc::new(|_, _| Ok(Response::new(full("")))));
    for path in ["/a/x", "/nowhere"] {
        let answer = stack
            .h1(
                "main",
                request(
                    "GET",
                    &format!("http://svc{path}"),
                    &[("x-request-id", "abc-1")],
                    "",
                ),
            )
            .await;
        assert_eq!(answer.headers["x-request-id"], "abc-1", "{path}");
    }
    assert_eq!(stack.seen()[0].headers["x-request-id"], "abc-1");
}

#[tokio::test]
async fn request_and_response_sizes_are_observed_per_route() {
    let stack = Stack::new(CONFIG, echo());
    let answer = stack
        .h1("main", request("POST", "/a/x", &[], "0123456789"))
        .await;
    assert_eq!(answer.status, StatusCode::OK);
    let sent = answer.body.len();
    let h2 = stack.h2("main", request("POST", "/a/y", &[], "abc")).await;
    assert_eq!(h2.status, StatusCode::OK);
    // Observed when the answer's body is done: wait for the second one (bounded).
    let want_response = (sent + h2.body.len()) as u64;
    let mut metrics = String::new();
    for _ in 0..100 {
        metrics = stack.metrics();
        if metrics.contains("ferry_response_size_bytes_count{listener=\"main\",route=\"rest\"} 2") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    let sum = |name: &str| {
        metrics
            .lines()
            .find(|l| l.starts_with(&format!("{name}_sum{{listener=\"main\",route=\"rest\"}}")))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse::<f64>().ok())
    };
    assert_eq!(sum("ferry_request_size_bytes"), Some(13.0), "{metrics}");
    assert_eq!(
        sum("ferry_response_size_bytes"),
        Some(want_response as f64),
        "{metrics}"
    );
}
