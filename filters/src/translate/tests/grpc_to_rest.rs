//! gRPC caller → REST upstream.

use super::*;

fn grpc_call(rpc: &str, msg: &impl Message) -> Request<TranslateBody> {
    Request::post(format!("/inference.GRPCInferenceService/{rpc}"))
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .body(body(frame(msg)))
        .unwrap()
}

fn rest_answer(
    status: u16,
    headers: &[(&str, &str)],
    b: impl Into<Bytes>,
) -> Response<TranslateBody> {
    let mut resp = Response::new(body(b));
    *resp.status_mut() = StatusCode::from_u16(status).unwrap();
    for (k, v) in headers {
        resp.headers_mut().insert(
            http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
            HeaderValue::from_str(v).unwrap(),
        );
    }
    resp
}

fn raw_fp32(values: &[f32]) -> Bytes {
    values
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect::<Vec<u8>>()
        .into()
}

fn infer_msg() -> pb::ModelInferRequest {
    pb::ModelInferRequest {
        model_name: "echo".into(),
        id: "7".into(),
        inputs: vec![
            pb::model_infer_request::InferInputTensor {
                name: "x".into(),
                datatype: "FP32".into(),
                shape: vec![1, 2],
                ..Default::default()
            },
            pb::model_infer_request::InferInputTensor {
                name: "s".into(),
                datatype: "BYTES".into(),
                shape: vec![1],
                ..Default::default()
            },
        ],
        raw_input_contents: vec![
            raw_fp32(&[1.5, -2.0]),
            Bytes::from_static(b"\x02\x00\x00\x00hi"),
        ],
        ..Default::default()
    }
}

async fn grpc_result(resp: Response<TranslateBody>) -> Result<Bytes, (u32, String)> {
    let (status, headers, b, trailers) = read(resp).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers["content-type"], "application/grpc");
    let st = trailers.as_ref().unwrap_or(&headers);
    let code: u32 = st["grpc-status"].to_str().unwrap().parse().unwrap();
    if code == 0 {
        Ok(grpc_frame::unframe(&b).unwrap())
    } else {
        let msg = st
            .get("grpc-message")
            .map(|m| grpc_message::percent_decode(m.as_bytes()))
            .unwrap_or_default();
        Err((code, msg))
    }
}

#[tokio::test]
async fn raw_inputs_go_as_json_data_without_the_binary_extension() {
    let t = Translator::new(settings(Direction::GrpcToRest));
    let (up, pending) = t
        .request(grpc_call("ModelInfer", &infer_msg()))
        .await
        .unwrap();
    assert_eq!(up.method(), http::Method::POST);
    assert_eq!(up.uri().path(), "/v2/models/echo/infer");
    assert_eq!(up.headers()["content-type"], "application/json");
    assert!(
        up.headers()
            .get("inference-header-content-length")
            .is_none()
    );
    let b = up.into_body().collect().await.unwrap().to_bytes();
    let v: serde_json::Value = serde_json::from_slice(&b).unwrap();
    assert_eq!(
        v,
        serde_json::json!({"id":"7","inputs":[
            {"name":"x","datatype":"FP32","shape":[1,2],"data":[1.5,-2.0]},
            {"name":"s","datatype":"BYTES","shape":[1],"data":["hi"]}]})
    );
    // MLServer-style answer: JSON data, model_version null.
    let answer = r#"{"model_name":"echo","model_version":null,"id":"7","parameters":{"n":1},"outputs":[
        {"name":"y","datatype":"FP32","shape":[2],"data":[3.0,4.5]},
        {"name":"s","datatype":"BYTES","shape":[1],"data":["hi"]}]}"#;
    let msg = grpc_result(pending.response(rest_answer(200, &[], answer)).await)
        .await
        .unwrap();
    let r = pb::ModelInferResponse::decode(msg).unwrap();
    assert_eq!(r.model_name, "echo");
    assert_eq!(r.id, "7");
    assert_eq!(r.outputs[0].shape, vec![2]);
    // Raw in, raw out.
    assert_eq!(r.raw_output_contents[0], raw_fp32(&[3.0, 4.5]));
    assert_eq!(&r.raw_output_contents[1][..], b"\x02\x00\x00\x00hi");
    assert!(r.outputs.iter().all(|o| o.contents.is_none()));
}

