//! Asking the upstream for a model's metadata, in the protocol the caller speaks, so the
//! question takes the same path (translation included) as the request it is for.

use std::collections::VecDeque;

use bytes::Bytes;
use http::header::{CONTENT_TYPE, HOST, TE};
use http::{HeaderMap, HeaderValue, Method, Request, Response, StatusCode, Uri};
use http_body::Body;
use http_body_util::BodyExt;
use prost::Message;
use serde::Deserialize;

use super::{ModelMetadata, TensorMetadata};
use crate::translate::pb::{ModelMetadataRequest, ModelMetadataResponse, SERVICE_PATH};
use crate::translate::{BoxError, ChunksBody, Endpoint, Rpc, TranslateBody, collect};

/// Metadata answers are small; anything larger is not metadata.
const MAX_METADATA_BYTES: u64 = 1024 * 1024;

#[derive(Deserialize)]
struct RestMetadata {
    #[serde(default)]
    inputs: Vec<RestTensor>,
}

#[derive(Deserialize)]
struct RestTensor {
    name: String,
    datatype: String,
    shape: Vec<i64>,
}

/// The metadata request for `model`/`version`, addressed like the request `uri`/`headers` it
/// is for (same authority and Host).
pub(super) fn request(
    uri: &Uri,
    headers: &HeaderMap,
    model: &str,
    version: &str,
    grpc: bool,
) -> Request<TranslateBody> {
    let (method, path, body, ct) = if grpc {
        let msg = ModelMetadataRequest {
            name: model.to_owned(),
            version: version.to_owned(),
        };
        let framed = crate::translate::grpc_frame::frame(msg.encode_to_vec());
        let path = format!("{SERVICE_PATH}{}", Rpc::ModelMetadata.method_name());
        (Method::POST, path, framed, Some("application/grpc"))
    } else {
        let ep = Endpoint {
            rpc: Rpc::ModelMetadata,
            model: model.to_owned(),
            version: version.to_owned(),
        };
        (Method::GET, ep.rest_path(), VecDeque::new(), None)
    };
    let body = ChunksBody::new(body, None)
        .map_err(|never| match never {})
        .boxed_unsync();
    let mut req = Request::new(body);
    *req.method_mut() = method;
    *req.version_mut() = if grpc {
        http::Version::HTTP_2
    } else {
        http::Version::HTTP_11
    };
    let mut parts = uri.clone().into_parts();
    // A model name that is not a valid path keeps the request's own path; the upstream's
    // answer then fails to parse and the check fails open.
    if let Ok(pq) = path.parse() {
        parts.path_and_query = Some(pq);
    }
    *req.uri_mut() = Uri::from_parts(parts).unwrap_or_else(|_| uri.clone());
    let h = req.headers_mut();
    if let Some(host) = headers.get(HOST) {
        h.insert(HOST, host.clone());
    }
    if let Some(ct) = ct {
        h.insert(CONTENT_TYPE, HeaderValue::from_static(ct));
        h.insert(TE, HeaderValue::from_static("trailers"));
    }
    req
}

/// Parses the upstream's metadata answer; `Err` says why it is unusable.
pub(super) async fn response<B>(resp: Response<B>, grpc: bool) -> Result<ModelMetadata, String>
where
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    let (parts, body) = resp.into_parts();
    if parts.status != StatusCode::OK {
        return Err(format!("upstream answered HTTP {}", parts.status));
    }
    let body = body.map_err(Into::into).boxed_unsync();
    let (bytes, trailers) = collect(body, MAX_METADATA_BYTES)
        .await
        .map_err(|e| e.to_string())?;
    if !grpc {
        let meta: RestMetadata =
            serde_json::from_slice(&bytes).map_err(|e| format!("unreadable metadata JSON: {e}"))?;
        return Ok(ModelMetadata {
            inputs: meta
                .inputs
                .into_iter()
                .map(|t| TensorMetadata {
                    name: t.name,
                    datatype: t.datatype,
                    shape: t.shape,
                })
                .collect(),
        });
    }
    let status = trailers
        .as_ref()
        .and_then(|t| t.get("grpc-status"))
        .or_else(|| parts.headers.get("grpc-status"))
        .and_then(|v| v.to_str().ok())
        .map(str::trim);
    if status != Some("0") {
        return Err(format!("upstream answered grpc-status {status:?}"));
    }
    let message = crate::translate::grpc_frame::unframe(&bytes)?;
    let meta = ModelMetadataResponse::decode(message)
        .map_err(|e| format!("unreadable ModelMetadataResponse: {e}"))?;
    Ok(ModelMetadata {
        inputs: meta
            .inputs
            .into_iter()
            .map(|t| TensorMetadata {
                name: t.name,
                datatype: t.datatype,
                shape: t.shape,
            })
            .collect(),
    })
}
