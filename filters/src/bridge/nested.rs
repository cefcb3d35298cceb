//! Tensors as KServe V1 writes them: nested JSON arrays whose nesting is the shape, read into
//! a flat list of element tokens, and written back nested or flat.
//!
//! Elements stay the caller's own number tokens (borrowed from the body, never parsed into
//! floats and printed again), so a value crosses the bridge bit-exactly and is copied once,
//! into the translated body. A row of several inputs or outputs (`{"a": ..., "b": ...}`) feeds
//! one [`Nest`] per tensor, each below the batch dimension the rows make.

use std::borrow::Cow;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;

use crate::translate::DataType;
use crate::translate::json_in::reader::{Num, Reader};

/// One tensor element as it appeared in JSON.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Elem<'a> {
    /// A number token; `int` when it has no fraction or exponent.
    Num { text: &'a str, int: bool },
    /// `true` / `false`.
    Bool(bool),
    /// A JSON string.
    Str(Cow<'a, str>),
    /// A V1 binary value, `{"b64": "..."}`, decoded.
    Bin(Vec<u8>),
}

/// A tensor read from JSON: its shape and its elements in row-major order.
#[derive(Debug, Default)]
pub(crate) struct Tensor<'a> {
    pub(crate) shape: Vec<usize>,
    pub(crate) elems: Vec<Elem<'a>>,
}

/// Gathers one tensor from nested arrays, checking that every row at a depth has one length.
#[derive(Debug, Default)]
pub(crate) struct Nest<'a> {
    dims: Vec<Option<usize>>,
    leaf_depth: Option<usize>,
    elems: Vec<Elem<'a>>,
}

const RAGGED: &str = "ragged tensor: rows of different lengths or depths";

// === impl Nest ===

impl<'a> Nest<'a> {
    /// Reads one value at `depth` (0 for a whole tensor, 1 for a row under a batch dimension).
    pub(crate) fn value(&mut self, r: &mut Reader<'a>, depth: usize) -> Result<(), String> {
        if r.peek() != Some(b'[') {
            let elem = scalar(r)?;
            return self.leaf(depth, elem);
        }
        let mut n = 0usize;
        r.array(|r| {
            n += 1;
            self.value(r, depth + 1)
        })?;
        if self.leaf_depth.is_some_and(|l| l <= depth) {
            return Err(RAGGED.to_owned());
        }
        if self.dims.len() <= depth {
            self.dims.resize(depth + 1, None);
        }
        match self.dims.get_mut(depth) {
            Some(slot @ None) => *slot = Some(n),
            Some(Some(d)) if *d != n => return Err(RAGGED.to_owned()),
            _ => {}
        }
        Ok(())
    }

    /// Adds an element read elsewhere (a `{"b64": ...}` met while looking for names).
    pub(crate) fn leaf(&mut self, depth: usize, elem: Elem<'a>) -> Result<(), String> {
        match self.leaf_depth {
            None => self.leaf_depth = Some(depth),
            Some(l) if l != depth => return Err(RAGGED.to_owned()),
            Some(_) => {}
        }
        if self.dims.get(depth).is_some_and(Option::is_some) {
            return Err(RAGGED.to_owned());
        }
        self.elems.push(elem);
        Ok(())
    }

    /// The tensor; `batch` is the number of rows when values were read at depth 1.
    pub(crate) fn finish(self, batch: Option<usize>) -> Result<Tensor<'a>, String> {
        let mut dims = self.dims;
        if let Some(b) = batch {
            match dims.first_mut() {
                Some(slot) => *slot = Some(b),
                None => dims.push(Some(b)),
            }
        }
        let depth = self
            .leaf_depth
            .unwrap_or_else(|| dims.iter().take_while(|d| d.is_some()).count());
        let mut shape = Vec::with_capacity(depth);
        for d in dims.iter().take(depth) {
            shape.push(d.ok_or_else(|| RAGGED.to_owned())?);
        }
        if self.leaf_depth.is_none() && shape.iter().product::<usize>() != 0 {
            return Err(RAGGED.to_owned());
        }
        Ok(Tensor {
            shape,
            elems: self.elems,
        })
    }
}

