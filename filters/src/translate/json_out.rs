//! Writing OIP REST JSON: tensors straight from raw bytes or typed contents into the output
//! buffer, numbers formatted by serde_json's formatter (ryu / itoa), no intermediate tree.

use std::collections::HashMap;
use std::io::Write as _;

use serde_json::ser::{CompactFormatter, Formatter};

use super::datatype::DataType;
use super::pb::{InferParameter, InferTensorContents, infer_parameter::ParameterChoice};
use super::raw;
use super::tensor::BINARY_DATA_SIZE;

/// Where a tensor's values come from when written as JSON.
pub(crate) enum DataRef<'a> {
    /// The raw little-endian form.
    Raw(&'a [u8]),
    /// Typed protobuf contents.
    Contents(&'a InferTensorContents),
    /// Sent as a binary section of this many bytes (`binary_data_size` instead of `data`).
    Binary(usize),
}

/// Appends a JSON string.
pub(crate) fn string(buf: &mut Vec<u8>, s: &str) {
    // Writing to a Vec cannot fail and a &str always serializes.
    let _ = serde_json::to_writer(&mut *buf, s);
}

/// Appends `"key":` (with a leading comma unless `first`).
pub(crate) fn key(buf: &mut Vec<u8>, k: &str, first: bool) {
    if !first {
        buf.push(b',');
    }
    string(buf, k);
    buf.push(b':');
}

/// Appends a parameters object (bare values, as REST JSON has them).
pub(crate) fn params(
    buf: &mut Vec<u8>,
    p: &HashMap<String, InferParameter>,
    extra: Option<(&str, usize)>,
) {
    buf.push(b'{');
    let mut first = true;
    let mut names: Vec<&String> = p.keys().collect();
    // Sorted for a deterministic body (golden tests, caching).
    names.sort();
    for name in names {
        let Some(choice) = p.get(name).and_then(|v| v.parameter_choice.as_ref()) else {
            continue;
        };
        // Written only from `extra`, describing this body's own sections.
        if name == BINARY_DATA_SIZE || extra.is_some_and(|(k, _)| k == name) {
            continue;
        }
        key(buf, name, first);
        first = false;
        param(buf, choice);
    }
    if let Some((k, v)) = extra {
        key(buf, k, first);
        let _ = write!(buf, "{v}");
    }
    buf.push(b'}');
}

fn param(buf: &mut Vec<u8>, choice: &ParameterChoice) {
    let mut f = CompactFormatter;
    let _ = match choice {
        ParameterChoice::BoolParam(b) => f.write_bool(buf, *b),
        ParameterChoice::Int64Param(v) => f.write_i64(buf, *v),
        ParameterChoice::Uint64Param(v) => f.write_u64(buf, *v),
        ParameterChoice::DoubleParam(v) => {
            float64(buf, *v);
            Ok(())
        }
        ParameterChoice::StringParam(s) => {
            string(buf, s);
            Ok(())
        }
    };
}

fn float64(buf: &mut Vec<u8>, v: f64) {
    if v.is_finite() {
        let _ = CompactFormatter.write_f64(buf, v);
    } else {
        non_finite(buf, v.is_nan(), v.is_sign_negative());
    }
}

fn float32(buf: &mut Vec<u8>, v: f32) {
    if v.is_finite() {
        let _ = CompactFormatter.write_f32(buf, v);
    } else {
        non_finite(buf, v.is_nan(), v.is_sign_negative());
    }
}

/// JSON has no NaN or infinity; Triton's REST writes these bare tokens (as Python's `json`
/// module does and reads back), so REST callers and servers of that family understand them,
/// where `null` would lose the value.
fn non_finite(buf: &mut Vec<u8>, nan: bool, negative: bool) {
    buf.extend_from_slice(match (nan, negative) {
        (true, _) => b"NaN".as_slice(),
        (false, false) => b"Infinity",
        (false, true) => b"-Infinity",
    });
}

/// Appends a shape array.
pub(crate) fn shape(buf: &mut Vec<u8>, s: &[i64]) {
    buf.push(b'[');
    for (i, d) in s.iter().enumerate() {
        if i > 0 {
            buf.push(b',');
        }
        let _ = CompactFormatter.write_i64(buf, *d);
    }
    buf.push(b']');
}

/// Appends one tensor object: name, datatype, shape, parameters, and `data` or
/// `binary_data_size`. Fails only for BYTES that are not UTF-8 (JSON strings cannot hold them)
/// or a malformed raw tensor.
pub(crate) fn tensor(
    buf: &mut Vec<u8>,
    name: &str,
    dt: DataType,
    shape_dims: &[i64],
    p: &HashMap<String, InferParameter>,
    data: DataRef<'_>,
) -> Result<(), String> {
    match data {
        DataRef::Binary(size) => tensor_head(buf, name, dt, shape_dims, p, Some(size)),
        other => {
            tensor_head(buf, name, dt, shape_dims, p, None);
            // Estimate: a few bytes of text per element, reserved once instead of regrown.
            buf.reserve(element_count(dt, &other).saturating_mul(3));
            array_part(buf, dt, &other, &mut ArrayCursor::default(), usize::MAX)?;
        }
    }
    buf.push(b'}');
    Ok(())
}

/// Appends a tensor object up to its values: with `binary` (a section of that many bytes) the
/// whole object but its closing `}`; without, everything up to and including `"data":`, for
/// [`array_part`] to continue.
pub(crate) fn tensor_head(
    buf: &mut Vec<u8>,
    name: &str,
    dt: DataType,
    shape_dims: &[i64],
    p: &HashMap<String, InferParameter>,
    binary: Option<usize>,
) {
    buf.push(b'{');
    key(buf, "name", true);
    string(buf, name);
    key(buf, "datatype", false);
    string(buf, dt.as_str());
    key(buf, "shape", false);
    shape(buf, shape_dims);
    match binary {
        Some(size) => {
            key(buf, "parameters", false);
            params(buf, p, Some(("binary_data_size", size)));
        }
        None => {
            // An upstream may tag tensors with its own transport's `binary_data_size` (KServe
            // does for raw gRPC outputs); on a JSON tensor it would tell the caller to look for
            // a binary section that is not there.
            if p.keys().any(|k| k != BINARY_DATA_SIZE) {
                key(buf, "parameters", false);
                params(buf, p, None);
            }
            key(buf, "data", false);
        }
    }
}

/// Where [`array_part`] resumes a `data` array.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct ArrayCursor {
    /// The next element's index; for raw BYTES, the next element's byte offset.
    next: usize,
    opened: bool,
}

