//! The OIP REST API: health, server and model metadata, model readiness and inference (the
//! JSON form; the binary tensor extension is not offered, so `extensions` is empty).

use http::{Method, Request, Response, StatusCode, header};
use hyper::body::Incoming;
use serde::Serialize;
use serde_json::json;

use super::error::ServeError;
use super::models::{self, Model, TensorSpec};
use super::{ResponseBody, full, read_body, rest_infer};

/// What a REST path addresses.
enum Endpoint<'a> {
    Live,
    Ready,
    ServerMetadata,
    ModelMetadata(&'a str, Option<&'a str>),
    ModelReady(&'a str, Option<&'a str>),
    Infer(&'a str, Option<&'a str>),
}

/// `{"name","datatype","shape"}` in model metadata.
#[derive(Serialize)]
struct TensorMetadata {
    name: &'static str,
    datatype: &'static str,
    shape: &'static [i64],
}

/// Answers one REST request; errors become `{"error": "..."}` with the mapped status.
pub(super) async fn handle(request: Request<Incoming>) -> Response<ResponseBody> {
    let (parts, body) = request.into_parts();
    let result = match parse(&parts.method, parts.uri.path()) {
        Some(Endpoint::Live) => Ok(json!({ "live": true })),
        Some(Endpoint::Ready) => Ok(json!({ "ready": true })),
        Some(Endpoint::ServerMetadata) => Ok(json!({
            "name": models::SERVER_NAME,
            "version": env!("CARGO_PKG_VERSION"),
            "extensions": [],
        })),
        Some(Endpoint::ModelMetadata(name, version)) => {
            Model::lookup(name, version).map(model_metadata)
        }
        Some(Endpoint::ModelReady(name, version)) => {
            Model::lookup(name, version).map(|m| json!({ "name": m.name(), "ready": true }))
        }
        Some(Endpoint::Infer(name, version)) => match Model::lookup(name, version) {
            Ok(model) => match read_body(body).await {
                Ok(bytes) => rest_infer::infer(model, &bytes),
                Err(error) => Err(error),
            },
            Err(error) => Err(error),
        },
        None => Err(ServeError::NoEndpoint {
            method: parts.method.clone(),
            path: parts.uri.path().to_owned(),
        }),
    };
    match result {
        Ok(value) => json_response(StatusCode::OK, &value),
        Err(error) => {
            tracing::debug!(%error, "demo model server REST request refused");
            json_response(error.http_status(), &json!({ "error": error.to_string() }))
        }
    }
}

/// Maps method and path to an endpoint; `None` for anything the API does not have.
fn parse<'a>(method: &Method, path: &'a str) -> Option<Endpoint<'a>> {
    let get = method == Method::GET;
    match path {
        "/v2/health/live" if get => return Some(Endpoint::Live),
        "/v2/health/ready" if get => return Some(Endpoint::Ready),
        "/v2" if get => return Some(Endpoint::ServerMetadata),
        _ => {}
    }
    let rest = path.strip_prefix("/v2/models/")?;
    let segments: Vec<&str> = rest.split('/').collect();
    let (name, version, action) = match segments.as_slice() {
        [name, "versions", version, action @ ..] => (*name, Some(*version), action),
        [name, action @ ..] => (*name, None, action),
        [] => return None,
    };
    if name.is_empty() || version.is_some_and(str::is_empty) {
        return None;
    }
    match (action, method) {
        ([], &Method::GET) => Some(Endpoint::ModelMetadata(name, version)),
        (["ready"], &Method::GET) => Some(Endpoint::ModelReady(name, version)),
        (["infer"], &Method::POST) => Some(Endpoint::Infer(name, version)),
        _ => None,
    }
}

fn model_metadata(model: Model) -> serde_json::Value {
    let tensors = |specs: &[TensorSpec]| -> Vec<TensorMetadata> {
        specs
            .iter()
            .map(|t| TensorMetadata {
                name: t.name,
                datatype: t.datatype,
                shape: t.shape,
            })
            .collect()
    };
    json!({
        "name": model.name(),
        "versions": [models::VERSION],
        "platform": models::PLATFORM,
        "inputs": tensors(model.inputs()),
        "outputs": tensors(model.outputs()),
    })
}

/// A JSON response; serialising a `Value` cannot fail, but if it ever did the caller still
/// gets a well-formed 500 rather than a dropped connection.
pub(super) fn json_response(status: StatusCode, value: &impl Serialize) -> Response<ResponseBody> {
    let (status, body) = match serde_json::to_vec(value) {
        Ok(body) => (status, body),
        Err(_) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            br#"{"error":"response serialisation failed"}"#.to_vec(),
        ),
    };
    let mut response = Response::new(full(body));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    response
}
