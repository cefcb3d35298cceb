//! REST `parameters` objects: string keys to bare bool / integer / float / string values, mapped
//! to `InferParameter` both ways: integers to `int64_param` (beyond i64 to `uint64_param`, as
//! Triton does), other numbers (including `NaN` / `Infinity`) to `double_param`.

use std::collections::HashMap;

use super::reader::{Num, Reader};
use crate::translate::pb::{InferParameter, infer_parameter::ParameterChoice};

/// Reads a `parameters` object (`null` reads as empty).
pub(crate) fn read(r: &mut Reader<'_>) -> Result<HashMap<String, InferParameter>, String> {
    let mut out = HashMap::new();
    if r.literal(b"null") {
        return Ok(out);
    }
    r.object(|r, key| {
        let choice = value(r)?;
        out.insert(
            key.into_owned(),
            InferParameter {
                parameter_choice: Some(choice),
            },
        );
        Ok(())
    })?;
    Ok(out)
}

fn value(r: &mut Reader<'_>) -> Result<ParameterChoice, String> {
    Ok(match r.peek() {
        Some(b'"') => ParameterChoice::StringParam(r.string()?.into_owned()),
        Some(b't') if r.literal(b"true") => ParameterChoice::BoolParam(true),
        Some(b'f') if r.literal(b"false") => ParameterChoice::BoolParam(false),
        Some(b'-' | b'0'..=b'9' | b'N' | b'I') => match r.number()? {
            Num::Int(d) => match (d.as_i64(), d.as_u64()) {
                (Some(v), _) => ParameterChoice::Int64Param(v),
                (_, Some(v)) => ParameterChoice::Uint64Param(v),
                _ => ParameterChoice::DoubleParam(d.text().parse().unwrap_or(f64::NAN)),
            },
            n => ParameterChoice::DoubleParam(n.to_f64().unwrap_or(f64::NAN)),
        },
        _ => {
            return Err(r.error("invalid type: expected a parameter value: bool, number or string"));
        }
    })
}
