//! The TF Serving gRPC messages ferry reads and writes, written from their field numbers
//! (`tensorflow_serving/apis/{predict,model,get_model_metadata}.proto`,
//! `tensorflow/core/framework/{tensor,tensor_shape,types}.proto`,
//! `tensorflow/core/protobuf/meta_graph.proto`) with prost's derive: no `.proto` files or
//! protoc. Fields ferry never needs (resource handles, variants, sparse encodings, streamed
//! options) are left out; prost skips them when decoding. `bytes` fields are
//! [`bytes::Bytes`], so decoding slices the received buffer instead of copying tensors.

#![allow(
    missing_docs,
    reason = "wire messages: the field names and numbers are TensorFlow's"
)]

use std::collections::HashMap;

use bytes::Bytes;

/// Path prefix of every rpc in `tensorflow.serving.PredictionService`.
pub const SERVICE_PATH: &str = "/tensorflow.serving.PredictionService/";

/// `google.protobuf.Any`'s type URL of the `signature_def` metadata.
pub const SIGNATURE_DEF_MAP_URL: &str = "type.googleapis.com/tensorflow.serving.SignatureDefMap";

/// `tensorflow.DataType` values ferry maps (the `_REF` variants never travel).
pub mod dtype {
    pub const DT_FLOAT: i32 = 1;
    pub const DT_DOUBLE: i32 = 2;
    pub const DT_INT32: i32 = 3;
    pub const DT_UINT8: i32 = 4;
    pub const DT_INT16: i32 = 5;
    pub const DT_INT8: i32 = 6;
    pub const DT_STRING: i32 = 7;
    pub const DT_INT64: i32 = 9;
    pub const DT_BOOL: i32 = 10;
    pub const DT_BFLOAT16: i32 = 14;
    pub const DT_UINT16: i32 = 17;
    pub const DT_HALF: i32 = 19;
    pub const DT_UINT32: i32 = 22;
    pub const DT_UINT64: i32 = 23;
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Int64Value {
    #[prost(int64, tag = "1")]
    pub value: i64,
}

#[derive(Clone, PartialEq, prost::Oneof)]
pub enum VersionChoice {
    #[prost(message, tag = "2")]
    Version(Int64Value),
    #[prost(string, tag = "4")]
    VersionLabel(String),
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ModelSpec {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(oneof = "VersionChoice", tags = "2, 4")]
    pub version_choice: Option<VersionChoice>,
    #[prost(string, tag = "3")]
    pub signature_name: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Dim {
    #[prost(int64, tag = "1")]
    pub size: i64,
    #[prost(string, tag = "2")]
    pub name: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct TensorShapeProto {
    #[prost(message, repeated, tag = "2")]
    pub dim: Vec<Dim>,
    #[prost(bool, tag = "3")]
    pub unknown_rank: bool,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct TensorProto {
    #[prost(int32, tag = "1")]
    pub dtype: i32,
    #[prost(message, optional, tag = "2")]
    pub tensor_shape: Option<TensorShapeProto>,
    #[prost(int32, tag = "3")]
    pub version_number: i32,
    #[prost(bytes = "bytes", tag = "4")]
    pub tensor_content: Bytes,
    #[prost(float, repeated, tag = "5")]
    pub float_val: Vec<f32>,
    #[prost(double, repeated, tag = "6")]
    pub double_val: Vec<f64>,
    #[prost(int32, repeated, tag = "7")]
    pub int_val: Vec<i32>,
    #[prost(bytes = "bytes", repeated, tag = "8")]
    pub string_val: Vec<Bytes>,
    #[prost(float, repeated, tag = "9")]
    pub scomplex_val: Vec<f32>,
    #[prost(int64, repeated, tag = "10")]
    pub int64_val: Vec<i64>,
    #[prost(bool, repeated, tag = "11")]
    pub bool_val: Vec<bool>,
    #[prost(double, repeated, tag = "12")]
    pub dcomplex_val: Vec<f64>,
    #[prost(int32, repeated, tag = "13")]
    pub half_val: Vec<i32>,
    #[prost(uint32, repeated, tag = "16")]
    pub uint32_val: Vec<u32>,
    #[prost(uint64, repeated, tag = "17")]
    pub uint64_val: Vec<u64>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct PredictRequest {
    #[prost(message, optional, tag = "1")]
    pub model_spec: Option<ModelSpec>,
    #[prost(map = "string, message", tag = "2")]
    pub inputs: HashMap<String, TensorProto>,
    #[prost(string, repeated, tag = "3")]
    pub output_filter: Vec<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct PredictResponse {
    #[prost(map = "string, message", tag = "1")]
    pub outputs: HashMap<String, TensorProto>,
    #[prost(message, optional, tag = "2")]
    pub model_spec: Option<ModelSpec>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct GetModelMetadataRequest {
    #[prost(message, optional, tag = "1")]
    pub model_spec: Option<ModelSpec>,
    #[prost(string, repeated, tag = "2")]
    pub metadata_field: Vec<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Any {
    #[prost(string, tag = "1")]
    pub type_url: String,
    #[prost(bytes = "bytes", tag = "2")]
    pub value: Bytes,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct GetModelMetadataResponse {
    #[prost(message, optional, tag = "1")]
    pub model_spec: Option<ModelSpec>,
    #[prost(map = "string, message", tag = "2")]
    pub metadata: HashMap<String, Any>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct SignatureDefMap {
    #[prost(map = "string, message", tag = "1")]
    pub signature_def: HashMap<String, SignatureDef>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct SignatureDef {
    #[prost(map = "string, message", tag = "1")]
    pub inputs: HashMap<String, TensorInfo>,
    #[prost(map = "string, message", tag = "2")]
    pub outputs: HashMap<String, TensorInfo>,
    #[prost(string, tag = "3")]
    pub method_name: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct TensorInfo {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(int32, tag = "2")]
    pub dtype: i32,
    #[prost(message, optional, tag = "3")]
    pub tensor_shape: Option<TensorShapeProto>,
}
