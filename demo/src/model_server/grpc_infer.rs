//! The `ModelInfer` rpc: typed `contents` in → typed out, `raw_input_contents` in →
//! `raw_output_contents` out (as MLServer and KServe answer). Mixing both is refused, like
//! KServe does, because a request that does so is ambiguous.

use bytes::Bytes;

use super::error::ServeError;
use super::models::{self, Model};
use crate::inference::model_infer_request::InferInputTensor;
use crate::inference::model_infer_response::InferOutputTensor;
use crate::inference::{InferTensorContents, ModelInferRequest, ModelInferResponse};

/// One produced output: its description and, for raw requests, its bytes.
struct Produced {
    tensor: InferOutputTensor,
    raw: Option<Bytes>,
}

/// Runs one inference request.
pub(super) fn infer(request: ModelInferRequest) -> Result<ModelInferResponse, ServeError> {
    let model = Model::lookup(&request.model_name, Some(&request.model_version))?;
    let raw = !request.raw_input_contents.is_empty();
    if raw {
        if request.raw_input_contents.len() != request.inputs.len() {
            return Err(ServeError::BadRequest(format!(
                "raw_input_contents has {} entries for {} inputs",
                request.raw_input_contents.len(),
                request.inputs.len()
            )));
        }
        if let Some(input) = request.inputs.iter().find(|i| i.contents.is_some()) {
            return Err(ServeError::tensor(
                &input.name,
                "contents must not be set when raw_input_contents is used",
            ));
        }
    }
    let produced = match model {
        Model::AddSub => add_sub(&request)?,
        Model::Echo => echo(&request)?,
    };
    let requested: Vec<&str> = request.outputs.iter().map(|o| o.name.as_str()).collect();
    let names: Vec<&str> = produced.iter().map(|p| p.tensor.name.as_str()).collect();
    let keep = models::select_outputs(&requested, &names)?;
    let mut slots: Vec<Option<Produced>> = produced.into_iter().map(Some).collect();
    let mut response = ModelInferResponse {
        model_name: model.name().to_owned(),
        model_version: models::VERSION.to_owned(),
        id: request.id,
        ..Default::default()
    };
    for produced in keep
        .into_iter()
        .filter_map(|i| slots.get_mut(i).and_then(Option::take))
    {
        response.outputs.push(produced.tensor);
        response.raw_output_contents.extend(produced.raw);
    }
    Ok(response)
}

fn add_sub(request: &ModelInferRequest) -> Result<Vec<Produced>, ServeError> {
    let [input0, input1] = request.inputs.as_slice() else {
        return Err(ServeError::BadRequest(format!(
            "add_sub takes 2 inputs (INPUT0, INPUT1), got {}",
            request.inputs.len()
        )));
    };
    models::check_add_sub_inputs([
        (&input0.name, &input0.datatype, &input0.shape),
        (&input1.name, &input1.datatype, &input1.shape),
    ])?;
    let raw = &request.raw_input_contents;
    let a = fp32_values(input0, raw.first())?;
    let b = fp32_values(input1, raw.get(1))?;
    let (sum, difference) = models::add_sub(&a, &b)?;
    let as_raw = !raw.is_empty();
    let output = |name: &str, values: Vec<f32>| {
        let (contents, raw) = if as_raw {
            let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
            (None, Some(Bytes::from(bytes)))
        } else {
            let contents = InferTensorContents {
                fp32_contents: values,
                ..Default::default()
            };
            (Some(contents), None)
        };
        Produced {
            tensor: InferOutputTensor {
                name: name.to_owned(),
                datatype: "FP32".to_owned(),
                shape: input0.shape.clone(),
                parameters: Default::default(),
                contents,
            },
            raw,
        }
    };
    Ok(vec![output("OUTPUT0", sum), output("OUTPUT1", difference)])
}

/// An FP32 input's values, from its raw bytes (little-endian) or its typed contents.
fn fp32_values(input: &InferInputTensor, raw: Option<&Bytes>) -> Result<Vec<f32>, ServeError> {
    let values: Vec<f32> = match raw {
        Some(bytes) => {
            if bytes.len() % 4 != 0 {
                return Err(ServeError::tensor(
                    &input.name,
                    format!(
                        "raw FP32 data of {} bytes is not a multiple of 4",
                        bytes.len()
                    ),
                ));
            }
            bytes
                .chunks_exact(4)
                .filter_map(|chunk| <[u8; 4]>::try_from(chunk).ok())
                .map(f32::from_le_bytes)
                .collect()
        }
        None => input
            .contents
            .as_ref()
            .map(|c| c.fp32_contents.clone())
            .unwrap_or_default(),
    };
    models::check_count(&input.name, &input.shape, values.len())?;
    Ok(values)
}

fn echo(request: &ModelInferRequest) -> Result<Vec<Produced>, ServeError> {
    request
        .inputs
        .iter()
        .enumerate()
        .map(|(i, input)| {
            let raw = request.raw_input_contents.get(i);
            check_echo_input(input, raw)?;
            Ok(Produced {
                tensor: InferOutputTensor {
                    name: format!("{}{}", models::ECHO_PREFIX, input.name),
                    datatype: input.datatype.clone(),
                    shape: input.shape.clone(),
                    parameters: Default::default(),
                    contents: input.contents.clone(),
                },
                // Bytes clones share the request buffer: echo never copies tensor data.
                raw: raw.cloned(),
            })
        })
        .collect()
}

/// Checks that an input's data fit its datatype and shape.
fn check_echo_input(input: &InferInputTensor, raw: Option<&Bytes>) -> Result<(), ServeError> {
    let size = models::element_size(&input.datatype).ok_or_else(|| {
        ServeError::tensor(
            &input.name,
            format!("unknown datatype '{}'", input.datatype),
        )
    })?;
    let count = models::element_count(&input.name, &input.shape)?;
    match (raw, size) {
        (Some(bytes), Some(size)) => {
            let expected = count.saturating_mul(size);
            if bytes.len() != expected {
                return Err(ServeError::tensor(
                    &input.name,
                    format!("raw data has {} bytes, shape needs {expected}", bytes.len()),
                ));
            }
            Ok(())
        }
        // BYTES elements carry their own length prefixes; the demo passes them through.
        (Some(_), None) => Ok(()),
        (None, _) => {
            let found = typed_len(&input.datatype, input.contents.as_ref()).ok_or_else(|| {
                ServeError::tensor(
                    &input.name,
                    format!("{} data must be sent raw", input.datatype),
                )
            })?;
            models::check_count(&input.name, &input.shape, found)
        }
    }
}

/// Elements in the typed contents field that matches `datatype`; `None` for raw-only types.
fn typed_len(datatype: &str, contents: Option<&InferTensorContents>) -> Option<usize> {
    let empty = InferTensorContents::default();
    let c = contents.unwrap_or(&empty);
    let len = match datatype {
        "BOOL" => c.bool_contents.len(),
        "INT8" | "INT16" | "INT32" => c.int_contents.len(),
        "INT64" => c.int64_contents.len(),
        "UINT8" | "UINT16" | "UINT32" => c.uint_contents.len(),
        "UINT64" => c.uint64_contents.len(),
        "FP32" => c.fp32_contents.len(),
        "FP64" => c.fp64_contents.len(),
        "BYTES" => c.bytes_contents.len(),
        _ => return None,
    };
    Some(len)
}
