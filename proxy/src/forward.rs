//! The request path: from a downstream request to a streamed upstream response.
//!
//! Order: snapshot the table → reject smuggling and oversized bodies → find the model (path,
//! then, only if a route looks at models, the first gRPC frame or the JSON prefix) → route →
//! direct response or forward with retries → response header edits. The handler never fails:
//! every error becomes the answer from [`crate::failure`].

mod attempt;
pub(crate) mod tensor_check;
pub(crate) mod translate;
mod tunnel;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use ferry_config::{Action, HeaderEdits};
use ferry_filters::model_name::{self, ModelRef};
use http::header::{
    CONTENT_LENGTH, CONTENT_TYPE, HOST, HeaderName, HeaderValue, TRANSFER_ENCODING,
};
use http::{HeaderMap, Method, Request, Response, StatusCode};
use http_body_util::BodyExt;
use hyper::body::Incoming;

use crate::access_log::AccessRecord;
use crate::body::{self, Peeked, ProxyBody};
use crate::failure::Failure;
use crate::headers::{self, X_REQUEST_ID};
use crate::metrics::{Name, RequestLabels, RouteLabels};
use crate::router::RequestView;
use crate::state::Shared;
use crate::table::{ListenerTable, RouteEntry};

pub use self::attempt::Forwarded;

/// Facts about the downstream connection.
#[derive(Debug)]
pub struct ConnInfo {
    /// Listener name.
    pub listener: Arc<str>,
    /// Client address.
    pub peer: SocketAddr,
    /// Framing verdicts of the connection's HTTP/1.1 request heads.
    pub framing: Arc<crate::listener::Verdicts>,
    /// The client address as forwarding headers spell it.
    pub client: headers::ClientAddr,
    /// `ferry_active_requests` of this listener.
    pub active_requests: prometheus_client::metrics::gauge::Gauge,
    /// Requests in flight on this connection, for its idle timer.
    pub activity: Arc<crate::listener::Activity>,
}

/// What the access log and metrics learn while a request is handled.
#[derive(Debug, Default)]
struct Outcome {
    route: Option<Arc<RouteEntry>>,
    model: Option<ModelRef>,
    forwarded: Option<Forwarded>,
}

/// Handles one request. Never fails.
pub async fn handle(
    shared: Arc<Shared>,
    conn: Arc<ConnInfo>,
    req: Request<Incoming>,
) -> Result<Response<ProxyBody>, std::convert::Infallible> {
    let start = Instant::now();
    // Held until the response body is done (or the request is abandoned), so the connection
    // counts as busy for its idle timer.
    let active = conn.activity.begin();
    let grpc = headers::is_grpc(req.headers());
    let method = req.method().clone();
    let path = req.uri().path().to_owned();
    let request_id = req
        .headers()
        .get(&X_REQUEST_ID)
        .cloned()
        .unwrap_or_else(headers::new_request_id);
    let table = shared.table.load_full();
    let mut outcome = Outcome::default();
    let result = match table.listeners.get(&*conn.listener) {
        Some(listener) => {
            route_and_forward(
                &shared.metrics,
                listener,
                &conn,
                req,
                &request_id,
                &mut outcome,
            )
            .await
        }
        // The listener was removed by a reload while this connection was open.
        None => Err(Failure::Unavailable {
            cluster: String::new(),
            reason: "listener removed by reload".into(),
        }),
    };
    let mut resp = match result {
        Ok(resp) => resp,
        Err(failure) => {
            tracing::debug!(%failure, reason = failure.reason(), "answered by ferry");
            failure.into_response(grpc)
        }
    };
    resp.headers_mut().insert(X_REQUEST_ID.clone(), request_id);
    record(&shared, &conn, &method, path, &resp, start, outcome);
    let gauge = conn.active_requests.clone();
    Ok(resp.map(|b| body::track(b, gauge, active)))
}

