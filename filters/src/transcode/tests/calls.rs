//! Whole calls through `TranscodeLayer` against an in-memory gRPC upstream (a `service_fn`
//! that decodes the real request message and frames real answers).

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Request, Response, StatusCode};
use http_body::{Body, Frame};
use http_body_util::{BodyExt, Full};
use prost_reflect::DynamicMessage;
use tokio::sync::mpsc;
use tower::{Layer, ServiceExt, service_fn};

use super::super::{StreamFormat, TranscodeLayer, TranscodeSettings};
use super::transcoder;
use crate::translate::{BoxError, TranslateBody};

struct ChanBody(mpsc::Receiver<Frame<Bytes>>);

impl Body for ChanBody {
    type Data = Bytes;
    type Error = Infallible;
    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.0.poll_recv(cx).map(|f| f.map(Ok))
    }
}

fn framed(msg: &DynamicMessage) -> Bytes {
    let bytes = prost::Message::encode_to_vec(msg);
    let mut out = vec![0];
    out.extend_from_slice(&(bytes.len() as u32).to_be_bytes());
    out.extend_from_slice(&bytes);
    out.into()
}

fn trailers(code: u32, message: &str) -> HeaderMap {
    let mut t = HeaderMap::new();
    t.insert("grpc-status", HeaderValue::from(code));
    if !message.is_empty() {
        t.insert("grpc-message", HeaderValue::from_str(message).unwrap());
    }
    t
}

fn grpc_ok(body: Bytes, status: HeaderMap) -> Response<TranslateBody> {
    let body = Full::new(body)
        .map_err(|never| match never {})
        .with_trailers(async move { Some(Ok(status)) });
    let mut resp = Response::new(body.boxed_unsync());
    resp.headers_mut()
        .insert("content-type", HeaderValue::from_static("application/grpc"));
    resp
}

/// A book whose title echoes what the upstream received (as JSON) and which rpc was called.
fn book(output: prost_reflect::MessageDescriptor, title: &str) -> DynamicMessage {
    let mut b = DynamicMessage::new(output);
    b.set_field_by_name("title", prost_reflect::Value::String(title.to_owned()));
    b.set_field_by_name("id", prost_reflect::Value::I64(1 << 60));
    b
}

type Stream = Arc<Mutex<Option<mpsc::Receiver<Frame<Bytes>>>>>;

/// The upstream: unary rpcs answer a Book titled `<rpc> <request JSON>`; `GetBook` for
/// `missing` answers NOT_FOUND trailers-only; `DeleteBook` ALREADY_EXISTS; `WatchBooks`
/// streams whatever the test pushes into `stream`.
async fn call(
    settings: TranscodeSettings,
    req: Request<Full<Bytes>>,
    stream: Stream,
) -> Response<TranslateBody> {
    let t = transcoder(settings);
    let pool = t
        .index()
        .find(&http::Method::GET, "/v1/books/1")
        .unwrap()
        .0
        .method
        .parent_pool()
        .clone();
    let upstream = service_fn(move |req: Request<TranslateBody>| {
        let pool = pool.clone();
        let stream = stream.clone();
        async move {
            let path = req.uri().path().to_owned();
            if !path.starts_with("/library.v1.Library/") {
                let mut resp = Response::new(
                    Full::new(Bytes::from(format!("passed through {path}")))
                        .map_err(|never| match never {})
                        .boxed_unsync(),
                );
                *resp.status_mut() = StatusCode::IM_A_TEAPOT;
                return Ok::<_, BoxError>(resp);
            }
            assert_eq!(req.headers()["content-type"], "application/grpc");
            assert_eq!(req.headers()["te"], "trailers");
            let rpc = path.rsplit('/').next().unwrap().to_owned();
            let method = pool
                .get_service_by_name("library.v1.Library")
                .unwrap()
                .methods()
                .find(|m| m.name() == rpc)
                .unwrap();
            let body = req.into_body().collect().await.unwrap().to_bytes();
            let input = DynamicMessage::decode(method.input(), &body[5..]).unwrap();
            let json = serde_json::to_string(&input).unwrap();
            if rpc == "WatchBooks" {
                let rx = stream.lock().unwrap().take().unwrap();
                let mut resp =
                    Response::new(ChanBody(rx).map_err(|never| match never {}).boxed_unsync());
                resp.headers_mut()
                    .insert("content-type", HeaderValue::from_static("application/grpc"));
                return Ok(resp);
            }
            if json.contains("missing") {
                let mut resp = grpc_ok(Bytes::new(), HeaderMap::new());
                resp.headers_mut()
                    .insert("grpc-status", HeaderValue::from(5));
                resp.headers_mut().insert(
                    "grpc-message",
                    HeaderValue::from_static("no such book: missing"),
                );
                return Ok(resp);
            }
            if rpc == "DeleteBook" {
                return Ok(grpc_ok(Bytes::new(), trailers(6, "exists%20already")));
            }
            let out = framed(&book(method.output(), &format!("{rpc} {json}")));
            Ok(grpc_ok(out, trailers(0, "")))
        }
    });
    // Under the renderer a stack puts on top, so refusals read as answers.
    crate::failure::RenderErrorsLayer::new()
        .layer(TranscodeLayer::new(t).layer(upstream))
        .oneshot(req)
        .await
        .unwrap()
}

