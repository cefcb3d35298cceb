//! Reading a whole body into memory under the route's limit, for what must be seen whole
//! before it can be translated: JSON and gRPC messages, the binary-extension probe's answer,
//! transcoded calls and checked tensors.
//!
//! Failures: a body declared or found over the limit is [`TranslateError::TooLarge`] (413 /
//! RESOURCE_EXHAUSTED) before more is read; a fault reading it is a bad request, unless the
//! listener's body limit cut it, which is too large as well.

use bytes::{Bytes, BytesMut};
use http::HeaderMap;
use http_body::Body;
use http_body_util::BodyExt;

use super::TranslateBody;
use super::error::TranslateError;

pub(crate) async fn collect(
    body: TranslateBody,
    limit: u64,
) -> Result<(Bytes, Option<HeaderMap>), TranslateError> {
    // A hand-rolled loop rather than `Limited`: its `Into<BoxError>` bound on an already boxed
    // error defeats `Send` inference for the callers' futures.
    let mut body = body;
    // With a declared length (Content-Length, or an exact hint) the body is copied once into a
    // buffer of that size as it arrives, so no chunk is held twice: peak memory is one body,
    // not the chunks plus their concatenation. The hint is trusted only up to the limit.
    let hint = body.size_hint();
    // A declared length (Content-Length sets hyper's hint) over the limit is refused before a
    // byte is read, as Envoy's buffer filters answer 413 on the header alone; reading up to
    // the limit first would only spend the caller's bandwidth on a certain refusal.
    if hint.lower() > limit {
        return Err(TranslateError::TooLarge {
            what: "body",
            limit,
        });
    }
    let expected = hint.exact().or(hint.upper()).unwrap_or(hint.lower());
    let mut first: Option<Bytes> = None;
    let mut all = BytesMut::new();
    let mut len = 0u64;
    let mut trailers = None;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| read_error(e.as_ref()))?;
        match frame.into_data() {
            Ok(data) => {
                len = len.saturating_add(data.len() as u64);
                if len > limit {
                    return Err(TranslateError::TooLarge {
                        what: "body",
                        limit,
                    });
                }
                // One chunk (the usual case for small bodies) is kept as is, uncopied.
                match first.take() {
                    None if all.is_empty() => first = Some(data),
                    None => all.extend_from_slice(&data),
                    Some(one) => {
                        let cap = expected.clamp(len, limit);
                        all.reserve(usize::try_from(cap).unwrap_or(0));
                        all.extend_from_slice(&one);
                        all.extend_from_slice(&data);
                    }
                }
            }
            Err(frame) => {
                if let Ok(t) = frame.into_trailers() {
                    trailers = Some(t);
                }
            }
        }
    }
    let bytes = first.unwrap_or_else(|| all.freeze());
    Ok((bytes, trailers))
}

/// A fault reading the caller's body.
pub(crate) fn read_error(e: &(dyn std::error::Error + Send + Sync + 'static)) -> TranslateError {
    match crate::body_limit::find(e) {
        // The listener's limit cut the body: too much, not malformed.
        Some(too_large) => TranslateError::TooLarge {
            what: "request body",
            limit: too_large.limit,
        },
        None => TranslateError::BadRequest(format!("reading the body: {e}")),
    }
}
