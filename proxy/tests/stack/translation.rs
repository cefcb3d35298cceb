//! REST → gRPC on a route: the caller speaks OIP REST, the in-memory upstream only gRPC.

use std::sync::Arc;

use bytes::{BufMut, Bytes, BytesMut};
use ferry_filters::translate::pb::{
    InferTensorContents, ModelInferRequest, ModelInferResponse, model_infer_response,
};
use ferry_proxy::body::ProxyBody;
use http::{HeaderMap, HeaderValue, Response, StatusCode};
use http_body_util::BodyExt;
use prost::Message;

use crate::support::{Seen, Stack, request};

const CONFIG: &str = r#"
apiVersion: ferry/v1
listeners:
  - name: main
    address: 127.0.0.1:0
    routes:
      - name: oip
        translate: { from: rest, to: grpc, protocol: oip-v2 }
        to: triton
clusters:
  - { name: triton, endpoints: [127.0.0.1:4001], protocol: h2 }
"#;

fn frame(message: &[u8]) -> Bytes {
    let mut out = BytesMut::with_capacity(5 + message.len());
    out.put_u8(0);
    out.put_u32(message.len() as u32);
    out.put_slice(message);
    out.freeze()
}

fn grpc_answer(message: Bytes, status: &'static str, text: &'static str) -> Response<ProxyBody> {
    let mut trailers = HeaderMap::new();
    trailers.insert("grpc-status", HeaderValue::from_static(status));
    trailers.insert("grpc-message", HeaderValue::from_static(text));
    let body = http_body_util::Full::new(message)
        .map_err(|never| match never {})
        .with_trailers(async move { Some(Ok(trailers)) })
        .boxed_unsync();
    let mut resp = Response::new(body);
    resp.headers_mut()
        .insert("content-type", HeaderValue::from_static("application/grpc"));
    resp
}

/// A gRPC-only model server: sums its FP32 input; a model named `broken` fails with
/// INVALID_ARGUMENT.
fn summing_model() -> crate::support::Answerer {
    Arc::new(|_, seen: &Seen| {
        assert_eq!(
            seen.uri.path(),
            "/inference.GRPCInferenceService/ModelInfer"
        );
        assert_eq!(seen.headers["content-type"], "application/grpc");
        let req = ModelInferRequest::decode(&seen.body[5..]).unwrap();
        if req.model_name == "broken" {
            return Ok(grpc_answer(Bytes::new(), "3", "bad input"));
        }
        let sum: f32 = req
            .inputs
            .iter()
            .flat_map(|t| {
                t.contents
                    .as_ref()
                    .map(|c| c.fp32_contents.clone())
                    .unwrap_or_default()
            })
            .sum();
        let resp = ModelInferResponse {
            model_name: req.model_name,
            outputs: vec![model_infer_response::InferOutputTensor {
                name: "sum".into(),
                datatype: "FP32".into(),
                shape: vec![1],
                contents: Some(InferTensorContents {
                    fp32_contents: vec![sum],
                    ..Default::default()
                }),
                ..Default::default()
            }],
            ..Default::default()
        };
        Ok(grpc_answer(frame(&resp.encode_to_vec()), "0", ""))
    })
}

#[tokio::test]
async fn rest_callers_reach_a_grpc_only_model_server() {
    let stack = Stack::new(CONFIG, summing_model());
    let body = r#"{"inputs":[{"name":"x","shape":[3],"datatype":"FP32","data":[1,2,3.5]}]}"#;
    let answer = stack
        .h1(
            "main",
            request("POST", "http://svc/v2/models/adder/infer", &[], body),
        )
        .await;
    assert_eq!(answer.status, StatusCode::OK, "{:?}", answer.body);
    let json = answer.json();
    assert_eq!(json["model_name"], "adder");
    assert_eq!(json["outputs"][0]["data"][0], 6.5);
}

#[tokio::test]
async fn translation_faults_are_answered_by_the_one_renderer() {
    let stack = Stack::new(CONFIG, summing_model());
    // The caller's bad JSON never reaches the upstream: 400 naming the fault.
    let bad = stack
        .h1(
            "main",
            request("POST", "http://svc/v2/models/adder/infer", &[], "{nope"),
        )
        .await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
    assert!(bad.json()["error"].is_string());
    // The upstream's gRPC error comes back as the mapped HTTP status with its message.
    let body = r#"{"inputs":[{"name":"x","shape":[1],"datatype":"FP32","data":[1]}]}"#;
    let upstream = stack
        .h1(
            "main",
            request("POST", "http://svc/v2/models/broken/infer", &[], body),
        )
        .await;
    assert_eq!(upstream.status, StatusCode::BAD_REQUEST);
    assert_eq!(upstream.json(), serde_json::json!({ "error": "bad input" }));
    assert_eq!(stack.seen().len(), 1);
}
