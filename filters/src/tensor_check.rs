//! Input tensor validation before the GPU hop: an Open Inference Protocol infer request whose
//! tensor names, datatypes or shapes do not match the model's metadata is answered by ferry,
//! and the model server never sees it.
//!
//! Place in the stack: after authorization and rate limiting, before translation (it checks
//! the protocol the caller speaks) and before timeouts and retries. Settings:
//! [`TensorValidationSettings`] — where metadata comes from ([`MetadataSource`]: static, or
//! fetched from the upstream and cached per model for a refresh interval) and a
//! [`MaxCheckedBytes`] bound on the body read.
//!
//! Only REST `POST /v2/models/{m}[/versions/{v}]/infer` (JSON or the binary tensor extension)
//! and gRPC `ModelInfer` are checked; everything else passes untouched without its body being
//! read. Only the tensors' names, datatypes and shapes are parsed, never their data.
//!
//! Failures: a mismatch → 400 `{"error": "input \"X\": expected datatype FP32, got INT64"}` /
//! INVALID_ARGUMENT with the same message; unreadable JSON or protobuf → 400 /
//! INVALID_ARGUMENT; a body over the bound → 413 / RESOURCE_EXHAUSTED. A failed metadata fetch
//! lets the request through unchecked (fail open; logged at warn and reported in
//! [`Checked::fetch_failed`] for the caller's metric): a metadata outage must not stop traffic
//! the model server itself may still accept.

mod cache;
mod compare;
mod fetch;
mod inspect;
mod layer;

#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response};
use http_body::Body;
use http_body_util::BodyExt;

use self::cache::MetadataCache;
use self::inspect::Inspected;
use crate::translate::{BoxError, TranslateBody, TranslateError};

pub use self::layer::{OnFetchFailure, TensorValidation, TensorValidationLayer};

/// Largest request body the check reads; over it: 413 / RESOURCE_EXHAUSTED.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MaxCheckedBytes(pub u64);

impl Default for MaxCheckedBytes {
    fn default() -> Self {
        MaxCheckedBytes(64 * 1024 * 1024)
    }
}

/// How long fetched metadata is trusted before it is fetched again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MetadataRefresh(pub Duration);

/// Where model metadata comes from.
#[derive(Debug, Clone)]
pub enum MetadataSource {
    /// Asked of the upstream (`GET /v2/models/{m}` or `ModelMetadata`), cached per model.
    Upstream(MetadataRefresh),
    /// Given up front, by model name; models not named are not checked.
    Static(Arc<HashMap<String, Arc<ModelMetadata>>>),
}

/// A route's tensor validation settings.
#[derive(Debug, Clone)]
pub struct TensorValidationSettings {
    /// Where metadata comes from.
    pub source: MetadataSource,
    /// Bound on the body read.
    pub max_checked_bytes: MaxCheckedBytes,
}

/// What a model expects.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ModelMetadata {
    /// The model's inputs.
    pub inputs: Vec<TensorMetadata>,
}

/// One expected input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorMetadata {
    /// Tensor name.
    pub name: String,
    /// OIP datatype spelling, e.g. `FP32`.
    pub datatype: String,
    /// Dimensions; `-1` = any.
    pub shape: Vec<i64>,
}

/// A request that passed the check (or was not checked), ready to forward.
#[derive(Debug)]
pub struct Checked {
    /// The request, its body replayed from what was read.
    pub request: Request<TranslateBody>,
    /// The metadata fetch failed and the request went through unchecked.
    pub fetch_failed: bool,
}

/// Checks requests for one route; cheap to clone (shares its metadata cache).
#[derive(Debug, Clone)]
pub struct TensorValidator {
    settings: Arc<TensorValidationSettings>,
    cache: Arc<MetadataCache>,
}

// === impl TensorValidator ===

impl TensorValidator {
    /// A validator with these settings and an empty cache.
    pub fn new(settings: TensorValidationSettings) -> Self {
        TensorValidator {
            settings: Arc::new(settings),
            cache: Arc::new(MetadataCache::default()),
        }
    }

    /// Checks `req`. `fetch` sends a metadata request (in the caller's protocol) through the
    /// route's own upstream path and is called only when upstream metadata is needed and not
    /// cached. `Err` is why the request is refused: the upstream is not called.
    pub async fn check<B, F, Fut, RB>(
        &self,
        req: Request<B>,
        fetch: F,
    ) -> Result<Checked, TranslateError>
    where
        B: Body<Data = Bytes> + Send + 'static,
        B::Error: Into<BoxError>,
        F: FnOnce(Request<TranslateBody>) -> Fut,
        Fut: Future<Output = Result<Response<RB>, BoxError>>,
        RB: Body<Data = Bytes> + Send + 'static,
        RB::Error: Into<BoxError>,
    {
        let req = req.map(|b| b.map_err(Into::into).boxed_unsync());
        let grpc = crate::failure::is_grpc(req.headers());
        let limit = self.settings.max_checked_bytes.0;
        let (req, infer) = match inspect::inspect(req, limit).await? {
            Inspected::Pass(req) => {
                return Ok(Checked {
                    request: req,
                    fetch_failed: false,
                });
            }
            Inspected::Infer(req, infer) => (req, infer),
        };
        let (meta, fetch_failed) = match &self.settings.source {
            MetadataSource::Static(models) => (models.get(&infer.model).cloned(), false),
            MetadataSource::Upstream(refresh) => {
                let key = (infer.model.clone(), infer.version.clone());
                match self.cache.get(&key, refresh.0) {
                    Some(cached) => (cached, false),
                    None => {
                        let probe = fetch::request(req.uri(), req.headers(), &key.0, &key.1, grpc);
                        let got = match fetch(probe).await {
                            Ok(resp) => fetch::response(resp, grpc).await,
                            Err(e) => Err(e.to_string()),
                        };
                        let got = got.map(Arc::new).inspect_err(|e| {
                            tracing::warn!(model = %key.0, error = %e,
                                "model metadata fetch failed; tensors not checked");
                        });
                        self.cache.put(key, got.as_ref().ok().cloned());
                        let failed = got.is_err();
                        (got.ok(), failed)
                    }
                }
            }
        };
        if let Some(meta) = meta {
            compare::check(&infer.model, &meta, &infer.inputs)
                .map_err(TranslateError::BadRequest)?;
        }
        Ok(Checked {
            request: req,
            fetch_failed,
        })
    }
}
