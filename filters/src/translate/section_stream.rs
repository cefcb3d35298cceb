//! REST → gRPC infer with binary-extension sections, streamed: only the JSON header is read
//! before the translated request leaves; the sections follow as `raw_input_contents` straight
//! from the caller's body, chunk by chunk, so receiving and sending overlap instead of the
//! whole body being collected first.
//!
//! Taken only when everything the message head needs is known from the JSON header and the
//! declared lengths: an infer request with `Inference-Header-Content-Length` and
//! `Content-Length` (the sections' sizes are checked against the latter), whose sections
//! are all of fixed-size datatypes. A request with a BYTES section goes the collect path: a
//! BYTES section's element count needs its u32 length prefixes, i.e. its bytes, before the
//! message can be judged. So do requests without `Content-Length` (nothing to check the
//! sizes against) and JSON-only ones (nothing to overlap). A body that then ends early or runs long
//! ends the stream with an error, so the upstream sees a reset rather than a message that
//! parses.

use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bytes::{BufMut, Bytes, BytesMut};
use http::HeaderMap;
use http::header::CONTENT_LENGTH;
use http::header::HeaderName;
use http_body::{Body, Frame, SizeHint};
use http_body_util::BodyExt;
use prost::Message;
use prost::encoding::{WireType, encode_key, encode_varint, encoded_len_varint, key_len};

use super::body::boxed;
use super::collect::{collect, read_error};
use super::datatype::DataType;
use super::error::TranslateError;
use super::json_in::{self, Budget, InferJson};
use super::rest_to_grpc::{self, OutputPlan};
use super::tensor::{BINARY_DATA_SIZE, RawInput, Sections};
use super::{
    BoxError, ChunksBody, Endpoint, INFERENCE_HEADER_CONTENT_LENGTH, TranslateBody, grpc_frame, pb,
};

/// `raw_input_contents`' field number in `ModelInferRequest`.
const RAW_INPUT_CONTENTS: u32 = 7;

/// The declared lengths of a binary-extension body.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Declared {
    header: usize,
    body: usize,
}

/// One piece of the outgoing gRPC body.
#[derive(Debug)]
enum Piece {
    /// Bytes in hand: frame header, message head, tags and lengths, raw JSON tensors.
    Ready(Bytes),
    /// This many bytes still to pass through from the caller's body.
    Body(usize),
}

/// The translated body: ready pieces interleaved with sections passed through from the
/// caller's body. Its last chunk is held back until the caller's body is seen to end where
/// declared, so a body that runs long never yields a complete message.
pub(crate) struct SectionStream {
    pieces: VecDeque<Piece>,
    body: TranslateBody,
    /// Received bytes not yet passed on (a chunk can span sections).
    leftover: Bytes,
    /// The final chunk, waiting for the end of the caller's body.
    held: Option<Bytes>,
    remaining: u64,
    done: bool,
}

/// The caller's body does not match its declared length.
#[derive(Debug, thiserror::Error)]
pub(crate) enum BodyMismatch {
    /// Fewer bytes than Content-Length.
    #[error("request body ended {0} bytes short of its binary sections")]
    Short(u64),
    /// More bytes than Content-Length.
    #[error("request body runs past its binary sections")]
    Long,
}

/// The declared lengths, when this request can stream: `None` sends it the collect path,
/// which also answers malformed lengths exactly as before.
pub(crate) fn declared(headers: &HeaderMap, limit: u64) -> Option<Declared> {
    let number = |name: HeaderName| {
        headers
            .get(name)?
            .to_str()
            .ok()?
            .trim()
            .parse::<u64>()
            .ok()
            .and_then(|n| usize::try_from(n).ok())
    };
    let header = number(INFERENCE_HEADER_CONTENT_LENGTH)?;
    let body = number(CONTENT_LENGTH)?;
    // Without sections there is nothing to overlap.
    (header < body && body as u64 <= limit).then_some(Declared { header, body })
}

