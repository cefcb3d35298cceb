//! Generic REST → gRPC transcoding for any service in a protobuf `FileDescriptorSet`, driven by
//! its `google.api.http` annotations (what Envoy's gRPC-JSON transcoder and grpc-gateway do).
//!
//! Place in the stack: where the OIP translator sits (after authorization and limits, before
//! timeouts and retries). Settings: [`TranscodeSettings`] — unknown JSON fields and query
//! parameters rejected or ignored, server streams as NDJSON or SSE, a body limit, and an
//! optional list of services to expose. The table is built once per descriptor load
//! ([`Transcoder::from_descriptor_set`]) and indexed by HTTP method and first literal segment.
//!
//! A request no rule matches, or one that is already gRPC, passes through untouched, so plain
//! gRPC callers share the route. Failures answer `{"error": "<message>", "code": <grpc code>}`:
//! bad JSON, unknown field or bad path/query value 400; body over the limit 413; client or
//! bidi streaming methods 501; upstream statuses map by [`http_status_for`]. A server stream
//! that fails after its first message ends with that error object as its last event.

mod error;
mod layer;
mod request;
mod response;
mod rules;
mod service;
mod stream;
mod template;

#[cfg(test)]
mod tests;

pub use self::error::{LoadError, TemplateError, TranscodeError, http_status_for};
pub use self::layer::{Transcode, TranscodeLayer};
pub use self::response::StreamFormat;
pub use self::service::{Pending, Transcoded, Transcoder};

/// A route's transcoding settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TranscodeSettings {
    /// Unknown JSON fields and query parameters: 400 naming the field (`true`) or ignored.
    pub reject_unknown_fields: bool,
    /// How server streams are written out.
    pub streaming: StreamFormat,
    /// Largest request body, and largest single response message, in bytes.
    pub max_body_bytes: u64,
    /// Full names of the services to expose; empty = every service in the set.
    pub services: Vec<String>,
}

impl Default for TranscodeSettings {
    fn default() -> Self {
        TranscodeSettings {
            reject_unknown_fields: true,
            streaming: StreamFormat::Ndjson,
            max_body_bytes: 4 * 1024 * 1024,
            services: Vec::new(),
        }
    }
}

/// Path-template parsing and matching, public for the fuzz target and benches.
pub mod templates {
    /// Parses `text` and, when it parses, matches `path` against it; returns the captures.
    pub fn parse_and_match(text: &str, path: &str) -> Option<Vec<(Vec<String>, String)>> {
        let t = super::template::Template::parse(text).ok()?;
        let rest = path.strip_prefix('/')?;
        let (rest, verb) = super::template::split_verb(rest);
        let segs: Vec<&str> = rest.split('/').collect();
        t.matches(&segs, verb)
    }
}
