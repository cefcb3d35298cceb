//! The trace layer in a route's stack: the hop's SERVER span, one CLIENT span per attempt, the
//! context the upstream receives, sampling (parent, ratio, errors), and exemplars.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use ferry_filters::trace_context::{KeptHop, SpanSink};
use ferry_proxy::body::full;
use http::{Response, StatusCode};
use opentelemetry::trace::{SpanKind, Status};
use opentelemetry_sdk::trace::SpanData;

use crate::support::{Answerer, Stack, echo, request};

/// Collects kept hops' spans.
#[derive(Debug, Default)]
struct Collect(Mutex<Vec<SpanData>>);

impl SpanSink for Collect {
    fn export(&self, hop: &KeptHop<'_>) {
        self.0.lock().unwrap().extend(hop.to_span_data());
    }
}

impl Collect {
    /// Waits (bounded) for at least `n` spans: a hop is handed over when its last reference
    /// (request, attempt, body) is dropped, just after the answer is read.
    async fn at_least(&self, n: usize) -> Vec<SpanData> {
        for _ in 0..200 {
            let spans = self.0.lock().unwrap().clone();
            if spans.len() >= n {
                return spans;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("fewer than {n} spans: {:?}", self.0.lock().unwrap());
    }

    /// What is there after a pause long enough for any hop to be handed over.
    async fn settled(&self) -> Vec<SpanData> {
        tokio::time::sleep(Duration::from_millis(200)).await;
        self.0.lock().unwrap().clone()
    }
}

fn config(tracing: &str) -> String {
    format!(
        r#"
apiVersion: ferry/v1
tracing: {tracing}
listeners:
  - name: main
    address: 127.0.0.1:0
    routes:
      - name: models
        to: triton
clusters:
  - {{ name: triton, endpoints: [127.0.0.1:1001] }}
"#
    )
}

fn attr(span: &SpanData, key: &str) -> Option<String> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| kv.value.as_str().into_owned())
}

fn one(spans: &[SpanData], kind: SpanKind) -> &SpanData {
    let found: Vec<_> = spans.iter().filter(|s| s.span_kind == kind).collect();
    assert_eq!(found.len(), 1, "{kind:?} spans: {spans:#?}");
    found[0]
}

const CALLER_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CALLER_SPAN: &str = "00f067aa0ba902b7";

#[tokio::test]
async fn a_sampled_caller_gets_a_server_and_a_client_span_and_the_upstream_joins_the_trace() {
    let sink = Arc::new(Collect::default());
    let stack = Stack::traced(&config("{ sampling: { ratio: 0 } }"), echo(), sink.clone());
    let traceparent = format!("00-{CALLER_TRACE}-{CALLER_SPAN}-01");
    let answer = stack
        .h1(
            "main",
            request(
                "POST",
                "/v2/models/resnet/versions/3/infer",
                &[("traceparent", &traceparent), ("tracestate", "vendor=1")],
                "{}",
            ),
        )
        .await;
    assert_eq!(answer.status, StatusCode::OK);
    let spans = sink.at_least(2).await;
    let server = one(&spans, SpanKind::Server);
    let client = one(&spans, SpanKind::Client);
    assert_eq!(server.span_context.trace_id().to_string(), CALLER_TRACE);
    assert_eq!(server.parent_span_id.to_string(), CALLER_SPAN);
    assert!(server.parent_span_is_remote);
    assert_eq!(client.parent_span_id, server.span_context.span_id());
    assert_eq!(
        client.span_context.trace_id(),
        server.span_context.trace_id()
    );
    assert!(client.start_time >= server.start_time && client.end_time <= server.end_time);
    assert_eq!(attr(server, "ferry.route").as_deref(), Some("models"));
    assert_eq!(attr(server, "ferry.listener").as_deref(), Some("main"));
    assert_eq!(attr(server, "ferry.cluster").as_deref(), Some("triton"));
    assert_eq!(attr(server, "http.request.method").as_deref(), Some("POST"));
    assert_eq!(
        attr(server, "http.response.status_code").as_deref(),
        Some("200")
    );
    assert_eq!(attr(server, "model.name").as_deref(), Some("resnet"));
    assert_eq!(attr(server, "model.version").as_deref(), Some("3"));
    assert_eq!(attr(client, "server.address").as_deref(), Some("127.0.0.1"));
    assert_eq!(attr(client, "server.port").as_deref(), Some("1001"));
    assert_eq!(
        attr(client, "http.response.status_code").as_deref(),
        Some("200")
    );
    // The upstream's parent is the attempt, and the caller's tracestate travels on.
    let seen = &stack.seen()[0];
    assert_eq!(
        seen.headers["traceparent"],
        format!("00-{CALLER_TRACE}-{}-01", client.span_context.span_id()).as_str()
    );
    assert_eq!(seen.headers["tracestate"], "vendor=1");
}

