//! `request_usage`: a streamed OpenAI-compatible request (`"stream": true`) reports usage only
//! when it asks (`"stream_options": {"include_usage": true}`); without it a token budget could
//! only charge its fallback. ferry adds the option when the caller did not set it. The caller
//! then also receives the final usage chunk (empty `choices`), which OpenAI's own clients and
//! the servers ferry sits beside handle.
//!
//! Only bodies with a declared length up to [`MAX_REWRITE`] are read (they are whole JSON
//! documents); anything else passes untouched.

use bytes::Bytes;
use http::header::{CONTENT_LENGTH, CONTENT_TYPE};
use http::{HeaderValue, Request};
use http_body_util::{BodyExt, Full};

use crate::translate::TranslateBody;

/// Largest request body rewritten.
pub const MAX_REWRITE: u64 = 1024 * 1024;

/// The request with `stream_options.include_usage` set when it streams and did not ask.
pub async fn ask_for_usage(req: Request<TranslateBody>) -> Request<TranslateBody> {
    let json = req
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    let small = http_body::Body::size_hint(req.body())
        .exact()
        .is_some_and(|n| n <= MAX_REWRITE);
    if req.method() != http::Method::POST || !json || !small {
        return req;
    }
    let (mut parts, body) = req.into_parts();
    let bytes = match body.collect().await {
        Ok(c) => c.to_bytes(),
        // The body failed while being read: pass the failure on to the upstream call.
        Err(e) => return Request::from_parts(parts, Failed(Some(e)).boxed_unsync()),
    };
    let rewritten = rewrite(&bytes);
    let out = rewritten.unwrap_or(bytes);
    parts
        .headers
        .insert(CONTENT_LENGTH, HeaderValue::from(out.len()));
    let body = Full::new(out)
        .map_err(|never| match never {})
        .boxed_unsync();
    Request::from_parts(parts, body)
}

/// `Some(new body)` when the document streams and does not already decide on usage.
fn rewrite(body: &[u8]) -> Option<Bytes> {
    let mut doc: serde_json::Value = serde_json::from_slice(body).ok()?;
    let obj = doc.as_object_mut()?;
    if obj.get("stream") != Some(&serde_json::Value::Bool(true)) {
        return None;
    }
    let options = obj
        .entry("stream_options")
        .or_insert_with(|| serde_json::json!({}));
    let options = options.as_object_mut()?;
    if options.contains_key("include_usage") {
        return None;
    }
    options.insert("include_usage".into(), serde_json::Value::Bool(true));
    serde_json::to_vec(&doc).ok().map(Bytes::from)
}

/// A body that fails with the error reading the original one met.
struct Failed(Option<crate::translate::BoxError>);

impl http_body::Body for Failed {
    type Data = Bytes;
    type Error = crate::translate::BoxError;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, Self::Error>>> {
        std::task::Poll::Ready(self.0.take().map(Err))
    }
}
