//! OIP v2 REST callers, KServe V1 upstream: the infer request and its answer.
//!
//! The caller's inputs are checked against the signature (name, datatype, rank and fixed
//! sizes, every element's type) and written as V1 `instances` (row format, when every input
//! has a batch dimension first) or `inputs` (columnar). The answer's `predictions` or
//! `outputs` are typed by the signature's outputs and written as OIP `outputs`.

use crate::translate::TranslateError;
use crate::translate::json_in::reader::Reader;

use super::nested::{
    Elem, Nest, Tensor, check, fits, shape, write_nested, write_oip_tensors, write_rows, write_str,
};
use super::{Budget, Signature, TensorSig, b64_named};

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
}

struct Input<'a> {
    name: String,
    datatype: Option<String>,
    shape: Option<Vec<i64>>,
    data: Option<Tensor<'a>>,
}

/// An OIP infer request body → a V1 `:predict` body. `call` comes with model and version set.
pub fn request(
    sig: &Signature,
    body: &[u8],
    call: &mut OipCall,
    limit: u64,
) -> Result<Vec<u8>, TranslateError> {
    let ordered = read_request(sig, body, call, limit)?;
    write_request(sig, &ordered).map_err(TranslateError::BadRequest)
}

/// An OIP infer request body's inputs, checked against the signature and in its order (also
/// what the TorchServe bridge writes out). `call` comes with model and version set.
pub(crate) fn read_request<'a, 's>(
    sig: &'s Signature,
    body: &'a [u8],
    call: &mut OipCall,
    limit: u64,
) -> Result<Vec<(&'s TensorSig, Tensor<'a>)>, TranslateError> {
    let bad = TranslateError::BadRequest;
    let mut inputs: Vec<Input<'_>> = Vec::new();
    let mut r = Reader::new(body);
    r.object(|r, key| match key.as_ref() {
        "id" => {
            call.id = Some(r.string()?.into_owned());
            Ok(())
        }
        "inputs" => r.array(|r| {
            let mut input = Input {
                name: String::new(),
                datatype: None,
                shape: None,
                data: None,
            };
            r.object(|r, key| match key.as_ref() {
                "name" => r.string().map(|s| input.name = s.into_owned()),
                "datatype" => r.string().map(|s| input.datatype = Some(s.into_owned())),
                "shape" => shape(r).map(|s| input.shape = Some(s)),
                "data" => {
                    let mut nest = Nest::default();
                    nest.value(r, 0)?;
                    input.data = Some(nest.finish(None)?);
                    Ok(())
                }
                "parameters" => r.object(|r, key| {
                    if key == "binary_data_size" {
                        return Err("the binary tensor extension is not bridged yet (send JSON data, e.g. tritonclient binary_data=False)".to_owned());
                    }
                    r.skip()
                }),
                _ => r.skip(),
            })?;
            inputs.push(input);
            Ok(())
        }),
        "outputs" => {
            let mut names = Vec::new();
            r.array(|r| {
                r.object(|r, key| match key.as_ref() {
                    "name" => r.string().map(|s| names.push(s.into_owned())),
                    "parameters" => r.object(|r, key| {
                        if key == "binary_data" && r.literal(b"true") {
                            return Err("binary outputs are not bridged yet (ask for JSON data, e.g. tritonclient binary_data=False)".to_owned());
                        }
                        r.skip()
                    }),
                    _ => r.skip(),
                })
            })?;
            call.requested = Some(names);
            Ok(())
        }
        _ => r.skip(),
    })
    .and_then(|()| r.end())
    .map_err(bad)?;
    if let Some(names) = &call.requested {
        for n in names {
            if !sig.outputs.iter().any(|o| &o.name == n) {
                return Err(bad(format!(
                    "unknown output {n:?} (the model's outputs: {})",
                    names_of(&sig.outputs)
                )));
            }
        }
    }
    let mut budget = Budget::new(limit);
    let mut ordered = Vec::with_capacity(sig.inputs.len());
    for want in &sig.inputs {
        let pos = inputs.iter().position(|i| i.name == want.name);
        let input = pos
            .map(|p| inputs.swap_remove(p))
            .ok_or_else(|| bad(format!("missing input {:?}", want.name)))?;
        ordered.push((want, checked_input(want, input, &mut budget)?));
    }
    if let Some(extra) = inputs.first() {
        return Err(bad(format!(
            "unknown input {:?} (the model's inputs: {})",
            extra.name,
            names_of(&sig.inputs)
        )));
    }
    Ok(ordered)
}

