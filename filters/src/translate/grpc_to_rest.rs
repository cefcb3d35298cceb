//! gRPC caller, REST upstream: a `GRPCInferenceService` call becomes one OIP REST request, and
//! the REST answer becomes the gRPC response message (or status).
//!
//! `raw_input_contents` go upstream as binary-extension sections (slices, no copy) when the
//! upstream supports the extension, as JSON `data` otherwise (MLServer 1.7 has none). Shapes
//! are written as JSON numbers and parameters as bare values, never proto3-JSON strings and
//! wrappers (pitfall 9 of the protocol notes).
//!
//! The request side is here; the answer side is in [`answer`].

use std::collections::{HashSet, VecDeque};

use bytes::Bytes;
use prost::Message;

use super::datatype::DataType;
use super::endpoint::{Endpoint, Rpc};
use super::error::TranslateError;
use super::json_in::declared_count;
use super::json_out::{self, DataRef};
use super::pb;
use super::raw;
use super::rest_to_grpc::BINARY_DATA_OUTPUT;

mod answer;

pub(crate) use self::answer::{response, rest_outputs};

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
