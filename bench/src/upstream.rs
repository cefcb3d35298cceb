//! The benchmark upstream: a small hyper server speaking HTTP/1.1 and h2c on one port.
//!
//! It must cost as little as possible, since it shares core 0 with the load generator, so every
//! response is prebuilt or streamed without copies:
//! - `GET /...` → 200 with a small fixed body;
//! - `POST /upload` → reads and discards the body, answers with its length;
//! - `GET /sse` → `text/event-stream`: one event at once, a second after [`SSE_SECOND_EVENT`]
//!   (so a proxy that buffers the stream shows it in the time to first event);
//! - `POST /bench.Echo/Unary` (gRPC) → echoes the request message with `grpc-status: 0`;
//! - `POST /bench.Echo/ServerStream` (gRPC server streaming) → see [`grpc_stream`];
//! - `POST /inference.GRPCInferenceService/ModelInfer` (gRPC) → see [`infer`].

mod grpc_stream;
mod infer;

use std::convert::Infallible;
use std::time::Duration;

use bytes::Bytes;
use futures_util::stream;
use http::{HeaderMap, HeaderValue, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, StreamBody, combinators::BoxBody};
use hyper::body::{Frame, Incoming};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use tokio::net::TcpListener;

/// The fixed small response body.
pub const SMALL_BODY: &[u8] = b"hello from the ferry bench upstream\n";
/// Path of the gRPC-style unary method.
pub const GRPC_PATH: &str = "/bench.Echo/Unary";
/// Delay before the second SSE event.
pub const SSE_SECOND_EVENT: Duration = Duration::from_millis(200);
/// The first SSE event, byte for byte.
pub const SSE_FIRST: &[u8] = b"data: first\n\n";
/// `SETTINGS_MAX_FRAME_SIZE` and `SETTINGS_INITIAL_WINDOW_SIZE` as grpcio 1.76 and 1.85 servers
/// and grpcio 1.76 clients send them (read off the wire here): 4 MiB each.
pub const GRPC_CORE_FRAME_AND_WINDOW: u32 = 4 * 1024 * 1024;

pub use self::grpc_stream::{GRPC_STREAM_PATH, STREAM_GAP, STREAM_MESSAGES};
pub use self::infer::MODEL_INFER_PATH;

type Body = BoxBody<Bytes, Infallible>;

/// Serves connections from `listener` until the task is dropped.
pub async fn serve(listener: TcpListener) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let _ = stream.set_nodelay(true);
        tokio::spawn(async move {
            let mut builder = auto::Builder::new(TokioExecutor::new());
            // 100-stream gRPC scenario plus headroom; hyper's default would also do, but say it.
            // Frame size and windows are what the model servers' gRPC stack (grpc-core, under
            // Triton, MLServer and KServe) advertises; hyper's defaults (16 KiB frames) would
            // make every proxy's HTTP/2 upstream send 64 frames per MiB where the real servers
            // take a few.
            builder
                .http2()
                .max_concurrent_streams(1024)
                .max_frame_size(GRPC_CORE_FRAME_AND_WINDOW)
                .initial_stream_window_size(GRPC_CORE_FRAME_AND_WINDOW)
                .initial_connection_window_size(GRPC_CORE_FRAME_AND_WINDOW);
            let service = hyper::service::service_fn(handle);
            let _ = builder
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

pub(crate) async fn handle(req: Request<Incoming>) -> Result<Response<Body>, Infallible> {
    let path = req.uri().path();
    if path == GRPC_PATH {
        return Ok(grpc_echo(req).await);
    }
    if path == GRPC_STREAM_PATH {
        return Ok(grpc_stream::server_stream(req).await);
    }
    if path == MODEL_INFER_PATH {
        return Ok(infer::model_infer(req).await);
    }
    if path == "/upload" {
        return Ok(upload(req).await);
    }
    if path == "/sse" {
        return Ok(sse());
    }
    Ok(small())
}

fn small() -> Response<Body> {
    let mut resp = Response::new(Full::new(Bytes::from_static(SMALL_BODY)).boxed());
    resp.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    resp
}

async fn upload(req: Request<Incoming>) -> Response<Body> {
    let mut body = req.into_body();
    let mut total: u64 = 0;
    while let Some(frame) = body.frame().await {
        match frame {
            Ok(f) => total += f.data_ref().map_or(0, |d| d.len() as u64),
            Err(_) => return status(StatusCode::BAD_REQUEST),
        }
    }
    Response::new(Full::new(Bytes::from(format!("received {total}\n"))).boxed())
}

fn sse() -> Response<Body> {
    let events = stream::unfold(0u8, |step| async move {
        match step {
            0 => Some((Ok(Frame::data(Bytes::from_static(SSE_FIRST))), 1)),
            1 => {
                tokio::time::sleep(SSE_SECOND_EVENT).await;
                Some((Ok(Frame::data(Bytes::from_static(b"data: done\n\n"))), 2))
            }
            _ => None,
        }
    });
    let mut resp = Response::new(StreamBody::new(events).boxed());
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    resp.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    resp
}

async fn grpc_echo(req: Request<Incoming>) -> Response<Body> {
    let Ok(collected) = req.into_body().collect().await else {
        return status(StatusCode::BAD_REQUEST);
    };
    let message = collected.to_bytes();
    let mut trailers = HeaderMap::new();
    trailers.insert("grpc-status", HeaderValue::from_static("0"));
    let frames = stream::iter([
        Ok::<_, Infallible>(Frame::data(message)),
        Ok(Frame::trailers(trailers)),
    ]);
    let mut resp = Response::new(StreamBody::new(frames).boxed());
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/grpc"),
    );
    resp
}

pub(crate) fn status(code: StatusCode) -> Response<Body> {
    let mut resp = Response::new(Full::new(Bytes::new()).boxed());
    *resp.status_mut() = code;
    resp
}
