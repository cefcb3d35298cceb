//! The models the demo server hosts, independent of REST or gRPC: names, versions, tensor
//! metadata and the arithmetic. `add_sub` is the model Triton's own examples use; `echo`
//! returns whatever it is sent, which makes it handy for checking a proxy is byte-transparent.

use super::error::ServeError;

/// `name` in server metadata.
pub const SERVER_NAME: &str = "ferry-demo-model-server";
/// `platform` in model metadata.
pub const PLATFORM: &str = "ferry_demo";
/// The one version every demo model has.
pub const VERSION: &str = "1";
/// Prefix `echo` puts before each input name to name its output.
pub const ECHO_PREFIX: &str = "OUT_";

/// A hosted model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Model {
    /// FP32 `INPUT0`, `INPUT1` of equal shape → `OUTPUT0` = sum, `OUTPUT1` = difference.
    AddSub,
    /// Every input comes back as `OUT_<name>`, unchanged.
    Echo,
}

/// Name, datatype and shape of a tensor in model metadata (-1 = any size).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TensorSpec {
    /// Tensor name.
    pub name: &'static str,
    /// OIP datatype (`FP32`, `BYTES`, …).
    pub datatype: &'static str,
    /// Dimensions; -1 is variable.
    pub shape: &'static [i64],
}

const ADD_SUB_INPUTS: &[TensorSpec] = &[
    TensorSpec {
        name: "INPUT0",
        datatype: "FP32",
        shape: &[-1],
    },
    TensorSpec {
        name: "INPUT1",
        datatype: "FP32",
        shape: &[-1],
    },
];
const ADD_SUB_OUTPUTS: &[TensorSpec] = &[
    TensorSpec {
        name: "OUTPUT0",
        datatype: "FP32",
        shape: &[-1],
    },
    TensorSpec {
        name: "OUTPUT1",
        datatype: "FP32",
        shape: &[-1],
    },
];

// === impl Model ===

impl Model {
    /// Every hosted model.
    pub const ALL: [Model; 2] = [Model::AddSub, Model::Echo];

    /// The model's name in paths and messages.
    pub fn name(self) -> &'static str {
        match self {
            Model::AddSub => "add_sub",
            Model::Echo => "echo",
        }
    }

    /// Finds a model; an absent or empty version means the latest.
    pub fn lookup(name: &str, version: Option<&str>) -> Result<Model, ServeError> {
        let model = Model::ALL
            .into_iter()
            .find(|m| m.name() == name)
            .ok_or_else(|| ServeError::ModelNotFound(name.to_owned()))?;
        match version {
            Some(v) if !v.is_empty() && v != VERSION => Err(ServeError::VersionNotFound {
                name: name.to_owned(),
                version: v.to_owned(),
            }),
            _ => Ok(model),
        }
    }

    /// Declared inputs; empty for `echo`, which takes any.
    pub fn inputs(self) -> &'static [TensorSpec] {
        match self {
            Model::AddSub => ADD_SUB_INPUTS,
            Model::Echo => &[],
        }
    }

    /// Declared outputs; empty for `echo`, whose outputs mirror its inputs.
    pub fn outputs(self) -> &'static [TensorSpec] {
        match self {
            Model::AddSub => ADD_SUB_OUTPUTS,
            Model::Echo => &[],
        }
    }
}

/// Byte size of one element of an OIP datatype: `Some(None)` for variable-size BYTES, `None`
/// for a name that is not an OIP datatype.
pub fn element_size(datatype: &str) -> Option<Option<usize>> {
    let size = match datatype {
        "BYTES" => return Some(None),
        "BOOL" | "UINT8" | "INT8" => 1,
        "UINT16" | "INT16" | "FP16" | "BF16" => 2,
        "UINT32" | "INT32" | "FP32" => 4,
        "UINT64" | "INT64" | "FP64" => 8,
        _ => return None,
    };
    Some(Some(size))
}

/// Checks a datatype name, naming the tensor on failure.
pub fn check_datatype(tensor: &str, datatype: &str) -> Result<(), ServeError> {
    match element_size(datatype) {
        Some(_) => Ok(()),
        None => Err(ServeError::tensor(
            tensor,
            format!("unknown datatype '{datatype}'"),
        )),
    }
}

