//! TF Serving gRPC callers, Open Inference Protocol gRPC below: `Predict` becomes
//! `ModelInfer` (every input a raw entry, so FP16/BF16 and BYTES pass as they are), the answer
//! a `PredictResponse` with `tensor_content` (DT_STRING in `string_val`) and the model spec;
//! `GetModelMetadata` is answered with a `signature_def` built from the route's signature (or
//! the upstream's `ModelMetadata` without one) once the upstream says the model is ready.
//! Below this sits the route's upstream, or the OIP gRPC → REST translator for a REST one.
//!
//! Failures: a request without a model name, with a tensor that does not decode, or that does
//! not fit the signature is INVALID_ARGUMENT before any upstream call; an unknown rpc
//! UNIMPLEMENTED; upstream statuses pass through with their messages.

use std::collections::HashMap;

use bytes::Bytes;
use http::Response;
use prost::Message;

use super::TfServingSettings;
use super::oip::{fit_inputs, fit_outputs, raw_tensor};
use super::pb::{
    Any, GetModelMetadataRequest, GetModelMetadataResponse, Int64Value, ModelSpec, PredictRequest,
    PredictResponse, SIGNATURE_DEF_MAP_URL, SignatureDef, SignatureDefMap, TensorInfo,
    VersionChoice,
};
use super::tensor::{Form, dtype_of, from_proto, shape_proto, to_proto};
use super::unary::{Upstream, answer};
use crate::bridge::TensorSig;
use crate::translate::pb::model_infer_request::{InferInputTensor, InferRequestedOutputTensor};
use crate::translate::pb::{
    ModelInferRequest, ModelInferResponse, ModelMetadataRequest, ModelMetadataResponse,
    ModelReadyRequest, ModelReadyResponse, SERVICE_PATH as OIP,
};
use crate::translate::{BoxError, DataType, TranslateBody, TranslateError, code};

/// The signature name answers carry when the caller named none (TF Serving's default).
const DEFAULT_SIGNATURE: &str = "serving_default";

