//! TorchServe's answers as the OIP caller's: the handler's output typed by the signature's
//! outputs (JSON, or the one raw / npy array the payload says), TorchServe's ping as health
//! and metadata, and its errors mapped to the caller's status.
//!
//! TorchServe sends no Content-Type with a prediction (protocol pitfall 4), so the route's
//! payload says how to read it; an answer declared `application/json` is read as JSON whatever
//! the payload, so a handler may take npy in and answer JSON.

use bytes::Bytes;
use http::header::CONTENT_TYPE;
use http::{Response, StatusCode};

use super::super::elem::from_raw;
use super::super::nested::{Tensor, fits};
use super::super::oip_answer::write_answer;
use super::super::oip_to_v1::{OipCall, answer_bare};
use super::super::service::strip_body_headers;
use super::super::{BridgeSettings, Signature, TensorSig};
use super::payload::{raw_shape, read_npy};
use super::request::Pending;
use super::{Payload, TorchserveApi, TorchserveTarget, wire};
use crate::translate::{
    RestAnswer, Rpc, TranslateBody, TranslateError, code, collect, grpc_for_http, grpc_status,
    http_for_grpc,
};

/// The caller's answer from TorchServe's.
pub(crate) async fn response(
    settings: &BridgeSettings,
    target: TorchserveTarget,
    pending: Pending,
    resp: Response<TranslateBody>,
) -> Result<Response<TranslateBody>, TranslateError> {
    let limit = settings.max_decoded_bytes.0;
    let (mut parts, body) = resp.into_parts();
    let (bytes, trailers) = collect(body, limit).await.map_err(|e| match e {
        TranslateError::BadRequest(m) => TranslateError::BadUpstream(m),
        other => other,
    })?;
    let json_declared = parts
        .headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.starts_with("application/json"));
    let message = match target.api {
        TorchserveApi::Rest => {
            // A failed ping (TorchServe answers 500 `{"status": "Unhealthy"}`) is read as
            // health below, not as an error.
            if !parts.status.is_success() && pending.rpc == Rpc::ModelInfer {
                return Err(rest_error(parts.status, &bytes));
            }
            bytes
        }
        TorchserveApi::Grpc => {
            let status = trailers
                .as_ref()
                .and_then(grpc_status)
                .or_else(|| grpc_status(&parts.headers));
            match status {
                Some((code::OK, _)) => {}
                Some((c, m)) => return Err(grpc_error(c, &m)),
                None if !parts.status.is_success() => {
                    return Err(TranslateError::Upstream {
                        code: grpc_for_http(parts.status),
                        http: StatusCode::BAD_GATEWAY,
                        message: format!("torchserve-grpc answered HTTP {}", parts.status),
                    });
                }
                None => {
                    return Err(TranslateError::BadUpstream(
                        "torchserve-grpc answer has no grpc-status".to_owned(),
                    ));
                }
            }
            let msg = crate::translate::grpc_frame::unframe(&bytes)
                .map_err(TranslateError::BadUpstream)?;
            let decoded = if pending.rpc == Rpc::ModelInfer {
                wire::prediction(msg)
            } else {
                wire::health(msg).map(Bytes::from)
            };
            decoded.map_err(TranslateError::BadUpstream)?
        }
    };
    let sig = &settings.signature;
    let answer = match pending.rpc {
        Rpc::ModelInfer => {
            let payload = if json_declared {
                Payload::Json
            } else {
                target.payload
            };
            infer_answer(sig, &pending.call, payload, &message, limit)?
        }
        rpc => {
            let (status, json) = health_answer(rpc, &pending.call, sig, &message)?;
            RestAnswer {
                status,
                json,
                sections: Vec::new(),
            }
        }
    };
    parts.status = answer.status;
    strip_body_headers(&mut parts.headers);
    for name in [
        "grpc-status",
        "grpc-message",
        "grpc-encoding",
        "grpc-accept-encoding",
    ] {
        parts.headers.remove(name);
    }
    let body = answer.into_body(&mut parts.headers);
    Ok(Response::from_parts(parts, body))
}

/// The handler's answer → the OIP infer answer.
pub(crate) fn infer_answer(
    sig: &Signature,
    call: &OipCall,
    payload: Payload,
    body: &[u8],
    limit: u64,
) -> Result<RestAnswer, TranslateError> {
    if payload == Payload::Json {
        return answer_bare(sig, call, body, limit);
    }
    let bad = TranslateError::BadUpstream;
    // Config validation allows one output with raw and npy.
    let [want] = sig.outputs.as_slice() else {
        return Err(bad(
            "a raw or npy answer needs exactly one output".to_owned()
        ));
    };
    let fault = |m: String| bad(format!("output {:?}: {m}", want.name));
    let (shape, data) = if payload == Payload::Npy {
        let a = read_npy(body, want.datatype).map_err(fault)?;
        (a.shape, a.data)
    } else {
        (
            raw_shape(body.len(), want.datatype, &want.shape).map_err(fault)?,
            body,
        )
    };
    if !fits(&shape, &want.shape) {
        return Err(fault(format!(
            "shape {shape:?} does not fit the signature's {:?}",
            want.shape
        )));
    }
    let wanted = call
        .requested
        .as_ref()
        .is_none_or(|r| r.contains(&want.name));
    let mut outputs = Vec::new();
    if wanted {
        let elems = from_raw(want.datatype, data).map_err(fault)?;
        let t = Tensor {
            shape,
            elems,
            raw: Some(data),
            src: &[],
        };
        outputs.push((want, t));
    }
    write_answer(call, &outputs).map_err(bad)
}