/// Translates an infer request whose lengths are `declared`: reads the JSON header, builds
/// the message head and returns a body streaming the sections behind it.
pub(crate) async fn infer_request(
    ep: &Endpoint,
    declared: Declared,
    mut body: TranslateBody,
    limit: u64,
) -> Result<(TranslateBody, OutputPlan), TranslateError> {
    let (json, leftover) = read_json_header(&mut body, declared.header).await?;
    let budget = Budget::new(limit);
    let parsed = json_in::parse_infer(&json, &budget)?;
    let tail_len = declared.body - declared.header;
    if !streamable(&parsed) {
        let (rest, _) = collect(body, limit.saturating_sub(json.len() as u64)).await?;
        let tail = if leftover.is_empty() {
            rest
        } else {
            let mut tail = BytesMut::with_capacity(leftover.len() + rest.len());
            tail.extend_from_slice(&leftover);
            tail.extend_from_slice(&rest);
            tail.freeze()
        };
        let (msg, fp32, raw, plan) =
            rest_to_grpc::infer_parts(ep, parsed, Sections::new(tail), &budget)?;
        let raw = RawInput::all_ready(raw)?;
        let chunks = grpc_frame::encode_infer_request(msg, &fp32, &raw);
        return Ok((boxed(ChunksBody::new(chunks, None)), plan));
    }
    let (msg, fp32, raw, plan) =
        rest_to_grpc::infer_parts(ep, parsed, Sections::declared(tail_len), &budget)?;
    // A non-empty tail means some input is a section, and then every input goes raw: no
    // packed FP32 is left for the head.
    if fp32.iter().any(Option::is_some) {
        return Err(TranslateError::BadRequest(
            "binary sections mixed with packed FP32 inputs".into(),
        ));
    }
    let stream = SectionStream::new(&msg, raw, leftover, body);
    Ok((stream.boxed_unsync(), plan))
}

/// Whether every input's section can be judged by its size alone: no BYTES section (see the
/// module docs). JSON inputs of any datatype are already whole.
fn streamable(parsed: &InferJson) -> bool {
    !parsed.inputs.iter().any(|t| {
        t.parameters.contains_key(BINARY_DATA_SIZE)
            && t.datatype
                .as_deref()
                .and_then(DataType::parse)
                .is_some_and(|dt| dt.size().is_none())
    })
}

/// Reads the first `len` bytes of `body` (the JSON header); returns them and the rest of the
/// last chunk read. Memory grows with what arrives, not with the declared length.
async fn read_json_header(
    body: &mut TranslateBody,
    len: usize,
) -> Result<(Bytes, Bytes), TranslateError> {
    let mut first: Option<Bytes> = None;
    let mut joined = BytesMut::new();
    let mut have = 0usize;
    while have < len {
        let Some(frame) = body.frame().await else {
            return Err(TranslateError::BadRequest(format!(
                "request body ended after {have} bytes of its {len}-byte JSON header"
            )));
        };
        let Ok(mut data) = frame.map_err(|e| read_error(e.as_ref()))?.into_data() else {
            continue;
        };
        let need = len - have;
        let rest = data.split_off(need.min(data.len()));
        have += data.len();
        // One chunk holding the whole header (the usual case) is kept as is, uncopied.
        match first.take() {
            None if joined.is_empty() => first = Some(data),
            None => joined.extend_from_slice(&data),
            Some(one) => {
                joined.extend_from_slice(&one);
                joined.extend_from_slice(&data);
            }
        }
        if have == len {
            let json = first.unwrap_or_else(|| joined.freeze());
            return Ok((json, rest));
        }
    }
    // A zero-length header: nothing to read (its JSON is then invalid).
    Ok((first.unwrap_or_default(), Bytes::new()))
}

// === impl SectionStream ===

impl SectionStream {
    /// Frames `msg` (its `raw_input_contents` empty) followed by `raw` as field 7 entries,
    /// byte for byte what `grpc_frame::encode_infer_request` makes of the whole body.
    fn new(
        msg: &pb::ModelInferRequest,
        raw: Vec<RawInput>,
        leftover: Bytes,
        body: TranslateBody,
    ) -> Self {
        let raw_len = |r: &RawInput| match r {
            RawInput::Ready(b) => b.len(),
            RawInput::Body(n) => *n,
        };
        let msg_len = msg.encoded_len();
        let total: usize = msg_len
            + raw
                .iter()
                .map(|r| {
                    let n = raw_len(r);
                    key_len(RAW_INPUT_CONTENTS) + encoded_len_varint(n as u64) + n
                })
                .sum::<usize>();
        let mut head = BytesMut::with_capacity(5 + msg_len + 8 * raw.len());
        head.put_u8(0);
        // A unary message over 4 GiB cannot be built: bodies are bounded far below that.
        head.put_u32(u32::try_from(total).unwrap_or(u32::MAX));
        // Encoding into a BytesMut cannot fail: it grows.
        let _ = msg.encode(&mut head);
        let mut pieces = VecDeque::with_capacity(1 + 2 * raw.len());
        for r in raw {
            encode_key(RAW_INPUT_CONTENTS, WireType::LengthDelimited, &mut head);
            encode_varint(raw_len(&r) as u64, &mut head);
            let piece = match r {
                RawInput::Ready(b) if b.is_empty() => continue,
                RawInput::Body(0) => continue,
                RawInput::Ready(b) => Piece::Ready(b),
                RawInput::Body(n) => Piece::Body(n),
            };
            pieces.push_back(Piece::Ready(head.split().freeze()));
            pieces.push_back(piece);
        }
        if !head.is_empty() {
            pieces.push_back(Piece::Ready(head.freeze()));
        }
        SectionStream {
            pieces,
            body,
            leftover,
            held: None,
            remaining: 5 + total as u64,
            done: false,
        }
    }