fn element_count(dt: DataType, data: &DataRef<'_>) -> usize {
    match data {
        DataRef::Raw(bytes) => bytes.len() / dt.size().unwrap_or(8),
        DataRef::Contents(c) => raw::contents_count(dt, c),
        DataRef::Binary(_) => 0,
    }
}

/// Whether `data` can be written as a JSON array of `dt` (what [`array_part`] would fail on,
/// checked up front): not for FP16/BF16, a raw tensor that is not whole elements, or BYTES
/// that are malformed or not UTF-8. A streamed answer decides this before its headers.
pub(crate) fn has_json_form(dt: DataType, data: &DataRef<'_>) -> bool {
    if !dt.has_typed_form() {
        return false;
    }
    match (data, dt.size()) {
        (DataRef::Raw(bytes), Some(size)) => bytes.len().is_multiple_of(size),
        (DataRef::Raw(bytes), None) => {
            raw::bytes_elements(bytes).all(|e| e.is_ok_and(|e| std::str::from_utf8(e).is_ok()))
        }
        (DataRef::Contents(c), _) if dt == DataType::Bytes => c
            .bytes_contents
            .iter()
            .all(|e| std::str::from_utf8(e).is_ok()),
        (DataRef::Contents(_), _) => true,
        (DataRef::Binary(_), _) => false,
    }
}

/// Appends the `data` array from `cursor` on: its `[` first time, then elements until `buf`
/// holds at least `until` bytes or the array ends, then its `]`. True once the array is
/// complete. `until = usize::MAX` writes it whole; a bounded `until` lets a streamed answer
/// encode one chunk at a time with no copy of the whole text.
pub(crate) fn array_part(
    buf: &mut Vec<u8>,
    dt: DataType,
    data: &DataRef<'_>,
    cursor: &mut ArrayCursor,
    until: usize,
) -> Result<bool, String> {
    if !cursor.opened {
        buf.push(b'[');
        cursor.opened = true;
    }
    let done = match data {
        DataRef::Raw(bytes) => raw_part(buf, dt, bytes, &mut cursor.next, until)?,
        DataRef::Contents(c) => contents_part(buf, dt, c, &mut cursor.next, until)?,
        DataRef::Binary(_) => true,
    };
    if done {
        buf.push(b']');
    }
    Ok(done)
}

/// Writes `items` (already advanced to index `*next`) until `buf` reaches `until`; true when
/// they run out.
fn run<T>(
    buf: &mut Vec<u8>,
    items: impl Iterator<Item = T>,
    next: &mut usize,
    until: usize,
    mut each: impl FnMut(&mut Vec<u8>, T),
) -> bool {
    for item in items {
        if buf.len() >= until {
            return false;
        }
        if *next > 0 {
            buf.push(b',');
        }
        each(buf, item);
        *next += 1;
    }
    true
}

fn bytes_elem(buf: &mut Vec<u8>, e: &[u8]) -> Result<(), String> {
    let s = std::str::from_utf8(e)
        .map_err(|_| "BYTES element is not UTF-8 and has no JSON form".to_owned())?;
    string(buf, s);
    Ok(())
}

