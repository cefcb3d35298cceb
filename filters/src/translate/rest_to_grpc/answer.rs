//! The REST side of the answer: a successful gRPC answer becomes the REST response the caller
//! asked for, JSON `data` (streamed when it is long) or binary sections.

use std::collections::VecDeque;

use bytes::Bytes;
use http::HeaderMap;
use http::header::{CONTENT_LENGTH, CONTENT_TYPE, HeaderValue};
use prost::Message;
use serde_json::json;

use super::OutputPlan;
use crate::translate::answer_stream::{self, AnswerStream, StartedAnswer, StreamBody};
use crate::translate::datatype::DataType;
use crate::translate::endpoint::{Endpoint, Rpc};
use crate::translate::error::TranslateError;
use crate::translate::json_out::{self, DataRef};
use crate::translate::pb;
use crate::translate::raw;
use crate::translate::{ChunksBody, INFERENCE_HEADER_CONTENT_LENGTH, TranslateBody, boxed};

/// A REST response ready to send: JSON header plus binary sections.
#[derive(Debug)]
pub(crate) struct RestAnswer {
    pub(crate) status: http::StatusCode,
    pub(crate) json: Vec<u8>,
    pub(crate) sections: Vec<Bytes>,
}

// === impl RestAnswer ===

impl RestAnswer {
    /// The answer's body, setting the headers that describe it: `application/json` alone, or
    /// the JSON header and its binary sections (`application/octet-stream` with
    /// `Inference-Header-Content-Length`, as tritonclient reads them); the length either way.
    pub(crate) fn into_body(self, headers: &mut HeaderMap) -> TranslateBody {
        let json_len = self.json.len();
        let binary = !self.sections.is_empty();
        let mut chunks = VecDeque::with_capacity(1 + self.sections.len());
        chunks.push_back(Bytes::from(self.json));
        chunks.extend(self.sections);
        let body = ChunksBody::new(chunks, None);
        if binary {
            headers.insert(
                CONTENT_TYPE,
                HeaderValue::from_static("application/octet-stream"),
            );
            headers.insert(INFERENCE_HEADER_CONTENT_LENGTH, HeaderValue::from(json_len));
        } else {
            headers.remove(INFERENCE_HEADER_CONTENT_LENGTH);
            headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        }
        headers.insert(CONTENT_LENGTH, HeaderValue::from(body.len()));
        boxed(body)
    }
}

/// Turns a successful gRPC answer into the REST response.
pub(crate) fn response(
    ep: &Endpoint,
    message: Bytes,
    plan: &OutputPlan,
) -> Result<InferAnswer, TranslateError> {
    let undecodable = |e: prost::DecodeError| {
        TranslateError::BadUpstream(format!("{} response: {e}", ep.rpc.method_name()))
    };
    let ok = |value: serde_json::Value, good: bool| RestAnswer {
        status: if good {
            http::StatusCode::OK
        } else {
            http::StatusCode::SERVICE_UNAVAILABLE
        },
        json: value.to_string().into_bytes(),
        sections: Vec::new(),
    };
    Ok(InferAnswer::Whole(match ep.rpc {
        Rpc::ServerLive => {
            let live = pb::ServerLiveResponse::decode(message)
                .map_err(undecodable)?
                .live;
            ok(json!({ "live": live }), live)
        }
        Rpc::ServerReady => {
            let ready = pb::ServerReadyResponse::decode(message)
                .map_err(undecodable)?
                .ready;
            ok(json!({ "ready": ready }), ready)
        }
        Rpc::ModelReady => {
            let ready = pb::ModelReadyResponse::decode(message)
                .map_err(undecodable)?
                .ready;
            ok(json!({ "name": ep.model, "ready": ready }), ready)
        }
        Rpc::ServerMetadata => {
            let m = pb::ServerMetadataResponse::decode(message).map_err(undecodable)?;
            let mut extensions = m.extensions;
            // ferry itself serves the binary tensor extension to REST callers.
            if !extensions.iter().any(|e| e == "binary_tensor_data") {
                extensions.push("binary_tensor_data".into());
            }
            ok(
                json!({ "name": m.name, "version": m.version, "extensions": extensions }),
                true,
            )
        }
        Rpc::ModelMetadata => {
            let m = pb::ModelMetadataResponse::decode(message).map_err(undecodable)?;
            let tensors = |list: &[pb::model_metadata_response::TensorMetadata]| {
                list.iter()
                    .map(|t| json!({ "name": t.name, "datatype": t.datatype, "shape": t.shape }))
                    .collect::<Vec<_>>()
            };
            ok(
                json!({
                    "name": m.name,
                    "versions": m.versions,
                    "platform": m.platform,
                    "inputs": tensors(&m.inputs),
                    "outputs": tensors(&m.outputs),
                }),
                true,
            )
        }
        Rpc::ModelInfer => {
            let m = pb::ModelInferResponse::decode(message).map_err(undecodable)?;
            return infer_answer(m, plan);
        }
    }))
}

