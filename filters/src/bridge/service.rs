//! One bridged call: which endpoint the caller asked for, the upstream request it becomes, and
//! the caller's answer built from the upstream's.

use bytes::Bytes;
use http::header::{CONTENT_LENGTH, CONTENT_TYPE, HeaderMap, HeaderValue};
use http::{Method, Request, Response, StatusCode, Uri};
use http_body_util::BodyExt;
use http_body_util::Full;

use super::oip_to_v1::{self, OipCall};
use super::v1_to_oip::{self, V1Format};
use super::{BridgeDirection, BridgeSettings, TensorSig};
use crate::translate::{
    BoxError, Endpoint, INFERENCE_HEADER_CONTENT_LENGTH, Rpc, TranslateBody, TranslateError, code,
    collect, grpc_for_http, split_body,
};

/// What the caller asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Op {
    /// An inference call.
    Infer(Model),
    /// OIP model metadata (OIP callers).
    Metadata(Model),
    /// OIP model readiness (OIP callers).
    Ready(Model),
    /// V1 model status (V1 callers).
    Status(Model),
}

/// The model a call addresses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Model {
    pub(crate) name: String,
    pub(crate) version: Option<String>,
}

/// What the answer half needs.
#[derive(Debug)]
pub(crate) enum Pending {
    OipInfer(OipCall),
    V1Infer(V1Format),
    Metadata(Model),
    Ready(Model),
    Status(Model),
}

// === impl Op ===

impl Op {
    /// The endpoint of a request the route's callers send; `None` for anything else.
    pub(crate) fn of(direction: BridgeDirection, method: &Method, path: &str) -> Option<Op> {
        match direction {
            BridgeDirection::OipRestToKserveV1 => {
                let ep = Endpoint::from_rest(method, path)?;
                let model = Model {
                    version: Some(ep.version).filter(|v| !v.is_empty()),
                    name: ep.model,
                };
                match ep.rpc {
                    Rpc::ModelInfer => Some(Op::Infer(model)),
                    Rpc::ModelMetadata => Some(Op::Metadata(model)),
                    Rpc::ModelReady => Some(Op::Ready(model)),
                    Rpc::ServerLive | Rpc::ServerReady | Rpc::ServerMetadata => None,
                }
            }
            // Answered by the `torchserve` module before any `Op` is made.
            BridgeDirection::OipToTorchserve(_) => None,
            BridgeDirection::KserveV1ToOipRest => {
                let rest = path.strip_prefix("/v1/models/")?;
                let (target, verb) = match rest.rsplit_once(':') {
                    Some((t, v)) => (t, Some(v)),
                    None => (rest, None),
                };
                let model = match target.split('/').collect::<Vec<_>>().as_slice() {
                    [m] if !m.is_empty() => Model {
                        name: (*m).to_owned(),
                        version: None,
                    },
                    [m, "versions", v] if !m.is_empty() && !v.is_empty() => Model {
                        name: (*m).to_owned(),
                        version: Some((*v).to_owned()),
                    },
                    _ => return None,
                };
                match (verb, method) {
                    (Some("predict"), &Method::POST) => Some(Op::Infer(model)),
                    (None, &Method::GET) => Some(Op::Status(model)),
                    _ => None,
                }
            }
        }
    }
}

// === impl Model ===

impl Model {
    fn v1_path(&self) -> String {
        match &self.version {
            Some(v) => format!("/v1/models/{}/versions/{v}", self.name),
            None => format!("/v1/models/{}", self.name),
        }
    }

    fn v2_path(&self) -> String {
        match &self.version {
            Some(v) => format!("/v2/models/{}/versions/{v}", self.name),
            None => format!("/v2/models/{}", self.name),
        }
    }
}