/// A health or metadata answer from TorchServe's ping (`{"status": "Healthy"}`). Not healthy:
/// liveness and readiness answer 503 with `{"error"}` (which a gRPC caller, through the OIP
/// translator, reads as `live`/`ready: false`); metadata is 503 / UNAVAILABLE.
pub(crate) fn health_answer(
    rpc: Rpc,
    call: &OipCall,
    sig: &Signature,
    ping: &[u8],
) -> Result<(StatusCode, Vec<u8>), TranslateError> {
    let status = serde_json::from_slice::<serde_json::Value>(ping)
        .ok()
        .and_then(|v| v.get("status").and_then(|s| s.as_str()).map(str::to_owned))
        .unwrap_or_else(|| String::from_utf8_lossy(ping).trim().to_owned());
    if status != "Healthy" {
        let message = format!("torchserve is not healthy: {status:?}");
        if matches!(rpc, Rpc::ServerLive | Rpc::ServerReady | Rpc::ModelReady) {
            let body = serde_json::to_vec(&serde_json::json!({ "error": message }));
            return Ok((StatusCode::SERVICE_UNAVAILABLE, body.unwrap_or_default()));
        }
        return Err(TranslateError::Upstream {
            code: code::UNAVAILABLE,
            http: StatusCode::SERVICE_UNAVAILABLE,
            message,
        });
    }
    let tensors = |ts: &[TensorSig]| -> serde_json::Value {
        ts.iter()
            .map(|t| serde_json::json!({"name": t.name, "datatype": t.datatype.as_str(), "shape": t.shape}))
            .collect()
    };
    let v = match rpc {
        Rpc::ServerLive => serde_json::json!({ "live": true }),
        Rpc::ServerReady => serde_json::json!({ "ready": true }),
        Rpc::ServerMetadata => {
            serde_json::json!({ "name": "ferry-torchserve-bridge", "version": env!("CARGO_PKG_VERSION"), "extensions": ["binary_tensor_data"] })
        }
        Rpc::ModelReady => serde_json::json!({ "name": call.model, "ready": true }),
        Rpc::ModelMetadata | Rpc::ModelInfer => {
            let mut v = serde_json::json!({
                "name": call.model,
                "platform": "torchserve",
                "inputs": tensors(&sig.inputs),
                "outputs": tensors(&sig.outputs),
            });
            if let Some(version) = &call.version {
                v["versions"] = serde_json::json!([version]);
            }
            v
        }
    };
    Ok((StatusCode::OK, serde_json::to_vec(&v).unwrap_or_default()))
}

/// A TorchServe REST error (`{"code","type","message"}`) in the caller's terms. TorchServe
/// answers a handler failure 503 `InternalServerException`; that is the model failing, not
/// the server being unavailable, so the caller gets 500 / INTERNAL.
pub(crate) fn rest_error(status: StatusCode, body: &[u8]) -> TranslateError {
    let json = serde_json::from_slice::<serde_json::Value>(body).ok();
    let field = |k: &str| {
        json.as_ref()
            .and_then(|v| v.get(k))
            .and_then(|v| v.as_str())
            .unwrap_or_default()
            .to_owned()
    };
    let kind = field("type");
    let mut message = field("message");
    if message.is_empty() {
        let text = String::from_utf8_lossy(body.get(..body.len().min(512)).unwrap_or_default());
        message = text.trim().to_owned();
    }
    if message.is_empty() {
        message = format!("torchserve answered {status}");
    }
    let (http, code) = match (status.as_u16(), kind.as_str()) {
        (404, _) | (_, "ModelNotFoundException" | "ModelVersionNotFoundException") => {
            (StatusCode::NOT_FOUND, code::NOT_FOUND)
        }
        (400, _) | (_, "BadRequestException") => (StatusCode::BAD_REQUEST, code::INVALID_ARGUMENT),
        (_, "InternalServerException") => (StatusCode::INTERNAL_SERVER_ERROR, code::INTERNAL),
        (503, _) | (_, "ServiceUnavailableException") => {
            (StatusCode::SERVICE_UNAVAILABLE, code::UNAVAILABLE)
        }
        _ => (status, grpc_for_http(status)),
    };
    TranslateError::Upstream {
        code,
        http,
        message,
    }
}

/// A TorchServe gRPC error in the caller's terms. TorchServe answers an unknown model
/// INTERNAL with "Model not found: m\n...ModelNotFoundException" (protocol pitfall table): that
/// is NOT_FOUND; a failing handler INTERNAL. The Java exception line is dropped from the
/// message.
pub(crate) fn grpc_error(grpc: u32, message: &str) -> TranslateError {
    let first = message.lines().next().unwrap_or_default().trim().to_owned();
    let not_found = message.contains("ModelNotFoundException")
        || message.contains("ModelVersionNotFoundException")
        || first.starts_with("Model not found");
    // A failing handler is UNAVAILABLE with "Prediction failed" (its REST twin is 503
    // `InternalServerException`): the model failed, the server is there.
    let handler_failed =
        message.contains("InternalServerException") || first == "Prediction failed";
    let code = if not_found {
        code::NOT_FOUND
    } else if handler_failed {
        code::INTERNAL
    } else {
        grpc
    };
    TranslateError::Upstream {
        code,
        http: http_for_grpc(code),
        message: if first.is_empty() {
            format!("torchserve-grpc answered status {grpc}")
        } else {
            first
        },
    }
}
