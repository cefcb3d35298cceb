//! Route state outlives a routing table: an edit elsewhere in the file keeps a route's retry
//! budget (and its stack); an edit to the route itself starts it afresh.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use ferry_proxy::body::full;
use http::{Response, StatusCode};

use crate::support::{Stack, request};

fn config(other_path: &str, budget: &str) -> String {
    format!(
        r#"
apiVersion: ferry/v1
listeners:
  - name: main
    address: 127.0.0.1:0
    routes:
      - name: other
        match: {{ path: {{ prefix: {other_path} }} }}
        to: up
      - name: flaky
        retry: {{ attempts: 2, on: [http-503], budget: {budget}, min_retries_per_second: 0 }}
        to: up
clusters:
  - {{ name: up, endpoints: [127.0.0.1:5001] }}
"#
    )
}

#[tokio::test]
async fn an_unrelated_reload_keeps_the_retry_budget_an_edit_resets_it() {
    // Each request deposits 1 into the budget and a retry withdraws 2 (50 %), with no
    // per-second allowance: only requests served before can pay for a retry.
    let fail_next = Arc::new(AtomicBool::new(false));
    let failing = fail_next.clone();
    let stack = Stack::new(
        &config("/other/", "50%"),
        Arc::new(move |_, _| {
            let mut r = Response::new(full("answer"));
            if failing.swap(false, Ordering::SeqCst) {
                *r.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
            }
            Ok(r)
        }),
    );
    let flaky = || request("GET", "http://svc/x", &[], "");
    for _ in 0..5 {
        assert_eq!(stack.h1("main", flaky()).await.status, StatusCode::OK);
    }
    let state_before = route_state(&stack);

    // An unrelated route changes: the flaky route keeps its state object and its stack.
    stack.reload(&config("/elsewhere/", "50%"));
    assert!(Arc::ptr_eq(&state_before, &route_state(&stack)));
    // The budget the five earlier requests paid in still buys this retry.
    fail_next.store(true, Ordering::SeqCst);
    assert_eq!(stack.h1("main", flaky()).await.status, StatusCode::OK);
    assert!(
        stack
            .metrics()
            .contains(r#"ferry_retries_total{listener="main",route="flaky",reason="answer"} 1"#)
    );

    // Editing the route itself starts a fresh budget: nothing paid in, no retry.
    stack.reload(&config("/elsewhere/", "10%"));
    assert!(!Arc::ptr_eq(&state_before, &route_state(&stack)));
    fail_next.store(true, Ordering::SeqCst);
    assert_eq!(
        stack.h1("main", flaky()).await.status,
        StatusCode::SERVICE_UNAVAILABLE
    );
}

fn route_state(stack: &Stack) -> Arc<ferry_proxy::state::RouteState> {
    let table = stack.shared().table.load();
    let listener = &table.listeners["main"];
    let route = listener
        .routes
        .router
        .iter()
        .find(|r| &*r.name == "flaky")
        .unwrap();
    route.state.clone()
}
