//! A streaming parser for OIP REST infer JSON (requests and responses share a shape).
//!
//! Tensor `data` is decoded straight into the protobuf packed field of its datatype with serde
//! visitors (no `serde_json::Value` tree). When `datatype` comes after `data` in the object, the
//! values are held as untyped scalars and converted once the datatype is known. Every decoded
//! byte is charged to a [`Budget`], so a body cannot expand past the decoded-size limit, and
//! capacity reserved from a declared `shape` is capped by the JSON's own length, so a forged
//! shape allocates nothing.

use std::cell::Cell;
use std::collections::HashMap;
use std::fmt;

use bytes::Bytes;
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::datatype::DataType;
use super::error::TranslateError;
use super::params::Params;
use super::pb::{InferParameter, InferTensorContents};

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
    /// Decoded into the packed field of `dt`; `count` elements.
    Typed {
        dt: DataType,
        contents: InferTensorContents,
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
    let mut de = serde_json::Deserializer::from_slice(json);
    let seed = InferSeed {
        budget,
        json_len: json.len(),
    };
    let parsed = seed.deserialize(&mut de).and_then(|v| de.end().map(|()| v));
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
    ) -> Result<(InferTensorContents, usize), String> {
        match self {
            Decoded::Typed {
                dt: got,
                contents,
                count,
            } if got == dt => Ok((contents, count)),
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
                Ok((sink.contents, sink.count))
            }
        }
    }
}

/// Where decoded values go.
struct Sink<'b> {
    dt: Option<DataType>,
    contents: InferTensorContents,
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
            DataType::Fp32 => contents.fp32_contents.reserve(cap),
            DataType::Fp64 => contents.fp64_contents.reserve(cap),
            DataType::Bytes => contents.bytes_contents.reserve(cap),
            DataType::Fp16 | DataType::Bf16 => {}
        }
        Ok(Sink {
            dt: Some(dt),
            contents,
            deferred: Vec::new(),
            count: 0,
            budget,
        })
    }

    fn deferred(budget: &'b Budget) -> Self {
        Sink {
            dt: None,
            contents: InferTensorContents::default(),
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

    fn push_f64(&mut self, v: f64) -> Result<(), String> {
        match self.dt {
            None => {
                self.charge(16)?;
                self.deferred.push(Scalar::F64(v));
            }
            Some(DataType::Fp32) => {
                self.charge(4)?;
                self.contents.fp32_contents.push(v as f32);
            }
            Some(DataType::Fp64) => {
                self.charge(8)?;
                self.contents.fp64_contents.push(v);
            }
            Some(dt) => return Err(Self::mismatch(dt, &v)),
        }
        Ok(())
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
struct DataSeed<'s, 'b>(&'s mut Sink<'b>);

impl<'de> DeserializeSeed<'de> for DataSeed<'_, '_> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for DataSeed<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array of tensor elements")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(DataSeed(&mut *self.0))?.is_some() {}
        Ok(())
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<(), E> {
        self.0.push_bool(v).map_err(E::custom)
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<(), E> {
        self.0.push_i64(v).map_err(E::custom)
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<(), E> {
        self.0.push_u64(v).map_err(E::custom)
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<(), E> {
        self.0.push_f64(v).map_err(E::custom)
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<(), E> {
        self.0.push_str(v).map_err(E::custom)
    }
}

/// The top-level infer object.
struct InferSeed<'b> {
    budget: &'b Budget,
    json_len: usize,
}

impl<'de> DeserializeSeed<'de> for InferSeed<'_> {
    type Value = InferJson;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<InferJson, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for InferSeed<'_> {
    type Value = InferJson;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an inference request or response object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<InferJson, A::Error> {
        let mut out = InferJson::default();
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            match &*key {
                "id" => out.id = map.next_value::<Option<String>>()?,
                "model_name" => out.model_name = map.next_value::<Option<String>>()?,
                "model_version" => out.model_version = map.next_value::<Option<String>>()?,
                "parameters" => out.parameters = map.next_value::<Params>()?.0,
                "inputs" => {
                    out.inputs = map.next_value_seed(TensorsSeed {
                        budget: self.budget,
                        json_len: self.json_len,
                        list: "inputs",
                    })?
                }
                "outputs" => {
                    out.outputs = map.next_value_seed(TensorsSeed {
                        budget: self.budget,
                        json_len: self.json_len,
                        list: "outputs",
                    })?
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(out)
    }
}

struct TensorsSeed<'b> {
    budget: &'b Budget,
    json_len: usize,
    list: &'static str,
}

impl<'de> DeserializeSeed<'de> for TensorsSeed<'_> {
    type Value = Vec<JsonTensor>;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Vec<JsonTensor>, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for TensorsSeed<'_> {
    type Value = Vec<JsonTensor>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "an array of {} tensors", self.list)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<JsonTensor>, A::Error> {
        let mut out = Vec::new();
        while let Some(t) = seq.next_element_seed(TensorSeed {
            budget: self.budget,
            json_len: self.json_len,
            label: (self.list, out.len()),
        })? {
            out.push(t);
        }
        Ok(out)
    }
}

struct TensorSeed<'b> {
    budget: &'b Budget,
    json_len: usize,
    label: (&'static str, usize),
}

impl<'de> DeserializeSeed<'de> for TensorSeed<'_> {
    type Value = JsonTensor;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<JsonTensor, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for TensorSeed<'_> {
    type Value = JsonTensor;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a tensor object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<JsonTensor, A::Error> {
        let mut t = JsonTensor::default();
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            match &*key {
                "name" => t.name = Some(map.next_value()?),
                "datatype" => t.datatype = Some(map.next_value()?),
                "shape" => t.shape = Some(map.next_value()?),
                "parameters" => t.parameters = map.next_value::<Params>()?.0,
                "data" => {
                    let label = match &t.name {
                        Some(n) => format!("tensor {n:?}"),
                        None => format!("{}[{}]", self.label.0, self.label.1),
                    };
                    let known = t.datatype.as_deref().map(|d| {
                        DataType::parse(d).ok_or_else(|| format!("unknown datatype {d:?}"))
                    });
                    let mut sink = match known {
                        Some(Ok(dt)) => {
                            let declared = t
                                .shape
                                .as_deref()
                                .map_or(0, |s| declared_count(s).unwrap_or(0));
                            Sink::typed(dt, declared, self.json_len, self.budget)
                                .map_err(|e| de::Error::custom(format!("{label}: {e}")))?
                        }
                        Some(Err(e)) => return Err(de::Error::custom(format!("{label}: {e}"))),
                        None => Sink::deferred(self.budget),
                    };
                    map.next_value_seed(DataSeed(&mut sink))
                        .map_err(|e| de::Error::custom(format!("{label}: data: {e}")))?;
                    t.data = Some(match sink.dt {
                        Some(dt) => Decoded::Typed {
                            dt,
                            contents: sink.contents,
                            count: sink.count,
                        },
                        None => Decoded::Deferred(sink.deferred),
                    });
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(t)
    }
}

/// The element count a shape declares; `None` for a negative dimension or overflow.
pub(crate) fn declared_count(shape: &[i64]) -> Option<usize> {
    shape.iter().try_fold(1usize, |acc, &d| {
        usize::try_from(d).ok().and_then(|d| acc.checked_mul(d))
    })
}
