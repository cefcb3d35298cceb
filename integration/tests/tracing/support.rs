//! What the tracing scenarios share: configs for traced sidecars, callers' trace ids, the
//! requests, and lookups over the spans Phoenix returns.

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::Context as _;
use ferry_integration::client::{body_full, request};
use ferry_integration::phoenix::Span;
use ferry_integration::{EchoReport, Ferry, HttpClient, Phoenix, Reply, to_yaml};
use http::Method;
use serde_json::{Value, json};

/// From a request's end to its spans being queryable in Phoenix: ferry batches for up to 1 s,
/// Phoenix inserts in batches too, and the machine is shared by every scenario at once.
pub const PATIENCE: Duration = Duration::from_secs(45);

/// The `tracing.otlp` block exporting to `phoenix` over OTLP gRPC.
pub fn otlp_grpc(phoenix: &Phoenix) -> Value {
    json!({ "endpoint": phoenix.otlp_grpc_endpoint(), "protocol": "grpc" })
}

/// A whole config: admin on a kernel port, `tracing`, `listeners` and `clusters`.
pub fn config(tracing: Value, listeners: Value, clusters: Value) -> String {
    to_yaml(&json!({
        "apiVersion": "ferry/v1",
        "admin": { "address": "127.0.0.1:0" },
        "tracing": tracing,
        "listeners": listeners,
        "clusters": clusters,
    }))
}

/// A sidecar: listener `main` whose one route `models` goes to the cluster `model` at
/// `upstream`.
pub fn sidecar(tracing: Value, upstream: SocketAddr) -> String {
    config(
        tracing,
        json!([{
            "name": "main",
            "address": "127.0.0.1:0",
            "routes": [{ "name": "models", "to": "model" }],
        }]),
        json!([{ "name": "model", "endpoints": [upstream.to_string()] }]),
    )
}

/// Starts ferry with `yaml`, its spans going to `project` (the resource attribute Phoenix
/// sorts spans into projects by).
pub async fn start(yaml: &str, project: &str) -> anyhow::Result<Ferry> {
    let resource = Phoenix::resource_attributes(project);
    Ferry::start_with_env(yaml, &[("OTEL_RESOURCE_ATTRIBUTES", &resource)]).await
}

/// `n` random bytes as lower-case hex (never all zero): callers' trace and span ids, unique per
/// run so a trace in Phoenix can only be this run's.
pub fn random_hex(n: usize) -> String {
    use std::hash::{BuildHasher as _, Hasher as _};
    let mut out = String::with_capacity(n * 2);
    while out.len() < n * 2 {
        // Every RandomState is seeded afresh: randomness without a dependency.
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or_default(),
        );
        out.push_str(&format!("{:016x}", h.finish() | 1));
    }
    out.truncate(n * 2);
    out
}

/// A new caller context: (trace id, span id).
pub fn caller() -> (String, String) {
    (random_hex(16), random_hex(8))
}

/// `GET http://addr{path}` with `headers`.
pub async fn get(
    client: &HttpClient,
    addr: SocketAddr,
    path: &str,
    headers: &[(&str, &str)],
) -> anyhow::Result<Reply> {
    client
        .call(request(Method::GET, addr, path, headers, body_full(""))?)
        .await
}

/// What the echo upstream reports it received, from a 2xx (or steered) echo answer.
pub fn echoed(reply: &Reply) -> anyhow::Result<EchoReport> {
    reply.json()
}

/// A W3C `traceparent`'s (trace id, parent id, flags).
pub fn traceparent_parts(value: &str) -> anyhow::Result<(String, String, String)> {
    let parts: Vec<&str> = value.split('-').collect();
    match parts.as_slice() {
        ["00", trace, span, flags] if trace.len() == 32 && span.len() == 16 => {
            Ok(((*trace).to_owned(), (*span).to_owned(), (*flags).to_owned()))
        }
        _ => anyhow::bail!("not a version-00 traceparent: {value:?}"),
    }
}

/// The `traceparent` the echo upstream received, split.
pub fn upstream_traceparent(report: &EchoReport) -> anyhow::Result<(String, String, String)> {
    let value = report
        .headers
        .get("traceparent")
        .with_context(|| format!("the upstream got no traceparent: {:?}", report.headers))?;
    traceparent_parts(value)
}

/// The spans of trace `trace_id`.
pub fn in_trace<'a>(spans: &'a [Span], trace_id: &str) -> Vec<&'a Span> {
    spans.iter().filter(|s| s.trace_id == trace_id).collect()
}

/// The one span of `spans` called `name`.
pub fn one<'a>(spans: &[&'a Span], name: &str) -> &'a Span {
    let found: Vec<&Span> = spans.iter().copied().filter(|s| s.name == name).collect();
    assert_eq!(
        found.len(),
        1,
        "expected one span {name:?} among {}",
        describe(spans)
    );
    found[0]
}

/// The spans of `spans` whose parent is `parent`, called `name`.
pub fn children<'a>(spans: &[&'a Span], parent: &Span, name: &str) -> Vec<&'a Span> {
    spans
        .iter()
        .copied()
        .filter(|s| s.name == name && s.parent_id.as_deref() == Some(parent.span_id.as_str()))
        .collect()
}

/// Asserts `child` is `parent`'s child in the same trace and ran within it.
pub fn assert_nested(parent: &Span, child: &Span) {
    assert_eq!(child.trace_id, parent.trace_id, "{child:#?}");
    assert_eq!(
        child.parent_id.as_deref(),
        Some(parent.span_id.as_str()),
        "{:?} is not a child of {:?}",
        child.name,
        parent.name
    );
    assert!(
        parent.start_unix_micros() <= child.start_unix_micros()
            && child.end_unix_micros() <= parent.end_unix_micros(),
        "{:?} [{}, {}] does not run within {:?} [{}, {}]",
        child.name,
        child.start_time,
        child.end_time,
        parent.name,
        parent.start_time,
        parent.end_time
    );
}

/// Names, ids and parents, for failure messages.
pub fn describe(spans: &[&Span]) -> String {
    let lines: Vec<String> = spans
        .iter()
        .map(|s| {
            format!(
                "{:?} {}/{} parent {:?}",
                s.name, s.trace_id, s.span_id, s.parent_id
            )
        })
        .collect();
    format!("[{}]", lines.join(", "))
}

/// Waits until Phoenix holds spans named every one of `names` in trace `trace_id` of
/// `project`, and returns all of the project's spans.
pub async fn wait_for_trace(
    phoenix: &Phoenix,
    project: &str,
    trace_id: &str,
    names: &[&str],
) -> anyhow::Result<Vec<Span>> {
    phoenix
        .wait_for_spans(project, PATIENCE, |spans| {
            let trace = in_trace(spans, trace_id);
            names.iter().all(|n| trace.iter().any(|s| s.name == *n))
        })
        .await
        .with_context(|| format!("waiting for {names:?} in trace {trace_id}"))
}
