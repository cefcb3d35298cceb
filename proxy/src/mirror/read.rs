//! The candidate's side of a mirror: the request sent on the candidate's own balancer and
//! its whole answer read, bounded by `max_body`.

use http::{HeaderMap, Request};
use http_body_util::BodyExt;
use tower::Service;

use crate::body::ProxyBody;
use crate::forward::{Balance, EndpointClient};

/// Sends the mirror and reads the whole answer; `None` for an answer over `max` bytes (the
/// candidate answered; the answer is not compared). Errors as text: named and boxed outside
/// the caller's `async` block (see [`crate::body::BoxFuture`]).
pub(super) fn send(
    client: &mut Balance<EndpointClient>,
    req: Request<ProxyBody>,
    max: usize,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = Sent> + Send>> {
    let call = client.call(req);
    Box::pin(async move {
        let resp = call.await.map_err(|e| e.to_string())?;
        let (parts, mut body) = resp.into_parts();
        let mut chunks = Vec::new();
        let (mut len, mut trailers) = (0usize, None);
        // Read by hand rather than `Limited`: its generic error bound defeats the `Send`
        // proof of this future (see above).
        while let Some(frame) = body.frame().await {
            match frame.map_err(|e| e.to_string())?.into_data() {
                Ok(data) => {
                    len = len.saturating_add(data.len());
                    if len > max {
                        return Ok((parts, None));
                    }
                    chunks.push(data);
                }
                Err(frame) => trailers = frame.into_trailers().ok(),
            }
        }
        Ok((parts, Some((concat(chunks, len), trailers))))
    })
}

/// One buffer of `len` bytes from `chunks` (no copy for one chunk).
pub(super) fn concat(chunks: Vec<bytes::Bytes>, len: usize) -> bytes::Bytes {
    if chunks.len() == 1 {
        return chunks.into_iter().next().unwrap_or_default();
    }
    let mut all = bytes::BytesMut::with_capacity(len);
    chunks.iter().for_each(|c| all.extend_from_slice(c));
    all.freeze()
}

pub(super) type Sent = Result<
    (
        http::response::Parts,
        Option<(bytes::Bytes, Option<HeaderMap>)>,
    ),
    String,
>;
