//! Decoding one tensor's `data` array, flat or nested, into the packed protobuf field of its
//! datatype: each element converted, range-checked and charged to the [`Budget`] as it is
//! read, or held as a [`Scalar`] until a late `datatype` is known ([`Decoded::resolve`]).

use std::fmt;

use bytes::Bytes;

use super::reader::Num;
use super::{Budget, Decoded, Scalar};
use crate::translate::datatype::DataType;
use crate::translate::pb::InferTensorContents;
use crate::translate::tensor_data::TensorData;

mod walk;

pub(super) use walk::data;

/// Where decoded values go.
pub(super) struct Sink<'b> {
    pub(super) dt: Option<DataType>,
    contents: InferTensorContents,
    /// FP32 values as little-endian bytes: the packed field's payload and the raw form alike,
    /// so the encoder sends these bytes as they are.
    fp32: Vec<u8>,
    pub(super) deferred: Vec<Scalar>,
    count: usize,
    budget: &'b Budget,
}

// === impl Decoded ===

impl Decoded {
    /// Converts to typed contents of `dt`, checking each deferred value.
    pub(crate) fn resolve(
        self,
        dt: DataType,
        budget: &Budget,
    ) -> Result<(TensorData, usize), String> {
        match self {
            Decoded::Typed {
                dt: got,
                data,
                count,
            } if got == dt => Ok((data, count)),
            Decoded::Typed { .. } => Err("internal: datatype changed after decoding".into()),
            Decoded::Deferred(scalars) => {
                let mut sink = Sink::typed(dt, scalars.len(), usize::MAX, budget)?;
                for s in scalars {
                    match s {
                        Scalar::Bool(b) => sink.push_bool(b)?,
                        Scalar::I64(v) => sink.push_i64(v)?,
                        Scalar::U64(v) => sink.push_u64(v)?,
                        Scalar::F64(v) => sink.push_f64(v)?,
                        Scalar::Str(s) => sink.push_str(&s)?,
                    }
                }
                Ok(sink.finish())
            }
        }
    }
}

// === impl Sink ===

impl<'b> Sink<'b> {
    pub(super) fn typed(
        dt: DataType,
        declared: usize,
        json_len: usize,
        budget: &'b Budget,
    ) -> Result<Self, String> {
        if !dt.has_typed_form() {
            return Err(format!(
                "datatype {} has no JSON form (send it with the binary tensor extension)",
                dt.as_str()
            ));
        }
        // Each JSON element takes at least two bytes ("0,"), so the document bounds the count
        // whatever the declared shape says.
        let cap = declared.min(json_len / 2 + 1);
        let mut contents = InferTensorContents::default();
        let mut fp32 = Vec::new();
        match dt {
            DataType::Bool => contents.bool_contents.reserve(cap),
            DataType::Int8 | DataType::Int16 | DataType::Int32 => {
                contents.int_contents.reserve(cap)
            }
            DataType::Int64 => contents.int64_contents.reserve(cap),
            DataType::Uint8 | DataType::Uint16 | DataType::Uint32 => {
                contents.uint_contents.reserve(cap)
            }
            DataType::Uint64 => contents.uint64_contents.reserve(cap),
            DataType::Fp32 => fp32.reserve(cap.saturating_mul(4)),
            DataType::Fp64 => contents.fp64_contents.reserve(cap),
            DataType::Bytes => contents.bytes_contents.reserve(cap),
            DataType::Fp16 | DataType::Bf16 => {}
        }
        Ok(Sink {
            dt: Some(dt),
            contents,
            fp32,
            deferred: Vec::new(),
            count: 0,
            budget,
        })
    }

    pub(super) fn deferred(budget: &'b Budget) -> Self {
        Sink {
            dt: None,
            contents: InferTensorContents::default(),
            fp32: Vec::new(),
            deferred: Vec::new(),
            count: 0,
            budget,
        }
    }

    fn charge(&mut self, n: usize) -> Result<(), String> {
        self.count += 1;
        if self.budget.charge(n as u64) {
            Ok(())
        } else {
            Err("decoded tensor data exceeds the limit".into())
        }
    }

    fn mismatch(dt: DataType, found: &dyn fmt::Display) -> String {
        format!("value {found} is not a valid {}", dt.as_str())
    }

