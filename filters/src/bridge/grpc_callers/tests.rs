//! gRPC callers translated to OIP REST before a bridge; REST callers passed or refused.

use std::future::Future;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use prost::Message as _;
use tower::{Layer, ServiceExt, service_fn};

use super::GrpcCallersLayer;
use crate::translate::pb::ModelInferRequest;
use crate::translate::pb::model_infer_request::InferInputTensor;
use crate::translate::{BoxError, MaxDecodedBytes, TranslateBody, TranslateError};

type Seen = Arc<Mutex<Vec<(String, String, String)>>>;

/// A bridge stand-in: records what reaches it and answers one OIP REST infer answer.
fn bridge(
    seen: Seen,
) -> impl tower::Service<
    Request<TranslateBody>,
    Response = Response<TranslateBody>,
    Error = BoxError,
    Future = impl Future<Output = Result<Response<TranslateBody>, BoxError>> + Send + 'static,
> + Clone
+ Send {
    service_fn(move |req: Request<TranslateBody>| {
        let seen = seen.clone();
        async move {
            let ct = req
                .headers()
                .get("content-type")
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_owned();
            let path = req.uri().path().to_owned();
            let body = req.into_body().collect().await?.to_bytes();
            let text = String::from_utf8_lossy(&body).into_owned();
            seen.lock().unwrap().push((path, ct, text));
            let answer = r#"{"model_name":"m","outputs":[{"name":"y","datatype":"FP32","shape":[1],"data":[1.5]}]}"#;
            let body = Full::new(Bytes::from_static(answer.as_bytes()))
                .map_err(|never| -> BoxError { match never {} })
                .boxed_unsync();
            Ok::<_, BoxError>(Response::new(body))
        }
    })
}

fn grpc_infer() -> Request<Full<Bytes>> {
    let m = ModelInferRequest {
        model_name: "m".into(),
        inputs: vec![InferInputTensor {
            name: "x".into(),
            datatype: "FP32".into(),
            shape: vec![1],
            ..InferInputTensor::default()
        }],
        raw_input_contents: vec![Bytes::from_static(&[0, 0, 0xc0, 0x3f])],
        ..ModelInferRequest::default()
    };
    let msg = m.encode_to_vec();
    let mut framed = vec![0u8];
    framed.extend_from_slice(&u32::try_from(msg.len()).unwrap().to_be_bytes());
    framed.extend_from_slice(&msg);
    Request::post("/inference.GRPCInferenceService/ModelInfer")
        .header("content-type", "application/grpc")
        .body(Full::new(Bytes::from(framed)))
        .unwrap()
}

#[tokio::test]
async fn grpc_callers_reach_the_bridge_as_oip_rest() {
    let seen = Seen::default();
    let svc = GrpcCallersLayer::new(MaxDecodedBytes(1 << 20), false).layer(bridge(seen.clone()));
    let resp = svc.oneshot(grpc_infer()).await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(resp.headers()["content-type"], "application/grpc");
    let (path, _, body) = seen.lock().unwrap().pop().unwrap();
    assert_eq!(path, "/v2/models/m/infer");
    // The raw little-endian 1.5 arrives as a binary section as it was, outputs asked binary.
    assert!(body.contains(r#""binary_data_size":4"#), "{body}");
    assert!(body.contains(r#""binary_data_output":true"#), "{body}");
    // (0xc0 is not UTF-8: the recorded text shows it as U+FFFD.)
    assert!(body.ends_with("}\0\0\u{fffd}?"), "{body:?}");
}

#[tokio::test]
async fn rest_callers_pass_or_are_refused() {
    let rest = || {
        Request::post("/v2/models/m/infer")
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from_static(b"{}")))
            .unwrap()
    };
    let seen = Seen::default();
    let grpc_only =
        GrpcCallersLayer::new(MaxDecodedBytes(1 << 20), false).layer(bridge(seen.clone()));
    let err = grpc_only.oneshot(rest()).await.unwrap_err();
    let err = err.downcast_ref::<TranslateError>().unwrap();
    assert_eq!(err.http_status(), StatusCode::NOT_FOUND);
    assert!(seen.lock().unwrap().is_empty());
    let both = GrpcCallersLayer::new(MaxDecodedBytes(1 << 20), true).layer(bridge(seen.clone()));
    let resp = both.oneshot(rest()).await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let (path, ct, body) = seen.lock().unwrap().pop().unwrap();
    assert_eq!(
        (path.as_str(), ct.as_str(), body.as_str()),
        ("/v2/models/m/infer", "application/json", "{}")
    );
}
