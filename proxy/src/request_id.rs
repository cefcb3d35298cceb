//! The outermost layer: every request carries an `x-request-id` upstream (the caller's, or a
//! new UUID v4) and every answer carries the same id back, including answers ferry rendered
//! itself, so a caller's report can be matched to ferry's logs and the model server's.

use std::task::{Context, Poll};

use http::{Request, Response};

use crate::body::{BoxError, BoxFuture, ProxyBody, StackService};
use crate::headers::{X_REQUEST_ID, new_request_id};

/// Tower layer adding request ids.
#[derive(Debug, Clone, Copy, Default)]
pub struct RequestIdLayer;

/// The service made by [`RequestIdLayer`].
#[derive(Debug, Clone)]
pub struct RequestId<S> {
    inner: S,
}

impl<S> tower::Layer<S> for RequestIdLayer {
    type Service = RequestId<S>;

    fn layer(&self, inner: S) -> RequestId<S> {
        RequestId { inner }
    }
}

// === impl RequestId ===

impl<S> tower::Service<Request<ProxyBody>> for RequestId<S>
where
    S: StackService,
{
    type Response = Response<ProxyBody>;
    type Error = BoxError;
    type Future = BoxFuture;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: Request<ProxyBody>) -> Self::Future {
        let id = match req.headers().get(&X_REQUEST_ID) {
            Some(id) => id.clone(),
            None => {
                let id = new_request_id();
                req.headers_mut().insert(X_REQUEST_ID.clone(), id.clone());
                id
            }
        };
        let call = self.inner.call(req);
        Box::pin(async move {
            let mut resp = call.await?;
            resp.headers_mut().insert(X_REQUEST_ID.clone(), id);
            Ok(resp)
        })
    }
}
