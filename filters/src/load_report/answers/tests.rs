use std::convert::Infallible;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use tokio::sync::oneshot;
use tower::{Layer, Service, ServiceExt};

use super::*;
use crate::load_report::{MetricName, metric};

fn layer(report: bool, strip: bool) -> AnswerReportsLayer {
    AnswerReportsLayer::new(
        AnswerReports {
            report,
            strip,
            concurrency: None,
        },
        Arc::default(),
    )
    .unwrap()
}

/// An answer with these headers and trailers.
fn answer(headers: &[(&'static str, &'static str)], trailers: bool) -> Response<TranslateBody> {
    let mut t = HeaderMap::new();
    t.insert(HEADER_BIN, HeaderValue::from_static("AAAA"));
    let data = Full::new(Bytes::from_static(b"x")).map_err(|never| -> BoxError { match never {} });
    let body = if trailers {
        data.with_trailers(async move { Some(Ok(t)) })
            .boxed_unsync()
    } else {
        data.boxed_unsync()
    };
    let mut b = Response::builder();
    for (k, v) in headers {
        b = b.header(*k, *v);
    }
    b.body(body).unwrap()
}

fn in_flight(resp: &Response<TranslateBody>) -> Option<f64> {
    metric(resp.headers(), &MetricName::Named(IN_FLIGHT_METRIC.into()))
}

#[tokio::test]
async fn the_count_lives_in_the_callers_counter_across_layers() {
    // A reload builds a new layer over the route's kept counter: a request still out through
    // the old one is counted by the new one's reports.
    let counter = Arc::new(AtomicU64::new(0));
    let make = || {
        AnswerReportsLayer::new(
            AnswerReports {
                report: true,
                ..AnswerReports::default()
            },
            counter.clone(),
        )
        .unwrap()
        .layer(tower::service_fn(|_: Request<()>| async {
            Ok::<_, Infallible>(answer(&[], false))
        }))
    };
    let old = make().oneshot(Request::new(())).await.unwrap();
    let new = make().oneshot(Request::new(())).await.unwrap();
    assert_eq!(in_flight(&new), Some(1.0));
    drop(old);
    drop(new);
    assert_eq!(counter.load(Ordering::Relaxed), 0);
}

#[test]
fn a_layer_that_does_nothing_is_not_built() {
    assert!(AnswerReportsLayer::new(AnswerReports::default(), Arc::default()).is_none());
}

#[tokio::test]
async fn ferry_reports_the_other_requests_in_flight_until_their_bodies_end() {
    let l = layer(true, false);
    // The first answer's body stays open: that request is still in flight.
    let mut svc = l.layer(tower::service_fn(|_: Request<()>| async {
        Ok::<_, Infallible>(answer(&[], false))
    }));
    let first = svc
        .ready()
        .await
        .unwrap()
        .call(Request::new(()))
        .await
        .unwrap();
    assert_eq!(in_flight(&first), Some(0.0));
    let second = svc
        .ready()
        .await
        .unwrap()
        .call(Request::new(()))
        .await
        .unwrap();
    assert_eq!(in_flight(&second), Some(1.0));
    assert_eq!(
        metric(second.headers(), &MetricName::Named(QUEUED_METRIC.into())),
        Some(0.0)
    );
    drop(first);
    second.into_body().collect().await.unwrap();
    let third = svc
        .ready()
        .await
        .unwrap()
        .call(Request::new(()))
        .await
        .unwrap();
    assert_eq!(in_flight(&third), Some(0.0), "both earlier bodies are over");
}

/// The answer of a report layer in front of an upstream answering with `report`.
async fn reported_over(report: &'static str) -> Response<TranslateBody> {
    let svc = layer(true, false).layer(tower::service_fn(move |_: Request<()>| async move {
        Ok::<_, Infallible>(answer(&[(HEADER, report)], false))
    }));
    svc.oneshot(Request::new(())).await.unwrap()
}

