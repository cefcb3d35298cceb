//! gRPC rpcs, raw and typed tensors, and status codes for bad input.

use super::*;
use crate::inference::model_infer_request::{InferInputTensor, InferRequestedOutputTensor};

fn status_name(code: Option<i32>) -> &'static str {
    grpc_frame::code_name(code.unwrap_or(-1))
}

#[tokio::test]
async fn health_and_metadata_rpcs() {
    let server = Running::start().await;
    let mut client = server.grpc().await;
    let live: GrpcReply<ServerLiveResponse> = client
        .call("ServerLive", &ServerLiveRequest {})
        .await
        .unwrap();
    assert_eq!(live.grpc_status, Some(0));
    assert!(live.message.unwrap().live);
    let ready: GrpcReply<ServerReadyResponse> = client
        .call("ServerReady", &ServerReadyRequest {})
        .await
        .unwrap();
    assert!(ready.message.unwrap().ready);
    let meta: GrpcReply<ServerMetadataResponse> = client
        .call("ServerMetadata", &ServerMetadataRequest {})
        .await
        .unwrap();
    assert_eq!(meta.message.unwrap().name, "ferry-demo-model-server");
    let model_ready: GrpcReply<ModelReadyResponse> = client
        .call(
            "ModelReady",
            &ModelReadyRequest {
                name: "echo".into(),
                version: "1".into(),
            },
        )
        .await
        .unwrap();
    assert!(model_ready.message.unwrap().ready);
    let model: GrpcReply<ModelMetadataResponse> = client
        .call(
            "ModelMetadata",
            &ModelMetadataRequest {
                name: "add_sub".into(),
                version: String::new(),
            },
        )
        .await
        .unwrap();
    let model = model.message.unwrap();
    assert_eq!(model.versions, ["1"]);
    assert_eq!(model.inputs[0].name, "INPUT0");
    assert_eq!(model.inputs[0].shape, [-1]);
    assert_eq!(model.outputs[1].datatype, "FP32");
    server.stop().await;
}

#[tokio::test]
async fn add_sub_typed_in_typed_out() {
    let server = Running::start().await;
    let mut client = server.grpc().await;
    let reply: GrpcReply<ModelInferResponse> =
        client.call("ModelInfer", &add_sub_request()).await.unwrap();
    assert_eq!(reply.grpc_status, Some(0), "{}", reply.grpc_message);
    let response = reply.message.unwrap();
    assert_eq!(response.id, "demo-grpc-1");
    assert!(response.raw_output_contents.is_empty());
    let values: Vec<Vec<f32>> = response
        .outputs
        .iter()
        .map(|o| o.contents.clone().unwrap().fp32_contents)
        .collect();
    assert_eq!(
        values,
        [
            vec![11.0, 22.0, 33.0, 44.0],
            vec![-9.0, -18.0, -27.0, -36.0]
        ]
    );
    server.stop().await;
}

fn raw_fp32(values: &[f32]) -> Bytes {
    values
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect::<Vec<u8>>()
        .into()
}

#[tokio::test]
async fn add_sub_raw_in_raw_out_with_output_filter() {
    let server = Running::start().await;
    let mut client = server.grpc().await;
    let mut request = add_sub_request();
    for input in &mut request.inputs {
        input.contents = None;
    }
    request.raw_input_contents = vec![raw_fp32(&[1.0, 2.0, 3.0, 4.0]), raw_fp32(&[0.5; 4])];
    request.outputs = vec![InferRequestedOutputTensor {
        name: "OUTPUT0".into(),
        parameters: Default::default(),
    }];
    let reply: GrpcReply<ModelInferResponse> = client.call("ModelInfer", &request).await.unwrap();
    assert_eq!(reply.grpc_status, Some(0), "{}", reply.grpc_message);
    let response = reply.message.unwrap();
    assert_eq!(response.outputs.len(), 1);
    assert_eq!(response.outputs[0].name, "OUTPUT0");
    assert!(response.outputs[0].contents.is_none());
    assert_eq!(
        response.raw_output_contents,
        [raw_fp32(&[1.5, 2.5, 3.5, 4.5])]
    );
    server.stop().await;
}

