//! The check itself: declared inputs against the model's metadata, one message per fault.

use super::ModelMetadata;
use super::inspect::InputHead;

/// `Err` names the first faulty tensor, what was expected and what was sent.
pub(super) fn check(model: &str, meta: &ModelMetadata, inputs: &[InputHead]) -> Result<(), String> {
    for (i, input) in inputs.iter().enumerate() {
        let name = &input.name;
        if inputs[..i].iter().any(|earlier| earlier.name == *name) {
            return Err(format!("input {name:?}: sent more than once"));
        }
        let Some(want) = meta.inputs.iter().find(|t| t.name == *name) else {
            return Err(format!(
                "input {name:?}: model {model:?} has no such input (expected one of: {})",
                expected_names(meta)
            ));
        };
        if want.datatype != input.datatype {
            return Err(format!(
                "input {name:?}: expected datatype {}, got {}",
                want.datatype, input.datatype
            ));
        }
        if want.shape.len() != input.shape.len() {
            return Err(format!(
                "input {name:?}: expected shape {:?} ({} dimensions), got {:?} ({} dimensions)",
                want.shape,
                want.shape.len(),
                input.shape,
                input.shape.len()
            ));
        }
        // A request's dimensions are sizes: -1 is a wildcard in metadata only, so a negative
        // one sent is a fault even where the metadata accepts any size.
        let wrong = want
            .shape
            .iter()
            .zip(&input.shape)
            .position(|(&w, &g)| g < 0 || (w != -1 && w != g));
        if let Some(dim) = wrong {
            return Err(format!(
                "input {name:?}: expected shape {:?}, got {:?} (dimension {dim})",
                want.shape, input.shape
            ));
        }
    }
    if let Some(missing) = meta
        .inputs
        .iter()
        .find(|t| !inputs.iter().any(|i| i.name == t.name))
    {
        return Err(format!(
            "input {:?}: missing (model {model:?} expects: {})",
            missing.name,
            expected_names(meta)
        ));
    }
    Ok(())
}

fn expected_names(meta: &ModelMetadata) -> String {
    let names: Vec<&str> = meta.inputs.iter().map(|t| t.name.as_str()).collect();
    names.join(", ")
}