    /// The next chunk of the caller's body; `None` at its end.
    fn poll_body(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<Bytes, BoxError>>> {
        loop {
            match ready!(Pin::new(&mut self.body).poll_frame(cx)) {
                None => return Poll::Ready(None),
                Some(Err(e)) => return Poll::Ready(Some(Err(e))),
                // Request trailers have no place in the translated call.
                Some(Ok(frame)) => match frame.into_data() {
                    Ok(data) if !data.is_empty() => return Poll::Ready(Some(Ok(data))),
                    _ => continue,
                },
            }
        }
    }

    /// Ready once the caller's body has ended exactly where the sections do.
    fn poll_body_end(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        if !self.leftover.is_empty() {
            return Poll::Ready(Err(BodyMismatch::Long.into()));
        }
        match ready!(self.poll_body(cx)) {
            None => Poll::Ready(Ok(())),
            Some(Ok(_)) => Poll::Ready(Err(BodyMismatch::Long.into())),
            Some(Err(e)) => Poll::Ready(Err(e)),
        }
    }

    /// The next chunk to send, before the end-of-body check.
    fn poll_chunk(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<Bytes, BoxError>>> {
        loop {
            let Some(piece) = self.pieces.front_mut() else {
                return Poll::Ready(None);
            };
            if let Piece::Ready(b) = piece {
                let b = std::mem::take(b);
                self.pieces.pop_front();
                return Poll::Ready(Some(Ok(b)));
            }
            if self.leftover.is_empty() {
                match ready!(self.poll_body(cx)) {
                    Some(Ok(data)) => self.leftover = data,
                    Some(Err(e)) => return Poll::Ready(Some(Err(e))),
                    None => {
                        let short = self.pieces.iter().map(Piece::body_len).sum();
                        return Poll::Ready(Some(Err(BodyMismatch::Short(short).into())));
                    }
                }
                continue;
            }
            let Some(Piece::Body(n)) = self.pieces.front_mut() else {
                continue;
            };
            let take = (*n).min(self.leftover.len());
            *n -= take;
            if *n == 0 {
                self.pieces.pop_front();
            }
            return Poll::Ready(Some(Ok(self.leftover.split_to(take))));
        }
    }
}

// === impl Piece ===

impl Piece {
    /// Bytes this piece still expects from the caller's body.
    fn body_len(&self) -> u64 {
        match self {
            Piece::Body(n) => *n as u64,
            Piece::Ready(_) => 0,
        }
    }
}

impl Body for SectionStream {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = self.get_mut();
        if this.done {
            return Poll::Ready(None);
        }
        loop {
            if this.held.is_none() {
                match ready!(this.poll_chunk(cx)) {
                    Some(Ok(chunk)) if chunk.is_empty() => continue,
                    Some(Ok(chunk)) if !this.pieces.is_empty() => {
                        this.remaining -= chunk.len() as u64;
                        return Poll::Ready(Some(Ok(Frame::data(chunk))));
                    }
                    Some(Ok(chunk)) => this.held = Some(chunk),
                    Some(Err(e)) => {
                        this.done = true;
                        return Poll::Ready(Some(Err(e)));
                    }
                    None => {}
                }
            }
            // Nothing left to send but (perhaps) the held chunk: it goes only once the body
            // has ended where declared.
            let end = ready!(this.poll_body_end(cx));
            this.done = true;
            return Poll::Ready(match (end, this.held.take()) {
                (Err(e), _) => Some(Err(e)),
                (Ok(()), Some(chunk)) => {
                    this.remaining -= chunk.len() as u64;
                    Some(Ok(Frame::data(chunk)))
                }
                (Ok(()), None) => None,
            });
        }
    }

    fn is_end_stream(&self) -> bool {
        self.done
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.remaining)
    }
}
