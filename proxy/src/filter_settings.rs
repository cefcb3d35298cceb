//! Config IR → each filter's own settings type (the filters crate knows no config file).

use std::collections::HashMap;
use std::sync::Arc;

use ferry_config::{
    AuthzDecision, ModelNameMatcher, TensorMetadataSource, Translate, TranslateDirection,
    ValidateTensors,
};
use ferry_filters::authorization::{AuthorizationSettings, Decision, ModelMatch, Rule};
use ferry_filters::bridge::tfserving::{TfServingDirection, TfServingSettings};
use ferry_filters::bridge::{BridgeDirection, BridgeSettings, Signature, TensorSig};
use ferry_filters::tensor_check::{
    MaxCheckedBytes, MetadataRefresh, MetadataSource, ModelMetadata, TensorMetadata,
    TensorValidationSettings,
};
use ferry_filters::translate::{
    DataType, Direction, MaxDecodedBytes, TranslateSettings, UpstreamBinary,
};

/// The OIP translator settings of a route's `translate` (none for descriptor transcoding or
/// a bridge between serving protocols).
pub fn translate(config: Option<&Translate>) -> Option<TranslateSettings> {
    let t = config.filter(|t| t.descriptor.is_none())?;
    // A bridge whose other side is OIP REST where the bridge speaks OIP gRPC (or the
    // reverse) has the OIP translator between it and the upstream (or the caller).
    let direction = match t.direction {
        TranslateDirection::RestToGrpc
        | TranslateDirection::KserveV1ToOipGrpc
        | TranslateDirection::OipRestToTfservingGrpc => Direction::RestToGrpc,
        TranslateDirection::GrpcToRest | TranslateDirection::TfservingGrpcToOipRest => {
            Direction::GrpcToRest
        }
        TranslateDirection::OipToKserveV1(_)
        | TranslateDirection::KserveV1ToOipRest
        | TranslateDirection::OipToTorchserve(_)
        | TranslateDirection::TfservingGrpcToOipGrpc
        | TranslateDirection::OipGrpcToTfservingGrpc => {
            return None;
        }
    };
    Some(t).map(|t| TranslateSettings {
        direction,
        max_decoded_bytes: MaxDecodedBytes(t.max_decoded_bytes),
        upstream_binary: match t.upstream_binary {
            ferry_config::UpstreamBinary::On => UpstreamBinary::On,
            ferry_config::UpstreamBinary::Off => UpstreamBinary::Off,
            ferry_config::UpstreamBinary::Auto => UpstreamBinary::Auto,
        },
    })
}

/// The bridge settings of a route's `translate` between serving protocols (none otherwise).
/// Config validation has checked every datatype of the signature.
pub fn bridge(config: Option<&Translate>) -> Option<BridgeSettings> {
    let t = config?;
    let direction = match t.direction {
        TranslateDirection::OipToKserveV1(_) => BridgeDirection::OipRestToKserveV1,
        TranslateDirection::OipToTorchserve(b) => {
            BridgeDirection::OipToTorchserve(crate::filter_settings_torchserve::target(b))
        }
        // Towards OIP gRPC the bridge speaks OIP REST to the translator below it.
        TranslateDirection::KserveV1ToOipRest | TranslateDirection::KserveV1ToOipGrpc => {
            BridgeDirection::KserveV1ToOipRest
        }
        _ => return None,
    };
    Some(BridgeSettings {
        direction,
        signature: signature(t.signature.as_ref()?),
        max_decoded_bytes: MaxDecodedBytes(t.max_decoded_bytes),
    })
}

/// The TF Serving bridge settings of a route's `translate` with `tfserving-grpc` on a side:
/// the side it faces (none otherwise). `upstream` picks the layer's place in the stack: the
/// caller's side sits outside the OIP translator, the upstream's side inside it.
pub fn tfserving(config: Option<&Translate>, upstream: bool) -> Option<TfServingSettings> {
    let t = config?;
    let direction =
        match t.direction {
            TranslateDirection::TfservingGrpcToOipRest
            | TranslateDirection::TfservingGrpcToOipGrpc => TfServingDirection::CallerToOip,
            TranslateDirection::OipRestToTfservingGrpc
            | TranslateDirection::OipGrpcToTfservingGrpc => TfServingDirection::OipToUpstream,
            _ => return None,
        };
    if upstream != (direction == TfServingDirection::OipToUpstream) {
        return None;
    }
    Some(TfServingSettings {
        direction,
        signature: t.signature.as_ref().map(signature),
        max_decoded_bytes: MaxDecodedBytes(t.max_decoded_bytes),
    })
}

