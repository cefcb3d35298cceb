//! Routes with `translate`: the request goes through the OIP translator before forwarding
//! (retries and timeouts then apply to the translated request) and the upstream's answer
//! through it on the way back. The filters themselves live in `ferry_filters::translate` (OIP)
//! and `ferry_filters::transcode` (any service from a descriptor set).

use ferry_config::{Translate, TranslateDirection};
use ferry_filters::transcode::{Pending as TranscodePending, Transcoder};
use ferry_filters::translate::{
    Direction, MaxDecodedBytes, Pending, TranslateSettings, Translator, UpstreamBinary,
};
use http::{Request, Response};
use hyper::body::Incoming;

use http_body_util::BodyExt;

use super::attempt;
use super::tensor_check::Route;
use crate::body::{BoxError, ProxyBody};

/// The translator for a route's config, built once per config load.
pub(crate) fn translator(config: Option<&Translate>) -> Option<Translator> {
    config.filter(|t| t.descriptor.is_none()).map(|t| {
        Translator::new(TranslateSettings {
            direction: match t.direction {
                TranslateDirection::RestToGrpc => Direction::RestToGrpc,
                TranslateDirection::GrpcToRest => Direction::GrpcToRest,
            },
            max_decoded_bytes: MaxDecodedBytes(t.max_decoded_bytes),
            upstream_binary: match t.upstream_binary {
                ferry_config::UpstreamBinary::On => UpstreamBinary::On,
                ferry_config::UpstreamBinary::Off => UpstreamBinary::Off,
                ferry_config::UpstreamBinary::Auto => UpstreamBinary::Auto,
            },
        })
    })
}

/// Translates the request; `Err` is the caller's answer (bad input, the upstream is skipped).
/// With `at`, a gRPC → REST route with `upstream_binary: auto` may first probe the upstream's
/// server metadata along the route's path (cluster choice, timeouts, retries).
pub(super) async fn request(
    translator: &Translator,
    at: Option<&Route<'_>>,
    parts: http::request::Parts,
    body: ProxyBody,
) -> Result<(http::request::Parts, ProxyBody, Pending), Response<ProxyBody>> {
    let req = Request::from_parts(parts, body);
    let translated = match at {
        Some(at) => {
            translator
                .request_probing(req, |probe| send_untranslated(at, probe))
                .await
        }
        None => translator.request(req).await,
    };
    let (req, pending) = translated.inspect_err(|answer| {
        tracing::debug!(status = %answer.status(), "translation refused the request");
    })?;
    let (parts, body) = req.into_parts();
    Ok((parts, body, pending))
}

/// Sends a request the route's own upstream understands as is (the probe is already REST).
async fn send_untranslated(
    at: &Route<'_>,
    req: Request<ProxyBody>,
) -> Result<Response<ProxyBody>, BoxError> {
    let (parts, body) = req.into_parts();
    let attempt = attempt::Attempts {
        route: at.route,
        listener: at.listener,
        grpc: false,
        upgrade: false,
        authority: at.authority,
        metrics: at.metrics,
    };
    let resp = attempt
        .run(parts, body, &mut None)
        .await
        .map_err(|f| BoxError::from(f.to_string()))?;
    Ok(resp.map(|b| b.map_err(Into::into).boxed_unsync()))
}

/// Translates the upstream's response for the caller.
pub(super) async fn response(pending: Pending, resp: Response<Incoming>) -> Response<ProxyBody> {
    pending.response(resp).await
}

/// Transcodes the request when a binding matches; otherwise it comes back untouched (plain
/// gRPC callers share the route). `Err` is the caller's answer.
pub(super) async fn transcode(
    transcoder: &Transcoder,
    parts: http::request::Parts,
    body: ProxyBody,
) -> Result<(http::request::Parts, ProxyBody, Option<TranscodePending>), Response<ProxyBody>> {
    match transcoder.request(Request::from_parts(parts, body)) {
        Err(untouched) => {
            let (parts, body) = untouched.into_parts();
            Ok((parts, body, None))
        }
        Ok(translation) => {
            let (req, pending) = translation.await.inspect_err(|answer| {
                tracing::debug!(status = %answer.status(), "transcoding refused the request");
            })?;
            let (parts, body) = req.into_parts();
            Ok((parts, body, Some(pending)))
        }
    }
}

/// Maps the upstream's gRPC answer back to JSON for the REST caller.
pub(super) async fn transcode_response(
    pending: TranscodePending,
    resp: Response<Incoming>,
) -> Response<ProxyBody> {
    pending.response(resp).await
}
