//! `validate_tensors` → [`ValidateTensors`]: source, refresh and static models checked.

use std::collections::HashSet;

use super::Ctx;
use crate::defaults;
use crate::ir::{ModelTensors, TensorMetadataSource, TensorSpec, ValidateTensors};
use crate::raw::{MetadataSourceSpec, ModelTensorsSpec, ValidateTensorsSpec};

/// The Open Inference Protocol's datatype spellings.
const DATATYPES: [&str; 14] = [
    "BOOL", "UINT8", "UINT16", "UINT32", "UINT64", "INT8", "INT16", "INT32", "INT64", "FP16",
    "BF16", "FP32", "FP64", "BYTES",
];

pub(super) fn validate_tensors(
    ctx: &mut Ctx<'_>,
    path: &str,
    spec: &ValidateTensorsSpec,
) -> Option<ValidateTensors> {
    let source = spec.metadata.unwrap_or(MetadataSourceSpec::Upstream);
    let source = match source {
        MetadataSourceSpec::Upstream => {
            if spec.models.is_some() {
                ctx.error(
                    &format!("{path}.models"),
                    "only applies to metadata: static (expected it omitted)",
                );
            }
            let refresh = ctx.duration_or(
                &format!("{path}.refresh"),
                spec.refresh.as_ref(),
                defaults::TENSOR_METADATA_REFRESH,
            );
            if refresh.is_zero() {
                ctx.error(
                    &format!("{path}.refresh"),
                    "invalid refresh 0s (expected a duration > 0, e.g. \"30s\")",
                );
            }
            TensorMetadataSource::Upstream { refresh }
        }
        MetadataSourceSpec::Static => {
            if spec.refresh.is_some() {
                ctx.error(
                    &format!("{path}.refresh"),
                    "only applies to metadata: upstream (expected it omitted)",
                );
            }
            let Some(models) = &spec.models else {
                ctx.error(
                    &format!("{path}.metadata"),
                    "metadata: static needs a models list (expected models: [{name, inputs}])",
                );
                return None;
            };
            TensorMetadataSource::Static(static_models(ctx, path, models).into())
        }
    };
    Some(ValidateTensors { source })
}

fn static_models(ctx: &mut Ctx<'_>, path: &str, models: &[ModelTensorsSpec]) -> Vec<ModelTensors> {
    let mut seen = HashSet::new();
    let mut out = Vec::with_capacity(models.len());
    for (i, m) in models.iter().enumerate() {
        let mpath = format!("{path}.models[{i}]");
        if !seen.insert(m.name.as_str()) {
            ctx.error(
                &format!("{mpath}.name"),
                format!(
                    "duplicate model {:?} (expected each model once)",
                    m.name.as_str()
                ),
            );
        }
        let mut names = HashSet::new();
        let mut inputs = Vec::with_capacity(m.inputs.len());
        for (j, t) in m.inputs.iter().enumerate() {
            let tpath = format!("{mpath}.inputs[{j}]");
            if !names.insert(t.name.as_str()) {
                ctx.error(
                    &format!("{tpath}.name"),
                    format!(
                        "duplicate input {:?} (expected each input once)",
                        t.name.as_str()
                    ),
                );
            }
            if !DATATYPES.contains(&t.datatype.as_str()) {
                ctx.error(
                    &format!("{tpath}.datatype"),
                    format!(
                        "unknown datatype {:?} (expected one of: {})",
                        t.datatype.as_str(),
                        DATATYPES.join(", ")
                    ),
                );
            }
            for (k, &d) in t.shape.iter().enumerate() {
                if d < -1 {
                    ctx.error(
                        &format!("{tpath}.shape[{k}]"),
                        format!("invalid dimension {d} (expected a size >= 0, or -1 for any)"),
                    );
                }
            }
            inputs.push(TensorSpec {
                name: t.name.as_str().to_owned(),
                datatype: t.datatype.as_str().to_owned(),
                shape: t.shape.clone(),
            });
        }
        out.push(ModelTensors {
            name: m.name.as_str().to_owned(),
            inputs,
        });
    }
    out
}
