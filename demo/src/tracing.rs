//! The distributed-tracing part of `ferry demo`: two in-process sidecars in a row, a caller's
//! (outbound listener) and a model server's (inbound listener), both with a `tracing` block
//! exporting over OTLP/HTTP (ratio 1) to a receiver in this process ([`receiver`]). One request
//! goes through both with the caller's W3C `traceparent`; the proxies are then shut down, which
//! flushes their export queues, and the trace is printed as a tree ([`tree`]): each sidecar's
//! SERVER span, its CLIENT span (the attempt, whose id the next hop gets as its parent) and the
//! connect phase, nested across both processes, with each sidecar's own time (SERVER minus
//! CLIENT). No collector, no setup.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use ferry_proxy::app::{Proxy, StartOptions};
use http::Method;

use crate::client::RestClient;
use crate::{DRAIN, DemoError};

mod receiver;
mod tree;

use receiver::{Receiver, Span};

/// The caller's trace context (the W3C specification's example ids, sampled).
const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CALLER_SPAN: &str = "00f067aa0ba902b7";
/// Service names in the sidecars' configs (`tracing.service_name`).
const CALLER_SIDECAR: &str = "caller-sidecar";
const MODEL_SIDECAR: &str = "model-sidecar";
/// Shutting the proxies down exports their spans before it returns; this only bounds a
/// straggler (the exporters' own batch delay is 1 s).
const SPAN_PATIENCE: Duration = Duration::from_secs(5);
const PATH: &str = "/v2/models/add_sub/infer";

/// Runs the scene against the model server at `model`.
pub async fn run(model: SocketAddr) -> Result<(), DemoError> {
    let mut receiver = Receiver::start().await.map_err(DemoError::Tracing)?;
    let endpoint = receiver.endpoint();
    let model_sidecar = start(
        "demo-tracing-model.yaml",
        &sidecar_yaml(
            &endpoint,
            MODEL_SIDECAR,
            "inbound",
            "models",
            "model",
            model,
        ),
    )
    .await?;
    let model_in = model_sidecar
        .listener_addr("inbound")
        .ok_or(DemoError::NoInbound)?;
    let caller_sidecar = match start(
        "demo-tracing-caller.yaml",
        &sidecar_yaml(
            &endpoint,
            CALLER_SIDECAR,
            "outbound",
            "to-models",
            "model-sidecar",
            model_in,
        ),
    )
    .await
    {
        Ok(proxy) => proxy,
        Err(e) => {
            model_sidecar.shutdown(DRAIN).await;
            return Err(e);
        }
    };
    let outbound = caller_sidecar.listener_addr("outbound");
    println!();
    println!(
        "tracing: two sidecars in a row, each exporting its spans over OTLP/HTTP to a receiver in this process"
    );
    println!(
        "  caller -> {CALLER_SIDECAR} {} -> {MODEL_SIDECAR} {model_in} -> model server {model}",
        outbound.map_or_else(|| "?".to_owned(), |a| a.to_string())
    );
    println!(
        "  both: tracing: {{ otlp: {{ endpoint: {endpoint}, protocol: http }}, sampling: {{ ratio: 1.0 }} }}"
    );
    let sent = match outbound {
        Some(addr) => send(addr).await,
        None => Err(DemoError::NoInbound),
    };
    // Draining flushes each sidecar's export queue: its spans are at the receiver on return.
    caller_sidecar.shutdown(DRAIN).await;
    model_sidecar.shutdown(DRAIN).await;
    let status = sent?;
    let spans: Vec<Span> = receiver
        .wait_for(SPAN_PATIENCE, |spans| complete(&of_trace(spans)))
        .await;
    receiver.stop().await;
    report(status, &of_trace(&spans))
}

