//! gRPC caller, REST upstream: a `GRPCInferenceService` call becomes one OIP REST request, and
//! the REST answer becomes the gRPC response message (or status).
//!
//! `raw_input_contents` go upstream as binary-extension sections (slices, no copy) when the
//! upstream supports the extension, as JSON `data` otherwise (MLServer 1.7 has none). Shapes
//! are written as JSON numbers and parameters as bare values, never proto3-JSON strings and
//! wrappers (pitfall 9 of the protocol notes).

use std::collections::{HashSet, VecDeque};

use bytes::Bytes;
use http::StatusCode;
use prost::Message;
use serde::Deserialize;

use super::datatype::DataType;
use super::endpoint::{Endpoint, Rpc};
use super::error::{TranslateError, grpc_for_http};
use super::grpc_frame;
use super::json_in::{self, Budget, declared_count};
use super::json_out::{self, DataRef};
use super::pb;
use super::raw;
use super::rest_to_grpc::{BINARY_DATA_OUTPUT, split_body};
use super::tensor::{self, Sections, TensorData};

/// The REST request to send upstream.
#[derive(Debug)]
pub(crate) struct RestCall {
    pub(crate) ep: Endpoint,
    pub(crate) body: VecDeque<Bytes>,
    /// Length of the JSON header when binary sections follow it.
    pub(crate) header_len: Option<usize>,
}

/// What the response side needs to remember.
#[derive(Debug, Clone)]
pub(crate) struct GrpcPlan {
    pub(crate) ep: Endpoint,
    /// The caller sent `raw_input_contents`, so it gets `raw_output_contents` back (what
    /// MLServer and KServe do natively).
    used_raw: bool,
}

/// Decodes the gRPC message for `rpc` and builds the REST call.
pub(crate) fn request(
    rpc: Rpc,
    message: Bytes,
    upstream_binary: bool,
) -> Result<(RestCall, GrpcPlan), TranslateError> {
    let bad = |e: prost::DecodeError| {
        TranslateError::BadRequest(format!("{} request: {e}", rpc.method_name()))
    };
    let server = || Endpoint {
        rpc,
        model: String::new(),
        version: String::new(),
    };
    let (ep, body, header_len, used_raw) = match rpc {
        Rpc::ServerLive | Rpc::ServerReady | Rpc::ServerMetadata => {
            (server(), VecDeque::new(), None, false)
        }
        Rpc::ModelReady | Rpc::ModelMetadata => {
            let m = pb::ModelReadyRequest::decode(message).map_err(bad)?;
            let ep = model_endpoint(rpc, m.name, m.version)?;
            (ep, VecDeque::new(), None, false)
        }
        Rpc::ModelInfer => {
            let m = pb::ModelInferRequest::decode(message).map_err(bad)?;
            let used_raw = !m.raw_input_contents.is_empty();
            let ep = model_endpoint(rpc, m.model_name.clone(), m.model_version.clone())?;
            let (json, sections) = infer_json(&m, upstream_binary)?;
            let header_len = (!sections.is_empty()).then_some(json.len());
            let mut body = VecDeque::with_capacity(1 + sections.len());
            body.push_back(Bytes::from(json));
            body.extend(sections);
            (ep, body, header_len, used_raw)
        }
    };
    Ok((
        RestCall {
            ep: ep.clone(),
            body,
            header_len,
        },
        GrpcPlan { ep, used_raw },
    ))
}

fn model_endpoint(rpc: Rpc, model: String, version: String) -> Result<Endpoint, TranslateError> {
    // The name becomes a path segment: refuse anything that would change the path's shape.
    let unsafe_segment = |s: &str| s.contains(['/', '?', '#', '%']) || s == "." || s == "..";
    if model.is_empty() || unsafe_segment(&model) || unsafe_segment(&version) {
        return Err(TranslateError::BadRequest(format!(
            "invalid model name {model:?} or version {version:?}"
        )));
    }
    Ok(Endpoint {
        rpc,
        model,
        version,
    })
}

