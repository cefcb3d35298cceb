//! Open Inference Protocol (KServe v2) translation between REST JSON and gRPC, per route.
//!
//! Place in the stack: after authorization and rate limiting, before timeouts and retries
//! (the translated request is what gets retried). Settings: [`TranslateSettings`] —
//! [`Direction`], a [`MaxDecodedBytes`] limit that bounds the collected body and the decoded
//! tensors, and whether the REST upstream understands the binary tensor extension.
//!
//! - **REST → gRPC**: every REST endpoint (health, server and model metadata, model ready,
//!   infer, with or without a version) becomes its `inference.GRPCInferenceService` rpc. JSON
//!   `data` (flat or nested) is decoded straight into the packed protobuf field; binary-extension
//!   sections become `raw_input_contents` as slices of the body. The answer returns as JSON
//!   `data` or binary sections, as the caller asked (`binary_data`, `binary_data_output`).
//! - **gRPC → REST**: the reverse, for gRPC callers of REST-only servers; raw tensors go as
//!   binary sections when the upstream supports them, as JSON `data` otherwise.
//!
//! Failures: bad input is answered 400 / INVALID_ARGUMENT naming the tensor and the fault,
//! without calling the upstream; a body or decoded tensors over the limit 413 /
//! RESOURCE_EXHAUSTED; an unknown endpoint 404 / UNIMPLEMENTED; upstream errors map by the
//! table in [`http_for_grpc`] / [`grpc_for_http`], with `{"error": "<message>"}` for REST.

mod answer_stream;
mod binary_probe;
mod body;
mod collect;
mod datatype;
mod endpoint;
mod error;
pub(crate) mod grpc_frame;
mod grpc_message;
pub(crate) mod grpc_to_rest;
pub(crate) mod json_in;
pub(crate) mod json_out;
mod layer;
pub mod pb;
pub(crate) mod raw;
mod rest_to_grpc;
mod section_stream;
mod service;
pub(crate) mod tensor;
pub(crate) mod tensor_data;

#[cfg(test)]
mod tests;

pub use self::binary_probe::{FAILED_PROBE_TTL, PROBE_TTL, UpstreamBinary};
pub use self::body::ChunksBody;
pub(crate) use self::body::boxed;
pub(crate) use self::collect::collect;
pub use self::datatype::{ALL as ALL_DATATYPES, DataType};
pub use self::endpoint::{Endpoint, Rpc};
pub use self::error::{TranslateError, code, grpc_for_http, http_for_grpc};
pub(crate) use self::grpc_message::{grpc_status, percent_encode};
pub use self::layer::{OipTranslate, OipTranslateLayer};
pub(crate) use self::layer::{phase, request_body};
pub(crate) use self::raw::{
    bytes_elements as raw_bytes_elements, count as raw_count, decode as raw_decode,
    encode as raw_encode,
};
pub(crate) use self::rest_to_grpc::{RestAnswer, split_body};
pub use self::service::{Pending, Translator, grpc_error, rest_error};

use bytes::Bytes;
use http::header::HeaderName;
use http_body_util::combinators::UnsyncBoxBody;

/// The error type of boxed bodies and of the layer.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The body type the translator produces (and the proxy uses throughout).
pub type TranslateBody = UnsyncBoxBody<Bytes, BoxError>;

/// The binary extension's header: length of the JSON part of the body.
pub const INFERENCE_HEADER_CONTENT_LENGTH: HeaderName =
    HeaderName::from_static("inference-header-content-length");

/// Which way a route translates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// REST callers, gRPC upstream.
    RestToGrpc,
    /// gRPC callers, REST upstream.
    GrpcToRest,
}

/// Largest body, and largest total of decoded tensor bytes, one message may have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MaxDecodedBytes(pub u64);

impl Default for MaxDecodedBytes {
    fn default() -> Self {
        MaxDecodedBytes(64 * 1024 * 1024)
    }
}

/// A route's translation settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TranslateSettings {
    /// Which way to translate.
    pub direction: Direction,
    /// Bound on the collected body and on decoded tensors.
    pub max_decoded_bytes: MaxDecodedBytes,
    /// gRPC → REST only: whether raw tensors go to the REST upstream as binary-extension
    /// sections (Triton, KServe) or JSON `data` (MLServer 1.7 has no binary extension);
    /// `Auto` asks the upstream.
    pub upstream_binary: UpstreamBinary,
}

/// Public entry points for benches and fuzzing: the pure mapping functions without I/O.
pub mod mapping {
    use std::collections::VecDeque;

    use bytes::Bytes;

    use super::endpoint::Endpoint;
    use super::error::TranslateError;

    /// REST request body (JSON, or JSON header + binary sections when `header_len` is given)
    /// for `ep` → the framed gRPC request body chunks.
    pub fn rest_request_to_grpc(
        ep: &Endpoint,
        body: Bytes,
        header_len: Option<&str>,
        limit: u64,
    ) -> Result<VecDeque<Bytes>, TranslateError> {
        super::rest_to_grpc::request(ep, body, header_len, limit).map(|(chunks, _)| chunks)
    }

    /// A `ModelInferResponse` (unframed) → the REST JSON answer a caller that asked for JSON
    /// gets: with `whole`, built in one buffer (the way answers went before streaming);
    /// without, only what is ready before the headers: the first chunk of a streamed answer
    /// (or the whole answer when it fits one). The bool says whether more would follow.
    pub fn rest_infer_answer(message: Bytes, whole: bool) -> Result<(Bytes, bool), TranslateError> {
        use prost::Message as _;

        use super::rest_to_grpc::{InferAnswer, OutputPlan, infer_answer, infer_response};
        let m = super::pb::ModelInferResponse::decode(message)
            .map_err(|e| TranslateError::BadUpstream(e.to_string()))?;
        if whole {
            return infer_response(m, &OutputPlan::default()).map(|a| (a.json.into(), false));
        }
        Ok(match infer_answer(m, &OutputPlan::default())? {
            InferAnswer::Whole(a) => (a.json.into(), false),
            InferAnswer::Streaming(body) => (body.first_chunk(), true),
        })
    }
}
