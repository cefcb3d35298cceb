//! REST caller, gRPC upstream: an OIP REST request becomes one `GRPCInferenceService` call, and
//! the call's answer becomes the REST response the caller asked for (JSON `data` or binary
//! sections).

use std::collections::{HashSet, VecDeque};

use bytes::Bytes;
use prost::Message;
use serde_json::json;

use super::answer_stream::{self, AnswerStream, StartedAnswer, StreamBody};
use super::datatype::DataType;
use super::endpoint::{Endpoint, Rpc};
use super::error::TranslateError;
use super::grpc_frame;
use super::json_in::{self, Budget};
use super::json_out::{self, DataRef};
use super::pb;
use super::raw;
use super::tensor::{self, RawInput, Sections, TensorData};

/// The binary extension's request-level "all outputs binary" parameter.
pub(crate) const BINARY_DATA_OUTPUT: &str = "binary_data_output";
/// The binary extension's per-output parameter.
pub(crate) const BINARY_DATA: &str = "binary_data";

/// How the caller wants infer outputs back.
#[derive(Debug, Default, Clone)]
pub(crate) struct OutputPlan {
    binary_default: bool,
    per_output: Vec<(String, bool)>,
}

/// A REST response ready to send: JSON header plus binary sections.
#[derive(Debug)]
pub(crate) struct RestAnswer {
    pub(crate) status: http::StatusCode,
    pub(crate) json: Vec<u8>,
    pub(crate) sections: Vec<Bytes>,
}

// === impl OutputPlan ===

impl OutputPlan {
    /// A plan asking every output in one form (tests).
    #[cfg(test)]
    pub(crate) fn all(binary: bool) -> Self {
        OutputPlan {
            binary_default: binary,
            per_output: Vec::new(),
        }
    }

    fn binary_for(&self, name: &str) -> bool {
        self.per_output
            .iter()
            .find(|(n, _)| n == name)
            .map_or(self.binary_default, |(_, b)| *b)
    }
}

/// Builds the gRPC request body (framed) for a REST request.
pub(crate) fn request(
    ep: &Endpoint,
    body: Bytes,
    header_len: Option<&str>,
    limit: u64,
) -> Result<(VecDeque<Bytes>, OutputPlan), TranslateError> {
    let frame = |m: &dyn Fn() -> Vec<u8>| grpc_frame::frame(m());
    let model = || pb::ModelReadyRequest {
        name: ep.model.clone(),
        version: ep.version.clone(),
    };
    Ok(match ep.rpc {
        Rpc::ServerLive => (
            frame(&|| pb::ServerLiveRequest {}.encode_to_vec()),
            OutputPlan::default(),
        ),
        Rpc::ServerReady => (
            frame(&|| pb::ServerReadyRequest {}.encode_to_vec()),
            OutputPlan::default(),
        ),
        Rpc::ServerMetadata => (
            frame(&|| pb::ServerMetadataRequest {}.encode_to_vec()),
            OutputPlan::default(),
        ),
        // ModelReadyRequest and ModelMetadataRequest are the same two fields.
        Rpc::ModelReady | Rpc::ModelMetadata => {
            (frame(&|| model().encode_to_vec()), OutputPlan::default())
        }
        Rpc::ModelInfer => {
            let (msg, fp32, raw, plan) = infer_request(ep, body, header_len, limit)?;
            (grpc_frame::encode_infer_request(msg, &fp32, &raw), plan)
        }
    })
}

/// Splits a binary-extension body into its JSON header and the sections after it.
pub(crate) fn split_body(
    body: Bytes,
    header_len: Option<&str>,
) -> Result<(Bytes, Bytes), TranslateError> {
    let Some(text) = header_len else {
        return Ok((body, Bytes::new()));
    };
    let n = text
        .trim()
        .parse::<u64>()
        .ok()
        .and_then(|n| usize::try_from(n).ok())
        .filter(|&n| n <= body.len())
        .ok_or_else(|| {
            TranslateError::BadRequest(format!(
                "Inference-Header-Content-Length {text:?} is not a length within the {}-byte body",
                body.len()
            ))
        })?;
    Ok((body.slice(..n), body.slice(n..)))
}

/// The parts of a translated infer request: the message; per input, the FP32 values that go in
/// its `contents` as the packed field's little-endian bytes (the input's `contents` is then
/// `None`); the raw tensors; and how the caller wants outputs back.
type InferRequestParts<R = Bytes> = (
    pb::ModelInferRequest,
    Vec<Option<Bytes>>,
    Vec<R>,
    OutputPlan,
);

/// REST infer JSON (+ binary sections) → `ModelInferRequest`, its packed FP32 inputs and its
/// raw tensors.
pub(crate) fn infer_request(
    ep: &Endpoint,
    body: Bytes,
    header_len: Option<&str>,
    limit: u64,
) -> Result<InferRequestParts, TranslateError> {
    let (json, tail) = split_body(body, header_len)?;
    let budget = Budget::new(limit);
    let parsed = json_in::parse_infer(&json, &budget)?;
    let (msg, fp32, raw, plan) = infer_parts(ep, parsed, Sections::new(tail), &budget)?;
    Ok((msg, fp32, RawInput::all_ready(raw)?, plan))
}

