//! Rust types for `proto/inference.proto` (package `inference`), generated at build time by
//! prost from protox's descriptors. Shared by the demo model server and the demo client.

#![allow(
    missing_docs,
    reason = "generated code; the .proto file documents the fields"
)]

include!(concat!(env!("OUT_DIR"), "/inference.rs"));

/// Path prefix of every rpc in `inference.GRPCInferenceService`.
pub const SERVICE_PATH: &str = "/inference.GRPCInferenceService/";
