//! The answer's body of a recorded hop: passes frames through unchanged and notes what a
//! streamed model answer's span needs (first body byte, first and count of SSE events or gRPC
//! messages, size, trailers' `grpc-status`); the span ends when the body does.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::time::Instant;

use bytes::Bytes;
use http::HeaderMap;
use http_body::{Body, Frame, SizeHint};
use opentelemetry::KeyValue;

use super::hop::HopTrace;
use super::layer::{grpc_server_error, grpc_status};

/// How the answer's messages are counted.
#[derive(Debug, Clone, Copy)]
pub enum StreamKind {
    /// Not counted.
    Plain,
    /// Server-sent events, separated by a blank line.
    Sse,
    /// gRPC length-prefixed messages.
    Grpc,
}

impl StreamKind {
    /// The kind of an answer with `headers`.
    pub fn of(headers: &HeaderMap) -> StreamKind {
        let ct = headers
            .get(http::header::CONTENT_TYPE)
            .map(|v| v.as_bytes())
            .unwrap_or_default();
        if ct.starts_with(b"application/grpc") {
            StreamKind::Grpc
        } else if ct.starts_with(b"text/event-stream") {
            StreamKind::Sse
        } else {
            StreamKind::Plain
        }
    }
}

/// Counts messages across frames without buffering them.
#[derive(Debug, Default)]
struct Counter {
    messages: u64,
    /// SSE: the previous frame ended with a newline.
    newline: bool,
    /// gRPC: bytes of the 5-byte prefix seen so far.
    prefix: [u8; 5],
    have: usize,
    /// gRPC: bytes of the current message still to pass.
    skip: u64,
}

impl Counter {
    fn feed(&mut self, kind: StreamKind, mut data: &[u8]) {
        match kind {
            StreamKind::Plain => {}
            StreamKind::Sse => {
                for i in memchr::memchr_iter(b'\n', data) {
                    let previous = if i == 0 {
                        self.newline
                    } else {
                        data[i - 1] == b'\n'
                    };
                    if previous {
                        self.messages += 1;
                    }
                }
                if let Some(last) = data.last() {
                    self.newline = *last == b'\n';
                }
            }
            StreamKind::Grpc => {
                while !data.is_empty() {
                    if self.skip > 0 {
                        let n = usize::try_from(self.skip)
                            .unwrap_or(usize::MAX)
                            .min(data.len());
                        self.skip -= n as u64;
                        data = &data[n..];
                        continue;
                    }
                    let n = (5 - self.have).min(data.len());
                    self.prefix[self.have..self.have + n].copy_from_slice(&data[..n]);
                    self.have += n;
                    data = &data[n..];
                    if self.have == 5 {
                        self.messages += 1;
                        self.have = 0;
                        let mut len = [0u8; 4];
                        len.copy_from_slice(&self.prefix[1..]);
                        self.skip = u64::from(u32::from_be_bytes(len));
                    }
                }
            }
        }
    }
}

pin_project_lite::pin_project! {
    /// See the module docs.
    pub struct TracedBody<B> {
        #[pin]
        inner: B,
        hop: Option<Arc<HopTrace>>,
        kind: StreamKind,
        counter: Counter,
        bytes: u64,
        first_byte: bool,
    }

    impl<B> PinnedDrop for TracedBody<B> {
        fn drop(this: Pin<&mut Self>) {
            let this = this.project();
            if let Some(hop) = this.hop.take() {
                finish(&hop, *this.kind, this.counter, *this.bytes, Some("cancelled"));
            }
        }
    }
}

impl<B> TracedBody<B> {
    /// `inner`, ending `hop`'s span when it ends.
    pub fn new(inner: B, hop: Arc<HopTrace>, kind: StreamKind) -> Self {
        TracedBody {
            inner,
            hop: Some(hop),
            kind,
            counter: Counter::default(),
            bytes: 0,
            first_byte: false,
        }
    }
}

fn finish(hop: &HopTrace, kind: StreamKind, counter: &Counter, bytes: u64, how: Option<&str>) {
    let count = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
    let stream = match kind {
        StreamKind::Plain => None,
        StreamKind::Sse => Some(KeyValue::new(
            "ferry.stream.events",
            count(counter.messages),
        )),
        StreamKind::Grpc => Some(KeyValue::new(
            "ferry.stream.messages",
            count(counter.messages),
        )),
    };
    // An iterator, not a vector: into the span's attributes, sized ahead (no allocation).
    hop.add_attributes(
        std::iter::once(KeyValue::new("http.response.body.size", count(bytes)))
            .chain(stream)
            .chain(how.map(|h| KeyValue::new("ferry.response.end", h.to_owned()))),
    );
    hop.end(Instant::now());
}

impl<B> Body for TracedBody<B>
where
    B: Body<Data = Bytes>,
    B::Error: std::fmt::Display,
{
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, B::Error>>> {
        let mut this = self.project();
        let frame = ready!(this.inner.as_mut().poll_frame(cx));
        let Some(hop) = this.hop.as_ref() else {
            return Poll::Ready(frame);
        };
        match &frame {
            Some(Ok(f)) => {
                if let Some(data) = f.data_ref() {
                    *this.bytes += data.len() as u64;
                    if !*this.first_byte && !data.is_empty() {
                        *this.first_byte = true;
                        hop.event("response.first_byte", Instant::now(), Vec::new());
                    }
                    let before = this.counter.messages;
                    this.counter.feed(*this.kind, data);
                    if before == 0 && this.counter.messages > 0 {
                        hop.event("stream.first_message", Instant::now(), Vec::new());
                    }
                    // hyper may stop polling once the body says it ended: end here then.
                    if this.inner.is_end_stream()
                        && let Some(hop) = this.hop.take()
                    {
                        finish(&hop, *this.kind, this.counter, *this.bytes, None);
                    }
                } else if let Some(trailers) = f.trailers_ref()
                    && let Some(code) = grpc_status(trailers)
                {
                    hop.add_attributes([KeyValue::new("rpc.grpc.status_code", i64::from(code))]);
                    if code != 0 {
                        hop.fail(grpc_server_error(code));
                    }
                }
            }
            Some(Err(e)) => {
                hop.fail(Some(format!("response body: {e}")));
                if let Some(hop) = this.hop.take() {
                    finish(&hop, *this.kind, this.counter, *this.bytes, Some("error"));
                }
            }
            None => {
                if let Some(hop) = this.hop.take() {
                    finish(&hop, *this.kind, this.counter, *this.bytes, None);
                }
            }
        }
        Poll::Ready(frame)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sse_events_are_counted_across_frames() {
        let mut c = Counter::default();
        c.feed(StreamKind::Sse, b"data: a\n\ndata: b\n");
        c.feed(StreamKind::Sse, b"\ndata: [DONE]\n\n");
        assert_eq!(c.messages, 3);
    }

    #[test]
    fn grpc_messages_are_counted_across_split_prefixes() {
        let mut c = Counter::default();
        let msg = |n: u32| {
            let mut v = vec![0u8];
            v.extend_from_slice(&n.to_be_bytes());
            v.extend(std::iter::repeat_n(7u8, n as usize));
            v
        };
        let all: Vec<u8> = [msg(3), msg(0), msg(10)].concat();
        for chunk in all.chunks(2) {
            c.feed(StreamKind::Grpc, chunk);
        }
        assert_eq!(c.messages, 3);
        assert_eq!((c.have, c.skip), (0, 0));
    }
}
