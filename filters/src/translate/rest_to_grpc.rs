//! REST caller, gRPC upstream: an OIP REST request becomes one `GRPCInferenceService` call, and
//! the call's answer becomes the REST response the caller asked for (JSON `data` or binary
//! sections). The request side is here; the answer side is in [`answer`].

use std::collections::{HashSet, VecDeque};

use bytes::Bytes;
use prost::Message;

use super::endpoint::{Endpoint, Rpc};
use super::error::TranslateError;
use super::grpc_frame;
use super::json_in::{self, Budget};
use super::pb;
use super::raw;
use super::tensor::{self, RawInput, Sections};
use super::tensor_data::TensorData;

mod answer;

pub(crate) use self::answer::{InferAnswer, RestAnswer, infer_answer, infer_response, response};

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
