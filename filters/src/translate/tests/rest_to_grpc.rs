//! REST caller → gRPC upstream.

use super::*;

#[tokio::test]
async fn nested_fp32_json_goes_into_the_packed_field_and_comes_back_as_json() {
    let json = r#"{"id":"r1","parameters":{"p_bool":true,"p_int":-3,"p_str":"s","p_f":0.5,"p_big":18446744073709551615},
        "inputs":[{"name":"x","shape":[2,2],"datatype":"FP32","parameters":{"q":1},"data":[[1,2.5],[3,-4]]}],
        "outputs":[{"name":"x"}]}"#;
    let (resp, seen) = rest_via_echo(infer_request(json)).await;
    let seen = seen.unwrap();
    assert_eq!(seen.model_name, "echo");
    assert_eq!(seen.id, "r1");
    use pb::infer_parameter::ParameterChoice as P;
    let p = |k: &str| seen.parameters[k].parameter_choice.clone().unwrap();
    assert_eq!(p("p_bool"), P::BoolParam(true));
    assert_eq!(p("p_int"), P::Int64Param(-3));
    assert_eq!(p("p_str"), P::StringParam("s".into()));
    assert_eq!(p("p_f"), P::DoubleParam(0.5));
    assert_eq!(p("p_big"), P::Uint64Param(u64::MAX));
    let input = &seen.inputs[0];
    assert_eq!(input.shape, vec![2, 2]);
    assert_eq!(
        input.contents.as_ref().unwrap().fp32_contents,
        vec![1.0, 2.5, 3.0, -4.0]
    );
    assert!(seen.raw_input_contents.is_empty());
    assert_eq!(seen.outputs[0].name, "x");

    let (status, headers, b, _) = read(resp).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers["content-type"], "application/json");
    assert_eq!(
        std::str::from_utf8(&b).unwrap(),
        r#"{"model_name":"echo","id":"r1","parameters":{"p_big":18446744073709551615,"p_bool":true,"p_f":0.5,"p_int":-3,"p_str":"s"},"outputs":[{"name":"x","datatype":"FP32","shape":[2,2],"parameters":{"q":1},"data":[1.0,2.5,3.0,-4.0]}]}"#
    );
}

#[tokio::test]
async fn data_before_datatype_is_still_typed() {
    let json = r#"{"inputs":[{"data":[1,2,3],"name":"i","shape":[3],"datatype":"INT64"},
        {"data":[true,false],"datatype":"BOOL","name":"b","shape":[2]},
        {"name":"s","data":["ab","xyz"],"shape":[2],"datatype":"BYTES"}]}"#;
    let (resp, seen) = rest_via_echo(infer_request(json)).await;
    let seen = seen.unwrap();
    assert_eq!(
        seen.inputs[0].contents.as_ref().unwrap().int64_contents,
        vec![1, 2, 3]
    );
    assert_eq!(
        seen.inputs[1].contents.as_ref().unwrap().bool_contents,
        vec![true, false]
    );
    assert_eq!(
        seen.inputs[2].contents.as_ref().unwrap().bytes_contents,
        vec![Bytes::from("ab"), Bytes::from("xyz")]
    );
    let (status, _, b, _) = read(resp).await;
    assert_eq!(status, StatusCode::OK);
    let v: serde_json::Value = serde_json::from_slice(&b).unwrap();
    assert_eq!(v["outputs"][2]["data"], serde_json::json!(["ab", "xyz"]));
}