#[tokio::test]
async fn raw_inputs_go_as_binary_sections_with_the_extension() {
    let t = Translator::new(TranslateSettings {
        upstream_binary: true,
        ..settings(Direction::GrpcToRest)
    });
    let (up, pending) = t
        .request(grpc_call("ModelInfer", &infer_msg()))
        .await
        .unwrap();
    let n: usize = up.headers()["inference-header-content-length"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    let b = up.into_body().collect().await.unwrap().to_bytes();
    let v: serde_json::Value = serde_json::from_slice(&b[..n]).unwrap();
    assert_eq!(v["parameters"]["binary_data_output"], true);
    assert_eq!(v["inputs"][0]["parameters"]["binary_data_size"], 8);
    assert_eq!(v["inputs"][1]["parameters"]["binary_data_size"], 6);
    assert_eq!(&b[n..n + 8], &raw_fp32(&[1.5, -2.0])[..]);
    // A KServe-style mixed answer: one binary output, one JSON.
    let json = r#"{"model_name":"echo","id":"7","outputs":[
        {"name":"y","datatype":"FP32","shape":[1],"parameters":{"binary_data_size":4}},
        {"name":"z","datatype":"INT64","shape":[1],"data":[9]}]}"#;
    let mut all = json.as_bytes().to_vec();
    all.extend_from_slice(&2.5f32.to_le_bytes());
    let len = json.len().to_string();
    let resp = rest_answer(200, &[("inference-header-content-length", &len)], all);
    let r =
        pb::ModelInferResponse::decode(grpc_result(pending.response(resp).await).await.unwrap())
            .unwrap();
    assert_eq!(r.raw_output_contents[0], raw_fp32(&[2.5]));
    assert_eq!(&r.raw_output_contents[1][..], &9i64.to_le_bytes());
    assert!(r.outputs[0].parameters.is_empty());
}

#[tokio::test]
async fn typed_contents_stay_typed() {
    let t = Translator::new(settings(Direction::GrpcToRest));
    let mut m = infer_msg();
    m.raw_input_contents.clear();
    m.inputs.truncate(1);
    m.inputs[0].contents = Some(pb::InferTensorContents {
        fp32_contents: vec![1.0, 2.0],
        ..Default::default()
    });
    let (_, pending) = t.request(grpc_call("ModelInfer", &m)).await.unwrap();
    let answer = r#"{"model_name":"echo","outputs":[{"name":"y","datatype":"INT32","shape":[2],"data":[[1],[2]]}]}"#;
    let r = pb::ModelInferResponse::decode(
        grpc_result(pending.response(rest_answer(200, &[], answer)).await)
            .await
            .unwrap(),
    )
    .unwrap();
    assert!(r.raw_output_contents.is_empty());
    assert_eq!(
        r.outputs[0].contents.as_ref().unwrap().int_contents,
        vec![1, 2]
    );
}

#[tokio::test]
async fn bad_calls_are_invalid_argument_without_an_upstream_call() {
    let t = Translator::new(settings(Direction::GrpcToRest));
    let mut mixed = infer_msg();
    mixed.inputs[0].contents = Some(pb::InferTensorContents::default());
    let mut short = infer_msg();
    short.raw_input_contents[0] = Bytes::from_static(&[0, 0, 0]);
    let mut fp16 = infer_msg();
    fp16.inputs[0].datatype = "FP16".into();
    fp16.inputs[0].shape = vec![4];
    for (m, want) in [
        (mixed, "contents must not be set"),
        (short, "not a whole number"),
        (fp16, "needs the binary tensor extension"),
    ] {
        let answer = t.request(grpc_call("ModelInfer", &m)).await.unwrap_err();
        let (code, msg) = grpc_result(answer).await.unwrap_err();
        assert_eq!(code, code::INVALID_ARGUMENT);
        assert!(msg.contains(want), "{msg}");
    }
    let unknown = Request::post("/inference.GRPCInferenceService/ModelStreamInfer")
        .body(body(frame(&infer_msg())))
        .unwrap();
    let (code, _) = grpc_result(t.request(unknown).await.unwrap_err())
        .await
        .unwrap_err();
    assert_eq!(code, code::UNIMPLEMENTED);
}

#[tokio::test]
async fn rest_errors_become_grpc_status() {
    let cases: [(u16, &str, u32, &str); 4] = [
        (
            404,
            r#"{"error":"Model nope not found"}"#,
            code::NOT_FOUND,
            "Model nope not found",
        ),
        (
            500,
            "Internal Server Error",
            code::INTERNAL,
            "Internal Server Error",
        ),
        (
            422,
            r#"{"detail":"bad json"}"#,
            code::INVALID_ARGUMENT,
            "bad json",
        ),
        (503, "", code::UNAVAILABLE, "503"),
    ];
    for (status, b, want, text) in cases {
        let t = Translator::new(settings(Direction::GrpcToRest));
        let (_, pending) = t
            .request(grpc_call("ModelInfer", &infer_msg()))
            .await
            .unwrap();
        let (code, msg) = grpc_result(pending.response(rest_answer(status, &[], b)).await)
            .await
            .unwrap_err();
        assert_eq!(code, want, "{status}");
        assert!(msg.contains(text), "{msg}");
    }
}