#[tokio::test]
async fn echo_returns_raw_and_typed_inputs() {
    let server = Running::start().await;
    let mut client = server.grpc().await;
    let bytes_tensor = Bytes::from_static(b"\x02\x00\x00\x00ab\x03\x00\x00\x00xyz");
    let request = ModelInferRequest {
        model_name: "echo".into(),
        inputs: vec![
            InferInputTensor {
                name: "s".into(),
                datatype: "BYTES".into(),
                shape: vec![2],
                ..Default::default()
            },
            InferInputTensor {
                name: "h".into(),
                datatype: "FP16".into(),
                shape: vec![2],
                ..Default::default()
            },
        ],
        raw_input_contents: vec![bytes_tensor.clone(), Bytes::from_static(&[0, 60, 0, 64])],
        ..Default::default()
    };
    let reply: GrpcReply<ModelInferResponse> = client.call("ModelInfer", &request).await.unwrap();
    assert_eq!(reply.grpc_status, Some(0), "{}", reply.grpc_message);
    let response = reply.message.unwrap();
    let names: Vec<&str> = response.outputs.iter().map(|o| o.name.as_str()).collect();
    assert_eq!(names, ["OUT_s", "OUT_h"]);
    assert_eq!(response.outputs[1].datatype, "FP16");
    assert_eq!(
        response.raw_output_contents,
        [bytes_tensor, Bytes::from_static(&[0, 60, 0, 64])]
    );

    let typed = ModelInferRequest {
        model_name: "echo".into(),
        inputs: vec![InferInputTensor {
            name: "n".into(),
            datatype: "INT64".into(),
            shape: vec![3],
            contents: Some(InferTensorContents {
                int64_contents: vec![1, -2, 3],
                ..Default::default()
            }),
            ..Default::default()
        }],
        ..Default::default()
    };
    let reply: GrpcReply<ModelInferResponse> = client.call("ModelInfer", &typed).await.unwrap();
    let response = reply.message.unwrap();
    assert_eq!(
        response.outputs[0]
            .contents
            .as_ref()
            .unwrap()
            .int64_contents,
        [1, -2, 3]
    );
    assert!(response.raw_output_contents.is_empty());
    server.stop().await;
}

#[tokio::test]
async fn errors_map_to_grpc_codes() {
    let server = Running::start().await;
    let mut client = server.grpc().await;
    let mut unknown = add_sub_request();
    unknown.model_name = "nope".into();
    let mut bad_version = add_sub_request();
    bad_version.model_version = "3".into();
    let mut mixed = add_sub_request();
    mixed.raw_input_contents = vec![raw_fp32(&[1.0; 4]), raw_fp32(&[1.0; 4])];
    let mut short_raw = add_sub_request();
    for input in &mut short_raw.inputs {
        input.contents = None;
    }
    short_raw.raw_input_contents = vec![raw_fp32(&[1.0; 4]), Bytes::from_static(&[1, 2, 3])];
    let mut wrong_count = add_sub_request();
    wrong_count.inputs[1].shape = vec![5];
    wrong_count.inputs[0].shape = vec![5];
    let mut fp16_typed = add_sub_request();
    fp16_typed.model_name = "echo".into();
    fp16_typed.inputs[0].datatype = "FP16".into();

    let cases = [
        (unknown, "NOT_FOUND", "nope"),
        (bad_version, "NOT_FOUND", "version"),
        (mixed, "INVALID_ARGUMENT", "raw_input_contents"),
        (short_raw, "INVALID_ARGUMENT", "INPUT1"),
        (wrong_count, "INVALID_ARGUMENT", "INPUT0"),
        (fp16_typed, "INVALID_ARGUMENT", "raw"),
    ];
    for (request, code, needle) in cases {
        let reply: GrpcReply<ModelInferResponse> =
            client.call("ModelInfer", &request).await.unwrap();
        assert_eq!(reply.http_status, StatusCode::OK);
        assert_eq!(
            status_name(reply.grpc_status),
            code,
            "{}",
            reply.grpc_message
        );
        assert!(
            reply.grpc_message.contains(needle),
            "{:?} lacks {needle:?}",
            reply.grpc_message
        );
        assert!(reply.message.is_none());
    }

    let ready: GrpcReply<ModelReadyResponse> = client
        .call(
            "ModelReady",
            &ModelReadyRequest {
                name: "nope".into(),
                version: String::new(),
            },
        )
        .await
        .unwrap();
    assert_eq!(status_name(ready.grpc_status), "NOT_FOUND");
    let unknown_rpc: GrpcReply<ServerLiveResponse> = client
        .call("ModelStreamInfer", &ServerLiveRequest {})
        .await
        .unwrap();
    assert_eq!(status_name(unknown_rpc.grpc_status), "UNIMPLEMENTED");
    server.stop().await;
}

