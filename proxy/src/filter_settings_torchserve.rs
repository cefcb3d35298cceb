//! Config IR → the settings of a bridge to TorchServe: its upstream side, and the OIP
//! translator that puts gRPC callers in front of it.

use ferry_config::{
    OipCallers, TorchserveApi, TorchserveBridge, TorchservePayload, Translate, TranslateDirection,
};
use ferry_filters::bridge::GrpcCallersLayer;
use ferry_filters::bridge::torchserve::{self, Payload, TorchserveTarget};
use ferry_filters::translate::MaxDecodedBytes;

/// The bridge's upstream side.
pub fn target(b: TorchserveBridge) -> TorchserveTarget {
    TorchserveTarget {
        api: match b.api {
            TorchserveApi::Rest => torchserve::TorchserveApi::Rest,
            TorchserveApi::Grpc => torchserve::TorchserveApi::Grpc,
        },
        payload: match b.payload {
            TorchservePayload::Json => Payload::Json,
            TorchservePayload::Raw => Payload::Raw,
            TorchservePayload::Npy => Payload::Npy,
        },
    }
}

/// The gRPC callers' translator of a bridge reading OIP REST (TorchServe, KServe V1) whose
/// callers include OIP gRPC.
pub fn grpc_callers(config: Option<&Translate>) -> Option<GrpcCallersLayer> {
    let t = config?;
    let callers = match t.direction {
        TranslateDirection::OipToTorchserve(b) => b.callers,
        TranslateDirection::OipToKserveV1(callers) => callers,
        _ => return None,
    };
    let rest_too = match callers {
        OipCallers::Rest => return None,
        OipCallers::Grpc => false,
        OipCallers::Both => true,
    };
    Some(GrpcCallersLayer::new(
        MaxDecodedBytes(t.max_decoded_bytes),
        rest_too,
    ))
}
