use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use prost::Message;
use tower::{Layer, ServiceExt};

use super::compare::check;
use super::inspect::{InputHead, grpc_inputs, rest_inputs};
use super::*;
use crate::translate::pb::{
    ModelInferRequest, ModelMetadataResponse, model_infer_request::InferInputTensor,
    model_metadata_response::TensorMetadata as PbTensor,
};

fn meta() -> ModelMetadata {
    ModelMetadata {
        inputs: vec![
            TensorMetadata {
                name: "INPUT0".into(),
                datatype: "FP32".into(),
                shape: vec![-1, 3],
            },
            TensorMetadata {
                name: "INPUT1".into(),
                datatype: "INT64".into(),
                shape: vec![2],
            },
        ],
    }
}

fn input(name: &str, dt: &str, shape: &[i64]) -> InputHead {
    InputHead {
        name: name.into(),
        datatype: dt.into(),
        shape: shape.to_vec(),
    }
}

fn good() -> Vec<InputHead> {
    vec![
        input("INPUT0", "FP32", &[5, 3]),
        input("INPUT1", "INT64", &[2]),
    ]
}

#[test]
fn every_fault_kind_is_named() {
    let m = meta();
    assert_eq!(check("m", &m, &good()), Ok(()));
    let cases = [
        (
            vec![
                input("INPUT0", "INT64", &[1, 3]),
                input("INPUT1", "INT64", &[2]),
            ],
            r#"input "INPUT0": expected datatype FP32, got INT64"#,
        ),
        (
            vec![
                input("INPUT0", "FP32", &[3]),
                input("INPUT1", "INT64", &[2]),
            ],
            r#"input "INPUT0": expected shape [-1, 3] (2 dimensions), got [3] (1 dimensions)"#,
        ),
        (
            vec![
                input("INPUT0", "FP32", &[1, 4]),
                input("INPUT1", "INT64", &[2]),
            ],
            r#"input "INPUT0": expected shape [-1, 3], got [1, 4] (dimension 1)"#,
        ),
        (
            vec![
                input("INPUT0", "FP32", &[-3, 3]),
                input("INPUT1", "INT64", &[2]),
            ],
            r#"input "INPUT0": expected shape [-1, 3], got [-3, 3] (dimension 0)"#,
        ),
        (
            vec![input("INPUT0", "FP32", &[1, 3]), input("X", "INT64", &[2])],
            r#"input "X": model "m" has no such input (expected one of: INPUT0, INPUT1)"#,
        ),
        (
            vec![input("INPUT0", "FP32", &[1, 3])],
            r#"input "INPUT1": missing (model "m" expects: INPUT0, INPUT1)"#,
        ),
        (
            vec![
                input("INPUT0", "FP32", &[1, 3]),
                input("INPUT0", "FP32", &[1, 3]),
            ],
            r#"input "INPUT0": sent more than once"#,
        ),
    ];
    for (inputs, want) in cases {
        assert_eq!(check("m", &m, &inputs).unwrap_err(), want);
    }
}

#[test]
fn rest_reads_only_the_json_header() {
    let json =
        br#"{"id":"1","inputs":[{"name":"A","datatype":"FP32","shape":[1,2],"data":[1.0,2.0]}]}"#;
    let got = rest_inputs(json, None).unwrap();
    assert_eq!(got, vec![input("A", "FP32", &[1, 2])]);
    let head = br#"{"inputs":[{"name":"A","datatype":"FP32","shape":[2],"parameters":{"binary_data_size":8}}]}"#;
    let mut body = head.to_vec();
    body.extend_from_slice(&[0u8; 8]);
    let got = rest_inputs(&body, Some(&head.len().to_string())).unwrap();
    assert_eq!(got, vec![input("A", "FP32", &[2])]);
    assert!(rest_inputs(&body, Some("99999")).is_err());
    assert!(rest_inputs(b"{not json", None).is_err());
}

fn grpc_infer(model: &str, inputs: &[(&str, &str, &[i64])]) -> Bytes {
    let msg = ModelInferRequest {
        model_name: model.into(),
        inputs: inputs
            .iter()
            .map(|(n, d, s)| InferInputTensor {
                name: (*n).into(),
                datatype: (*d).into(),
                shape: s.to_vec(),
                ..Default::default()
            })
            .collect(),
        raw_input_contents: vec![Bytes::from_static(&[0u8; 24])],
        ..Default::default()
    };
    frame(msg.encode_to_vec())
}

fn frame(msg: Vec<u8>) -> Bytes {
    let mut out = vec![0u8];
    out.extend_from_slice(&(msg.len() as u32).to_be_bytes());
    out.extend_from_slice(&msg);
    Bytes::from(out)
}

