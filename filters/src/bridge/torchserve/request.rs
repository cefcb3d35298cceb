//! OIP callers' requests as TorchServe calls: an infer call becomes `POST /predictions/{m}[/{v}]`
//! or a `Predictions` rpc carrying the inputs in the route's payload encoding; every health and
//! metadata endpoint becomes TorchServe's ping (`GET /ping` or the `Ping` rpc), whose answer
//! the response half turns into the caller's.

use std::collections::VecDeque;

use bytes::Bytes;
use http::header::{CONTENT_LENGTH, CONTENT_TYPE, HeaderValue};
use http::{Method, Request, Uri, Version};

use super::super::nested::{Tensor, write_str, write_tensor};
use super::super::oip_request::read_request;
use super::super::oip_to_v1::OipCall;
use super::super::service::{header_len, strip_body_headers};
use super::super::{BridgeSettings, TensorSig};
use super::payload::{write_npy_header, write_raw};
use super::{Payload, TorchserveApi, TorchserveTarget, wire};
use crate::translate::split_body;
use crate::translate::{ChunksBody, Endpoint, Rpc, TranslateBody, TranslateError, boxed, collect};

/// What the response half needs.
#[derive(Debug)]
pub(crate) struct Pending {
    pub(crate) rpc: Rpc,
    pub(crate) call: OipCall,
}

/// The multipart boundary for several raw or npy inputs on REST; lengthened if a part's
/// bytes happen to contain it.
const BOUNDARY: &str = "ferry-torchserve-7c3f9a1e5b";

/// The upstream request for a caller's OIP REST request (gRPC callers arrive here already
/// translated to REST by the OIP translator).
pub(crate) async fn request(
    settings: &BridgeSettings,
    target: TorchserveTarget,
    req: Request<TranslateBody>,
) -> Result<(Request<TranslateBody>, Pending), TranslateError> {
    let (mut parts, body) = req.into_parts();
    let ep = Endpoint::from_rest(&parts.method, parts.uri.path()).ok_or_else(|| {
        TranslateError::NoEndpoint(format!(
            "{} {} is not bridged",
            parts.method,
            parts.uri.path()
        ))
    })?;
    let mut call = OipCall {
        model: ep.model.clone(),
        version: Some(ep.version.clone()).filter(|v| !v.is_empty()),
        ..OipCall::default()
    };
    let header_len = header_len(&parts.headers).map(str::to_owned);
    strip_body_headers(&mut parts.headers);
    let (path, content_type, chunks) = if ep.rpc == Rpc::ModelInfer {
        let limit = settings.max_decoded_bytes.0;
        let (bytes, _) = collect(body, limit).await?;
        let (json, tail) = split_body(bytes, header_len.as_deref())?;
        let inputs = read_request(&settings.signature, &json, &tail, &mut call, limit)?;
        let bad = |m: String| TranslateError::BadRequest(m);
        match target.api {
            TorchserveApi::Rest => {
                let (ct, body) = rest_body(target.payload, &inputs).map_err(bad)?;
                (
                    predictions_path(&call),
                    ct,
                    VecDeque::from([Bytes::from(body)]),
                )
            }
            TorchserveApi::Grpc => {
                let mut encoded = Vec::with_capacity(inputs.len());
                for (sig, t) in &inputs {
                    encoded.push((
                        sig.name.clone(),
                        encode(target.payload, sig, t).map_err(bad)?,
                    ));
                }
                let chunks =
                    wire::predictions_request(&call.model, call.version.as_deref(), encoded)
                        .map_err(bad)?;
                (
                    format!("{}Predictions", wire::SERVICE),
                    "application/grpc".to_owned(),
                    chunks,
                )
            }
        }
    } else {
        match target.api {
            TorchserveApi::Rest => ("/ping".to_owned(), String::new(), VecDeque::new()),
            TorchserveApi::Grpc => (
                format!("{}Ping", wire::SERVICE),
                "application/grpc".to_owned(),
                wire::empty_request(),
            ),
        }
    };
    let mut uri = parts.uri.into_parts();
    uri.path_and_query = Some(path.parse().map_err(|_| {
        TranslateError::BadRequest(format!("model name not usable in a path: {path:?}"))
    })?);
    parts.uri = Uri::from_parts(uri)
        .map_err(|e| TranslateError::BadRequest(format!("request target: {e}")))?;
    let grpc = target.api == TorchserveApi::Grpc;
    parts.method = if grpc || ep.rpc == Rpc::ModelInfer {
        Method::POST
    } else {
        Method::GET
    };
    parts.version = if grpc {
        Version::HTTP_2
    } else {
        Version::HTTP_11
    };
    for name in [
        "te",
        "grpc-timeout",
        "grpc-encoding",
        "grpc-accept-encoding",
    ] {
        parts.headers.remove(name);
    }
    if grpc {
        parts
            .headers
            .insert("te", HeaderValue::from_static("trailers"));
    }
    if !content_type.is_empty() {
        let ct = HeaderValue::try_from(content_type)
            .map_err(|e| TranslateError::BadRequest(format!("content type: {e}")))?;
        parts.headers.insert(CONTENT_TYPE, ct);
    }
    let body = ChunksBody::new(chunks, None);
    if !grpc {
        parts
            .headers
            .insert(CONTENT_LENGTH, HeaderValue::from(body.len()));
    }
    Ok((
        Request::from_parts(parts, boxed(body)),
        Pending { rpc: ep.rpc, call },
    ))
}

