//! The overload-protection part of `ferry demo`: a sidecar whose route allows each tenant 3
//! requests per 10 seconds. Five quick requests from one tenant: three answered, two refused
//! with 429 and the headers OpenAI clients read; another tenant is unaffected.

use std::net::SocketAddr;

use ferry_proxy::app::{Proxy, StartOptions};
use http::Method;

use crate::client::RestClient;
use crate::{DRAIN, DemoError};

/// Runs the scene against the model server at `model`.
pub async fn run(model: SocketAddr) -> Result<(), DemoError> {
    let yaml = format!(
        "apiVersion: ferry/v1
admin: {{ address: 127.0.0.1:0 }}
listeners:
  - name: inbound
    address: 127.0.0.1:0
    routes:
      - name: models
        to: model
        rate_limit:
          - {{ name: per-tenant, requests: 3, per: 10s, key: [header:x-tenant] }}
        concurrency: {{ max: 4, queue: 8, queue_timeout: 1s }}
clusters:
  - {{ name: model, endpoints: [{model}] }}
"
    );
    let config = ferry_config::parse("demo-limits.yaml", &yaml).map_err(DemoError::SceneConfig)?;
    let proxy = Proxy::start(config, StartOptions::default())
        .await
        .map_err(DemoError::Start)?;
    let outcome = scene(&proxy).await;
    proxy.shutdown(DRAIN).await;
    outcome
}

async fn scene(proxy: &Proxy) -> Result<(), DemoError> {
    let inbound = proxy.listener_addr("inbound").ok_or(DemoError::NoInbound)?;
    println!();
    println!(
        "rate limits: route 'models' allows 3 requests per 10 s per x-tenant (and 4 in flight per model)"
    );
    let mut statuses = Vec::new();
    for (i, tenant) in ["team-a", "team-a", "team-a", "team-a", "team-a", "team-b"]
        .into_iter()
        .enumerate()
    {
        let mut client = RestClient::connect(inbound)
            .await
            .map_err(DemoError::Client)?;
        let reply = client
            .send_with(Method::GET, "/v2/models/add_sub", &[("x-tenant", tenant)])
            .await
            .map_err(DemoError::Client)?;
        let header = |n: &str| {
            reply
                .headers
                .get(n)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("-")
                .to_owned()
        };
        println!(
            "[l{}] x-tenant: {tenant}  -> {}  x-ratelimit-remaining={} retry-after={}",
            i + 1,
            reply.status.as_u16(),
            header("x-ratelimit-remaining"),
            header("retry-after"),
        );
        statuses.push(reply.status.as_u16());
    }
    let metrics = proxy.shared().metrics.encode(false);
    let limited = metrics
        .lines()
        .find(|l| {
            l.starts_with("ferry_ratelimit_decisions_total") && l.contains("decision=\"limited\"")
        })
        .and_then(|l| l.rsplit(' ').next())
        .unwrap_or("0")
        .to_owned();
    println!(
        "     ferry_ratelimit_decisions_total{{limit=\"per-tenant\",decision=\"limited\"}} {limited}"
    );
    if statuses == [200, 200, 200, 429, 429, 200] {
        Ok(())
    } else {
        Err(DemoError::Unexpected(vec!["rate-limit scene"]))
    }
}