/// One scalar element: a number, bool, string or `{"b64": "..."}`.
pub(crate) fn scalar<'a>(r: &mut Reader<'a>) -> Result<Elem<'a>, String> {
    match r.peek() {
        Some(b'"') => Ok(Elem::Str(r.string()?)),
        Some(b't') if r.literal(b"true") => Ok(Elem::Bool(true)),
        Some(b'f') if r.literal(b"false") => Ok(Elem::Bool(false)),
        Some(b'{') => {
            let mut bin = None;
            r.object(|r, key| {
                if key != "b64" {
                    return Err(format!("unexpected key {key:?} in a tensor element"));
                }
                bin = Some(b64(&r.string()?)?);
                Ok(())
            })?;
            bin.map(Elem::Bin)
                .ok_or_else(|| r.error("expected {\"b64\": \"...\"}"))
        }
        Some(b'n') => Err(r.error("null is not a tensor element")),
        _ => Ok(match r.number()? {
            Num::Int(d) => Elem::Num {
                text: d.text(),
                int: true,
            },
            Num::Float(d) => Elem::Num {
                text: d.text(),
                int: false,
            },
            Num::NonFinite(v) => Elem::Num {
                text: non_finite(v),
                int: false,
            },
        }),
    }
}

/// Decodes a V1 `b64` value.
pub(crate) fn b64(text: &str) -> Result<Vec<u8>, String> {
    B64.decode(text)
        .map_err(|e| format!("invalid base64 in a b64 value: {e}"))
}

fn non_finite(v: f64) -> &'static str {
    if v.is_nan() {
        "NaN"
    } else if v > 0.0 {
        "Infinity"
    } else {
        "-Infinity"
    }
}