#[test]
fn grpc_reads_names_datatypes_and_shapes() {
    let body = grpc_infer("m", &[("INPUT0", "FP32", &[2, 3])]);
    let infer = grpc_inputs(&body).unwrap().unwrap();
    assert_eq!(infer.model, "m");
    assert_eq!(infer.inputs, vec![input("INPUT0", "FP32", &[2, 3])]);
    assert!(grpc_inputs(&Bytes::from_static(&[0, 0, 0, 0, 9, 1])).is_err());
    let mut compressed = body.to_vec();
    compressed[0] = 1;
    assert!(grpc_inputs(&Bytes::from(compressed)).unwrap().is_none());
}

fn static_settings() -> TensorValidationSettings {
    TensorValidationSettings {
        source: MetadataSource::Static(Arc::new(HashMap::from([(
            "m".to_owned(),
            Arc::new(meta()),
        )]))),
        max_checked_bytes: MaxCheckedBytes::default(),
    }
}

fn rest_req(model: &str, body: &'static str) -> Request<Full<Bytes>> {
    Request::post(format!("http://up/v2/models/{model}/infer"))
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from_static(body.as_bytes())))
        .unwrap()
}

const GOOD: &str = r#"{"inputs":[{"name":"INPUT0","datatype":"FP32","shape":[1,3],"data":[1,2,3]},{"name":"INPUT1","datatype":"INT64","shape":[2],"data":[1,2]}]}"#;
const BAD: &str = r#"{"inputs":[{"name":"INPUT0","datatype":"INT64","shape":[1,3],"data":[1,2,3]},{"name":"INPUT1","datatype":"INT64","shape":[2],"data":[1,2]}]}"#;

async fn text(resp: Response<TranslateBody>) -> String {
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    String::from_utf8(bytes.to_vec()).unwrap()
}

/// An upstream answering metadata from `meta()` and echoing infer bodies; counts calls by kind.
fn upstream(
    calls: Arc<[AtomicUsize; 2]>,
    metadata_ok: bool,
) -> impl tower::Service<
    Request<TranslateBody>,
    Response = Response<Full<Bytes>>,
    Error = BoxError,
    Future = impl std::future::Future<Output = Result<Response<Full<Bytes>>, BoxError>> + Send + 'static,
> + Clone
+ Send
+ 'static {
    tower::service_fn(move |req: Request<TranslateBody>| {
        let calls = calls.clone();
        async move {
            let path = req.uri().path().to_owned();
            let grpc = path.starts_with("/inference.");
            let body = req.into_body().collect().await?.to_bytes();
            let is_meta = path.ends_with("ModelMetadata") || path == "/v2/models/m";
            calls[usize::from(!is_meta)].fetch_add(1, Ordering::SeqCst);
            if !is_meta {
                return Ok(Response::new(Full::new(body)));
            }
            if !metadata_ok {
                return Ok(Response::builder()
                    .status(503)
                    .body(Full::new(Bytes::new()))
                    .unwrap());
            }
            if !grpc {
                let json = r#"{"name":"m","inputs":[{"name":"INPUT0","datatype":"FP32","shape":[-1,3]},{"name":"INPUT1","datatype":"INT64","shape":[2]}]}"#;
                return Ok(Response::new(Full::new(Bytes::from_static(
                    json.as_bytes(),
                ))));
            }
            let msg = ModelMetadataResponse {
                name: "m".into(),
                inputs: meta()
                    .inputs
                    .into_iter()
                    .map(|t| PbTensor {
                        name: t.name,
                        datatype: t.datatype,
                        shape: t.shape,
                    })
                    .collect(),
                ..Default::default()
            };
            Ok(Response::builder()
                .header("content-type", "application/grpc")
                .header("grpc-status", "0")
                .body(Full::new(frame(msg.encode_to_vec())))
                .unwrap())
        }
    })
}

fn upstream_settings() -> TensorValidationSettings {
    TensorValidationSettings {
        source: MetadataSource::Upstream(MetadataRefresh(Duration::from_secs(60))),
        max_checked_bytes: MaxCheckedBytes::default(),
    }
}

