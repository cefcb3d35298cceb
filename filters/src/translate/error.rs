//! What can go wrong while translating, and how each fault is answered on either protocol.

use http::StatusCode;

/// A translation fault. Each maps to one HTTP status and one gRPC code.
#[derive(Debug, thiserror::Error)]
pub enum TranslateError {
    /// The caller's message is malformed or inconsistent (bad JSON, wrong values for the
    /// datatype, shape/data mismatch, binary sizes that do not add up...).
    #[error("{0}")]
    BadRequest(String),
    /// The body or its decoded tensors exceed the configured limit.
    #[error("{what} exceeds the limit of {limit} bytes")]
    TooLarge {
        /// What grew too large.
        what: &'static str,
        /// The limit in bytes.
        limit: u64,
    },
    /// The request names no Open Inference Protocol endpoint or rpc.
    #[error("not an Open Inference Protocol endpoint: {0}")]
    NoEndpoint(String),
    /// The upstream's answer could not be translated back.
    #[error("untranslatable upstream response: {0}")]
    BadUpstream(String),
    /// The upstream answered with an error status, passed on to the caller.
    #[error("{message}")]
    Upstream {
        /// gRPC status code.
        code: u32,
        /// HTTP status.
        http: StatusCode,
        /// The upstream's message.
        message: String,
    },
}

/// gRPC status codes used here.
pub mod code {
    /// OK.
    pub const OK: u32 = 0;
    /// UNKNOWN.
    pub const UNKNOWN: u32 = 2;
    /// INVALID_ARGUMENT.
    pub const INVALID_ARGUMENT: u32 = 3;
    /// DEADLINE_EXCEEDED.
    pub const DEADLINE_EXCEEDED: u32 = 4;
    /// NOT_FOUND.
    pub const NOT_FOUND: u32 = 5;
    /// ALREADY_EXISTS.
    pub const ALREADY_EXISTS: u32 = 6;
    /// PERMISSION_DENIED.
    pub const PERMISSION_DENIED: u32 = 7;
    /// RESOURCE_EXHAUSTED.
    pub const RESOURCE_EXHAUSTED: u32 = 8;
    /// UNIMPLEMENTED.
    pub const UNIMPLEMENTED: u32 = 12;
    /// INTERNAL.
    pub const INTERNAL: u32 = 13;
    /// UNAVAILABLE.
    pub const UNAVAILABLE: u32 = 14;
    /// UNAUTHENTICATED.
    pub const UNAUTHENTICATED: u32 = 16;
}

/// The HTTP status a REST caller gets for a gRPC status code (the table).
pub fn http_for_grpc(grpc: u32) -> StatusCode {
    match grpc {
        code::OK => StatusCode::OK,
        code::INVALID_ARGUMENT => StatusCode::BAD_REQUEST,
        code::NOT_FOUND => StatusCode::NOT_FOUND,
        code::UNAVAILABLE => StatusCode::SERVICE_UNAVAILABLE,
        code::DEADLINE_EXCEEDED => StatusCode::GATEWAY_TIMEOUT,
        code::RESOURCE_EXHAUSTED => StatusCode::TOO_MANY_REQUESTS,
        code::UNIMPLEMENTED => StatusCode::NOT_IMPLEMENTED,
        code::PERMISSION_DENIED => StatusCode::FORBIDDEN,
        code::UNAUTHENTICATED => StatusCode::UNAUTHORIZED,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

/// The gRPC code a gRPC caller gets for an upstream HTTP status (the inverse table).
pub fn grpc_for_http(status: StatusCode) -> u32 {
    match status.as_u16() {
        200..=299 => code::OK,
        400 | 422 => code::INVALID_ARGUMENT,
        401 => code::UNAUTHENTICATED,
        403 => code::PERMISSION_DENIED,
        404 => code::NOT_FOUND,
        409 => code::ALREADY_EXISTS,
        413 | 429 => code::RESOURCE_EXHAUSTED,
        501 => code::UNIMPLEMENTED,
        502..=503 => code::UNAVAILABLE,
        504 => code::DEADLINE_EXCEEDED,
        500 => code::INTERNAL,
        _ => code::UNKNOWN,
    }
}

// === impl TranslateError ===

impl TranslateError {
    /// The HTTP status a REST caller gets.
    pub fn http_status(&self) -> StatusCode {
        match self {
            TranslateError::BadRequest(_) => StatusCode::BAD_REQUEST,
            TranslateError::TooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            TranslateError::NoEndpoint(_) => StatusCode::NOT_FOUND,
            TranslateError::BadUpstream(_) => StatusCode::BAD_GATEWAY,
            TranslateError::Upstream { http, .. } => *http,
        }
    }

    /// The gRPC code a gRPC caller gets.
    pub fn grpc_code(&self) -> u32 {
        match self {
            TranslateError::BadRequest(_) => code::INVALID_ARGUMENT,
            TranslateError::TooLarge { .. } => code::RESOURCE_EXHAUSTED,
            TranslateError::NoEndpoint(_) => code::UNIMPLEMENTED,
            TranslateError::BadUpstream(_) => code::INTERNAL,
            TranslateError::Upstream { code, .. } => *code,
        }
    }
}
