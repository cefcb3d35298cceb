//! The gRPC side of the answer: the REST upstream's answer becomes the gRPC response message,
//! or a status carrying the upstream's error message.

use std::collections::{HashSet, VecDeque};

use bytes::Bytes;
use http::StatusCode;
use prost::Message;
use serde::Deserialize;

use super::GrpcPlan;
use crate::translate::endpoint::Rpc;
use crate::translate::error::{TranslateError, grpc_for_http};
use crate::translate::grpc_frame;
use crate::translate::json_in::{self, Budget};
use crate::translate::pb;
use crate::translate::raw;
use crate::translate::rest_to_grpc::split_body;
use crate::translate::tensor::{self, Sections};
use crate::translate::tensor_data::TensorData;

/// The error message in a REST error body: `{"error": ...}`, FastAPI's `{"detail": ...}`, or
/// the text itself.
pub(crate) fn error_message(status: StatusCode, body: &[u8]) -> String {
    #[derive(Deserialize)]
    struct ErrorBody {
        error: Option<serde_json::Value>,
        detail: Option<serde_json::Value>,
    }
    let text = |v: serde_json::Value| match v {
        serde_json::Value::String(s) => s,
        other => other.to_string(),
    };
    match serde_json::from_slice::<ErrorBody>(body) {
        Ok(ErrorBody { error: Some(e), .. }) => text(e),
        Ok(ErrorBody {
            detail: Some(d), ..
        }) => text(d),
        _ if !body.is_empty() => {
            String::from_utf8_lossy(&body[..body.len().min(1024)]).into_owned()
        }
        _ => format!("upstream answered HTTP {status}"),
    }
}

/// Turns the REST answer into the gRPC message (framed, tensors as separate chunks).
pub(crate) fn response(
    plan: &GrpcPlan,
    status: StatusCode,
    header_len: Option<&str>,
    body: Bytes,
    limit: u64,
) -> Result<VecDeque<Bytes>, TranslateError> {
    let frame = grpc_frame::frame;
    let rpc = plan.ep.rpc;
    if matches!(rpc, Rpc::ServerLive | Rpc::ServerReady | Rpc::ModelReady) {
        let yes = status.is_success();
        // An unknown model is an error, not "not ready"; any other refusal means not ready.
        if rpc == Rpc::ModelReady && status == StatusCode::NOT_FOUND {
            return Err(upstream_error(status, &body));
        }
        return Ok(frame(match rpc {
            Rpc::ServerLive => pb::ServerLiveResponse { live: yes }.encode_to_vec(),
            Rpc::ServerReady => pb::ServerReadyResponse { ready: yes }.encode_to_vec(),
            _ => pb::ModelReadyResponse { ready: yes }.encode_to_vec(),
        }));
    }
    if !status.is_success() {
        return Err(upstream_error(status, &body));
    }
    let undecodable = |e: serde_json::Error| {
        TranslateError::BadUpstream(format!("{} answer: {e}", rpc.method_name()))
    };
    match rpc {
        Rpc::ServerMetadata => {
            #[derive(Deserialize)]
            struct Meta {
                name: Option<String>,
                version: Option<String>,
                extensions: Option<Vec<String>>,
            }
            let m: Meta = serde_json::from_slice(&body).map_err(undecodable)?;
            Ok(frame(
                pb::ServerMetadataResponse {
                    name: m.name.unwrap_or_default(),
                    version: m.version.unwrap_or_default(),
                    extensions: m.extensions.unwrap_or_default(),
                }
                .encode_to_vec(),
            ))
        }
        Rpc::ModelMetadata => {
            #[derive(Deserialize)]
            struct T {
                name: String,
                datatype: String,
                shape: Vec<i64>,
            }
            #[derive(Deserialize)]
            struct Meta {
                name: Option<String>,
                versions: Option<Vec<String>>,
                platform: Option<String>,
                inputs: Option<Vec<T>>,
                outputs: Option<Vec<T>>,
            }
            let m: Meta = serde_json::from_slice(&body).map_err(undecodable)?;
            let tensors = |list: Option<Vec<T>>| {
                list.unwrap_or_default()
                    .into_iter()
                    .map(|t| pb::model_metadata_response::TensorMetadata {
                        name: t.name,
                        datatype: t.datatype,
                        shape: t.shape,
                    })
                    .collect()
            };
            Ok(frame(
                pb::ModelMetadataResponse {
                    name: m.name.unwrap_or_else(|| plan.ep.model.clone()),
                    versions: m.versions.unwrap_or_default(),
                    platform: m.platform.unwrap_or_default(),
                    inputs: tensors(m.inputs),
                    outputs: tensors(m.outputs),
                }
                .encode_to_vec(),
            ))
        }
        _ => infer_response(plan, header_len, body, limit),
    }
}

