//! The `signature` of a bridge with TF Serving gRPC (`tfserving-grpc` as caller or upstream).
//! Optional: a `TensorProto` carries its dtype and shape, so requests translate without one.
//! When given, requests that do not fit it are refused before the upstream is called and
//! metadata calls are answered from it; any OIP datatype fits (FP16 and BF16 travel in
//! `half_val`).

use super::Ctx;
use super::translate::{ALL_DATATYPES, tensors};
use crate::ir::Signature;
use crate::raw::SignatureSpec;

/// `Some(None)` without a signature, `None` after recording an error.
pub(super) fn signature(
    ctx: &mut Ctx<'_>,
    field: &str,
    spec: Option<&SignatureSpec>,
) -> Option<Option<Signature>> {
    let Some(spec) = spec else {
        return Some(None);
    };
    let mut ok = true;
    if spec.inputs.is_empty() {
        ctx.error(
            field,
            "no inputs: a signature lists the model's inputs (expected signature: {inputs: [...], outputs: [...]}, or no signature)",
        );
        ok = false;
    }
    let inputs = tensors(
        ctx,
        &format!("{field}.inputs"),
        &spec.inputs,
        &ALL_DATATYPES,
    );
    let outputs = tensors(
        ctx,
        &format!("{field}.outputs"),
        &spec.outputs,
        &ALL_DATATYPES,
    );
    let signature = Signature {
        inputs: inputs?,
        outputs: outputs?,
    };
    ok.then_some(Some(signature))
}
