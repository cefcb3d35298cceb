//! [`Transcoder`]: the request half (match, build the gRPC call) and the response half
//! ([`Pending`]) that the proxy calls around its own forwarding, and [`TranscodeLayer`] uses.

use std::future::Future;
use std::sync::Arc;

use bytes::Bytes;
use http::header::{CONTENT_LENGTH, CONTENT_TYPE, HeaderValue};
use http::{HeaderMap, Method, Request, Response, StatusCode, Version};
use http_body::Body;
use http_body_util::BodyExt;
use prost_reflect::DescriptorPool;

use super::TranscodeSettings;
use super::error::{LoadError, TranscodeError};
use super::request;
use super::response::{Deframer, Shape, StreamFormat, check_status};
use super::rules::RuleIndex;
use super::stream::JsonStream;
use crate::failure::{is_grpc, json_answer};
use crate::translate::grpc_frame::{frame, unframe};
use crate::translate::{
    BoxError, ChunksBody, TranslateBody, TranslateError, boxed, collect, grpc_status,
};

/// The transcoding table of one route: built once per descriptor load, cheap to clone.
#[derive(Debug, Clone)]
pub struct Transcoder {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    index: RuleIndex,
    settings: TranscodeSettings,
}

/// What the response half needs from the request half.
#[derive(Debug)]
pub struct Pending {
    shape: Shape,
    streaming: Option<StreamFormat>,
    limit: u64,
}

/// The request future's output: the gRPC request and its pending half, or why the request
/// cannot be transcoded (the upstream is not called).
pub type Transcoded = Result<(Request<TranslateBody>, Pending), TranscodeError>;

// === impl Transcoder ===

impl Transcoder {
    /// Builds the table from an encoded `FileDescriptorSet`.
    pub fn from_descriptor_set(
        bytes: &[u8],
        settings: TranscodeSettings,
    ) -> Result<Transcoder, LoadError> {
        let pool = DescriptorPool::decode(bytes)?;
        let index = RuleIndex::build(&pool, &settings.services)?;
        Ok(Transcoder {
            inner: Arc::new(Inner { index, settings }),
        })
    }

    /// How many HTTP bindings (rules plus additional bindings) the table holds.
    pub fn bindings(&self) -> usize {
        self.inner.index.len()
    }

    #[cfg(test)]
    pub(crate) fn index(&self) -> &RuleIndex {
        &self.inner.index
    }

    /// The settings.
    pub fn settings(&self) -> &TranscodeSettings {
        &self.inner.settings
    }

    /// Matches the request. `Err` gives it back untouched: no rule matches (or it is already
    /// gRPC), so it passes through. `Ok` is the translation still to run (it reads the body).
    #[allow(
        clippy::result_large_err,
        reason = "Err hands the request back, not an error"
    )]
    pub fn request<B>(
        &self,
        req: Request<B>,
    ) -> Result<impl Future<Output = Transcoded> + Send + 'static, Request<B>>
    where
        B: Body<Data = Bytes> + Send + 'static,
        B::Error: Into<BoxError>,
    {
        if is_grpc(req.headers()) {
            return Err(req);
        }
        let Some((binding, captures)) = self.inner.index.find(req.method(), req.uri().path())
        else {
            return Err(req);
        };
        let binding = binding.clone();
        let inner = self.inner.clone();
        let limit = inner.settings.max_body_bytes;
        // Boxed outside the future so its type does not carry the body's error conversion.
        let req = req.map(|b| b.map_err(Into::into).boxed_unsync());
        Ok(async move {
            let method = &binding.method;
            if method.is_client_streaming() {
                return Err(TranscodeError::Streaming(method.full_name().to_owned()));
            }
            let (parts, body) = req.into_parts();
            let declared = parts
                .headers
                .get(CONTENT_LENGTH)
                .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
            if declared.is_some_and(|n| n > limit) {
                return Err(TranscodeError::TooLarge(limit));
            }
            let bytes = match collect(body, limit).await {
                Ok((bytes, _)) => bytes,
                Err(TranslateError::TooLarge { limit, .. }) => {
                    return Err(TranscodeError::TooLarge(limit));
                }
                Err(e) => return Err(TranscodeError::BadRequest(e.to_string())),
            };
            let message = request::build(
                &binding,
                captures,
                parts.uri.query(),
                &bytes,
                inner.settings.reject_unknown_fields,
            )?;
            let mut out = Request::new(boxed(ChunksBody::new(frame(message), None)));
            *out.method_mut() = Method::POST;
            *out.version_mut() = Version::HTTP_2;
            let mut uri = parts.uri.into_parts();
            uri.path_and_query = binding.grpc_path.parse().ok();
            *out.uri_mut() = http::Uri::from_parts(uri)
                .map_err(|_| TranscodeError::BadRequest("untranslatable URI".into()))?;
            let headers = out.headers_mut();
            copy_headers(&parts.headers, headers);
            headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/grpc"));
            headers.insert(http::header::TE, HeaderValue::from_static("trailers"));
            *out.extensions_mut() = parts.extensions;
            let pending = Pending {
                shape: Shape {
                    output: method.output(),
                    field: binding.response_field.clone(),
                },
                streaming: method
                    .is_server_streaming()
                    .then_some(inner.settings.streaming),
                limit,
            };
            Ok((out, pending))
        })
    }
}