fn get(uri: &str) -> Request<Full<Bytes>> {
    Request::get(uri).body(Full::default()).unwrap()
}

async fn text(resp: Response<TranslateBody>) -> String {
    String::from_utf8(
        resp.into_body()
            .collect()
            .await
            .unwrap()
            .to_bytes()
            .to_vec(),
    )
    .unwrap()
}

fn no_stream() -> Stream {
    Arc::new(Mutex::new(None))
}

#[tokio::test]
async fn unary_calls_map_both_ways() {
    let resp = call(
        TranscodeSettings::default(),
        get("/v1/books/42?x=1"),
        no_stream(),
    )
    .await;
    // Unknown query parameter, rejected by default.
    assert_eq!(resp.status(), StatusCode::BAD_REQUEST);
    assert_eq!(
        text(resp).await,
        r#"{"error":"query parameter \"x\": unknown field \"x\"","code":3}"#
    );

    let resp = call(
        TranscodeSettings::default(),
        get("/v1/books/42"),
        no_stream(),
    )
    .await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(resp.headers()["content-type"], "application/json");
    assert_eq!(
        text(resp).await,
        r#"{"id":"1152921504606846976","title":"GetBook {\"bookId\":\"42\"}"}"#
    );

    let req = Request::post("/v1/shelves/s/books")
        .body(Full::new(Bytes::from(r#"{"title":"T","genre":"FICTION"}"#)))
        .unwrap();
    let resp = call(TranscodeSettings::default(), req, no_stream()).await;
    assert_eq!(
        text(resp).await,
        r#"{"id":"1152921504606846976","title":"CreateBook {\"shelf\":\"s\",\"book\":{\"title\":\"T\",\"genre\":\"FICTION\"}}"}"#
    );
}

#[tokio::test]
async fn upstream_errors_map_to_status_and_json() {
    let resp = call(
        TranscodeSettings::default(),
        get("/v1/shelves/missing/books/1"),
        no_stream(),
    )
    .await;
    assert_eq!(resp.status(), StatusCode::NOT_FOUND);
    assert_eq!(
        text(resp).await,
        r#"{"error":"no such book: missing","code":5}"#
    );
    let req = Request::delete("/v1/books/3")
        .body(Full::default())
        .unwrap();
    let resp = call(TranscodeSettings::default(), req, no_stream()).await;
    assert_eq!(resp.status(), StatusCode::CONFLICT);
    assert_eq!(text(resp).await, r#"{"error":"exists already","code":6}"#);
}

#[tokio::test]
async fn unmatched_and_grpc_requests_pass_through_untouched() {
    let resp = call(
        TranscodeSettings::default(),
        get("/v2/health/ready"),
        no_stream(),
    )
    .await;
    assert_eq!(resp.status(), StatusCode::IM_A_TEAPOT);
    assert_eq!(text(resp).await, "passed through /v2/health/ready");
    let req = Request::post("/v1/books/1:archive")
        .header("content-type", "application/grpc")
        .body(Full::default())
        .unwrap();
    let resp = call(TranscodeSettings::default(), req, no_stream()).await;
    assert_eq!(text(resp).await, "passed through /v1/books/1:archive");
}

#[tokio::test]
async fn streaming_requests_and_oversized_bodies_are_refused() {
    let req = Request::post("/v1/books:import")
        .body(Full::new(Bytes::from("{}")))
        .unwrap();
    let resp = call(TranscodeSettings::default(), req, no_stream()).await;
    assert_eq!(resp.status(), StatusCode::NOT_IMPLEMENTED);
    assert!(text(resp).await.contains("client- or bidi-streaming"));
    let small = TranscodeSettings {
        max_body_bytes: 8,
        ..TranscodeSettings::default()
    };
    let req = Request::put("/v1/books/1")
        .body(Full::new(Bytes::from(r#"{"title":"long title"}"#)))
        .unwrap();
    let resp = call(small, req, no_stream()).await;
    assert_eq!(resp.status(), StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(
        text(resp).await,
        r#"{"error":"request body over the limit of 8 bytes","code":8}"#
    );
}

async fn server_stream(format: StreamFormat, first: &str, second: &str, error: &str) {
    let (tx, rx) = mpsc::channel(4);
    let stream: Stream = Arc::new(Mutex::new(Some(rx)));
    let t = transcoder(TranscodeSettings::default());
    let output = t
        .index()
        .find(&http::Method::GET, "/v1/books/1")
        .unwrap()
        .0
        .method
        .output();
    tx.send(Frame::data(framed(&book(output.clone(), "one"))))
        .await
        .unwrap();
    let settings = TranscodeSettings {
        streaming: format,
        ..TranscodeSettings::default()
    };
    let resp = call(settings, get("/v1/shelves/s/books:watch"), stream).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(resp.headers()["content-type"], format.content_type());
    let mut body = resp.into_body();
    // The first event arrives while the upstream has not sent the second message yet.
    let one = body.frame().await.unwrap().unwrap().into_data().unwrap();
    assert_eq!(one, first);
    // The second message split across two chunks, then an error status.
    let two = framed(&book(output, "two"));
    tx.send(Frame::data(two.slice(..3))).await.unwrap();
    tx.send(Frame::data(two.slice(3..))).await.unwrap();
    tx.send(Frame::trailers(trailers(14, "gone")))
        .await
        .unwrap();
    let got = body.frame().await.unwrap().unwrap().into_data().unwrap();
    assert_eq!(got, second);
    let got = body.frame().await.unwrap().unwrap().into_data().unwrap();
    assert_eq!(got, error);
    assert!(body.frame().await.is_none());
}

#[tokio::test]
async fn server_streams_go_out_message_by_message_as_ndjson() {
    server_stream(
        StreamFormat::Ndjson,
        "{\"id\":\"1152921504606846976\",\"title\":\"one\"}\n",
        "{\"id\":\"1152921504606846976\",\"title\":\"two\"}\n",
        "{\"error\":\"gone\",\"code\":14}\n",
    )
    .await;
}

#[tokio::test]
async fn server_streams_go_out_message_by_message_as_sse() {
    server_stream(
        StreamFormat::Sse,
        "data: {\"id\":\"1152921504606846976\",\"title\":\"one\"}\n\n",
        "data: {\"id\":\"1152921504606846976\",\"title\":\"two\"}\n\n",
        "data: {\"error\":\"gone\",\"code\":14}\n\n",
    )
    .await;
}