/// Answers the caller's `rpc` with `message` (unframed).
pub(crate) async fn call(
    settings: &TfServingSettings,
    up: &mut Upstream,
    rpc: &str,
    message: Bytes,
) -> Result<Response<TranslateBody>, BoxError> {
    match rpc {
        "Predict" => predict(settings, up, message).await,
        "GetModelMetadata" => metadata(settings, up, message).await,
        other => Err(TranslateError::NoEndpoint(format!(
            "tensorflow.serving.PredictionService/{other} is not bridged"
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

/// The model a TF request names: name, and version as OIP spells it (a number or a label).
fn model(spec: Option<&ModelSpec>) -> Result<(String, String), TranslateError> {
    let spec = spec
        .filter(|s| !s.name.is_empty())
        .ok_or_else(|| bad("model_spec.name is required"))?;
    let version = match &spec.version_choice {
        Some(VersionChoice::Version(v)) => v.value.to_string(),
        Some(VersionChoice::VersionLabel(l)) => l.clone(),
        None => String::new(),
    };
    Ok((spec.name.clone(), version))
}

/// The model spec an answer carries.
fn answer_spec(name: String, version: &str, signature: &str) -> ModelSpec {
    ModelSpec {
        name,
        version_choice: version
            .parse()
            .ok()
            .map(|value| VersionChoice::Version(Int64Value { value })),
        signature_name: if signature.is_empty() {
            DEFAULT_SIGNATURE.to_owned()
        } else {
            signature.to_owned()
        },
    }
}

async fn predict(
    settings: &TfServingSettings,
    up: &mut Upstream,
    message: Bytes,
) -> Result<Response<TranslateBody>, BoxError> {
    let req = PredictRequest::decode(message).map_err(bad)?;
    let (name, version) = model(req.model_spec.as_ref())?;
    let sig = settings.signature.as_ref();
    let mut budget = settings.max_decoded_bytes.0;
    let mut inputs = req
        .inputs
        .iter()
        .map(|(k, t)| {
            from_proto(t, &mut budget)
                .map(|r| (k.clone(), r))
                .map_err(|e| bad(format!("input {k:?}: {e}")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    fit_inputs(sig, &mut inputs)?;
    fit_outputs(sig, &req.output_filter)?;
    let infer = ModelInferRequest {
        model_name: name.clone(),
        model_version: version.clone(),
        inputs: inputs
            .iter()
            .map(|(n, t)| InferInputTensor {
                name: n.clone(),
                datatype: t.datatype.as_str().to_owned(),
                shape: t.shape.clone(),
                ..InferInputTensor::default()
            })
            .collect(),
        outputs: req
            .output_filter
            .iter()
            .map(|n| InferRequestedOutputTensor {
                name: n.clone(),
                ..InferRequestedOutputTensor::default()
            })
            .collect(),
        ..ModelInferRequest::default()
    };
    let raw: Vec<Bytes> = inputs.into_iter().map(|(_, t)| t.raw).collect();
    let path = format!("{OIP}ModelInfer");
    let answered = up.unary(&path, &infer, 7, &raw).await?;
    let resp = ModelInferResponse::decode(answered).map_err(bad_upstream)?;
    let mut budget = settings.max_decoded_bytes.0;
    let mut outputs = HashMap::with_capacity(resp.outputs.len());
    for (i, o) in resp.outputs.iter().enumerate() {
        // MLServer answers every output whatever was asked (protocol pitfall 7): TF Serving
        // answers only the filtered ones.
        if !req.output_filter.is_empty() && !req.output_filter.contains(&o.name) {
            continue;
        }
        let t = raw_tensor(
            &o.name,
            &o.datatype,
            &o.shape,
            o.contents.as_ref(),
            resp.raw_output_contents.get(i),
            &mut budget,
        )
        .map_err(bad_upstream)?;
        outputs.insert(
            o.name.clone(),
            to_proto(&t, Form::Content).map_err(bad_upstream)?,
        );
    }
    if let Some(missing) = req.output_filter.iter().find(|f| !outputs.contains_key(*f)) {
        return Err(bad(format!(
            "output_filter names {missing:?}, which the model did not answer"
        ))
        .into());
    }
    let signature = req
        .model_spec
        .as_ref()
        .map(|s| s.signature_name.as_str())
        .unwrap_or_default();
    let version = if resp.model_version.is_empty() {
        &version
    } else {
        &resp.model_version
    };
    let out = PredictResponse {
        outputs,
        model_spec: Some(answer_spec(name, version, signature)),
    };
    Ok(answer(&out, 0, &[]))
}

async fn metadata(
    settings: &TfServingSettings,
    up: &mut Upstream,
    message: Bytes,
) -> Result<Response<TranslateBody>, BoxError> {
    let req = GetModelMetadataRequest::decode(message).map_err(bad)?;
    let (name, version) = model(req.model_spec.as_ref())?;
    // TF Serving's rules: at least one field, and only `signature_def` exists.
    if req.metadata_field.is_empty() {
        return Err(bad("GetModelMetadataRequest must specify at least one metadata_field").into());
    }
    if let Some(f) = req.metadata_field.iter().find(|f| *f != "signature_def") {
        return Err(bad(format!("metadata field {f:?} is not supported")).into());
    }
    let ask = ModelMetadataRequest {
        name: name.clone(),
        version: version.clone(),
    };
    let meta = up
        .unary(&format!("{OIP}ModelMetadata"), &ask, 0, &[])
        .await?;
    let meta = ModelMetadataResponse::decode(meta).map_err(bad_upstream)?;
    let ask = ModelReadyRequest {
        name: name.clone(),
        version: version.clone(),
    };
    let ready = up.unary(&format!("{OIP}ModelReady"), &ask, 0, &[]).await?;
    if !ModelReadyResponse::decode(ready)
        .map_err(bad_upstream)?
        .ready
    {
        return Err(TranslateError::Upstream {
            code: code::UNAVAILABLE,
            http: http::StatusCode::SERVICE_UNAVAILABLE,
            message: format!("model {name:?} is not ready"),
        }
        .into());
    }
    let (inputs, outputs) = match &settings.signature {
        Some(sig) => (infos(&sig.inputs), infos(&sig.outputs)),
        None => {
            let from = |ts: &[crate::translate::pb::model_metadata_response::TensorMetadata]| {
                ts.iter()
                    .filter_map(|t| {
                        Some(TensorSig {
                            name: t.name.clone(),
                            datatype: DataType::parse(&t.datatype)?,
                            shape: t.shape.clone(),
                        })
                    })
                    .collect::<Vec<_>>()
            };
            (infos(&from(&meta.inputs)), infos(&from(&meta.outputs)))
        }
    };
    let def = SignatureDef {
        inputs,
        outputs,
        method_name: "tensorflow/serving/predict".to_owned(),
    };
    let map = SignatureDefMap {
        signature_def: HashMap::from([(DEFAULT_SIGNATURE.to_owned(), def)]),
    };
    let out = GetModelMetadataResponse {
        model_spec: Some(answer_spec(name, &version, "")),
        metadata: HashMap::from([(
            "signature_def".to_owned(),
            Any {
                type_url: SIGNATURE_DEF_MAP_URL.to_owned(),
                value: map.encode_to_vec().into(),
            },
        )]),
    };
    Ok(answer(&out, 0, &[]))
}

fn infos(ts: &[TensorSig]) -> HashMap<String, TensorInfo> {
    ts.iter()
        .map(|t| {
            let info = TensorInfo {
                name: format!("{}:0", t.name),
                dtype: dtype_of(t.datatype),
                tensor_shape: Some(shape_proto(&t.shape)),
            };
            (t.name.clone(), info)
        })
        .collect()
}
