//! Config builders and request helpers shared by the limits tests.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use ferry_integration::client::{body_full, request};
use ferry_integration::{Admin, Ferry, HttpClient, Reply, eventually, to_yaml};
use http::Method;
use serde_json::{Value, json};

/// Patience for eventual assertions that should pass almost at once.
pub const PATIENCE: Duration = Duration::from_secs(10);

/// Name of the one data listener.
pub const LISTENER: &str = "main";

/// Header the tests tell tenants apart by.
pub const TENANT: &str = "x-tenant";

/// A whole config: admin and one listener named [`LISTENER`], all on `127.0.0.1:0`.
pub fn config(routes: Value, clusters: Value) -> Value {
    json!({
        "apiVersion": "ferry/v1",
        "admin": { "address": "127.0.0.1:0" },
        "listeners": [{ "name": LISTENER, "address": "127.0.0.1:0", "routes": routes }],
        "clusters": clusters,
    })
}

/// A static cluster.
pub fn cluster(name: &str, addr: SocketAddr) -> Value {
    json!({ "name": name, "endpoints": [addr.to_string()] })
}

/// One route named `llm` to cluster `up` at `addr`, with `extra` merged into the route
/// (`rate_limit`, `concurrency`, `timeout`...).
pub fn one_route(addr: SocketAddr, extra: Value) -> Value {
    let mut route = json!({ "name": "llm", "to": "up" });
    if let (Some(r), Value::Object(extra)) = (route.as_object_mut(), extra) {
        r.extend(extra);
    }
    config(json!([route]), json!([cluster("up", addr)]))
}

/// Starts ferry with `config` rendered as YAML.
pub async fn start(config: &Value) -> anyhow::Result<Ferry> {
    Ferry::start(&to_yaml(config)).await
}

/// `GET path` with the given headers.
pub async fn get(
    client: &HttpClient,
    addr: SocketAddr,
    path: &str,
    headers: &[(&str, &str)],
) -> anyhow::Result<Reply> {
    client
        .call(request(
            Method::GET,
            addr,
            path,
            headers,
            body_full(Bytes::new()),
        )?)
        .await
}

/// `GET /` as tenant `tenant`.
pub async fn as_tenant(
    client: &HttpClient,
    addr: SocketAddr,
    tenant: &str,
) -> anyhow::Result<Reply> {
    get(client, addr, "/", &[(TENANT, tenant)]).await
}

/// `POST path` with a JSON body.
pub async fn post_json(
    client: &HttpClient,
    addr: SocketAddr,
    path: &str,
    body: &Value,
) -> anyhow::Result<Reply> {
    client
        .call(request(
            Method::POST,
            addr,
            path,
            &[("content-type", "application/json")],
            body_full(body.to_string()),
        )?)
        .await
}

/// A header as an integer, or an error naming the reply.
pub fn header_u64(reply: &Reply, name: &str) -> anyhow::Result<u64> {
    reply
        .header(name)
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| {
            anyhow::anyhow!(
                "no integer {name} header on {} {:?}: {}",
                reply.status,
                reply.headers,
                reply.text()
            )
        })
}

/// Asserts `reply` is a rate-limit refusal by `limit`: 429, the quota headers, the JSON error.
/// Returns its `retry-after` in seconds.
pub fn assert_limited(reply: &Reply, limit: &str, amount: u64) -> anyhow::Result<u64> {
    anyhow::ensure!(
        reply.status == 429,
        "want 429 from limit {limit:?}, got {} {}",
        reply.status,
        reply.text()
    );
    let retry_after = header_u64(reply, "retry-after")?;
    anyhow::ensure!(retry_after >= 1, "retry-after {retry_after} < 1");
    anyhow::ensure!(header_u64(reply, "x-ratelimit-limit")? == amount);
    anyhow::ensure!(header_u64(reply, "x-ratelimit-remaining")? == 0);
    header_u64(reply, "x-ratelimit-reset")?;
    let body: Value = reply.json()?;
    let error = body["error"].as_str().unwrap_or_default();
    anyhow::ensure!(
        error.starts_with(&format!("rate limit \"{limit}\" exceeded")),
        "429 body does not name the limit {limit:?}: {body}"
    );
    Ok(retry_after)
}

/// `ferry_ratelimit_decisions_total` for one limit and decision.
pub async fn decisions(admin: &Admin, limit: &str, decision: &str) -> anyhow::Result<f64> {
    Ok(admin.metrics().await?.sum(
        "ferry_ratelimit_decisions_total",
        &[("limit", limit), ("decision", decision)],
    ))
}

/// Waits until ferry's effective config (its `/config_dump`) names `generation-{generation}`,
/// the value the test configs' unrelated route sets as a header: that reload has happened.
pub async fn wait_generation(admin: &Admin, generation: &str) -> anyhow::Result<()> {
    eventually(PATIENCE, || async {
        let dump = admin.config_dump().await?;
        let text = dump.to_string();
        anyhow::ensure!(
            text.contains(&format!("generation-{generation}")),
            "config_dump does not show generation {generation} yet"
        );
        Ok(())
    })
    .await
}
