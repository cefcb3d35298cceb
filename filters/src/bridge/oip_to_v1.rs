//! OIP v2 REST callers, KServe V1 upstream: the infer request and its answer.
//!
//! The caller's inputs (JSON `data` or binary-extension sections, read by `oip_request`) are
//! checked against the signature (name, datatype, rank and fixed sizes, every element's type)
//! and written as V1 `instances` (row format, when every input has a batch dimension first)
//! or `inputs` (columnar); binary elements become V1 JSON values (FP16 and BF16 as the
//! numbers they hold). The answer's `predictions` or `outputs` are typed by the signature's
//! outputs and written as OIP `outputs`, as JSON or binary sections as the caller asked
//! (`oip_answer`).

use std::borrow::Cow;

use crate::translate::TranslateError;
use crate::translate::json_in::reader::Reader;

use super::elem::b64;
use super::nested::{Elem, Nest, Tensor, check, fits, write_rows, write_str, write_tensor};
use super::oip_answer::{BinaryOutputs, write_answer};
use super::oip_request::read_request;
use super::{Budget, Signature, TensorSig, b64_named};
use crate::translate::RestAnswer;

/// What the answer needs from the request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OipCall {
    /// Model name, from the path.
    pub model: String,
    /// Model version, from the path.
    pub version: Option<String>,
    /// The request's `id`, echoed in the answer.
    pub id: Option<String>,
    /// Requested output names; `None` = all.
    pub requested: Option<Vec<String>>,
    /// Which outputs go back as binary sections.
    pub binary: BinaryOutputs,
}

/// An OIP infer request body → a V1 `:predict` body. `call` comes with model and version set.
pub fn request(
    sig: &Signature,
    body: &[u8],
    call: &mut OipCall,
    limit: u64,
) -> Result<Vec<u8>, TranslateError> {
    request_binary(sig, body, &[], call, limit)
}

/// An OIP infer request (JSON header, and the binary-extension sections after it) → a V1
/// `:predict` body.
pub(crate) fn request_binary(
    sig: &Signature,
    json: &[u8],
    tail: &[u8],
    call: &mut OipCall,
    limit: u64,
) -> Result<Vec<u8>, TranslateError> {
    let ordered = read_request(sig, json, tail, call, limit)?;
    write_request(sig, &ordered).map_err(TranslateError::BadRequest)
}