fn checked_input<'a>(
    want: &TensorSig,
    input: Input<'a>,
    budget: &mut Budget,
) -> Result<Tensor<'a>, TranslateError> {
    let bad = |m: String| TranslateError::BadRequest(format!("input {:?}: {m}", want.name));
    let dt = input.datatype.unwrap_or_default();
    if dt != want.datatype.as_str() {
        return Err(bad(format!(
            "datatype {dt:?} does not match the model's {}",
            want.datatype.as_str()
        )));
    }
    let shape = input.shape.ok_or_else(|| bad("no shape".to_owned()))?;
    let shape: Vec<usize> = shape
        .iter()
        .map(|&d| usize::try_from(d))
        .collect::<Result<_, _>>()
        .map_err(|_| bad(format!("invalid shape {shape:?}")))?;
    if !fits(&shape, &want.shape) {
        return Err(bad(format!(
            "shape {shape:?} does not fit the model's {:?}",
            want.shape
        )));
    }
    let mut data = input.data.ok_or_else(|| bad("no data".to_owned()))?;
    let count = shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d));
    if count != Some(data.elems.len()) {
        return Err(bad(format!(
            "shape {shape:?} needs {} elements, data has {}",
            count.unwrap_or(usize::MAX),
            data.elems.len()
        )));
    }
    check(&data.elems, want.datatype).map_err(bad)?;
    budget.charge(&data.elems, want.datatype)?;
    data.shape = shape;
    Ok(data)
}

fn write_request(sig: &Signature, inputs: &[(&TensorSig, Tensor<'_>)]) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(inputs.iter().map(|(_, t)| t.elems.len() * 12 + 64).sum());
    if !sig.row_format() {
        // One input goes bare (TF Serving allows leaving out the name, and KServe's V1 server
        // wants `inputs` to be a list); several as an object of named tensors.
        if let [(want, t)] = inputs {
            out.extend_from_slice(b"{\"inputs\":");
            write_nested(&mut out, &t.shape, &t.elems, b64_named(want))?;
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
            write_nested(&mut out, &t.shape, &t.elems, b64_named(want))?;
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

/// A V1 answer body → the OIP infer answer.
pub fn answer(
    sig: &Signature,
    call: &OipCall,
    body: &[u8],
    limit: u64,
) -> Result<Vec<u8>, TranslateError> {
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
) -> Result<Vec<u8>, TranslateError> {
    answer_from(sig, call, body, limit, true)
}

fn answer_from(
    sig: &Signature,
    call: &OipCall,
    body: &[u8],
    limit: u64,
    bare: bool,
) -> Result<Vec<u8>, TranslateError> {
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
                let elem = Elem::Bin(super::nested::b64(&r.string()?)?);
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

pub(crate) fn write_answer(
    call: &OipCall,
    outputs: &[(&TensorSig, Tensor<'_>)],
) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(outputs.iter().map(|(_, t)| t.elems.len() * 12 + 96).sum());
    out.extend_from_slice(b"{\"model_name\":");
    write_str(&mut out, &call.model);
    if let Some(v) = &call.version {
        out.extend_from_slice(b",\"model_version\":");
        write_str(&mut out, v);
    }
    if let Some(id) = &call.id {
        out.extend_from_slice(b",\"id\":");
        write_str(&mut out, id);
    }
    out.extend_from_slice(b",\"outputs\":[");
    write_oip_tensors(&mut out, outputs)?;
    out.extend_from_slice(b"]}");
    Ok(out)
}

fn names_of(ts: &[TensorSig]) -> String {
    ts.iter()
        .map(|t| t.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}
