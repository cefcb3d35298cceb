//! Raw types of bridging Open Inference Protocol callers to TorchServe: how a tensor becomes
//! the bytes TorchServe's handler receives (`translate.payload`).

use schemars::JsonSchema;
use serde::Deserialize;

/// How each input tensor is written for a TorchServe handler (`to: torchserve-rest` or
/// `torchserve-grpc`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(rename = "TorchservePayload")]
pub enum PayloadSpec {
    /// JSON: nested arrays in the tensor's shape (REST: one object keyed by input name).
    Json,
    /// The tensor's elements, little-endian, row-major, no header.
    Raw,
    /// A NumPy `.npy` (format 1.0) file: header with dtype and shape, then the raw data.
    Npy,
}
