//! `tensorflow.TensorProto` ⇄ the Open Inference Protocol's raw tensor form (little-endian,
//! row-major, BYTES elements as a u32 length + bytes), the form `raw_input_contents` and
//! `raw_output_contents` carry, so each side's tensors are copied once.
//!
//! A TensorProto carries its elements either packed in `tensor_content` (the same
//! little-endian bytes: passed through as a slice) or in the typed `*_val` field of its dtype
//! (`int_val` for INT8/16/32, UINT8 and UINT16; `half_val` for FP16 and BF16 bits;
//! `string_val` for DT_STRING ⇄ BYTES). A single `*_val` element fills the whole shape, as
//! TensorFlow reads it. Sizes are checked against the caller's budget before anything is
//! allocated.

use bytes::{BufMut, Bytes, BytesMut};

use super::pb::{Dim, TensorProto, TensorShapeProto, dtype};
use crate::translate::DataType;

/// One tensor in the raw form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawTensor {
    /// Element type.
    pub datatype: DataType,
    /// Dimensions.
    pub shape: Vec<i64>,
    /// Elements, raw.
    pub raw: Bytes,
}

/// How a TensorProto carries its elements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// Packed in `tensor_content` (DT_STRING still uses `string_val`).
    Content,
    /// In the dtype's typed `*_val` field.
    Values,
}

/// The OIP datatype of a TensorFlow dtype.
pub fn datatype(dt: i32) -> Option<DataType> {
    Some(match dt {
        dtype::DT_FLOAT => DataType::Fp32,
        dtype::DT_DOUBLE => DataType::Fp64,
        dtype::DT_INT32 => DataType::Int32,
        dtype::DT_UINT8 => DataType::Uint8,
        dtype::DT_INT16 => DataType::Int16,
        dtype::DT_INT8 => DataType::Int8,
        dtype::DT_STRING => DataType::Bytes,
        dtype::DT_INT64 => DataType::Int64,
        dtype::DT_BOOL => DataType::Bool,
        dtype::DT_BFLOAT16 => DataType::Bf16,
        dtype::DT_UINT16 => DataType::Uint16,
        dtype::DT_HALF => DataType::Fp16,
        dtype::DT_UINT32 => DataType::Uint32,
        dtype::DT_UINT64 => DataType::Uint64,
        _ => return None,
    })
}

/// The TensorFlow dtype of an OIP datatype.
pub fn dtype_of(dt: DataType) -> i32 {
    match dt {
        DataType::Fp32 => dtype::DT_FLOAT,
        DataType::Fp64 => dtype::DT_DOUBLE,
        DataType::Int32 => dtype::DT_INT32,
        DataType::Uint8 => dtype::DT_UINT8,
        DataType::Int16 => dtype::DT_INT16,
        DataType::Int8 => dtype::DT_INT8,
        DataType::Bytes => dtype::DT_STRING,
        DataType::Int64 => dtype::DT_INT64,
        DataType::Bool => dtype::DT_BOOL,
        DataType::Bf16 => dtype::DT_BFLOAT16,
        DataType::Uint16 => dtype::DT_UINT16,
        DataType::Fp16 => dtype::DT_HALF,
        DataType::Uint32 => dtype::DT_UINT32,
        DataType::Uint64 => dtype::DT_UINT64,
    }
}

/// A `TensorShapeProto` of these dimensions (`-1` = unknown size, as in a signature).
pub fn shape_proto(shape: &[i64]) -> TensorShapeProto {
    TensorShapeProto {
        dim: shape
            .iter()
            .map(|&size| Dim {
                size,
                name: String::new(),
            })
            .collect(),
        unknown_rank: false,
    }
}

