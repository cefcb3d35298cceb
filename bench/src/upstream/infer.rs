//! `inference.GRPCInferenceService/ModelInfer` for the `translate` scenario: decodes the
//! request with ferry's own generated types (so a proxy that sent a malformed message fails the
//! run), checks every input tensor's element count against its shape, and answers a small
//! prebuilt response, so the upstream's speed does not hide the proxies' translation cost.

use std::convert::Infallible;
use std::sync::OnceLock;

use bytes::{Buf, Bytes};
use ferry_filters::translate::pb::model_infer_response::InferOutputTensor;
use ferry_filters::translate::pb::{InferTensorContents, ModelInferRequest, ModelInferResponse};
use futures_util::stream;
use http::{HeaderMap, HeaderValue, Request, Response, header};
use http_body_util::{BodyExt, StreamBody};
use hyper::body::{Frame, Incoming};
use prost::Message;

use super::Body;

/// Path of the rpc.
pub const MODEL_INFER_PATH: &str = "/inference.GRPCInferenceService/ModelInfer";

/// gRPC status INVALID_ARGUMENT.
const INVALID_ARGUMENT: &str = "3";

/// Answers one ModelInfer call.
pub(super) async fn model_infer(req: Request<Incoming>) -> Response<Body> {
    let message = match req.into_body().collect().await {
        Ok(c) => c.to_bytes(),
        Err(e) => return grpc_error(&format!("reading the request: {e}")),
    };
    match check(message) {
        Ok(()) => grpc_ok(fixed_response().clone()),
        Err(reason) => grpc_error(&reason),
    }
}

/// Decodes the single length-prefixed message and checks its tensors.
fn check(mut framed: Bytes) -> Result<(), String> {
    if framed.len() < 5 {
        return Err("short gRPC frame".into());
    }
    if framed.get_u8() != 0 {
        return Err("compressed messages are not expected".into());
    }
    let len = framed.get_u32() as usize;
    if framed.len() != len {
        return Err(format!("frame says {len} bytes, body has {}", framed.len()));
    }
    let request = ModelInferRequest::decode(framed).map_err(|e| format!("decoding: {e}"))?;
    if request.model_name.is_empty() || request.inputs.is_empty() {
        return Err("no model name or no inputs".into());
    }
    for (i, input) in request.inputs.iter().enumerate() {
        let want: i64 = input.shape.iter().product();
        let got = match (&input.contents, request.raw_input_contents.get(i)) {
            (Some(c), _) => c.fp32_contents.len() as i64,
            (None, Some(raw)) => raw.len() as i64 / 4,
            (None, None) => 0,
        };
        if input.datatype != "FP32" || got != want {
            return Err(format!(
                "input {}: {} with {got} elements for shape {:?}",
                input.name, input.datatype, input.shape
            ));
        }
    }
    Ok(())
}

/// One FP32 output element, framed once.
fn fixed_response() -> &'static Bytes {
    static FRAMED: OnceLock<Bytes> = OnceLock::new();
    FRAMED.get_or_init(|| {
        let response = ModelInferResponse {
            model_name: "bench".into(),
            model_version: "1".into(),
            id: String::new(),
            parameters: Default::default(),
            outputs: vec![InferOutputTensor {
                name: "output0".into(),
                datatype: "FP32".into(),
                shape: vec![1],
                parameters: Default::default(),
                contents: Some(InferTensorContents {
                    fp32_contents: vec![0.5],
                    ..Default::default()
                }),
            }],
            raw_output_contents: Vec::new(),
        };
        let payload = response.encode_to_vec();
        let mut framed = Vec::with_capacity(5 + payload.len());
        framed.push(0);
        framed.extend_from_slice(&(payload.len() as u32).to_be_bytes());
        framed.extend_from_slice(&payload);
        Bytes::from(framed)
    })
}

fn grpc_ok(message: Bytes) -> Response<Body> {
    grpc_response(Some(message), "0", None)
}

fn grpc_error(message: &str) -> Response<Body> {
    grpc_response(None, INVALID_ARGUMENT, Some(message))
}

fn grpc_response(
    message: Option<Bytes>,
    status: &'static str,
    text: Option<&str>,
) -> Response<Body> {
    let mut trailers = HeaderMap::new();
    trailers.insert("grpc-status", HeaderValue::from_static(status));
    if let Some(text) = text.and_then(|t| HeaderValue::from_str(t).ok()) {
        trailers.insert("grpc-message", text);
    }
    let frames = message
        .map(|m| Ok::<_, Infallible>(Frame::data(m)))
        .into_iter()
        .chain([Ok(Frame::trailers(trailers))]);
    let mut resp = Response::new(StreamBody::new(stream::iter(frames)).boxed());
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/grpc"),
    );
    resp
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferry_filters::translate::pb::model_infer_request::InferInputTensor;

    fn framed(request: &ModelInferRequest) -> Bytes {
        let payload = request.encode_to_vec();
        let mut out = vec![0];
        out.extend_from_slice(&(payload.len() as u32).to_be_bytes());
        out.extend_from_slice(&payload);
        Bytes::from(out)
    }

    fn request(elements: usize, shape: Vec<i64>) -> ModelInferRequest {
        ModelInferRequest {
            model_name: "m".into(),
            inputs: vec![InferInputTensor {
                name: "input0".into(),
                datatype: "FP32".into(),
                shape,
                contents: Some(InferTensorContents {
                    fp32_contents: vec![1.5; elements],
                    ..Default::default()
                }),
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    #[test]
    fn accepts_a_consistent_tensor_and_rejects_a_short_one() {
        assert_eq!(check(framed(&request(6, vec![2, 3]))), Ok(()));
        assert!(check(framed(&request(5, vec![2, 3]))).is_err());
        assert!(check(Bytes::from_static(b"\0\0\0")).is_err());
    }

    #[test]
    fn counts_raw_tensors_by_their_bytes() {
        let mut raw = request(0, vec![2, 3]);
        raw.inputs[0].contents = None;
        raw.raw_input_contents = vec![Bytes::from(vec![0; 24])];
        assert_eq!(check(framed(&raw)), Ok(()));
        raw.raw_input_contents = vec![Bytes::from(vec![0; 20])];
        assert!(check(framed(&raw)).is_err());
    }

    #[test]
    fn the_fixed_response_decodes() {
        let mut framed = fixed_response().clone();
        framed.advance(5);
        let response = ModelInferResponse::decode(framed).unwrap();
        assert_eq!(response.outputs[0].shape, vec![1]);
    }
}
