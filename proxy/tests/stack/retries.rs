use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use ferry_proxy::body::full;
use ferry_proxy::upstream::SendError;
use http::{Response, StatusCode};

use crate::support::{Stack, request};

const CONFIG: &str = r#"
apiVersion: ferry/v1
listeners:
  - name: main
    address: 127.0.0.1:0
    routes:
      - name: flaky
        retry: { attempts: 3, on: [http-503, connect-failure], budget: 100%, min_retries_per_second: 100 }
        to: pair
clusters:
  - { name: pair, endpoints: [127.0.0.1:3001, 127.0.0.1:3002], lb: round-robin }
"#;

#[tokio::test]
async fn a_failed_attempt_is_retried_on_the_other_endpoint() {
    // 3001 answers 503; 3002 is fine. Whichever comes first, the answer is 3002's.
    let stack = Stack::new(
        CONFIG,
        Arc::new(|endpoint, _| {
            Ok(if endpoint.port() == 3001 {
                let mut r = Response::new(full("busy"));
                *r.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
                r
            } else {
                Response::new(full("ok"))
            })
        }),
    );
    for _ in 0..4 {
        let answer = stack
            .h1("main", request("POST", "http://svc/x", &[], "payload"))
            .await;
        assert_eq!(
            (answer.status, &answer.body[..]),
            (StatusCode::OK, &b"ok"[..])
        );
    }
    let seen = stack.seen();
    assert!(
        seen.iter().all(|s| s.body == "payload"),
        "retries replay the body"
    );
    let retried = seen.iter().filter(|s| s.endpoint.port() == 3001).count();
    assert!(retried >= 1);
    assert!(
        stack.metrics().contains(&format!(
            r#"ferry_retries_total{{listener="main",route="flaky",reason="answer"}} {retried}"#
        )),
        "{}",
        stack.metrics()
    );
}

#[tokio::test]
async fn connect_failures_are_retried_and_the_last_failure_is_answered() {
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = calls.clone();
    let stack = Stack::new(
        CONFIG,
        Arc::new(move |endpoint, _| {
            counted.fetch_add(1, Ordering::SeqCst);
            Err(SendError::connect(endpoint, "connection refused"))
        }),
    );
    let http = stack
        .h1("main", request("GET", "http://svc/x", &[], ""))
        .await;
    assert_eq!(http.status, StatusCode::SERVICE_UNAVAILABLE);
    let message = http.json()["error"].as_str().unwrap().to_owned();
    assert!(
        message.starts_with("upstream cluster \"pair\" unavailable: connect to 127.0.0.1:300"),
        "{message}"
    );
    assert_eq!(calls.load(Ordering::SeqCst), 3, "three attempts");
}
