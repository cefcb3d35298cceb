//! Reading an OIP v2 REST infer request for a bridge (KServe V1 or TorchServe upstream): its
//! inputs as JSON `data` or binary-extension sections, checked against the signature and put
//! in its order, and what the caller wants back (`id`, requested outputs, which of them as
//! binary sections).
//!
//! The binary extension (tritonclient's default, `binary_data=True`): the body is the JSON
//! header (`Inference-Header-Content-Length` bytes) and then each binary input's section in
//! the order of the JSON `inputs`, sized by its `parameters.binary_data_size`. The split and
//! the section bounds are the OIP translator's ([`split_body`](crate::translate::split_body),
//! [`Sections`]); a section's elements are read by its raw-form readers, into values of the
//! input's own type, so they cross bit-exactly.

use crate::translate::TranslateError;
use crate::translate::json_in::reader::Reader;
use crate::translate::tensor::Sections;

use super::elem::{Elem, from_raw, scalar};
use super::nested::{Nest, Tensor, check, fits, shape};
use super::oip_to_v1::OipCall;
use super::{Budget, Signature, TensorSig};

/// One input as the caller wrote it.
struct Input<'a> {
    name: String,
    datatype: Option<String>,
    shape: Option<Vec<i64>>,
    data: Option<Tensor<'a>>,
    /// `parameters.binary_data_size`: the input is the next binary section.
    binary: Option<u64>,
}

/// An OIP infer request's inputs, checked against the signature and in its order. `json` is
/// the JSON (header), `tail` the binary sections after it (empty without the extension).
/// `call` comes with model and version set.
pub(crate) fn read_request<'a, 's>(
    sig: &'s Signature,
    json: &'a [u8],
    tail: &'a [u8],
    call: &mut OipCall,
    limit: u64,
) -> Result<Vec<(&'s TensorSig, Tensor<'a>)>, TranslateError> {
    let bad = TranslateError::BadRequest;
    let mut inputs: Vec<Input<'_>> = Vec::new();
    let mut r = Reader::new(json);
    r.object(|r, key| match key.as_ref() {
        "id" => {
            call.id = Some(r.string()?.into_owned());
            Ok(())
        }
        "parameters" => r.object(|r, key| match key.as_ref() {
            "binary_data_output" => flag(r, "binary_data_output").map(|b| call.binary.all = b),
            _ => r.skip(),
        }),
        "inputs" => r.array(|r| {
            inputs.push(input(r)?);
            Ok(())
        }),
        "outputs" => requested_outputs(r, call),
        _ => r.skip(),
    })
    .and_then(|()| r.end())
    .map_err(bad)?;
    bind_sections(&mut inputs, tail)?;
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

fn input<'a>(r: &mut Reader<'a>) -> Result<Input<'a>, String> {
    let mut input = Input {
        name: String::new(),
        datatype: None,
        shape: None,
        data: None,
        binary: None,
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
        "parameters" => r.object(|r, key| match key.as_ref() {
            "binary_data_size" => {
                let size = match scalar(r)? {
                    Elem::Num { text, int: true } => text.parse::<u64>().ok(),
                    _ => None,
                };
                let size =
                    size.ok_or("binary_data_size must be a non-negative integer".to_owned())?;
                input.binary = Some(size);
                Ok(())
            }
            _ => r.skip(),
        }),
        _ => r.skip(),
    })?;
    Ok(input)
}

/// The requested outputs: their names, and which the caller wants as binary sections.
fn requested_outputs(r: &mut Reader<'_>, call: &mut OipCall) -> Result<(), String> {
    let mut names = Vec::new();
    r.array(|r| {
        let mut name = String::new();
        let mut binary = None;
        r.object(|r, key| match key.as_ref() {
            "name" => r.string().map(|s| name = s.into_owned()),
            "parameters" => r.object(|r, key| match key.as_ref() {
                "binary_data" => flag(r, "binary_data").map(|b| binary = Some(b)),
                _ => r.skip(),
            }),
            _ => r.skip(),
        })?;
        if let Some(b) = binary {
            call.binary.per_output.push((name.clone(), b));
        }
        names.push(name);
        Ok(())
    })?;
    call.requested = Some(names);
    Ok(())
}

/// A boolean transport parameter.
fn flag(r: &mut Reader<'_>, key: &str) -> Result<bool, String> {
    if r.literal(b"true") {
        Ok(true)
    } else if r.literal(b"false") {
        Ok(false)
    } else {
        Err(format!("{key} must be true or false"))
    }
}

/// Gives each binary input its section of `tail`, in the caller's order, as raw bytes still
/// to be typed; every byte of the tail must belong to one.
fn bind_sections<'a>(inputs: &mut [Input<'a>], tail: &'a [u8]) -> Result<(), TranslateError> {
    let bad = TranslateError::BadRequest;
    let mut sections = Sections::declared(tail.len());
    for input in inputs.iter_mut() {
        let Some(size) = input.binary else { continue };
        let label = format!("input {:?}", input.name);
        if input.data.is_some() {
            return Err(bad(format!("{label}: has both data and binary_data_size")));
        }
        let range = sections.take_range(size, &label)?;
        input.data = Some(Tensor {
            raw: tail.get(range),
            ..Tensor::default()
        });
    }
    sections.finish()
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
    let mut data = input
        .data
        .ok_or_else(|| bad("has neither data nor binary_data_size".to_owned()))?;
    if let Some(raw) = data.raw {
        // The section's bytes count against the limit before they are decoded.
        budget.charge_bytes(raw.len() as u64)?;
        data.elems = from_raw(want.datatype, raw).map_err(bad)?;
    }
    let count = shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d));
    if count != Some(data.elems.len()) {
        return Err(bad(format!(
            "shape {shape:?} needs {} elements, data has {}",
            count.unwrap_or(usize::MAX),
            data.elems.len()
        )));
    }
    check(&data.elems, want.datatype).map_err(bad)?;
    if data.raw.is_none() {
        budget.charge(&data.elems, want.datatype)?;
    }
    data.shape = shape;
    Ok(data)
}

fn names_of(ts: &[TensorSig]) -> String {
    ts.iter()
        .map(|t| t.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests;
