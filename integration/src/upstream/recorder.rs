//! An upstream that records every request it receives (head as soon as it arrives, then the
//! body and whether it ended cleanly), so a test can say exactly what ferry let through: not
//! just "how many", but which paths, with which `Host`, carrying which bytes.
//!
//! Answers, steered by the request:
//! - `x-test-answer-bytes: N`: 200 with N bytes of body, streamed in 64 KiB chunks (slow
//!   readers and zero windows need an answer larger than the socket buffers);
//! - `content-type: application/grpc...`: an empty gRPC message and `grpc-status: 0`, which
//!   decodes as an empty response of any rpc (so a REST → gRPC translation succeeds);
//! - anything else: `200 {"path": ..., "host": ...}`.

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Request, Response, StatusCode, Version};
use http_body_util::{BodyExt as _, StreamBody};
use hyper::body::{Frame, Incoming};

use super::{BoxError, Protocols, RespBody, ServerHandle, json, serve::serve};

/// Header asking for an answer of this many body bytes.
pub const ANSWER_BYTES_HEADER: &str = "x-test-answer-bytes";
/// Body bytes kept per request; the rest is counted only.
const KEPT: usize = 1 << 20;
/// Chunk size of a long answer.
const CHUNK: usize = 64 * 1024;

/// A running recording upstream.
#[derive(Debug)]
pub struct Recorder {
    log: Arc<Mutex<Vec<Recorded>>>,
    server: ServerHandle,
}

/// One request as the upstream received it.
#[derive(Clone, Debug)]
pub struct Recorded {
    /// Method.
    pub method: String,
    /// Path and query.
    pub path: String,
    /// HTTP version on the upstream hop.
    pub version: Version,
    /// Headers as received.
    pub headers: HeaderMap,
    /// The first MiB of the body.
    pub body: Vec<u8>,
    /// Body bytes received in all.
    pub body_len: u64,
    /// `Some(true)` once the body ended cleanly, `Some(false)` if it failed (the sender gave
    /// up mid-body), `None` while it is still being read.
    pub body_complete: Option<bool>,
}

// === impl Recorder ===

impl Recorder {
    /// Starts the recorder, accepting HTTP/1.1 and h2c.
    pub async fn start() -> anyhow::Result<Recorder> {
        let log: Arc<Mutex<Vec<Recorded>>> = Arc::default();
        let shared = log.clone();
        let server = serve(Protocols::Auto, move |req| {
            let log = shared.clone();
            async move { answer(&log, req).await }
        })
        .await?;
        Ok(Recorder { log, server })
    }

    /// The bound address.
    pub fn addr(&self) -> std::net::SocketAddr {
        self.server.addr()
    }

    /// Every request so far, in arrival order.
    pub fn all(&self) -> Vec<Recorded> {
        self.log.lock().map(|l| l.clone()).unwrap_or_default()
    }

    /// The requests whose path starts with `prefix`, in arrival order.
    pub fn under(&self, prefix: &str) -> Vec<Recorded> {
        self.all()
            .into_iter()
            .filter(|r| r.path.starts_with(prefix))
            .collect()
    }
}

// === impl Recorded ===

impl Recorded {
    /// A header's value as text, if present and visible ASCII.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

async fn answer(log: &Mutex<Vec<Recorded>>, req: Request<Incoming>) -> Response<RespBody> {
    let (parts, mut body) = req.into_parts();
    let entry = Recorded {
        method: parts.method.as_str().to_owned(),
        path: parts
            .uri
            .path_and_query()
            .map_or_else(|| "/".to_owned(), |p| p.as_str().to_owned()),
        version: parts.version,
        headers: parts.headers.clone(),
        body: Vec::new(),
        body_len: 0,
        body_complete: None,
    };
    // Logged before the body is read: a request whose body then fails still shows up.
    let index = match log.lock() {
        Ok(mut l) => {
            l.push(entry);
            l.len() - 1
        }
        Err(_) => usize::MAX,
    };
    let update = |f: &dyn Fn(&mut Recorded)| {
        if let Ok(mut l) = log.lock()
            && let Some(r) = l.get_mut(index)
        {
            f(r);
        }
    };
    let mut complete = true;
    while let Some(frame) = body.frame().await {
        match frame {
            Ok(frame) => {
                if let Some(data) = frame.data_ref() {
                    update(&|r| {
                        r.body_len += data.len() as u64;
                        let room = KEPT.saturating_sub(r.body.len());
                        r.body.extend_from_slice(&data[..room.min(data.len())]);
                    });
                }
            }
            Err(_) => {
                complete = false;
                break;
            }
        }
    }
    update(&|r| r.body_complete = Some(complete));
    let host = parts
        .headers
        .get(http::header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("");
    if let Some(n) = parts
        .headers
        .get(ANSWER_BYTES_HEADER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok())
    {
        return long_answer(n);
    }
    let grpc = parts
        .headers
        .get(http::header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/grpc"));
    if grpc {
        return grpc_empty_answer();
    }
    let path = parts.uri.path();
    json(
        StatusCode::OK,
        &serde_json::json!({ "path": path, "host": host }),
    )
}

/// `n` bytes of `a`, streamed, with a `Content-Length`.
fn long_answer(n: usize) -> Response<RespBody> {
    let chunk = Bytes::from(vec![b'a'; CHUNK]);
    let chunks = (0..n.div_ceil(CHUNK)).map(move |i| {
        let len = CHUNK.min(n - i * CHUNK);
        Ok::<_, BoxError>(Frame::data(chunk.slice(..len)))
    });
    let mut resp =
        Response::new(StreamBody::new(futures_util::stream::iter(chunks)).boxed_unsync());
    resp.headers_mut()
        .insert(http::header::CONTENT_LENGTH, HeaderValue::from(n));
    resp
}

/// One empty gRPC message and `grpc-status: 0` in the trailers.
fn grpc_empty_answer() -> Response<RespBody> {
    let mut trailers = HeaderMap::new();
    trailers.insert("grpc-status", HeaderValue::from_static("0"));
    let frames: [Result<_, BoxError>; 2] = [
        Ok(Frame::data(Bytes::from_static(&[0, 0, 0, 0, 0]))),
        Ok(Frame::trailers(trailers)),
    ];
    let mut resp =
        Response::new(StreamBody::new(futures_util::stream::iter(frames)).boxed_unsync());
    resp.headers_mut().insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("application/grpc"),
    );
    resp
}