#[tokio::test]
async fn malformed_frames_and_protobuf_are_invalid_argument() {
    let server = Running::start().await;
    let mut client = server.grpc().await;
    let cases: [(&[u8], &str); 6] = [
        // A length-delimited field 1 claiming 100 bytes that are not there.
        (&[0, 0, 0, 0, 2, 0x0a, 100], "INVALID_ARGUMENT"),
        // Field 5 (inputs) holding a truncated varint.
        (&[0, 0, 0, 0, 3, 0x2a, 1, 0x80], "INVALID_ARGUMENT"),
        // Wire type 7 does not exist.
        (&[0, 0, 0, 0, 1, 0x0f], "INVALID_ARGUMENT"),
        (&[0, 0], "INVALID_ARGUMENT"),
        (&[0, 0, 0, 0, 9, 1], "INVALID_ARGUMENT"),
        (&[1, 0, 0, 0, 0], "UNIMPLEMENTED"),
    ];
    for (body, code) in cases {
        let reply = client
            .call_raw("ModelInfer", Bytes::from_static(body))
            .await
            .unwrap();
        assert_eq!(
            status_name(reply.grpc_status),
            code,
            "{body:?}: {}",
            reply.grpc_message
        );
    }
    // An empty message is a valid (empty) request: no model name, so NOT_FOUND.
    let reply = client
        .call_raw("ModelInfer", Bytes::from_static(&[0, 0, 0, 0, 0]))
        .await
        .unwrap();
    assert_eq!(status_name(reply.grpc_status), "NOT_FOUND");
    server.stop().await;
}

#[tokio::test]
async fn oversized_message_is_resource_exhausted() {
    let server = Running::start().await;
    let mut client = server.grpc().await;
    let mut request = add_sub_request();
    request.model_name = "echo".into();
    request.id = "x".repeat(super::super::MAX_BODY_BYTES);
    let reply: GrpcReply<ModelInferResponse> = client.call("ModelInfer", &request).await.unwrap();
    assert_eq!(status_name(reply.grpc_status), "RESOURCE_EXHAUSTED");
    server.stop().await;
}

#[tokio::test]
async fn pseudo_random_bytes_never_break_the_server() {
    let server = Running::start().await;
    let mut client = server.grpc().await;
    // A fixed xorshift sequence: reproducible, no extra dependency.
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    for round in 0..200 {
        let len = (round % 40) + 1;
        let mut message = Vec::with_capacity(len);
        for _ in 0..len {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            message.push(state as u8);
        }
        let mut body = vec![0, 0, 0, 0, len as u8];
        body.extend(message);
        let reply = client
            .call_raw("ModelInfer", Bytes::from(body))
            .await
            .unwrap();
        let code = status_name(reply.grpc_status);
        assert!(
            ["INVALID_ARGUMENT", "NOT_FOUND"].contains(&code),
            "round {round}: {code} {}",
            reply.grpc_message
        );
    }
    server.stop().await;
}