    fn push_bool(&mut self, v: bool) -> Result<(), String> {
        let Some(dt) = self.dt else {
            self.charge(16)?;
            self.deferred.push(Scalar::Bool(v));
            return Ok(());
        };
        if dt != DataType::Bool {
            return Err(Self::mismatch(dt, &v));
        }
        self.charge(1)?;
        self.contents.bool_contents.push(v);
        Ok(())
    }

    fn push_i64(&mut self, v: i64) -> Result<(), String> {
        let Some(dt) = self.dt else {
            self.charge(16)?;
            self.deferred.push(Scalar::I64(v));
            return Ok(());
        };
        if v >= 0 {
            return self.push_u64(v.unsigned_abs());
        }
        let bad = || Self::mismatch(dt, &v);
        match dt {
            DataType::Int8 => {
                i8::try_from(v).map_err(|_| bad())?;
                self.push_int(v)
            }
            DataType::Int16 => {
                i16::try_from(v).map_err(|_| bad())?;
                self.push_int(v)
            }
            DataType::Int32 => self.push_int(v),
            DataType::Int64 => {
                self.charge(8)?;
                self.contents.int64_contents.push(v);
                Ok(())
            }
            DataType::Fp32 | DataType::Fp64 => self.push_f64(v as f64),
            _ => Err(bad()),
        }
    }

    fn push_int(&mut self, v: i64) -> Result<(), String> {
        let v = i32::try_from(v).map_err(|_| format!("value {v} is not a valid INT32"))?;
        self.charge(4)?;
        self.contents.int_contents.push(v);
        Ok(())
    }

    fn push_u64(&mut self, v: u64) -> Result<(), String> {
        let Some(dt) = self.dt else {
            self.charge(16)?;
            self.deferred.push(Scalar::U64(v));
            return Ok(());
        };
        let bad = || Self::mismatch(dt, &v);
        let max = match dt {
            DataType::Uint8 => u64::from(u8::MAX),
            DataType::Uint16 => u64::from(u16::MAX),
            DataType::Uint32 => u64::from(u32::MAX),
            DataType::Int8 => i8::MAX as u64,
            DataType::Int16 => i16::MAX as u64,
            DataType::Int32 => i32::MAX as u64,
            DataType::Int64 => i64::MAX as u64,
            DataType::Uint64 | DataType::Fp32 | DataType::Fp64 => u64::MAX,
            _ => return Err(bad()),
        };
        if v > max {
            return Err(bad());
        }
        match dt {
            DataType::Uint8 | DataType::Uint16 | DataType::Uint32 => {
                self.charge(4)?;
                self.contents.uint_contents.push(v as u32);
            }
            DataType::Uint64 => {
                self.charge(8)?;
                self.contents.uint64_contents.push(v);
            }
            DataType::Int8 | DataType::Int16 | DataType::Int32 => {
                self.charge(4)?;
                self.contents.int_contents.push(v as i32);
            }
            DataType::Int64 => {
                self.charge(8)?;
                self.contents.int64_contents.push(v as i64);
            }
            _ => return self.push_f64(v as f64),
        }
        Ok(())
    }

