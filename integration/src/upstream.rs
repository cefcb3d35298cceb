//! Real upstream servers the end-to-end tests put behind ferry. Each `start` binds
//! `127.0.0.1:0` and returns a handle with the address; dropping the handle kills the server.

pub mod echo;
pub mod gate;
pub mod grpc;
pub mod openai;
pub mod recorder;
pub mod serve;
pub mod sse;
pub mod upload;

use bytes::Bytes;
use http::{Response, StatusCode, header};
use http_body_util::{BodyExt as _, Full};

pub use serve::{BoxError, Protocols, RespBody, ServerHandle};

/// A whole-body response.
pub(crate) fn full(
    status: StatusCode,
    content_type: &str,
    body: impl Into<Bytes>,
) -> Response<RespBody> {
    let mut resp = Response::new(
        Full::new(body.into())
            .map_err(|never| match never {})
            .boxed_unsync(),
    );
    *resp.status_mut() = status;
    if let Ok(v) = header::HeaderValue::from_str(content_type) {
        resp.headers_mut().insert(header::CONTENT_TYPE, v);
    }
    resp
}

/// A JSON response.
pub(crate) fn json(status: StatusCode, value: &serde_json::Value) -> Response<RespBody> {
    full(status, "application/json", value.to_string())
}