async fn route_and_forward(
    metrics: &crate::metrics::Metrics,
    listener: &ListenerTable,
    conn: &ConnInfo,
    req: Request<Incoming>,
    request_id: &HeaderValue,
    outcome: &mut Outcome,
) -> Result<Response<ProxyBody>, Failure> {
    if matches!(
        req.version(),
        http::Version::HTTP_11 | http::Version::HTTP_10
    ) && let Some(reason) = conn.framing.next_request()
    {
        return Err(Failure::AmbiguousFraming(reason));
    }
    check_framing(req.headers())?;
    let (mut parts, incoming) = req.into_parts();
    parts
        .headers
        .insert(X_REQUEST_ID.clone(), request_id.clone());
    let mut body: ProxyBody = incoming.map_err(Into::into).boxed_unsync();
    if let Some(limit) = listener.limits.max_request_body_bytes {
        let declared = parts
            .headers
            .get(CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if declared.is_some_and(|n| n > limit) {
            return Err(Failure::BodyTooLarge { limit });
        }
        body = body::limit(body, limit);
    }

    let path = parts.uri.path().to_owned();
    let mut model = model_name::from_oip_path(&path);
    // OIP gRPC calls name their model in the first message, which arrives with the headers,
    // so reading it costs no extra wait and lets logs and metrics name the model.
    let oip_grpc = model_name::is_oip_grpc_model_method(&path) && headers::is_grpc(&parts.headers);
    if model.is_none() && (listener.router.uses_model() || oip_grpc) {
        let (found, replay) =
            sniff_model(&parts, body, listener.limits.model_sniff_bytes as usize).await?;
        model = found;
        body = replay;
    }
    outcome.model = model.clone();

    let authority = authority_of(&parts);
    let route = {
        let view = RequestView {
            method: &parts.method,
            authority: authority.as_deref(),
            path: &path,
            headers: &parts.headers,
            model: model.as_ref(),
        };
        listener.router.route(&view).cloned()
    };
    let Some(route) = route else {
        return Err(Failure::NoRoute {
            method: parts.method.to_string(),
            path,
        });
    };
    outcome.route = Some(route.clone());

    if let Action::DirectResponse(direct) = &route.config.action {
        let mut resp = Response::new(body::full(direct.body.clone()));
        *resp.status_mut() = StatusCode::from_u16(direct.status).unwrap_or(StatusCode::OK);
        if let Ok(ct) = HeaderValue::from_str(&direct.content_type) {
            resp.headers_mut().insert(CONTENT_TYPE, ct);
        }
        edit_headers(resp.headers_mut(), &route.config.response_headers);
        return Ok(resp);
    }

    let upgrade = headers::is_upgrade(&parts.headers);
    let on_upgrade = parts.extensions.remove::<hyper::upgrade::OnUpgrade>();
    edit_headers(&mut parts.headers, &route.config.request_headers);
    if let Some(rewrite) = &route.config.prefix_rewrite {
        rewrite_prefix(&mut parts, &rewrite.from, &rewrite.to);
    }
    headers::strip_hop_by_hop(&mut parts.headers, upgrade);
    headers::append_forwarded(
        &mut parts.headers,
        &conn.client,
        "http",
        authority.as_deref(),
    );
    if !parts.headers.contains_key(HOST)
        && let Some(a) = authority
            .as_deref()
            .and_then(|a| HeaderValue::from_str(a).ok())
    {
        parts.headers.insert(HOST, a);
    }

    if let Some(validator) = &route.tensor_validator {
        let at = tensor_check::Route {
            route: &route,
            listener: &listener.name,
            authority: authority.as_deref(),
            metrics,
        };
        // The rare steps (validation, translation, transcoding) are boxed: their futures are
        // kilobytes, and inline they would make every request's future that big, which hyper
        // and tokio copy and allocate per request.
        match Box::pin(tensor_check::check(validator, at, parts, body)).await {
            Ok((p, b)) => (parts, body) = (p, b),
            Err(mut answer) => {
                edit_headers(answer.headers_mut(), &route.config.response_headers);
                return Ok(answer);
            }
        }
    }

    let mut pending = None;
    if let Some(translator) = &route.translator {
        let at = tensor_check::Route {
            route: &route,
            listener: &listener.name,
            authority: authority.as_deref(),
            metrics,
        };
        match Box::pin(translate::request(translator, Some(&at), parts, body)).await {
            Ok((p, b, t)) => {
                (parts, body, pending) = (p, b, Some(t));
            }
            Err(mut answer) => {
                edit_headers(answer.headers_mut(), &route.config.response_headers);
                return Ok(answer);
            }
        }
    }

    let mut transcoded = None;
    if let Some(transcoder) = &route.transcoder {
        match Box::pin(translate::transcode(transcoder, parts, body)).await {
            Ok((p, b, t)) => {
                (parts, body, transcoded) = (p, b, t);
            }
            Err(mut answer) => {
                edit_headers(answer.headers_mut(), &route.config.response_headers);
                return Ok(answer);
            }
        }
    }

    let attempt = attempt::Attempts {
        route: &route,
        listener: &listener.name,
        grpc: headers::is_grpc(&parts.headers),
        upgrade,
        authority: authority.as_deref(),
        metrics,
    };
    let resp = attempt.run(parts, body, &mut outcome.forwarded).await?;
    if let Some(pending) = transcoded {
        let mut resp = Box::pin(translate::transcode_response(pending, resp)).await;
        edit_headers(resp.headers_mut(), &route.config.response_headers);
        return Ok(resp);
    }
    if let Some(pending) = pending {
        let mut resp = Box::pin(translate::response(pending, resp)).await;
        edit_headers(resp.headers_mut(), &route.config.response_headers);
        return Ok(resp);
    }
    let (mut rparts, rbody) = resp.into_parts();
    let switching = rparts.status == StatusCode::SWITCHING_PROTOCOLS;
    headers::strip_hop_by_hop(&mut rparts.headers, switching);
    edit_headers(&mut rparts.headers, &route.config.response_headers);
    let mut resp = Response::from_parts(rparts, rbody.map_err(Into::into).boxed_unsync());
    if switching {
        tunnel::spawn(on_upgrade, &mut resp);
    }
    Ok(resp)
}

/// Rejects requests whose framing is ambiguous (request smuggling, RFC 9112 §6.3).
fn check_framing(headers: &HeaderMap) -> Result<(), Failure> {
    if headers.contains_key(TRANSFER_ENCODING) && headers.contains_key(CONTENT_LENGTH) {
        return Err(Failure::BadRequest(
            "both Content-Length and Transfer-Encoding are present".into(),
        ));
    }
    if headers.get_all(CONTENT_LENGTH).iter().count() > 1 {
        return Err(Failure::BadRequest("duplicate Content-Length".into()));
    }
    Ok(())
}

fn authority_of(parts: &http::request::Parts) -> Option<String> {
    parts
        .uri
        .authority()
        .map(|a| a.as_str().to_owned())
        .or_else(|| {
            parts
                .headers
                .get(HOST)
                .and_then(|h| h.to_str().ok())
                .map(str::to_owned)
        })
}

/// Reads just enough of the body to find the model: the first gRPC message of an OIP call, or
/// the JSON `model` member within `max` bytes. Every byte read is replayed upstream.
async fn sniff_model(
    parts: &http::request::Parts,
    body: ProxyBody,
    max: usize,
) -> Result<(Option<ModelRef>, ProxyBody), Failure> {
    let path = parts.uri.path();
    let grpc = headers::is_grpc(&parts.headers);
    let read_err = |e: body::BoxError| match e.downcast::<body::BodyTooLarge>() {
        Ok(too_large) => Failure::BodyTooLarge {
            limit: too_large.limit,
        },
        Err(e) => Failure::BadRequest(format!("reading request body: {e}")),
    };
    if grpc && model_name::is_oip_grpc_model_method(path) {
        let mut peeked = Peeked::read(body, max, |chunks, len| {
            let head = chunks.first().map(|c| &c[..]).unwrap_or_default();
            // Fields 1 and 2 come first; a few hundred bytes of a large first message suffice.
            let want = model_name::grpc_frame_len(head).map(|n| n.min(512));
            want.is_some_and(|n| len >= n)
        })
        .await
        .map_err(read_err)?;
        let head = peeked.head(max.min(peeked.len));
        return Ok((model_name::from_grpc_frame(&head), peeked.replay()));
    }
    let json_like = parts
        .headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_none_or(|ct| ct.contains("json"));
    if parts.method == Method::POST && json_like && !grpc {
        let mut found = None;
        let mut peeked = Peeked::read(body, max, |chunks, _| {
            found = if let [only] = chunks {
                model_name::from_json_prefix(only)
            } else {
                model_name::from_json_prefix(&chunks.concat())
            };
            found.is_some()
        })
        .await
        .map_err(read_err)?;
        if found.is_none() {
            found = model_name::from_json_prefix(&peeked.head(max));
        }
        return Ok((found, peeked.replay()));
    }
    Ok((None, body))
}

fn edit_headers(headers: &mut HeaderMap, edits: &HeaderEdits) {
    for name in &edits.remove {
        headers.remove(name.as_str());
    }
    for (name, value) in &edits.set {
        if let (Ok(n), Ok(v)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        ) {
            headers.insert(n, v);
        }
    }
    for (name, value) in &edits.add {
        if let (Ok(n), Ok(v)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        ) {
            headers.append(n, v);
        }
    }
}

fn rewrite_prefix(parts: &mut http::request::Parts, from: &str, to: &str) {
    let Some(pq) = parts.uri.path_and_query() else {
        return;
    };
    let Some(rest) = pq.path().strip_prefix(from) else {
        return;
    };
    let mut new = String::with_capacity(pq.as_str().len() + to.len());
    new.push_str(to);
    new.push_str(rest);
    if let Some(q) = pq.query() {
        new.push('?');
        new.push_str(q);
    }
    let mut uri = std::mem::take(&mut parts.uri).into_parts();
    uri.path_and_query = new.parse().ok().or(uri.path_and_query);
    parts.uri = http::Uri::from_parts(uri).unwrap_or_default();
}

fn record(
    shared: &Shared,
    conn: &ConnInfo,
    method: &Method,
    path: String,
    resp: &Response<ProxyBody>,
    start: Instant,
    outcome: Outcome,
) {
    let duration = start.elapsed();
    let empty = &shared.metrics.empty;
    let route_name = outcome.route.as_ref().map(|r| r.name.clone());
    let cluster = outcome.forwarded.as_ref().map(|f| f.cluster.clone());
    let m = &shared.metrics;
    match &outcome.route {
        Some(route) => route
            .requests
            .inc(cluster.as_ref(), resp.status().as_u16(), empty),
        None => {
            m.requests
                .get_or_create(&RequestLabels {
                    listener: Name(conn.listener.clone()),
                    route: Name(empty.clone()),
                    cluster: Name(cluster.clone().unwrap_or_else(|| empty.clone())),
                    model: Name(empty.clone()),
                    code: resp.status().as_u16(),
                })
                .inc();
        }
    }
    match &outcome.route {
        Some(route) => route.duration.observe(duration.as_secs_f64()),
        None => m
            .request_duration
            .get_or_create(&RouteLabels {
                listener: Name(conn.listener.clone()),
                route: Name(empty.clone()),
            })
            .observe(duration.as_secs_f64()),
    }
    if let Some(tx) = &shared.access_log {
        let (model, model_version) = match outcome.model {
            Some(m) => (Some(m.name), m.version),
            None => (None, None),
        };
        let _ = tx.try_send(AccessRecord {
            listener: conn.listener.clone(),
            route: route_name,
            model,
            model_version,
            cluster,
            endpoint: outcome.forwarded.as_ref().map(|f| f.endpoint),
            method: method.clone(),
            path,
            status: resp.status().as_u16(),
            duration,
            upstream_duration: outcome.forwarded.as_ref().map(|f| f.upstream_duration),
            attempts: outcome.forwarded.as_ref().map(|f| f.attempts).unwrap_or(0),
        });
    }
}
