//! TorchServe's gRPC messages (`org.pytorch.serve.grpc.inference`), written from their field
//! numbers: `PredictionsRequest { string model_name = 1; string model_version = 2;
//! map<string, bytes> input = 3; }`, `PredictionResponse { bytes prediction = 1; }` and
//! `TorchServeHealthResponse { string health = 1; }`. The request is encoded by hand into
//! chunks so each input's bytes are framed without being copied again.

use std::collections::VecDeque;

use bytes::Bytes;
use prost::Message as _;
use prost::encoding::{WireType, encode_key, encode_varint, encoded_len_varint};

/// The inference service's path prefix.
pub(crate) const SERVICE: &str = "/org.pytorch.serve.grpc.inference.InferenceAPIsService/";

/// `PredictionResponse`, as much of it as the bridge reads.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct PredictionResponse {
    /// What the handler returned.
    #[prost(bytes = "bytes", tag = "1")]
    pub(crate) prediction: Bytes,
}

/// `TorchServeHealthResponse`.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct HealthResponse {
    /// The ping answer, `{"status": "Healthy"}` when healthy.
    #[prost(string, tag = "1")]
    pub(crate) health: String,
}

/// A framed unary `PredictionsRequest` (gRPC's 5-byte header first) as body chunks.
pub(crate) fn predictions_request(
    model: &str,
    version: Option<&str>,
    inputs: Vec<(String, Vec<u8>)>,
) -> Result<VecDeque<Bytes>, String> {
    let mut head = Vec::with_capacity(64);
    string_field(&mut head, 1, model);
    if let Some(v) = version.filter(|v| !v.is_empty()) {
        string_field(&mut head, 2, v);
    }
    let mut chunks = VecDeque::with_capacity(2 + 2 * inputs.len());
    let mut len = head.len();
    let mut entries = Vec::with_capacity(inputs.len());
    for (name, value) in inputs {
        // One map entry: `{ string key = 1; bytes value = 2; }` as a length-delimited field 3.
        let key_len = 1 + encoded_len_varint(name.len() as u64) + name.len();
        let entry_len = key_len + 1 + encoded_len_varint(value.len() as u64) + value.len();
        let mut entry = Vec::with_capacity(key_len + 12);
        encode_key(3, WireType::LengthDelimited, &mut entry);
        encode_varint(entry_len as u64, &mut entry);
        string_field(&mut entry, 1, &name);
        encode_key(2, WireType::LengthDelimited, &mut entry);
        encode_varint(value.len() as u64, &mut entry);
        len += entry.len() + value.len();
        entries.push((entry, value));
    }
    let len = u32::try_from(len).map_err(|_| "gRPC message over 4 GiB".to_owned())?;
    let mut frame = Vec::with_capacity(5 + head.len());
    frame.push(0);
    frame.extend_from_slice(&len.to_be_bytes());
    frame.extend_from_slice(&head);
    chunks.push_back(Bytes::from(frame));
    for (entry, value) in entries {
        chunks.push_back(Bytes::from(entry));
        chunks.push_back(Bytes::from(value));
    }
    Ok(chunks)
}

/// A framed empty message (`google.protobuf.Empty`, the `Ping` request).
pub(crate) fn empty_request() -> VecDeque<Bytes> {
    VecDeque::from([Bytes::from_static(&[0, 0, 0, 0, 0])])
}

/// The prediction bytes of a `PredictionResponse` message.
pub(crate) fn prediction(message: Bytes) -> Result<Bytes, String> {
    PredictionResponse::decode(message)
        .map(|r| r.prediction)
        .map_err(|e| format!("PredictionResponse: {e}"))
}

/// The health text of a `TorchServeHealthResponse` message.
pub(crate) fn health(message: Bytes) -> Result<String, String> {
    HealthResponse::decode(message)
        .map(|r| r.health)
        .map_err(|e| format!("TorchServeHealthResponse: {e}"))
}

fn string_field(out: &mut Vec<u8>, tag: u32, s: &str) {
    encode_key(tag, WireType::LengthDelimited, out);
    encode_varint(s.len() as u64, out);
    out.extend_from_slice(s.as_bytes());
}
