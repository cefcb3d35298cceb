//! The effective form of a route's `translate`: the protocol names as written (a list for a
//! bridge serving both OIP wires), and only the fields that apply to its pair.

use serde_json::{Value, json};

use crate::ir::{Translate, TranslateDirection, UpstreamBinary};

pub(super) fn translate(t: &Translate) -> Value {
    let (from, to) = t.direction.names();
    let mut spec = json!({
        "from": from,
        "to": to,
        "protocol": if t.descriptor.is_some() { "descriptor" } else { "oip-v2" },
        "max_decoded_bytes": t.max_decoded_bytes,
    });
    if let Some(d) = &t.descriptor {
        spec["descriptor_set"] = d.descriptor_set.display().to_string().into();
        spec["unknown_fields"] = if d.reject_unknown_fields {
            "reject"
        } else {
            "ignore"
        }
        .into();
        spec["streaming"] = match d.streaming {
            crate::ir::StreamingFormat::Ndjson => "ndjson",
            crate::ir::StreamingFormat::Sse => "sse",
        }
        .into();
        if !d.services.is_empty() {
            spec["services"] = d.services.clone().into();
        }
    }
    if let Some(sig) = &t.signature {
        spec["signature"] = signature(sig);
    }
    match t.direction {
        TranslateDirection::OipToTorchserve(b) => torchserve_fields(&mut spec, b),
        TranslateDirection::OipToKserveV1(crate::ir::OipCallers::Both) => {
            spec["from"] = json!(["oip-v2-rest", "oip-v2-grpc"]);
        }
        _ => {}
    }
    // `protocol` goes with the `rest`/`grpc` names only.
    if !matches!(
        t.direction,
        TranslateDirection::RestToGrpc | TranslateDirection::GrpcToRest
    ) && let Some(o) = spec.as_object_mut()
    {
        o.remove("protocol");
    }
    if matches!(
        t.direction,
        TranslateDirection::GrpcToRest | TranslateDirection::TfservingGrpcToOipRest
    ) {
        spec["upstream_binary"] = match t.upstream_binary {
            UpstreamBinary::On => true.into(),
            UpstreamBinary::Off => false.into(),
            UpstreamBinary::Auto => "auto".into(),
        };
    }
    spec
}

fn signature(s: &crate::ir::Signature) -> Value {
    let tensors = |ts: &[crate::ir::TensorSpec]| -> Value {
        ts.iter()
            .map(|t| json!({ "name": t.name, "datatype": t.datatype, "shape": t.shape }))
            .collect()
    };
    let mut out = json!({ "inputs": tensors(&s.inputs) });
    if !s.outputs.is_empty() {
        out["outputs"] = tensors(&s.outputs);
    }
    out
}

/// A TorchServe bridge's caller list (both OIP wires as a list) and payload.
fn torchserve_fields(spec: &mut Value, b: crate::ir::TorchserveBridge) {
    use crate::ir::{OipCallers, TorchservePayload};
    if b.callers == OipCallers::Both {
        spec["from"] = json!(["oip-v2-rest", "oip-v2-grpc"]);
    }
    spec["payload"] = match b.payload {
        TorchservePayload::Json => "json",
        TorchservePayload::Raw => "raw",
        TorchservePayload::Npy => "npy",
    }
    .into();
}
