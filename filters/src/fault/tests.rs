use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use http::{HeaderName, Request, Response, StatusCode};
use tower::{Layer, Service, ServiceExt, service_fn};

use super::{FaultAbort, FaultAborted, FaultDelay, FaultKind, FaultLayer, FaultSettings};
use crate::failure::{Classify, render};

fn layer(delay: Option<f64>, abort: Option<f64>, header: Option<&'static str>) -> FaultLayer {
    FaultLayer::new(FaultSettings {
        delay: delay.map(|ratio| FaultDelay {
            fixed: Duration::from_millis(200),
            ratio,
        }),
        abort: abort.map(|ratio| FaultAbort {
            status: StatusCode::SERVICE_UNAVAILABLE,
            grpc_code: 14,
            ratio,
        }),
        header: header.map(HeaderName::from_static),
    })
}

fn ok() -> impl Service<Request<()>, Response = Response<()>, Error = Infallible, Future: Send>
+ Clone
+ Send
+ 'static {
    service_fn(|_req: Request<()>| async { Ok::<_, Infallible>(Response::new(())) })
}

#[tokio::test(start_paused = true)]
async fn a_delayed_request_waits_then_goes_through() {
    let svc = layer(Some(1.0), None, None).layer(ok());
    let start = tokio::time::Instant::now();
    let resp = svc.oneshot(Request::new(())).await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(start.elapsed(), Duration::from_millis(200));
}

#[tokio::test]
async fn an_aborted_request_never_reaches_the_inner_service() {
    let called = Arc::new(AtomicUsize::new(0));
    let c = called.clone();
    let inner = service_fn(move |_req: Request<()>| {
        c.fetch_add(1, Ordering::SeqCst);
        async { Ok::<_, Infallible>(Response::new(())) }
    });
    let err = layer(None, Some(1.0), None)
        .layer(inner)
        .oneshot(Request::new(()))
        .await
        .unwrap_err();
    let aborted = err.downcast_ref::<FaultAborted>().unwrap();
    assert_eq!(aborted.http_status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(aborted.reason(), "fault_abort");
    assert_eq!(called.load(Ordering::SeqCst), 0);
    // The renderer answers gRPC callers trailers-only with the configured code.
    let grpc = render(aborted, true);
    assert_eq!(grpc.status(), StatusCode::OK);
    assert_eq!(grpc.headers()["grpc-status"], "14");
    assert_eq!(
        render(aborted, false).status(),
        StatusCode::SERVICE_UNAVAILABLE
    );
}

#[tokio::test]
async fn only_requests_carrying_the_gating_header_are_candidates() {
    let mut svc = layer(None, Some(1.0), Some("x-ferry-fault")).layer(ok());
    let plain = svc.ready().await.unwrap().call(Request::new(())).await;
    assert!(plain.is_ok());
    let marked = Request::builder()
        .header("x-ferry-fault", "1")
        .body(())
        .unwrap();
    let err = svc.ready().await.unwrap().call(marked).await.unwrap_err();
    assert!(err.downcast_ref::<FaultAborted>().is_some());
}

#[tokio::test(start_paused = true)]
async fn shares_follow_the_percentages_and_every_fault_is_counted() {
    let delays = Arc::new(AtomicUsize::new(0));
    let aborts = Arc::new(AtomicUsize::new(0));
    let (d, a) = (delays.clone(), aborts.clone());
    let mut svc = layer(Some(0.1), Some(0.01), None)
        .on_fault(Arc::new(move |kind| {
            match kind {
                FaultKind::Delay => d.fetch_add(1, Ordering::SeqCst),
                FaultKind::Abort => a.fetch_add(1, Ordering::SeqCst),
            };
        }))
        .layer(ok());
    let n = 20_000usize;
    let mut failed = 0;
    for _ in 0..n {
        if svc
            .ready()
            .await
            .unwrap()
            .call(Request::new(()))
            .await
            .is_err()
        {
            failed += 1;
        }
    }
    let within = |count: usize, p: f64| {
        let mean = n as f64 * p;
        let sigma = (n as f64 * p * (1.0 - p)).sqrt();
        (count as f64 - mean).abs() <= 4.0 * sigma
    };
    let (delays, aborts) = (delays.load(Ordering::SeqCst), aborts.load(Ordering::SeqCst));
    assert!(within(delays, 0.1), "{delays} delays of {n}");
    assert!(within(aborts, 0.01), "{aborts} aborts of {n}");
    assert_eq!(failed, aborts);
}
