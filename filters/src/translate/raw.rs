//! The raw tensor form: little-endian, row-major, no padding; BOOL one byte; BYTES elements as
//! a u32 little-endian length followed by the bytes. Used by `raw_input_contents`,
//! `raw_output_contents` and the binary tensor extension alike, so those pass through as-is.

use bytes::{BufMut, Bytes, BytesMut};

use super::datatype::DataType;
use super::pb::InferTensorContents;

/// Counts the elements of a raw tensor, checking it is well formed for `dt`.
pub(crate) fn count(dt: DataType, raw: &[u8]) -> Result<usize, String> {
    match dt.size() {
        Some(_) => count_fixed(dt, raw.len()),
        None => Ok(bytes_elements(raw).try_fold(0usize, |n, e| e.map(|_| n + 1))?),
    }
}

/// Counts the elements of a `len`-byte raw tensor of a fixed-size datatype, without its bytes
/// (a section still arriving). BYTES elements carry their own lengths, so their count needs the
/// bytes: an error here.
pub(crate) fn count_fixed(dt: DataType, len: usize) -> Result<usize, String> {
    match dt.size() {
        Some(size) if len.is_multiple_of(size) => Ok(len / size),
        Some(size) => Err(format!(
            "{len} bytes is not a whole number of {} elements ({size} bytes each)",
            dt.as_str()
        )),
        None => Err(format!(
            "{} elements cannot be counted before the section arrives",
            dt.as_str()
        )),
    }
}

/// Iterates the elements of a raw BYTES tensor; yields an error for a truncated element.
pub(crate) fn bytes_elements(raw: &[u8]) -> impl Iterator<Item = Result<&[u8], String>> + '_ {
    let mut rest = raw;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let Some((len, tail)) = rest.split_first_chunk::<4>() else {
            rest = &[];
            return Some(Err("truncated BYTES element length".into()));
        };
        let len = u32::from_le_bytes(*len) as usize;
        match tail.split_at_checked(len) {
            Some((elem, after)) => {
                rest = after;
                Some(Ok(elem))
            }
            None => {
                rest = &[];
                Some(Err(format!(
                    "BYTES element of {len} bytes runs past the end of the tensor"
                )))
            }
        }
    })
}

/// The element count of typed contents for `dt`.
pub(crate) fn contents_count(dt: DataType, c: &InferTensorContents) -> usize {
    match dt {
        DataType::Bool => c.bool_contents.len(),
        DataType::Int8 | DataType::Int16 | DataType::Int32 => c.int_contents.len(),
        DataType::Int64 => c.int64_contents.len(),
        DataType::Uint8 | DataType::Uint16 | DataType::Uint32 => c.uint_contents.len(),
        DataType::Uint64 => c.uint64_contents.len(),
        DataType::Fp32 => c.fp32_contents.len(),
        DataType::Fp64 => c.fp64_contents.len(),
        DataType::Bytes => c.bytes_contents.len(),
        DataType::Fp16 | DataType::Bf16 => 0,
    }
}

/// Encodes typed contents into the raw form.
pub(crate) fn encode(dt: DataType, c: &InferTensorContents) -> Bytes {
    let n = contents_count(dt, c);
    let mut out = BytesMut::with_capacity(n.saturating_mul(dt.size().unwrap_or(8)));
    match dt {
        DataType::Bool => c
            .bool_contents
            .iter()
            .for_each(|&b| out.put_u8(u8::from(b))),
        DataType::Int8 => c.int_contents.iter().for_each(|&v| out.put_i8(v as i8)),
        DataType::Int16 => c
            .int_contents
            .iter()
            .for_each(|&v| out.put_i16_le(v as i16)),
        DataType::Int32 => c.int_contents.iter().for_each(|&v| out.put_i32_le(v)),
        DataType::Int64 => c.int64_contents.iter().for_each(|&v| out.put_i64_le(v)),
        DataType::Uint8 => c.uint_contents.iter().for_each(|&v| out.put_u8(v as u8)),
        DataType::Uint16 => c
            .uint_contents
            .iter()
            .for_each(|&v| out.put_u16_le(v as u16)),
        DataType::Uint32 => c.uint_contents.iter().for_each(|&v| out.put_u32_le(v)),
        DataType::Uint64 => c.uint64_contents.iter().for_each(|&v| out.put_u64_le(v)),
        DataType::Fp32 => c.fp32_contents.iter().for_each(|&v| out.put_f32_le(v)),
        DataType::Fp64 => c.fp64_contents.iter().for_each(|&v| out.put_f64_le(v)),
        DataType::Bytes => {
            for e in &c.bytes_contents {
                // An element over 4 GiB cannot exist: bodies are far smaller than that.
                out.put_u32_le(u32::try_from(e.len()).unwrap_or(u32::MAX));
                out.put_slice(e);
            }
        }
        DataType::Fp16 | DataType::Bf16 => {}
    }
    out.freeze()
}

/// Decodes a raw tensor into typed contents (FP16/BF16 have none: an error).
pub(crate) fn decode(dt: DataType, raw: &Bytes) -> Result<InferTensorContents, String> {
    let mut c = InferTensorContents::default();
    let n = count(dt, raw)?;
    let size = dt.size().unwrap_or(1);
    let chunks = raw.chunks_exact(size);
    macro_rules! fill {
        ($field:ident, $conv:expr) => {{
            c.$field.reserve(n);
            c.$field.extend(chunks.map($conv));
        }};
    }
    match dt {
        DataType::Bool => fill!(bool_contents, |b| b[0] != 0),
        DataType::Int8 => fill!(int_contents, |b| i32::from(b[0] as i8)),
        DataType::Int16 => fill!(int_contents, |b| i32::from(i16::from_le_bytes([
            b[0], b[1]
        ]))),
        DataType::Int32 => fill!(int_contents, |b| i32::from_le_bytes(arr4(b))),
        DataType::Int64 => fill!(int64_contents, |b| i64::from_le_bytes(arr8(b))),
        DataType::Uint8 => fill!(uint_contents, |b| u32::from(b[0])),
        DataType::Uint16 => fill!(uint_contents, |b| u32::from(u16::from_le_bytes([
            b[0], b[1]
        ]))),
        DataType::Uint32 => fill!(uint_contents, |b| u32::from_le_bytes(arr4(b))),
        DataType::Uint64 => fill!(uint64_contents, |b| u64::from_le_bytes(arr8(b))),
        DataType::Fp32 => fill!(fp32_contents, |b| f32::from_le_bytes(arr4(b))),
        DataType::Fp64 => fill!(fp64_contents, |b| f64::from_le_bytes(arr8(b))),
        DataType::Bytes => {
            let base = raw.as_ptr() as usize;
            for e in bytes_elements(raw) {
                let e = e?;
                let start = e.as_ptr() as usize - base;
                // A slice of the shared buffer, not a copy.
                c.bytes_contents.push(raw.slice(start..start + e.len()));
            }
        }
        DataType::Fp16 | DataType::Bf16 => {
            return Err(format!("{} has no typed form", dt.as_str()));
        }
    }
    Ok(c)
}

/// The first four bytes of a chunk known to be four long.
pub(crate) fn arr4(b: &[u8]) -> [u8; 4] {
    let mut a = [0; 4];
    a.copy_from_slice(&b[..4]);
    a
}

/// The first eight bytes of a chunk known to be eight long.
pub(crate) fn arr8(b: &[u8]) -> [u8; 8] {
    let mut a = [0; 8];
    a.copy_from_slice(&b[..8]);
    a
}
