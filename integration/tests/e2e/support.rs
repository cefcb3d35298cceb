//! Config builders and shared constants for the e2e tests.

use std::net::SocketAddr;
use std::time::Duration;

use ferry_integration::{Ferry, to_yaml};
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

/// A static cluster.
pub fn cluster(name: &str, endpoints: &[SocketAddr]) -> Value {
    let endpoints: Vec<String> = endpoints.iter().map(|a| a.to_string()).collect();
    json!({ "name": name, "endpoints": endpoints })
}

/// One catch-all route named `all` to `cluster`.
pub fn catch_all(cluster: &str) -> Value {
    json!([{ "name": "all", "to": cluster }])
}

/// A config with a single catch-all route to one upstream.
pub fn one_upstream(addr: SocketAddr) -> Value {
    config(catch_all("up"), json!([cluster("up", &[addr])]))
}

/// Starts ferry with `config` rendered as YAML.
pub async fn start(config: &Value) -> anyhow::Result<Ferry> {
    Ferry::start(&to_yaml(config)).await
}

/// An address on which nothing listens: bound by the kernel, then closed.
pub async fn closed_port() -> anyhow::Result<SocketAddr> {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = l.local_addr()?;
    drop(l);
    Ok(addr)
}
