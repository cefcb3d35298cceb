//! What the translators' own errors mean to the caller: side, status, code and reason.

use http::StatusCode;

use super::{Classify, Side};
use crate::transcode::TranscodeError;
use crate::translate::TranslateError;

// === impl TranslateError ===

impl Classify for TranslateError {
    fn side(&self) -> Side {
        match self {
            TranslateError::BadRequest(_)
            | TranslateError::TooLarge { .. }
            | TranslateError::NoEndpoint(_) => Side::Client,
            TranslateError::BadUpstream(_) | TranslateError::Upstream { .. } => Side::Upstream,
        }
    }
    fn http_status(&self) -> StatusCode {
        TranslateError::http_status(self)
    }
    fn grpc_code(&self) -> u32 {
        TranslateError::grpc_code(self)
    }
    fn reason(&self) -> &'static str {
        match self {
            TranslateError::BadRequest(_) => "bad_request",
            TranslateError::TooLarge { .. } => "body_too_large",
            TranslateError::NoEndpoint(_) => "no_endpoint",
            TranslateError::BadUpstream(_) => "bad_upstream",
            TranslateError::Upstream { .. } => "upstream_status",
        }
    }
}

// === impl TranscodeError ===

impl Classify for TranscodeError {
    fn side(&self) -> Side {
        match self {
            TranscodeError::BadRequest(_)
            | TranscodeError::TooLarge(_)
            | TranscodeError::Streaming(_) => Side::Client,
            TranscodeError::Upstream { .. } | TranscodeError::BadUpstream(_) => Side::Upstream,
        }
    }
    fn http_status(&self) -> StatusCode {
        TranscodeError::http_status(self)
    }
    fn grpc_code(&self) -> u32 {
        TranscodeError::grpc_code(self)
    }
    fn reason(&self) -> &'static str {
        match self {
            TranscodeError::BadRequest(_) => "bad_request",
            TranscodeError::TooLarge(_) => "body_too_large",
            TranscodeError::Streaming(_) => "unsupported_streaming",
            TranscodeError::Upstream { .. } => "upstream_status",
            TranscodeError::BadUpstream(_) => "bad_upstream",
        }
    }
    // Transcoded REST callers also get the gRPC code, as grpc-gateway and Envoy's
    // transcoder answer.
    fn json_body(&self) -> Option<String> {
        Some(self.json())
    }
}
