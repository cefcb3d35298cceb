//! Routing on the model name and version from each of the three sources: the Open Inference
//! Protocol REST path, the first message of a gRPC `inference.GRPCInferenceService` call, and
//! the JSON `model` field of an OpenAI-style body.

use ferry_integration::client::{body_full, grpc_channel, request};
use ferry_integration::pb::inference::ModelInferRequest;
use ferry_integration::pb::inference::grpc_inference_service_client::GrpcInferenceServiceClient;
use ferry_integration::{Echo, EchoReport, GrpcUpstream, HttpClient};
use http::Method;
use serde_json::json;

use crate::support::{LISTENER, cluster, config, start};

fn model_route(name: &str, model: serde_json::Value, to: &str) -> serde_json::Value {
    json!({ "name": name, "match": { "model": model }, "to": to })
}

#[tokio::test]
async fn model_from_oip_rest_path() -> anyhow::Result<()> {
    let (resnet, bert, bert2, other) = (
        Echo::start("resnet").await?,
        Echo::start("bert").await?,
        Echo::start("bert-v2").await?,
        Echo::start("other").await?,
    );
    let cfg = config(
        json!([
            model_route("resnet", json!({ "name": "resnet50" }), "resnet"),
            model_route("bert-v2", json!({ "name": "bert", "version": "2" }), "bert2"),
            model_route("bert", json!({ "name": "bert" }), "bert"),
            { "name": "rest", "to": "other" },
        ]),
        json!([
            cluster("resnet", &[resnet.addr()]),
            cluster("bert", &[bert.addr()]),
            cluster("bert2", &[bert2.addr()]),
            cluster("other", &[other.addr()]),
        ]),
    );
    let ferry = start(&cfg).await?;
    let addr = ferry.listener(LISTENER)?;
    let cases = [
        ("/v2/models/resnet50/infer", "resnet"),
        ("/v2/models/resnet50/ready", "resnet"),
        ("/v2/models/bert/versions/2/infer", "bert-v2"),
        ("/v2/models/bert/versions/1/infer", "bert"),
        ("/v2/models/bert/infer", "bert"),
        ("/v2/models/resnet5/infer", "other"),
        ("/v2/health/ready", "other"),
    ];
    let client = HttpClient::http1();
    for (path, want) in cases {
        let req = request(Method::POST, addr, path, &[], body_full(r#"{"inputs":[]}"#))?;
        let reply = client.call(req).await?;
        assert_eq!(reply.status, 200, "{path}: {}", reply.text());
        let seen: EchoReport = reply.json()?;
        assert_eq!(seen.instance, want, "{path} went to the wrong upstream");
        assert_eq!(seen.path, path);
    }
    Ok(())
}

#[tokio::test]
async fn model_from_first_grpc_message() -> anyhow::Result<()> {
    let (a, b) = (
        GrpcUpstream::start("a").await?,
        GrpcUpstream::start("b").await?,
    );
    let cfg = config(
        json!([
            model_route("resnet", json!({ "name": "resnet50" }), "a"),
            model_route("bert-v2", json!({ "name": "bert", "version": "2" }), "b"),
        ]),
        json!([cluster("a", &[a.addr()]), cluster("b", &[b.addr()])]),
    );
    let ferry = start(&cfg).await?;
    let mut client =
        GrpcInferenceServiceClient::new(grpc_channel(ferry.listener(LISTENER)?).await?);
    let infer = |name: &str, version: &str, id: &str| ModelInferRequest {
        model_name: name.into(),
        model_version: version.into(),
        id: id.into(),
    };
    let r = client
        .model_infer(infer("resnet50", "", "r1"))
        .await?
        .into_inner();
    // The whole first message still reached the upstream after ferry peeked at it.
    assert_eq!((r.model_name.as_str(), r.id.as_str()), ("resnet50", "r1"));
    let r = client
        .model_infer(infer("bert", "2", "b1"))
        .await?
        .into_inner();
    assert_eq!((r.model_version.as_str(), r.id.as_str()), ("2", "b1"));
    // bert version 1 matches no route: UNIMPLEMENTED, and neither upstream sees it.
    let status = client
        .model_infer(infer("bert", "1", "x"))
        .await
        .expect_err("no route");
    assert_eq!(status.code(), tonic::Code::Unimplemented, "{status:?}");
    assert_eq!(
        a.models_seen(),
        vec![("resnet50".to_owned(), String::new())]
    );
    assert_eq!(b.models_seen(), vec![("bert".to_owned(), "2".to_owned())]);
    Ok(())
}

#[tokio::test]
async fn model_from_json_body_field() -> anyhow::Result<()> {
    let (llama, other) = (Echo::start("llama").await?, Echo::start("other").await?);
    let cfg = config(
        json!([
            model_route("llama", json!({ "name": { "prefix": "llama-" } }), "llama"),
            { "name": "rest", "to": "other" },
        ]),
        json!([
            cluster("llama", &[llama.addr()]),
            cluster("other", &[other.addr()])
        ]),
    );
    let ferry = start(&cfg).await?;
    let addr = ferry.listener(LISTENER)?;
    let filler = "x".repeat(200_000);
    let bodies = [
        (
            json!({ "model": "llama-3-8b", "messages": [{ "role": "user", "content": "hi" }] }),
            "llama",
        ),
        // `model` after other fields, still within the sniffed prefix.
        (
            json!({ "messages": [{ "role": "user", "content": "hi" }], "model": "llama-2", "stream": true }),
            "llama",
        ),
        // A large body: ferry reads only a prefix to route, then forwards every byte.
        (json!({ "model": "llama-big", "prompt": filler }), "llama"),
        (json!({ "model": "gpt-4o", "messages": [] }), "other"),
        (json!({ "messages": [] }), "other"),
    ];
    for client in [HttpClient::http1(), HttpClient::h2c()] {
        for (body, want) in &bodies {
            let text = body.to_string();
            let headers = [("content-type", "application/json")];
            let req = request(
                Method::POST,
                addr,
                "/v1/chat/completions",
                &headers,
                body_full(text.clone()),
            )?;
            let reply = client.call(req).await?;
            assert_eq!(reply.status, 200, "{}", reply.text());
            let seen: EchoReport = reply.json()?;
            assert_eq!(&seen.instance, want, "body {:.80}", text);
            assert_eq!(seen.body_len, text.len() as u64, "body changed in flight");
        }
    }
    Ok(())
}
