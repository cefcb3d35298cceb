//! A REST infer answer whose outputs are all JSON `data`, encoded chunk by chunk as the caller
//! reads it (issue item 7): the first bytes leave before the last tensor is formatted, and the
//! proxy holds one chunk of JSON text at a time instead of the whole answer beside the decoded
//! tensors it comes from.
//!
//! Headers are final before the first chunk, so everything that could change them is decided
//! first, by a cheap pre-pass ([`json_out::has_json_form`]): a BYTES output that is not UTF-8
//! (or a malformed raw tensor) would switch the answer to a binary section, with a different
//! Content-Type and an `Inference-Header-Content-Length`. Such answers, and every answer with
//! a binary section, are built whole as before; their JSON part is small unless mixed.
//!
//! Length: an answer that fits in the first chunk goes whole with its Content-Length. A longer
//! one goes without, i.e. chunked on HTTP/1.1 (plain DATA frames on HTTP/2): knowing its length
//! up front would mean formatting every number twice, and formatting is the whole cost.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};

use super::datatype::DataType;
use super::error::TranslateError;
use super::json_out::{self, ArrayCursor, DataRef};
use super::pb;

/// Bytes of JSON text per chunk. Big enough that per-chunk overhead (a frame, a wake-up) is
/// noise next to formatting it; small enough to keep memory flat.
pub(crate) const CHUNK: usize = 64 * 1024;

/// Streams the JSON of one `ModelInferResponse`.
#[derive(Debug)]
pub(crate) struct AnswerStream {
    /// Boxed: the stream moves through a few hands before the connection polls it.
    m: Box<pb::ModelInferResponse>,
    /// Each output's datatype, parsed once up front.
    dts: Vec<DataType>,
    at: Position,
    chunk: usize,
}

/// Where the encoder stands.
#[derive(Debug, Clone, Copy)]
enum Position {
    /// Nothing written yet.
    Start,
    /// Before output `i` (or the closing `]}` once `i` is past the last).
    Output(usize),
    /// Inside output `i`'s `data` array.
    Data(usize, ArrayCursor),
    /// All written.
    Done,
}

// === impl AnswerStream ===

impl AnswerStream {
    /// A stream of `m`'s JSON, if every output has a JSON form (`dts` from
    /// [`output_datatypes`]); `Err` gives it back when some output needs a binary section.
    pub(crate) fn new(m: pb::ModelInferResponse, dts: Vec<DataType>) -> Result<Self, Self> {
        let this = AnswerStream {
            m: Box::new(m),
            dts,
            at: Position::Start,
            chunk: CHUNK,
        };
        if this.all_json() { Ok(this) } else { Err(this) }
    }

    /// The same with a custom chunk size (tests).
    #[cfg(test)]
    pub(crate) fn with_chunk(mut self, chunk: usize) -> Self {
        self.chunk = chunk.max(1);
        self
    }

    /// Gives back the response (to be answered whole).
    pub(crate) fn into_inner(self) -> pb::ModelInferResponse {
        *self.m
    }

    fn data(&self, i: usize) -> Option<(DataType, DataRef<'_>)> {
        static EMPTY: pb::InferTensorContents = pb::InferTensorContents {
            bool_contents: Vec::new(),
            int_contents: Vec::new(),
            int64_contents: Vec::new(),
            uint_contents: Vec::new(),
            uint64_contents: Vec::new(),
            fp32_contents: Vec::new(),
            fp64_contents: Vec::new(),
            bytes_contents: Vec::new(),
        };
        let dt = *self.dts.get(i)?;
        let o = self.m.outputs.get(i)?;
        let data = match self.m.raw_output_contents.get(i) {
            Some(r) => DataRef::Raw(r),
            None => DataRef::Contents(o.contents.as_ref().unwrap_or(&EMPTY)),
        };
        Some((dt, data))
    }

    fn all_json(&self) -> bool {
        (0..self.m.outputs.len()).all(|i| {
            self.data(i)
                .is_some_and(|(dt, data)| json_out::has_json_form(dt, &data))
        })
    }

