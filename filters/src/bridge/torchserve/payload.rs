//! How a tensor becomes the bytes a TorchServe handler receives, and how its answer becomes a
//! tensor again: `raw` (little-endian elements, row-major, no header) and `npy` (NumPy's
//! `.npy` format 1.0: the magic `\x93NUMPY`, version `1 0`, a little-endian u16 header length,
//! an ASCII Python dict `{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }` padded
//! with spaces and ended by `\n` so the data starts at a multiple of 64 bytes, then the raw
//! data). `json` is nested arrays, written by `nested`.
//!
//! Numbers cross as the caller wrote them: a JSON token is parsed once into the datatype's
//! width (Rust's parsing rounds correctly, as NumPy's does), and a raw element is printed by
//! the OIP translator's formatter (shortest round-trip form), so values survive bit-exactly.

use crate::translate::DataType;

use super::super::elem;
use super::super::nested::Tensor;

const NPY_MAGIC: &[u8] = b"\x93NUMPY";

/// Appends a tensor as little-endian values of `dt`: the bytes it arrived in when it came as
/// a binary section (the same form), else its elements encoded. BYTES has no raw payload
/// (config validation refuses it), since a handler could not tell its elements apart.
pub(crate) fn write_raw(out: &mut Vec<u8>, dt: DataType, t: &Tensor<'_>) -> Result<(), String> {
    if dt.size().is_none() {
        return Err(format!("{} has no raw form", dt.as_str()));
    }
    match t.raw {
        Some(raw) => {
            out.extend_from_slice(raw);
            Ok(())
        }
        None => elem::write_raw(out, dt, &t.elems),
    }
}

/// NumPy's dtype string for `dt` (little-endian; `|` where byte order does not apply).
pub(crate) fn npy_descr(dt: DataType) -> Option<&'static str> {
    Some(match dt {
        DataType::Bool => "|b1",
        DataType::Uint8 => "|u1",
        DataType::Int8 => "|i1",
        DataType::Uint16 => "<u2",
        DataType::Int16 => "<i2",
        DataType::Uint32 => "<u4",
        DataType::Int32 => "<i4",
        DataType::Uint64 => "<u8",
        DataType::Int64 => "<i8",
        DataType::Fp16 => "<f2",
        DataType::Fp32 => "<f4",
        DataType::Fp64 => "<f8",
        DataType::Bf16 | DataType::Bytes => return None,
    })
}

/// Appends the `.npy` 1.0 header of a C-order array of `dt` and `shape`.
pub(crate) fn write_npy_header(
    out: &mut Vec<u8>,
    dt: DataType,
    shape: &[usize],
) -> Result<(), String> {
    let descr = npy_descr(dt).ok_or_else(|| no_npy_form(dt))?;
    let dims = match shape {
        [one] => format!("{one},"),
        _ => shape
            .iter()
            .map(usize::to_string)
            .collect::<Vec<_>>()
            .join(", "),
    };
    let mut dict = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': ({dims}), }}");
    // Magic (6) + version (2) + length (2) + dict + '\n' is padded to a multiple of 64.
    let unpadded = 10 + dict.len() + 1;
    dict.extend(std::iter::repeat_n(
        ' ',
        unpadded.next_multiple_of(64) - unpadded,
    ));
    dict.push('\n');
    let len = u16::try_from(dict.len()).map_err(|_| "npy header too long".to_owned())?;
    out.extend_from_slice(NPY_MAGIC);
    out.extend_from_slice(&[1, 0]);
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(dict.as_bytes());
    Ok(())
}

fn no_npy_form(dt: DataType) -> String {
    match dt {
        DataType::Bf16 => {
            "BF16 has no .npy form (NumPy has no bfloat16 dtype): use payload raw or json"
                .to_owned()
        }
        _ => format!("{} has no .npy form: use payload json", dt.as_str()),
    }
}

/// A `.npy` array: its shape and its raw little-endian data (a slice of `body`).
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct NpyArray<'a> {
    pub(crate) shape: Vec<usize>,
    pub(crate) data: &'a [u8],
}

