//! Routes with `validate_tensors`: OIP infer requests are checked against the model's input
//! metadata before translation and forwarding, so a malformed request never reaches the model
//! server. Metadata requests go through this route's own path (translation, cluster choice,
//! retries), like the request they are for. The filter lives in `ferry_filters::tensor_check`.

use std::collections::HashMap;
use std::sync::Arc;

use ferry_config::{TensorMetadataSource, Translate, ValidateTensors};
use ferry_filters::tensor_check::{
    MaxCheckedBytes, MetadataRefresh, MetadataSource, ModelMetadata, TensorMetadata,
    TensorValidationSettings, TensorValidator,
};
use http::{Request, Response};
use http_body_util::BodyExt;

use super::{attempt, translate};
use crate::body::{BoxError, ProxyBody};
use crate::headers;
use crate::metrics::{Metrics, Name, RouteLabels};
use crate::table::RouteEntry;

/// The validator for a route's config, built once per config load. The body bound is the
/// route's translation limit when it translates, the translator's default otherwise.
pub(crate) fn validator(
    config: Option<&ValidateTensors>,
    translate: Option<&Translate>,
) -> Option<TensorValidator> {
    let config = config?;
    let source = match &config.source {
        TensorMetadataSource::Upstream { refresh } => {
            MetadataSource::Upstream(MetadataRefresh(*refresh))
        }
        TensorMetadataSource::Static(models) => {
            let models: HashMap<String, Arc<ModelMetadata>> = models
                .iter()
                .map(|m| {
                    let inputs = m
                        .inputs
                        .iter()
                        .map(|t| TensorMetadata {
                            name: t.name.clone(),
                            datatype: t.datatype.clone(),
                            shape: t.shape.clone(),
                        })
                        .collect();
                    (m.name.clone(), Arc::new(ModelMetadata { inputs }))
                })
                .collect();
            MetadataSource::Static(Arc::new(models))
        }
    };
    let max_checked_bytes = translate
        .map(|t| MaxCheckedBytes(t.max_decoded_bytes))
        .unwrap_or_default();
    Some(TensorValidator::new(TensorValidationSettings {
        source,
        max_checked_bytes,
    }))
}

/// What the metadata fetch needs to take the route's path.
pub(super) struct Route<'a> {
    pub(super) route: &'a Arc<RouteEntry>,
    pub(super) listener: &'a Arc<str>,
    pub(super) authority: Option<&'a str>,
    pub(super) metrics: &'a Metrics,
}

/// Checks the request; `Err` is the caller's answer (the upstream is skipped).
pub(super) async fn check(
    validator: &TensorValidator,
    at: Route<'_>,
    parts: http::request::Parts,
    body: ProxyBody,
) -> Result<(http::request::Parts, ProxyBody), Response<ProxyBody>> {
    let fetch = |probe: Request<ProxyBody>| fetch(&at, probe);
    let checked = validator
        .check(Request::from_parts(parts, body), fetch)
        .await
        .inspect_err(|answer| {
            tracing::debug!(status = %answer.status(), "tensor check refused the request");
        })?;
    if checked.fetch_failed {
        at.metrics
            .tensor_metadata_fetch_failures
            .get_or_create(&RouteLabels {
                listener: Name(at.listener.clone()),
                route: Name(at.route.name.clone()),
            })
            .inc();
    }
    Ok(checked.request.into_parts())
}

/// Sends a metadata request the way the route sends requests: translated if the route
/// translates, then through the cluster with the route's timeouts and retries.
async fn fetch(at: &Route<'_>, probe: Request<ProxyBody>) -> Result<Response<ProxyBody>, BoxError> {
    let (parts, body) = probe.into_parts();
    let (parts, body, pending) = match &at.route.translator {
        Some(t) => match translate::request(t, None, parts, body).await {
            Ok((p, b, pending)) => (p, b, Some(pending)),
            Err(answer) => return Ok(answer),
        },
        None => (parts, body, None),
    };
    let attempt = attempt::Attempts {
        route: at.route,
        listener: at.listener,
        grpc: headers::is_grpc(&parts.headers),
        upgrade: false,
        authority: at.authority,
        metrics: at.metrics,
    };
    let resp = attempt
        .run(parts, body, &mut None)
        .await
        .map_err(|f| BoxError::from(f.to_string()))?;
    Ok(match pending {
        Some(pending) => translate::response(pending, resp).await,
        None => resp.map(|b| b.map_err(Into::into).boxed_unsync()),
    })
}
