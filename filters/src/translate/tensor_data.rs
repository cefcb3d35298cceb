//! A tensor's values in the form they arrived in or were decoded to: shared by the JSON
//! decoder ([`json_in`](super::json_in)), which produces the typed forms, and the tensor
//! checks ([`tensor`](super::tensor)), which add the binary-section forms.

use bytes::Bytes;

use super::pb::InferTensorContents;

/// A tensor's values.
#[derive(Debug)]
pub(crate) enum TensorData {
    /// Raw little-endian bytes (a binary section, a slice of the body).
    Raw(Bytes),
    /// Typed contents decoded from JSON.
    Typed(InferTensorContents),
    /// FP32 values decoded from JSON, as little-endian bytes: the payload of the packed
    /// `fp32_contents` field and the raw form at once, so either is sent without re-encoding.
    Fp32Le(Bytes),
    /// A binary section of this many bytes still arriving in the request body (the streaming
    /// REST → gRPC path, which checks sizes against the declared body length).
    Pending(usize),
}
