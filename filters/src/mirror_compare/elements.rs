//! A tensor's elements in their own type, read from typed contents or the raw form, so two
//! answers compare element by element without a copy into a common type.

use bytes::Bytes;

use crate::translate::DataType;
use crate::translate::pb::InferTensorContents;
use crate::translate::raw;

/// A tensor's elements.
#[derive(Debug, Clone, PartialEq)]
pub enum Elements {
    /// BOOL.
    Bool(Vec<bool>),
    /// INT8, INT16, INT32.
    Int(Vec<i32>),
    /// INT64.
    Int64(Vec<i64>),
    /// UINT8, UINT16, UINT32.
    Uint(Vec<u32>),
    /// UINT64.
    Uint64(Vec<u64>),
    /// FP32.
    Fp32(Vec<f32>),
    /// FP64.
    Fp64(Vec<f64>),
    /// FP16 and BF16, widened (they have only a raw form).
    Half(Vec<f32>),
    /// BYTES.
    Bytes(Vec<Bytes>),
}

// === impl Elements ===

impl Elements {
    /// The elements of typed contents of datatype `dt`.
    pub(crate) fn from_contents(dt: DataType, c: InferTensorContents) -> Self {
        match dt {
            DataType::Bool => Elements::Bool(c.bool_contents),
            DataType::Int8 | DataType::Int16 | DataType::Int32 => Elements::Int(c.int_contents),
            DataType::Int64 => Elements::Int64(c.int64_contents),
            DataType::Uint8 | DataType::Uint16 | DataType::Uint32 => {
                Elements::Uint(c.uint_contents)
            }
            DataType::Uint64 => Elements::Uint64(c.uint64_contents),
            DataType::Fp32 => Elements::Fp32(c.fp32_contents),
            DataType::Fp64 => Elements::Fp64(c.fp64_contents),
            DataType::Bytes => Elements::Bytes(c.bytes_contents),
            // No typed form exists: typed contents of these carry no elements.
            DataType::Fp16 | DataType::Bf16 => Elements::Half(Vec::new()),
        }
    }

    /// The elements of a raw tensor of datatype `dt`.
    pub(crate) fn from_raw(dt: DataType, bytes: &Bytes) -> Result<Self, String> {
        let halves = |widen: fn(u16) -> f32| -> Result<Self, String> {
            raw::count_fixed(dt, bytes.len())?;
            Ok(Elements::Half(
                bytes
                    .chunks_exact(2)
                    .map(|b| widen(u16::from_le_bytes([b[0], b[1]])))
                    .collect(),
            ))
        };
        match dt {
            DataType::Fp16 => halves(|b| half::f16::from_bits(b).to_f32()),
            DataType::Bf16 => halves(|b| half::bf16::from_bits(b).to_f32()),
            _ => Ok(Self::from_contents(dt, raw::decode(dt, bytes)?)),
        }
    }

    /// How many elements.
    pub fn len(&self) -> usize {
        match self {
            Elements::Bool(v) => v.len(),
            Elements::Int(v) => v.len(),
            Elements::Int64(v) => v.len(),
            Elements::Uint(v) => v.len(),
            Elements::Uint64(v) => v.len(),
            Elements::Fp32(v) | Elements::Half(v) => v.len(),
            Elements::Fp64(v) => v.len(),
            Elements::Bytes(v) => v.len(),
        }
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Element `i` as a number (`None` for BYTES or out of range). 64-bit integers beyond
    /// 2^53 lose precision, which a tolerance compare accepts.
    pub fn number(&self, i: usize) -> Option<f64> {
        match self {
            Elements::Bool(v) => v.get(i).map(|&b| f64::from(u8::from(b))),
            Elements::Int(v) => v.get(i).map(|&x| f64::from(x)),
            Elements::Int64(v) => v.get(i).map(|&x| x as f64),
            Elements::Uint(v) => v.get(i).map(|&x| f64::from(x)),
            Elements::Uint64(v) => v.get(i).map(|&x| x as f64),
            Elements::Fp32(v) | Elements::Half(v) => v.get(i).map(|&x| f64::from(x)),
            Elements::Fp64(v) => v.get(i).copied(),
            Elements::Bytes(_) => None,
        }
    }

    /// Element `i` of a BYTES tensor.
    pub fn bytes(&self, i: usize) -> Option<&Bytes> {
        match self {
            Elements::Bytes(v) => v.get(i),
            _ => None,
        }
    }

    /// Element `i` as text, for a mismatch report (BYTES lossily, at most 64 bytes).
    pub fn text(&self, i: usize) -> String {
        match (self.number(i), self.bytes(i)) {
            (Some(n), _) => n.to_string(),
            (None, Some(b)) => String::from_utf8_lossy(&b[..b.len().min(64)]).into_owned(),
            (None, None) => "(none)".to_owned(),
        }
    }

    /// Whether the elements are floating point (classification scores).
    pub fn is_float(&self) -> bool {
        matches!(
            self,
            Elements::Fp32(_) | Elements::Fp64(_) | Elements::Half(_)
        )
    }
}
