//! The `data` array of a JSON tensor, per datatype, from raw bytes or typed contents: written
//! whole, or resumed from an [`ArrayCursor`] one chunk at a time for a streamed answer.

use serde_json::ser::{CompactFormatter, Formatter};

use super::{DataRef, float32, float64, string};
use crate::translate::datatype::DataType;
use crate::translate::pb::InferTensorContents;
use crate::translate::raw;

/// Where [`array_part`] resumes a `data` array.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct ArrayCursor {
    /// The next element's index; for raw BYTES, the next element's byte offset.
    next: usize,
    opened: bool,
}

pub(super) fn element_count(dt: DataType, data: &DataRef<'_>) -> usize {
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
