//! KServe V1 callers, OIP v2 REST upstream: the `:predict` request and its answer.
//!
//! `instances` (row format) or `inputs` (columnar) are typed by the signature's inputs and
//! written as OIP `inputs` with flat `data`. The v2 answer carries its own datatypes and shapes;
//! row callers get `predictions` (one element per batch item), columnar callers `outputs`.

use std::borrow::Cow;

use crate::translate::TranslateError;
use crate::translate::json_in::reader::Reader;
use crate::translate::tensor::Sections;

use super::elem::{b64, from_raw, scalar};
use super::nested::{
    Elem, Nest, Tensor, check, datatype, fits, shape, write_oip_tensors, write_rows, write_str,
    write_tensor,
};
use super::{Budget, Signature, TensorSig, b64_named};

/// The V1 format the caller used, which its answer keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum V1Format {
    /// `instances` → `predictions`.
    #[default]
    Row,
    /// `inputs` → `outputs`.
    Columnar,
}

/// A V1 `:predict` body → an OIP infer request body, and the format to answer in.
pub fn request(
    sig: &Signature,
    body: &[u8],
    limit: u64,
) -> Result<(Vec<u8>, V1Format), TranslateError> {
    let bad = TranslateError::BadRequest;
    let mut nests: Vec<Nest<'_>> = sig.inputs.iter().map(|_| Nest::default()).collect();
    let mut seen = vec![0usize; sig.inputs.len()];
    let mut format = None;
    let mut batch = None;
    let mut r = Reader::new(body);
    r.object(|r, key| match key.as_ref() {
        "instances" => {
            if r.peek() != Some(b'[') {
                return Err("\"instances\" must be a list".to_owned());
            }
            format = Some(V1Format::Row);
            let mut rows = 0usize;
            r.array(|r| {
                rows += 1;
                named_or_single(r, &sig.inputs, &mut nests, &mut seen, 1)
            })?;
            batch = Some(rows);
            Ok(())
        }
        "inputs" => {
            format = Some(V1Format::Columnar);
            named_or_single(r, &sig.inputs, &mut nests, &mut seen, 0)
        }
        _ => r.skip(),
    })
    .and_then(|()| r.end())
    .map_err(bad)?;
    let format = format.ok_or_else(|| bad("expected \"instances\" or \"inputs\"".to_owned()))?;
    let mut budget = Budget::new(limit);
    let mut tensors = Vec::with_capacity(sig.inputs.len());
    for ((want, nest), &seen) in sig.inputs.iter().zip(nests).zip(&seen) {
        let fault = |m: String| bad(format!("input {:?}: {m}", want.name));
        let expected = batch.unwrap_or(1);
        if seen == 0 {
            return Err(bad(format!("missing input {:?}", want.name)));
        }
        if seen != expected {
            return Err(fault(format!(
                "in {seen} of {expected} instances (every instance needs every input)"
            )));
        }
        let t = nest.finish(batch).map_err(fault)?;
        if !fits(&t.shape, &want.shape) {
            return Err(fault(format!(
                "shape {:?} does not fit the model's {:?}",
                t.shape, want.shape
            )));
        }
        check(&t.elems, want.datatype).map_err(fault)?;
        budget.charge(&t.elems, want.datatype)?;
        tensors.push((want, t));
    }
    write_request(&tensors).map(|b| (b, format)).map_err(bad)
}