#[tokio::test]
async fn binary_sections_become_raw_input_slices_and_binary_outputs() {
    let fp16 = [0x00u8, 0x3c, 0x00, 0x40]; // 1.0, 2.0
    let strings = b"\x02\x00\x00\x00ab\x03\x00\x00\x00xyz";
    let json = r#"{"inputs":[{"name":"h","shape":[2],"datatype":"FP16","parameters":{"binary_data_size":4}},
        {"name":"s","shape":[2],"datatype":"BYTES","parameters":{"binary_data_size":13}},
        {"name":"j","shape":[1],"datatype":"INT32","data":[7]}],
        "outputs":[{"name":"h","parameters":{"binary_data":true}},{"name":"s","parameters":{"binary_data":false}},{"name":"j"}],
        "parameters":{"binary_data_output":true}}"#;
    let (resp, seen) = rest_via_echo(binary_request(json, &[&fp16, strings])).await;
    let seen = seen.unwrap();
    // All inputs go raw once one does; the JSON one is encoded little-endian.
    assert_eq!(seen.raw_input_contents.len(), 3);
    assert_eq!(&seen.raw_input_contents[0][..], &fp16);
    assert_eq!(&seen.raw_input_contents[1][..], &strings[..]);
    assert_eq!(&seen.raw_input_contents[2][..], &7i32.to_le_bytes());
    assert!(seen.inputs.iter().all(|i| i.contents.is_none()));
    assert!(
        seen.inputs[0].parameters.is_empty(),
        "binary_data_size is dropped"
    );
    assert!(!seen.parameters.contains_key("binary_data_output"));
    assert!(
        seen.outputs[0].parameters.is_empty(),
        "binary_data is dropped"
    );

    let (status, headers, b, _) = read(resp).await;
    assert_eq!(status, StatusCode::OK);
    let header_len: usize = headers["inference-header-content-length"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&b[..header_len]).unwrap();
    assert_eq!(v["outputs"][0]["parameters"]["binary_data_size"], 4);
    assert_eq!(v["outputs"][1]["data"], serde_json::json!(["ab", "xyz"]));
    assert_eq!(v["outputs"][2]["parameters"]["binary_data_size"], 4);
    let mut tail = fp16.to_vec();
    tail.extend_from_slice(&7i32.to_le_bytes());
    assert_eq!(&b[header_len..], &tail[..]);
}

async fn rejected(req: Request<TranslateBody>) -> (StatusCode, String) {
    let (resp, seen) = rest_via_echo(req).await;
    assert!(seen.is_none(), "the upstream must not be called");
    let (status, headers, b, _) = read(resp).await;
    assert_eq!(headers["content-type"], "application/json");
    let v: serde_json::Value = serde_json::from_slice(&b).unwrap();
    (status, v["error"].as_str().unwrap().to_owned())
}

#[tokio::test]
async fn bad_input_is_400_naming_the_tensor_and_the_fault() {
    let cases: &[(&str, &str)] = &[
        (
            r#"{"inputs":[{"name":"x","shape":[2],"datatype":"FP32","data":[1,"a"]}]"#,
            "tensor \"x\"",
        ),
        (
            r#"{"inputs":[{"name":"x","shape":[3],"datatype":"FP32","data":[1,2]}]}"#,
            "needs 3 elements but data has 2",
        ),
        (
            r#"{"inputs":[{"name":"x","shape":[1],"datatype":"FP8","data":[1]}]}"#,
            "unknown datatype \"FP8\"",
        ),
        (
            r#"{"inputs":[{"name":"x","shape":[1],"datatype":"INT8","data":[300]}]}"#,
            "not a valid INT8",
        ),
        (
            r#"{"inputs":[{"name":"x","shape":[1],"datatype":"UINT32","data":[-1]}]}"#,
            "not a valid UINT32",
        ),
        (
            r#"{"inputs":[{"name":"x","shape":[1],"datatype":"BOOL","data":[1]}]}"#,
            "not a valid BOOL",
        ),
        (
            r#"{"inputs":[{"name":"x","shape":[1],"datatype":"FP16","data":[1]}]}"#,
            "FP16 has no JSON form",
        ),
        (
            r#"{"inputs":[{"name":"x","datatype":"FP16","data":[1],"shape":[1]}]}"#,
            "FP16 has no JSON form",
        ),
        (
            r#"{"inputs":[{"name":"x","shape":[-1],"datatype":"FP32","data":[1]}]}"#,
            "invalid shape",
        ),
        (
            r#"{"inputs":[{"name":"x","shape":[1],"datatype":"FP32","data":[1]},{"name":"x","shape":[1],"datatype":"FP32","data":[1]}]}"#,
            "duplicate tensor name",
        ),
        (
            r#"{"inputs":[{"name":"x","shape":[1],"datatype":"FP32"}]}"#,
            "neither data nor binary_data_size",
        ),
        (
            r#"{"inputs":[{"shape":[1],"datatype":"FP32","data":[1]}]}"#,
            "has no name",
        ),
        (
            r#"{"inputs":[{"name":"x","shape":[1],"datatype":"FP32","data":[1]}],"parameters":{"p":[1]}}"#,
            "parameter value",
        ),
        (
            r#"{"inputs":[{"name":"x","shape":[4294967296,4294967296,4294967296],"datatype":"FP32","data":[1]}]}"#,
            "invalid shape",
        ),
        (
            r#"{"inputs":[{"name":"x","shape":[1],"datatype":"FP32","data":[1],"parameters":{"binary_data_size":4}}]}"#,
            "both data and binary_data_size",
        ),
    ];
    for (json, want) in cases {
        let (status, msg) = rejected(infer_request(json)).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{json}");
        assert!(msg.contains(want), "{json}: {msg:?} lacks {want:?}");
    }
}

