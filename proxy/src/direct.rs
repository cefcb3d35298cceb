//! A route's `direct_response`: ferry answers with the configured status, body and content
//! type, and no upstream is called.

use std::task::{Context, Poll};

use bytes::Bytes;
use http::header::{CONTENT_TYPE, HeaderValue};
use http::{Request, Response, StatusCode};

use crate::body::{BoxError, ProxyBody, full};

/// The innermost service of a direct-response route.
#[derive(Debug, Clone)]
pub struct Direct {
    status: StatusCode,
    body: Bytes,
    content_type: Option<HeaderValue>,
}

impl Direct {
    /// Answers `status` with `body` of `content_type`.
    pub fn new(config: &ferry_config::DirectResponse) -> Self {
        Direct {
            status: StatusCode::from_u16(config.status).unwrap_or(StatusCode::OK),
            body: Bytes::from(config.body.clone()),
            content_type: HeaderValue::from_str(&config.content_type).ok(),
        }
    }
}

impl tower::Service<Request<ProxyBody>> for Direct {
    type Response = Response<ProxyBody>;
    type Error = BoxError;
    type Future = std::future::Ready<Result<Response<ProxyBody>, BoxError>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _: Request<ProxyBody>) -> Self::Future {
        let mut resp = Response::new(full(self.body.clone()));
        *resp.status_mut() = self.status;
        if let Some(ct) = &self.content_type {
            resp.headers_mut().insert(CONTENT_TYPE, ct.clone());
        }
        std::future::ready(Ok(resp))
    }
}
