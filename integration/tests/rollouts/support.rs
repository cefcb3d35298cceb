//! Config builders shared by the rollout tests.

use std::net::SocketAddr;
use std::time::Duration;

use ferry_integration::client::{body_full, request};
use ferry_integration::{EchoReport, Ferry, HttpClient, to_yaml};
use http::Method;
use serde_json::{Value, json};

/// Patience for eventual assertions that should pass almost at once.
pub const PATIENCE: Duration = Duration::from_secs(10);

/// Name of the one data listener in [`config`].
pub const LISTENER: &str = "main";

/// A whole config: admin and one listener named [`LISTENER`], all on `127.0.0.1:0`.
pub fn config(routes: Value, clusters: Value) -> Value {
    json!({
        "apiVersion": "ferry/v1",
        "admin": { "address": "127.0.0.1:0" },
        "listeners": [{ "name": LISTENER, "address": "127.0.0.1:0", "routes": routes }],
        "clusters": clusters,
    })
}

/// A static cluster balancing with `lb`.
pub fn cluster(name: &str, endpoints: &[SocketAddr], lb: Value) -> Value {
    let endpoints: Vec<String> = endpoints.iter().map(|a| a.to_string()).collect();
    json!({ "name": name, "endpoints": endpoints, "lb": lb })
}

/// Starts ferry with `config` rendered as YAML.
pub async fn start(config: &Value) -> anyhow::Result<Ferry> {
    Ferry::start(&to_yaml(config)).await
}

/// Sends one request and returns the echo instance that answered it.
pub async fn instance(
    client: &HttpClient,
    addr: SocketAddr,
    method: Method,
    headers: &[(&str, &str)],
    body: String,
) -> anyhow::Result<String> {
    let req = request(
        method,
        addr,
        "/v1/chat/completions",
        headers,
        body_full(body),
    )?;
    let reply = client.call(req).await?;
    anyhow::ensure!(
        reply.status == 200,
        "status {}: {}",
        reply.status,
        reply.text()
    );
    Ok(reply.json::<EchoReport>()?.instance)
}
