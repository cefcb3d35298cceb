//! `POST /bench.Echo/ServerStream` (gRPC server streaming) for the soak: reads the one request
//! message, then sends it back [`STREAM_MESSAGES`] times [`STREAM_GAP`] apart before the
//! `grpc-status: 0` trailers. The gaps keep each stream open across several polls of the proxy,
//! so a soak holds long-lived h2 streams the way token streaming from a model server does.

use std::convert::Infallible;
use std::time::Duration;

use bytes::Bytes;
use futures_util::stream;
use http::{HeaderMap, HeaderValue, Request, Response, header};
use http_body_util::{BodyExt, StreamBody};
use hyper::body::{Frame, Incoming};

use super::Body;

/// Path of the server-streaming method.
pub const GRPC_STREAM_PATH: &str = "/bench.Echo/ServerStream";
/// Messages per stream.
pub const STREAM_MESSAGES: usize = 5;
/// Pause between two messages of a stream.
pub const STREAM_GAP: Duration = Duration::from_millis(10);

/// Answers one server-streaming call: the request message, `STREAM_MESSAGES` times.
pub(super) async fn server_stream(req: Request<Incoming>) -> Response<Body> {
    let Ok(collected) = req.into_body().collect().await else {
        return super::status(http::StatusCode::BAD_REQUEST);
    };
    let message = collected.to_bytes();
    let frames = stream::unfold(0usize, move |sent| {
        let message = message.clone();
        async move {
            if sent > STREAM_MESSAGES {
                return None;
            }
            if sent == STREAM_MESSAGES {
                let mut trailers = HeaderMap::new();
                trailers.insert("grpc-status", HeaderValue::from_static("0"));
                return Some((Ok::<_, Infallible>(Frame::trailers(trailers)), sent + 1));
            }
            if sent > 0 {
                tokio::time::sleep(STREAM_GAP).await;
            }
            Some((Ok(Frame::data(Bytes::clone(&message))), sent + 1))
        }
    });
    let mut resp = Response::new(StreamBody::new(frames).boxed());
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/grpc"),
    );
    resp
}
