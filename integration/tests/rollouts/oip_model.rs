//! A small Open Inference Protocol model on 127.0.0.1 for the mirror tests: it answers
//! `ModelInfer` over REST JSON, REST with the binary tensor extension (when the request used
//! it) and gRPC, always the output `probs` (FP32, shape [1, 3]), optionally with one element
//! moved; it can hang or fail, and it records the requests it got (ids, mirror marks).

#![allow(
    clippy::unwrap_used,
    reason = "a test upstream: a poisoned lock or a bad fixed response is a broken test"
)]

use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use ferry_filters::translate::pb::model_infer_response::InferOutputTensor;
use ferry_filters::translate::pb::{InferTensorContents, ModelInferResponse};
use ferry_integration::upstream::serve::{Protocols, RespBody, ServerHandle, serve};
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, StreamBody};
use hyper::body::{Frame, Incoming};
use prost::Message;

/// The model's answer.
pub const PROBS: [f32; 3] = [0.1, 0.7, 0.2];

/// How the model misbehaves (it answers until told otherwise).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Behaviour {
    /// Never answers.
    Hang = 1,
    /// Answers 500.
    Fail = 2,
}

/// What a request carried.
#[derive(Debug, Clone)]
pub struct Seen {
    pub request_id: String,
    pub host: String,
    pub mirror: Option<String>,
    /// Whether its body arrived whole.
    pub whole: bool,
    /// Whether it was a gRPC call.
    pub grpc: bool,
}

#[derive(Debug, Default)]
struct State {
    behaviour: AtomicU8,
    requests: AtomicU64,
    seen: Mutex<Vec<Seen>>,
    /// Element 1 of `probs` moved by this much.
    offset: f32,
}

/// A running model.
#[derive(Debug)]
pub struct OipModel {
    handle: ServerHandle,
    state: Arc<State>,
}

impl OipModel {
    /// Starts a model whose element 1 of `probs` is moved by `offset`.
    pub async fn start(offset: f32) -> anyhow::Result<OipModel> {
        let state = Arc::new(State {
            offset,
            ..State::default()
        });
        let s = state.clone();
        let handle = serve(Protocols::Auto, move |req| answer(s.clone(), req)).await?;
        Ok(OipModel { handle, state })
    }

    pub fn addr(&self) -> std::net::SocketAddr {
        self.handle.addr()
    }

    pub fn set(&self, b: Behaviour) {
        self.state.behaviour.store(b as u8, Ordering::SeqCst);
    }

    pub fn requests(&self) -> u64 {
        self.state.requests.load(Ordering::SeqCst)
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.state.seen.lock().unwrap().clone()
    }

    pub async fn kill(&mut self) {
        self.handle.kill().await;
    }
}

async fn answer(state: Arc<State>, req: Request<Incoming>) -> Response<RespBody> {
    let header = |name: &str| {
        req.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let host = req
        .uri()
        .authority()
        .map(|a| a.to_string())
        .or_else(|| header("host"))
        .unwrap_or_default();
    let mut seen = Seen {
        request_id: header("x-request-id").unwrap_or_default(),
        host,
        mirror: header("x-ferry-mirror"),
        whole: false,
        grpc: false,
    };
    let binary = header("inference-header-content-length").is_some();
    let grpc = header("content-type").is_some_and(|c| c.starts_with("application/grpc"));
    seen.grpc = grpc;
    // The whole request is read, as a model server does.
    seen.whole = req.into_body().collect().await.is_ok();
    state.seen.lock().unwrap().push(seen);
    state.requests.fetch_add(1, Ordering::SeqCst);
    match state.behaviour.load(Ordering::SeqCst) {
        1 => std::future::pending::<()>().await,
        2 => {
            return Response::builder()
                .status(StatusCode::INTERNAL_SERVER_ERROR)
                .body(full(Bytes::from_static(b"Internal Server Error")))
                .unwrap();
        }
        _ => {}
    }
    let mut probs = PROBS;
    probs[1] += state.offset;
    if grpc {
        return grpc_answer(&probs);
    }
    if binary {
        let raw: Vec<u8> = probs.iter().flat_map(|v| v.to_le_bytes()).collect();
        let json = serde_json::json!({
            "model_name": "m",
            "outputs": [{ "name": "probs", "datatype": "FP32", "shape": [1, 3],
                          "parameters": { "binary_data_size": raw.len() } }],
        })
        .to_string();
        return Response::builder()
            .header("inference-header-content-length", json.len())
            .header("content-type", "application/octet-stream")
            .body(full(Bytes::from([json.into_bytes(), raw].concat())))
            .unwrap();
    }
    let json = serde_json::json!({
        "model_name": "m",
        "outputs": [{ "name": "probs", "datatype": "FP32", "shape": [1, 3], "data": probs }],
    });
    Response::builder()
        .header("content-type", "application/json")
        .body(full(Bytes::from(json.to_string())))
        .unwrap()
}

fn grpc_answer(probs: &[f32]) -> Response<RespBody> {
    let msg = ModelInferResponse {
        model_name: "m".into(),
        outputs: vec![InferOutputTensor {
            name: "probs".into(),
            datatype: "FP32".into(),
            shape: vec![1, 3],
            contents: Some(InferTensorContents {
                fp32_contents: probs.to_vec(),
                ..Default::default()
            }),
            ..Default::default()
        }],
        ..Default::default()
    }
    .encode_to_vec();
    let mut framed = vec![0];
    framed.extend_from_slice(&(msg.len() as u32).to_be_bytes());
    framed.extend_from_slice(&msg);
    let mut trailers = http::HeaderMap::new();
    trailers.insert("grpc-status", http::HeaderValue::from_static("0"));
    let frames: Vec<Result<Frame<Bytes>, ferry_integration::upstream::serve::BoxError>> = vec![
        Ok(Frame::data(Bytes::from(framed))),
        Ok(Frame::trailers(trailers)),
    ];
    Response::builder()
        .header("content-type", "application/grpc")
        .body(StreamBody::new(futures_util::stream::iter(frames)).boxed_unsync())
        .unwrap()
}

fn full(b: Bytes) -> RespBody {
    http_body_util::Full::new(b)
        .map_err(|never| match never {})
        .boxed_unsync()
}
