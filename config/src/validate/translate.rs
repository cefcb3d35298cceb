//! `translate` → [`Translate`]: which caller and upstream protocols (and whether ferry bridges
//! that pair yet), the body limit, the binary-extension setting and the bridge's `signature`.
//! Descriptor transcoding's own fields are checked in `transcode`.

use std::collections::HashSet;

use super::Ctx;
use crate::defaults;
use crate::ir::{
    OipCallers, Signature, TensorSpec, TorchserveApi, Translate, TranslateDirection, UpstreamBinary,
};
use crate::raw::{
    ProbeSpec, SignatureSpec, TranslateProtocolSpec, TranslateSpec, UpstreamBinarySpec, WireSpec,
};

/// The pairs ferry bridges, for errors.
const BRIDGED: &str = "oip-v2-rest → oip-v2-grpc, oip-v2-grpc → oip-v2-rest, oip-v2-rest → kserve-v1, kserve-v1 → oip-v2-rest, kserve-v1 → oip-v2-grpc, tfserving-grpc → oip-v2-rest, tfserving-grpc → oip-v2-grpc, oip-v2-rest → tfserving-grpc, oip-v2-grpc → tfserving-grpc, oip-v2-rest or oip-v2-grpc → torchserve-rest or torchserve-grpc";

/// Every Open Inference Protocol datatype: a TensorProto carries each (FP16 and BF16 in
/// `half_val`).
pub(super) const ALL_DATATYPES: [&str; 14] = [
    "BOOL", "UINT8", "UINT16", "UINT32", "UINT64", "INT8", "INT16", "INT32", "INT64", "FP16",
    "BF16", "FP32", "FP64", "BYTES",
];

/// The Open Inference Protocol datatypes a v2 server takes as JSON `data`, which is how
/// ferry sends KServe V1 callers' tensors (FP16 and BF16 have no JSON form there). OIP callers
/// of KServe V1 and TorchServe may use every datatype: FP16 and BF16 arrive as binary
/// sections and leave as the numbers they hold.
const JSON_DATATYPES: [&str; 12] = [
    "BOOL", "UINT8", "UINT16", "UINT32", "UINT64", "INT8", "INT16", "INT32", "INT64", "FP32",
    "FP64", "BYTES",
];

pub(super) fn translate(ctx: &mut Ctx<'_>, path: &str, spec: &TranslateSpec) -> Option<Translate> {
    let direction = direction(ctx, path, spec);
    let max_decoded_bytes = match spec.max_decoded_bytes {
        None => Some(defaults::TRANSLATE_MAX_DECODED_BYTES),
        Some(0) => {
            ctx.error(
                &format!("{path}.max_decoded_bytes"),
                "invalid limit 0 (expected a number of bytes > 0, e.g. 67108864)",
            );
            None
        }
        Some(n) => Some(n),
    };
    let grpc_to_rest = matches!(
        spec.from.first(),
        Some(WireSpec::Grpc | WireSpec::OipV2Grpc | WireSpec::TfservingGrpc)
    ) && matches!(spec.to, WireSpec::Rest | WireSpec::OipV2Rest);
    if spec.upstream_binary.is_some() && !grpc_to_rest {
        ctx.error(
            &format!("{path}.upstream_binary"),
            "only applies to from: grpc, to: rest (expected it omitted)",
        );
    }
    let torchserve = match direction {
        Some(TranslateDirection::OipToTorchserve(b)) => Some(b),
        _ => None,
    };
    if spec.payload.is_some() && torchserve.is_none() && direction.is_some() {
        ctx.error(
            &format!("{path}.payload"),
            "only applies to to: torchserve-rest or torchserve-grpc (expected it omitted)",
        );
    }
    let descriptor = super::transcode::descriptor(ctx, path, spec);
    let mut signature = match direction {
        Some(d) => signature(ctx, path, d, spec.signature.as_ref()),
        None => Some(None),
    };
    if let (Some(b), Some(sig)) = (torchserve, spec.signature.as_ref())
        && !super::torchserve::check_signature(ctx, path, b.payload, sig)
    {
        signature = None;
    }
    Some(Translate {
        direction: direction?,
        max_decoded_bytes: max_decoded_bytes?,
        upstream_binary: match spec.upstream_binary {
            Some(UpstreamBinarySpec::Fixed(true)) => UpstreamBinary::On,
            Some(UpstreamBinarySpec::Fixed(false)) => UpstreamBinary::Off,
            Some(UpstreamBinarySpec::Probe(ProbeSpec::Auto)) | None => UpstreamBinary::Auto,
        },
        descriptor: descriptor?,
        signature: signature?,
    })
}

