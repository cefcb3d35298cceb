//! An inner service that answers at once with an empty body: what a layer's bench wraps, so
//! the figure is the layer's own.

use bytes::Bytes;
use ferry_filters::translate::{BoxError, TranslateBody};
use http::{Request, Response};
use http_body_util::{BodyExt, Empty};
use tower::Service;

/// Answers every request with 200 and an empty body, ready at once.
#[derive(Clone)]
pub struct Answer;

impl Service<Request<TranslateBody>> for Answer {
    type Response = Response<TranslateBody>;
    type Error = BoxError;
    type Future = std::future::Ready<Result<Response<TranslateBody>, BoxError>>;

    fn poll_ready(
        &mut self,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), BoxError>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, _: Request<TranslateBody>) -> Self::Future {
        std::future::ready(Ok(Response::new(empty())))
    }
}

/// An empty body.
pub fn empty() -> TranslateBody {
    Empty::<Bytes>::new().map_err(|e| match e {}).boxed_unsync()
}
