//! gRPC length-prefixed framing for unary calls, with raw tensors appended as separate chunks.
//!
//! A `ModelInferRequest`/`ModelInferResponse` carries its tensors in a repeated `bytes` field
//! (7 in requests, 6 in responses). Instead of copying megabytes into one encode buffer, the
//! rest of the message is encoded normally and each raw tensor follows as its own `Bytes` chunk
//! behind a hand-written tag and length. Protobuf accepts fields in any order.

use std::collections::VecDeque;

use bytes::{BufMut, Bytes, BytesMut};
use prost::Message;
use prost::encoding::{WireType, encode_key, encode_varint, encoded_len_varint, key_len};

use super::pb;
use super::pb::model_infer_request::InferInputTensor;

/// Frames `msg` plus `raw` entries of repeated bytes field `raw_field` as one gRPC message.
pub(crate) fn encode_with_raw<M: Message>(
    msg: &M,
    raw_field: u32,
    raw: &[Bytes],
) -> VecDeque<Bytes> {
    let head_len = msg.encoded_len();
    let total = head_len + raw_len(raw_field, raw);
    let mut head = BytesMut::with_capacity(5 + head_len + 16);
    head.put_u8(0);
    // A unary message over 4 GiB cannot be built: bodies are bounded far below that.
    head.put_u32(u32::try_from(total).unwrap_or(u32::MAX));
    // Encoding into a BytesMut with enough capacity cannot fail.
    let _ = msg.encode(&mut head);
    let chunks = VecDeque::with_capacity(1 + 2 * raw.len());
    append_raw(head, chunks, raw_field, raw)
}

/// The encoded length of `raw` as entries of repeated bytes field `field`.
fn raw_len(field: u32, raw: &[Bytes]) -> usize {
    raw.iter()
        .map(|r| key_len(field) + encoded_len_varint(r.len() as u64) + r.len())
        .sum()
}

/// Appends `raw` as entries of repeated bytes field `field`: tag and length into `head`, each
/// payload as its own chunk. Returns every chunk, `head`'s last.
fn append_raw(
    mut head: BytesMut,
    mut chunks: VecDeque<Bytes>,
    field: u32,
    raw: &[Bytes],
) -> VecDeque<Bytes> {
    for r in raw {
        encode_key(field, WireType::LengthDelimited, &mut head);
        encode_varint(r.len() as u64, &mut head);
        chunks.push_back(head.split().freeze());
        if !r.is_empty() {
            chunks.push_back(r.clone());
        }
    }
    if !head.is_empty() {
        chunks.push_back(head.freeze());
    }
    chunks
}

/// Frames a `ModelInferRequest` whose FP32 inputs come as little-endian bytes (`fp32[i]` for
/// `msg.inputs[i]`, whose `contents` is then `None`), plus `raw` entries of
/// `raw_input_contents` (field 7). Each FP32 payload follows as its own chunk behind
/// hand-written tags and lengths instead of going through a `Vec<f32>` and prost's packed
/// encoder; everything else is prost's own encoding in prost's field order, so the bytes are
/// exactly those of the same message with `fp32_contents` filled in.
pub(crate) fn encode_infer_request(
    mut msg: pb::ModelInferRequest,
    fp32: &[Option<Bytes>],
    raw: &[Bytes],
) -> VecDeque<Bytes> {
    // In prost's order: fields 1-4 (`msg` with the repeated fields taken out), inputs (5),
    // requested outputs (6), raw contents (7).
    let inputs = std::mem::take(&mut msg.inputs);
    let outputs = std::mem::take(&mut msg.outputs);
    let packed = |i: usize| fp32.get(i).and_then(Option::as_ref);
    // InferTensorContents holding only `fp32_contents` (6); an empty packed field is omitted.
    let contents_len = |p: &Bytes| {
        if p.is_empty() {
            0
        } else {
            key_len(6) + encoded_len_varint(p.len() as u64) + p.len()
        }
    };
    let input_len = |i: usize, t: &InferInputTensor| {
        let n = t.encoded_len();
        match packed(i) {
            Some(p) => {
                let c = contents_len(p);
                n + key_len(5) + encoded_len_varint(c as u64) + c
            }
            None => n,
        }
    };
    let inputs_len: usize = inputs
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let n = input_len(i, t);
            key_len(5) + encoded_len_varint(n as u64) + n
        })
        .sum();
    let total = msg.encoded_len()
        + inputs_len
        + prost::encoding::message::encoded_len_repeated(6, &outputs)
        + raw_len(7, raw);
    let payloads: usize = fp32.iter().flatten().chain(raw).map(Bytes::len).sum();
    let mut head = BytesMut::with_capacity(5 + total.saturating_sub(payloads));
    head.put_u8(0);
    head.put_u32(u32::try_from(total).unwrap_or(u32::MAX));
    // Encoding into a BytesMut cannot fail: it grows.
    let _ = msg.encode(&mut head);
    let mut chunks = VecDeque::with_capacity(1 + 2 * (fp32.len() + raw.len()));
    for (i, t) in inputs.iter().enumerate() {
        encode_key(5, WireType::LengthDelimited, &mut head);
        encode_varint(input_len(i, t) as u64, &mut head);
        let _ = t.encode(&mut head);
        if let Some(p) = packed(i) {
            encode_key(5, WireType::LengthDelimited, &mut head);
            encode_varint(contents_len(p) as u64, &mut head);
            if !p.is_empty() {
                encode_key(6, WireType::LengthDelimited, &mut head);
                encode_varint(p.len() as u64, &mut head);
                chunks.push_back(head.split().freeze());
                chunks.push_back(p.clone());
            }
        }
    }
    for o in &outputs {
        prost::encoding::message::encode(6, o, &mut head);
    }
    append_raw(head, chunks, 7, raw)
}

