//! gRPC → REST with `upstream_binary: auto`: whether the REST upstream speaks the binary tensor
//! extension, learnt from its server metadata (`GET /v2`, `extensions` listing
//! `binary_tensor_data`, as Triton does; MLServer 1.7 lists none) and cached per route.
//!
//! A probe costs one extra round trip per [`PROBE_TTL`]; a failed probe (unreachable, an error
//! status, unreadable JSON) means JSON `data` for [`FAILED_PROBE_TTL`], which every OIP server
//! understands, so an outage of the metadata endpoint never fails inference.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::header::ACCEPT;
use http::{HeaderMap, HeaderValue, Method, Request, Response, Uri};
use http_body::Body;
use http_body_util::BodyExt;
use serde::Deserialize;

use super::collect::collect;
use super::{BoxError, ChunksBody, TranslateBody};

/// How long a probe's answer is trusted.
pub const PROBE_TTL: Duration = Duration::from_secs(60);

/// How long a failed probe's fallback (JSON) holds before the next probe.
pub const FAILED_PROBE_TTL: Duration = Duration::from_secs(5);

/// The extension name in server metadata.
const BINARY_EXTENSION: &str = "binary_tensor_data";

/// Server metadata is small; anything bigger is not an OIP server's answer.
const MAX_METADATA_BYTES: u64 = 64 * 1024;

/// Whether tensors go to a REST upstream as binary sections.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UpstreamBinary {
    /// Always (the upstream is known to support the extension).
    On,
    /// Never: JSON `data`.
    Off,
    /// Probe the upstream's server metadata and cache the answer.
    #[default]
    Auto,
}

/// The cached probe result of one route.
#[derive(Debug, Default)]
pub(crate) struct BinaryProbe {
    known: Mutex<Option<Known>>,
}

#[derive(Debug, Clone, Copy)]
struct Known {
    binary: bool,
    until: Instant,
}

#[derive(Deserialize)]
struct ServerMetadata {
    #[serde(default)]
    extensions: Vec<String>,
}

// === impl BinaryProbe ===

impl BinaryProbe {
    /// The cached answer, if still fresh.
    pub(crate) fn cached(&self, now: Instant) -> Option<bool> {
        // Never held across an await: get and set are synchronous.
        let known = self.known.lock().unwrap_or_else(|p| p.into_inner());
        known.filter(|k| now < k.until).map(|k| k.binary)
    }

    /// Records a probe: `None` for a failed one (JSON, retried sooner).
    pub(crate) fn store(&self, probed: Option<bool>, now: Instant) -> bool {
        let (binary, ttl) = match probed {
            Some(b) => (b, PROBE_TTL),
            None => (false, FAILED_PROBE_TTL),
        };
        let mut known = self.known.lock().unwrap_or_else(|p| p.into_inner());
        *known = Some(Known {
            binary,
            until: now + ttl,
        });
        binary
    }
}

/// `GET /v2` to the same upstream as `uri`, carrying the caller's headers that route it
/// (authority, authorization) but none that describe the gRPC body.
pub(crate) fn request(uri: &Uri, headers: &HeaderMap) -> Request<TranslateBody> {
    let mut req = Request::new(
        ChunksBody::default()
            .map_err(|never| match never {})
            .boxed_unsync(),
    );
    *req.method_mut() = Method::GET;
    let mut parts = uri.clone().into_parts();
    parts.path_and_query = Some(http::uri::PathAndQuery::from_static("/v2"));
    if let Ok(u) = Uri::from_parts(parts) {
        *req.uri_mut() = u;
    }
    let out = req.headers_mut();
    for (name, value) in headers {
        let n = name.as_str();
        let keep = !(n.starts_with("grpc-")
            || n.starts_with("content-")
            || matches!(n, "te" | "transfer-encoding" | "connection" | "accept"));
        if keep {
            out.append(name.clone(), value.clone());
        }
    }
    out.insert(ACCEPT, HeaderValue::from_static("application/json"));
    req
}

/// Whether a `GET /v2` answer lists the binary extension; `Err` for anything unreadable.
pub(crate) async fn read<B>(resp: Response<B>) -> Result<bool, String>
where
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    let (parts, body) = resp.into_parts();
    if !parts.status.is_success() {
        return Err(format!("server metadata answered {}", parts.status));
    }
    let body = body.map_err(Into::into).boxed_unsync();
    let (bytes, _) = collect(body, MAX_METADATA_BYTES)
        .await
        .map_err(|e| e.to_string())?;
    let meta: ServerMetadata =
        serde_json::from_slice(&bytes).map_err(|e| format!("unreadable server metadata: {e}"))?;
    Ok(meta.extensions.iter().any(|e| e == BINARY_EXTENSION))
}
