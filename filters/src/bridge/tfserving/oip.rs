//! The Open Inference Protocol side of the TF Serving bridge: OIP tensors (raw entries or typed
//! `contents`) in the raw form, and the route's signature applied to a request's tensors.

use bytes::Bytes;

use super::tensor::RawTensor;
use crate::bridge::{Signature, TensorSig};
use crate::translate::pb::InferTensorContents;
use crate::translate::{DataType, TranslateError, raw_count, raw_encode};

/// An OIP tensor (`raw` entry, else typed `contents`) in the raw form, its element count
/// checked against its shape and its size taken from `budget`.
pub(crate) fn raw_tensor(
    name: &str,
    datatype: &str,
    shape: &[i64],
    contents: Option<&InferTensorContents>,
    raw: Option<&Bytes>,
    budget: &mut u64,
) -> Result<RawTensor, String> {
    let dt = DataType::parse(datatype)
        .ok_or_else(|| format!("tensor {name:?}: unknown datatype {datatype:?}"))?;
    let raw = match (raw, contents) {
        (Some(r), _) => r.clone(),
        (None, Some(c)) if dt.has_typed_form() => raw_encode(dt, c),
        (None, _) => Bytes::new(),
    };
    *budget = budget
        .checked_sub(raw.len() as u64)
        .ok_or_else(|| "decoded tensors exceed max_decoded_bytes".to_owned())?;
    let n = raw_count(dt, &raw).map_err(|e| format!("tensor {name:?}: {e}"))?;
    let want = shape.iter().try_fold(1u64, |n, &d| {
        u64::try_from(d).ok().and_then(|d| n.checked_mul(d))
    });
    if want != Some(n as u64) {
        return Err(format!(
            "tensor {name:?}: {n} elements do not fill shape {shape:?}"
        ));
    }
    Ok(RawTensor {
        datatype: dt,
        shape: shape.to_vec(),
        raw,
    })
}

/// Puts `inputs` in the signature's order and checks they fit it: every input present, none
/// unknown, datatypes equal, shapes of the same rank with equal fixed dimensions. Without a
/// signature the order is by name. The request is refused (400 / INVALID_ARGUMENT) before it
/// reaches the upstream.
pub(crate) fn fit_inputs(
    sig: Option<&Signature>,
    inputs: &mut Vec<(String, RawTensor)>,
) -> Result<(), TranslateError> {
    inputs.sort_by(|a, b| a.0.cmp(&b.0));
    let Some(sig) = sig else {
        return Ok(());
    };
    let mut ordered = Vec::with_capacity(inputs.len());
    for s in &sig.inputs {
        let Some(at) = inputs.iter().position(|(n, _)| n == &s.name) else {
            return Err(TranslateError::BadRequest(format!(
                "missing input {:?} (the signature's inputs: {})",
                s.name,
                names(&sig.inputs)
            )));
        };
        let (name, t) = inputs.swap_remove(at);
        fits(s, &t)?;
        ordered.push((name, t));
    }
    if let Some((extra, _)) = inputs.first() {
        return Err(TranslateError::BadRequest(format!(
            "unknown input {extra:?} (the signature's inputs: {})",
            names(&sig.inputs)
        )));
    }
    *inputs = ordered;
    Ok(())
}

/// Checks that requested outputs are the signature's.
pub(crate) fn fit_outputs(
    sig: Option<&Signature>,
    wanted: &[String],
) -> Result<(), TranslateError> {
    let Some(sig) = sig.filter(|s| !s.outputs.is_empty()) else {
        return Ok(());
    };
    match wanted
        .iter()
        .find(|w| !sig.outputs.iter().any(|o| &o.name == *w))
    {
        Some(w) => Err(TranslateError::BadRequest(format!(
            "unknown output {w:?} (the signature's outputs: {})",
            names(&sig.outputs)
        ))),
        None => Ok(()),
    }
}

fn fits(s: &TensorSig, t: &RawTensor) -> Result<(), TranslateError> {
    if s.datatype != t.datatype {
        return Err(TranslateError::BadRequest(format!(
            "input {:?} is {}, the signature says {}",
            s.name,
            t.datatype.as_str(),
            s.datatype.as_str()
        )));
    }
    let dims_fit = s.shape.len() == t.shape.len()
        && s.shape
            .iter()
            .zip(&t.shape)
            .all(|(&w, &g)| w == -1 || w == g);
    if !dims_fit {
        return Err(TranslateError::BadRequest(format!(
            "input {:?} has shape {:?}, the signature says {:?}",
            s.name, t.shape, s.shape
        )));
    }
    Ok(())
}

fn names(ts: &[TensorSig]) -> String {
    ts.iter()
        .map(|t| t.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}
