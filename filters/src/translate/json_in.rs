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
//!
//! The message and tensor objects are parsed here; a tensor's `data` is decoded in [`decode`].

mod decode;
mod params;
pub(crate) mod reader;

use std::cell::Cell;
use std::collections::HashMap;

use self::decode::{Sink, data};
use self::reader::{Num, Reader};
use super::datatype::DataType;
use super::error::TranslateError;
use super::pb::InferParameter;
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