/// Reads a TensorProto into the raw form. `budget` is what the message may still decode; the
/// tensor's raw size is taken from it. Errors name the fault, for INVALID_ARGUMENT.
pub fn from_proto(t: &TensorProto, budget: &mut u64) -> Result<RawTensor, String> {
    let datatype =
        datatype(t.dtype).ok_or_else(|| format!("dtype {} has no OIP datatype", t.dtype))?;
    let shape_proto = t.tensor_shape.clone().unwrap_or_default();
    if shape_proto.unknown_rank {
        return Err("a tensor of unknown rank cannot be sent".into());
    }
    let shape: Vec<i64> = shape_proto.dim.iter().map(|d| d.size).collect();
    let n = shape.iter().try_fold(1u64, |n, &d| {
        u64::try_from(d)
            .ok()
            .and_then(|d| n.checked_mul(d))
            .ok_or_else(|| format!("invalid shape {shape:?}"))
    })?;
    let raw = match datatype.size() {
        None => strings(&t.string_val, n, budget)?,
        Some(size) => {
            let len = n.saturating_mul(size as u64);
            spend(budget, len)?;
            let n = usize::try_from(n).map_err(|_| format!("shape {shape:?} is too large"))?;
            if !t.tensor_content.is_empty() {
                if t.tensor_content.len() as u64 != len {
                    return Err(format!(
                        "tensor_content has {} bytes, shape {shape:?} of {} needs {len}",
                        t.tensor_content.len(),
                        datatype.as_str()
                    ));
                }
                t.tensor_content.clone()
            } else {
                values(t, datatype, n)?
            }
        }
    };
    Ok(RawTensor {
        datatype,
        shape,
        raw,
    })
}

/// Writes a raw tensor as a TensorProto in `form`.
pub fn to_proto(t: &RawTensor, form: Form) -> Result<TensorProto, String> {
    let mut out = TensorProto {
        dtype: dtype_of(t.datatype),
        tensor_shape: Some(shape_proto(&t.shape)),
        ..TensorProto::default()
    };
    let Some(size) = t.datatype.size() else {
        for e in crate::translate::raw_bytes_elements(&t.raw) {
            out.string_val.push(t.raw.slice_ref(e?));
        }
        return Ok(out);
    };
    if !t.raw.len().is_multiple_of(size) {
        return Err(format!(
            "{} bytes is not a whole number of {} elements",
            t.raw.len(),
            t.datatype.as_str()
        ));
    }
    if form == Form::Content {
        out.tensor_content = t.raw.clone();
        return Ok(out);
    }
    let c = t.raw.chunks_exact(size);
    let b2 = |b: &[u8]| [b[0], b[1]];
    let b4 = |b: &[u8]| [b[0], b[1], b[2], b[3]];
    let b8 = |b: &[u8]| [b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]];
    match t.datatype {
        DataType::Fp32 => out.float_val = c.map(|b| f32::from_le_bytes(b4(b))).collect(),
        DataType::Fp64 => out.double_val = c.map(|b| f64::from_le_bytes(b8(b))).collect(),
        DataType::Int8 => out.int_val = c.map(|b| i32::from(b[0] as i8)).collect(),
        DataType::Uint8 => out.int_val = c.map(|b| i32::from(b[0])).collect(),
        DataType::Int16 => out.int_val = c.map(|b| i32::from(i16::from_le_bytes(b2(b)))).collect(),
        DataType::Uint16 => {
            out.int_val = c.map(|b| i32::from(u16::from_le_bytes(b2(b)))).collect();
        }
        DataType::Int32 => out.int_val = c.map(|b| i32::from_le_bytes(b4(b))).collect(),
        DataType::Int64 => out.int64_val = c.map(|b| i64::from_le_bytes(b8(b))).collect(),
        DataType::Uint32 => out.uint32_val = c.map(|b| u32::from_le_bytes(b4(b))).collect(),
        DataType::Uint64 => out.uint64_val = c.map(|b| u64::from_le_bytes(b8(b))).collect(),
        DataType::Bool => out.bool_val = c.map(|b| b[0] != 0).collect(),
        DataType::Fp16 | DataType::Bf16 => {
            out.half_val = c.map(|b| i32::from(u16::from_le_bytes(b2(b)))).collect();
        }
        DataType::Bytes => {}
    }
    Ok(out)
}

