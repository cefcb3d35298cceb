//! Reading just enough of a body to find the model it names; every byte read is replayed.

use ferry_filters::model_name::{self, ModelRef};
use http::Method;
use http::header::CONTENT_TYPE;

use crate::body::{self, Peeked, ProxyBody};
use crate::failure::Failure;
use crate::headers;

/// Reads just enough of the body to find the model: the first gRPC message of an OIP (or TF
/// Serving) call, or
/// the JSON `model` member within `max` bytes. Every byte read is replayed upstream.
pub(super) async fn model(
    parts: &http::request::Parts,
    body: ProxyBody,
    max: usize,
) -> Result<(Option<ModelRef>, ProxyBody), Failure> {
    let path = parts.uri.path();
    let grpc = headers::is_grpc(&parts.headers);
    let read_err = |e: body::BoxError| match e.downcast::<body::BodyTooLarge>() {
        Ok(too_large) => Failure::BodyTooLarge {
            limit: too_large.limit,
        },
        Err(e) => Failure::BadRequest(format!("reading request body: {e}")),
    };
    let tfserving = model_name::is_tfserving_grpc_model_method(path);
    if grpc && (tfserving || model_name::is_oip_grpc_model_method(path)) {
        let mut peeked = Peeked::read(body, max, |chunks, len| {
            let head = chunks.first().map(|c| &c[..]).unwrap_or_default();
            // Fields 1 and 2 come first; a few hundred bytes of a large first message suffice.
            let want = model_name::grpc_frame_len(head).map(|n| n.min(512));
            want.is_some_and(|n| len >= n)
        })
        .await
        .map_err(read_err)?;
        let head = peeked.head(max.min(peeked.len));
        let found = if tfserving {
            model_name::from_tfserving_grpc_frame(&head)
        } else {
            model_name::from_grpc_frame(&head)
        };
        return Ok((found, peeked.replay()));
    }
    let json_like = parts
        .headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_none_or(|ct| ct.contains("json"));
    if parts.method == Method::POST && json_like && !grpc {
        let mut found = None;
        let mut peeked = Peeked::read(body, max, |chunks, _| {
            found = if let [only] = chunks {
                model_name::from_json_prefix(only)
            } else {
                model_name::from_json_prefix(&chunks.concat())
            };
            found.is_some()
        })
        .await
        .map_err(read_err)?;
        if found.is_none() {
            found = model_name::from_json_prefix(&peeked.head(max));
        }
        return Ok((found, peeked.replay()));
    }
    Ok((None, body))
}