/// `ModelInferRequest` → REST infer JSON plus binary sections.
pub(crate) fn infer_json(
    m: &pb::ModelInferRequest,
    upstream_binary: bool,
) -> Result<(Vec<u8>, Vec<Bytes>), TranslateError> {
    let bad = TranslateError::BadRequest;
    let raw_in = &m.raw_input_contents;
    if !raw_in.is_empty() {
        if raw_in.len() != m.inputs.len() {
            return Err(bad(format!(
                "{} inputs but {} raw_input_contents",
                m.inputs.len(),
                raw_in.len()
            )));
        }
        if let Some(t) = m.inputs.iter().find(|t| t.contents.is_some()) {
            return Err(bad(format!(
                "input {:?}: contents must not be set when raw_input_contents is used",
                t.name
            )));
        }
    }
    let mut buf = Vec::with_capacity(256);
    let mut sections = Vec::new();
    buf.push(b'{');
    let mut first = true;
    if !m.id.is_empty() {
        json_out::key(&mut buf, "id", true);
        json_out::string(&mut buf, &m.id);
        first = false;
    }
    let mut params = m.parameters.clone();
    if upstream_binary && !raw_in.is_empty() {
        // Ask for binary outputs too, so tensors return without a JSON round trip.
        params.insert(
            BINARY_DATA_OUTPUT.into(),
            pb::InferParameter {
                parameter_choice: Some(pb::infer_parameter::ParameterChoice::BoolParam(true)),
            },
        );
    }
    if !params.is_empty() {
        json_out::key(&mut buf, "parameters", first);
        json_out::params(&mut buf, &params, None);
        first = false;
    }
    json_out::key(&mut buf, "inputs", first);
    buf.push(b'[');
    let empty = pb::InferTensorContents::default();
    let mut names = HashSet::new();
    for (i, t) in m.inputs.iter().enumerate() {
        let label = format!("input {:?}", t.name);
        if t.name.is_empty() || !names.insert(t.name.as_str()) {
            return Err(bad(format!("{label}: empty or duplicate tensor name")));
        }
        let dt = DataType::parse(&t.datatype)
            .ok_or_else(|| bad(format!("{label}: unknown datatype {:?}", t.datatype)))?;
        let declared = declared_count(&t.shape)
            .ok_or_else(|| bad(format!("{label}: invalid shape {:?}", t.shape)))?;
        if i > 0 {
            buf.push(b',');
        }
        let data = match raw_in.get(i) {
            Some(r) => {
                let count = raw::count(dt, r).map_err(|e| bad(format!("{label}: {e}")))?;
                if count != declared {
                    return Err(bad(format!(
                        "{label}: shape {:?} needs {declared} elements but raw data has {count}",
                        t.shape
                    )));
                }
                if upstream_binary {
                    sections.push(r.clone());
                    DataRef::Binary(r.len())
                } else if !dt.has_typed_form() {
                    return Err(bad(format!(
                        "{label}: {} needs the binary tensor extension, which the upstream does not support",
                        dt.as_str()
                    )));
                } else {
                    DataRef::Raw(r)
                }
            }
            None => {
                let c = t.contents.as_ref().unwrap_or(&empty);
                let count = raw::contents_count(dt, c);
                if count != declared {
                    return Err(bad(format!(
                        "{label}: shape {:?} needs {declared} elements but contents has {count}",
                        t.shape
                    )));
                }
                DataRef::Contents(c)
            }
        };
        json_out::tensor(&mut buf, &t.name, dt, &t.shape, &t.parameters, data)
            .map_err(|e| bad(format!("{label}: {e}")))?;
    }
    buf.push(b']');
    if !m.outputs.is_empty() {
        json_out::key(&mut buf, "outputs", false);
        buf.push(b'[');
        for (i, o) in m.outputs.iter().enumerate() {
            if i > 0 {
                buf.push(b',');
            }
            buf.push(b'{');
            json_out::key(&mut buf, "name", true);
            json_out::string(&mut buf, &o.name);
            if !o.parameters.is_empty() {
                json_out::key(&mut buf, "parameters", false);
                json_out::params(&mut buf, &o.parameters, None);
            }
            buf.push(b'}');
        }
        buf.push(b']');
    }
    buf.push(b'}');
    Ok((buf, sections))
}

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

fn infer_response(
    plan: &GrpcPlan,
    header_len: Option<&str>,
    body: Bytes,
    limit: u64,
) -> Result<VecDeque<Bytes>, TranslateError> {
    let upstream = |e: TranslateError| TranslateError::BadUpstream(e.to_string());
    let (json, tail) = split_body(body, header_len).map_err(upstream)?;
    let budget = Budget::new(limit);
    let parsed = json_in::parse_infer(&json, &budget).map_err(upstream)?;
    let mut sections = Sections::new(tail);
    let mut names = HashSet::new();
    let mut tensors = Vec::with_capacity(parsed.outputs.len());
    for (i, t) in parsed.outputs.into_iter().enumerate() {
        tensors.push(
            tensor::check("output", i, t, &mut names, &mut sections, &budget).map_err(upstream)?,
        );
    }
    sections.finish().map_err(upstream)?;
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