fn upstream_error(status: StatusCode, body: &[u8]) -> TranslateError {
    TranslateError::Upstream {
        code: grpc_for_http(status),
        http: status,
        message: error_message(status, body),
    }
}

/// The header of a REST infer answer and its checked output tensors (JSON `data` or binary
/// sections), each bounded by `limit`: the one reader of REST answers, shared by gRPC → REST
/// translation and the mirror's comparison.
pub(crate) fn rest_outputs(
    header_len: Option<&str>,
    body: Bytes,
    limit: u64,
) -> Result<(json_in::InferJson, Vec<tensor::Tensor>), TranslateError> {
    let upstream = |e: TranslateError| TranslateError::BadUpstream(e.to_string());
    let (json, tail) = split_body(body, header_len).map_err(upstream)?;
    let budget = Budget::new(limit);
    let mut parsed = json_in::parse_infer(&json, &budget).map_err(upstream)?;
    let mut sections = Sections::new(tail);
    let mut names = HashSet::new();
    let outputs = std::mem::take(&mut parsed.outputs);
    let mut tensors = Vec::with_capacity(outputs.len());
    for (i, t) in outputs.into_iter().enumerate() {
        tensors.push(
            tensor::check("output", i, t, &mut names, &mut sections, &budget).map_err(upstream)?,
        );
    }
    sections.finish().map_err(upstream)?;
    Ok((parsed, tensors))
}

fn infer_response(
    plan: &GrpcPlan,
    header_len: Option<&str>,
    body: Bytes,
    limit: u64,
) -> Result<VecDeque<Bytes>, TranslateError> {
    let (parsed, tensors) = rest_outputs(header_len, body, limit)?;
    let go_raw = plan.used_raw || tensors.iter().any(|t| !t.dt.has_typed_form());
    let mut raw_out = Vec::new();
    let mut outputs = Vec::with_capacity(tensors.len());
    for t in tensors {
        let contents = match (t.data, go_raw) {
            // Decoded FP32 bytes are already the raw form.
            (TensorData::Raw(r) | TensorData::Fp32Le(r), true) => {
                raw_out.push(r);
                None
            }
            (TensorData::Typed(c), true) => {
                raw_out.push(raw::encode(t.dt, &c));
                None
            }
            (TensorData::Typed(c), false) => Some(c),
            // Answers are read whole, so their sections are never still arriving.
            (TensorData::Pending(_), _) => {
                return Err(TranslateError::BadUpstream(format!(
                    "output {:?}: binary section missing from the answer",
                    t.name
                )));
            }
            (TensorData::Raw(r) | TensorData::Fp32Le(r), false) => {
                Some(raw::decode(t.dt, &r).map_err(|e| {
                    TranslateError::BadUpstream(format!("output {:?}: {e}", t.name))
                })?)
            }
        };
        outputs.push(pb::model_infer_response::InferOutputTensor {
            name: t.name,
            datatype: t.dt.as_str().to_owned(),
            shape: t.shape,
            parameters: t.parameters,
            contents,
        });
    }
    let msg = pb::ModelInferResponse {
        model_name: parsed.model_name.unwrap_or_else(|| plan.ep.model.clone()),
        model_version: parsed.model_version.unwrap_or_default(),
        id: parsed.id.unwrap_or_default(),
        parameters: parsed.parameters,
        outputs,
        raw_output_contents: Vec::new(),
    };
    Ok(grpc_frame::encode_with_raw(&msg, 6, &raw_out))
}