/// A REST infer answer: whole, or JSON streamed as it is encoded.
#[derive(Debug)]
pub(crate) enum InferAnswer {
    Whole(RestAnswer),
    Streaming(StreamBody),
}

/// `ModelInferResponse` → REST answer: streamed when every output goes as JSON `data` and
/// the JSON is longer than one chunk (see [`answer_stream`]), whole otherwise.
pub(crate) fn infer_answer(
    m: pb::ModelInferResponse,
    plan: &OutputPlan,
) -> Result<InferAnswer, TranslateError> {
    let all_json_asked = m.outputs.iter().all(|o| !plan.binary_for(&o.name));
    let raw_matches =
        m.raw_output_contents.is_empty() || m.raw_output_contents.len() == m.outputs.len();
    if !all_json_asked || !raw_matches {
        return infer_response(m, plan).map(InferAnswer::Whole);
    }
    let dts = answer_stream::output_datatypes(&m)?;
    match AnswerStream::new(m, dts) {
        Ok(stream) => Ok(match stream.start()? {
            StartedAnswer::Whole(json) => InferAnswer::Whole(RestAnswer {
                status: http::StatusCode::OK,
                json: json.into(),
                sections: Vec::new(),
            }),
            StartedAnswer::Streaming(body) => InferAnswer::Streaming(body),
        }),
        // Some output must fall back to a binary section: the answer's headers depend on it.
        Err(stream) => infer_response(stream.into_inner(), plan).map(InferAnswer::Whole),
    }
}

/// `ModelInferResponse` → REST JSON, outputs in JSON or binary as the caller asked, built whole.
pub(crate) fn infer_response(
    m: pb::ModelInferResponse,
    plan: &OutputPlan,
) -> Result<RestAnswer, TranslateError> {
    let bad = TranslateError::BadUpstream;
    let mut buf = Vec::with_capacity(256);
    let mut sections = Vec::new();
    json_out::answer_head(&mut buf, &m);
    let use_raw = !m.raw_output_contents.is_empty();
    if use_raw && m.raw_output_contents.len() != m.outputs.len() {
        return Err(bad(format!(
            "{} outputs but {} raw_output_contents",
            m.outputs.len(),
            m.raw_output_contents.len()
        )));
    }
    let empty = pb::InferTensorContents::default();
    for (i, o) in m.outputs.iter().enumerate() {
        if i > 0 {
            buf.push(b',');
        }
        let dt = DataType::parse(&o.datatype).ok_or_else(|| {
            bad(format!(
                "output {:?}: unknown datatype {:?}",
                o.name, o.datatype
            ))
        })?;
        let mut binary = plan.binary_for(&o.name) || !dt.has_typed_form();
        let raw_bytes = m.raw_output_contents.get(i).cloned();
        if !binary {
            // Try JSON; BYTES that are not UTF-8 cannot be JSON strings, so they fall back to a
            // binary section (the caller used the REST protocol, which supports both).
            let mark = buf.len();
            let data = match &raw_bytes {
                Some(r) => DataRef::Raw(r),
                None => DataRef::Contents(o.contents.as_ref().unwrap_or(&empty)),
            };
            if json_out::tensor(&mut buf, &o.name, dt, &o.shape, &o.parameters, data).is_err() {
                buf.truncate(mark);
                binary = true;
            }
        }
        if binary {
            let section = match raw_bytes {
                Some(r) => r,
                None => raw::encode(dt, o.contents.as_ref().unwrap_or(&empty)),
            };
            json_out::tensor(
                &mut buf,
                &o.name,
                dt,
                &o.shape,
                &o.parameters,
                DataRef::Binary(section.len()),
            )
            .map_err(|e| bad(format!("output {:?}: {e}", o.name)))?;
            sections.push(section);
        }
    }
    buf.extend_from_slice(b"]}");
    Ok(RestAnswer {
        status: http::StatusCode::OK,
        json: buf,
        sections,
    })
}
