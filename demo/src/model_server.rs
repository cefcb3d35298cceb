//! A small Open Inference Protocol (KServe V2) model server: the upstream `ferry demo` puts
//! behind the sidecar, also usable on its own in tests.
//!
//! One port speaks HTTP/1.1 and h2c (hyper-util's auto server). Requests whose content-type is
//! `application/grpc*` go to the gRPC service `inference.GRPCInferenceService`, everything else
//! to the REST API under `/v2`. Hosted models: `add_sub` and `echo` (see [`models`]).
//!
//! Failures: unknown model → 404 `{"error":…}` / NOT_FOUND; malformed JSON, protobuf or
//! tensors → 400 / INVALID_ARGUMENT; a body over [`MAX_BODY_BYTES`] → 413 /
//! RESOURCE_EXHAUSTED; unknown path → 404 / UNIMPLEMENTED. No input makes it panic.

use std::convert::Infallible;
use std::future::Future;
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, header};
use http_body::Body as _;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, LengthLimitError, Limited};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;

mod error;
mod grpc;
mod grpc_infer;
pub mod models;
mod rest;
mod rest_infer;

pub use error::ServeError;

/// Largest request body accepted (16 MiB): enough for demo tensors, small enough that a
/// careless client cannot make the server buffer without bound.
pub const MAX_BODY_BYTES: usize = 16 * 1024 * 1024;

/// How long shutdown waits for open connections to finish their requests.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(5);

/// Pause after a failed `accept` (e.g. out of file descriptors) so the loop does not spin.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// Body of every response: a whole buffer, or for gRPC a message followed by trailers.
pub type ResponseBody = BoxBody<Bytes, Infallible>;

/// Serves REST and gRPC on `listener` until `shutdown` resolves, then stops accepting and
/// lets open connections finish (bounded by a short drain timeout).
pub async fn serve(listener: TcpListener, shutdown: impl Future<Output = ()>) {
    let builder = auto::Builder::new(TokioExecutor::new());
    let graceful = GracefulShutdown::new();
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    // Small unary exchanges: Nagle's algorithm would hold the trailers back
                    // behind a delayed ACK (~40 ms).
                    if let Err(error) = stream.set_nodelay(true) {
                        tracing::debug!(%peer, %error, "cannot set TCP_NODELAY");
                    }
                    let conn = builder
                        .serve_connection(TokioIo::new(stream), service_fn(handle))
                        .into_owned();
                    let conn = graceful.watch(conn);
                    tokio::spawn(async move {
                        if let Err(error) = conn.await {
                            tracing::debug!(%peer, %error, "demo model server connection ended");
                        }
                    });
                }
                Err(error) => {
                    tracing::warn!(%error, "demo model server accept failed");
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                }
            },
        }
    }
    drop(listener);
    if tokio::time::timeout(DRAIN_TIMEOUT, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::debug!("demo model server drain timed out; dropping connections");
    }
}

/// Routes one request to the gRPC service or the REST API.
async fn handle(request: Request<Incoming>) -> Result<Response<ResponseBody>, Infallible> {
    let is_grpc = request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with(crate::grpc_frame::CONTENT_TYPE));
    let response = if is_grpc {
        grpc::handle(request).await
    } else {
        rest::handle(request).await
    };
    Ok(response)
}

/// Reads a whole request body, refusing more than [`MAX_BODY_BYTES`].
async fn read_body(body: Incoming) -> Result<Bytes, ServeError> {
    let too_large = ServeError::BodyTooLarge {
        limit: MAX_BODY_BYTES,
    };
    // A declared Content-Length over the limit is refused before reading anything.
    if body.size_hint().lower() > MAX_BODY_BYTES as u64 {
        return Err(too_large);
    }
    match Limited::new(body, MAX_BODY_BYTES).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(error) => match error.downcast::<hyper::Error>() {
            Ok(error) => Err(ServeError::Body(*error)),
            Err(error) if error.is::<LengthLimitError>() => Err(too_large),
            Err(error) => Err(ServeError::BadRequest(error.to_string())),
        },
    }
}

/// A body holding one buffer.
fn full(bytes: impl Into<Bytes>) -> ResponseBody {
    Full::new(bytes.into()).boxed()
}

#[cfg(test)]
mod tests;
