//! A route's protocol translation: Open Inference Protocol v2 between REST and gRPC, bridging
//! between serving protocols (OIP v2 REST ⇄ KServe V1), or generic REST → gRPC transcoding from
//! a descriptor set.

use super::FieldLocation;
use super::tensors::TensorSpec;

/// A route's protocol translation: Open Inference Protocol v2, or generic transcoding from a
/// descriptor set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Translate {
    /// Which way.
    pub direction: TranslateDirection,
    /// Bound on a translated body and on its decoded tensors, in bytes. Default 64 MiB.
    pub max_decoded_bytes: u64,
    /// gRPC → REST: how raw tensors travel to the REST upstream. Default auto.
    pub upstream_binary: UpstreamBinary,
    /// `protocol: descriptor`: generic REST → gRPC transcoding; `None` = OIP v2.
    pub descriptor: Option<DescriptorTranscode>,
    /// The model's tensors, for a bridge to or from KServe V1 (which carries no datatypes or
    /// shapes); `None` elsewhere.
    pub signature: Option<Signature>,
}

/// A bridged model's tensors.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Signature {
    /// Inputs, in the order a V1 request lists them.
    pub inputs: Vec<TensorSpec>,
    /// Outputs (empty for KServe V1 callers: the v2 answer carries its own types).
    pub outputs: Vec<TensorSpec>,
}

/// Generic REST → gRPC transcoding from a `FileDescriptorSet`. The file itself is read by the
/// proxy (at startup, `ferry validate` and reload), which reports its faults at `at`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescriptorTranscode {
    /// The descriptor set file, resolved against the config file's directory.
    pub descriptor_set: std::path::PathBuf,
    /// Where `descriptor_set` is written, for errors about the file's contents.
    pub at: FieldLocation,
    /// Refuse (`true`) or drop unknown JSON fields and query parameters. Default refuse.
    pub reject_unknown_fields: bool,
    /// How server streams are written out. Default NDJSON.
    pub streaming: StreamingFormat,
    /// Services to expose (full names); empty = all.
    pub services: Vec<String>,
}

/// How server streams are written out to REST callers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamingFormat {
    /// Newline-delimited JSON.
    Ndjson,
    /// Server-sent events.
    Sse,
}

/// gRPC → REST: binary-extension sections or JSON `data` for raw tensors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UpstreamBinary {
    /// Always binary sections (`true`).
    On,
    /// Always JSON `data` (`false`).
    Off,
    /// As the upstream's server metadata says (`auto`).
    #[default]
    Auto,
}

/// Which way a route translates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TranslateDirection {
    /// REST callers, gRPC upstream.
    RestToGrpc,
    /// gRPC callers, REST upstream.
    GrpcToRest,
    /// OIP v2 callers (REST, gRPC or both), KServe V1 (TF Serving REST) upstream.
    OipToKserveV1(super::OipCallers),
    /// KServe V1 callers, OIP v2 REST upstream.
    KserveV1ToOipRest,
    /// OIP v2 callers (REST, gRPC or both), TorchServe upstream.
    OipToTorchserve(super::TorchserveBridge),
    /// KServe V1 callers, OIP v2 gRPC upstream.
    KserveV1ToOipGrpc,
    /// TF Serving gRPC callers, OIP v2 REST upstream.
    TfservingGrpcToOipRest,
    /// TF Serving gRPC callers, OIP v2 gRPC upstream.
    TfservingGrpcToOipGrpc,
    /// OIP v2 REST callers, TF Serving gRPC upstream.
    OipRestToTfservingGrpc,
    /// OIP v2 gRPC callers, TF Serving gRPC upstream.
    OipGrpcToTfservingGrpc,
}

// === impl TranslateDirection ===

impl TranslateDirection {
    /// `caller->upstream`, for logs, spans and the effective config.
    pub fn label(self) -> &'static str {
        match self {
            TranslateDirection::RestToGrpc => "rest->grpc",
            TranslateDirection::GrpcToRest => "grpc->rest",
            TranslateDirection::OipToKserveV1(c) => match c {
                super::OipCallers::Rest => "oip-v2-rest->kserve-v1",
                super::OipCallers::Grpc => "oip-v2-grpc->kserve-v1",
                super::OipCallers::Both => "oip-v2->kserve-v1",
            },
            TranslateDirection::KserveV1ToOipRest => "kserve-v1->oip-v2-rest",
            TranslateDirection::OipToTorchserve(b) => b.label(),
            TranslateDirection::KserveV1ToOipGrpc => "kserve-v1->oip-v2-grpc",
            TranslateDirection::TfservingGrpcToOipRest => "tfserving-grpc->oip-v2-rest",
            TranslateDirection::TfservingGrpcToOipGrpc => "tfserving-grpc->oip-v2-grpc",
            TranslateDirection::OipRestToTfservingGrpc => "oip-v2-rest->tfserving-grpc",
            TranslateDirection::OipGrpcToTfservingGrpc => "oip-v2-grpc->tfserving-grpc",
        }
    }

    /// The caller's and the upstream's protocol names, as written in the config (a
    /// bridge serving both OIP wires names them `oip-v2`; the effective config writes the list).
    pub fn names(self) -> (&'static str, &'static str) {
        match self {
            TranslateDirection::RestToGrpc => ("rest", "grpc"),
            TranslateDirection::GrpcToRest => ("grpc", "rest"),
            TranslateDirection::OipToKserveV1(_) => {
                self.label().split_once("->").unwrap_or_default()
            }
            TranslateDirection::KserveV1ToOipRest => ("kserve-v1", "oip-v2-rest"),
            TranslateDirection::OipToTorchserve(b) => {
                b.label().split_once("->").unwrap_or_default()
            }
            TranslateDirection::KserveV1ToOipGrpc => ("kserve-v1", "oip-v2-grpc"),
            TranslateDirection::TfservingGrpcToOipRest => ("tfserving-grpc", "oip-v2-rest"),
            TranslateDirection::TfservingGrpcToOipGrpc => ("tfserving-grpc", "oip-v2-grpc"),
            TranslateDirection::OipRestToTfservingGrpc => ("oip-v2-rest", "tfserving-grpc"),
            TranslateDirection::OipGrpcToTfservingGrpc => ("oip-v2-grpc", "tfserving-grpc"),
        }
    }
}