#[tokio::test]
async fn numbers_out_of_range_for_the_float_type_are_400_naming_tensor_and_element() {
    let huge = "9".repeat(100_000);
    let tiny = format!("0.{}1e-100000", "0".repeat(50));
    let cases = [
        ("FP32", format!("[1, {huge}]"), "element 1"),
        ("FP32", "[1e39]".to_owned(), "element 0"),
        ("FP32", "[0.5, 2, 1e-50]".to_owned(), "element 2"),
        ("FP32", "[[1, 2], [3, 1e39]]".to_owned(), "element 3"),
        ("FP64", format!("[{tiny}]"), "element 0"),
        ("FP64", "[1, 1e309]".to_owned(), "element 1"),
    ];
    for (dt, data, element) in cases {
        let n = if data.starts_with("[[") {
            4
        } else {
            data.matches(',').count() + 1
        };
        let shape = if n == 4 {
            "[2,2]".to_owned()
        } else {
            format!("[{n}]")
        };
        let json = format!(
            r#"{{"inputs":[{{"name":"x","shape":{shape},"datatype":"{dt}","data":{data}}}]}}"#
        );
        let (status, msg) = rejected(infer_request(&json)).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{dt} {:.80}", data);
        assert!(msg.contains("tensor \"x\""), "{msg}");
        assert!(msg.contains(element), "{msg}");
        assert!(msg.contains(&format!("out of range for {dt}")), "{msg}");
        assert!(
            msg.len() < 400,
            "the number is not echoed whole: {}",
            msg.len()
        );
    }
    // In range, zero, tiny-but-representable and the literals the caller wrote still pass.
    for (dt, data) in [
        ("FP32", "[0, 0.0, -0.0, 1e-40, 3.4e38]"),
        ("FP64", "[0e5000, 1e-320, 1.7e308]"),
    ] {
        let n = data.matches(',').count() + 1;
        let json = format!(
            r#"{{"inputs":[{{"name":"x","shape":[{n}],"datatype":"{dt}","data":{data}}}]}}"#
        );
        let (resp, seen) = rest_via_echo(infer_request(&json)).await;
        assert!(seen.is_some(), "{dt} {data}: {:?}", resp.status());
    }
}

#[tokio::test]
async fn integers_beyond_64_bits_are_400_naming_element_and_the_digits_written() {
    for (dt, data, element) in [
        ("INT64", "[1, 99999999999999999999999]", "element 1"),
        ("UINT64", "[18446744073709551616]", "element 0"),
        ("INT8", "[-99999999999999999999999]", "element 0"),
    ] {
        let n = data.matches(',').count() + 1;
        let json = format!(
            r#"{{"inputs":[{{"name":"x","shape":[{n}],"datatype":"{dt}","data":{data}}}]}}"#
        );
        let (status, msg) = rejected(infer_request(&json)).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{dt} {data}");
        assert!(msg.contains("tensor \"x\""), "{msg}");
        assert!(msg.contains(element), "{msg}");
        assert!(msg.contains(&format!("out of range for {dt}")), "{msg}");
        // The digits as written, not the float they would round to (1e23 for the first).
        let written = data
            .trim_matches(['[', ']'])
            .rsplit(", ")
            .next()
            .unwrap_or_default();
        assert!(msg.contains(written), "{msg}");
    }
}

