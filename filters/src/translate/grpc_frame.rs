//! gRPC length-prefixed framing for unary calls, with raw tensors appended as separate chunks.
//!
//! A `ModelInferRequest`/`ModelInferResponse` carries its tensors in a repeated `bytes` field
//! (7 in requests, 6 in responses). Instead of copying megabytes into one encode buffer, the
//! rest of the message is encoded normally and each raw tensor follows as its own `Bytes` chunk
//! behind a hand-written tag and length. Protobuf accepts fields in any order.

use std::collections::VecDeque;

use bytes::{BufMut, Bytes, BytesMut};
use prost::Message;

/// Frames `msg` plus `raw` entries of repeated bytes field `raw_field` as one gRPC message.
pub(crate) fn encode_with_raw<M: Message>(
    msg: &M,
    raw_field: u32,
    raw: &[Bytes],
) -> VecDeque<Bytes> {
    let tag = u64::from(raw_field << 3 | 2);
    let raw_len: usize = raw
        .iter()
        .map(|r| {
            prost::encoding::encoded_len_varint(tag)
                + prost::encoding::encoded_len_varint(r.len() as u64)
                + r.len()
        })
        .sum();
    let head_len = msg.encoded_len();
    let total = head_len + raw_len;
    let mut head = BytesMut::with_capacity(5 + head_len + 16);
    head.put_u8(0);
    // A unary message over 4 GiB cannot be built: bodies are bounded far below that.
    head.put_u32(u32::try_from(total).unwrap_or(u32::MAX));
    // Encoding into a BytesMut with enough capacity cannot fail.
    let _ = msg.encode(&mut head);
    let mut chunks = VecDeque::with_capacity(1 + 2 * raw.len());
    for r in raw {
        prost::encoding::encode_varint(tag, &mut head);
        prost::encoding::encode_varint(r.len() as u64, &mut head);
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