#[tokio::test]
async fn ferry_merges_its_metrics_into_an_upstream_text_or_json_report() {
    let kv = MetricName::Named("kv_cache_usage_perc".into());
    let resp = reported_over("TEXT named_metrics.kv_cache_usage_perc=0.7").await;
    assert_eq!(metric(resp.headers(), &kv), Some(0.7));
    assert_eq!(in_flight(&resp), Some(0.0));

    // JSON: ferry's names join the upstream's in `named_metrics`, the rest is kept.
    let resp = reported_over(
        r#"JSON {"cpu_utilization": 0.5, "named_metrics": {"kv_cache_usage_perc": 0.25}}"#,
    )
    .await;
    assert_eq!(metric(resp.headers(), &kv), Some(0.25));
    assert_eq!(in_flight(&resp), Some(0.0));
    let cpu: MetricName = "cpu_utilization".parse().unwrap();
    assert_eq!(metric(resp.headers(), &cpu), Some(0.5));
    let queued = MetricName::Named(QUEUED_METRIC.into());
    assert_eq!(metric(resp.headers(), &queued), Some(0.0));

    // A JSON report without `named_metrics` gets one.
    let resp = reported_over(r#"JSON {"cpu_utilization": 0.5}"#).await;
    assert_eq!(in_flight(&resp), Some(0.0));
    assert_eq!(metric(resp.headers(), &cpu), Some(0.5));

    // One ferry cannot read is left as the upstream sent it.
    for unreadable in [
        "JSON {not json",
        "JSON [1, 2]",
        r#"JSON {"named_metrics": 3}"#,
        "CSV a=1",
    ] {
        let resp = reported_over(unreadable).await;
        assert_eq!(resp.headers()[HEADER], unreadable);
    }
}

#[tokio::test]
async fn strip_removes_upstream_reports_from_headers_and_trailers() {
    for report in [false, true] {
        let svc = layer(report, true).layer(tower::service_fn(|_: Request<()>| async {
            Ok::<_, Infallible>(answer(
                &[
                    (HEADER, "TEXT named_metrics.kv_cache_usage_perc=0.7"),
                    (HEADER_BIN, "AAAA"),
                ],
                true,
            ))
        }));
        let resp = svc.oneshot(Request::new(())).await.unwrap();
        assert!(!resp.headers().contains_key(HEADER_BIN));
        assert_eq!(
            metric(
                resp.headers(),
                &MetricName::Named("kv_cache_usage_perc".into())
            ),
            None
        );
        // With report, ferry's own is what remains.
        assert_eq!(in_flight(&resp).is_some(), report);
        let body = resp.into_body().collect().await.unwrap();
        assert!(!body.trailers().unwrap().contains_key(HEADER_BIN));
    }
}

#[tokio::test]
async fn queued_requests_of_the_same_model_are_reported() {
    use crate::limits::{ConcurrencyLayer, ConcurrencySettings, ConcurrencyState};
    let state = Arc::new(ConcurrencyState::new(ConcurrencySettings {
        max: 1,
        queue: 4,
        queue_timeout: std::time::Duration::from_secs(5),
        route_timeout: None,
        adaptive: false,
    }));
    let reports = AnswerReportsLayer::new(
        AnswerReports {
            report: true,
            strip: false,
            concurrency: Some(state.clone()),
        },
        Arc::default(),
    )
    .unwrap();
    let (release, released) = oneshot::channel::<()>();
    let released = Arc::new(std::sync::Mutex::new(Some(released)));
    let inner = tower::service_fn(move |_: Request<TranslateBody>| {
        let released = released.lock().unwrap().take();
        async move {
            // The first request holds the only slot until released.
            if let Some(r) = released {
                let _ = r.await;
            }
            Ok::<_, BoxError>(Response::new(
                Full::new(Bytes::from_static(b"ok"))
                    .map_err(|never| match never {})
                    .boxed_unsync(),
            ))
        }
    });
    let svc = reports.layer(ConcurrencyLayer::new(state.clone()).layer(inner));
    let req = || {
        let mut r = Request::new(
            Full::new(Bytes::new())
                .map_err(|n| match n {})
                .boxed_unsync(),
        );
        r.extensions_mut().insert(ModelRef {
            name: "m".into(),
            version: None,
        });
        r
    };
    let first = tokio::spawn(svc.clone().oneshot(req()));
    while state.stats().first().map(|s| s.in_flight) != Some(1) {
        tokio::task::yield_now().await;
    }
    let second = tokio::spawn(svc.clone().oneshot(req()));
    while state.queued("m") != 1 {
        tokio::task::yield_now().await;
    }
    // The first answers while the second waits for its slot: one other in flight, one queued.
    release.send(()).unwrap();
    let first = first.await.unwrap().unwrap();
    assert_eq!(
        in_flight(&first),
        Some(1.0),
        "the queued second one is in flight"
    );
    assert_eq!(
        metric(first.headers(), &MetricName::Named(QUEUED_METRIC.into())),
        Some(1.0)
    );
    // The slot is held until the first answer's body is over; then the second runs.
    drop(first);
    let second = second.await.unwrap().unwrap();
    assert_eq!(in_flight(&second), Some(0.0));
}
