//! Checking one JSON tensor against its datatype and shape, and binding binary-extension
//! sections to tensors as slices of the received body.

use std::collections::{HashMap, HashSet};

use bytes::Bytes;

use super::datatype::DataType;
use super::error::TranslateError;
use super::json_in::{Budget, JsonTensor, declared_count};
use super::pb::{InferParameter, infer_parameter::ParameterChoice};
use super::raw;
use super::tensor_data::TensorData;

/// The binary-extension parameter on a tensor: the size of its section.
pub(crate) const BINARY_DATA_SIZE: &str = "binary_data_size";

/// A checked tensor.
#[derive(Debug)]
pub(crate) struct Tensor {
    pub(crate) name: String,
    pub(crate) dt: DataType,
    pub(crate) shape: Vec<i64>,
    pub(crate) parameters: HashMap<String, InferParameter>,
    pub(crate) data: TensorData,
}

/// One `raw_input_contents` entry of a translated request.
#[derive(Debug)]
pub(crate) enum RawInput {
    /// Bytes in hand: a received section, or a JSON tensor in raw form.
    Ready(Bytes),
    /// A section of this many bytes, passed through from the request body as it arrives.
    Body(usize),
}

// === impl RawInput ===

impl RawInput {
    /// The entries of a body received whole, whose sections are all slices of it.
    pub(crate) fn all_ready(raw: Vec<RawInput>) -> Result<Vec<Bytes>, TranslateError> {
        raw.into_iter()
            .map(|r| match r {
                RawInput::Ready(b) => Ok(b),
                RawInput::Body(_) => Err(TranslateError::BadRequest(
                    "a binary section is missing from the received body".into(),
                )),
            })
            .collect()
    }
}

/// Binary sections after the JSON header, handed out in tensor order: slices of the received
/// tail, or only their sizes when the tail is still arriving and only its length is known.
pub(crate) struct Sections {
    tail: Option<Bytes>,
    len: usize,
    offset: usize,
}

// === impl Sections ===

impl Sections {
    pub(crate) fn new(tail: Bytes) -> Self {
        Sections {
            len: tail.len(),
            tail: Some(tail),
            offset: 0,
        }
    }

    /// Sections of a tail not yet received, `len` bytes long (Content-Length minus the JSON
    /// header): sizes are checked, tensors get [`TensorData::Pending`].
    pub(crate) fn declared(len: usize) -> Self {
        Sections {
            tail: None,
            len,
            offset: 0,
        }
    }

    /// The next section's size, and its bytes once received.
    fn take(&mut self, size: u64, label: &str) -> Result<(usize, Option<Bytes>), TranslateError> {
        let range = self.take_range(size, label)?;
        Ok((range.len(), self.tail.as_ref().map(|t| t.slice(range))))
    }

    /// The next section's place in the tail, checked to lie within it.
    pub(crate) fn take_range(
        &mut self,
        size: u64,
        label: &str,
    ) -> Result<std::ops::Range<usize>, TranslateError> {
        let available = self.len - self.offset;
        let size = usize::try_from(size)
            .ok()
            .filter(|&s| s <= available)
            .ok_or_else(|| {
                TranslateError::BadRequest(format!(
                    "{label}: binary_data_size {size} exceeds the {available} bytes left in the body"
                ))
            })?;
        let start = self.offset;
        self.offset += size;
        Ok(start..self.offset)
    }

    /// Checks every byte after the JSON header belonged to some tensor.
    pub(crate) fn finish(self) -> Result<(), TranslateError> {
        let left = self.len - self.offset;
        if left == 0 {
            Ok(())
        } else {
            Err(TranslateError::BadRequest(format!(
                "binary sections add up to {} bytes but the body has {} after the JSON header",
                self.offset, self.len
            )))
        }
    }
}

/// Checks tensor `index` of `list` ("input"/"output") and binds its data.
pub(crate) fn check(
    list: &str,
    index: usize,
    t: JsonTensor,
    names: &mut HashSet<String>,
    sections: &mut Sections,
    budget: &Budget,
) -> Result<Tensor, TranslateError> {
    let bad = TranslateError::BadRequest;
    let name = match t.name {
        Some(n) if !n.is_empty() => n,
        _ => return Err(bad(format!("{list} {index} has no name"))),
    };
    let label = format!("{list} {name:?}");
    if !names.insert(name.clone()) {
        return Err(bad(format!("{label}: duplicate tensor name")));
    }
    let datatype = t
        .datatype
        .ok_or_else(|| bad(format!("{label}: missing datatype")))?;
    let dt = DataType::parse(&datatype)
        .ok_or_else(|| bad(format!("{label}: unknown datatype {datatype:?}")))?;
    let shape = t
        .shape
        .ok_or_else(|| bad(format!("{label}: missing shape")))?;
    let declared = declared_count(&shape).ok_or_else(|| {
        bad(format!(
            "{label}: invalid shape {shape:?} (negative dimension or too many elements)"
        ))
    })?;
    let mut parameters = t.parameters;
    let binary = match parameters.remove(BINARY_DATA_SIZE) {
        None => None,
        Some(p) => Some(match p.parameter_choice {
            Some(ParameterChoice::Int64Param(n)) if n >= 0 => n.unsigned_abs(),
            Some(ParameterChoice::Uint64Param(n)) => n,
            _ => {
                return Err(bad(format!(
                    "{label}: binary_data_size must be a non-negative integer"
                )));
            }
        }),
    };
    let (data, count) = match (binary, t.data) {
        (Some(_), Some(_)) => {
            return Err(bad(format!("{label}: has both data and binary_data_size")));
        }
        (None, None) => {
            return Err(bad(format!(
                "{label}: has neither data nor binary_data_size"
            )));
        }
        (Some(size), None) => {
            let (len, section) = sections.take(size, &label)?;
            if !budget.charge(size) {
                return Err(budget.too_large());
            }
            let (count, data) = match section {
                Some(r) => (raw::count(dt, &r), TensorData::Raw(r)),
                None => (raw::count_fixed(dt, len), TensorData::Pending(len)),
            };
            (data, count.map_err(|e| bad(format!("{label}: {e}")))?)
        }
        (None, Some(decoded)) => decoded
            .resolve(dt, budget)
            .map_err(|e| bad(format!("{label}: {e}")))?,
    };
    if count != declared {
        return Err(bad(format!(
            "{label}: shape {shape:?} needs {declared} elements but data has {count}"
        )));
    }
    Ok(Tensor {
        name,
        dt,
        shape,
        parameters,
        data,
    })
}

/// Removes a boolean transport parameter (`binary_data`, `binary_data_output`).
pub(crate) fn take_flag(
    params: &mut HashMap<String, InferParameter>,
    key: &str,
    label: &str,
) -> Result<Option<bool>, TranslateError> {
    match params.remove(key).and_then(|p| p.parameter_choice) {
        None => Ok(None),
        Some(ParameterChoice::BoolParam(b)) => Ok(Some(b)),
        Some(_) => Err(TranslateError::BadRequest(format!(
            "{label}: {key} must be true or false"
        ))),
    }
}