/// A bridge signature; config validation has checked every datatype.
fn signature(sig: &ferry_config::Signature) -> Signature {
    let tensors = |ts: &[ferry_config::TensorSpec]| -> Vec<TensorSig> {
        ts.iter()
            .filter_map(|s| {
                Some(TensorSig {
                    name: s.name.clone(),
                    datatype: DataType::parse(&s.datatype)?,
                    shape: s.shape.clone(),
                })
            })
            .collect()
    };
    Signature {
        inputs: tensors(&sig.inputs),
        outputs: tensors(&sig.outputs),
    }
}

/// The tensor check settings of a route's `validate_tensors`. The body bound is the route's
/// translation limit when it translates, the check's default otherwise.
pub fn validate_tensors(
    config: Option<&ValidateTensors>,
    translate: Option<&Translate>,
) -> Option<TensorValidationSettings> {
    let config = config?;
    let source = match &config.source {
        TensorMetadataSource::Upstream { refresh } => {
            MetadataSource::Upstream(MetadataRefresh(*refresh))
        }
        TensorMetadataSource::Static(models) => {
            let models: HashMap<String, Arc<ModelMetadata>> = models
                .iter()
                .map(|m| {
                    let inputs = m
                        .inputs
                        .iter()
                        .map(|t| TensorMetadata {
                            name: t.name.clone(),
                            datatype: t.datatype.clone(),
                            shape: t.shape.clone(),
                        })
                        .collect();
                    (m.name.clone(), Arc::new(ModelMetadata { inputs }))
                })
                .collect();
            MetadataSource::Static(Arc::new(models))
        }
    };
    let max_checked_bytes = translate
        .map(|t| MaxCheckedBytes(t.max_decoded_bytes))
        .unwrap_or_default();
    Some(TensorValidationSettings {
        source,
        max_checked_bytes,
    })
}

/// A listener's or route's `authorization` as the filter's settings. The config has validated
/// every matcher, so one that still fails to parse is reported rather than dropped.
pub fn authorization(
    config: &ferry_config::Authorization,
) -> Result<AuthorizationSettings, ferry_filters::authorization::SpiffeIdError> {
    let rules = config
        .rules
        .iter()
        .map(|r| {
            Ok(Rule {
                allow: r
                    .allow
                    .iter()
                    .map(crate::tls::identity_match)
                    .collect::<Result<_, _>>()?,
                models: r
                    .models
                    .iter()
                    .map(|m| match m {
                        ModelNameMatcher::Exact(n) => ModelMatch::Exact(n.clone()),
                        ModelNameMatcher::Prefix(n) => ModelMatch::Prefix(n.clone()),
                    })
                    .collect(),
            })
        })
        .collect::<Result<_, _>>()?;
    Ok(AuthorizationSettings {
        default: match config.default {
            AuthzDecision::Allow => Decision::Allow,
            AuthzDecision::Deny => Decision::Deny,
        },
        rules,
    })
}

/// The fault filter's settings of a route's `fault`.
pub fn fault(config: Option<&ferry_config::Fault>) -> Option<ferry_filters::fault::FaultSettings> {
    use ferry_filters::fault::{FaultAbort, FaultDelay, FaultSettings};
    let f = config?;
    Some(FaultSettings {
        delay: f.delay.as_ref().map(|d| FaultDelay {
            fixed: d.fixed,
            ratio: d.ratio,
        }),
        abort: f.abort.as_ref().map(|a| FaultAbort {
            // Validation keeps it in 400..=599.
            status: http::StatusCode::from_u16(a.status)
                .unwrap_or(http::StatusCode::SERVICE_UNAVAILABLE),
            grpc_code: a.grpc_status,
            ratio: a.ratio,
        }),
        // Validation checked the name; an unparsable one would gate every request out.
        header: f
            .header
            .as_ref()
            .and_then(|h| http::HeaderName::from_bytes(h.as_bytes()).ok()),
    })
}

/// The comparison settings of a route's mirror.
pub fn mirror_compare(m: &ferry_config::Mirror) -> ferry_filters::mirror_compare::CompareSettings {
    use ferry_filters::mirror_compare::{CompareMode, CompareSettings, Tolerance};
    CompareSettings {
        mode: match m.compare {
            ferry_config::Compare::None => CompareMode::None,
            ferry_config::Compare::Oip => CompareMode::Oip,
            ferry_config::Compare::Json => CompareMode::Json,
        },
        tolerance: Tolerance {
            abs: m.tolerance.abs,
            rel: m.tolerance.rel,
        },
        max_body: m.max_body,
    }
}
