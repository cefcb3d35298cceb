//! Streamed model answers: an OpenAI-style SSE chat completion (GenAI attributes, events
//! counted) and gRPC calls (SERVER span named `service/method`, messages counted, the span's
//! status following OpenTelemetry's rule for server-side gRPC codes).

use std::sync::Arc;

use ferry_integration::client::{body_full, grpc_channel, request};
use ferry_integration::pb::echo::EchoRequest;
use ferry_integration::pb::echo::echo_client::EchoClient;
use ferry_integration::phoenix::StatusCode as SpanStatus;
use ferry_integration::upstream::grpc::STATUS_KEY;
use ferry_integration::upstream::openai::OpenAi;
use ferry_integration::{GrpcUpstream, HttpClient, Phoenix};
use futures_util::StreamExt as _;
use http::{Method, StatusCode};
use serde_json::json;

use crate::support::{assert_nested, caller, config, in_trace, one, otlp_grpc, wait_for_trace};

const SERVER_STREAM: &str = "ferry.test.v1.Echo/ServerStream";
const UNARY: &str = "ferry.test.v1.Echo/Unary";

/// A tonic request carrying a sampled W3C context (and `extra` metadata).
fn traced<T>(
    message: T,
    trace: &str,
    span: &str,
    extra: &[(&'static str, &str)],
) -> tonic::Request<T> {
    let mut req = tonic::Request::new(message);
    let md = req.metadata_mut();
    if let Ok(v) = format!("00-{trace}-{span}-01").parse() {
        md.insert("traceparent", v);
    }
    for (k, v) in extra {
        if let Ok(v) = v.parse() {
            md.insert(*k, v);
        }
    }
    req
}

pub async fn streamed_answers_are_counted(phoenix: Arc<Phoenix>) -> anyhow::Result<()> {
    let project = Phoenix::unique_project("streams");
    let openai = OpenAi::start().await?;
    let grpc = GrpcUpstream::start("grpc").await?;
    let ferry = crate::support::start(
        &config(
            json!({ "otlp": otlp_grpc(&phoenix) }),
            json!([{
                "name": "main",
                "address": "127.0.0.1:0",
                "routes": [
                    {
                        "name": "grpc",
                        "match": { "path": { "prefix": "/ferry.test.v1.Echo/" } },
                        "to": "grpc-model",
                    },
                    {
                        "name": "chat",
                        "match": { "model": { "name": { "prefix": "llama-" } } },
                        "to": "llm",
                    },
                ],
            }]),
            json!([
                { "name": "llm", "endpoints": [openai.addr().to_string()] },
                { "name": "grpc-model", "endpoints": [grpc.addr().to_string()], "protocol": "h2" },
            ]),
        ),
        &project,
    )
    .await?;
    let addr = ferry.listener("main")?;

    // SSE: three events (two chunks and [DONE]).
    let (chat, chat_span) = caller();
    let reply = HttpClient::http1()
        .call(request(
            Method::POST,
            addr,
            "/v1/chat/completions",
            &[
                ("traceparent", &format!("00-{chat}-{chat_span}-01")),
                ("content-type", "application/json"),
            ],
            body_full(
                json!({ "model": "llama-3", "stream": true,
                        "messages": [{ "role": "user", "content": "hi" }] })
                .to_string(),
            ),
        )?)
        .await?;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    let spans = wait_for_trace(&phoenix, &project, &chat, &["POST chat", "POST llm"]).await?;
    let trace = in_trace(&spans, &chat);
    let hop = one(&trace, "POST chat");
    assert_nested(hop, one(&trace, "POST llm"));
    assert_eq!(
        hop.attr_str("gen_ai.operation.name"),
        Some("chat"),
        "{hop:#?}"
    );
    assert_eq!(
        hop.attr_str("gen_ai.request.model"),
        Some("llama-3"),
        "{hop:#?}"
    );
    assert_eq!(hop.attr_str("model.name"), Some("llama-3"), "{hop:#?}");
    assert_eq!(hop.attr_i64("ferry.stream.events"), Some(3), "{hop:#?}");
    assert_eq!(
        hop.attr_i64("http.response.body.size"),
        Some(i64::try_from(reply.body.len())?)
    );
    for event in [
        "response.headers",
        "response.first_byte",
        "stream.first_message",
    ] {
        assert!(hop.event(event).is_some(), "no {event}: {hop:#?}");
    }

    // gRPC server streaming: three messages.
    let mut client = EchoClient::new(grpc_channel(addr).await?);
    let (streamed, streamed_span) = caller();
    let message = EchoRequest {
        message: "m".into(),
        repeat: 3,
        ..Default::default()
    };
    let mut stream = client
        .server_stream(traced(message, &streamed, &streamed_span, &[]))
        .await?
        .into_inner();
    let mut replies = 0;
    while let Some(reply) = stream.next().await {
        reply?;
        replies += 1;
    }
    assert_eq!(replies, 3);
    // Unary calls failing with UNAVAILABLE (a server error) and NOT_FOUND (the caller's).
    let mut failed = Vec::new();
    for code in ["14", "5"] {
        let (t, s) = caller();
        let message = EchoRequest {
            message: "m".into(),
            ..Default::default()
        };
        let status = client
            .unary(traced(message, &t, &s, &[(STATUS_KEY, code)]))
            .await
            .expect_err("the upstream fails the call");
        assert_eq!(i32::from(status.code()).to_string(), code);
        failed.push(t);
    }

    let spans = wait_for_trace(&phoenix, &project, &streamed, &[SERVER_STREAM]).await?;
    let trace = in_trace(&spans, &streamed);
    let streams: Vec<_> = trace.iter().filter(|s| s.name == SERVER_STREAM).collect();
    assert_eq!(streams.len(), 2, "SERVER and CLIENT spans: {trace:#?}");
    let hop = trace
        .iter()
        .find(|s| s.name == SERVER_STREAM && s.parent_id.as_deref() == Some(&streamed_span))
        .expect("the SERVER span, child of the caller");
    assert_eq!(hop.attr_str("rpc.system"), Some("grpc"), "{hop:#?}");
    assert_eq!(hop.attr_str("rpc.service"), Some("ferry.test.v1.Echo"));
    assert_eq!(hop.attr_str("rpc.method"), Some("ServerStream"));
    assert_eq!(hop.attr_i64("rpc.grpc.status_code"), Some(0), "{hop:#?}");
    assert_eq!(hop.attr_i64("ferry.stream.messages"), Some(3), "{hop:#?}");
    assert_eq!(hop.attr_str("ferry.route"), Some("grpc"));
    assert!(hop.event("stream.first_message").is_some(), "{hop:#?}");
    assert_ne!(hop.status_code, SpanStatus::Error);

    let spans = phoenix
        .wait_for_spans(&project, crate::support::PATIENCE, |spans| {
            failed.iter().all(|t| {
                in_trace(spans, t)
                    .iter()
                    .filter(|s| s.name == UNARY)
                    .count()
                    == 2
            })
        })
        .await?;
    for (trace_id, code, error) in [(&failed[0], 14, true), (&failed[1], 5, false)] {
        let trace = in_trace(&spans, trace_id);
        let hop = trace
            .iter()
            .find(|s| {
                s.parent_id
                    .as_ref()
                    .is_some_and(|p| !trace.iter().any(|o| &o.span_id == p))
            })
            .expect("the SERVER span, child of the caller");
        assert_eq!(hop.attr_i64("rpc.grpc.status_code"), Some(code), "{hop:#?}");
        assert_eq!(
            hop.status_code == SpanStatus::Error,
            error,
            "gRPC {code} on a SERVER span: {hop:#?}"
        );
    }
    Ok(())
}