/// One request value: an object of named inputs, or (with one input) the input itself.
fn named_or_single<'a>(
    r: &mut Reader<'a>,
    inputs: &[TensorSig],
    nests: &mut [Nest<'a>],
    seen: &mut [usize],
    depth: usize,
) -> Result<(), String> {
    let single = inputs.len() == 1;
    if r.peek() != Some(b'{') {
        if !single {
            return Err("expected an object of named inputs (the model has several)".to_owned());
        }
        count(seen, 0);
        return nests.first_mut().map_or(Ok(()), |n| n.value(r, depth));
    }
    r.object(|r, key| {
        let idx = inputs.iter().position(|t| t.name == key);
        match (idx, key.as_ref()) {
            (Some(i), _) => {
                count(seen, i);
                nests.get_mut(i).map_or(Ok(()), |n| n.value(r, depth))
            }
            (None, "b64") if single => {
                count(seen, 0);
                let elem = Elem::Bin(Cow::Owned(b64(&r.string()?)?));
                nests.first_mut().map_or(Ok(()), |n| n.leaf(depth, elem))
            }
            (None, _) => Err(format!(
                "unknown input {key:?} (the model's inputs: {})",
                inputs
                    .iter()
                    .map(|t| t.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        }
    })
}

fn count(seen: &mut [usize], i: usize) {
    if let Some(s) = seen.get_mut(i) {
        *s += 1;
    }
}

fn write_request(tensors: &[(&TensorSig, Tensor<'_>)]) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(tensors.iter().map(|(_, t)| t.elems.len() * 12 + 96).sum());
    out.extend_from_slice(b"{\"inputs\":[");
    write_oip_tensors(&mut out, tensors)?;
    out.extend_from_slice(b"]}");
    Ok(out)
}

/// An OIP infer answer body → the V1 answer in the caller's format.
pub fn answer(body: &[u8], format: V1Format, limit: u64) -> Result<Vec<u8>, TranslateError> {
    answer_binary(body, &[], format, limit)
}

/// An OIP infer answer (JSON header, and any binary-extension sections after it) → the V1
/// answer in the caller's format.
pub(crate) fn answer_binary(
    json: &[u8],
    tail: &[u8],
    format: V1Format,
    limit: u64,
) -> Result<Vec<u8>, TranslateError> {
    let bad = TranslateError::BadUpstream;
    let mut outputs: Vec<(TensorSig, Tensor<'_>)> = Vec::new();
    let mut sections = Sections::declared(tail.len());
    let mut r = Reader::new(json);
    r.object(|r, key| match key.as_ref() {
        "outputs" => r.array(|r| {
            let (mut name, mut dt, mut shp, mut data) = (String::new(), None, None, None);
            let mut binary = None;
            r.object(|r, key| match key.as_ref() {
                "name" => r.string().map(|s| name = s.into_owned()),
                "datatype" => r.string().and_then(|s| datatype(&s)).map(|d| dt = Some(d)),
                "shape" => shape(r).map(|s| shp = Some(s)),
                "data" => {
                    let mut nest = Nest::default();
                    nest.value(r, 0)?;
                    data = Some(nest.finish(None)?);
                    Ok(())
                }
                "parameters" => r.object(|r, key| match key.as_ref() {
                    "binary_data_size" => match scalar(r)? {
                        Elem::Num { text, int: true } => {
                            binary = text.parse::<u64>().ok();
                            Ok(())
                        }
                        _ => Err("binary_data_size is not a size".to_owned()),
                    },
                    _ => r.skip(),
                }),
                _ => r.skip(),
            })?;
            let fault = |m: &str| format!("output {name:?}: {m}");
            let dt = dt.ok_or_else(|| fault("no datatype"))?;
            let shp = shp.ok_or_else(|| fault("no shape"))?;
            if let Some(size) = binary {
                // A section of the answer (a v2 server may answer binary unasked).
                let range = sections
                    .take_range(size, &format!("output {name:?}"))
                    .map_err(|e| e.to_string())?;
                let raw = tail.get(range).unwrap_or_default();
                data = Some(Tensor {
                    elems: from_raw(dt, raw).map_err(|e| fault(&e))?,
                    ..Tensor::default()
                });
            }
            let mut t: Tensor<'_> = data.ok_or_else(|| fault("no data"))?;
            let shape: Vec<usize> = shp
                .iter()
                .map(|&d| usize::try_from(d).unwrap_or(usize::MAX))
                .collect();
            if shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d)) != Some(t.elems.len()) {
                return Err(fault("shape and data do not agree"));
            }
            check(&t.elems, dt).map_err(|e| fault(&e))?;
            t.shape = shape;
            let sig = TensorSig {
                name,
                datatype: dt,
                shape: shp,
            };
            outputs.push((sig, t));
            Ok(())
        }),
        _ => r.skip(),
    })
    .and_then(|()| r.end())
    .map_err(|e| bad(format!("v2 answer: {e}")))?;
    sections
        .finish()
        .map_err(|e| bad(format!("v2 answer: {e}")))?;
    let mut budget = Budget::new(limit);
    for (sig, t) in &outputs {
        budget.charge(&t.elems, sig.datatype)?;
    }
    let written = match format {
        V1Format::Columnar => write_columnar(&outputs),
        V1Format::Row => write_predictions(&outputs),
    };
    written.map_err(bad)
}

fn write_columnar(outputs: &[(TensorSig, Tensor<'_>)]) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(outputs.iter().map(|(_, t)| t.elems.len() * 12 + 32).sum());
    out.extend_from_slice(b"{\"outputs\":");
    if let [(sig, t)] = outputs {
        write_tensor(&mut out, t, b64_named(sig))?;
    } else {
        out.push(b'{');
        for (i, (sig, t)) in outputs.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            write_str(&mut out, &sig.name);
            out.push(b':');
            write_tensor(&mut out, t, b64_named(sig))?;
        }
        out.push(b'}');
    }
    out.push(b'}');
    Ok(out)
}

fn write_predictions(outputs: &[(TensorSig, Tensor<'_>)]) -> Result<Vec<u8>, String> {
    let batch = outputs
        .first()
        .and_then(|(_, t)| t.shape.first())
        .copied()
        .unwrap_or(0);
    if let Some((sig, _)) = outputs
        .iter()
        .find(|(_, t)| t.shape.first() != Some(&batch))
    {
        return Err(format!(
            "output {:?} does not share the batch size {batch} (row format needs one)",
            sig.name
        ));
    }
    let mut out = Vec::with_capacity(outputs.iter().map(|(_, t)| t.elems.len() * 12 + 32).sum());
    out.extend_from_slice(b"{\"predictions\":[");
    let tensors: Vec<_> = outputs.iter().map(|(sig, t)| (sig, t)).collect();
    write_rows(&mut out, batch, &tensors)?;
    out.extend_from_slice(b"]}");
    Ok(out)
}