/// The sidecar config: one listener, one route to one cluster, traced.
fn sidecar_yaml(
    endpoint: &str,
    service: &str,
    listener: &str,
    route: &str,
    cluster: &str,
    upstream: SocketAddr,
) -> String {
    format!(
        "apiVersion: ferry/v1
admin: {{ address: 127.0.0.1:0 }}
tracing:
  otlp: {{ endpoint: \"{endpoint}\", protocol: http, timeout: 2s }}
  service_name: {service}
  sampling: {{ ratio: 1.0 }}
listeners:
  - name: {listener}
    address: 127.0.0.1:0
    routes: [{{ name: {route}, to: {cluster} }}]
clusters:
  - {{ name: {cluster}, endpoints: [{upstream}] }}
"
    )
}

async fn start(name: &str, yaml: &str) -> Result<Proxy, DemoError> {
    let config = ferry_config::parse(name, yaml).map_err(DemoError::SceneConfig)?;
    let started = tokio::time::timeout(
        Duration::from_secs(10),
        Proxy::start(config, StartOptions::default()),
    );
    match started.await {
        Ok(Ok(proxy)) => Ok(proxy),
        Ok(Err(e)) => Err(DemoError::Start(e)),
        Err(_) => Err(DemoError::Unexpected(vec!["tracing sidecar start"])),
    }
}

/// One inference through both sidecars with the caller's `traceparent`; its status.
async fn send(outbound: SocketAddr) -> Result<u16, DemoError> {
    let mut client = RestClient::connect(outbound)
        .await
        .map_err(DemoError::Client)?;
    let traceparent = format!("00-{TRACE_ID}-{CALLER_SPAN}-01");
    let body = Bytes::from_static(
        br#"{"inputs":[{"name":"INPUT0","shape":[1],"datatype":"FP32","data":[1]},{"name":"INPUT1","shape":[1],"datatype":"FP32","data":[2]}]}"#,
    );
    let reply = client
        .send_full(
            Method::POST,
            PATH,
            &[("traceparent", &traceparent)],
            Some(body),
        )
        .await
        .map_err(DemoError::Client)?;
    Ok(reply.status.as_u16())
}

fn of_trace(spans: &[Span]) -> Vec<Span> {
    spans
        .iter()
        .filter(|s| s.trace_id == TRACE_ID)
        .cloned()
        .collect()
}

/// The span of `kind` that `service` reported.
fn find<'a>(spans: &'a [Span], service: &str, kind: &str) -> Option<&'a Span> {
    spans
        .iter()
        .find(|s| s.service == service && s.kind == kind)
}

/// Both sidecars' SERVER and CLIENT spans are in.
fn complete(spans: &[Span]) -> bool {
    [CALLER_SIDECAR, MODEL_SIDECAR]
        .iter()
        .all(|svc| find(spans, svc, "SERVER").is_some() && find(spans, svc, "CLIENT").is_some())
}

/// Prints the trace; fails unless the hops link up: the caller's span → the caller sidecar's
/// SERVER → its CLIENT → the model sidecar's SERVER → its CLIENT.
fn report(status: u16, spans: &[Span]) -> Result<(), DemoError> {
    println!(
        "[t1] POST {PATH} with traceparent 00-{TRACE_ID}-{CALLER_SPAN}-01 -> {status} ; {} spans of that trace received",
        spans.len()
    );
    println!("     parent {CALLER_SPAN}: the caller's span (this demo's client; not exported)");
    for line in tree::lines(spans) {
        println!("     {line}");
    }
    let hops = [CALLER_SIDECAR, MODEL_SIDECAR].map(|svc| {
        let server = find(spans, svc, "SERVER");
        let client = find(spans, svc, "CLIENT");
        (svc, server, client)
    });
    let own: Vec<String> = hops
        .iter()
        .filter_map(|(svc, server, _)| {
            let server = (*server)?;
            Some(format!(
                "{svc} {}",
                tree::duration(tree::own_time(spans, server))
            ))
        })
        .collect();
    println!(
        "     each sidecar's own time (its SERVER span minus its CLIENT span): {}",
        own.join(", ")
    );
    let [
        (_, caller_server, caller_client),
        (_, model_server, model_client),
    ] = hops;
    let linked = match (caller_server, caller_client, model_server, model_client) {
        (Some(cs), Some(cc), Some(ms), Some(mc)) => {
            cs.parent_id == CALLER_SPAN
                && cc.parent_id == cs.span_id
                && ms.parent_id == cc.span_id
                && mc.parent_id == ms.span_id
        }
        _ => false,
    };
    if status == 200 && linked {
        Ok(())
    } else {
        Err(DemoError::Unexpected(vec!["tracing scene"]))
    }
}
