//! Open Inference Protocol gRPC callers (REST callers arrive here through the OIP REST → gRPC
//! translator), TF Serving gRPC upstream: `ModelInfer` becomes `Predict` (each input a
//! `TensorProto` with `tensor_content`, BYTES as `string_val`, requested outputs as
//! `output_filter`); the answer comes back raw, or typed when the caller sent typed contents
//! (as MLServer and KServe answer). `ModelMetadata` and `ModelReady` are answered from the
//! upstream's `GetModelMetadata` (its `signature_def`, or the route's signature when given).
//!
//! Failures: a request that does not decode or fit the signature is INVALID_ARGUMENT before
//! any upstream call; an unknown rpc UNIMPLEMENTED; TF Serving's statuses (NOT_FOUND for an
//! unknown servable, INVALID_ARGUMENT, INTERNAL...) pass through with their messages.

use std::collections::HashMap;

use bytes::Bytes;
use http::Response;
use prost::Message;

use super::TfServingSettings;
use super::oip::{fit_inputs, fit_outputs, raw_tensor};
use super::pb::{
    GetModelMetadataRequest, GetModelMetadataResponse, Int64Value, ModelSpec, PredictRequest,
    PredictResponse, SERVICE_PATH as TF, SignatureDefMap, TensorInfo, VersionChoice,
};
use super::tensor::{Form, datatype, from_proto, to_proto};
use super::unary::{Upstream, answer};
use crate::translate::pb::model_infer_response::InferOutputTensor;
use crate::translate::pb::model_metadata_response::TensorMetadata;
use crate::translate::pb::{
    ModelInferRequest, ModelInferResponse, ModelMetadataRequest, ModelMetadataResponse,
    ModelReadyRequest, ModelReadyResponse,
};
use crate::translate::{BoxError, TranslateBody, TranslateError, code, raw_decode};

/// Answers the caller's OIP `rpc` with `message` (unframed).
pub(crate) async fn call(
    settings: &TfServingSettings,
    up: &mut Upstream,
    rpc: &str,
    message: Bytes,
) -> Result<Response<TranslateBody>, BoxError> {
    match rpc {
        "ModelInfer" => infer(settings, up, message).await,
        "ModelMetadata" => {
            let req = ModelMetadataRequest::decode(message).map_err(bad)?;
            metadata(settings, up, req.name, req.version).await
        }
        "ModelReady" => {
            let req = ModelReadyRequest::decode(message).map_err(bad)?;
            let ready = match signature_defs(up, &req.name, &req.version).await {
                Ok(_) => true,
                Err(e) => match e.downcast_ref::<TranslateError>() {
                    // An unknown model stays unknown; any other refusal is "not ready".
                    Some(TranslateError::Upstream { code: c, .. }) if *c != code::NOT_FOUND => {
                        false
                    }
                    _ => return Err(e),
                },
            };
            Ok(answer(&ModelReadyResponse { ready }, 0, &[]))
        }
        other => Err(TranslateError::NoEndpoint(format!(
            "inference.GRPCInferenceService/{other} is not bridged to tfserving-grpc"
        ))
        .into()),
    }
}

fn bad(e: impl std::fmt::Display) -> TranslateError {
    TranslateError::BadRequest(e.to_string())
}

fn bad_upstream(e: impl std::fmt::Display) -> TranslateError {
    TranslateError::BadUpstream(e.to_string())
}

fn spec(name: &str, version: &str) -> Result<ModelSpec, TranslateError> {
    if name.is_empty() {
        return Err(bad("model_name is required"));
    }
    let version_choice = match version {
        "" => None,
        v => Some(match v.parse() {
            Ok(value) => VersionChoice::Version(Int64Value { value }),
            Err(_) => VersionChoice::VersionLabel(v.to_owned()),
        }),
    };
    Ok(ModelSpec {
        name: name.to_owned(),
        version_choice,
        signature_name: String::new(),
    })
}