/// The upstream request for `op`, and what its answer needs.
pub(crate) async fn request(
    settings: &BridgeSettings,
    op: Op,
    req: Request<TranslateBody>,
) -> Result<(Request<TranslateBody>, Pending), TranslateError> {
    let limit = settings.max_decoded_bytes.0;
    let sig = &settings.signature;
    let (parts, body) = req.into_parts();
    let (method, path, body, pending) = match op {
        Op::Infer(model) => {
            let (bytes, _) = collect(body, limit).await?;
            match settings.direction {
                BridgeDirection::OipRestToKserveV1 => {
                    let (json, tail) = split_body(bytes, header_len(&parts.headers))?;
                    let mut call = OipCall {
                        model: model.name.clone(),
                        version: model.version.clone(),
                        ..OipCall::default()
                    };
                    let out = oip_to_v1::request_binary(sig, &json, &tail, &mut call, limit)?;
                    let path = format!("{}:predict", model.v1_path());
                    (Method::POST, path, Some(out), Pending::OipInfer(call))
                }
                BridgeDirection::OipToTorchserve(_) => {
                    return Err(TranslateError::NoEndpoint(
                        "a torchserve bridge has its own request path".to_owned(),
                    ));
                }
                BridgeDirection::KserveV1ToOipRest => {
                    let (out, format) = v1_to_oip::request(sig, &bytes, limit)?;
                    let path = format!("{}/infer", model.v2_path());
                    (Method::POST, path, Some(out), Pending::V1Infer(format))
                }
            }
        }
        Op::Metadata(m) => (Method::GET, m.v1_path(), None, Pending::Metadata(m)),
        Op::Ready(m) => (Method::GET, m.v1_path(), None, Pending::Ready(m)),
        Op::Status(m) => (
            Method::GET,
            format!("{}/ready", m.v2_path()),
            None,
            Pending::Status(m),
        ),
    };
    let mut parts = parts;
    let mut uri = parts.uri.into_parts();
    uri.path_and_query = Some(path.parse().map_err(|_| {
        TranslateError::BadRequest(format!("model name not usable in a path: {path:?}"))
    })?);
    parts.uri = Uri::from_parts(uri)
        .map_err(|e| TranslateError::BadRequest(format!("request target: {e}")))?;
    parts.method = method;
    strip_body_headers(&mut parts.headers);
    let body = match body {
        Some(b) => {
            parts
                .headers
                .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
            parts
                .headers
                .insert(CONTENT_LENGTH, HeaderValue::from(b.len()));
            full(Bytes::from(b))
        }
        None => full(Bytes::new()),
    };
    Ok((Request::from_parts(parts, body), pending))
}

/// The caller's answer from the upstream's.
pub(crate) async fn response(
    settings: &BridgeSettings,
    pending: Pending,
    resp: Response<TranslateBody>,
) -> Result<Response<TranslateBody>, TranslateError> {
    let limit = settings.max_decoded_bytes.0;
    let (mut parts, body) = resp.into_parts();
    let upstream_fault = |e| match e {
        TranslateError::BadRequest(m) => TranslateError::BadUpstream(m),
        other => other,
    };
    let (bytes, _) = collect(body, limit).await.map_err(upstream_fault)?;
    let status = parts.status;
    let ok = status.is_success();
    let out = match pending {
        _ if !ok && !matches!(pending, Pending::Status(_) | Pending::Ready(_)) => {
            return Err(upstream_error(status, &bytes));
        }
        Pending::OipInfer(call) => {
            let answer = oip_to_v1::answer_parts(&settings.signature, &call, &bytes, limit)?;
            parts.status = StatusCode::OK;
            strip_body_headers(&mut parts.headers);
            let body = answer.into_body(&mut parts.headers);
            return Ok(Response::from_parts(parts, body));
        }
        Pending::V1Infer(format) => {
            let (json, tail) =
                split_body(bytes, header_len(&parts.headers)).map_err(upstream_fault)?;
            v1_to_oip::answer_binary(&json, &tail, format, limit)?
        }
        Pending::Metadata(m) => metadata(&m, &settings.signature),
        Pending::Ready(m) | Pending::Status(m) => {
            if status == StatusCode::NOT_FOUND {
                return Err(upstream_error(status, &bytes));
            }
            if !ok || !v1_ready(&bytes) {
                return Err(TranslateError::Upstream {
                    code: code::UNAVAILABLE,
                    http: StatusCode::SERVICE_UNAVAILABLE,
                    message: format!("model {:?} is not ready", m.name),
                });
            }
            serde_json::to_vec(&serde_json::json!({ "name": m.name, "ready": true }))
                .unwrap_or_default()
        }
    };
    parts.status = StatusCode::OK;
    strip_body_headers(&mut parts.headers);
    parts
        .headers
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    parts
        .headers
        .insert(CONTENT_LENGTH, HeaderValue::from(out.len()));
    Ok(Response::from_parts(parts, full(Bytes::from(out))))
}