#[tokio::test]
async fn health_and_metadata_rpcs() {
    let t = Translator::new(settings(Direction::GrpcToRest));
    let ready = pb::ModelReadyRequest {
        name: "m".into(),
        version: "2".into(),
    };
    let (up, pending) = t.request(grpc_call("ModelReady", &ready)).await.unwrap();
    assert_eq!(
        (up.method().as_str(), up.uri().path()),
        ("GET", "/v2/models/m/versions/2/ready")
    );
    // MLServer answers 200 with an empty body.
    let r = pb::ModelReadyResponse::decode(
        grpc_result(pending.response(rest_answer(200, &[], "")).await)
            .await
            .unwrap(),
    )
    .unwrap();
    assert!(r.ready);
    let (_, pending) = t.request(grpc_call("ModelReady", &ready)).await.unwrap();
    let (code, _) = grpc_result(
        pending
            .response(rest_answer(404, &[], r#"{"error":"no"}"#))
            .await,
    )
    .await
    .unwrap_err();
    assert_eq!(code, code::NOT_FOUND);

    let (up, pending) = t
        .request(grpc_call("ServerLive", &pb::ServerLiveRequest {}))
        .await
        .unwrap();
    assert_eq!(up.uri().path(), "/v2/health/live");
    let r = pb::ServerLiveResponse::decode(
        grpc_result(
            pending
                .response(rest_answer(200, &[], r#"{"live":true}"#))
                .await,
        )
        .await
        .unwrap(),
    )
    .unwrap();
    assert!(r.live);

    let (up, pending) = t
        .request(grpc_call("ServerMetadata", &pb::ServerMetadataRequest {}))
        .await
        .unwrap();
    assert_eq!(up.uri().path(), "/v2");
    let r = pb::ServerMetadataResponse::decode(
        grpc_result(
            pending
                .response(rest_answer(
                    200,
                    &[],
                    r#"{"name":"mlserver","version":"1.7.1","extensions":[]}"#,
                ))
                .await,
        )
        .await
        .unwrap(),
    )
    .unwrap();
    assert_eq!((r.name.as_str(), r.version.as_str()), ("mlserver", "1.7.1"));

    let meta = pb::ModelMetadataRequest {
        name: "m".into(),
        version: String::new(),
    };
    let (up, pending) = t.request(grpc_call("ModelMetadata", &meta)).await.unwrap();
    assert_eq!(up.uri().path(), "/v2/models/m");
    let body_json = r#"{"name":"m","versions":null,"platform":"","inputs":[{"name":"x","datatype":"FP32","shape":[-1,2]}],"outputs":[]}"#;
    let r = pb::ModelMetadataResponse::decode(
        grpc_result(pending.response(rest_answer(200, &[], body_json)).await)
            .await
            .unwrap(),
    )
    .unwrap();
    assert_eq!(r.inputs[0].shape, vec![-1, 2]);
}

#[tokio::test]
async fn double_and_uint64_parameters_map_both_ways() {
    use pb::infer_parameter::ParameterChoice as P;
    let param = |c: P| pb::InferParameter {
        parameter_choice: Some(c),
    };
    let mut msg = infer_msg();
    msg.parameters = [
        ("d".to_owned(), param(P::DoubleParam(0.125))),
        ("u".to_owned(), param(P::Uint64Param(u64::MAX))),
        ("inf".to_owned(), param(P::DoubleParam(f64::INFINITY))),
    ]
    .into();
    let t = Translator::new(settings(Direction::GrpcToRest));
    let (up, pending) = t.request(grpc_call("ModelInfer", &msg)).await.unwrap();
    let b = up.into_body().collect().await.unwrap().to_bytes();
    let text = std::str::from_utf8(&b).unwrap();
    assert!(
        text.contains(r#""parameters":{"d":0.125,"inf":Infinity,"u":18446744073709551615}"#),
        "{text}"
    );
    let answer = r#"{"model_name":"echo","id":"7","parameters":{"d":-2.5,"u":18446744073709551615,"i":-1,"n":NaN},"outputs":[
        {"name":"x","datatype":"FP32","shape":[1,2],"parameters":{"scale":0.5},"data":[1.5,-2.0]}]}"#;
    let resp = pending
        .response(rest_answer(
            200,
            &[("content-type", "application/json")],
            answer,
        ))
        .await;
    let r = pb::ModelInferResponse::decode(grpc_result(resp).await.unwrap()).unwrap();
    let p = |k: &str| r.parameters[k].parameter_choice.clone().unwrap();
    assert_eq!(p("d"), P::DoubleParam(-2.5));
    assert_eq!(p("u"), P::Uint64Param(u64::MAX));
    assert_eq!(p("i"), P::Int64Param(-1));
    assert!(matches!(p("n"), P::DoubleParam(v) if v.is_nan()));
    assert_eq!(
        r.outputs[0].parameters["scale"].parameter_choice,
        Some(P::DoubleParam(0.5))
    );
}
