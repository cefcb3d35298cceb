//! `translate` with `protocol: descriptor`: generic REST → gRPC transcoding settings. The
//! descriptor file is only located here; the proxy reads it and reports its faults at
//! `descriptor_set`.

use super::Ctx;
use crate::ir::{DescriptorTranscode, StreamingFormat};
use crate::raw::{
    StreamingSpec, TranslateProtocolSpec, TranslateSpec, UnknownFieldsSpec, WireSpec,
};

/// The descriptor settings: `Some(None)` for OIP v2, `Some(Some(..))` for `descriptor`, `None`
/// after recording an error.
pub(super) fn descriptor(
    ctx: &mut Ctx<'_>,
    path: &str,
    spec: &TranslateSpec,
) -> Option<Option<DescriptorTranscode>> {
    if spec.protocol != Some(TranslateProtocolSpec::Descriptor) {
        let mut ok = true;
        for (field, set) in [
            ("descriptor_set", spec.descriptor_set.is_some()),
            ("unknown_fields", spec.unknown_fields.is_some()),
            ("streaming", spec.streaming.is_some()),
            ("services", spec.services.is_some()),
        ] {
            if set {
                ctx.error(
                    &format!("{path}.{field}"),
                    "only applies to protocol: descriptor (expected it omitted with oip-v2)",
                );
                ok = false;
            }
        }
        return ok.then_some(None);
    }
    if (spec.from.0.as_slice(), spec.to) != (&[WireSpec::Rest][..], WireSpec::Grpc) {
        ctx.error(
            &format!("{path}.protocol"),
            "descriptor transcoding is REST → gRPC only (expected from: rest, to: grpc)",
        );
        return None;
    }
    let Some(file) = &spec.descriptor_set else {
        ctx.error(
            &format!("{path}.protocol"),
            "protocol descriptor needs descriptor_set (expected e.g. descriptor_set: api.pb)",
        );
        return None;
    };
    let field = format!("{path}.descriptor_set");
    if file.as_str().trim().is_empty() {
        ctx.error(&field, "empty path (expected e.g. descriptor_set: api.pb)");
        return None;
    }
    let mut services = Vec::new();
    for (i, s) in spec.services.iter().flatten().enumerate() {
        let name = s.as_str().trim_start_matches('.');
        if name.is_empty() || name.contains(['/', ' ']) {
            ctx.error(
                &format!("{path}.services[{i}]"),
                format!(
                    "invalid service name {:?} (expected e.g. library.v1.Library)",
                    s.as_str()
                ),
            );
            return None;
        }
        services.push(name.to_owned());
    }
    Some(Some(DescriptorTranscode {
        descriptor_set: ctx.base_dir().join(file.as_str()),
        at: ctx.locate(&field),
        reject_unknown_fields: spec.unknown_fields != Some(UnknownFieldsSpec::Ignore),
        streaming: match spec.streaming {
            Some(StreamingSpec::Sse) => StreamingFormat::Sse,
            _ => StreamingFormat::Ndjson,
        },
        services,
    }))
}
