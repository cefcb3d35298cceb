//! REST endpoints and their error mapping.

use super::*;

#[tokio::test]
async fn health_and_metadata() {
    let server = Running::start().await;
    let mut client = server.rest().await;
    for (path, expected) in [
        ("/v2/health/live", json!({"live": true})),
        ("/v2/health/ready", json!({"ready": true})),
        (
            "/v2/models/add_sub/ready",
            json!({"name": "add_sub", "ready": true}),
        ),
        (
            "/v2/models/echo/versions/1/ready",
            json!({"name": "echo", "ready": true}),
        ),
    ] {
        let reply = client.send(Method::GET, path, None).await.unwrap();
        assert_eq!(reply.status, StatusCode::OK, "{path}");
        assert_eq!(parse(&reply.body), expected, "{path}");
    }
    let reply = client.send(Method::GET, "/v2", None).await.unwrap();
    let server_meta = parse(&reply.body);
    assert_eq!(server_meta["name"], "ferry-demo-model-server");
    assert_eq!(server_meta["extensions"], json!([]));

    let reply = client
        .send(Method::GET, "/v2/models/add_sub", None)
        .await
        .unwrap();
    assert_eq!(reply.status, StatusCode::OK);
    let meta = parse(&reply.body);
    assert_eq!(meta["name"], "add_sub");
    assert_eq!(meta["versions"], json!(["1"]));
    assert_eq!(
        meta["inputs"],
        json!([
            {"name": "INPUT0", "datatype": "FP32", "shape": [-1]},
            {"name": "INPUT1", "datatype": "FP32", "shape": [-1]},
        ])
    );
    assert_eq!(meta["outputs"][1]["name"], "OUTPUT1");
    server.stop().await;
}

#[tokio::test]
async fn add_sub_infers_flat_and_nested_data() {
    let server = Running::start().await;
    let mut client = server.rest().await;
    let request = json!({
        "id": "r1",
        "inputs": [
            {"name": "INPUT0", "shape": [2, 2], "datatype": "FP32", "data": [[1, 2], [3, 4.5]]},
            {"name": "INPUT1", "shape": [2, 2], "datatype": "FP32", "data": [1, 1, 1, 1]},
        ],
    });
    let reply = client
        .send(
            Method::POST,
            "/v2/models/add_sub/versions/1/infer",
            json_body(&request),
        )
        .await
        .unwrap();
    assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
    let body = parse(&reply.body);
    assert_eq!(body["model_name"], "add_sub");
    assert_eq!(body["id"], "r1");
    assert_eq!(
        body["outputs"],
        json!([
            {"name": "OUTPUT0", "datatype": "FP32", "shape": [2, 2], "data": [2.0, 3.0, 4.0, 5.5]},
            {"name": "OUTPUT1", "datatype": "FP32", "shape": [2, 2], "data": [0.0, 1.0, 2.0, 3.5]},
        ])
    );

    // Only the requested output, and no id when none was sent.
    let mut request = request;
    request["outputs"] = json!([{"name": "OUTPUT1"}]);
    request.as_object_mut().unwrap().remove("id");
    let reply = client
        .send(
            Method::POST,
            "/v2/models/add_sub/infer",
            json_body(&request),
        )
        .await
        .unwrap();
    let body = parse(&reply.body);
    assert_eq!(body["outputs"].as_array().unwrap().len(), 1);
    assert_eq!(body["outputs"][0]["name"], "OUTPUT1");
    assert!(body.get("id").is_none());
    server.stop().await;
}

#[tokio::test]
async fn echo_returns_inputs_renamed() {
    let server = Running::start().await;
    let mut client = server.rest().await;
    let request = json!({"inputs": [
        {"name": "text", "shape": [2], "datatype": "BYTES", "data": ["ab", "xyz"]},
        {"name": "flags", "shape": [1, 3], "datatype": "BOOL", "data": [[true, false, true]]},
    ]});
    let reply = client
        .send(Method::POST, "/v2/models/echo/infer", json_body(&request))
        .await
        .unwrap();
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(
        parse(&reply.body)["outputs"],
        json!([
            {"name": "OUT_text", "datatype": "BYTES", "shape": [2], "data": ["ab", "xyz"]},
            {"name": "OUT_flags", "datatype": "BOOL", "shape": [1, 3], "data": [[true, false, true]]},
        ])
    );
    server.stop().await;
}

