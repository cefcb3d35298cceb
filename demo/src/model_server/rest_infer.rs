//! `POST /v2/models/{m}[/versions/{v}]/infer` with JSON tensors: parse the OIP request, run the
//! model, build the OIP response. Nested or flat `data` are both accepted; outputs are flat.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::error::ServeError;
use super::models::{self, Model};

/// The OIP JSON inference request (fields this server does not use are ignored).
#[derive(Deserialize)]
struct InferRequest {
    id: Option<String>,
    inputs: Vec<InputTensor>,
    outputs: Option<Vec<RequestedOutput>>,
}

#[derive(Deserialize)]
struct InputTensor {
    name: String,
    shape: Vec<i64>,
    datatype: String,
    parameters: Option<Map<String, Value>>,
    data: Option<Value>,
}

#[derive(Deserialize)]
struct RequestedOutput {
    name: String,
}

#[derive(Serialize)]
struct InferResponse {
    model_name: &'static str,
    model_version: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<String>,
    outputs: Vec<OutputTensor>,
}

#[derive(Serialize)]
struct OutputTensor {
    name: String,
    datatype: String,
    shape: Vec<i64>,
    data: Value,
}

/// Runs one JSON inference request against `model`.
pub(super) fn infer(model: Model, body: &[u8]) -> Result<Value, ServeError> {
    let request: InferRequest = serde_json::from_slice(body)?;
    let mut produced = match model {
        Model::AddSub => add_sub(&request.inputs)?,
        Model::Echo => echo(request.inputs)?,
    };
    let requested: Vec<&str> = request
        .outputs
        .iter()
        .flatten()
        .map(|o| o.name.as_str())
        .collect();
    let names: Vec<&str> = produced.iter().map(|o| o.name.as_str()).collect();
    let keep = models::select_outputs(&requested, &names)?;
    let mut slots: Vec<Option<OutputTensor>> = produced.drain(..).map(Some).collect();
    let outputs = keep
        .into_iter()
        .filter_map(|i| slots.get_mut(i).and_then(Option::take))
        .collect();
    let response = InferResponse {
        model_name: model.name(),
        model_version: models::VERSION,
        id: request.id,
        outputs,
    };
    Ok(serde_json::to_value(response)?)
}

fn add_sub(inputs: &[InputTensor]) -> Result<Vec<OutputTensor>, ServeError> {
    let [input0, input1] = inputs else {
        return Err(ServeError::BadRequest(format!(
            "add_sub takes 2 inputs (INPUT0, INPUT1), got {}",
            inputs.len()
        )));
    };
    models::check_add_sub_inputs([
        (&input0.name, &input0.datatype, &input0.shape),
        (&input1.name, &input1.datatype, &input1.shape),
    ])?;
    let a = fp32_data(input0)?;
    let b = fp32_data(input1)?;
    let (sum, difference) = models::add_sub(&a, &b)?;
    let output = |name: &str, values: Vec<f32>| OutputTensor {
        name: name.to_owned(),
        datatype: "FP32".to_owned(),
        shape: input0.shape.clone(),
        data: Value::Array(
            values
                .into_iter()
                .map(|v| Value::from(f64::from(v)))
                .collect(),
        ),
    };
    Ok(vec![output("OUTPUT0", sum), output("OUTPUT1", difference)])
}

fn echo(inputs: Vec<InputTensor>) -> Result<Vec<OutputTensor>, ServeError> {
    inputs
        .into_iter()
        .map(|input| {
            models::check_datatype(&input.name, &input.datatype)?;
            let data = tensor_data(&input)?;
            let mut elements = Vec::new();
            flatten(data, &mut elements);
            models::check_count(&input.name, &input.shape, elements.len())?;
            Ok(OutputTensor {
                name: format!("{}{}", models::ECHO_PREFIX, input.name),
                datatype: input.datatype,
                shape: input.shape,
                data: input.data.unwrap_or(Value::Null),
            })
        })
        .collect()
}

/// The `data` of an input, refusing the binary extension this server does not offer.
fn tensor_data(input: &InputTensor) -> Result<&Value, ServeError> {
    let binary = input
        .parameters
        .as_ref()
        .is_some_and(|p| p.contains_key("binary_data_size"));
    if binary {
        return Err(ServeError::tensor(
            &input.name,
            "binary tensor data extension is not supported by this server",
        ));
    }
    input
        .data
        .as_ref()
        .ok_or_else(|| ServeError::tensor(&input.name, "missing \"data\""))
}

/// The elements of an FP32 input as f32, checked against its shape.
fn fp32_data(input: &InputTensor) -> Result<Vec<f32>, ServeError> {
    let mut elements = Vec::new();
    flatten(tensor_data(input)?, &mut elements);
    models::check_count(&input.name, &input.shape, elements.len())?;
    elements
        .into_iter()
        .enumerate()
        .map(|(i, v)| {
            // FP32 data arrive as JSON numbers (f64); narrowing is what FP32 means.
            v.as_f64().map(|x| x as f32).ok_or_else(|| {
                ServeError::tensor(&input.name, format!("element {i} is not a number: {v}"))
            })
        })
        .collect()
}

/// Row-major elements of flat or nested `data`. Depth is bounded by serde_json's recursion
/// limit on parsing.
fn flatten<'a>(value: &'a Value, out: &mut Vec<&'a Value>) {
    match value {
        Value::Array(items) => items.iter().for_each(|item| flatten(item, out)),
        other => out.push(other),
    }
}
