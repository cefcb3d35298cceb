//! Bridging TF Serving gRPC (`tensorflow.serving.PredictionService`: `Predict`,
//! `GetModelMetadata`, `tensorflow.TensorProto`) and the Open Inference Protocol's gRPC form,
//! per route, either way:
//!
//! - **TF Serving callers** ([`TfServingDirection::CallerToOip`], `caller`): `Predict` and
//!   `GetModelMetadata` become `inference.GRPCInferenceService` calls. For an OIP REST upstream
//!   the proxy puts the OIP gRPC → REST translator below this layer, so one mapping serves both.
//! - **TF Serving upstreams** ([`TfServingDirection::OipToUpstream`], `upstream`): OIP gRPC
//!   calls become `Predict` / `GetModelMetadata`; OIP REST callers reach this layer through the
//!   OIP REST → gRPC translator above it.
//!
//! Place in the stack: with the other translators (after authorization and limits, before
//! timeouts and retries). Settings: [`TfServingSettings`] — the direction, an optional
//! [`Signature`] (TensorProto carries dtypes and shapes, so it is needed only to refuse
//! requests that do not fit the model, and it answers metadata calls), and the
//! [`MaxDecodedBytes`] bound on the collected bodies and the decoded tensors.
//!
//! Failures ([`TranslateError`], rendered by the stack's error renderer): a malformed or
//! unfitting request 400 / INVALID_ARGUMENT without calling the upstream; bodies or tensors over
//! the limit 413 / RESOURCE_EXHAUSTED; another rpc UNIMPLEMENTED; the upstream's gRPC status
//! passes on with its message (NOT_FOUND 404, INVALID_ARGUMENT 400, INTERNAL 500,
//! UNAVAILABLE 503); an answer that does not decode 502 / INTERNAL.

mod caller;
mod layer;
mod oip;
pub mod pb;
pub mod tensor;
mod unary;
mod upstream;

#[cfg(test)]
mod tests;

pub use self::layer::{TfServing, TfServingLayer};

use super::Signature;
use crate::translate::MaxDecodedBytes;
#[cfg(doc)]
use crate::translate::TranslateError;

/// Which side speaks TF Serving gRPC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TfServingDirection {
    /// TF Serving gRPC callers, OIP gRPC below (an OIP upstream, or the gRPC → REST translator).
    CallerToOip,
    /// OIP gRPC callers (or the REST → gRPC translator), TF Serving gRPC upstream.
    OipToUpstream,
}

/// A route's TF Serving bridge settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TfServingSettings {
    /// Which way.
    pub direction: TfServingDirection,
    /// The model's tensors, when configured: requests are checked against it and metadata
    /// answered from it.
    pub signature: Option<Signature>,
    /// Bound on each collected body and on its decoded tensors.
    pub max_decoded_bytes: MaxDecodedBytes,
}
