//! Rust types for `proto/inference.proto` (package `inference`). The translation filter
//! compiles the proto once (filters/build.rs); the demo model server and client reuse it.

pub use ferry_filters::translate::pb::*;

/// Path prefix of every rpc in `inference.GRPCInferenceService`.
pub const SERVICE_PATH: &str = "/inference.GRPCInferenceService/";
