//! Raw `validate_tensors` route settings: where model metadata comes from, and static models.

use schemars::JsonSchema;
use serde::Deserialize;

use super::scalars::{DurationText, Text};

/// Check inference requests' input tensors against the model's metadata before forwarding.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "ValidateTensors")]
pub struct ValidateTensorsSpec {
    /// Where the metadata comes from: `upstream` (fetched from the model server, cached) or
    /// `static` (the `models` list). Default `upstream`.
    pub metadata: Option<MetadataSourceSpec>,
    /// `metadata: upstream` only: how long fetched metadata is trusted before it is fetched
    /// again. Default `30s`.
    pub refresh: Option<DurationText>,
    /// `metadata: static` only (and required there): the models and their inputs.
    pub models: Option<Vec<ModelTensorsSpec>>,
}

/// Where tensor metadata comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
#[schemars(rename = "MetadataSource")]
pub enum MetadataSourceSpec {
    /// `GET /v2/models/{m}` or gRPC `ModelMetadata`, through the route's own upstream path.
    Upstream,
    /// The route's `models` list.
    Static,
}

/// One model's inputs.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "ModelTensors")]
pub struct ModelTensorsSpec {
    /// Model name as requests address it.
    pub name: Text,
    /// The model's inputs; a request must send each of them and nothing else.
    pub inputs: Vec<TensorSpec>,
}

/// One input tensor.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "TensorSpec")]
pub struct TensorSpec {
    /// Tensor name.
    pub name: Text,
    /// OIP datatype: BOOL, UINT8, UINT16, UINT32, UINT64, INT8, INT16, INT32, INT64, FP16,
    /// BF16, FP32, FP64 or BYTES.
    pub datatype: Text,
    /// Dimensions; `-1` = any size.
    pub shape: Vec<i64>,
}