#[tokio::test]
async fn an_unsampled_caller_is_passed_on_untouched_and_records_nothing() {
    let sink = Arc::new(Collect::default());
    let stack = Stack::traced(&config("{ sampling: { ratio: 1 } }"), echo(), sink.clone());
    let traceparent = format!("00-{CALLER_TRACE}-{CALLER_SPAN}-00");
    let answer = stack
        .h1(
            "main",
            request("GET", "/x", &[("traceparent", &traceparent)], ""),
        )
        .await;
    assert_eq!(answer.status, StatusCode::OK);
    assert_eq!(stack.seen()[0].headers["traceparent"], traceparent.as_str());
    assert!(sink.settled().await.is_empty());
}

#[tokio::test]
async fn without_a_context_a_new_trace_starts_and_the_ratio_decides() {
    let sink = Arc::new(Collect::default());
    let stack = Stack::traced(&config("{ sampling: { ratio: 0 } }"), echo(), sink.clone());
    stack.h1("main", request("GET", "/x", &[], "")).await;
    let sent = stack.seen()[0].headers["traceparent"]
        .to_str()
        .unwrap()
        .to_owned();
    let parts: Vec<&str> = sent.split('-').collect();
    assert_eq!(parts.len(), 4, "{sent}");
    assert_eq!((parts[0], parts[3]), ("00", "00"), "{sent}");
    assert!(sink.settled().await.is_empty());

    let sink = Arc::new(Collect::default());
    let stack = Stack::traced(&config("{}"), echo(), sink.clone());
    stack.h1("main", request("GET", "/x", &[], "")).await;
    let spans = sink.at_least(2).await;
    let server = one(&spans, SpanKind::Server);
    assert_eq!(server.parent_span_id, opentelemetry::trace::SpanId::INVALID);
    let sent = stack.seen()[0].headers["traceparent"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(sent.ends_with("-01"), "{sent}");
    assert!(sent.contains(&server.span_context.trace_id().to_string()));
}

#[tokio::test]
async fn b3_callers_join_and_every_configured_format_is_written() {
    let sink = Arc::new(Collect::default());
    let stack = Stack::traced(
        &config("{ propagation: [w3c, b3, b3multi] }"),
        echo(),
        sink.clone(),
    );
    let b3 = format!("{CALLER_TRACE}-{CALLER_SPAN}-1");
    stack
        .h1("main", request("GET", "/x", &[("b3", b3.as_str())], ""))
        .await;
    let spans = sink.at_least(2).await;
    let server = one(&spans, SpanKind::Server);
    let client = one(&spans, SpanKind::Client);
    assert_eq!(server.span_context.trace_id().to_string(), CALLER_TRACE);
    assert_eq!(server.parent_span_id.to_string(), CALLER_SPAN);
    let h = &stack.seen()[0].headers;
    let attempt = client.span_context.span_id().to_string();
    assert_eq!(
        h["traceparent"],
        format!("00-{CALLER_TRACE}-{attempt}-01").as_str()
    );
    assert_eq!(h["b3"], format!("{CALLER_TRACE}-{attempt}-1").as_str());
    assert_eq!(h["x-b3-traceid"], CALLER_TRACE);
    assert_eq!(h["x-b3-spanid"], attempt.as_str());
    assert_eq!(h["x-b3-sampled"], "1");
}

#[tokio::test]
async fn a_malformed_header_starts_a_new_trace_and_the_request_succeeds() {
    let sink = Arc::new(Collect::default());
    let stack = Stack::traced(&config("{}"), echo(), sink.clone());
    for bad in [
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
        "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
        "garbage",
    ] {
        let answer = stack
            .h1("main", request("GET", "/x", &[("traceparent", bad)], ""))
            .await;
        assert_eq!(answer.status, StatusCode::OK, "{bad}");
    }
    let spans = sink.at_least(8).await;
    for s in spans.iter().filter(|s| s.span_kind == SpanKind::Server) {
        assert_eq!(s.parent_span_id, opentelemetry::trace::SpanId::INVALID);
        assert_ne!(s.span_context.trace_id().to_string(), CALLER_TRACE);
    }
}

fn failing() -> Answerer {
    Arc::new(|_, _| {
        let mut resp = Response::new(full("model crashed"));
        *resp.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
        Ok(resp)
    })
}

#[tokio::test]
async fn always_errors_keeps_an_unsampled_failure_and_nothing_else() {
    let sink = Arc::new(Collect::default());
    let tracing = "{ sampling: { ratio: 0, always_errors: true } }";
    let ok = Stack::traced(&config(tracing), echo(), sink.clone());
    ok.h1("main", request("GET", "/x", &[], "")).await;
    assert!(sink.settled().await.is_empty());
    let failed = Stack::traced(&config(tracing), failing(), sink.clone());
    let answer = failed.h1("main", request("GET", "/x", &[], "")).await;
    assert_eq!(answer.status, StatusCode::SERVICE_UNAVAILABLE);
    let spans = sink.at_least(2).await;
    let server = one(&spans, SpanKind::Server);
    assert!(matches!(server.status, Status::Error { .. }), "{server:?}");
    // The upstream was told "not sampled": the decision to keep came after the answer.
    assert!(
        failed.seen()[0].headers["traceparent"]
            .to_str()
            .unwrap()
            .ends_with("-00")
    );
}

#[tokio::test]
async fn slower_than_keeps_a_slow_unsampled_request() {
    let sink = Arc::new(Collect::default());
    let stack = Stack::traced(
        &config("{ sampling: { ratio: 0, slower_than: 50ms } }"),
        echo(),
        sink.clone(),
    );
    stack.h1("main", request("GET", "/fast", &[], "")).await;
    assert!(sink.settled().await.is_empty());
    stack
        .h1(
            "main",
            request("GET", "/slow", &[("x-test-delay-ms", "80")], ""),
        )
        .await;
    let spans = sink.at_least(2).await;
    let server = one(&spans, SpanKind::Server);
    assert_eq!(attr(server, "url.path").as_deref(), Some("/slow"));
    let took = server.end_time.duration_since(server.start_time).unwrap();
    assert!(took >= Duration::from_millis(80), "{took:?}");
}

#[tokio::test]
async fn a_sampled_request_is_the_latency_exemplar_in_openmetrics_only() {
    let sink = Arc::new(Collect::default());
    let stack = Stack::traced(&config("{}"), echo(), sink.clone());
    let traceparent = format!("00-{CALLER_TRACE}-{CALLER_SPAN}-01");
    stack
        .h1(
            "main",
            request("GET", "/x", &[("traceparent", &traceparent)], ""),
        )
        .await;
    let open = stack.shared().metrics.encode(true);
    assert!(
        open.lines()
            .any(|l| l.starts_with("ferry_request_duration_seconds_bucket")
                && l.contains(&format!("trace_id=\"{CALLER_TRACE}\""))),
        "{open}"
    );
    let plain = stack.metrics();
    assert!(!plain.contains("trace_id"), "{plain}");
    assert!(
        plain.contains("ferry_proxy_overhead_seconds_bucket"),
        "{plain}"
    );
    assert!(plain.contains("direction=\"request\""), "{plain}");
}

#[tokio::test]
async fn an_error_answer_is_recorded_with_the_status_the_caller_gets() {
    let sink = Arc::new(Collect::default());
    let yaml = r#"
apiVersion: ferry/v1
tracing: { sampling: { ratio: 0, always_errors: true } }
listeners:
  - name: main
    address: 127.0.0.1:0
    limits: { max_request_body_bytes: 4 }
    routes:
      - name: models
        to: triton
clusters:
  - { name: triton, endpoints: [127.0.0.1:1001] }
"#;
    let refused: Answerer = Arc::new(|addr, _| {
        Err(ferry_proxy::upstream::SendError::connect(
            addr,
            std::io::Error::from(std::io::ErrorKind::ConnectionRefused),
        ))
    });
    let stack = Stack::traced(yaml, refused, sink.clone());
    // Too large: the caller's fault, 413; not a failure `always_errors` keeps.
    let answer = stack
        .h1("main", request("POST", "/x", &[], "0123456789"))
        .await;
    assert_eq!(answer.status, StatusCode::PAYLOAD_TOO_LARGE);
    assert!(sink.settled().await.is_empty());
    // Refused: 503, kept, with the status and a meaningful error type.
    let answer = stack.h1("main", request("GET", "/x", &[], "")).await;
    assert_eq!(answer.status, StatusCode::SERVICE_UNAVAILABLE);
    let spans = sink.at_least(2).await;
    let server = one(&spans, SpanKind::Server);
    assert_eq!(
        attr(server, "http.response.status_code").as_deref(),
        Some("503")
    );
    assert_eq!(attr(server, "error.type").as_deref(), Some("unavailable"));
    assert!(matches!(server.status, Status::Error { .. }));
}

#[tokio::test]
async fn a_token_budget_puts_the_answers_usage_on_the_span() {
    let sink = Arc::new(Collect::default());
    let yaml = r#"
apiVersion: ferry/v1
tracing: {}
listeners:
  - name: main
    address: 127.0.0.1:0
    routes:
      - name: llm
        to: vllm
        rate_limit: [{ name: tokens, tokens: 100000, per: 1m, key: [header:x-tenant] }]
clusters:
  - { name: vllm, endpoints: [127.0.0.1:1001] }
"#;
    let chat: Answerer = Arc::new(|_, _| {
        let mut resp = Response::new(full(
            r#"{"id":"c1","choices":[{"message":{"content":"hi"}}],"usage":{"prompt_tokens":12,"completion_tokens":30,"total_tokens":42}}"#,
        ));
        resp.headers_mut().insert(
            http::header::CONTENT_TYPE,
            http::HeaderValue::from_static("application/json"),
        );
        Ok(resp)
    });
    let stack = Stack::traced(yaml, chat, sink.clone());
    let body = r#"{"model":"llama","messages":[{"role":"user","content":"hi"}]}"#;
    let answer = stack
        .h1(
            "main",
            request(
                "POST",
                "/v1/chat/completions",
                &[("x-tenant", "a"), ("content-type", "application/json")],
                body,
            ),
        )
        .await;
    assert_eq!(answer.status, StatusCode::OK);
    let spans = sink.at_least(2).await;
    let server = one(&spans, SpanKind::Server);
    assert_eq!(
        attr(server, "gen_ai.operation.name").as_deref(),
        Some("chat")
    );
    assert_eq!(
        attr(server, "gen_ai.usage.input_tokens").as_deref(),
        Some("12")
    );
    assert_eq!(
        attr(server, "gen_ai.usage.output_tokens").as_deref(),
        Some("30")
    );
}
