//! Transcoding errors: building the rule table (load time) and per request.

use http::StatusCode;

use crate::translate::{code, http_for_grpc};

/// A path template that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bad path template {template:?}: {why}")]
pub struct TemplateError {
    /// The template text.
    pub template: String,
    /// What is wrong.
    pub why: String,
}

/// The descriptor set cannot serve as a transcoding table.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// Not a valid `FileDescriptorSet`.
    #[error("not a valid FileDescriptorSet: {0}")]
    Descriptor(#[from] prost_reflect::DescriptorError),
    /// A method's `google.api.http` option does not decode.
    #[error("method {method}: unreadable google.api.http option: {why}")]
    BadOption {
        /// Full method name.
        method: String,
        /// Decoder message.
        why: String,
    },
    /// A method's rule is wrong (template, body or response_body field).
    #[error("method {method}: {why}")]
    BadRule {
        /// Full method name.
        method: String,
        /// What is wrong.
        why: String,
    },
    /// A service listed in the settings is not in the descriptor set.
    #[error("service {0:?} is not in the descriptor set")]
    UnknownService(String),
}

/// A request that cannot be transcoded, or an upstream answer that cannot be mapped back.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TranscodeError {
    /// Bad JSON, unknown field, bad path or query value: 400.
    #[error("{0}")]
    BadRequest(String),
    /// The body is over the limit: 413.
    #[error("request body over the limit of {0} bytes")]
    TooLarge(u64),
    /// Client- or bidi-streaming method: 501.
    #[error("method {0} is client- or bidi-streaming, which REST transcoding does not support")]
    Streaming(String),
    /// The upstream answered with a non-OK gRPC status.
    #[error("{message}")]
    Upstream {
        /// gRPC status code.
        code: u32,
        /// `grpc-message`.
        message: String,
    },
    /// The upstream's answer is not valid gRPC for the method: 502.
    #[error("bad gRPC answer from upstream: {0}")]
    BadUpstream(String),
}

// === impl TranscodeError ===

impl TranscodeError {
    /// The HTTP status the REST caller gets.
    pub fn http_status(&self) -> StatusCode {
        match self {
            TranscodeError::BadRequest(_) => StatusCode::BAD_REQUEST,
            TranscodeError::TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            TranscodeError::Streaming(_) => StatusCode::NOT_IMPLEMENTED,
            TranscodeError::Upstream { code, .. } => http_status_for(*code),
            TranscodeError::BadUpstream(_) => StatusCode::BAD_GATEWAY,
        }
    }

    /// The gRPC code reported in the JSON error body.
    pub fn grpc_code(&self) -> u32 {
        match self {
            TranscodeError::BadRequest(_) => code::INVALID_ARGUMENT,
            TranscodeError::TooLarge(_) => code::RESOURCE_EXHAUSTED,
            TranscodeError::Streaming(_) => code::UNIMPLEMENTED,
            TranscodeError::Upstream { code, .. } => *code,
            TranscodeError::BadUpstream(_) => code::INTERNAL,
        }
    }

    /// `{"error": "<message>", "code": <grpc code>}`, keys always in that order (a struct, not
    /// a map: the order must not depend on serde_json's `preserve_order` feature).
    pub fn json(&self) -> String {
        #[derive(serde::Serialize)]
        struct Body {
            error: String,
            code: u32,
        }
        serde_json::to_string(&Body {
            error: self.to_string(),
            code: self.grpc_code(),
        })
        .unwrap_or_else(|_| String::from(r#"{"error":"unencodable error"}"#))
    }
}

/// The OIP table (`http_for_grpc`) plus the codes generic services use that OIP servers do not:
/// ALREADY_EXISTS and ABORTED are conflicts, FAILED_PRECONDITION a client fault.
pub fn http_status_for(grpc: u32) -> StatusCode {
    const ABORTED: u32 = 10;
    const FAILED_PRECONDITION: u32 = 9;
    match grpc {
        code::ALREADY_EXISTS | ABORTED => StatusCode::CONFLICT,
        FAILED_PRECONDITION => StatusCode::BAD_REQUEST,
        other => http_for_grpc(other),
    }
}