#[tokio::test]
async fn static_metadata_rejects_before_the_upstream() {
    let calls = Arc::new([AtomicUsize::new(0), AtomicUsize::new(0)]);
    let svc = render_errors(TensorValidationLayer::new(static_settings()))
        .layer(upstream(calls.clone(), true));
    let resp = svc.clone().oneshot(rest_req("m", BAD)).await.unwrap();
    assert_eq!(resp.status(), StatusCode::BAD_REQUEST);
    assert_eq!(
        text(resp).await,
        r#"{"error":"input \"INPUT0\": expected datatype FP32, got INT64"}"#
    );
    let resp = svc.clone().oneshot(rest_req("m", GOOD)).await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(
        text(resp).await,
        GOOD,
        "the upstream gets the body unchanged"
    );
    // A model the static list does not name is not checked.
    let resp = svc.oneshot(rest_req("other", BAD)).await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(
        calls[0].load(Ordering::SeqCst),
        0,
        "static metadata is never fetched"
    );
    assert_eq!(calls[1].load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn upstream_metadata_is_fetched_once_and_cached_rest_and_grpc() {
    let calls = Arc::new([AtomicUsize::new(0), AtomicUsize::new(0)]);
    let svc = render_errors(TensorValidationLayer::new(upstream_settings()))
        .layer(upstream(calls.clone(), true));
    for _ in 0..2 {
        let resp = svc.clone().oneshot(rest_req("m", BAD)).await.unwrap();
        assert_eq!(resp.status(), StatusCode::BAD_REQUEST);
    }
    assert_eq!(
        svc.clone()
            .oneshot(rest_req("m", GOOD))
            .await
            .unwrap()
            .status(),
        StatusCode::OK
    );
    assert_eq!(
        calls[0].load(Ordering::SeqCst),
        1,
        "one metadata fetch for three requests"
    );
    assert_eq!(calls[1].load(Ordering::SeqCst), 1);

    // A fresh cache, so the gRPC side fetches ModelMetadata itself.
    let svc = render_errors(TensorValidationLayer::new(upstream_settings()))
        .layer(upstream(calls.clone(), true));
    let grpc = |body: Bytes| {
        Request::post("http://up/inference.GRPCInferenceService/ModelInfer")
            .header("content-type", "application/grpc")
            .body(Full::new(body))
            .unwrap()
    };
    let bad = grpc_infer(
        "m",
        &[("INPUT0", "FP32", &[1, 4]), ("INPUT1", "INT64", &[2])],
    );
    let resp = svc.clone().oneshot(grpc(bad)).await.unwrap();
    assert_eq!(resp.headers()["grpc-status"], "3");
    assert_eq!(
        resp.headers()["grpc-message"],
        r#"input "INPUT0": expected shape [-1, 3], got [1, 4] (dimension 1)"#
    );
    let good = grpc_infer(
        "m",
        &[("INPUT0", "FP32", &[2, 3]), ("INPUT1", "INT64", &[2])],
    );
    let resp = svc.oneshot(grpc(good.clone())).await.unwrap();
    assert_eq!(resp.into_body().collect().await.unwrap().to_bytes(), good);
    assert_eq!(
        calls[0].load(Ordering::SeqCst),
        2,
        "gRPC asked ModelMetadata once"
    );
    assert_eq!(calls[1].load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn fetch_failure_fails_open_and_reports_it() {
    let calls = Arc::new([AtomicUsize::new(0), AtomicUsize::new(0)]);
    let validator = TensorValidator::new(upstream_settings());
    let up = upstream(calls.clone(), false);
    let checked = validator
        .check(rest_req("m", BAD), |r| up.clone().oneshot(r))
        .await
        .unwrap();
    assert!(checked.fetch_failed);
    // Within the back-off the request passes without another fetch.
    let checked = validator
        .check(rest_req("m", BAD), |r| up.clone().oneshot(r))
        .await
        .unwrap();
    assert!(!checked.fetch_failed);
    assert_eq!(calls[0].load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn other_requests_pass_without_reading_and_limits_hold() {
    let validator = TensorValidator::new(TensorValidationSettings {
        max_checked_bytes: MaxCheckedBytes(16),
        ..static_settings()
    });
    let never = |_r: Request<TranslateBody>| async {
        Err::<Response<Full<Bytes>>, BoxError>("not called".into())
    };
    let get = Request::get("http://up/v2/models/m")
        .body(Full::new(Bytes::new()))
        .unwrap();
    assert!(validator.check(get, never).await.is_ok());
    let answer = validator
        .check(rest_req("m", GOOD), never)
        .await
        .unwrap_err();
    assert_eq!(answer.http_status(), StatusCode::PAYLOAD_TOO_LARGE);
}

#[test]
fn rest_heads_skip_data_with_non_finite_values() {
    let json = br#"{"id":"1","inputs":[{"data":[NaN,-Infinity],"name":"x","shape":[2],"datatype":"FP32","parameters":{"a":[1]}}],"outputs":[]}"#;
    let heads = super::inspect::rest_inputs(json, None).unwrap();
    assert_eq!(heads.len(), 1);
    assert_eq!(
        (heads[0].name.as_str(), heads[0].datatype.as_str()),
        ("x", "FP32")
    );
    assert_eq!(heads[0].shape, [2]);
    let missing = br#"{"inputs":[{"name":"x","datatype":"FP32"}]}"#;
    let err = super::inspect::rest_inputs(missing, None).unwrap_err();
    assert!(err.to_string().contains("missing field `shape`"), "{err}");
}

/// The layer under the renderer a stack puts on top, so refusals read as answers.
fn render_errors<L>(layer: L) -> tower::layer::util::Stack<L, crate::failure::RenderErrorsLayer> {
    tower::layer::util::Stack::new(layer, crate::failure::RenderErrorsLayer::new())
}
