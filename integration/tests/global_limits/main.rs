//! `scope: global` rate limits and token budgets through the real binary, with a real
//! `redis-server` (Debian's, installed by the test set-up) shared by two ferry processes, and an
//! OpenAI-compatible stand-in upstream (this crate's own: LiteLLM's dependency tree is too
//! large to install on every CI run).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code fails the test by panicking"
)]

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use ferry_integration::client::{body_full, request};
use ferry_integration::redis::RedisServer;
use ferry_integration::upstream::openai::{OpenAi, USAGE_TOTAL};
use ferry_integration::{Admin, Echo, Ferry, HttpClient, eventually, to_yaml};
use http::Method;
use serde_json::{Value, json};

fn config(redis: SocketAddr, on_failure: &str, limits: Value, upstream: SocketAddr) -> String {
    to_yaml(&json!({
        "apiVersion": "ferry/v1",
        "admin": { "address": "127.0.0.1:0" },
        "redis": { "address": redis.to_string(), "timeout": "100ms", "on_failure": on_failure },
        "listeners": [{
            "name": "main",
            "address": "127.0.0.1:0",
            "routes": [{ "name": "llm", "to": "model", "rate_limit": limits }],
        }],
        "clusters": [{ "name": "model", "endpoints": [upstream.to_string()] }],
    }))
}

async fn get(ferry: &Ferry, tenant: &str) -> u16 {
    let client = HttpClient::http1();
    let req = request(
        Method::GET,
        ferry.listener("main").unwrap(),
        "/x",
        &[("x-tenant", tenant)],
        body_full(Bytes::new()),
    )
    .unwrap();
    client.call(req).await.unwrap().status.as_u16()
}

#[tokio::test]
async fn two_sidecars_sharing_redis_admit_no_more_than_the_limit() {
    let redis = RedisServer::start().await.unwrap();
    let app = Echo::start("app").await.unwrap();
    let limits =
        json!([{ "requests": 10, "per": "1m", "key": ["header:x-tenant"], "scope": "global" }]);
    let yaml = config(redis.addr(), "allow", limits, app.addr());
    let a = Ferry::start(&yaml).await.unwrap();
    let b = Ferry::start(&yaml).await.unwrap();
    let mut admitted = 0;
    for i in 0..30 {
        let ferry = if i % 2 == 0 { &a } else { &b };
        if get(ferry, "shared").await == 200 {
            admitted += 1;
        }
    }
    assert_eq!(
        admitted, 10,
        "two sidecars together admitted {admitted} of a limit of 10"
    );
    // Another tenant has its own count.
    assert_eq!(get(&a, "other").await, 200);
}

#[tokio::test]
async fn a_dead_redis_fails_open_or_closed_and_ferry_recovers_by_itself() {
    let mut redis = RedisServer::start().await.unwrap();
    let app = Echo::start("app").await.unwrap();
    let limits =
        json!([{ "requests": 3, "per": "1m", "key": ["header:x-tenant"], "scope": "global" }]);
    let open = Ferry::start(&config(redis.addr(), "allow", limits.clone(), app.addr()))
        .await
        .unwrap();
    let closed = Ferry::start(&config(redis.addr(), "deny", limits, app.addr()))
        .await
        .unwrap();
    assert_eq!(get(&open, "t").await, 200);
    redis.kill().await;
    for _ in 0..5 {
        assert_eq!(get(&open, "down").await, 200, "fail open admits");
        assert_eq!(get(&closed, "down").await, 503, "fail closed refuses");
    }
    let m = Admin::new(open.admin()).metrics().await.unwrap();
    assert!(m.sum("ferry_ratelimit_backend_errors_total", &[]) >= 5.0);
    assert!(
        m.sum(
            "ferry_ratelimit_decisions_total",
            &[("decision", "failed_open")]
        ) >= 5.0
    );
    // Back again: both sidecars count through redis once more, with no restart of their own.
    redis.restart().await.unwrap();
    eventually(Duration::from_secs(15), || async {
        let statuses = [get(&closed, "back").await, get(&closed, "back").await];
        anyhow::ensure!(
            statuses.iter().all(|s| *s != 503),
            "still failing closed: {statuses:?}"
        );
        Ok(())
    })
    .await
    .unwrap();
    let mut last = 0;
    for _ in 0..4 {
        last = get(&open, "after").await;
    }
    assert_eq!(last, 429, "the limit holds again once redis is back");
}

async fn chat(ferry: &Ferry, body: Value) -> (u16, String) {
    let client = HttpClient::http1();
    let text = body.to_string();
    let req = request(
        Method::POST,
        ferry.listener("main").unwrap(),
        "/v1/chat/completions",
        &[("x-tenant", "team-a"), ("content-type", "application/json")],
        body_full(Bytes::from(text)),
    )
    .unwrap();
    let reply = client.call(req).await.unwrap();
    (reply.status.as_u16(), reply.text())
}

#[tokio::test]
async fn a_global_token_budget_is_charged_from_json_and_streamed_answers() {
    let redis = RedisServer::start().await.unwrap();
    let model = OpenAi::start().await.unwrap();
    // 3 answers' worth of tokens (30 each): the fourth request finds the budget spent.
    let limits = json!([{ "tokens": 3 * USAGE_TOTAL, "per": "1m", "key": ["header:x-tenant"], "scope": "global" }]);
    let ferry = Ferry::start(&config(redis.addr(), "allow", limits, model.addr()))
        .await
        .unwrap();
    let plain = json!({ "model": "m", "messages": [] });
    let streamed = json!({ "model": "m", "messages": [], "stream": true });
    assert_eq!(chat(&ferry, plain.clone()).await.0, 200);
    let (status, sse) = chat(&ferry, streamed.clone()).await;
    assert_eq!(status, 200);
    assert!(
        sse.contains("\"usage\""),
        "ferry asked the model for usage: {sse}"
    );
    assert_eq!(model.asked_for_usage(), [true]);
    // Charging happens as each answer ends; give it a moment to reach redis.
    eventually(Duration::from_secs(5), || async {
        let (status, _) = chat(&ferry, plain.clone()).await;
        anyhow::ensure!(status == 429, "budget not spent yet: {status}");
        Ok(())
    })
    .await
    .unwrap();
    let (status, body) = chat(&ferry, plain).await;
    assert_eq!(status, 429);
    assert!(body.contains("rate_limit[0]"), "{body}");
}