fn write_request(sig: &Signature, inputs: &[(&TensorSig, Tensor<'_>)]) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(inputs.iter().map(|(_, t)| t.elems.len() * 12 + 64).sum());
    if !sig.row_format() {
        // One input goes bare (TF Serving allows leaving out the name, and KServe's V1 server
        // wants `inputs` to be a list); several as an object of named tensors.
        if let [(want, t)] = inputs {
            out.extend_from_slice(b"{\"inputs\":");
            write_tensor(&mut out, t, b64_named(want))?;
            out.push(b'}');
            return Ok(out);
        }
        out.extend_from_slice(b"{\"inputs\":{");
        for (i, (want, t)) in inputs.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            write_str(&mut out, &want.name);
            out.push(b':');
            write_tensor(&mut out, t, b64_named(want))?;
        }
        out.extend_from_slice(b"}}");
        return Ok(out);
    }
    let batch = inputs
        .first()
        .and_then(|(_, t)| t.shape.first())
        .copied()
        .unwrap_or(0);
    if let Some((w, t)) = inputs.iter().find(|(_, t)| t.shape.first() != Some(&batch)) {
        return Err(format!(
            "input {:?} has batch size {:?}, the others {batch} (row format needs one batch size)",
            w.name,
            t.shape.first()
        ));
    }
    out.extend_from_slice(b"{\"instances\":[");
    let tensors: Vec<_> = inputs.iter().map(|(w, t)| (*w, t)).collect();
    write_rows(&mut out, batch, &tensors)?;
    out.extend_from_slice(b"]}");
    Ok(out)
}

/// A V1 answer body → the OIP infer answer's body (the JSON, then any binary sections).
pub fn answer(
    sig: &Signature,
    call: &OipCall,
    body: &[u8],
    limit: u64,
) -> Result<Vec<u8>, TranslateError> {
    let a = answer_from(sig, call, body, limit, false)?;
    let mut out = a.json;
    a.sections.iter().for_each(|s| out.extend_from_slice(s));
    Ok(out)
}

/// A V1 answer body → the OIP infer answer, JSON and binary sections as the caller asked.
pub(crate) fn answer_parts(
    sig: &Signature,
    call: &OipCall,
    body: &[u8],
    limit: u64,
) -> Result<RestAnswer, TranslateError> {
    answer_from(sig, call, body, limit, false)
}

/// A bare JSON answer (an object of named outputs, or with one output the nested array
/// itself, as V1's columnar `outputs` value is) → the OIP infer answer: what a TorchServe
/// handler returns.
pub(crate) fn answer_bare(
    sig: &Signature,
    call: &OipCall,
    body: &[u8],
    limit: u64,
) -> Result<RestAnswer, TranslateError> {
    answer_from(sig, call, body, limit, true)
}

fn answer_from(
    sig: &Signature,
    call: &OipCall,
    body: &[u8],
    limit: u64,
    bare: bool,
) -> Result<RestAnswer, TranslateError> {
    let bad = TranslateError::BadUpstream;
    let mut nests: Vec<Nest<'_>> = sig.outputs.iter().map(|_| Nest::default()).collect();
    let mut seen = vec![false; sig.outputs.len()];
    let mut batch = None;
    let mut r = Reader::new(body);
    let read = if bare {
        row_or_named(&mut r, sig, &mut nests, &mut seen, 0)
    } else {
        r.object(|r, key| match key.as_ref() {
            "predictions" => {
                let mut rows = 0usize;
                r.array(|r| {
                    rows += 1;
                    row_or_named(r, sig, &mut nests, &mut seen, 1)
                })?;
                batch = Some(rows);
                Ok(())
            }
            "outputs" => row_or_named(r, sig, &mut nests, &mut seen, 0),
            _ => r.skip(),
        })
    };
    let what = if bare { "torchserve" } else { "kserve-v1" };
    read.and_then(|()| r.end())
        .map_err(|e| bad(format!("{what} answer: {e}")))?;
    let mut budget = Budget::new(limit);
    let mut outputs = Vec::new();
    for ((want, nest), seen) in sig.outputs.iter().zip(nests).zip(seen) {
        let wanted = call
            .requested
            .as_ref()
            .is_none_or(|r| r.contains(&want.name));
        if !wanted {
            continue;
        }
        if !seen {
            return Err(bad(format!(
                "the {what} answer has no output {:?}",
                want.name
            )));
        }
        let fault = |m: String| bad(format!("output {:?}: {m}", want.name));
        let t = nest.finish(batch).map_err(fault)?;
        if !fits(&t.shape, &want.shape) {
            return Err(fault(format!(
                "shape {:?} does not fit the signature's {:?}",
                t.shape, want.shape
            )));
        }
        check(&t.elems, want.datatype).map_err(fault)?;
        budget.charge(&t.elems, want.datatype)?;
        outputs.push((want, t));
    }
    write_answer(call, &outputs).map_err(bad)
}

/// One answer value: an object of named outputs, or (with one output) the output itself.
fn row_or_named<'a>(
    r: &mut Reader<'a>,
    sig: &Signature,
    nests: &mut [Nest<'a>],
    seen: &mut [bool],
    depth: usize,
) -> Result<(), String> {
    let single = sig.outputs.len() == 1;
    if r.peek() != Some(b'{') {
        if !single {
            return Err("expected an object of named outputs".to_owned());
        }
        mark(seen, 0);
        return nests.first_mut().map_or(Ok(()), |n| n.value(r, depth));
    }
    r.object(|r, key| {
        let idx = sig.outputs.iter().position(|o| o.name == key);
        match (idx, key.as_ref()) {
            (Some(i), _) => {
                mark(seen, i);
                nests.get_mut(i).map_or(Ok(()), |n| n.value(r, depth))
            }
            // A lone BYTES output's `{"b64": ...}` element.
            (None, "b64") if single => {
                mark(seen, 0);
                let elem = Elem::Bin(Cow::Owned(b64(&r.string()?)?));
                nests.first_mut().map_or(Ok(()), |n| n.leaf(depth, elem))
            }
            (None, _) => Err(format!("output {key:?} is not in the signature")),
        }
    })
}

fn mark(seen: &mut [bool], i: usize) {
    if let Some(s) = seen.get_mut(i) {
        *s = true;
    }
}