    /// Appends the next part of the answer until `buf` holds at least `until` bytes (one element
    /// or tensor head past it at most) or the answer is complete; true once complete.
    pub(crate) fn encode(&mut self, buf: &mut Vec<u8>, until: usize) -> Result<bool, String> {
        while buf.len() < until {
            match self.at {
                Position::Start => {
                    json_out::answer_head(buf, &self.m);
                    self.at = Position::Output(0);
                }
                Position::Output(i) => {
                    let Some(o) = self.m.outputs.get(i) else {
                        buf.extend_from_slice(b"]}");
                        self.at = Position::Done;
                        continue;
                    };
                    let dt = self
                        .dts
                        .get(i)
                        .copied()
                        .ok_or("output without a datatype")?;
                    if i > 0 {
                        buf.push(b',');
                    }
                    json_out::tensor_head(buf, &o.name, dt, &o.shape, &o.parameters, None);
                    self.at = Position::Data(i, ArrayCursor::default());
                }
                Position::Data(i, mut cursor) => {
                    let (dt, data) = self.data(i).ok_or("output vanished")?;
                    let done = json_out::array_part(buf, dt, &data, &mut cursor, until)?;
                    self.at = if done {
                        buf.push(b'}');
                        Position::Output(i + 1)
                    } else {
                        Position::Data(i, cursor)
                    };
                }
                Position::Done => return Ok(true),
            }
        }
        Ok(matches!(self.at, Position::Done))
    }

    /// The next chunk, or `None` at the end.
    fn next_chunk(&mut self) -> Result<Option<Bytes>, TranslateError> {
        if matches!(self.at, Position::Done) {
            return Ok(None);
        }
        // Slack for the element that crosses the boundary.
        let mut buf = Vec::with_capacity(self.chunk + 256);
        self.encode(&mut buf, self.chunk)
            .map_err(|e| TranslateError::BadUpstream(format!("encoding the answer: {e}")))?;
        Ok(Some(Bytes::from(buf)))
    }

    /// Encodes the first chunk: the whole answer if it fits (`Ok`), or the chunk plus the
    /// stream for the rest (`Err`).
    pub(crate) fn start(mut self) -> Result<StartedAnswer, TranslateError> {
        let first = self.next_chunk()?.unwrap_or_default();
        Ok(if matches!(self.at, Position::Done) {
            StartedAnswer::Whole(first)
        } else {
            StartedAnswer::Streaming(StreamBody {
                first: Some(first),
                rest: self,
            })
        })
    }
}

/// The parsed datatype of every output, or the fault naming the output.
pub(crate) fn output_datatypes(
    m: &pb::ModelInferResponse,
) -> Result<Vec<DataType>, TranslateError> {
    m.outputs
        .iter()
        .map(|o| {
            DataType::parse(&o.datatype).ok_or_else(|| {
                TranslateError::BadUpstream(format!(
                    "output {:?}: unknown datatype {:?}",
                    o.name, o.datatype
                ))
            })
        })
        .collect()
}

/// An answer after its first chunk.
#[derive(Debug)]
pub(crate) enum StartedAnswer {
    /// It fit: the whole JSON.
    Whole(Bytes),
    /// More to come.
    Streaming(StreamBody),
}

/// The body of a streamed answer.
#[derive(Debug)]
pub(crate) struct StreamBody {
    first: Option<Bytes>,
    rest: AnswerStream,
}

// === impl StreamBody ===

impl StreamBody {
    /// The chunk encoded before the headers (benches).
    pub(crate) fn first_chunk(&self) -> Bytes {
        self.first.clone().unwrap_or_default()
    }
}

impl Body for StreamBody {
    type Data = Bytes;
    type Error = TranslateError;

    fn poll_frame(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        // Formatting one chunk is bounded work (about 64 KiB of text), so it is done right
        // here when the connection asks for more, never ahead of the caller's reading.
        let this = self.get_mut();
        if let Some(first) = this.first.take() {
            return Poll::Ready(Some(Ok(Frame::data(first))));
        }
        Poll::Ready(
            this.rest
                .next_chunk()
                .transpose()
                .map(|c| c.map(Frame::data)),
        )
    }

    fn is_end_stream(&self) -> bool {
        self.first.is_none() && matches!(self.rest.at, Position::Done)
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::default()
    }
}