/// Frames an encoded message.
pub(crate) fn frame(msg: Vec<u8>) -> VecDeque<Bytes> {
    let mut out = Vec::with_capacity(5 + msg.len());
    out.push(0);
    out.extend_from_slice(&u32::try_from(msg.len()).unwrap_or(u32::MAX).to_be_bytes());
    out.extend_from_slice(&msg);
    VecDeque::from([Bytes::from(out)])
}

/// The one message of a unary gRPC body (a slice of `body`, not a copy).
pub(crate) fn unframe(body: &Bytes) -> Result<Bytes, String> {
    let Some((header, _)) = body.split_first_chunk::<5>() else {
        return Err(format!("gRPC body of {} bytes has no message", body.len()));
    };
    if header[0] != 0 {
        return Err("compressed gRPC messages are not supported by the translator".into());
    }
    let len = u32::from_be_bytes([header[1], header[2], header[3], header[4]]) as usize;
    let end = 5usize.saturating_add(len);
    if end != body.len() {
        return Err(format!(
            "gRPC message declares {len} bytes but the body has {} after the frame header",
            body.len() - 5
        ));
    }
    Ok(body.slice(5..end))
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;
    use crate::translate::pb::model_infer_request::InferRequestedOutputTensor;
    use crate::translate::pb::{InferParameter, InferTensorContents, infer_parameter};

    fn joined(chunks: VecDeque<Bytes>) -> Vec<u8> {
        chunks.into_iter().flat_map(|c| c.to_vec()).collect()
    }

    fn input(name: &str, contents: Option<InferTensorContents>) -> InferInputTensor {
        InferInputTensor {
            name: name.into(),
            datatype: "FP32".into(),
            shape: vec![1, 3],
            parameters: HashMap::from([(
                "p".to_owned(),
                InferParameter {
                    parameter_choice: Some(infer_parameter::ParameterChoice::Int64Param(-3)),
                },
            )]),
            contents,
        }
    }

    #[test]
    fn packed_fp32_inputs_encode_exactly_as_prost_does() {
        let values: [&[f32]; 4] = [&[1.5, -0.25, 3e-7], &[], &[f32::MAX; 40], &[0.1; 300]];
        let le =
            |v: &[f32]| Bytes::from(v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<_>>());
        let ints = InferTensorContents {
            int_contents: vec![1, -2],
            ..Default::default()
        };
        let msg = |packed: bool| pb::ModelInferRequest {
            model_name: "m".into(),
            model_version: "2".into(),
            id: "req".into(),
            parameters: HashMap::from([(
                "q".to_owned(),
                InferParameter {
                    parameter_choice: Some(infer_parameter::ParameterChoice::BoolParam(true)),
                },
            )]),
            inputs: values
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    let contents = (!packed).then(|| InferTensorContents {
                        fp32_contents: v.to_vec(),
                        ..Default::default()
                    });
                    input(&format!("x{i}"), contents)
                })
                .chain([input("ints", Some(ints.clone()))])
                .collect(),
            outputs: vec![InferRequestedOutputTensor {
                name: "y".into(),
                parameters: HashMap::new(),
            }],
            raw_input_contents: Vec::new(),
        };
        let fp32: Vec<Option<Bytes>> = values.iter().map(|v| Some(le(v))).chain([None]).collect();
        for raw in [Vec::new(), vec![Bytes::from_static(b"abc"), Bytes::new()]] {
            let want = joined(encode_with_raw(&msg(false), 7, &raw));
            let got = joined(encode_infer_request(msg(true), &fp32, &raw));
            assert_eq!(got, want);
        }
        // No inputs at all, and no packed inputs: the same as before.
        let plain = pb::ModelInferRequest {
            model_name: "m".into(),
            ..Default::default()
        };
        assert_eq!(
            joined(encode_infer_request(plain.clone(), &[], &[])),
            joined(encode_with_raw(&plain, 7, &[]))
        );
    }
}