/// The caller → upstream pair, if ferry bridges it.
fn direction(ctx: &mut Ctx<'_>, path: &str, spec: &TranslateSpec) -> Option<TranslateDirection> {
    let named = spec
        .from
        .0
        .iter()
        .chain([&spec.to])
        .any(|w| !matches!(w, WireSpec::Rest | WireSpec::Grpc));
    if named && spec.protocol.is_some() {
        ctx.error(
            &format!("{path}.protocol"),
            "applies only to from/to rest or grpc (expected it omitted with protocol names)",
        );
        return None;
    }
    match spec.to {
        WireSpec::TorchserveRest => {
            return super::torchserve::direction(ctx, path, spec, TorchserveApi::Rest);
        }
        WireSpec::TorchserveGrpc => {
            return super::torchserve::direction(ctx, path, spec, TorchserveApi::Grpc);
        }
        // A list of OIP wires for one KServe V1 bridge; one name goes through the pairs below.
        WireSpec::KserveV1 if spec.from.0.len() > 1 => {
            return super::torchserve::oip_callers(ctx, path, spec)
                .map(TranslateDirection::OipToKserveV1);
        }
        _ => {}
    }
    let from = match spec.from.0.as_slice() {
        [one] => *one,
        [] => {
            ctx.error(
                &format!("{path}.from"),
                "empty list (expected a protocol name, e.g. oip-v2-rest)",
            );
            return None;
        }
        [_, _, ..] => {
            ctx.error(
                &format!("{path}.from"),
                "a list of caller protocols is not bridged yet (expected one protocol name)",
            );
            return None;
        }
    };
    let oip = spec.protocol.unwrap_or(TranslateProtocolSpec::OipV2) == TranslateProtocolSpec::OipV2;
    // `rest`/`grpc` with protocol oip-v2 are aliases of the OIP names.
    let alias = |w: WireSpec| match w {
        WireSpec::Rest if oip => WireSpec::OipV2Rest,
        WireSpec::Grpc if oip => WireSpec::OipV2Grpc,
        other => other,
    };
    let pair = (alias(from), alias(spec.to));
    let direction = match pair {
        // Descriptor transcoding keeps the wire names; `transcode` checks its pair.
        (WireSpec::OipV2Rest, WireSpec::OipV2Grpc) | (WireSpec::Rest, WireSpec::Grpc) => {
            TranslateDirection::RestToGrpc
        }
        (WireSpec::OipV2Grpc, WireSpec::OipV2Rest) | (WireSpec::Grpc, WireSpec::Rest) => {
            TranslateDirection::GrpcToRest
        }
        (WireSpec::OipV2Rest, WireSpec::KserveV1) => {
            TranslateDirection::OipToKserveV1(OipCallers::Rest)
        }
        (WireSpec::OipV2Grpc, WireSpec::KserveV1) => {
            TranslateDirection::OipToKserveV1(OipCallers::Grpc)
        }
        (WireSpec::KserveV1, WireSpec::OipV2Rest) => TranslateDirection::KserveV1ToOipRest,
        (WireSpec::KserveV1, WireSpec::OipV2Grpc) => TranslateDirection::KserveV1ToOipGrpc,
        (WireSpec::TfservingGrpc, WireSpec::OipV2Rest) => {
            TranslateDirection::TfservingGrpcToOipRest
        }
        (WireSpec::TfservingGrpc, WireSpec::OipV2Grpc) => {
            TranslateDirection::TfservingGrpcToOipGrpc
        }
        (WireSpec::OipV2Rest, WireSpec::TfservingGrpc) => {
            TranslateDirection::OipRestToTfservingGrpc
        }
        (WireSpec::OipV2Grpc, WireSpec::TfservingGrpc) => {
            TranslateDirection::OipGrpcToTfservingGrpc
        }
        (a, b) if a == b => {
            ctx.error(
                &format!("{path}.to"),
                format!(
                    "from and to are both {} (expected two different protocols, e.g. from: oip-v2-rest, to: kserve-v1)",
                    spec.to.name()
                ),
            );
            return None;
        }
        (a, b) => {
            let at = if matches!(a, WireSpec::TorchserveRest | WireSpec::TorchserveGrpc) {
                "from"
            } else {
                "to"
            };
            ctx.error(
                &format!("{path}.{at}"),
                format!(
                    "{} → {} is not bridged yet (expected one of: {BRIDGED})",
                    a.name(),
                    b.name()
                ),
            );
            return None;
        }
    };
    Some(direction)
}

