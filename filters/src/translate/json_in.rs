//! A single-pass parser for OIP REST infer JSON (requests and responses share a shape).
//!
//! Tensor `data` is decoded byte by byte straight into the protobuf packed field of its
//! datatype (no `serde_json::Value` tree, no serde visitor per element): each number token is
//! parsed once into the element type (FP32 text into `f32` directly). That is the hot path of
//! REST → gRPC translation; serde_json with `float_roundtrip` decoded floats at ~250 MiB/s.
//! `NaN`, `Infinity` and `-Infinity` are accepted as Triton's REST writes them. When
//! `datatype` comes after `data` in the object, the values are held as untyped scalars and
//! converted once the datatype is known. Every decoded
//! byte is charged to a [`Budget`], so a body cannot expand past the decoded-size limit, and
//! capacity reserved from a declared `shape` is capped by the JSON's own length, so a forged
//! shape allocates nothing.

mod params;
pub(crate) mod reader;

use std::cell::Cell;
use std::collections::HashMap;
use std::fmt;

use bytes::Bytes;

use self::reader::{Num, Reader};
use super::datatype::DataType;
use super::error::TranslateError;
use super::pb::{InferParameter, InferTensorContents};
use super::tensor_data::TensorData;

/// Decoded-bytes accounting shared by every tensor of one message.
#[derive(Debug)]
pub(crate) struct Budget {
    used: Cell<u64>,
    limit: u64,
    exceeded: Cell<bool>,
}

/// One JSON tensor entry (`inputs[i]` or `outputs[i]`); every field optional here and checked
/// by the caller, since requested outputs carry only `name` and `parameters`.
#[derive(Debug, Default)]
pub(crate) struct JsonTensor {
    pub(crate) name: Option<String>,
    pub(crate) datatype: Option<String>,
    pub(crate) shape: Option<Vec<i64>>,
    pub(crate) parameters: HashMap<String, InferParameter>,
    pub(crate) data: Option<Decoded>,
}

/// Tensor values from `data`.
#[derive(Debug)]
pub(crate) enum Decoded {
    /// Decoded into the packed field of `dt` (FP32 as [`TensorData::Fp32Le`]); `count`
    /// elements.
    Typed {
        dt: DataType,
        data: TensorData,
        count: usize,
    },
    /// `data` came before `datatype`: the scalars, converted later by [`Decoded::resolve`].
    Deferred(Vec<Scalar>),
}

/// A JSON scalar held until the datatype is known.
#[derive(Debug, Clone)]
pub(crate) enum Scalar {
    Bool(bool),
    I64(i64),
    U64(u64),
    F64(f64),
    Str(String),
}

/// A whole infer message: request (`inputs`, `outputs` = requested outputs) or response
/// (`outputs` = tensors, `model_name`, `model_version`).
#[derive(Debug, Default)]
pub(crate) struct InferJson {
    pub(crate) id: Option<String>,
    pub(crate) model_name: Option<String>,
    pub(crate) model_version: Option<String>,
    pub(crate) parameters: HashMap<String, InferParameter>,
    pub(crate) inputs: Vec<JsonTensor>,
    pub(crate) outputs: Vec<JsonTensor>,
}

/// Parses an infer JSON document.
pub(crate) fn parse_infer(json: &[u8], budget: &Budget) -> Result<InferJson, TranslateError> {
    let mut r = Reader::new(json);
    let parsed = infer(&mut r, budget, json.len()).and_then(|v| r.end().map(|()| v));
    match parsed {
        Ok(v) => Ok(v),
        Err(_) if budget.exceeded.get() => Err(budget.too_large()),
        Err(e) => Err(TranslateError::BadRequest(format!(
            "invalid infer JSON: {e}"
        ))),
    }
}

// === impl Budget ===

impl Budget {
    /// A budget of `limit` decoded bytes.
    pub(crate) fn new(limit: u64) -> Self {
        Budget {
            used: Cell::new(0),
            limit,
            exceeded: Cell::new(false),
        }
    }

    /// Charges `n` bytes; false once the limit is passed.
    pub(crate) fn charge(&self, n: u64) -> bool {
        let used = self.used.get().saturating_add(n);
        self.used.set(used);
        let ok = used <= self.limit;
        if !ok {
            self.exceeded.set(true);
        }
        ok
    }

