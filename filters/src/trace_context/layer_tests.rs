//! The trace layer alone over a plain tower service: what a sampled hop records, what an
//! unsampled one writes upstream, and the ratio sampler.

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use opentelemetry::trace::SpanKind;
use opentelemetry_sdk::trace::SpanData;
use tower::{Service, ServiceExt};

use super::*;
use crate::translate::{BoxError, TranslateBody};

#[derive(Debug, Default)]
struct Collect(Mutex<Vec<SpanData>>);

impl SpanSink for Collect {
    fn export(&self, hop: &KeptHop<'_>) {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend(hop.to_span_data());
    }
}

fn body(s: &'static str) -> TranslateBody {
    Full::new(Bytes::from_static(s.as_bytes()))
        .map_err(|e| match e {})
        .boxed_unsync()
}

/// A service answering `status` and noting the `traceparent` it was sent.
fn upstream(
    status: StatusCode,
    seen: Arc<Mutex<Vec<Option<String>>>>,
) -> impl Service<
    Request<TranslateBody>,
    Response = Response<TranslateBody>,
    Error = BoxError,
    Future: Send,
> + Clone {
    tower::service_fn(move |req: Request<TranslateBody>| {
        let seen = seen.clone();
        async move {
            seen.lock().unwrap_or_else(|p| p.into_inner()).push(
                req.headers()
                    .get("traceparent")
                    .map(|v| v.to_str().unwrap_or_default().to_owned()),
            );
            // A recorded hop reaches the upstream in the extensions, for attempt spans.
            if req.extensions().get::<Arc<HopTrace>>().is_some() {
                assert!(req.headers().contains_key("traceparent"));
            }
            let mut resp = Response::new(body("data: a\n\ndata: b\n\n"));
            *resp.status_mut() = status;
            resp.headers_mut().insert(
                http::header::CONTENT_TYPE,
                http::HeaderValue::from_static("text/event-stream"),
            );
            Ok::<_, BoxError>(resp)
        }
    })
}

fn settings(ratio: f64, tail: TailRules, sink: Arc<Collect>) -> TraceSettings {
    TraceSettings {
        propagation: Arc::from([Propagation::W3c]),
        ratio,
        tail,
        sink,
        attributes: Arc::new(crate::trace_context::FixedAttributes::new(vec![
            opentelemetry::KeyValue::new("ferry.route", "r"),
        ])),
        names: Some(crate::trace_context::SpanNames::new("r")),
        on_trace: None,
        classifiers: &[crate::failure::classify_filters],
        attempts_inject: false,
    }
}

async fn call(
    layer: &TraceLayer,
    inner: impl Service<Request<TranslateBody>, Response = Response<TranslateBody>, Error = BoxError>,
    traceparent: Option<&str>,
) -> StatusCode {
    let mut svc = tower::Layer::layer(layer, inner);
    let mut b = Request::builder()
        .method("POST")
        .uri("/v1/chat/completions");
    if let Some(tp) = traceparent {
        b = b.header("traceparent", tp);
    }
    let req = b.body(body("{}")).unwrap_or_default();
    let resp = svc.ready().await.ok().map(|s| s.call(req));
    let resp = match resp {
        Some(f) => f.await.ok(),
        None => None,
    };
    let resp = resp.unwrap_or_default();
    let status = resp.status();
    let _ = resp.into_body().collect().await;
    status
}

#[tokio::test]
async fn a_sampled_request_records_one_server_span_with_stream_facts() {
    let sink = Arc::new(Collect::default());
    let layer = TraceLayer::new(settings(1.0, TailRules::default(), sink.clone()));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    assert_eq!(
        call(&layer, upstream(StatusCode::OK, seen.clone()), Some(tp)).await,
        StatusCode::OK
    );
    let spans = sink.0.lock().unwrap_or_else(|p| p.into_inner()).clone();
    assert_eq!(spans.len(), 1, "{spans:#?}");
    let server = &spans[0];
    assert_eq!(server.span_kind, SpanKind::Server);
    assert_eq!(server.name, "POST r");
    let attr = |k: &str| {
        server
            .attributes
            .iter()
            .find(|kv| kv.key.as_str() == k)
            .map(|kv| kv.value.as_str().into_owned())
    };
    assert_eq!(attr("ferry.stream.events").as_deref(), Some("2"));
    assert_eq!(attr("gen_ai.operation.name").as_deref(), Some("chat"));
    assert_eq!(
        attr("gen_ai.request.model").as_deref(),
        None,
        "no model read"
    );
    assert_eq!(attr("http.response.status_code").as_deref(), Some("200"));
    let names: Vec<_> = server.events.iter().map(|e| e.name.to_string()).collect();
    assert_eq!(
        names,
        [
            "response.headers",
            "response.first_byte",
            "stream.first_message"
        ]
    );
    // The upstream's parent is this hop's span.
    let sent = seen.lock().unwrap_or_else(|p| p.into_inner())[0]
        .clone()
        .unwrap_or_default();
    assert_eq!(
        sent,
        format!(
            "00-4bf92f3577b34da6a3ce929d0e0e4736-{}-01",
            server.span_context.span_id()
        )
    );
}

#[tokio::test]
async fn an_unsampled_request_records_nothing_and_a_failure_is_kept_when_asked() {
    let sink = Arc::new(Collect::default());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let plain = TraceLayer::new(settings(0.0, TailRules::default(), sink.clone()));
    call(
        &plain,
        upstream(StatusCode::BAD_GATEWAY, seen.clone()),
        None,
    )
    .await;
    assert!(sink.0.lock().unwrap_or_else(|p| p.into_inner()).is_empty());
    let sent = seen.lock().unwrap_or_else(|p| p.into_inner())[0]
        .clone()
        .unwrap_or_default();
    assert!(sent.starts_with("00-") && sent.ends_with("-00"), "{sent}");

    let tail = TailRules {
        always_errors: true,
        slower_than: None,
    };
    let errors = TraceLayer::new(settings(0.0, tail, sink.clone()));
    call(&errors, upstream(StatusCode::OK, seen.clone()), None).await;
    assert!(sink.0.lock().unwrap_or_else(|p| p.into_inner()).is_empty());
    call(
        &errors,
        upstream(StatusCode::BAD_GATEWAY, seen.clone()),
        None,
    )
    .await;
    assert_eq!(sink.0.lock().unwrap_or_else(|p| p.into_inner()).len(), 1);
}

#[test]
fn the_ratio_sampler_is_deterministic_per_trace_and_close_to_its_ratio() {
    let ids: Vec<TraceId> = (0..20_000).map(|_| new_trace_id()).collect();
    for id in &ids[..100] {
        assert_eq!(ratio_sampled(*id, 0.3), ratio_sampled(*id, 0.3));
        assert!(ratio_sampled(*id, 1.0));
        assert!(!ratio_sampled(*id, 0.0));
    }
    let kept = ids.iter().filter(|id| ratio_sampled(**id, 0.1)).count();
    // 10 % of 20,000 is 2,000; six standard deviations (≈ 42 each) either side.
    assert!((1_750..=2_250).contains(&kept), "{kept}");
}