fn predictions_path(call: &OipCall) -> String {
    match &call.version {
        Some(v) => format!("/predictions/{}/{v}", call.model),
        None => format!("/predictions/{}", call.model),
    }
}

/// One tensor in the payload encoding: nested JSON, raw little-endian, or a `.npy` file.
pub(crate) fn encode(payload: Payload, sig: &TensorSig, t: &Tensor<'_>) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    match payload {
        Payload::Json => {
            out.reserve(t.elems.len().saturating_mul(8).saturating_add(2));
            write_tensor(&mut out, t, false)?;
        }
        Payload::Raw => write_raw(&mut out, sig.datatype, t)?,
        Payload::Npy => {
            write_npy_header(&mut out, sig.datatype, &t.shape)?;
            write_raw(&mut out, sig.datatype, t)?;
        }
    }
    Ok(out)
}

/// The REST body and its Content-Type: JSON is one object keyed by input name; one raw or npy
/// input is the body itself; several are `multipart/form-data` parts named by input (which
/// TorchServe hands the handler as one key each).
pub(crate) fn rest_body(
    payload: Payload,
    inputs: &[(&TensorSig, Tensor<'_>)],
) -> Result<(String, Vec<u8>), String> {
    if payload == Payload::Json {
        let mut out = Vec::with_capacity(
            inputs
                .iter()
                .map(|(_, t)| t.elems.len().saturating_mul(8))
                .sum::<usize>()
                .saturating_add(16),
        );
        out.push(b'{');
        for (i, (sig, t)) in inputs.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            write_str(&mut out, &sig.name);
            out.push(b':');
            write_tensor(&mut out, t, false)?;
        }
        out.push(b'}');
        return Ok(("application/json".to_owned(), out));
    }
    if let [(sig, t)] = inputs {
        return Ok((
            "application/octet-stream".to_owned(),
            encode(payload, sig, t)?,
        ));
    }
    let parts = inputs
        .iter()
        .map(|(sig, t)| Ok((sig.name.as_str(), encode(payload, sig, t)?)))
        .collect::<Result<Vec<_>, String>>()?;
    let mut boundary = BOUNDARY.to_owned();
    while parts
        .iter()
        .any(|(_, p)| p.windows(boundary.len()).any(|w| w == boundary.as_bytes()))
    {
        boundary.push('x');
    }
    let mut out = Vec::new();
    for (name, part) in &parts {
        out.extend_from_slice(b"--");
        out.extend_from_slice(boundary.as_bytes());
        out.extend_from_slice(b"\r\nContent-Disposition: form-data; name=\"");
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b"\"\r\nContent-Type: application/octet-stream\r\n\r\n");
        out.extend_from_slice(part);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"--");
    out.extend_from_slice(boundary.as_bytes());
    out.extend_from_slice(b"--\r\n");
    Ok((format!("multipart/form-data; boundary={boundary}"), out))
}
