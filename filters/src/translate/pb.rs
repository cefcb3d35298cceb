//! Rust types for `proto/inference.proto` (package `inference`), generated at build time by
//! prost from protox's descriptors. `bytes` fields are [`bytes::Bytes`], so decoding from a
//! `Bytes` buffer slices it instead of copying tensors.

#![allow(
    missing_docs,
    unreachable_pub,
    clippy::all,
    reason = "generated code; the .proto file documents the fields"
)]

include!(concat!(env!("OUT_DIR"), "/inference.rs"));

/// Path prefix of every rpc in `inference.GRPCInferenceService`.
pub const SERVICE_PATH: &str = "/inference.GRPCInferenceService/";