/// Reads a `.npy` file (format 1.0, 2.0 or 3.0) holding a C-order array of `dt`.
pub(crate) fn read_npy(body: &[u8], dt: DataType) -> Result<NpyArray<'_>, String> {
    let rest = body
        .strip_prefix(NPY_MAGIC)
        .ok_or("not a .npy file (no \\x93NUMPY magic)")?;
    let (major, rest) = rest.split_first().ok_or("truncated .npy header")?;
    let rest = rest.get(1..).ok_or("truncated .npy header")?;
    let (len, rest) = match major {
        1 => {
            let (l, r) = rest
                .split_first_chunk::<2>()
                .ok_or("truncated .npy header")?;
            (usize::from(u16::from_le_bytes(*l)), r)
        }
        2 | 3 => {
            let (l, r) = rest
                .split_first_chunk::<4>()
                .ok_or("truncated .npy header")?;
            (
                usize::try_from(u32::from_le_bytes(*l)).unwrap_or(usize::MAX),
                r,
            )
        }
        v => return Err(format!(".npy format version {v} is not supported")),
    };
    let header = rest.get(..len).ok_or("truncated .npy header")?;
    let data = rest.get(len..).unwrap_or_default();
    let header = std::str::from_utf8(header).map_err(|_| ".npy header is not text")?;
    let descr = dict_value(header, "descr")?;
    let descr = descr.trim_matches(|c| c == '\'' || c == '"');
    let want = npy_descr(dt).ok_or_else(|| no_npy_form(dt))?;
    // `=` is native order, little-endian on every machine TorchServe runs on; one-byte types
    // have no order, whichever mark they carry.
    let same_type = descr.get(1..) == want.get(1..);
    let same_order = want.starts_with('|') || matches!(descr.chars().next(), Some('<' | '='));
    if !(same_type && same_order) {
        return Err(format!(
            ".npy dtype {descr} does not match {} ({want})",
            dt.as_str()
        ));
    }
    let fortran = dict_value(header, "fortran_order")?;
    let shape = parse_shape(dict_value(header, "shape")?)?;
    if fortran.starts_with("True") && shape.len() > 1 {
        return Err("Fortran-order .npy arrays are not supported".to_owned());
    }
    let count = shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d));
    let width = dt.size().unwrap_or(1);
    if count.and_then(|c| c.checked_mul(width)) != Some(data.len()) {
        return Err(format!(
            ".npy shape {shape:?} of {} needs {} bytes, the data has {}",
            dt.as_str(),
            count.map_or(usize::MAX, |c| c.saturating_mul(width)),
            data.len()
        ));
    }
    Ok(NpyArray { shape, data })
}

/// The text of `'key': value` in a Python dict literal, up to the next top-level comma.
fn dict_value<'a>(header: &'a str, key: &str) -> Result<&'a str, String> {
    let at = header
        .find(&format!("'{key}'"))
        .or_else(|| header.find(&format!("\"{key}\"")))
        .ok_or_else(|| format!(".npy header has no {key}"))?;
    let rest = header.get(at + key.len() + 2..).unwrap_or_default();
    let rest = rest
        .trim_start()
        .strip_prefix(':')
        .unwrap_or(rest)
        .trim_start();
    let end = if rest.starts_with('(') {
        rest.find(')').map(|i| i + 1)
    } else {
        rest.find([',', '}'])
    };
    Ok(rest
        .get(..end.unwrap_or(rest.len()))
        .unwrap_or_default()
        .trim())
}

fn parse_shape(text: &str) -> Result<Vec<usize>, String> {
    let inner = text
        .strip_prefix('(')
        .and_then(|t| t.strip_suffix(')'))
        .ok_or_else(|| format!(".npy shape {text:?} is not a tuple"))?;
    inner
        .split(',')
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .map(|d| {
            d.trim_end_matches('L')
                .parse::<usize>()
                .map_err(|_| format!(".npy shape {text:?} has a bad dimension {d:?}"))
        })
        .collect()
}

/// The shape of a raw answer of `len` bytes for an output of `want` (at most one `-1`, which
/// config validation guarantees, inferred from the length).
pub(crate) fn raw_shape(len: usize, dt: DataType, want: &[i64]) -> Result<Vec<usize>, String> {
    let width = dt
        .size()
        .ok_or_else(|| format!("{} has no raw form", dt.as_str()))?;
    if !len.is_multiple_of(width) {
        return Err(format!(
            "{len} bytes is not a whole number of {} elements",
            dt.as_str()
        ));
    }
    let count = len / width;
    let fixed: usize = want
        .iter()
        .filter(|&&d| d >= 0)
        .map(|&d| usize::try_from(d).unwrap_or(usize::MAX))
        .try_fold(1usize, usize::checked_mul)
        .unwrap_or(usize::MAX);
    let free = want.iter().filter(|&&d| d < 0).count();
    let inferred = match (free, fixed) {
        (0, f) if f == count => 0,
        (1, f) if f > 0 && count.is_multiple_of(f) => count / f,
        _ => {
            return Err(format!(
                "{count} {} elements do not fit the signature's shape {want:?}",
                dt.as_str()
            ));
        }
    };
    Ok(want
        .iter()
        .map(|&d| usize::try_from(d).unwrap_or(inferred))
        .collect())
}
