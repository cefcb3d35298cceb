//! Writing the OIP v2 REST infer answer a bridge (KServe V1 or TorchServe upstream) returns:
//! each output as JSON `data`, or as a binary-extension section when the caller asked
//! (`parameters.binary_data` per output, `parameters.binary_data_output` for all), the way
//! the OIP translator answers ([`RestAnswer`]: JSON header, then the sections in output
//! order, `Inference-Header-Content-Length`). As there, a BYTES output that is not UTF-8 has
//! no JSON form and goes as a section instead.

use std::collections::HashMap;

use bytes::Bytes;

use super::TensorSig;
use super::elem::{write_raw, write_str};
use super::nested::{Tensor, write_flat};
use super::oip_to_v1::OipCall;
use crate::translate::json_out::{self, DataRef};
use crate::translate::{DataType, RestAnswer};

/// Which outputs the caller wants as binary sections.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BinaryOutputs {
    /// `parameters.binary_data_output`: every output, unless named below.
    pub all: bool,
    /// `outputs[].parameters.binary_data`, by output name.
    pub per_output: Vec<(String, bool)>,
}

// === impl BinaryOutputs ===

impl BinaryOutputs {
    /// Whether output `name` goes as a binary section.
    pub(crate) fn wants(&self, name: &str) -> bool {
        self.per_output
            .iter()
            .find(|(n, _)| n == name)
            .map_or(self.all, |(_, b)| *b)
    }
}

/// The answer to `call` with `outputs` (already filtered to the requested ones).
pub(crate) fn write_answer(
    call: &OipCall,
    outputs: &[(&TensorSig, Tensor<'_>)],
) -> Result<RestAnswer, String> {
    let mut json = Vec::with_capacity(outputs.iter().map(|(_, t)| t.elems.len() * 12 + 96).sum());
    json.extend_from_slice(b"{\"model_name\":");
    write_str(&mut json, &call.model);
    if let Some(v) = &call.version {
        json.extend_from_slice(b",\"model_version\":");
        write_str(&mut json, v);
    }
    if let Some(id) = &call.id {
        json.extend_from_slice(b",\"id\":");
        write_str(&mut json, id);
    }
    json.extend_from_slice(b",\"outputs\":[");
    let mut sections = Vec::new();
    let no_params = HashMap::new();
    for (i, (sig, t)) in outputs.iter().enumerate() {
        if i > 0 {
            json.push(b',');
        }
        let dims: Vec<i64> = t
            .shape
            .iter()
            .map(|&d| i64::try_from(d).unwrap_or(i64::MAX))
            .collect();
        let mark = json.len();
        if !call.binary.wants(&sig.name) {
            json_out::tensor_head(&mut json, &sig.name, sig.datatype, &dims, &no_params, None);
            match write_flat(&mut json, t, false) {
                Ok(()) => {
                    json.push(b'}');
                    continue;
                }
                Err(_) if sig.datatype == DataType::Bytes => json.truncate(mark),
                Err(e) => return Err(format!("output {:?}: {e}", sig.name)),
            }
        }
        let section =
            section(sig.datatype, t).map_err(|e| format!("output {:?}: {e}", sig.name))?;
        json_out::tensor(
            &mut json,
            &sig.name,
            sig.datatype,
            &dims,
            &no_params,
            DataRef::Binary(section.len()),
        )?;
        sections.push(section);
    }
    json.extend_from_slice(b"]}");
    Ok(RestAnswer {
        status: http::StatusCode::OK,
        json,
        sections,
    })
}

/// A tensor's raw form: the bytes it arrived in, when it did, else its elements encoded.
fn section(dt: DataType, t: &Tensor<'_>) -> Result<Bytes, String> {
    if let Some(raw) = t.raw {
        return Ok(Bytes::copy_from_slice(raw));
    }
    let mut out = Vec::new();
    write_raw(&mut out, dt, &t.elems)?;
    Ok(Bytes::from(out))
}
