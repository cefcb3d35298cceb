//! Finding an infer request and reading just its tensors' names, datatypes and shapes: REST
//! JSON (the JSON header only, with the binary extension), or the gRPC `ModelInferRequest`
//! without decoding tensor contents.

use std::collections::VecDeque;

use bytes::Bytes;
use http::{Method, Request};
use http_body_util::BodyExt;
use prost::Message;

use crate::failure::is_grpc;
use crate::translate::json_in::{self, reader::Reader};
use crate::translate::pb::SERVICE_PATH;
use crate::translate::{
    ChunksBody, Endpoint, INFERENCE_HEADER_CONTENT_LENGTH, Rpc, TranslateBody, TranslateError,
    collect,
};

/// An input tensor as the request declares it.
#[derive(Clone, PartialEq, Message)]
pub(super) struct InputHead {
    /// Tensor name.
    #[prost(string, tag = "1")]
    pub(super) name: String,
    /// Datatype spelling.
    #[prost(string, tag = "2")]
    pub(super) datatype: String,
    /// Dimensions.
    #[prost(int64, repeated, tag = "3")]
    pub(super) shape: Vec<i64>,
}

/// `ModelInferRequest` with only the fields the check needs; prost skips the rest (tensor
/// contents, raw_input_contents) without decoding them.
#[derive(Clone, PartialEq, Message)]
struct InferHead {
    #[prost(string, tag = "1")]
    model_name: String,
    #[prost(string, tag = "2")]
    model_version: String,
    #[prost(message, repeated, tag = "5")]
    inputs: Vec<InputHead>,
}

/// An infer request's model and declared inputs.
#[derive(Debug)]
pub(super) struct Infer {
    pub(super) model: String,
    pub(super) version: String,
    pub(super) inputs: Vec<InputHead>,
}

/// What [`inspect`] found.
pub(super) enum Inspected {
    /// Not an infer request (or one the check cannot read, e.g. compressed): forward as is.
    Pass(Request<TranslateBody>),
    /// An infer request; the body is replayed from what was read.
    Infer(Request<TranslateBody>, Infer),
}

/// Reads the request's tensor declarations if it is an infer request.
pub(super) async fn inspect(
    req: Request<TranslateBody>,
    limit: u64,
) -> Result<Inspected, TranslateError> {
    let grpc = is_grpc(req.headers());
    let rest_ep = (!grpc)
        .then(|| Endpoint::from_rest(req.method(), req.uri().path()))
        .flatten()
        .filter(|ep| ep.rpc == Rpc::ModelInfer);
    let grpc_infer = grpc
        && req.method() == Method::POST
        && req.uri().path().strip_prefix(SERVICE_PATH) == Some(Rpc::ModelInfer.method_name());
    if rest_ep.is_none() && !grpc_infer {
        return Ok(Inspected::Pass(req));
    }
    let (parts, body) = req.into_parts();
    let (bytes, trailers) = collect(body, limit).await?;
    let infer = match rest_ep {
        Some(ep) => {
            let header_len = parts
                .headers
                .get(&INFERENCE_HEADER_CONTENT_LENGTH)
                .map(|v| v.to_str().unwrap_or("invalid"));
            Some(Infer {
                model: ep.model,
                version: ep.version,
                inputs: rest_inputs(&bytes, header_len)?,
            })
        }
        None => grpc_inputs(&bytes)?,
    };
    let body = ChunksBody::new(VecDeque::from([bytes]), trailers)
        .map_err(|never| match never {})
        .boxed_unsync();
    let req = Request::from_parts(parts, body);
    Ok(match infer {
        Some(infer) => Inspected::Infer(req, infer),
        None => Inspected::Pass(req),
    })
}

/// The inputs of a REST infer body (`header_len`: the binary extension's JSON length).
pub(super) fn rest_inputs(
    body: &[u8],
    header_len: Option<&str>,
) -> Result<Vec<InputHead>, TranslateError> {
    let bad = TranslateError::BadRequest;
    let json = match header_len {
        None => body,
        Some(text) => {
            let n: usize = text
                .trim()
                .parse()
                .map_err(|_| bad(format!("invalid Inference-Header-Content-Length {text:?}")))?;
            body.get(..n).ok_or_else(|| {
                bad(format!(
                    "Inference-Header-Content-Length {n} exceeds the body of {} bytes",
                    body.len()
                ))
            })?
        }
    };
    rest_heads(json).map_err(|e| bad(format!("invalid inference request JSON: {e}")))
}

/// `inputs[*].{name, datatype, shape}`; every other member (`data`, `parameters`, `outputs`...)
/// is skipped unparsed. The translator's own reader, so what it accepts (`NaN`, `Infinity`)
/// the check accepts too.
fn rest_heads(json: &[u8]) -> Result<Vec<InputHead>, String> {
    let mut r = Reader::new(json);
    let mut inputs = None;
    r.object(|r, key| {
        if key != "inputs" {
            return r.skip();
        }
        let mut list = Vec::new();
        r.array(|r| {
            let (mut name, mut datatype, mut shape) = (None, None, None);
            r.object(|r, key| {
                match &*key {
                    "name" => name = Some(r.string()?.into_owned()),
                    "datatype" => datatype = Some(r.string()?.into_owned()),
                    "shape" => shape = Some(json_in::shape(r)?),
                    _ => r.skip()?,
                }
                Ok(())
            })?;
            let missing = |field| r.error(format!("input {}: missing field `{field}`", list.len()));
            list.push(InputHead {
                name: name.ok_or_else(|| missing("name"))?,
                datatype: datatype.ok_or_else(|| missing("datatype"))?,
                shape: shape.ok_or_else(|| missing("shape"))?,
            });
            Ok(())
        })?;
        inputs = Some(list);
        Ok(())
    })?;
    r.end()?;
    inputs.ok_or_else(|| "missing field `inputs`".to_owned())
}

/// The model and inputs of a framed gRPC `ModelInferRequest`; `None` for compressed messages,
/// which the check cannot read and leaves to the upstream.
pub(super) fn grpc_inputs(body: &Bytes) -> Result<Option<Infer>, TranslateError> {
    if body.first() == Some(&1) {
        return Ok(None);
    }
    let message =
        crate::translate::grpc_frame::unframe(body).map_err(TranslateError::BadRequest)?;
    let head = InferHead::decode(message)
        .map_err(|e| TranslateError::BadRequest(format!("invalid ModelInferRequest: {e}")))?;
    Ok(Some(Infer {
        model: head.model_name,
        version: head.model_version,
        inputs: head.inputs,
    }))
}
