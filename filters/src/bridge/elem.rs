//! One tensor element on the bridge: a JSON token as the sender wrote it, or a value decoded
//! from a binary-extension section in its own type. Either is checked against the
//! signature's datatype, written as a V1 / OIP JSON element, or written in the raw form
//! (little-endian, BYTES with a u32 length first), so a value crosses the bridge bit-exactly
//! whichever form it arrived and leaves in.

use std::borrow::Cow;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use serde_json::ser::{CompactFormatter, Formatter};

use crate::translate::json_in::reader::{Num, Reader};
use crate::translate::{DataType, json_out};

/// One tensor element.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Elem<'a> {
    /// A number token; `int` when it has no fraction or exponent.
    Num { text: &'a str, int: bool },
    /// `true` / `false` (or a binary BOOL byte).
    Bool(bool),
    /// A JSON string.
    Str(Cow<'a, str>),
    /// A V1 binary value (`{"b64": "..."}`, decoded) or a binary BYTES element.
    Bin(Cow<'a, [u8]>),
    /// A number read from a binary section.
    Val(Scalar),
}

/// A number from a binary section, in its datatype's own representation: printing it needs
/// no parsing, and writing it raw again gives back the same bits.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Scalar {
    /// INT8 … INT64.
    Int(i64),
    /// UINT8 … UINT64.
    Uint(u64),
    /// FP32.
    F32(f32),
    /// FP64.
    F64(f64),
    /// FP16 bits.
    F16(u16),
    /// BF16 bits.
    Bf16(u16),
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
            bin.map(|b| Elem::Bin(Cow::Owned(b)))
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
/// FP16 and BF16 take any number, as FP32 does: the value is rounded to the type where it is
/// written raw.
pub(crate) fn check(elems: &[Elem<'_>], dt: DataType) -> Result<(), String> {
    for e in elems {
        let ok = match (dt, e) {
            (DataType::Bool, Elem::Bool(_)) => true,
            (
                DataType::Fp32 | DataType::Fp64 | DataType::Fp16 | DataType::Bf16,
                Elem::Num { .. },
            ) => true,
            (DataType::Bytes, Elem::Str(_) | Elem::Bin(_)) => true,
            (_, Elem::Num { text, int: true }) => text.parse::<i128>().is_ok_and(|v| fits(dt, v)),
            (_, Elem::Val(s)) => s.is(dt),
            _ => false,
        };
        if !ok {
            return Err(format!("{} is not a {} value", describe(e), dt.as_str()));
        }
    }
    Ok(())
}

/// Whether integer `v` is within `dt`'s range (false for non-integer types).
fn fits(dt: DataType, v: i128) -> bool {
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
    (lo..=hi).contains(&v)
}

fn describe(e: &Elem<'_>) -> String {
    match e {
        Elem::Num { text, .. } => (*text).to_owned(),
        Elem::Bool(b) => b.to_string(),
        Elem::Str(s) => format!("{:?}", s.chars().take(32).collect::<String>()),
        Elem::Bin(_) => "a binary value".to_owned(),
        Elem::Val(s) => {
            let mut out = Vec::new();
            s.write_json(&mut out);
            String::from_utf8_lossy(&out).into_owned()
        }
    }
}

/// Writes one element; BYTES as `{"b64": ...}` when `b64`. A binary value that is not UTF-8
/// cannot be a JSON string.
pub(crate) fn write_elem(out: &mut Vec<u8>, e: &Elem<'_>, b64: bool) -> Result<(), String> {
    match e {
        Elem::Num { text, .. } => out.extend_from_slice(text.as_bytes()),
        Elem::Bool(true) => out.extend_from_slice(b"true"),
        Elem::Bool(false) => out.extend_from_slice(b"false"),
        Elem::Val(s) => s.write_json(out),
        Elem::Str(s) if b64 => write_b64(out, s.as_bytes()),
        Elem::Bin(b) if b64 => write_b64(out, b),
        Elem::Str(s) => write_str(out, s),
        Elem::Bin(b) => match std::str::from_utf8(b) {
            Ok(s) => write_str(out, s),
            Err(_) => {
                return Err(
                    "a BYTES element that is not UTF-8 has no JSON string form (only tensors named *_bytes travel as V1's {\"b64\"})"
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

/// A raw tensor's elements, typed by `dt`: numbers as [`Scalar`]s, BYTES as slices of `raw`.
/// Fails for a tensor that is not whole elements (the OIP translator's check).
pub(crate) fn from_raw(dt: DataType, raw: &[u8]) -> Result<Vec<Elem<'_>>, String> {
    let n = crate::translate::raw_count(dt, raw)?;
    let mut out = Vec::with_capacity(n);
    let Some(width) = dt.size() else {
        for e in crate::translate::raw_bytes_elements(raw) {
            out.push(Elem::Bin(Cow::Borrowed(e?)));
        }
        return Ok(out);
    };
    for c in raw.chunks_exact(width) {
        let mut le = [0u8; 8];
        le.get_mut(..width).unwrap_or_default().copy_from_slice(c);
        let u = u64::from_le_bytes(le);
        // Sign-extends a `width`-byte integer.
        let shift = 64 - 8 * width as u32;
        let i = ((u << shift) as i64) >> shift;
        out.push(match dt {
            DataType::Bool => Elem::Bool(u != 0),
            DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64 => {
                Elem::Val(Scalar::Int(i))
            }
            DataType::Uint8 | DataType::Uint16 | DataType::Uint32 | DataType::Uint64 => {
                Elem::Val(Scalar::Uint(u))
            }
            DataType::Fp32 => Elem::Val(Scalar::F32(f32::from_bits(u as u32))),
            DataType::Fp64 => Elem::Val(Scalar::F64(f64::from_bits(u))),
            DataType::Fp16 => Elem::Val(Scalar::F16(u as u16)),
            DataType::Bf16 => Elem::Val(Scalar::Bf16(u as u16)),
            DataType::Bytes => return Err("BYTES has no fixed width".to_owned()),
        });
    }
    Ok(out)
}

/// Appends `elems` in the raw form of `dt`. The elements were checked against `dt` (integers
/// in range), so a failure here is a token Rust cannot read as that type. FP16 and BF16
/// tokens are rounded to the nearest value of the type (exact for values that came from it).
pub(crate) fn write_raw(out: &mut Vec<u8>, dt: DataType, elems: &[Elem<'_>]) -> Result<(), String> {
    out.reserve(elems.len().saturating_mul(dt.size().unwrap_or(8)));
    let width = dt.size().unwrap_or(0);
    for e in elems {
        let bits: Option<u64> = match (dt, e) {
            (DataType::Bool, Elem::Bool(b)) => Some(u64::from(*b)),
            (DataType::Bytes, Elem::Str(s)) => {
                put_bytes(out, s.as_bytes())?;
                continue;
            }
            (DataType::Bytes, Elem::Bin(b)) => {
                put_bytes(out, b)?;
                continue;
            }
            (DataType::Fp32, Elem::Num { text, .. }) => {
                text.parse::<f32>().ok().map(|v| u64::from(v.to_bits()))
            }
            (DataType::Fp64, Elem::Num { text, .. }) => text.parse::<f64>().ok().map(f64::to_bits),
            (DataType::Fp16, Elem::Num { text, .. }) => text
                .parse::<f64>()
                .ok()
                .map(|v| u64::from(half::f16::from_f64(v).to_bits())),
            (DataType::Bf16, Elem::Num { text, .. }) => text
                .parse::<f64>()
                .ok()
                .map(|v| u64::from(half::bf16::from_f64(v).to_bits())),
            // Two's complement, cut to the width below: the value was range-checked.
            (_, Elem::Num { text, int: true }) if dt.is_integer() => {
                text.parse::<i128>().ok().map(|v| v as u64)
            }
            (_, Elem::Val(s)) if s.is(dt) => Some(s.bits()),
            _ => None,
        };
        let bits = bits.ok_or_else(|| format!("{} is not a {} value", describe(e), dt.as_str()))?;
        out.extend_from_slice(bits.to_le_bytes().get(..width).unwrap_or_default());
    }
    Ok(())
}

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) -> Result<(), String> {
    let len = u32::try_from(b.len()).map_err(|_| "a BYTES element over 4 GiB".to_owned())?;
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(b);
    Ok(())
}

// === impl Scalar ===

impl Scalar {
    /// Whether this value belongs to `dt` (an integer within its range).
    fn is(self, dt: DataType) -> bool {
        match self {
            Scalar::Int(v) => fits(dt, v.into()),
            Scalar::Uint(v) => fits(dt, v.into()),
            Scalar::F32(_) => dt == DataType::Fp32,
            Scalar::F64(_) => dt == DataType::Fp64,
            Scalar::F16(_) => dt == DataType::Fp16,
            Scalar::Bf16(_) => dt == DataType::Bf16,
        }
    }

    /// The little-endian bits (integers two's complement), to be cut to the datatype's width.
    fn bits(self) -> u64 {
        match self {
            Scalar::Int(v) => v as u64,
            Scalar::Uint(v) => v,
            Scalar::F32(v) => u64::from(v.to_bits()),
            Scalar::F64(v) => v.to_bits(),
            Scalar::F16(b) | Scalar::Bf16(b) => u64::from(b),
        }
    }

    /// The JSON number, by the OIP translator's formatter: the shortest text that reads back
    /// as the same value (FP16 and BF16 through FP32, which holds each exactly); NaN and
    /// infinities as the bare tokens Triton and TF Serving write.
    fn write_json(self, out: &mut Vec<u8>) {
        let mut f = CompactFormatter;
        match self {
            Scalar::Int(v) => {
                let _ = f.write_i64(out, v);
            }
            Scalar::Uint(v) => {
                let _ = f.write_u64(out, v);
            }
            Scalar::F32(v) => json_out::float32(out, v),
            Scalar::F64(v) => json_out::float64(out, v),
            Scalar::F16(b) => json_out::float32(out, half::f16::from_bits(b).to_f32()),
            Scalar::Bf16(b) => json_out::float32(out, half::bf16::from_bits(b).to_f32()),
        }
    }
}
