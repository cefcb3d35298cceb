//! Rate limits and concurrency limits in a route's stack, and their state across reloads.

use http::StatusCode;

use crate::support::{Stack, echo, request};

const CONFIG: &str = r#"
apiVersion: ferry/v1
listeners:
  - name: main
    address: 127.0.0.1:0
    routes:
      - name: llm
        match: { path: { prefix: /v1/ } }
        to: models
        rate_limit:
          - { name: per-tenant, requests: 2, per: 1m, key: [header:x-tenant] }
          - { name: watch, requests: 1, per: 1m, mode: shadow }
      - name: other
        to: models
clusters:
  - { name: models, endpoints: [127.0.0.1:1001] }
"#;

fn chat(tenant: &str) -> http::Request<http_body_util::Full<bytes::Bytes>> {
    request(
        "POST",
        "/v1/chat/completions",
        &[("x-tenant", tenant)],
        "{}",
    )
}

#[tokio::test]
async fn a_tenant_over_its_rate_gets_429_and_others_do_not() {
    let stack = Stack::new(CONFIG, echo());
    let first = stack.h1("main", chat("a")).await;
    assert_eq!(first.status, StatusCode::OK);
    assert_eq!(first.headers["x-ratelimit-limit"], "2");
    // The shadow limit is tighter, and invisible to callers.
    assert_eq!(first.headers["x-ratelimit-remaining"], "1");
    assert_eq!(stack.h1("main", chat("a")).await.status, StatusCode::OK);
    let third = stack.h1("main", chat("a")).await;
    assert_eq!(third.status, StatusCode::TOO_MANY_REQUESTS);
    assert!(third.headers.contains_key("retry-after"));
    assert!(String::from_utf8_lossy(&third.body).contains("per-tenant"));
    assert_eq!(stack.h1("main", chat("b")).await.status, StatusCode::OK);
    // The unlimited route is untouched.
    let other = stack.h1("main", request("GET", "/x", &[], "")).await;
    assert_eq!(other.status, StatusCode::OK);
    assert!(!other.headers.contains_key("x-ratelimit-limit"));
    let m = stack.metrics();
    for line in [
        r#"ferry_ratelimit_decisions_total{listener="main",route="llm",limit="per-tenant",decision="limited"} 1"#,
        r#"ferry_ratelimit_decisions_total{listener="main",route="llm",limit="per-tenant",decision="allowed"} 3"#,
        r#"ferry_ratelimit_decisions_total{listener="main",route="llm",limit="watch",decision="shadow_limited"} 2"#,
    ] {
        assert!(m.contains(line), "{line} not in\n{m}");
    }
    // Only admitted requests reached the upstream.
    assert_eq!(stack.seen().len(), 4);
}

#[tokio::test]
async fn an_unrelated_edit_keeps_the_counters_and_a_changed_limit_starts_afresh() {
    let stack = Stack::new(CONFIG, echo());
    stack.h1("main", chat("a")).await;
    stack.h1("main", chat("a")).await;
    // Another route changes, and this route's timeout: the limit's own definition does not.
    let edited = CONFIG
        .replace(
            "      - name: other\n        to: models",
            "      - name: other\n        to: models\n        timeout: 3s",
        )
        .replace(
            "        to: models\n        rate_limit:",
            "        to: models\n        timeout: 9s\n        rate_limit:",
        );
    stack.reload(&edited);
    assert_eq!(
        stack.h1("main", chat("a")).await.status,
        StatusCode::TOO_MANY_REQUESTS
    );
    // A new amount is a new limit.
    stack.reload(&edited.replace("requests: 2, per: 1m", "requests: 5, per: 1m"));
    assert_eq!(stack.h1("main", chat("a")).await.status, StatusCode::OK);
}

#[tokio::test]
async fn a_full_concurrency_queue_is_503() {
    let config = r#"
apiVersion: ferry/v1
listeners:
  - name: main
    address: 127.0.0.1:0
    routes:
      - name: slow
        to: models
        concurrency: { max: 1, queue: 0 }
clusters:
  - { name: models, endpoints: [127.0.0.1:1001] }
"#;
    let stack = std::sync::Arc::new(Stack::new(config, echo()));
    let busy = stack.clone();
    let held = tokio::spawn(async move {
        busy.h1(
            "main",
            request(
                "GET",
                "/v2/models/m/infer",
                &[("x-test-delay-ms", "300")],
                "",
            ),
        )
        .await
    });
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    let shed = stack
        .h1("main", request("GET", "/v2/models/m/infer", &[], ""))
        .await;
    assert_eq!(shed.status, StatusCode::SERVICE_UNAVAILABLE);
    // Another model has its own slot.
    let other = stack
        .h1("main", request("GET", "/v2/models/n/infer", &[], ""))
        .await;
    assert_eq!(other.status, StatusCode::OK);
    assert_eq!(held.await.unwrap().status, StatusCode::OK);
    let again = stack
        .h1("main", request("GET", "/v2/models/m/infer", &[], ""))
        .await;
    assert_eq!(again.status, StatusCode::OK);
}
