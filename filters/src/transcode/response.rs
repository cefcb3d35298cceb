//! gRPC answers back to JSON: unary messages whole, server streams message by message.

use bytes::{Buf, Bytes, BytesMut};
use prost_reflect::{DynamicMessage, FieldDescriptor, MessageDescriptor, SerializeOptions};

use super::error::TranscodeError;
use crate::translate::code;

/// How a server stream is written out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StreamFormat {
    /// Newline-delimited JSON (`application/x-ndjson`), one message per line.
    #[default]
    Ndjson,
    /// Server-sent events (`text/event-stream`), `data: {...}` per message.
    Sse,
}

/// What the JSON of one answer message is made of.
#[derive(Debug, Clone)]
pub(crate) struct Shape {
    pub(crate) output: MessageDescriptor,
    /// `response_body`: only this field.
    pub(crate) field: Option<FieldDescriptor>,
}

// === impl StreamFormat ===

impl StreamFormat {
    /// The response Content-Type.
    pub fn content_type(self) -> &'static str {
        match self {
            StreamFormat::Ndjson => "application/x-ndjson",
            StreamFormat::Sse => "text/event-stream",
        }
    }

    /// One event carrying `json`.
    pub(crate) fn event(self, json: &[u8]) -> Bytes {
        let mut out = BytesMut::with_capacity(json.len() + 8);
        if self == StreamFormat::Sse {
            out.extend_from_slice(b"data: ");
            out.extend_from_slice(json);
            out.extend_from_slice(b"\n\n");
        } else {
            out.extend_from_slice(json);
            out.extend_from_slice(b"\n");
        }
        out.freeze()
    }
}

// === impl Shape ===

impl Shape {
    /// Decodes one gRPC message and writes its proto3 JSON.
    pub(crate) fn to_json(&self, message: &[u8]) -> Result<Vec<u8>, TranscodeError> {
        let msg = DynamicMessage::decode(self.output.clone(), message)
            .map_err(|e| TranscodeError::BadUpstream(format!("undecodable message: {e}")))?;
        let fail = |e: serde_json::Error| TranscodeError::BadUpstream(e.to_string());
        let mut out = Vec::with_capacity(message.len() * 2 + 2);
        let mut ser = serde_json::Serializer::new(&mut out);
        match &self.field {
            None => msg
                .serialize_with_options(&mut ser, &SerializeOptions::new())
                .map_err(fail)?,
            Some(field) => {
                // The field alone, with its own JSON mapping: serialize a message holding only
                // it (defaults kept, so an empty field still answers) and take the member.
                let mut only = DynamicMessage::new(self.output.clone());
                only.set_field(field, msg.get_field(field).into_owned());
                let value = only
                    .serialize_with_options(
                        serde_json::value::Serializer,
                        &SerializeOptions::new().skip_default_fields(false),
                    )
                    .map_err(fail)?;
                let member = value
                    .get(field.json_name())
                    .cloned()
                    .unwrap_or(serde_json::Value::Null);
                serde::Serialize::serialize(&member, &mut ser).map_err(fail)?;
            }
        }
        Ok(out)
    }
}

/// A non-OK status as an error.
pub(crate) fn check_status(status: Option<(u32, String)>) -> Result<(), TranscodeError> {
    match status {
        Some((code::OK, _)) => Ok(()),
        Some((code, message)) => Err(TranscodeError::Upstream { code, message }),
        None => Err(TranscodeError::BadUpstream(
            "gRPC answer without grpc-status".into(),
        )),
    }
}

/// Splits gRPC frames off the front of a buffer as they complete.
#[derive(Debug, Default)]
pub(crate) struct Deframer {
    buf: BytesMut,
}

// === impl Deframer ===

impl Deframer {
    /// Appends received bytes. The caller drains whole messages after each push, so the
    /// buffer holds at most one partial message plus one chunk: bounded by `limit`.
    pub(crate) fn push(&mut self, data: &[u8], limit: u64) -> Result<(), TranscodeError> {
        let held = (self.buf.len() + data.len()) as u64;
        if held > limit.saturating_mul(2).saturating_add(10) {
            return Err(over(limit));
        }
        self.buf.extend_from_slice(data);
        Ok(())
    }

    fn declared(&self) -> Option<u64> {
        let h = self.buf.get(..5)?;
        Some(u64::from(u32::from_be_bytes([h[1], h[2], h[3], h[4]])))
    }

    /// The next complete message, if one is buffered.
    pub(crate) fn next(&mut self, limit: u64) -> Result<Option<Bytes>, TranscodeError> {
        let Some(len) = self.declared() else {
            return Ok(None);
        };
        if len > limit {
            return Err(over(limit));
        }
        if self.buf.first() != Some(&0) {
            return Err(TranscodeError::BadUpstream(
                "compressed gRPC messages are not supported".into(),
            ));
        }
        let Ok(len) = usize::try_from(len) else {
            return Ok(None);
        };
        if self.buf.len() < 5 + len {
            return Ok(None);
        }
        self.buf.advance(5);
        Ok(Some(self.buf.split_to(len).freeze()))
    }

    /// Bytes held that do not form a whole message.
    pub(crate) fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }
}

fn over(limit: u64) -> TranscodeError {
    TranscodeError::BadUpstream(format!("streamed message over the limit of {limit} bytes"))
}