/// The bridge's signature: `Some(None)` where none applies, `None` after recording an error.
fn signature(
    ctx: &mut Ctx<'_>,
    path: &str,
    direction: TranslateDirection,
    spec: Option<&SignatureSpec>,
) -> Option<Option<Signature>> {
    let field = format!("{path}.signature");
    let (needs_outputs, why) = match direction {
        TranslateDirection::RestToGrpc | TranslateDirection::GrpcToRest => {
            if spec.is_some() {
                ctx.error(
                    &field,
                    "only applies to bridging with kserve-v1, tfserving-grpc or torchserve (expected it omitted)",
                );
                return None;
            }
            return Some(None);
        }
        TranslateDirection::OipToKserveV1(_) => (
            true,
            "kserve-v1 answers carry no datatypes or shapes (expected signature: {inputs: [...], outputs: [...]})",
        ),
        TranslateDirection::OipToTorchserve(_) => (
            true,
            "torchserve requests and answers carry no datatypes or shapes (expected signature: {inputs: [...], outputs: [...]})",
        ),
        TranslateDirection::KserveV1ToOipRest | TranslateDirection::KserveV1ToOipGrpc => (
            false,
            "kserve-v1 requests carry no datatypes (expected signature: {inputs: [...]})",
        ),
        TranslateDirection::TfservingGrpcToOipRest
        | TranslateDirection::TfservingGrpcToOipGrpc
        | TranslateDirection::OipRestToTfservingGrpc
        | TranslateDirection::OipGrpcToTfservingGrpc => {
            return super::translate_tfserving::signature(ctx, &field, spec);
        }
    };
    let Some(spec) = spec else {
        ctx.error_at_key(path, format!("missing signature: {why}"));
        return None;
    };
    let mut ok = true;
    if spec.inputs.is_empty() {
        ctx.error(&field, format!("no inputs: {why}"));
        ok = false;
    }
    if needs_outputs && spec.outputs.is_empty() {
        ctx.error(&field, format!("no outputs: {why}"));
        ok = false;
    }
    if !needs_outputs && !spec.outputs.is_empty() {
        ctx.error(
            &format!("{field}.outputs"),
            "a v2 server's answer carries its own datatypes and shapes (expected only signature.inputs for kserve-v1 callers)",
        );
        ok = false;
    }
    let allowed: &[&str] = if needs_outputs {
        &ALL_DATATYPES
    } else {
        &JSON_DATATYPES
    };
    let inputs = tensors(ctx, &format!("{field}.inputs"), &spec.inputs, allowed);
    let outputs = tensors(ctx, &format!("{field}.outputs"), &spec.outputs, allowed);
    let signature = Signature {
        inputs: inputs?,
        outputs: outputs?,
    };
    ok.then_some(Some(signature))
}

/// A signature's tensors, each of a datatype in `allowed`.
pub(super) fn tensors(
    ctx: &mut Ctx<'_>,
    path: &str,
    spec: &[crate::raw::TensorSpec],
    allowed: &[&str],
) -> Option<Vec<TensorSpec>> {
    let mut names = HashSet::new();
    let mut ok = true;
    let mut out = Vec::with_capacity(spec.len());
    for (i, t) in spec.iter().enumerate() {
        let tpath = format!("{path}[{i}]");
        let name = t.name.as_str();
        if name.is_empty() || !names.insert(name) {
            ctx.error(
                &format!("{tpath}.name"),
                format!("empty or duplicate tensor name {name:?} (expected unique names)"),
            );
            ok = false;
        }
        let datatype = t.datatype.as_str();
        if !allowed.contains(&datatype) {
            let why = if ALL_DATATYPES.contains(&datatype) {
                "has no v2 JSON form to carry kserve-v1 callers' tensors"
            } else {
                "is not a datatype"
            };
            ctx.error(
                &format!("{tpath}.datatype"),
                format!(
                    "{datatype:?} {why} (expected one of: {})",
                    allowed.join(", ")
                ),
            );
            ok = false;
        }
        for (k, &d) in t.shape.iter().enumerate() {
            if d < -1 || d == 0 {
                ctx.error(
                    &format!("{tpath}.shape[{k}]"),
                    format!("invalid dimension {d} (expected a size >= 1, or -1 for any)"),
                );
                ok = false;
            }
        }
        out.push(TensorSpec {
            name: name.to_owned(),
            datatype: datatype.to_owned(),
            shape: t.shape.clone(),
        });
    }
    ok.then_some(out)
}
