//! `validate_tensors` end to end: ferry in front of the demo OIP model server rejects a request
//! whose tensors do not match the model's metadata (static for REST, fetched from the server
//! over gRPC `ModelMetadata`) and the server never sees it; a matching request passes.

use bytes::Bytes;
use ferry_integration::client::{body_full, request};
use ferry_integration::{Admin, HttpClient};
use http::Method;
use prost::Message;
use serde_json::json;
use tokio::net::TcpListener;
use tokio::sync::oneshot;

use crate::support::{LISTENER, config, start};

/// `ModelInferRequest` fields 1 and 5 (name, datatype, shape, fp32 contents) as a test client
/// writes them.
#[derive(Clone, PartialEq, Message)]
struct InferRequest {
    #[prost(string, tag = "1")]
    model_name: String,
    #[prost(message, repeated, tag = "5")]
    inputs: Vec<Input>,
}

#[derive(Clone, PartialEq, Message)]
struct Input {
    #[prost(string, tag = "1")]
    name: String,
    #[prost(string, tag = "2")]
    datatype: String,
    #[prost(int64, repeated, tag = "3")]
    shape: Vec<i64>,
    #[prost(message, optional, tag = "5")]
    contents: Option<Contents>,
}

#[derive(Clone, PartialEq, Message)]
struct Contents {
    #[prost(float, repeated, tag = "6")]
    fp32_contents: Vec<f32>,
}

fn grpc_infer(datatype: &str) -> anyhow::Result<Bytes> {
    let input = |name: &str| Input {
        name: name.into(),
        datatype: datatype.into(),
        shape: vec![2],
        contents: Some(Contents {
            fp32_contents: vec![1.0, 2.0],
        }),
    };
    let msg = InferRequest {
        model_name: "add_sub".into(),
        inputs: vec![input("INPUT0"), input("INPUT1")],
    }
    .encode_to_vec();
    let mut framed = vec![0u8];
    framed.extend_from_slice(&u32::try_from(msg.len())?.to_be_bytes());
    framed.extend_from_slice(&msg);
    Ok(Bytes::from(framed))
}

fn rest_infer(shape: [i64; 2]) -> String {
    json!({"inputs": [
        {"name": "INPUT0", "datatype": "FP32", "shape": shape, "data": [1.0, 2.0]},
        {"name": "INPUT1", "datatype": "FP32", "shape": shape, "data": [3.0, 4.0]},
    ]})
    .to_string()
}

async fn upstream_calls(admin: &Admin) -> anyhow::Result<f64> {
    Ok(admin.metrics().await?.sum(
        "ferry_upstream_duration_seconds_count",
        &[("cluster", "models")],
    ))
}

#[tokio::test]
async fn bad_tensors_never_reach_the_model_server() -> anyhow::Result<()> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let model_addr = listener.local_addr()?;
    let (stop, stopped) = oneshot::channel::<()>();
    let server = tokio::spawn(ferry_demo::model_server::serve(listener, async {
        let _ = stopped.await;
    }));
    let routes = json!([
        {
            "name": "grpc",
            "match": { "path": { "prefix": "/inference.GRPCInferenceService/" } },
            "validate_tensors": { "metadata": "upstream", "refresh": "1m" },
            "to": "models",
        },
        {
            "name": "rest",
            "match": { "path": { "prefix": "/v2/" } },
            "validate_tensors": {
                "metadata": "static",
                "models": [{ "name": "add_sub", "inputs": [
                    { "name": "INPUT0", "datatype": "FP32", "shape": [1, -1] },
                    { "name": "INPUT1", "datatype": "FP32", "shape": [1, -1] },
                ]}],
            },
            "to": "models",
        },
    ]);
    let clusters = json!([{ "name": "models", "endpoints": [model_addr.to_string()] }]);
    let ferry = start(&config(routes, clusters)).await?;
    let addr = ferry.listener(LISTENER)?;
    let admin = Admin::new(ferry.admin());

    // REST, static metadata: a shape the config forbids is refused by ferry itself.
    let http = HttpClient::http1();
    let post = |body: String| {
        request(
            Method::POST,
            addr,
            "/v2/models/add_sub/infer",
            &[("content-type", "application/json")],
            body_full(body),
        )
    };
    let bad = http.call(post(rest_infer([2, 1]))?).await?;
    assert_eq!(bad.status, 400, "{}", bad.text());
    assert_eq!(
        bad.json::<serde_json::Value>()?,
        json!({"error": "input \"INPUT0\": expected shape [1, -1], got [2, 1] (dimension 0)"})
    );
    assert_eq!(
        upstream_calls(&admin).await?,
        0.0,
        "the server saw the bad request"
    );
    let good = http.call(post(rest_infer([1, 2]))?).await?;
    assert_eq!(good.status, 200, "{}", good.text());
    assert_eq!(
        good.json::<serde_json::Value>()?["outputs"][0]["data"],
        json!([4.0, 6.0])
    );
    assert_eq!(upstream_calls(&admin).await?, 1.0);

    // gRPC, metadata fetched from the server (ModelMetadata, one call, then cached).
    let h2 = HttpClient::h2c();
    let grpc = |body: Bytes| {
        request(
            Method::POST,
            addr,
            "/inference.GRPCInferenceService/ModelInfer",
            &[("content-type", "application/grpc"), ("te", "trailers")],
            body_full(body),
        )
    };
    let bad = h2.call(grpc(grpc_infer("INT64")?)?).await?;
    assert_eq!(bad.header("grpc-status"), Some("3"), "{:?}", bad.headers);
    assert_eq!(
        bad.header("grpc-message"),
        Some(r#"input "INPUT0": expected datatype FP32, got INT64"#)
    );
    assert_eq!(
        upstream_calls(&admin).await?,
        2.0,
        "only the metadata fetch went upstream"
    );
    let good = h2.call(grpc(grpc_infer("FP32")?)?).await?;
    assert_eq!(good.status, 200);
    assert_eq!(
        good.header("grpc-status"),
        None,
        "status comes in trailers on success"
    );
    assert!(good.body.len() > 5, "a ModelInferResponse came back");
    assert_eq!(upstream_calls(&admin).await?, 3.0, "metadata was cached");

    let _ = stop.send(());
    server.await?;
    Ok(())
}