    /// The error for an exceeded budget.
    pub(crate) fn too_large(&self) -> TranslateError {
        TranslateError::TooLarge {
            what: "decoded tensor data",
            limit: self.limit,
        }
    }
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

/// Where decoded values go.
struct Sink<'b> {
    dt: Option<DataType>,
    contents: InferTensorContents,
    /// FP32 values as little-endian bytes: the packed field's payload and the raw form alike,
    /// so the encoder sends these bytes as they are.
    fp32: Vec<u8>,
    deferred: Vec<Scalar>,
    count: usize,
    budget: &'b Budget,
}

// === impl Sink ===

impl<'b> Sink<'b> {
    fn typed(
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

    fn deferred(budget: &'b Budget) -> Self {
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
    fn finish(self) -> (TensorData, usize) {
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
                self.charge(4)?;
                self.fp32.extend_from_slice(&(v as f32).to_le_bytes());
            }
            Some(DataType::Fp64) => {
                self.charge(8)?;
                self.contents.fp64_contents.push(v);
            }
            Some(dt) => return Err(Self::mismatch(dt, &v)),
        }
        Ok(())
    }

    /// A number token: parsed once, straight into the element type. FP32 and FP64 (the bulk
    /// of real traffic) skip the integer classification entirely.
    fn push_num(&mut self, n: Num<'_>) -> Result<(), String> {
        let invalid = || format!("invalid number {n:?}");
        match (self.dt, n) {
            (Some(DataType::Fp32), _) => {
                let v = n.to_f32().ok_or_else(invalid)?;
                self.charge(4)?;
                self.fp32.extend_from_slice(&v.to_le_bytes());
                Ok(())
            }
            (Some(DataType::Fp64), _) => {
                let v = n.to_f64().ok_or_else(invalid)?;
                self.charge(8)?;
                self.contents.fp64_contents.push(v);
                Ok(())
            }
            (_, Num::Int(d)) => {
                // Integers beyond 64 bits are floats, as serde_json reads them.
                let wide = || n.to_f64().ok_or_else(invalid);
                if d.is_negative() {
                    match d.as_i64() {
                        Some(v) => self.push_i64(v),
                        None => self.push_f64(wide()?),
                    }
                } else {
                    match d.as_u64() {
                        Some(v) => self.push_u64(v),
                        None => self.push_f64(wide()?),
                    }
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

/// Decodes `data`, flat or nested, into a [`Sink`].
fn data(r: &mut Reader<'_>, sink: &mut Sink<'_>) -> Result<(), String> {
    if sink.dt == Some(DataType::Fp32) {
        return data_fp32(r, sink);
    }
    r.array(|r| match r.peek() {
        Some(b'[') => data(r, sink),
        Some(b'"') => {
            let s = r.string()?;
            sink.push_str(&s).map_err(|e| r.error(e))
        }
        Some(b't') if r.literal(b"true") => sink.push_bool(true).map_err(|e| r.error(e)),
        Some(b'f') if r.literal(b"false") => sink.push_bool(false).map_err(|e| r.error(e)),
        Some(b'n') if r.literal(b"null") => Err(r.error("null is not a tensor element")),
        _ => {
            let n = r.number()?;
            sink.push_num(n).map_err(|e| r.error(e))
        }
    })
}

/// [`data`] for FP32, the bulk of model traffic: numbers go straight into the packed field's
/// bytes with no per-element dispatch on the datatype. A flat run of plain numbers goes through
/// [`Reader::fp32_run`]; an element it leaves (NaN, a long mantissa, the last bytes of the
/// document) is read here, exactly, and the run resumes after it.
fn data_fp32(r: &mut Reader<'_>, sink: &mut Sink<'_>) -> Result<(), String> {
    r.array(|r| {
        if r.peek() == Some(b'[') {
            return data_fp32(r, sink);
        }
        let ran = r.fp32_run(&mut sink.fp32);
        if ran > 0 {
            return sink.ran_fp32(ran).map_err(|e| r.error(e));
        }
        let v = match r.f32_fast() {
            Some(v) => v,
            None => {
                let n = r.number()?;
                n.to_f32()
                    .ok_or_else(|| r.error(format!("invalid number {n:?}")))?
            }
        };
        sink.push_f32(v).map_err(|e| r.error(e))
    })
}

fn opt_string(r: &mut Reader<'_>) -> Result<Option<String>, String> {
    if r.literal(b"null") {
        Ok(None)
    } else {
        r.string().map(|s| Some(s.into_owned()))
    }
}

/// The top-level infer object.
fn infer(r: &mut Reader<'_>, budget: &Budget, json_len: usize) -> Result<InferJson, String> {
    let mut out = InferJson::default();
    r.object(|r, key| {
        match &*key {
            "id" => out.id = opt_string(r)?,
            "model_name" => out.model_name = opt_string(r)?,
            "model_version" => out.model_version = opt_string(r)?,
            "parameters" => out.parameters = params::read(r)?,
            "inputs" => out.inputs = tensors(r, budget, json_len, "inputs")?,
            "outputs" => out.outputs = tensors(r, budget, json_len, "outputs")?,
            _ => r.skip()?,
        }
        Ok(())
    })?;
    Ok(out)
}

fn tensors(
    r: &mut Reader<'_>,
    budget: &Budget,
    json_len: usize,
    list: &'static str,
) -> Result<Vec<JsonTensor>, String> {
    let mut out = Vec::new();
    r.array(|r| {
        let t = tensor(r, budget, json_len, (list, out.len()))?;
        out.push(t);
        Ok(())
    })?;
    Ok(out)
}

/// A `shape` array.
pub(crate) fn shape(r: &mut Reader<'_>) -> Result<Vec<i64>, String> {
    let mut dims = Vec::new();
    r.array(|r| match r.number()? {
        Num::Int(d) => {
            let dim = d
                .as_i64()
                .ok_or_else(|| r.error(format!("shape dimension {} out of range", d.text())))?;
            dims.push(dim);
            Ok(())
        }
        Num::Float(d) => Err(r.error(format!("shape dimension {} is not an integer", d.text()))),
        Num::NonFinite(v) => Err(r.error(format!("shape dimension {v} is not an integer"))),
    })?;
    Ok(dims)
}

fn tensor(
    r: &mut Reader<'_>,
    budget: &Budget,
    json_len: usize,
    label: (&'static str, usize),
) -> Result<JsonTensor, String> {
    let mut t = JsonTensor::default();
    r.object(|r, key| {
        match &*key {
            "name" => t.name = Some(r.string()?.into_owned()),
            "datatype" => t.datatype = Some(r.string()?.into_owned()),
            "shape" => t.shape = Some(shape(r)?),
            "parameters" => t.parameters = params::read(r)?,
            "data" => {
                let label = match &t.name {
                    Some(n) => format!("tensor {n:?}"),
                    None => format!("{}[{}]", label.0, label.1),
                };
                let known = t
                    .datatype
                    .as_deref()
                    .map(|d| DataType::parse(d).ok_or_else(|| format!("unknown datatype {d:?}")));
                let mut sink = match known {
                    Some(Ok(dt)) => {
                        let declared = t
                            .shape
                            .as_deref()
                            .map_or(0, |s| declared_count(s).unwrap_or(0));
                        Sink::typed(dt, declared, json_len, budget)
                            .map_err(|e| r.error(format!("{label}: {e}")))?
                    }
                    Some(Err(e)) => return Err(r.error(format!("{label}: {e}"))),
                    None => Sink::deferred(budget),
                };
                data(r, &mut sink).map_err(|e| format!("{label}: data: {e}"))?;
                t.data = Some(match sink.dt {
                    Some(dt) => {
                        let (data, count) = sink.finish();
                        Decoded::Typed { dt, data, count }
                    }
                    None => Decoded::Deferred(sink.deferred),
                });
            }
            _ => r.skip()?,
        }
        Ok(())
    })?;
    Ok(t)
}

/// The element count a shape declares; `None` for a negative dimension or overflow.
pub(crate) fn declared_count(shape: &[i64]) -> Option<usize> {
    shape.iter().try_fold(1usize, |acc, &d| {
        usize::try_from(d).ok().and_then(|d| acc.checked_mul(d))
    })
}