#[tokio::test]
async fn errors_map_to_statuses_with_json_bodies() {
    let server = Running::start().await;
    let mut client = server.rest().await;
    let good = json!({"inputs": [
        {"name": "INPUT0", "shape": [1], "datatype": "FP32", "data": [1]},
        {"name": "INPUT1", "shape": [1], "datatype": "FP32", "data": [2]},
    ]});
    let mut wrong_count = good.clone();
    wrong_count["inputs"][0]["shape"] = json!([3]);
    let mut not_a_number = good.clone();
    not_a_number["inputs"][1]["data"] = json!(["x"]);
    let mut wrong_type = good.clone();
    wrong_type["inputs"][0]["datatype"] = json!("INT32");
    let mut binary = good.clone();
    binary["inputs"][0]["parameters"] = json!({"binary_data_size": 4});
    let mut bad_output = good.clone();
    bad_output["outputs"] = json!([{"name": "OUTPUT9"}]);

    let cases: Vec<(Method, &str, Option<Bytes>, StatusCode, &str)> = vec![
        (
            Method::POST,
            "/v2/models/nope/infer",
            json_body(&good),
            StatusCode::NOT_FOUND,
            "nope",
        ),
        (
            Method::GET,
            "/v2/models/nope",
            None,
            StatusCode::NOT_FOUND,
            "nope",
        ),
        (
            Method::GET,
            "/v2/models/add_sub/versions/9",
            None,
            StatusCode::NOT_FOUND,
            "version",
        ),
        (
            Method::GET,
            "/v3/whatever",
            None,
            StatusCode::NOT_FOUND,
            "/v3/whatever",
        ),
        (
            Method::GET,
            "/v2/models/add_sub/infer",
            None,
            StatusCode::NOT_FOUND,
            "GET",
        ),
        (
            Method::POST,
            "/v2/models/add_sub/infer",
            Some(Bytes::from_static(b"{\"inputs\": [")),
            StatusCode::BAD_REQUEST,
            "malformed JSON",
        ),
        (
            Method::POST,
            "/v2/models/add_sub/infer",
            Some(Bytes::from_static(b"{\"inputs\": 7}")),
            StatusCode::BAD_REQUEST,
            "malformed JSON",
        ),
        (
            Method::POST,
            "/v2/models/add_sub/infer",
            json_body(&wrong_count),
            StatusCode::BAD_REQUEST,
            "INPUT0",
        ),
        (
            Method::POST,
            "/v2/models/add_sub/infer",
            json_body(&not_a_number),
            StatusCode::BAD_REQUEST,
            "INPUT1",
        ),
        (
            Method::POST,
            "/v2/models/add_sub/infer",
            json_body(&wrong_type),
            StatusCode::BAD_REQUEST,
            "FP32",
        ),
        (
            Method::POST,
            "/v2/models/add_sub/infer",
            json_body(&binary),
            StatusCode::BAD_REQUEST,
            "binary",
        ),
        (
            Method::POST,
            "/v2/models/add_sub/infer",
            json_body(&bad_output),
            StatusCode::BAD_REQUEST,
            "OUTPUT9",
        ),
        (
            Method::POST,
            "/v2/models/add_sub/infer",
            json_body(&json!({"inputs": []})),
            StatusCode::BAD_REQUEST,
            "2 inputs",
        ),
        (
            Method::POST,
            "/v2/models/echo/infer",
            json_body(
                &json!({"inputs": [{"name": "t", "shape": [-2], "datatype": "FP32", "data": []}]}),
            ),
            StatusCode::BAD_REQUEST,
            "negative",
        ),
    ];
    for (method, path, body, status, needle) in cases {
        let reply = client.send(method.clone(), path, body).await.unwrap();
        assert_eq!(reply.status, status, "{method} {path}: {:?}", reply.body);
        let error = parse(&reply.body)["error"].as_str().unwrap().to_owned();
        assert!(
            error.contains(needle),
            "{method} {path}: {error:?} lacks {needle:?}"
        );
    }
    server.stop().await;
}

#[tokio::test]
async fn oversized_body_gets_413() {
    let server = Running::start().await;
    let mut client = server.rest().await;
    let body = Bytes::from(vec![b' '; super::super::MAX_BODY_BYTES + 1]);
    let reply = client
        .send(Method::POST, "/v2/models/echo/infer", Some(body))
        .await
        .unwrap();
    assert_eq!(reply.status, StatusCode::PAYLOAD_TOO_LARGE);
    assert!(
        parse(&reply.body)["error"]
            .as_str()
            .unwrap()
            .contains("larger")
    );
    server.stop().await;
}

#[tokio::test]
async fn garbage_bodies_never_break_the_server() {
    let server = Running::start().await;
    let inputs: [&[u8]; 8] = [
        b"",
        b"null",
        b"[]",
        b"\xff\xfe\x00",
        b"{\"inputs\":[{\"name\":1}]}",
        b"{\"inputs\":[{\"name\":\"INPUT0\",\"shape\":[1e99],\"datatype\":\"FP32\",\"data\":[1]}]}",
        b"{\"inputs\":[{\"name\":\"a\",\"shape\":[9223372036854775807,9223372036854775807],\"datatype\":\"BYTES\",\"data\":[]}]}",
        &[b'['; 4096],
    ];
    for model in ["add_sub", "echo"] {
        for body in inputs {
            // A fresh connection each time: a panic would show as a failed exchange.
            let mut client = server.rest().await;
            let path = format!("/v2/models/{model}/infer");
            let reply = client
                .send(Method::POST, &path, Some(Bytes::from_static(body)))
                .await
                .unwrap();
            assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{model} {body:?}");
        }
    }
    server.stop().await;
}
