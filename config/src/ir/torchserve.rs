//! A bridge from Open Inference Protocol callers to TorchServe's own API.

/// Which OIP callers a TorchServe bridge serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OipCallers {
    /// OIP v2 REST only.
    Rest,
    /// OIP v2 gRPC only.
    Grpc,
    /// Both, told apart by the caller's Content-Type (`application/grpc*` = gRPC).
    Both,
}

/// Which TorchServe API the upstream serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TorchserveApi {
    /// `POST /predictions/{m}[/{v}]` on the inference port.
    Rest,
    /// `org.pytorch.serve.grpc.inference.InferenceAPIsService/Predictions`.
    Grpc,
}

/// How a tensor becomes the bytes TorchServe's handler receives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TorchservePayload {
    /// JSON nested arrays (the default).
    #[default]
    Json,
    /// Little-endian elements, row-major, no header.
    Raw,
    /// NumPy `.npy` format 1.0.
    Npy,
}

/// OIP callers, TorchServe upstream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TorchserveBridge {
    /// Which callers.
    pub callers: OipCallers,
    /// Which upstream API.
    pub api: TorchserveApi,
    /// How tensors travel.
    pub payload: TorchservePayload,
}

// === impl TorchserveBridge ===

impl TorchserveBridge {
    /// `caller->upstream`, for logs, spans and the effective config.
    pub fn label(self) -> &'static str {
        match (self.callers, self.api) {
            (OipCallers::Rest, TorchserveApi::Rest) => "oip-v2-rest->torchserve-rest",
            (OipCallers::Grpc, TorchserveApi::Rest) => "oip-v2-grpc->torchserve-rest",
            (OipCallers::Both, TorchserveApi::Rest) => "oip-v2->torchserve-rest",
            (OipCallers::Rest, TorchserveApi::Grpc) => "oip-v2-rest->torchserve-grpc",
            (OipCallers::Grpc, TorchserveApi::Grpc) => "oip-v2-grpc->torchserve-grpc",
            (OipCallers::Both, TorchserveApi::Grpc) => "oip-v2->torchserve-grpc",
        }
    }
}
