//! gRPC over HTTP/2 without a framework: the 5-byte message prefix, status codes and the
//! `grpc-message` percent-encoding. The demo only speaks unary rpcs, so a body is exactly one
//! message.

use bytes::{BufMut, Bytes, BytesMut};

/// Length of the prefix before each message: one compression flag byte, then a big-endian u32.
pub const PREFIX_LEN: usize = 5;

/// `content-type` of gRPC requests and responses.
pub const CONTENT_TYPE: &str = "application/grpc";

/// The gRPC status codes the demo produces or reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    /// 0
    Ok,
    /// 3
    InvalidArgument,
    /// 5
    NotFound,
    /// 8
    ResourceExhausted,
    /// 12
    Unimplemented,
    /// 13
    Internal,
}

/// Why a gRPC body could not be read as one message.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum FrameError {
    /// The body ended before the prefix or the message it announces was complete.
    #[error("gRPC body truncated: message prefix announces {announced} bytes, {available} present")]
    Truncated {
        /// Bytes the prefix announced (or 5 for a missing prefix).
        announced: usize,
        /// Bytes actually present.
        available: usize,
    },
    /// The compressed flag was set, but no `grpc-encoding` is supported.
    #[error("compressed gRPC messages are not supported")]
    Compressed,
    /// A unary request carried more than one message.
    #[error("unary rpc got {0} bytes after the first message")]
    TrailingData(usize),
}

// === impl Code ===

impl Code {
    /// The numeric value carried in `grpc-status`.
    pub fn as_i32(self) -> i32 {
        match self {
            Code::Ok => 0,
            Code::InvalidArgument => 3,
            Code::NotFound => 5,
            Code::ResourceExhausted => 8,
            Code::Unimplemented => 12,
            Code::Internal => 13,
        }
    }
}

/// The canonical upper-case name of a numeric gRPC status (for printing).
pub fn code_name(code: i32) -> &'static str {
    const NAMES: [&str; 17] = [
        "OK",
        "CANCELLED",
        "UNKNOWN",
        "INVALID_ARGUMENT",
        "DEADLINE_EXCEEDED",
        "NOT_FOUND",
        "ALREADY_EXISTS",
        "PERMISSION_DENIED",
        "RESOURCE_EXHAUSTED",
        "FAILED_PRECONDITION",
        "ABORTED",
        "OUT_OF_RANGE",
        "UNIMPLEMENTED",
        "INTERNAL",
        "UNAVAILABLE",
        "DATA_LOSS",
        "UNAUTHENTICATED",
    ];
    usize::try_from(code)
        .ok()
        .and_then(|i| NAMES.get(i).copied())
        .unwrap_or("UNKNOWN_CODE")
}

/// Encodes one message with its prefix.
pub fn encode<M: prost::Message>(message: &M) -> Bytes {
    let len = message.encoded_len();
    let mut buf = BytesMut::with_capacity(PREFIX_LEN + len);
    buf.put_u8(0);
    // Messages over 4 GiB cannot be framed; the demo's bodies are capped far below that, so
    // saturating only guards the arithmetic.
    buf.put_u32(u32::try_from(len).unwrap_or(u32::MAX));
    // Encoding into a buffer with enough capacity cannot fail.
    message.encode_raw(&mut buf);
    buf.freeze()
}

/// Splits a unary body into its single message (a zero-copy slice of `body`).
pub fn decode_unary(body: Bytes) -> Result<Bytes, FrameError> {
    let Some(&[flag, a, b, c, d]) = body.get(..PREFIX_LEN) else {
        return Err(FrameError::Truncated {
            announced: PREFIX_LEN,
            available: body.len(),
        });
    };
    let announced = u32::from_be_bytes([a, b, c, d]) as usize;
    if flag != 0 {
        return Err(FrameError::Compressed);
    }
    let available = body.len() - PREFIX_LEN;
    if available < announced {
        return Err(FrameError::Truncated {
            announced,
            available,
        });
    }
    if available > announced {
        return Err(FrameError::TrailingData(available - announced));
    }
    Ok(body.slice(PREFIX_LEN..))
}

/// Percent-encodes a status message as `grpc-message` requires: printable ASCII except `%`
/// stays, every other byte of the UTF-8 becomes `%XX`.
pub fn encode_message(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    for byte in message.bytes() {
        if (0x20..=0x7e).contains(&byte) && byte != b'%' {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// Reverses [`encode_message`]; malformed escapes are kept literally, as the spec asks.
pub fn decode_message(encoded: &str) -> String {
    let bytes = encoded.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let escaped = (bytes[i] == b'%')
            .then(|| bytes.get(i + 1..i + 3))
            .flatten()
            .and_then(|hex| std::str::from_utf8(hex).ok())
            .and_then(|hex| u8::from_str_radix(hex, 16).ok());
        match escaped {
            Some(byte) => {
                out.push(byte);
                i += 3;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inference::ModelReadyRequest;
    use prost::Message;

    #[test]
    fn round_trips_a_message() {
        let request = ModelReadyRequest {
            name: "add_sub".into(),
            version: "1".into(),
        };
        let framed = encode(&request);
        assert_eq!(framed[0], 0);
        let message = decode_unary(framed).unwrap();
        assert_eq!(ModelReadyRequest::decode(message).unwrap(), request);
    }

    #[test]
    fn rejects_bad_frames() {
        assert!(matches!(
            decode_unary(Bytes::from_static(&[0, 0])),
            Err(FrameError::Truncated { .. })
        ));
        assert_eq!(
            decode_unary(Bytes::from_static(&[1, 0, 0, 0, 0])),
            Err(FrameError::Compressed)
        );
        assert!(matches!(
            decode_unary(Bytes::from_static(&[0, 0, 0, 0, 9, 1])),
            Err(FrameError::Truncated { announced: 9, .. })
        ));
        assert_eq!(
            decode_unary(Bytes::from_static(&[0, 0, 0, 0, 0, 7])),
            Err(FrameError::TrailingData(1))
        );
        assert_eq!(
            decode_unary(Bytes::from_static(&[0, 0, 0, 0, 0])),
            Ok(Bytes::new())
        );
    }

    #[test]
    fn percent_encodes_messages() {
        let text = "model 'ü' 100% gone\n";
        let encoded = encode_message(text);
        assert_eq!(encoded, "model '%C3%BC' 100%25 gone%0A");
        assert_eq!(decode_message(&encoded), text);
        assert_eq!(decode_message("50%"), "50%");
        assert_eq!(decode_message("%zz"), "%zz");
    }
}
