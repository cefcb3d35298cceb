//! Open Inference Protocol callers, TorchServe upstream: `torchserve-rest` (`POST
//! /predictions/{m}[/{v}]` on the inference port) and `torchserve-grpc`
//! (`org.pytorch.serve.grpc.inference.InferenceAPIsService/Predictions`).
//!
//! The bridge reads OIP REST, JSON `data` or binary-extension sections (`oip_request`); gRPC
//! callers reach it through the OIP translator (gRPC → REST, raw tensors as sections) in front
//! of it (`grpc_callers`), so both callers share one mapping. Outputs go back as JSON or
//! binary sections as the caller asks (`oip_answer`). The infer request's
//! inputs are checked against the signature (400 without calling TorchServe when they do not
//! fit), then written in the route's [`Payload`] encoding:
//!
//! - `json`: each tensor as nested arrays in its shape. REST: one object keyed by input name,
//!   `Content-Type: application/json` (the handler sees `data[0]["body"]` as a dict). gRPC:
//!   one `input` map entry per input name, holding that tensor's nested array as JSON text.
//! - `raw`: each tensor's elements little-endian, row-major, no header (BOOL one byte).
//! - `npy`: each tensor as a NumPy `.npy` 1.0 file (`payload` module docs).
//!
//!   With raw and npy, REST sends one input as the body (`application/octet-stream`; the
//!   handler sees `data[0]["body"]`) and several as `multipart/form-data` parts named by
//!   input; gRPC sends one `input` entry per input name.
//!
//! TorchServe's answer (the handler's output) is read the same way — JSON (an object keyed by
//! output name, or the one output's nested array), or the one output's raw bytes (shape from
//! the signature, one `-1` inferred) or `.npy` file — and typed by the signature's outputs.
//! Health and metadata (`/v2/health/*`, `/v2`, `/v2/models/{m}`, `/v2/models/{m}/ready`)
//! ask TorchServe's ping on the inference port (`GET /ping`, or the `Ping` rpc) and answer
//! from it and the signature; the management API is not consulted (it is another port).
//!
//! Failures: TorchServe's `{"code","type","message"}` and gRPC statuses map to the caller's
//! terms (`answer` module): unknown model 404 / NOT_FOUND (also for its gRPC INTERNAL quirk),
//! bad input 400 / INVALID_ARGUMENT, a failing handler 500 / INTERNAL, no worker 503 /
//! UNAVAILABLE.

mod answer;
mod payload;
mod request;
mod wire;

#[cfg(test)]
mod tests;

pub(crate) use self::answer::response;
pub(crate) use self::request::request;

/// Which TorchServe API the upstream serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TorchserveApi {
    /// `POST /predictions/{m}[/{v}]`.
    Rest,
    /// The `Predictions` rpc (over HTTP/2: a cluster with `protocol: auto` or `h2`).
    Grpc,
}

/// How a tensor becomes the bytes TorchServe's handler receives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Payload {
    /// Nested JSON arrays.
    #[default]
    Json,
    /// Little-endian elements, row-major, no header.
    Raw,
    /// NumPy `.npy` format 1.0.
    Npy,
}

/// A TorchServe bridge's upstream side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TorchserveTarget {
    /// Which API.
    pub api: TorchserveApi,
    /// How tensors travel.
    pub payload: Payload,
}

/// The pure tensor encodings, for property tests and benches.
pub mod mapping {
    use super::super::nested::{Elem, Tensor};
    use super::super::oip_to_v1::OipCall;
    use super::super::{Signature, TensorSig};
    use super::Payload;
    use crate::translate::{DataType, TranslateError};

    /// An OIP infer request body → the body a `torchserve-rest` route sends (Content-Type,
    /// bytes).
    pub fn oip_request_to_torchserve(
        sig: &Signature,
        payload: Payload,
        body: &[u8],
        limit: u64,
    ) -> Result<(String, Vec<u8>), TranslateError> {
        let mut call = OipCall::default();
        let inputs = super::super::oip_request::read_request(sig, body, &[], &mut call, limit)?;
        super::request::rest_body(payload, &inputs).map_err(TranslateError::BadRequest)
    }

    /// A handler's answer body → the OIP infer answer (model name `m`).
    pub fn torchserve_answer_to_oip(
        sig: &Signature,
        payload: Payload,
        body: &[u8],
        limit: u64,
    ) -> Result<Vec<u8>, TranslateError> {
        let call = OipCall {
            model: "m".to_owned(),
            ..OipCall::default()
        };
        let a = super::answer::infer_answer(sig, &call, payload, body, limit)?;
        let mut out = a.json;
        a.sections.iter().for_each(|s| out.extend_from_slice(s));
        Ok(out)
    }

    /// Floats as JSON number tokens → one tensor's payload bytes (raw or npy) for `dt`.
    pub fn encode_numbers(
        payload: Payload,
        dt: DataType,
        shape: &[usize],
        tokens: &[String],
    ) -> Result<Vec<u8>, String> {
        let sig = TensorSig {
            name: "t".to_owned(),
            datatype: dt,
            shape: shape.iter().map(|&d| d as i64).collect(),
        };
        let t = Tensor {
            shape: shape.to_vec(),
            elems: tokens
                .iter()
                .map(|t| Elem::Num {
                    text: t.as_str(),
                    int: !t.contains(['.', 'e', 'E', 'N', 'I']),
                })
                .collect(),
            raw: None,
            src: &[],
        };
        super::request::encode(payload, &sig, &t)
    }
}
