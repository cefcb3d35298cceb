//! `translate` with `to: torchserve-rest` / `torchserve-grpc`: which OIP callers (one name or
//! both), the `payload`, and what the signature must allow for it. The signature's own checks
//! (names, datatypes, dimensions) are `translate`'s.

use super::Ctx;
use crate::ir::{
    OipCallers, TorchserveApi, TorchserveBridge, TorchservePayload, TranslateDirection,
};
use crate::raw::{PayloadSpec, SignatureSpec, TranslateSpec, WireSpec};

/// The direction of a route whose `to` is a TorchServe API (`None` after recording an error).
pub(super) fn direction(
    ctx: &mut Ctx<'_>,
    path: &str,
    spec: &TranslateSpec,
    api: TorchserveApi,
) -> Option<TranslateDirection> {
    let callers = oip_callers(ctx, path, spec)?;
    let payload = match spec.payload {
        None | Some(PayloadSpec::Json) => TorchservePayload::Json,
        Some(PayloadSpec::Raw) => TorchservePayload::Raw,
        Some(PayloadSpec::Npy) => TorchservePayload::Npy,
    };
    Some(TranslateDirection::OipToTorchserve(TorchserveBridge {
        callers,
        api,
        payload,
    }))
}

/// The OIP callers `from` names (one wire or a list of both) for a bridge reading OIP on the
/// caller's side (TorchServe, KServe V1); `None` after recording an error.
pub(super) fn oip_callers(
    ctx: &mut Ctx<'_>,
    path: &str,
    spec: &TranslateSpec,
) -> Option<OipCallers> {
    let (mut rest, mut grpc) = (false, false);
    for (i, w) in spec.from.0.iter().enumerate() {
        match w {
            WireSpec::OipV2Rest => rest = true,
            WireSpec::OipV2Grpc => grpc = true,
            other => {
                let at = if spec.from.0.len() > 1 {
                    format!("{path}.from[{i}]")
                } else {
                    format!("{path}.from")
                };
                ctx.error(
                    &at,
                    format!(
                        "{} → {} is not bridged (expected oip-v2-rest, oip-v2-grpc or a list of both)",
                        other.name(),
                        spec.to.name()
                    ),
                );
                return None;
            }
        }
    }
    match (rest, grpc) {
        (true, true) => Some(OipCallers::Both),
        (true, false) => Some(OipCallers::Rest),
        (false, true) => Some(OipCallers::Grpc),
        (false, false) => {
            ctx.error(
                &format!("{path}.from"),
                "empty list (expected oip-v2-rest, oip-v2-grpc or both)",
            );
            None
        }
    }
}

/// What `raw` and `npy` need of the signature: fixed-width datatypes (BYTES has no raw form),
/// and, since the answer is then one array, one output; `raw` also carries no shape, so at
/// most one of that output's dimensions may be `-1`.
pub(super) fn check_signature(
    ctx: &mut Ctx<'_>,
    path: &str,
    payload: TorchservePayload,
    spec: &SignatureSpec,
) -> bool {
    let name = match payload {
        TorchservePayload::Json => return true,
        TorchservePayload::Raw => "raw",
        TorchservePayload::Npy => "npy",
    };
    let mut ok = true;
    for (side, list) in [("inputs", &spec.inputs), ("outputs", &spec.outputs)] {
        for (i, t) in list.iter().enumerate() {
            if t.datatype.as_str() == "BYTES" {
                ctx.error(
                    &format!("{path}.signature.{side}[{i}].datatype"),
                    format!("BYTES has no {name} form (expected a fixed-width datatype, or payload: json)"),
                );
                ok = false;
            }
            if t.datatype.as_str() == "BF16" && payload == TorchservePayload::Npy {
                ctx.error(
                    &format!("{path}.signature.{side}[{i}].datatype"),
                    "BF16 has no npy form: NumPy has no bfloat16 dtype (expected payload: raw, which carries its 2-byte bit patterns, or json)",
                );
                ok = false;
            }
        }
    }
    if spec.outputs.len() > 1 {
        ctx.error(
            &format!("{path}.signature.outputs"),
            format!(
                "{} outputs, but a {name} answer is one array (expected one output, or payload: json)",
                spec.outputs.len()
            ),
        );
        ok = false;
    }
    if payload == TorchservePayload::Raw {
        for (i, t) in spec.outputs.iter().enumerate() {
            if t.shape.iter().filter(|&&d| d == -1).count() > 1 {
                ctx.error(
                    &format!("{path}.signature.outputs[{i}].shape"),
                    "a raw answer carries no shape, so only one dimension can be inferred (expected at most one -1, or payload: npy)",
                );
                ok = false;
            }
        }
    }
    ok
}
