//! A route's input tensor checks (`validate_tensors`).

use std::sync::Arc;
use std::time::Duration;

/// Check OIP infer requests' inputs against model metadata before forwarding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidateTensors {
    /// Where the metadata comes from.
    pub source: TensorMetadataSource,
}

/// Where tensor metadata comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TensorMetadataSource {
    /// Fetched from the upstream through the route, cached per model for `refresh`.
    Upstream {
        /// How long fetched metadata is trusted.
        refresh: Duration,
    },
    /// Given in the config.
    Static(Arc<[ModelTensors]>),
}

/// One model's inputs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelTensors {
    /// Model name.
    pub name: String,
    /// Its inputs.
    pub inputs: Vec<TensorSpec>,
}

/// One input tensor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorSpec {
    /// Tensor name.
    pub name: String,
    /// OIP datatype spelling (checked to be one of the protocol's).
    pub datatype: String,
    /// Dimensions; `-1` = any.
    pub shape: Vec<i64>,
}