fn spend(budget: &mut u64, len: u64) -> Result<(), String> {
    *budget = budget
        .checked_sub(len)
        .ok_or_else(|| "decoded tensors exceed max_decoded_bytes".to_owned())?;
    Ok(())
}

/// `string_val` as raw BYTES (u32 little-endian length + bytes per element).
fn strings(vals: &[Bytes], n: u64, budget: &mut u64) -> Result<Bytes, String> {
    let (len, each): (u64, Vec<&Bytes>) = match vals {
        [one] if n > 1 => (n.saturating_mul(4 + one.len() as u64), vec![one]),
        _ if vals.len() as u64 == n => (
            vals.iter().map(|v| 4 + v.len() as u64).sum(),
            vals.iter().collect(),
        ),
        _ => {
            return Err(format!(
                "{} string_val elements for a shape of {n}",
                vals.len()
            ));
        }
    };
    spend(budget, len)?;
    let mut out = BytesMut::with_capacity(usize::try_from(len).unwrap_or(0));
    let repeat = if each.len() == 1 { n } else { 1 };
    for v in each {
        for _ in 0..repeat {
            out.put_u32_le(u32::try_from(v.len()).map_err(|_| "string element over 4 GiB")?);
            out.put_slice(v);
        }
    }
    Ok(out.freeze())
}

/// The typed `*_val` field of `dt` as `n` raw elements (one value fills the shape).
fn values(t: &TensorProto, dt: DataType, n: usize) -> Result<Bytes, String> {
    fn fill<T: Copy>(
        vals: &[T],
        n: usize,
        size: usize,
        field: &str,
        put: impl Fn(&mut BytesMut, T),
    ) -> Result<Bytes, String> {
        let mut out = BytesMut::with_capacity(n * size);
        match vals {
            // One value fills the shape, as TensorFlow reads it.
            [one] if n > 1 => (0..n).for_each(|_| put(&mut out, *one)),
            _ if vals.len() == n => vals.iter().for_each(|&v| put(&mut out, v)),
            _ => {
                return Err(format!(
                    "{} {field} elements for a shape of {n} (and no tensor_content)",
                    vals.len()
                ));
            }
        }
        Ok(out.freeze())
    }
    match dt {
        DataType::Fp32 => fill(&t.float_val, n, 4, "float_val", BytesMut::put_f32_le),
        DataType::Fp64 => fill(&t.double_val, n, 8, "double_val", BytesMut::put_f64_le),
        DataType::Int8 => fill(&t.int_val, n, 1, "int_val", |o, v| o.put_i8(v as i8)),
        DataType::Uint8 => fill(&t.int_val, n, 1, "int_val", |o, v| o.put_u8(v as u8)),
        DataType::Int16 => fill(&t.int_val, n, 2, "int_val", |o, v| o.put_i16_le(v as i16)),
        DataType::Uint16 => fill(&t.int_val, n, 2, "int_val", |o, v| o.put_u16_le(v as u16)),
        DataType::Int32 => fill(&t.int_val, n, 4, "int_val", BytesMut::put_i32_le),
        DataType::Int64 => fill(&t.int64_val, n, 8, "int64_val", BytesMut::put_i64_le),
        DataType::Uint32 => fill(&t.uint32_val, n, 4, "uint32_val", BytesMut::put_u32_le),
        DataType::Uint64 => fill(&t.uint64_val, n, 8, "uint64_val", BytesMut::put_u64_le),
        DataType::Bool => fill(&t.bool_val, n, 1, "bool_val", |o, v| o.put_u8(u8::from(v))),
        DataType::Fp16 | DataType::Bf16 => {
            fill(&t.half_val, n, 2, "half_val", |o, v| o.put_u16_le(v as u16))
        }
        DataType::Bytes => Err("BYTES travels in string_val".into()),
    }
}
