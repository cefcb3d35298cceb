//! Unit and golden tests for the OIP mapping, driven through [`Translator`] with in-memory
//! upstreams; the property test round-trips REST → gRPC → REST for every datatype.

mod answer_stream;
mod grpc_to_rest;
mod proptests;
mod rest_to_grpc;
mod section_stream;

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Request, Response, StatusCode};
use http_body_util::BodyExt;
use prost::Message;

use super::*;

pub(super) fn settings(direction: Direction) -> TranslateSettings {
    TranslateSettings {
        direction,
        max_decoded_bytes: MaxDecodedBytes(1 << 20),
        upstream_binary: UpstreamBinary::Off,
    }
}

pub(super) fn body(bytes: impl Into<Bytes>) -> TranslateBody {
    ChunksBody::new(VecDeque::from([bytes.into()]), None)
        .map_err(|never| match never {})
        .boxed_unsync()
}

pub(super) async fn read(
    resp: Response<TranslateBody>,
) -> (StatusCode, HeaderMap, Bytes, Option<HeaderMap>) {
    let (parts, b) = resp.into_parts();
    let collected = b.collect().await.unwrap();
    let trailers = collected.trailers().cloned();
    (parts.status, parts.headers, collected.to_bytes(), trailers)
}

pub(super) fn frame(msg: &impl Message) -> Bytes {
    grpc_frame::frame(msg.encode_to_vec()).pop_front().unwrap()
}

/// A gRPC answer with `grpc-status: 0` in the trailers.
pub(super) fn grpc_ok(msg: &impl Message) -> Response<TranslateBody> {
    let mut trailers = HeaderMap::new();
    trailers.insert("grpc-status", HeaderValue::from_static("0"));
    let b = ChunksBody::new(VecDeque::from([frame(msg)]), Some(trailers));
    let mut resp = Response::new(b.map_err(|never| match never {}).boxed_unsync());
    resp.headers_mut()
        .insert("content-type", HeaderValue::from_static("application/grpc"));
    resp
}

/// The echo model as a gRPC server would run it: every input comes back as an output of the
/// same name, in the same form (raw in, raw out).
pub(super) fn echo(req: pb::ModelInferRequest) -> pb::ModelInferResponse {
    pb::ModelInferResponse {
        model_name: req.model_name,
        model_version: req.model_version,
        id: req.id,
        parameters: req.parameters,
        outputs: req
            .inputs
            .into_iter()
            .map(|i| pb::model_infer_response::InferOutputTensor {
                name: i.name,
                datatype: i.datatype,
                shape: i.shape,
                parameters: i.parameters,
                contents: i.contents,
            })
            .collect(),
        raw_output_contents: req.raw_input_contents,
    }
}

/// Runs one REST request through the translator to an in-memory gRPC echo upstream; returns
/// the answer, the gRPC request the upstream saw (if called) and the call count.
pub(super) async fn rest_via_echo(
    req: Request<TranslateBody>,
) -> (Response<TranslateBody>, Option<pb::ModelInferRequest>) {
    let t = Translator::new(settings(Direction::RestToGrpc));
    let calls = Arc::new(AtomicUsize::new(0));
    match t.request(req).await {
        Err(answer) => (answer, None),
        Ok((up, pending)) => {
            calls.fetch_add(1, Ordering::SeqCst);
            assert_eq!(
                up.uri().path(),
                "/inference.GRPCInferenceService/ModelInfer"
            );
            assert_eq!(up.headers()["content-type"], "application/grpc");
            let bytes = up.into_body().collect().await.unwrap().to_bytes();
            let msg = grpc_frame::unframe(&bytes).unwrap();
            let seen = pb::ModelInferRequest::decode(msg).unwrap();
            let resp = grpc_ok(&echo(seen.clone()));
            (pending.response(resp).await, Some(seen))
        }
    }
}

pub(super) fn infer_request(json: &str) -> Request<TranslateBody> {
    Request::post("/v2/models/echo/infer")
        .body(body(json.to_owned()))
        .unwrap()
}

pub(super) fn binary_request(json: &str, sections: &[&[u8]]) -> Request<TranslateBody> {
    let mut all = json.as_bytes().to_vec();
    for s in sections {
        all.extend_from_slice(s);
    }
    Request::post("/v2/models/echo/infer")
        .header("inference-header-content-length", json.len())
        .body(body(all))
        .unwrap()
}

/// A body that yields one chunk and then fails the way the proxy's listener limit does.
fn cut_by_limit(first: &'static [u8]) -> TranslateBody {
    struct Cut(Option<Bytes>);
    impl http_body::Body for Cut {
        type Data = Bytes;
        type Error = BoxError;
        fn poll_frame(
            mut self: std::pin::Pin<&mut Self>,
            _cx: &mut std::task::Context<'_>,
        ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, BoxError>>> {
            std::task::Poll::Ready(Some(match self.0.take() {
                Some(first) => Ok(http_body::Frame::data(first)),
                None => Err(Box::new(crate::body_limit::BodyTooLarge { limit: 16 })),
            }))
        }
    }
    Cut(Some(Bytes::from_static(first))).boxed_unsync()
}

#[tokio::test]
async fn body_cut_by_the_listener_limit_is_413_not_400() {
    let req = Request::post("/v2/models/echo/infer")
        .body(cut_by_limit(b"{\"inputs\":["))
        .unwrap();
    let (answer, seen) = rest_via_echo(req).await;
    assert!(seen.is_none(), "upstream must not be called");
    let (status, _, body, _) = read(answer).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(v["error"], "request body exceeds the limit of 16 bytes");

    let t = Translator::new(settings(Direction::GrpcToRest));
    let req = Request::post("/inference.GRPCInferenceService/ModelInfer")
        .header("content-type", "application/grpc")
        .body(cut_by_limit(b"\0\0\0\0\x20"))
        .unwrap();
    let Err(answer) = t.request(req).await else {
        panic!("a cut body must not be forwarded");
    };
    assert_eq!(answer.headers()["grpc-status"], "8", "RESOURCE_EXHAUSTED");
}

#[tokio::test]
async fn collect_joins_chunks_once_and_keeps_a_single_chunk_uncopied() {
    let chunks = VecDeque::from([
        Bytes::from_static(b"ab"),
        Bytes::new(),
        Bytes::from_static(b"cd"),
        Bytes::from_static(b"e"),
    ]);
    let b = ChunksBody::new(chunks, None)
        .map_err(|never| match never {})
        .boxed_unsync();
    let (all, _) = collect(b, 5).await.unwrap();
    assert_eq!(&all[..], b"abcde");
    let one = Bytes::from_static(b"whole");
    let (got, _) = collect(body(one.clone()), 5).await.unwrap();
    assert_eq!(got.as_ptr(), one.as_ptr(), "a single chunk is not copied");
    let over = ChunksBody::new(
        VecDeque::from([Bytes::from_static(b"abc"), Bytes::from_static(b"abc")]),
        None,
    )
    .map_err(|never| match never {})
    .boxed_unsync();
    assert!(matches!(
        collect(over, 5).await,
        Err(TranslateError::TooLarge { .. })
    ));
}
