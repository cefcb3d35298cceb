//! A server stream written out as NDJSON or SSE, one event per gRPC message as it arrives.
//!
//! Nothing beyond the message being assembled is buffered. A non-OK status (or a broken
//! stream) after messages were sent becomes a last `{"error": ..., "code": ...}` event, since
//! the HTTP status has already gone out.

use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bytes::Bytes;
use http_body::{Body, Frame};

use super::error::TranscodeError;
use super::response::{Deframer, Shape, StreamFormat, check_status};
use crate::translate::{BoxError, TranslateBody, grpc_status};

/// The response body of a transcoded server-streaming call.
pub(crate) struct JsonStream {
    pub(crate) inner: TranslateBody,
    pub(crate) deframer: Deframer,
    pub(crate) shape: Shape,
    pub(crate) format: StreamFormat,
    pub(crate) limit: u64,
    /// The first message, read before the headers were sent.
    pub(crate) first: Option<Bytes>,
    pub(crate) saw_status: bool,
    pub(crate) done: bool,
}

// === impl JsonStream ===

impl JsonStream {
    fn event(&mut self, msg: &[u8]) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        match self.shape.to_json(msg) {
            Ok(json) => Poll::Ready(Some(Ok(Frame::data(self.format.event(&json))))),
            Err(e) => self.fail(&e),
        }
    }

    fn fail(&mut self, e: &TranscodeError) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        self.done = true;
        Poll::Ready(Some(Ok(Frame::data(
            self.format.event(e.json().as_bytes()),
        ))))
    }
}

impl Body for JsonStream {
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
        if let Some(first) = this.first.take() {
            return this.event(&first);
        }
        loop {
            match this.deframer.next(this.limit) {
                Ok(Some(msg)) => return this.event(&msg),
                Ok(None) => {}
                Err(e) => return this.fail(&e),
            }
            match ready!(Pin::new(&mut this.inner).poll_frame(cx)) {
                Some(Ok(frame)) => match frame.into_data() {
                    Ok(data) => {
                        if let Err(e) = this.deframer.push(&data, this.limit) {
                            return this.fail(&e);
                        }
                    }
                    Err(frame) => {
                        if let Ok(trailers) = frame.into_trailers() {
                            this.saw_status = true;
                            if let Err(e) = check_status(grpc_status(&trailers)) {
                                return this.fail(&e);
                            }
                        }
                    }
                },
                Some(Err(e)) => {
                    return this.fail(&TranscodeError::BadUpstream(format!("stream broke: {e}")));
                }
                None => {
                    if !this.deframer.is_empty() {
                        return this.fail(&TranscodeError::BadUpstream(
                            "stream ended inside a message".into(),
                        ));
                    }
                    if !this.saw_status {
                        return this.fail(&TranscodeError::BadUpstream(
                            "stream ended without grpc-status".into(),
                        ));
                    }
                    this.done = true;
                    return Poll::Ready(None);
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.done
    }
}
