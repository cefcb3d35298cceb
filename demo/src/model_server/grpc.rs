//! `inference.GRPCInferenceService` over hyper's HTTP/2, framed by hand (see
//! [`crate::grpc_frame`]): every rpc is unary, so a request body is read whole (capped),
//! decoded, answered with one message and `grpc-status: 0` trailers. Failures are
//! trailers-only responses: HTTP 200 with `grpc-status`/`grpc-message` in the headers.

use std::convert::Infallible;

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Request, Response};
use http_body::Frame;
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Incoming;
use prost::Message;

use super::error::ServeError;
use super::models::{self, Model};
use super::{ResponseBody, full, grpc_infer, read_body};
use crate::grpc_frame::{self, Code};
use crate::inference::{
    self as pb, ModelMetadataRequest, ModelMetadataResponse, ModelReadyRequest, ModelReadyResponse,
    ServerLiveRequest, ServerLiveResponse, ServerMetadataRequest, ServerMetadataResponse,
    ServerReadyRequest, ServerReadyResponse,
};

/// The rpcs this server implements.
#[derive(Debug, Clone, Copy)]
enum Rpc {
    ServerLive,
    ServerReady,
    ModelReady,
    ServerMetadata,
    ModelMetadata,
    ModelInfer,
}

/// Answers one gRPC request.
pub(super) async fn handle(request: Request<Incoming>) -> Response<ResponseBody> {
    let (parts, body) = request.into_parts();
    let Some(rpc) = rpc_for(&parts.method, parts.uri.path()) else {
        return status_response(&ServeError::NoEndpoint {
            method: parts.method,
            path: parts.uri.path().to_owned(),
        });
    };
    let result = match read_body(body).await {
        Ok(body) => dispatch(rpc, body),
        Err(error) => Err(error),
    };
    match result {
        Ok(message) => message_response(message),
        Err(error) => {
            tracing::debug!(?rpc, %error, "demo model server gRPC request refused");
            status_response(&error)
        }
    }
}

fn rpc_for(method: &http::Method, path: &str) -> Option<Rpc> {
    if method != http::Method::POST {
        return None;
    }
    let rpc = match path.strip_prefix(pb::SERVICE_PATH)? {
        "ServerLive" => Rpc::ServerLive,
        "ServerReady" => Rpc::ServerReady,
        "ModelReady" => Rpc::ModelReady,
        "ServerMetadata" => Rpc::ServerMetadata,
        "ModelMetadata" => Rpc::ModelMetadata,
        "ModelInfer" => Rpc::ModelInfer,
        _ => return None,
    };
    Some(rpc)
}

/// Decodes the request message, runs the rpc and returns the framed response message.
fn dispatch(rpc: Rpc, body: Bytes) -> Result<Bytes, ServeError> {
    match rpc {
        Rpc::ServerLive => unary(body, |_: ServerLiveRequest| {
            Ok(ServerLiveResponse { live: true })
        }),
        Rpc::ServerReady => unary(body, |_: ServerReadyRequest| {
            Ok(ServerReadyResponse { ready: true })
        }),
        Rpc::ModelReady => unary(body, |r: ModelReadyRequest| {
            Model::lookup(&r.name, Some(&r.version)).map(|_| ModelReadyResponse { ready: true })
        }),
        Rpc::ServerMetadata => unary(body, |_: ServerMetadataRequest| {
            Ok(ServerMetadataResponse {
                name: models::SERVER_NAME.to_owned(),
                version: env!("CARGO_PKG_VERSION").to_owned(),
                extensions: Vec::new(),
            })
        }),
        Rpc::ModelMetadata => unary(body, |r: ModelMetadataRequest| {
            Model::lookup(&r.name, Some(&r.version)).map(model_metadata)
        }),
        Rpc::ModelInfer => unary(body, grpc_infer::infer),
    }
}

fn unary<Req, Resp>(
    body: Bytes,
    rpc: impl FnOnce(Req) -> Result<Resp, ServeError>,
) -> Result<Bytes, ServeError>
where
    Req: Message + Default,
    Resp: Message,
{
    let message = grpc_frame::decode_unary(body)?;
    let request = Req::decode(message)?;
    let response = rpc(request)?;
    Ok(grpc_frame::encode(&response))
}

fn model_metadata(model: Model) -> ModelMetadataResponse {
    let tensors = |specs: &[models::TensorSpec]| {
        specs
            .iter()
            .map(|t| pb::model_metadata_response::TensorMetadata {
                name: t.name.to_owned(),
                datatype: t.datatype.to_owned(),
                shape: t.shape.to_vec(),
            })
            .collect()
    };
    ModelMetadataResponse {
        name: model.name().to_owned(),
        versions: vec![models::VERSION.to_owned()],
        platform: models::PLATFORM.to_owned(),
        inputs: tensors(model.inputs()),
        outputs: tensors(model.outputs()),
    }
}

/// 200, the framed message, then `grpc-status: 0` trailers.
fn message_response(message: Bytes) -> Response<ResponseBody> {
    let mut trailers = HeaderMap::new();
    trailers.insert("grpc-status", HeaderValue::from(Code::Ok.as_i32()));
    let frames: [Result<Frame<Bytes>, Infallible>; 2] =
        [Ok(Frame::data(message)), Ok(Frame::trailers(trailers))];
    let body = StreamBody::new(futures_util::stream::iter(frames)).boxed();
    grpc_response(body)
}

/// A trailers-only response carrying the error's status.
fn status_response(error: &ServeError) -> Response<ResponseBody> {
    let mut response = grpc_response(full(Bytes::new()));
    let headers = response.headers_mut();
    headers.insert("grpc-status", HeaderValue::from(error.grpc_code().as_i32()));
    // Percent-encoding leaves only visible ASCII, which is always a valid header value.
    if let Ok(message) = HeaderValue::try_from(grpc_frame::encode_message(&error.to_string())) {
        headers.insert("grpc-message", message);
    }
    response
}

fn grpc_response(body: ResponseBody) -> Response<ResponseBody> {
    let mut response = Response::new(body);
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static(grpc_frame::CONTENT_TYPE),
    );
    response
}