/// Number of elements a request shape holds; dimensions must be non-negative and the
/// product must not overflow.
pub fn element_count(tensor: &str, shape: &[i64]) -> Result<usize, ServeError> {
    shape.iter().try_fold(1usize, |acc, &dim| {
        let dim = usize::try_from(dim).map_err(|_| {
            ServeError::tensor(tensor, format!("negative dimension {dim} in shape"))
        })?;
        acc.checked_mul(dim)
            .ok_or_else(|| ServeError::tensor(tensor, "shape holds too many elements"))
    })
}

/// Checks that `found` elements were supplied for `shape`.
pub fn check_count(tensor: &str, shape: &[i64], found: usize) -> Result<(), ServeError> {
    let expected = element_count(tensor, shape)?;
    if expected == found {
        Ok(())
    } else {
        Err(ServeError::tensor(
            tensor,
            format!("shape {shape:?} needs {expected} elements, data has {found}"),
        ))
    }
}

/// Checks an `add_sub` input's name, datatype and shape against its twin's.
pub fn check_add_sub_inputs(inputs: [(&str, &str, &[i64]); 2]) -> Result<(), ServeError> {
    for (spec, (name, datatype, _)) in ADD_SUB_INPUTS.iter().zip(inputs) {
        if name != spec.name {
            return Err(ServeError::BadRequest(format!(
                "add_sub takes inputs INPUT0 and INPUT1, got '{name}'"
            )));
        }
        if datatype != spec.datatype {
            return Err(ServeError::tensor(
                name,
                format!("datatype must be FP32, got '{datatype}'"),
            ));
        }
    }
    let [(_, _, shape0), (_, _, shape1)] = inputs;
    if shape0 != shape1 {
        return Err(ServeError::tensor(
            "INPUT1",
            format!("shape {shape1:?} differs from INPUT0's {shape0:?}"),
        ));
    }
    Ok(())
}

/// `OUTPUT0 = a + b`, `OUTPUT1 = a - b`, element-wise.
pub fn add_sub(a: &[f32], b: &[f32]) -> Result<(Vec<f32>, Vec<f32>), ServeError> {
    if a.len() != b.len() {
        return Err(ServeError::tensor(
            "INPUT1",
            format!("has {} elements, INPUT0 has {}", b.len(), a.len()),
        ));
    }
    let sum = a.iter().zip(b).map(|(x, y)| x + y).collect();
    let difference = a.iter().zip(b).map(|(x, y)| x - y).collect();
    Ok((sum, difference))
}

/// Orders the produced outputs as requested: every name in `requested` must be produced; an
/// empty request means all outputs in production order. Returns indices into `produced`.
pub fn select_outputs(requested: &[&str], produced: &[&str]) -> Result<Vec<usize>, ServeError> {
    if requested.is_empty() {
        return Ok((0..produced.len()).collect());
    }
    requested
        .iter()
        .map(|name| {
            produced.iter().position(|p| p == name).ok_or_else(|| {
                ServeError::tensor(name, "requested output is not produced by the model")
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn looks_up_models_and_versions() {
        assert_eq!(Model::lookup("add_sub", None).unwrap(), Model::AddSub);
        assert_eq!(Model::lookup("echo", Some("")).unwrap(), Model::Echo);
        assert_eq!(Model::lookup("echo", Some("1")).unwrap(), Model::Echo);
        assert!(matches!(
            Model::lookup("echo", Some("7")),
            Err(ServeError::VersionNotFound { .. })
        ));
        assert!(matches!(
            Model::lookup("nope", None),
            Err(ServeError::ModelNotFound(_))
        ));
    }

    #[test]
    fn counts_elements_safely() {
        assert_eq!(element_count("t", &[2, 3]).unwrap(), 6);
        assert_eq!(element_count("t", &[]).unwrap(), 1);
        assert!(element_count("t", &[-1]).is_err());
        assert!(element_count("t", &[i64::MAX, i64::MAX]).is_err());
    }

    #[test]
    fn adds_and_subtracts() {
        let (sum, diff) = add_sub(&[1.0, 2.0], &[0.5, 4.0]).unwrap();
        assert_eq!(sum, [1.5, 6.0]);
        assert_eq!(diff, [0.5, -2.0]);
        assert!(add_sub(&[1.0], &[]).is_err());
    }

    #[test]
    fn selects_outputs() {
        let produced = ["OUTPUT0", "OUTPUT1"];
        assert_eq!(select_outputs(&[], &produced).unwrap(), [0, 1]);
        assert_eq!(select_outputs(&["OUTPUT1"], &produced).unwrap(), [1]);
        assert!(select_outputs(&["OUTPUT9"], &produced).is_err());
    }
}