#[tokio::test]
async fn forged_sizes_are_400_and_allocate_nothing() {
    let json = r#"{"inputs":[{"name":"x","shape":[1],"datatype":"FP32","parameters":{"binary_data_size":1099511627776}}]}"#;
    let (status, msg) = rejected(binary_request(json, &[&[0, 0, 0, 0]])).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(
        msg.contains("tensor") || msg.contains("input \"x\""),
        "{msg}"
    );
    assert!(msg.contains("exceeds the 4 bytes left"), "{msg}");

    let mut req = binary_request(json, &[]);
    req.headers_mut().insert(
        "inference-header-content-length",
        HeaderValue::from_static("1099511627776"),
    );
    let (status, msg) = rejected(req).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(msg.contains("Inference-Header-Content-Length"), "{msg}");

    // Sections that do not add up to the body.
    let json = r#"{"inputs":[{"name":"x","shape":[1],"datatype":"FP32","parameters":{"binary_data_size":4}}]}"#;
    let (status, msg) = rejected(binary_request(json, &[&[0; 6]])).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(
        msg.contains("add up to 4 bytes but the body has 6"),
        "{msg}"
    );

    // A forged shape with real data of the right type: shape check, not an allocation.
    let json = r#"{"inputs":[{"name":"x","shape":[1099511627776],"datatype":"FP32","data":[1]}]}"#;
    let (status, msg) = rejected(infer_request(json)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(
        msg.contains("needs 1099511627776 elements but data has 1"),
        "{msg}"
    );
}

#[tokio::test]
async fn bodies_and_decoded_tensors_are_bounded() {
    let t = Translator::new(TranslateSettings {
        max_decoded_bytes: MaxDecodedBytes(64),
        ..settings(Direction::RestToGrpc)
    });
    let big = format!(
        r#"{{"inputs":[{{"name":"x","shape":[40],"datatype":"FP64","data":[{}]}}]}}"#,
        vec!["1"; 40].join(",")
    );
    let (status, _, b, _) = read(t.request(infer_request(&big)).await.unwrap_err()).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{:?}", b);

    let t = Translator::new(TranslateSettings {
        max_decoded_bytes: MaxDecodedBytes(200),
        ..settings(Direction::RestToGrpc)
    });
    // 40 FP64 in 106 bytes of JSON decode to 320 bytes: over the limit.
    let (status, _, b, _) = read(t.request(infer_request(&big)).await.unwrap_err()).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{:?}", b);
    assert!(String::from_utf8_lossy(&b).contains("decoded tensor data"));

    // FP32 runs are charged once per run, still before anything goes upstream: 100 zeros in one
    // flat run are a ~270-byte body (under the limit) that decodes to 400 bytes (over it).
    let t = Translator::new(TranslateSettings {
        max_decoded_bytes: MaxDecodedBytes(300),
        ..settings(Direction::RestToGrpc)
    });
    let zeros = format!(
        r#"{{"inputs":[{{"name":"x","shape":[100],"datatype":"FP32","data":[{}]}}]}}"#,
        vec!["0"; 100].join(",")
    );
    assert!(zeros.len() <= 300);
    let (status, _, b, _) = read(t.request(infer_request(&zeros)).await.unwrap_err()).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{:?}", b);
    assert!(String::from_utf8_lossy(&b).contains("decoded tensor data"));
}

/// A body that declares `len` bytes and never delivers one.
struct DeclaredOnly(u64);

impl http_body::Body for DeclaredOnly {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, BoxError>>> {
        std::task::Poll::Pending
    }

    fn size_hint(&self) -> http_body::SizeHint {
        http_body::SizeHint::with_exact(self.0)
    }
}

#[tokio::test]
async fn a_declared_length_over_the_limit_is_refused_before_reading() {
    let t = Translator::new(settings(Direction::RestToGrpc));
    // JSON (collect path) and a binary-extension header whose Content-Length is over the limit.
    for header_len in [None, Some("40")] {
        let mut req = Request::post("/v2/models/m/infer")
            .body(DeclaredOnly((1 << 20) + 1).boxed_unsync())
            .unwrap();
        if let Some(h) = header_len {
            let v = HeaderValue::from_static(h);
            req.headers_mut().insert(INFERENCE_HEADER_CONTENT_LENGTH, v);
            req.headers_mut()
                .insert(http::header::CONTENT_LENGTH, HeaderValue::from(1u64 << 21));
        }
        // The body never yields, so only an answer that did not wait for it can arrive.
        let answer = tokio::time::timeout(std::time::Duration::from_secs(5), t.request(req))
            .await
            .expect("refused without reading");
        let (status, _, b, _) = read(answer.unwrap_err()).await;
        assert_eq!(
            status,
            StatusCode::PAYLOAD_TOO_LARGE,
            "{header_len:?}: {b:?}"
        );
    }
}

#[tokio::test]
async fn every_endpoint_maps_to_its_rpc() {
    use http::Method;
    let cases = [
        (Method::GET, "/v2/health/live", Rpc::ServerLive, "", ""),
        (Method::GET, "/v2/health/ready", Rpc::ServerReady, "", ""),
        (Method::GET, "/v2", Rpc::ServerMetadata, "", ""),
        (Method::GET, "/v2/models/m", Rpc::ModelMetadata, "m", ""),
        (
            Method::GET,
            "/v2/models/m/versions/3",
            Rpc::ModelMetadata,
            "m",
            "3",
        ),
        (Method::GET, "/v2/models/m/ready", Rpc::ModelReady, "m", ""),
        (
            Method::GET,
            "/v2/models/m/versions/3/ready",
            Rpc::ModelReady,
            "m",
            "3",
        ),
        (Method::POST, "/v2/models/m/infer", Rpc::ModelInfer, "m", ""),
        (
            Method::POST,
            "/v2/models/m/versions/3/infer",
            Rpc::ModelInfer,
            "m",
            "3",
        ),
    ];
    for (method, path, rpc, model, version) in cases {
        let ep = Endpoint::from_rest(&method, path).unwrap();
        assert_eq!(
            (ep.rpc, ep.model.as_str(), ep.version.as_str()),
            (rpc, model, version)
        );
        assert_eq!(ep.rest_path(), path);
    }
    assert!(Endpoint::from_rest(&Method::POST, "/v2/models/m").is_none());
    assert!(Endpoint::from_rest(&Method::GET, "/v1/models/m").is_none());

    // Metadata through the translator, and the answer rendered as REST JSON.
    let t = Translator::new(settings(Direction::RestToGrpc));
    let req = Request::get("/v2/models/m/versions/3")
        .body(body(""))
        .unwrap();
    let (up, pending) = t.request(req).await.unwrap();
    assert_eq!(
        up.uri().path(),
        "/inference.GRPCInferenceService/ModelMetadata"
    );
    let b = up.into_body().collect().await.unwrap().to_bytes();
    let m = pb::ModelMetadataRequest::decode(grpc_frame::unframe(&b).unwrap()).unwrap();
    assert_eq!((m.name.as_str(), m.version.as_str()), ("m", "3"));
    let answer = pb::ModelMetadataResponse {
        name: "m".into(),
        versions: vec!["3".into()],
        platform: "p".into(),
        inputs: vec![pb::model_metadata_response::TensorMetadata {
            name: "x".into(),
            datatype: "FP32".into(),
            shape: vec![-1, 4],
        }],
        outputs: vec![],
    };
    let (status, _, b, _) = read(pending.response(grpc_ok(&answer)).await).await;
    assert_eq!(status, StatusCode::OK);
    let v: serde_json::Value = serde_json::from_slice(&b).unwrap();
    assert_eq!(
        v,
        serde_json::json!({"name":"m","versions":["3"],"platform":"p",
            "inputs":[{"name":"x","datatype":"FP32","shape":[-1,4]}],"outputs":[]})
    );

    let req = Request::get("/v1/models/m").body(body("")).unwrap();
    let (status, _, _, _) = read(t.request(req).await.unwrap_err()).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn grpc_status_maps_to_http_with_an_error_body() {
    let table = [
        (3, 400),
        (5, 404),
        (14, 503),
        (4, 504),
        (8, 429),
        (12, 501),
        (13, 500),
        (2, 500),
    ];
    for (grpc, http) in table {
        let t = Translator::new(settings(Direction::RestToGrpc));
        let (_, pending) = t
            .request(infer_request(
                r#"{"inputs":[{"name":"x","shape":[1],"datatype":"FP32","data":[1]}]}"#,
            ))
            .await
            .unwrap();
        // Trailers-only answer with a percent-encoded message.
        let mut resp = Response::new(body(""));
        resp.headers_mut()
            .insert("content-type", HeaderValue::from_static("application/grpc"));
        resp.headers_mut()
            .insert("grpc-status", HeaderValue::from(grpc));
        resp.headers_mut().insert(
            "grpc-message",
            HeaderValue::from_static("model%20said%3A no"),
        );
        let (status, _, b, _) = read(pending.response(resp).await).await;
        assert_eq!(status.as_u16(), http, "grpc {grpc}");
        let v: serde_json::Value = serde_json::from_slice(&b).unwrap();
        assert_eq!(v["error"], "model said: no");
    }
}

#[tokio::test]
async fn the_tower_layer_wraps_an_inner_grpc_service() {
    use tower::{Layer as _, ServiceExt as _};
    let inner = tower::service_fn(|req: Request<TranslateBody>| async move {
        let bytes = req.into_body().collect().await?.to_bytes();
        let seen = pb::ModelInferRequest::decode(grpc_frame::unframe(&bytes)?)?;
        Ok::<_, BoxError>(grpc_ok(&echo(seen)))
    });
    let svc = OipTranslateLayer::new(settings(Direction::RestToGrpc)).layer(inner);
    let req =
        infer_request(r#"{"inputs":[{"name":"x","shape":[2],"datatype":"UINT8","data":[1,255]}]}"#);
    let (status, _, b, _) = read(svc.oneshot(req).await.unwrap()).await;
    assert_eq!(status, StatusCode::OK);
    let v: serde_json::Value = serde_json::from_slice(&b).unwrap();
    assert_eq!(v["outputs"][0]["data"], serde_json::json!([1, 255]));
}

#[tokio::test]
async fn non_finite_floats_are_read_and_written_as_triton_does() {
    let json = r#"{"parameters":{"p_nan":NaN,"p_inf":-Infinity},"inputs":[
        {"name":"f","shape":[4],"datatype":"FP32","data":[NaN,Infinity,-Infinity,1.5]},
        {"name":"d","shape":[2,2],"datatype":"FP64","data":[[-Infinity,NaN],[Infinity,0.25]]},
        {"data":[NaN,2],"name":"late","shape":[2],"datatype":"FP32"}]}"#;
    let (resp, seen) = rest_via_echo(infer_request(json)).await;
    let seen = seen.unwrap();
    let f = &seen.inputs[0].contents.as_ref().unwrap().fp32_contents;
    assert!(f[0].is_nan());
    assert_eq!(&f[1..], [f32::INFINITY, f32::NEG_INFINITY, 1.5]);
    let d = &seen.inputs[1].contents.as_ref().unwrap().fp64_contents;
    assert_eq!(d[0], f64::NEG_INFINITY);
    assert!(d[1].is_nan());
    assert_eq!(&d[2..], [f64::INFINITY, 0.25]);
    let late = &seen.inputs[2].contents.as_ref().unwrap().fp32_contents;
    assert!(late[0].is_nan() && late[1] == 2.0);
    use pb::infer_parameter::ParameterChoice as P;
    let p = |k: &str| seen.parameters[k].parameter_choice.clone().unwrap();
    assert!(matches!(p("p_nan"), P::DoubleParam(v) if v.is_nan()));
    assert_eq!(p("p_inf"), P::DoubleParam(f64::NEG_INFINITY));

    let (status, _, b, _) = read(resp).await;
    assert_eq!(status, StatusCode::OK);
    let text = std::str::from_utf8(&b).unwrap();
    assert!(
        text.contains(r#""parameters":{"p_inf":-Infinity,"p_nan":NaN}"#),
        "{text}"
    );
    assert!(
        text.contains(r#""data":[NaN,Infinity,-Infinity,1.5]"#),
        "{text}"
    );
    assert!(
        text.contains(r#""data":[-Infinity,NaN,Infinity,0.25]"#),
        "{text}"
    );
    // Near misses of the tokens are still malformed JSON.
    for bad in ["nan", "Inf", "+Infinity", "-NaN", "Infinityx"] {
        let json = format!(
            r#"{{"inputs":[{{"name":"f","shape":[1],"datatype":"FP32","data":[{bad}]}}]}}"#
        );
        let (status, msg) = rejected(infer_request(&json)).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}: {msg}");
    }
}
