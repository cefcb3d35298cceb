//! Bridging between serving protocols, per route: Open Inference Protocol v2 REST callers to
//! KServe V1 (TF Serving REST) upstreams, and KServe V1 callers to OIP v2 REST upstreams.
//!
//! Place in the stack: where `translate` sits (after authorization and limits, before timeouts
//! and retries: the bridged request is what gets retried). Settings: [`BridgeSettings`] — the
//! [`BridgeDirection`], the model's [`Signature`] (V1 carries no datatypes or shapes) and a
//! [`MaxDecodedBytes`] bound on the collected bodies and their tensors.
//!
//! - **OIP → V1** (`oip_to_v1`): `POST /v2/models/{m}[/versions/{v}]/infer` becomes
//!   `POST /v1/models/{m}[/versions/{v}]:predict`, rows (`instances`) when every input has a
//!   batch dimension first, columns (`inputs`) otherwise; the answer is typed by the
//!   signature. Inputs may come as JSON `data` or binary-extension sections (`oip_request`);
//!   outputs go back as JSON or sections as the caller asks (`oip_answer`), as for TorchServe. `GET /v2/models/{m}` and `/ready` are answered from the signature and the
//!   upstream's `GET /v1/models/{m}`.
//! - **V1 → OIP** (`v1_to_oip`): `:predict` becomes `/v2/models/{m}/infer` typed by the
//!   signature's inputs; the answer goes back in the caller's format. `GET /v1/models/{m}` is
//!   answered from the upstream's `/v2/models/{m}/ready`.
//!
//! Failures, rendered by the stack's error renderer ([`TranslateError`]): a request that does
//! not fit the signature 400 without calling the upstream; bodies or tensors over the limit
//! 413; another endpoint 404; an upstream error keeps its meaning (404 → 404, 400/422 → 400,
//! other statuses as they are) with its message; an answer that does not fit 502.

mod elem;
mod grpc_callers;
mod layer;
mod nested;
mod numeric_run;
mod oip_answer;
mod oip_request;
mod oip_to_v1;
mod service;
pub mod tfserving;
pub mod torchserve;
mod v1_to_oip;

#[cfg(test)]
mod tests;

pub use self::grpc_callers::{GrpcCallers, GrpcCallersLayer};
pub use self::layer::{Bridge, BridgeLayer};
pub use self::oip_answer::BinaryOutputs;
pub use self::oip_to_v1::OipCall;
pub use self::v1_to_oip::V1Format;

use crate::translate::{DataType, MaxDecodedBytes, TranslateError};

use self::nested::Elem;

/// Which protocols a route bridges.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BridgeDirection {
    /// OIP v2 REST callers, KServe V1 upstream.
    OipRestToKserveV1,
    /// KServe V1 callers, OIP v2 REST upstream.
    KserveV1ToOipRest,
    /// OIP v2 REST callers (gRPC ones through the OIP translator in front), TorchServe
    /// upstream.
    OipToTorchserve(torchserve::TorchserveTarget),
}

/// One tensor of a bridged model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorSig {
    /// Tensor name.
    pub name: String,
    /// Element type.
    pub datatype: DataType,
    /// Dimensions; `-1` = any size.
    pub shape: Vec<i64>,
}

/// A bridged model's tensors.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Signature {
    /// Inputs, in the order a V1 request lists them.
    pub inputs: Vec<TensorSig>,
    /// Outputs (OIP → V1 only).
    pub outputs: Vec<TensorSig>,
}

/// A route's bridge settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BridgeSettings {
    /// Which way.
    pub direction: BridgeDirection,
    /// The model's tensors.
    pub signature: Signature,
    /// Bound on each collected body and on its tensors.
    pub max_decoded_bytes: MaxDecodedBytes,
}

/// Decoded-size accounting for one message: each element at its datatype's width (BYTES at
/// its length), as the OIP translator counts.
pub(crate) struct Budget {
    used: u64,
    limit: u64,
}

// === impl Signature ===

impl Signature {
    /// Row format (`instances`) when every input has a batch dimension first.
    pub fn row_format(&self) -> bool {
        !self.inputs.is_empty() && self.inputs.iter().all(|t| t.shape.first() == Some(&-1))
    }
}

// === impl Budget ===

impl Budget {
    pub(crate) fn new(limit: u64) -> Self {
        Budget { used: 0, limit }
    }

    pub(crate) fn charge(
        &mut self,
        elems: &[Elem<'_>],
        dt: DataType,
    ) -> Result<(), TranslateError> {
        let bytes: u64 = match dt.size() {
            Some(w) => (elems.len() as u64).saturating_mul(w as u64),
            None => elems
                .iter()
                .map(|e| match e {
                    Elem::Str(s) => s.len() as u64,
                    Elem::Bin(b) => b.len() as u64,
                    _ => 0,
                })
                .sum(),
        };
        self.charge_bytes(bytes)
    }

    /// Charges `bytes` of raw tensor data (a binary section, counted before it is decoded).
    pub(crate) fn charge_bytes(&mut self, bytes: u64) -> Result<(), TranslateError> {
        self.used = self.used.saturating_add(bytes);
        if self.used > self.limit {
            return Err(TranslateError::TooLarge {
                what: "decoded tensors",
                limit: self.limit,
            });
        }
        Ok(())
    }
}

/// Whether a BYTES tensor travels as `{"b64": ...}` in V1 JSON: TF Serving's rule, names
/// ending in `_bytes`.
pub(crate) fn b64_named(t: &TensorSig) -> bool {
    t.datatype == DataType::Bytes && t.name.ends_with("_bytes")
}

/// The pure body mappings, for benches and property tests.
pub mod mapping {
    pub use super::oip_to_v1::{answer as v1_answer_to_oip, request as oip_request_to_v1};
    pub use super::v1_to_oip::{answer as oip_answer_to_v1, request as v1_request_to_oip};
}