/// Parsed infer JSON plus its binary sections (received, or only declared while they are
/// still arriving) → `ModelInferRequest`, its packed FP32 inputs and its raw tensors.
pub(crate) fn infer_parts(
    ep: &Endpoint,
    parsed: json_in::InferJson,
    mut sections: Sections,
    budget: &Budget,
) -> Result<InferRequestParts<RawInput>, TranslateError> {
    let mut parameters = parsed.parameters;
    let binary_default =
        tensor::take_flag(&mut parameters, BINARY_DATA_OUTPUT, "request")?.unwrap_or(false);
    let mut names = HashSet::new();
    let mut tensors = Vec::with_capacity(parsed.inputs.len());
    for (i, t) in parsed.inputs.into_iter().enumerate() {
        tensors.push(tensor::check(
            "input",
            i,
            t,
            &mut names,
            &mut sections,
            budget,
        )?);
    }
    sections.finish()?;
    // raw_input_contents is all-or-nothing: once one input is raw, every input goes raw.
    let any_raw = tensors
        .iter()
        .any(|t| matches!(t.data, TensorData::Raw(_) | TensorData::Pending(_)));
    let mut raw_inputs = Vec::new();
    let mut inputs = Vec::with_capacity(tensors.len());
    let mut fp32 = Vec::with_capacity(tensors.len());
    for t in tensors {
        let mut packed = None;
        let contents = match t.data {
            TensorData::Fp32Le(r) if !any_raw => {
                packed = Some(r);
                None
            }
            // Decoded FP32 bytes are already the raw form.
            TensorData::Raw(r) | TensorData::Fp32Le(r) => {
                raw_inputs.push(RawInput::Ready(r));
                None
            }
            TensorData::Pending(n) => {
                raw_inputs.push(RawInput::Body(n));
                None
            }
            TensorData::Typed(c) if any_raw => {
                raw_inputs.push(RawInput::Ready(raw::encode(t.dt, &c)));
                None
            }
            TensorData::Typed(c) => Some(c),
        };
        fp32.push(packed);
        inputs.push(pb::model_infer_request::InferInputTensor {
            name: t.name,
            datatype: t.dt.as_str().to_owned(),
            shape: t.shape,
            parameters: t.parameters,
            contents,
        });
    }
    let mut plan = OutputPlan {
        binary_default,
        per_output: Vec::new(),
    };
    let mut outputs = Vec::with_capacity(parsed.outputs.len());
    let mut out_names = HashSet::new();
    for (i, o) in parsed.outputs.into_iter().enumerate() {
        let name = o.name.filter(|n| !n.is_empty()).ok_or_else(|| {
            TranslateError::BadRequest(format!("requested output {i} has no name"))
        })?;
        if !out_names.insert(name.clone()) {
            return Err(TranslateError::BadRequest(format!(
                "requested output {name:?}: duplicate name"
            )));
        }
        let mut params = o.parameters;
        let label = format!("requested output {name:?}");
        if let Some(b) = tensor::take_flag(&mut params, BINARY_DATA, &label)? {
            plan.per_output.push((name.clone(), b));
        }
        outputs.push(pb::model_infer_request::InferRequestedOutputTensor {
            name,
            parameters: params,
        });
    }
    let msg = pb::ModelInferRequest {
        model_name: ep.model.clone(),
        model_version: ep.version.clone(),
        id: parsed.id.unwrap_or_default(),
        parameters,
        inputs,
        outputs,
        raw_input_contents: Vec::new(),
    };
    Ok((msg, fp32, raw_inputs, plan))
}

/// Turns a successful gRPC answer into the REST response.
pub(crate) fn response(
    ep: &Endpoint,
    message: Bytes,
    plan: &OutputPlan,
) -> Result<InferAnswer, TranslateError> {
    let undecodable = |e: prost::DecodeError| {
        TranslateError::BadUpstream(format!("{} response: {e}", ep.rpc.method_name()))
    };
    let ok = |value: serde_json::Value, good: bool| RestAnswer {
        status: if good {
            http::StatusCode::OK
        } else {
            http::StatusCode::SERVICE_UNAVAILABLE
        },
        json: value.to_string().into_bytes(),
        sections: Vec::new(),
    };
    Ok(InferAnswer::Whole(match ep.rpc {
        Rpc::ServerLive => {
            let live = pb::ServerLiveResponse::decode(message)
                .map_err(undecodable)?
                .live;
            ok(json!({ "live": live }), live)
        }
        Rpc::ServerReady => {
            let ready = pb::ServerReadyResponse::decode(message)
                .map_err(undecodable)?
                .ready;
            ok(json!({ "ready": ready }), ready)
        }
        Rpc::ModelReady => {
            let ready = pb::ModelReadyResponse::decode(message)
                .map_err(undecodable)?
                .ready;
            ok(json!({ "name": ep.model, "ready": ready }), ready)
        }
        Rpc::ServerMetadata => {
            let m = pb::ServerMetadataResponse::decode(message).map_err(undecodable)?;
            let mut extensions = m.extensions;
            // ferry itself serves the binary tensor extension to REST callers.
            if !extensions.iter().any(|e| e == "binary_tensor_data") {
                extensions.push("binary_tensor_data".into());
            }
            ok(
                json!({ "name": m.name, "version": m.version, "extensions": extensions }),
                true,
            )
        }
        Rpc::ModelMetadata => {
            let m = pb::ModelMetadataResponse::decode(message).map_err(undecodable)?;
            let tensors = |list: &[pb::model_metadata_response::TensorMetadata]| {
                list.iter()
                    .map(|t| json!({ "name": t.name, "datatype": t.datatype, "shape": t.shape }))
                    .collect::<Vec<_>>()
            };
            ok(
                json!({
                    "name": m.name,
                    "versions": m.versions,
                    "platform": m.platform,
                    "inputs": tensors(&m.inputs),
                    "outputs": tensors(&m.outputs),
                }),
                true,
            )
        }
        Rpc::ModelInfer => {
            let m = pb::ModelInferResponse::decode(message).map_err(undecodable)?;
            return infer_answer(m, plan);
        }
    }))
}