/// Checks that every element fits `dt` (V1 JSON carries no types: the signature gives them).
pub(crate) fn check(elems: &[Elem<'_>], dt: DataType) -> Result<(), String> {
    for e in elems {
        let ok = match (dt, e) {
            (DataType::Bool, Elem::Bool(_)) => true,
            (DataType::Fp32 | DataType::Fp64, Elem::Num { .. }) => true,
            (DataType::Bytes, Elem::Str(_) | Elem::Bin(_)) => true,
            (_, Elem::Num { text, int: true }) => int_fits(dt, text),
            _ => false,
        };
        if !ok {
            return Err(format!("{} is not a {} value", describe(e), dt.as_str()));
        }
    }
    Ok(())
}

fn int_fits(dt: DataType, text: &str) -> bool {
    let (lo, hi): (i128, i128) = match dt {
        DataType::Uint8 => (0, u8::MAX.into()),
        DataType::Uint16 => (0, u16::MAX.into()),
        DataType::Uint32 => (0, u32::MAX.into()),
        DataType::Uint64 => (0, u64::MAX.into()),
        DataType::Int8 => (i8::MIN.into(), i8::MAX.into()),
        DataType::Int16 => (i16::MIN.into(), i16::MAX.into()),
        DataType::Int32 => (i32::MIN.into(), i32::MAX.into()),
        DataType::Int64 => (i64::MIN.into(), i64::MAX.into()),
        _ => return false,
    };
    text.parse::<i128>().is_ok_and(|v| (lo..=hi).contains(&v))
}

fn describe(e: &Elem<'_>) -> String {
    match e {
        Elem::Num { text, .. } => (*text).to_owned(),
        Elem::Bool(b) => b.to_string(),
        Elem::Str(s) => format!("{:?}", s.chars().take(32).collect::<String>()),
        Elem::Bin(_) => "a b64 value".to_owned(),
    }
}

/// Writes one element; BYTES as `{"b64": ...}` when `b64`. A binary value that is not UTF-8
/// cannot be a JSON string.
pub(crate) fn write_elem(out: &mut Vec<u8>, e: &Elem<'_>, b64: bool) -> Result<(), String> {
    match e {
        Elem::Num { text, .. } => out.extend_from_slice(text.as_bytes()),
        Elem::Bool(true) => out.extend_from_slice(b"true"),
        Elem::Bool(false) => out.extend_from_slice(b"false"),
        Elem::Str(s) if b64 => write_b64(out, s.as_bytes()),
        Elem::Bin(b) if b64 => write_b64(out, b),
        Elem::Str(s) => write_str(out, s),
        Elem::Bin(b) => match std::str::from_utf8(b) {
            Ok(s) => write_str(out, s),
            Err(_) => {
                return Err(
                    "a b64 value that is not UTF-8 has no OIP JSON form (binary data is not bridged yet)"
                        .to_owned(),
                );
            }
        },
    }
    Ok(())
}

fn write_b64(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(b"{\"b64\":\"");
    out.extend_from_slice(B64.encode(bytes).as_bytes());
    out.extend_from_slice(b"\"}");
}

/// A JSON string literal.
pub(crate) fn write_str(out: &mut Vec<u8>, s: &str) {
    // serde_json's escaping; writing to a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, s);
}

/// Writes `elems` as nested arrays of `shape` (a bare element for shape `[]`).
/// OIP tensors (`{"name","datatype","shape","data"}` objects, comma-separated): the inputs
/// of a request to a v2 server, or the outputs of an answer to a v2 caller.
pub(crate) fn write_oip_tensors(
    out: &mut Vec<u8>,
    tensors: &[(&super::TensorSig, Tensor<'_>)],
) -> Result<(), String> {
    for (i, (sig, t)) in tensors.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(b"{\"name\":");
        write_str(out, &sig.name);
        out.extend_from_slice(b",\"datatype\":\"");
        out.extend_from_slice(sig.datatype.as_str().as_bytes());
        out.extend_from_slice(b"\",\"shape\":");
        write_shape(out, &t.shape);
        out.extend_from_slice(b",\"data\":");
        write_flat(out, &t.elems, false)?;
        out.push(b'}');
    }
    Ok(())
}

/// The rows of tensors sharing their first (batch) dimension, comma-separated: row `r` of a
/// lone tensor as its nested slice, of several as an object keyed by their names (V1's row
/// format, both for `instances` and `predictions`).
pub(crate) fn write_rows(
    out: &mut Vec<u8>,
    batch: usize,
    tensors: &[(&super::TensorSig, &Tensor<'_>)],
) -> Result<(), String> {
    let named = tensors.len() > 1;
    for row in 0..batch {
        if row > 0 {
            out.push(b',');
        }
        if named {
            out.push(b'{');
        }
        for (i, (sig, t)) in tensors.iter().enumerate() {
            let inner = t.shape.get(1..).unwrap_or_default();
            let step = inner.iter().product::<usize>();
            let from = row.saturating_mul(step);
            let part = t
                .elems
                .get(from..from.saturating_add(step))
                .unwrap_or_default();
            if named {
                if i > 0 {
                    out.push(b',');
                }
                write_str(out, &sig.name);
                out.push(b':');
            }
            write_nested(out, inner, part, super::b64_named(sig))?;
        }
        if named {
            out.push(b'}');
        }
    }
    Ok(())
}

pub(crate) fn write_nested(
    out: &mut Vec<u8>,
    shape: &[usize],
    elems: &[Elem<'_>],
    b64: bool,
) -> Result<(), String> {
    let Some((&n, inner)) = shape.split_first() else {
        return match elems.first() {
            Some(e) => write_elem(out, e, b64),
            None => Err("an empty tensor has no scalar value".to_owned()),
        };
    };
    let step = inner.iter().product::<usize>();
    out.push(b'[');
    for i in 0..n {
        if i > 0 {
            out.push(b',');
        }
        let from = i.saturating_mul(step);
        let part = elems
            .get(from..from.saturating_add(step))
            .unwrap_or_default();
        write_nested(out, inner, part, b64)?;
    }
    out.push(b']');
    Ok(())
}

/// Writes `elems` as one flat array (OIP `data`).
pub(crate) fn write_flat(out: &mut Vec<u8>, elems: &[Elem<'_>], b64: bool) -> Result<(), String> {
    out.push(b'[');
    for (i, e) in elems.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_elem(out, e, b64)?;
    }
    out.push(b']');
    Ok(())
}

/// Whether a tensor of `shape` fits the signature's `want` (`-1` = any size).
pub(crate) fn fits(shape: &[usize], want: &[i64]) -> bool {
    shape.len() == want.len()
        && shape
            .iter()
            .zip(want)
            .all(|(&s, &w)| w < 0 || u64::try_from(w).is_ok_and(|w| w == s as u64))
}

/// Writes an OIP `shape` array.
pub(crate) fn write_shape(out: &mut Vec<u8>, shape: &[usize]) {
    out.push(b'[');
    for (i, d) in shape.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(d.to_string().as_bytes());
    }
    out.push(b']');
}

/// An OIP `shape` array.
pub(crate) fn shape(r: &mut Reader<'_>) -> Result<Vec<i64>, String> {
    let mut out = Vec::new();
    r.array(|r| {
        let d = match scalar(r)? {
            Elem::Num { text, int: true } => text.parse::<i64>().ok(),
            _ => None,
        };
        out.push(d.ok_or_else(|| "shape entries must be integers".to_owned())?);
        Ok(())
    })?;
    Ok(out)
}

/// The datatype of an OIP `datatype` string.
pub(crate) fn datatype(text: &str) -> Result<DataType, String> {
    DataType::parse(text).ok_or_else(|| format!("unknown datatype {text:?}"))
}
