//! Writing OIP REST JSON: tensors straight from raw bytes or typed contents into the output
//! buffer, numbers formatted by serde_json's formatter (ryu / itoa), no intermediate tree.

use std::collections::HashMap;
use std::io::Write as _;

use serde_json::ser::{CompactFormatter, Formatter};

use self::data_array::element_count;
use super::datatype::DataType;
use super::pb::{
    InferParameter, InferTensorContents, ModelInferResponse, infer_parameter::ParameterChoice,
};
use super::tensor::BINARY_DATA_SIZE;

mod data_array;

pub(crate) use self::data_array::{ArrayCursor, array_part, has_json_form};

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

pub(crate) fn float64(buf: &mut Vec<u8>, v: f64) {
    if v.is_finite() {
        let _ = CompactFormatter.write_f64(buf, v);
    } else {
        non_finite(buf, v.is_nan(), v.is_sign_negative());
    }
}

pub(crate) fn float32(buf: &mut Vec<u8>, v: f32) {
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

/// Appends an infer answer's opening: `{"model_name":…,"model_version":…,"id":…,
/// "parameters":…,"outputs":[`.
pub(crate) fn answer_head(buf: &mut Vec<u8>, m: &ModelInferResponse) {
    buf.push(b'{');
    key(buf, "model_name", true);
    string(buf, &m.model_name);
    if !m.model_version.is_empty() {
        key(buf, "model_version", false);
        string(buf, &m.model_version);
    }
    key(buf, "id", false);
    string(buf, &m.id);
    if !m.parameters.is_empty() {
        key(buf, "parameters", false);
        params(buf, &m.parameters, None);
    }
    key(buf, "outputs", false);
    buf.push(b'[');
}