/// A REST infer answer: whole, or JSON streamed as it is encoded.
#[derive(Debug)]
pub(crate) enum InferAnswer {
    Whole(RestAnswer),
    Streaming(StreamBody),
}

/// `ModelInferResponse` → REST answer: streamed when every output goes as JSON `data` and
/// the JSON is longer than one chunk (see [`answer_stream`]), whole otherwise.
pub(crate) fn infer_answer(
    m: pb::ModelInferResponse,
    plan: &OutputPlan,
) -> Result<InferAnswer, TranslateError> {
    let all_json_asked = m.outputs.iter().all(|o| !plan.binary_for(&o.name));
    let raw_matches =
        m.raw_output_contents.is_empty() || m.raw_output_contents.len() == m.outputs.len();
    if !all_json_asked || !raw_matches {
        return infer_response(m, plan).map(InferAnswer::Whole);
    }
    let dts = answer_stream::output_datatypes(&m)?;
    match AnswerStream::new(m, dts) {
        Ok(stream) => Ok(match stream.start()? {
            StartedAnswer::Whole(json) => InferAnswer::Whole(RestAnswer {
                status: http::StatusCode::OK,
                json: json.into(),
                sections: Vec::new(),
            }),
            StartedAnswer::Streaming(body) => InferAnswer::Streaming(body),
        }),
        // Some output must fall back to a binary section: the answer's headers depend on it.
        Err(stream) => infer_response(stream.into_inner(), plan).map(InferAnswer::Whole),
    }
}

/// `ModelInferResponse` → REST JSON, outputs in JSON or binary as the caller asked, built whole.
pub(crate) fn infer_response(
    m: pb::ModelInferResponse,
    plan: &OutputPlan,
) -> Result<RestAnswer, TranslateError> {
    let bad = TranslateError::BadUpstream;
    let mut buf = Vec::with_capacity(256);
    let mut sections = Vec::new();
    json_out::answer_head(&mut buf, &m);
    let use_raw = !m.raw_output_contents.is_empty();
    if use_raw && m.raw_output_contents.len() != m.outputs.len() {
        return Err(bad(format!(
            "{} outputs but {} raw_output_contents",
            m.outputs.len(),
            m.raw_output_contents.len()
        )));
    }
    let empty = pb::InferTensorContents::default();
    for (i, o) in m.outputs.iter().enumerate() {
        if i > 0 {
            buf.push(b',');
        }
        let dt = DataType::parse(&o.datatype).ok_or_else(|| {
            bad(format!(
                "output {:?}: unknown datatype {:?}",
                o.name, o.datatype
            ))
        })?;
        let mut binary = plan.binary_for(&o.name) || !dt.has_typed_form();
        let raw_bytes = m.raw_output_contents.get(i).cloned();
        if !binary {
            // Try JSON; BYTES that are not UTF-8 cannot be JSON strings, so they fall back to a
            // binary section (the caller used the REST protocol, which supports both).
            let mark = buf.len();
            let data = match &raw_bytes {
                Some(r) => DataRef::Raw(r),
                None => DataRef::Contents(o.contents.as_ref().unwrap_or(&empty)),
            };
            if json_out::tensor(&mut buf, &o.name, dt, &o.shape, &o.parameters, data).is_err() {
                buf.truncate(mark);
                binary = true;
            }
        }
        if binary {
            let section = match raw_bytes {
                Some(r) => r,
                None => raw::encode(dt, o.contents.as_ref().unwrap_or(&empty)),
            };
            json_out::tensor(
                &mut buf,
                &o.name,
                dt,
                &o.shape,
                &o.parameters,
                DataRef::Binary(section.len()),
            )
            .map_err(|e| bad(format!("output {:?}: {e}", o.name)))?;
            sections.push(section);
        }
    }
    buf.extend_from_slice(b"]}");
    Ok(RestAnswer {
        status: http::StatusCode::OK,
        json: buf,
        sections,
    })
}