/// [`array_part`] over a raw tensor.
fn raw_part(
    buf: &mut Vec<u8>,
    dt: DataType,
    bytes: &[u8],
    next: &mut usize,
    until: usize,
) -> Result<bool, String> {
    let Some(size) = dt.size() else {
        // BYTES: variable-length elements, so the cursor is a byte offset.
        let rest = bytes.get(*next..).unwrap_or_default();
        for e in raw::bytes_elements(rest) {
            if buf.len() >= until {
                return Ok(false);
            }
            let e = e?;
            if *next > 0 {
                buf.push(b',');
            }
            bytes_elem(buf, e)?;
            *next += 4 + e.len();
        }
        return Ok(true);
    };
    if !bytes.len().is_multiple_of(size) {
        return Err(format!(
            "raw {} tensor of {} bytes",
            dt.as_str(),
            bytes.len()
        ));
    }
    let mut f = CompactFormatter;
    let chunks = bytes.chunks_exact(size).skip(*next);
    let n = next;
    Ok(match dt {
        DataType::Bool => run(buf, chunks, n, until, |b, c| {
            let _ = f.write_bool(b, c[0] != 0);
        }),
        DataType::Int8 => run(buf, chunks, n, until, |b, c| {
            let _ = f.write_i8(b, c[0] as i8);
        }),
        DataType::Int16 => run(buf, chunks, n, until, |b, c| {
            let _ = f.write_i16(b, i16::from_le_bytes([c[0], c[1]]));
        }),
        DataType::Int32 => run(buf, chunks, n, until, |b, c| {
            let _ = f.write_i32(b, i32::from_le_bytes(raw::arr4(c)));
        }),
        DataType::Int64 => run(buf, chunks, n, until, |b, c| {
            let _ = f.write_i64(b, i64::from_le_bytes(raw::arr8(c)));
        }),
        DataType::Uint8 => run(buf, chunks, n, until, |b, c| {
            let _ = f.write_u8(b, c[0]);
        }),
        DataType::Uint16 => run(buf, chunks, n, until, |b, c| {
            let _ = f.write_u16(b, u16::from_le_bytes([c[0], c[1]]));
        }),
        DataType::Uint32 => run(buf, chunks, n, until, |b, c| {
            let _ = f.write_u32(b, u32::from_le_bytes(raw::arr4(c)));
        }),
        DataType::Uint64 => run(buf, chunks, n, until, |b, c| {
            let _ = f.write_u64(b, u64::from_le_bytes(raw::arr8(c)));
        }),
        DataType::Fp32 => run(buf, chunks, n, until, |b, c| {
            float32(b, f32::from_le_bytes(raw::arr4(c)))
        }),
        DataType::Fp64 => run(buf, chunks, n, until, |b, c| {
            float64(b, f64::from_le_bytes(raw::arr8(c)))
        }),
        DataType::Bytes | DataType::Fp16 | DataType::Bf16 => {
            return Err(format!("{} has no JSON form", dt.as_str()));
        }
    })
}

/// [`array_part`] over typed contents.
fn contents_part(
    buf: &mut Vec<u8>,
    dt: DataType,
    c: &InferTensorContents,
    next: &mut usize,
    until: usize,
) -> Result<bool, String> {
    let mut f = CompactFormatter;
    let from = *next;
    let n = next;
    Ok(match dt {
        DataType::Bool => run(buf, c.bool_contents.iter().skip(from), n, until, |b, v| {
            let _ = f.write_bool(b, *v);
        }),
        DataType::Int8 | DataType::Int16 | DataType::Int32 => {
            run(buf, c.int_contents.iter().skip(from), n, until, |b, v| {
                let _ = f.write_i32(b, *v);
            })
        }
        DataType::Int64 => run(buf, c.int64_contents.iter().skip(from), n, until, |b, v| {
            let _ = f.write_i64(b, *v);
        }),
        DataType::Uint8 | DataType::Uint16 | DataType::Uint32 => {
            run(buf, c.uint_contents.iter().skip(from), n, until, |b, v| {
                let _ = f.write_u32(b, *v);
            })
        }
        DataType::Uint64 => run(
            buf,
            c.uint64_contents.iter().skip(from),
            n,
            until,
            |b, v| {
                let _ = f.write_u64(b, *v);
            },
        ),
        DataType::Fp32 => run(buf, c.fp32_contents.iter().skip(from), n, until, |b, v| {
            float32(b, *v)
        }),
        DataType::Fp64 => run(buf, c.fp64_contents.iter().skip(from), n, until, |b, v| {
            float64(b, *v)
        }),
        DataType::Bytes => {
            for e in c.bytes_contents.iter().skip(from) {
                if buf.len() >= until {
                    return Ok(false);
                }
                if *n > 0 {
                    buf.push(b',');
                }
                bytes_elem(buf, e)?;
                *n += 1;
            }
            true
        }
        DataType::Fp16 | DataType::Bf16 => {
            return Err(format!("{} has no JSON form", dt.as_str()));
        }
    })
}
