//! A REST → gRPC translating hop: an OIP v2 REST caller → ferry (`translate: rest → grpc`) → a
//! grpcio model server. The gRPC server must see `traceparent` metadata in the caller's trace
//! whose parent is ferry's gRPC CLIENT span, and the translation's decode and encode steps are
//! INTERNAL spans under the hop's SERVER span.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use ferry_integration::client::{body_full, request};
use ferry_integration::phoenix::StatusCode as SpanStatus;
use ferry_integration::{HttpClient, Phoenix, eventually};
use http::{Method, StatusCode};
use serde_json::{Value, json};

use crate::oip_server::OipServer;
use crate::support::{
    assert_nested, caller, children, config, in_trace, one, otlp_grpc, traceparent_parts,
    wait_for_trace,
};

const RPC: &str = "inference.GRPCInferenceService/ModelInfer";

pub async fn grpc_server_joins_the_trace(phoenix: Arc<Phoenix>) -> anyhow::Result<()> {
    let project = Phoenix::unique_project("rest-to-grpc");
    let server = OipServer::start().await?;
    let ferry = crate::support::start(
        &config(
            json!({ "otlp": otlp_grpc(&phoenix) }),
            json!([{
                "name": "rest",
                "address": "127.0.0.1:0",
                "routes": [{
                    "name": "infer",
                    "translate": { "from": "rest", "to": "grpc" },
                    "to": "model",
                }],
            }]),
            json!([{ "name": "model", "endpoints": [server.addr.to_string()], "protocol": "h2" }]),
        ),
        &project,
    )
    .await?;
    let addr = ferry.listener("rest")?;
    let client = HttpClient::http1();
    let infer = |model: &str, traceparent: &str| {
        request(
            Method::POST,
            addr,
            &format!("/v2/models/{model}/infer"),
            &[
                ("traceparent", traceparent),
                ("content-type", "application/json"),
            ],
            body_full(
                json!({
                    "id": "req-1",
                    "inputs": [{ "name": "x", "datatype": "FP32", "shape": [2], "data": [1.5, 2.5] }],
                })
                .to_string(),
            ),
        )
    };

    let (trace_id, caller_span) = caller();
    let reply = client
        .call(infer("echo", &format!("00-{trace_id}-{caller_span}-01"))?)
        .await?;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    let answer: Value = reply.json()?;
    assert_eq!(answer["outputs"][0]["data"], json!([1.5, 2.5]), "{answer}");

    // What the grpcio server received.
    let calls = eventually(Duration::from_secs(10), || async {
        let calls = server.calls();
        anyhow::ensure!(
            calls.iter().any(|c| c.method == "ModelInfer"),
            "no ModelInfer call reported yet: {calls:?}"
        );
        Ok(calls)
    })
    .await?;
    let call = calls
        .iter()
        .find(|c| c.method == "ModelInfer")
        .context("ModelInfer call")?;
    let (seen_trace, seen_parent, flags) = traceparent_parts(
        call.metadata
            .get("traceparent")
            .with_context(|| format!("no traceparent metadata: {call:?}"))?,
    )?;
    assert_eq!(
        (seen_trace.as_str(), flags.as_str()),
        (trace_id.as_str(), "01")
    );

    let spans = wait_for_trace(
        &phoenix,
        &project,
        &trace_id,
        &["POST infer", RPC, "translate.decode", "translate.encode"],
    )
    .await?;
    let trace = in_trace(&spans, &trace_id);
    let hop = one(&trace, "POST infer");
    let attempt = one(&trace, RPC);
    assert_eq!(hop.parent_id.as_deref(), Some(caller_span.as_str()));
    assert_nested(hop, attempt);
    assert_eq!(seen_parent, attempt.span_id, "the gRPC server's parent");
    for phase in ["translate.decode", "translate.encode"] {
        let found = children(&trace, hop, phase);
        assert_eq!(found.len(), 1, "{phase} under the SERVER span: {trace:#?}");
        assert_nested(hop, found[0]);
    }
    // Decoding the REST body comes before the gRPC call, encoding its answer after it.
    let decode = one(&trace, "translate.decode");
    let encode = one(&trace, "translate.encode");
    assert!(
        decode.end_unix_micros() <= attempt.start_unix_micros(),
        "{trace:#?}"
    );
    assert!(
        attempt.start_unix_micros() <= encode.start_unix_micros(),
        "{trace:#?}"
    );
    // The size of what each step produced: the ModelInferRequest sent upstream (tensors,
    // names, shapes) and the caller's JSON answer.
    for step in [decode, encode] {
        let bytes = step.attr_i64("ferry.translate.bytes");
        assert!(bytes.is_some_and(|n| n > 16), "{step:#?}");
    }

    assert_eq!(
        hop.attr_str("ferry.translate"),
        Some("rest->grpc"),
        "{hop:#?}"
    );
    assert_eq!(hop.attr_str("ferry.route"), Some("infer"));
    assert_eq!(hop.attr_str("model.name"), Some("echo"));
    assert_eq!(hop.attr_i64("http.response.status_code"), Some(200));
    assert!(
        hop.attr("rpc.system").is_none(),
        "the caller spoke REST: {hop:#?}"
    );
    assert_eq!(attempt.attr_str("rpc.system"), Some("grpc"), "{attempt:#?}");
    assert_eq!(
        attempt.attr_str("rpc.service"),
        Some("inference.GRPCInferenceService")
    );
    assert_eq!(attempt.attr_str("rpc.method"), Some("ModelInfer"));
    assert_eq!(attempt.attr_i64("rpc.grpc.status_code"), Some(0));
    assert_eq!(attempt.attr_i64("http.response.status_code"), Some(200));
    assert_eq!(attempt.attr_str("ferry.cluster"), Some("model"));
    assert_eq!(
        attempt.attr_i64("server.port"),
        Some(i64::from(server.addr.port()))
    );

    // A gRPC error: the caller gets REST 404 and the attempt records the gRPC code as a
    // failure; the SERVER span records the 404 the caller got, which is not a server failure.
    let (missing_trace, missing_span) = caller();
    let reply = client
        .call(infer(
            "missing",
            &format!("00-{missing_trace}-{missing_span}-01"),
        )?)
        .await?;
    assert_eq!(reply.status, StatusCode::NOT_FOUND, "{}", reply.text());
    let spans = wait_for_trace(&phoenix, &project, &missing_trace, &["POST infer", RPC]).await?;
    let trace = in_trace(&spans, &missing_trace);
    let hop = one(&trace, "POST infer");
    let attempt = one(&trace, RPC);
    assert_nested(hop, attempt);
    assert_eq!(
        attempt.attr_i64("rpc.grpc.status_code"),
        Some(5),
        "{attempt:#?}"
    );
    assert_eq!(attempt.status_code, SpanStatus::Error, "{attempt:#?}");
    assert_eq!(hop.attr_str("model.name"), Some("missing"), "{hop:#?}");
    assert_eq!(
        hop.attr_i64("http.response.status_code"),
        Some(404),
        "{hop:#?}"
    );
    assert_ne!(hop.status_code, SpanStatus::Error, "{hop:#?}");
    Ok(())
}
