//! Why the demo model server refused a request, and how each reason maps to an HTTP status
//! and a gRPC code (the OIP REST ⇄ gRPC error table).

use http::StatusCode;

use crate::grpc_frame::{Code, FrameError};

/// A request the model server could not answer with a result.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// No model of that name is loaded.
    #[error("model '{0}' is not found")]
    ModelNotFound(String),
    /// The model exists but not in that version.
    #[error("model '{name}' has no version '{version}'")]
    VersionNotFound {
        /// Model name.
        name: String,
        /// Requested version.
        version: String,
    },
    /// No REST endpoint or rpc at this path.
    #[error("no endpoint for {method} {path}")]
    NoEndpoint {
        /// Request method.
        method: http::Method,
        /// Request path.
        path: String,
    },
    /// The body is not valid JSON or does not have the OIP shape.
    #[error("malformed JSON body: {0}")]
    BadJson(#[from] serde_json::Error),
    /// The gRPC body is not one well-formed message.
    #[error(transparent)]
    BadFrame(#[from] FrameError),
    /// The gRPC message is not valid protobuf for the rpc.
    #[error("malformed protobuf message: {0}")]
    BadProtobuf(#[from] prost::DecodeError),
    /// A tensor is missing, has the wrong type or shape, or its data does not fit.
    #[error("tensor '{tensor}': {fault}")]
    BadTensor {
        /// Tensor name.
        tensor: String,
        /// What is wrong with it.
        fault: String,
    },
    /// A request-level fault that is not about one tensor.
    #[error("{0}")]
    BadRequest(String),
    /// The body is over the server's limit.
    #[error("request body is larger than {limit} bytes")]
    BodyTooLarge {
        /// The limit in bytes.
        limit: usize,
    },
    /// Reading the body from the connection failed.
    #[error("reading the request body failed: {0}")]
    Body(#[source] hyper::Error),
}

// === impl ServeError ===

impl ServeError {
    /// Shorthand for [`ServeError::BadTensor`].
    pub fn tensor(tensor: &str, fault: impl Into<String>) -> Self {
        ServeError::BadTensor {
            tensor: tensor.to_owned(),
            fault: fault.into(),
        }
    }

    /// The HTTP status a REST caller gets.
    pub fn http_status(&self) -> StatusCode {
        match self {
            ServeError::ModelNotFound(_)
            | ServeError::VersionNotFound { .. }
            | ServeError::NoEndpoint { .. } => StatusCode::NOT_FOUND,
            ServeError::BadJson(_)
            | ServeError::BadFrame(_)
            | ServeError::BadProtobuf(_)
            | ServeError::BadTensor { .. }
            | ServeError::BadRequest(_)
            | ServeError::Body(_) => StatusCode::BAD_REQUEST,
            ServeError::BodyTooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
        }
    }

    /// The gRPC status a gRPC caller gets.
    pub fn grpc_code(&self) -> Code {
        match self {
            ServeError::ModelNotFound(_) | ServeError::VersionNotFound { .. } => Code::NotFound,
            ServeError::NoEndpoint { .. } => Code::Unimplemented,
            ServeError::BadFrame(FrameError::Compressed) => Code::Unimplemented,
            ServeError::BadJson(_)
            | ServeError::BadFrame(_)
            | ServeError::BadProtobuf(_)
            | ServeError::BadTensor { .. }
            | ServeError::BadRequest(_) => Code::InvalidArgument,
            ServeError::BodyTooLarge { .. } => Code::ResourceExhausted,
            ServeError::Body(_) => Code::Internal,
        }
    }
}