// === impl Pending ===

impl Pending {
    /// Maps the upstream's answer for the REST caller; `Err` when the upstream failed or its
    /// answer does not fit the method.
    pub fn response<B>(
        self,
        resp: Response<B>,
    ) -> impl Future<Output = Result<Response<TranslateBody>, TranscodeError>> + Send + 'static
    where
        B: Body<Data = Bytes> + Send + 'static,
        B::Error: Into<BoxError>,
    {
        let resp = resp.map(|b| b.map_err(Into::into).boxed_unsync());
        async move {
            match self.streaming {
                None => self.unary(resp).await,
                Some(format) => self.stream(resp, format).await,
            }
        }
    }

    async fn unary(
        &self,
        resp: Response<TranslateBody>,
    ) -> Result<Response<TranslateBody>, TranscodeError> {
        let (parts, body) = upstream_ok(resp)?;
        let (bytes, trailers) = collect(body, self.limit)
            .await
            .map_err(|e| TranscodeError::BadUpstream(e.to_string()))?;
        check_status(
            trailers
                .as_ref()
                .and_then(grpc_status)
                .or_else(|| grpc_status(&parts.headers)),
        )?;
        let message = unframe(&bytes).map_err(TranscodeError::BadUpstream)?;
        let json = self.shape.to_json(&message)?;
        Ok(json_answer(StatusCode::OK, json))
    }

    async fn stream(
        self,
        resp: Response<TranslateBody>,
        format: StreamFormat,
    ) -> Result<Response<TranslateBody>, TranscodeError> {
        let (_, mut body) = upstream_ok(resp)?;
        // Wait for the first message so an error before any output still gets its status.
        let mut deframer = Deframer::default();
        let mut saw_status = false;
        let first = loop {
            if let Some(msg) = deframer.next(self.limit)? {
                break Some(msg);
            }
            match body.frame().await {
                Some(Ok(f)) => match f.into_data() {
                    Ok(data) => deframer.push(&data, self.limit)?,
                    Err(f) => {
                        if let Ok(t) = f.into_trailers() {
                            check_status(grpc_status(&t))?;
                            saw_status = true;
                        }
                    }
                },
                Some(Err(e)) => return Err(TranscodeError::BadUpstream(e.to_string())),
                None => break None,
            }
        };
        let stream = JsonStream {
            inner: body,
            deframer,
            shape: self.shape,
            format,
            limit: self.limit,
            first,
            saw_status,
            done: false,
        };
        let mut out = Response::new(stream.boxed_unsync());
        out.headers_mut().insert(
            CONTENT_TYPE,
            HeaderValue::from_static(format.content_type()),
        );
        out.headers_mut()
            .insert("cache-control", HeaderValue::from_static("no-cache"));
        Ok(out)
    }
}

/// The upstream's parts and body when it answered HTTP 200 without a trailers-only error.
fn upstream_ok(
    resp: Response<TranslateBody>,
) -> Result<(http::response::Parts, TranslateBody), TranscodeError> {
    let (parts, body) = resp.into_parts();
    if parts.status != StatusCode::OK {
        return Err(TranscodeError::BadUpstream(format!(
            "gRPC upstream answered HTTP {}",
            parts.status
        )));
    }
    if let Some(status) = grpc_status(&parts.headers) {
        check_status(Some(status))?;
    }
    Ok((parts, body))
}

/// Headers that describe the old body or protocol do not cross the translation.
fn copy_headers(from: &HeaderMap, to: &mut HeaderMap) {
    for (name, value) in from {
        let skip = matches!(
            name.as_str(),
            "content-length"
                | "content-type"
                | "content-encoding"
                | "accept-encoding"
                | "transfer-encoding"
                | "te"
                | "trailer"
                | "connection"
                | "keep-alive"
                | "accept"
        ) || name.as_str().starts_with("grpc-");
        if !skip {
            to.append(name.clone(), value.clone());
        }
    }
}