/// Whether a `GET /v1/models/{m}` (or v2 ready) body says ready: KServe's `{"ready": bool}`,
/// TF Serving's `model_version_status[].state == "AVAILABLE"`, or nothing to say (ready).
fn v1_ready(body: &[u8]) -> bool {
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(body) else {
        return true;
    };
    if let Some(r) = v.get("ready").and_then(serde_json::Value::as_bool) {
        return r;
    }
    match v
        .get("model_version_status")
        .and_then(serde_json::Value::as_array)
    {
        Some(list) => list
            .iter()
            .any(|s| s.get("state").and_then(serde_json::Value::as_str) == Some("AVAILABLE")),
        None => true,
    }
}

/// OIP model metadata from the signature.
fn metadata(m: &Model, sig: &super::Signature) -> Vec<u8> {
    let tensors = |ts: &[TensorSig]| -> serde_json::Value {
        ts.iter()
            .map(|t| serde_json::json!({"name": t.name, "datatype": t.datatype.as_str(), "shape": t.shape}))
            .collect()
    };
    let mut v = serde_json::json!({
        "name": m.name,
        "platform": "kserve-v1",
        "inputs": tensors(&sig.inputs),
        "outputs": tensors(&sig.outputs),
    });
    if let Some(version) = &m.version {
        v["versions"] = serde_json::json!([version]);
    }
    serde_json::to_vec(&v).unwrap_or_default()
}

/// An upstream error answer in the caller's terms: unknown model 404, bad input 400, the
/// rest as the upstream said; the message from `{"error": ...}` (or FastAPI's `detail`).
pub(crate) fn upstream_error(status: StatusCode, body: &[u8]) -> TranslateError {
    let json = serde_json::from_slice::<serde_json::Value>(body).ok();
    let message = json
        .as_ref()
        .and_then(|v| v.get("error").or_else(|| v.get("detail")))
        .map(|e| match e.as_str() {
            Some(s) => s.to_owned(),
            None => e.to_string(),
        })
        .unwrap_or_else(|| {
            let text = String::from_utf8_lossy(body.get(..body.len().min(512)).unwrap_or_default());
            text.trim().to_owned()
        });
    let message = if message.is_empty() {
        format!("upstream answered {status}")
    } else {
        message
    };
    let (http, code) = match status.as_u16() {
        404 => (StatusCode::NOT_FOUND, code::NOT_FOUND),
        400 | 422 => (StatusCode::BAD_REQUEST, code::INVALID_ARGUMENT),
        _ => (status, grpc_for_http(status)),
    };
    TranslateError::Upstream {
        code,
        http,
        message,
    }
}

/// The binary extension's `Inference-Header-Content-Length`, if any.
pub(crate) fn header_len(h: &HeaderMap) -> Option<&str> {
    h.get(INFERENCE_HEADER_CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
}

pub(crate) fn full(b: Bytes) -> TranslateBody {
    Full::new(b)
        .map_err(|never| -> BoxError { match never {} })
        .boxed_unsync()
}

/// Headers that describe the old body and must not cross the bridge.
pub(crate) fn strip_body_headers(h: &mut HeaderMap) {
    for name in [
        "content-length",
        "content-type",
        "content-encoding",
        "transfer-encoding",
        "inference-header-content-length",
    ] {
        h.remove(name);
    }
}