    #[inline]
    fn push_f32(&mut self, v: f32) -> Result<(), &'static str> {
        if !self.budget.charge(4) {
            return Err("decoded tensor data exceeds the limit");
        }
        self.count += 1;
        self.fp32.extend_from_slice(&v.to_le_bytes());
        Ok(())
    }

    /// Accounts for `n` FP32 values [`Reader::fp32_run`] appended to `fp32`: one budget charge
    /// per run rather than per element (the run itself is bounded by the document's length).
    fn ran_fp32(&mut self, n: usize) -> Result<(), &'static str> {
        self.count += n;
        if self.budget.charge((n as u64).saturating_mul(4)) {
            Ok(())
        } else {
            Err("decoded tensor data exceeds the limit")
        }
    }

    /// The decoded values and their count.
    pub(super) fn finish(self) -> (TensorData, usize) {
        let data = if self.dt == Some(DataType::Fp32) {
            TensorData::Fp32Le(Bytes::from(self.fp32))
        } else {
            TensorData::Typed(self.contents)
        };
        (data, self.count)
    }

    fn push_f64(&mut self, v: f64) -> Result<(), String> {
        match self.dt {
            None => {
                self.charge(16)?;
                self.deferred.push(Scalar::F64(v));
            }
            Some(DataType::Fp32) => {
                let narrow = v as f32;
                if v.is_finite() && (!narrow.is_finite() || (narrow == 0.0 && v != 0.0)) {
                    return Err(format!(
                        "element {}: {v} is out of range for FP32",
                        self.count
                    ));
                }
                self.charge(4)?;
                self.fp32.extend_from_slice(&narrow.to_le_bytes());
            }
            Some(DataType::Fp64) => {
                self.charge(8)?;
                self.contents.fp64_contents.push(v);
            }
            Some(dt) => return Err(Self::mismatch(dt, &v)),
        }
        Ok(())
    }

    /// Refuses a finite decimal that became ±inf (too large) or 0 (too small, yet not zero)
    /// in `dt`: the model would get a value the caller did not write. `NaN` and `Infinity`
    /// literals are what the caller wrote and pass.
    fn in_range(&self, n: &Num<'_>, finite: bool, zero: bool, dt: DataType) -> Result<(), String> {
        let (Num::Int(d) | Num::Float(d)) = n else {
            return Ok(());
        };
        let lost = !finite || (zero && d.has_nonzero_digit());
        if lost {
            return Err(self.out_of_range(d.text(), dt));
        }
        Ok(())
    }

    /// "element N: <the number as written, cut at 40 characters> is out of range for DT".
    fn out_of_range(&self, text: &str, dt: DataType) -> String {
        let shown: String = text.chars().take(40).collect();
        let more = if text.len() > 40 { "…" } else { "" };
        format!(
            "element {}: {shown}{more} is out of range for {}",
            self.count,
            dt.as_str()
        )
    }

    /// A number token: parsed once, straight into the element type. FP32 and FP64 (the bulk
    /// of real traffic) skip the integer classification entirely.
    fn push_num(&mut self, n: Num<'_>) -> Result<(), String> {
        let invalid = || format!("invalid number {n:?}");
        match (self.dt, n) {
            (Some(DataType::Fp32), _) => {
                let v = n.to_f32().ok_or_else(invalid)?;
                self.in_range(&n, v.is_finite(), v == 0.0, DataType::Fp32)?;
                self.charge(4)?;
                self.fp32.extend_from_slice(&v.to_le_bytes());
                Ok(())
            }
            (Some(DataType::Fp64), _) => {
                let v = n.to_f64().ok_or_else(invalid)?;
                self.in_range(&n, v.is_finite(), v == 0.0, DataType::Fp64)?;
                self.charge(8)?;
                self.contents.fp64_contents.push(v);
                Ok(())
            }
            (dt, Num::Int(d)) => {
                let exact = if d.is_negative() {
                    d.as_i64().map(|v| self.push_i64(v))
                } else {
                    d.as_u64().map(|v| self.push_u64(v))
                };
                match (exact, dt) {
                    (Some(pushed), _) => pushed,
                    // Beyond 64 bits no integer type holds it: said as written, with its
                    // element, not as the float it would round to.
                    (None, Some(dt)) if dt.is_integer() => Err(self.out_of_range(d.text(), dt)),
                    // Otherwise it is a float, as serde_json reads it.
                    (None, _) => self.push_f64(n.to_f64().ok_or_else(invalid)?),
                }
            }
            (_, Num::Float(_) | Num::NonFinite(_)) => {
                self.push_f64(n.to_f64().ok_or_else(invalid)?)
            }
        }
    }

    fn push_str(&mut self, v: &str) -> Result<(), String> {
        match self.dt {
            None => {
                self.charge(16 + v.len())?;
                self.deferred.push(Scalar::Str(v.to_owned()));
            }
            Some(DataType::Bytes) => {
                self.charge(4 + v.len())?;
                self.contents
                    .bytes_contents
                    .push(Bytes::copy_from_slice(v.as_bytes()));
            }
            Some(dt) => return Err(Self::mismatch(dt, &format_args!("{v:?}"))),
        }
        Ok(())
    }
}