async fn infer(
    settings: &TfServingSettings,
    up: &mut Upstream,
    message: Bytes,
) -> Result<Response<TranslateBody>, BoxError> {
    let req = ModelInferRequest::decode(message).map_err(bad)?;
    let model_spec = spec(&req.model_name, &req.model_version)?;
    let typed = req.raw_input_contents.is_empty();
    let mut budget = settings.max_decoded_bytes.0;
    let mut inputs = req
        .inputs
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let raw = req.raw_input_contents.get(i);
            raw_tensor(
                &t.name,
                &t.datatype,
                &t.shape,
                t.contents.as_ref(),
                raw,
                &mut budget,
            )
            .map(|r| (t.name.clone(), r))
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(bad)?;
    let sig = settings.signature.as_ref();
    fit_inputs(sig, &mut inputs)?;
    let wanted: Vec<String> = req.outputs.iter().map(|o| o.name.clone()).collect();
    fit_outputs(sig, &wanted)?;
    let mut tf_inputs = HashMap::with_capacity(inputs.len());
    for (name, t) in inputs {
        tf_inputs.insert(name, to_proto(&t, Form::Content).map_err(bad)?);
    }
    let predict = PredictRequest {
        model_spec: Some(model_spec),
        inputs: tf_inputs,
        output_filter: wanted.clone(),
    };
    let answered = up.unary(&format!("{TF}Predict"), &predict, 0, &[]).await?;
    let resp = PredictResponse::decode(answered).map_err(bad_upstream)?;
    // Outputs in the order asked for, else the signature's, else by name (a map has none).
    let mut names: Vec<&String> = resp.outputs.keys().collect();
    names.sort();
    let order = |n: &String| {
        wanted
            .iter()
            .position(|w| w == n)
            .or_else(|| sig.and_then(|s| s.outputs.iter().position(|o| &o.name == n)))
            .unwrap_or(usize::MAX)
    };
    names.sort_by_key(|n| order(n));
    let mut budget = settings.max_decoded_bytes.0;
    let mut tensors = Vec::with_capacity(names.len());
    for name in names {
        let Some(t) = resp.outputs.get(name) else {
            continue;
        };
        let t = from_proto(t, &mut budget)
            .map_err(|e| bad_upstream(format!("output {name:?}: {e}")))?;
        tensors.push((name.clone(), t));
    }
    // A caller that sent typed contents gets typed contents back (as MLServer and KServe
    // answer), unless an output has no typed form (FP16, BF16): OIP forbids mixing, so then
    // every output is raw.
    let typed = typed && tensors.iter().all(|(_, t)| t.datatype.has_typed_form());
    let mut outputs = Vec::with_capacity(tensors.len());
    let mut raw = Vec::with_capacity(tensors.len());
    for (name, t) in tensors {
        let contents = if typed {
            Some(raw_decode(t.datatype, &t.raw).map_err(bad_upstream)?)
        } else {
            raw.push(t.raw);
            None
        };
        outputs.push(InferOutputTensor {
            name,
            datatype: t.datatype.as_str().to_owned(),
            shape: t.shape,
            contents,
            ..InferOutputTensor::default()
        });
    }
    let version = match resp.model_spec.and_then(|s| s.version_choice) {
        Some(VersionChoice::Version(v)) => v.value.to_string(),
        Some(VersionChoice::VersionLabel(l)) => l,
        None => req.model_version.clone(),
    };
    let out = ModelInferResponse {
        model_name: req.model_name.clone(),
        model_version: version,
        id: req.id.clone(),
        outputs,
        ..ModelInferResponse::default()
    };
    Ok(answer(&out, 6, &raw))
}

/// The upstream's signatures of a model (`GetModelMetadata` with `signature_def`).
async fn signature_defs(
    up: &mut Upstream,
    name: &str,
    version: &str,
) -> Result<SignatureDefMap, BoxError> {
    let ask = GetModelMetadataRequest {
        model_spec: Some(spec(name, version)?),
        metadata_field: vec!["signature_def".to_owned()],
    };
    let answered = up
        .unary(&format!("{TF}GetModelMetadata"), &ask, 0, &[])
        .await?;
    let resp = GetModelMetadataResponse::decode(answered).map_err(bad_upstream)?;
    let Some(any) = resp.metadata.get("signature_def") else {
        return Ok(SignatureDefMap::default());
    };
    Ok(SignatureDefMap::decode(any.value.clone()).map_err(bad_upstream)?)
}

async fn metadata(
    settings: &TfServingSettings,
    up: &mut Upstream,
    name: String,
    version: String,
) -> Result<Response<TranslateBody>, BoxError> {
    let defs = signature_defs(up, &name, &version).await?;
    let (inputs, outputs) = match &settings.signature {
        Some(sig) => {
            let meta = |ts: &[crate::bridge::TensorSig]| {
                ts.iter()
                    .map(|t| TensorMetadata {
                        name: t.name.clone(),
                        datatype: t.datatype.as_str().to_owned(),
                        shape: t.shape.clone(),
                    })
                    .collect()
            };
            (meta(&sig.inputs), meta(&sig.outputs))
        }
        None => {
            let def = defs
                .signature_def
                .get("serving_default")
                .or_else(|| defs.signature_def.values().next())
                .cloned()
                .unwrap_or_default();
            (tensors(&def.inputs), tensors(&def.outputs))
        }
    };
    let out = ModelMetadataResponse {
        name,
        versions: if version.is_empty() {
            Vec::new()
        } else {
            vec![version]
        },
        platform: "tensorflow_serving".to_owned(),
        inputs,
        outputs,
    };
    Ok(answer(&out, 0, &[]))
}

/// A signature's tensors as OIP metadata, by name (a map has no order).
fn tensors(ts: &HashMap<String, TensorInfo>) -> Vec<TensorMetadata> {
    let mut out: Vec<TensorMetadata> = ts
        .iter()
        .filter_map(|(name, info)| {
            Some(TensorMetadata {
                name: name.clone(),
                datatype: datatype(info.dtype)?.as_str().to_owned(),
                shape: info
                    .tensor_shape
                    .as_ref()
                    .map(|s| s.dim.iter().map(|d| d.size).collect())
                    .unwrap_or_default(),
            })
        })
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}
