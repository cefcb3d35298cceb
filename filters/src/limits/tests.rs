//! Buckets, the rate-limit layer and the concurrency layer, on tokio's paused clock.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use tokio::sync::Notify;
use tower::{Layer, Service, ServiceExt};

use super::*;
use crate::failure::{classify_filters, render_error};
use crate::translate::{BoxError, TranslateBody};

fn ok_body() -> TranslateBody {
    Full::new(Bytes::from_static(b"ok"))
        .map_err(|e| match e {})
        .boxed_unsync()
}

#[tokio::test(start_paused = true)]
async fn a_bucket_bursts_then_refills_at_its_rate() {
    let bucket = LocalBucket::new(2, Duration::from_secs(1), 2);
    let key = "k".to_owned();
    assert!(matches!(
        bucket.check(&key),
        Check::Allowed { remaining: 1, .. }
    ));
    assert!(matches!(
        bucket.check(&key),
        Check::Allowed { remaining: 0, .. }
    ));
    let Check::Limited { retry_after } = bucket.check(&key) else {
        panic!("third request admitted")
    };
    assert_eq!(retry_after, Duration::from_millis(500));
    tokio::time::advance(Duration::from_millis(500)).await;
    assert!(matches!(bucket.check(&key), Check::Allowed { .. }));
    assert!(matches!(bucket.check(&key), Check::Limited { .. }));
    // Another key has its own bucket.
    assert!(matches!(
        bucket.check(&"other".to_owned()),
        Check::Allowed { .. }
    ));
}

#[tokio::test(start_paused = true)]
async fn idle_keys_are_evicted() {
    let bucket = LocalBucket::new(10, Duration::from_secs(1), 10);
    for i in 0..10_000 {
        bucket.check(&format!("tenant-{i}"));
    }
    assert_eq!(bucket.len(), 10_000);
    tokio::time::advance(Duration::from_secs(2)).await;
    bucket.evict_idle();
    assert_eq!(bucket.len(), 0);
}

fn limit(name: &str, amount: u64, key: Vec<KeyPart>, mode: LimitMode) -> Limit {
    Limit {
        name: name.into(),
        key,
        amount,
        per: Duration::from_secs(1),
        mode,
        counter: Counter::Bucket(Arc::new(LocalBucket::new(
            amount,
            Duration::from_secs(1),
            amount,
        ))),
        tokens: None,
        on_failure: OnStoreFailure::Allow,
        overrides: Vec::new(),
    }
}

fn tenant(t: Option<&str>) -> Request<TranslateBody> {
    let mut b = Request::builder().uri("/v1/chat/completions");
    if let Some(t) = t {
        b = b.header("x-tenant", t);
    }
    b.body(ok_body()).unwrap()
}

async fn call<S>(svc: &mut S, req: Request<TranslateBody>) -> Response<TranslateBody>
where
    S: Service<Request<TranslateBody>, Response = Response<TranslateBody>, Error = BoxError>,
{
    match svc.ready().await.unwrap().call(req).await {
        Ok(r) => r,
        Err(e) => render_error(e.as_ref(), &[classify_filters], false),
    }
}

#[derive(Clone)]
struct Echo;

impl Service<Request<TranslateBody>> for Echo {
    type Response = Response<TranslateBody>;
    type Error = BoxError;
    type Future = std::future::Ready<Result<Response<TranslateBody>, BoxError>>;

    fn poll_ready(
        &mut self,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), BoxError>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, _: Request<TranslateBody>) -> Self::Future {
        std::future::ready(Ok(Response::new(ok_body())))
    }
}

fn echo() -> Echo {
    Echo
}

#[tokio::test(start_paused = true)]
async fn over_the_limit_is_429_with_the_headers_clients_read() {
    let header = KeyPart::Header(http::HeaderName::from_static("x-tenant"));
    let decisions = Arc::new(AtomicUsize::new(0));
    let seen = decisions.clone();
    let layer = RateLimitLayer::new(
        "llm".into(),
        vec![limit("per-tenant", 2, vec![header], LimitMode::Enforce)],
    )
    .on_decision(Arc::new(move |i, d| {
        assert_eq!(i, 0);
        if d == Decision::Limited {
            seen.fetch_add(1, Ordering::SeqCst);
        }
    }));
    let mut svc = layer.layer(echo());
    let first = call(&mut svc, tenant(Some("a"))).await;
    assert_eq!(first.status(), StatusCode::OK);
    assert_eq!(first.headers()["x-ratelimit-limit"], "2");
    assert_eq!(first.headers()["x-ratelimit-remaining"], "1");
    call(&mut svc, tenant(Some("a"))).await;
    let refused = call(&mut svc, tenant(Some("a"))).await;
    assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(refused.headers()["retry-after"], "1");
    assert_eq!(refused.headers()["x-ratelimit-remaining"], "0");
    let body = refused.into_body().collect().await.unwrap().to_bytes();
    let text = String::from_utf8_lossy(&body);
    assert!(text.contains("per-tenant"), "{text}");
    assert_eq!(decisions.load(Ordering::SeqCst), 1);
    // Another tenant is untouched; a missing header is its own key, not a bypass.
    assert_eq!(
        call(&mut svc, tenant(Some("b"))).await.status(),
        StatusCode::OK
    );
    assert_eq!(call(&mut svc, tenant(None)).await.status(), StatusCode::OK);
    assert_eq!(call(&mut svc, tenant(None)).await.status(), StatusCode::OK);
    assert_eq!(
        call(&mut svc, tenant(None)).await.status(),
        StatusCode::TOO_MANY_REQUESTS
    );
    // A window later, tenant a passes again.
    tokio::time::advance(Duration::from_secs(1)).await;
    assert_eq!(
        call(&mut svc, tenant(Some("a"))).await.status(),
        StatusCode::OK
    );
}

#[tokio::test(start_paused = true)]
async fn grpc_callers_get_resource_exhausted_and_shadow_limits_only_count() {
    let shadowed = Arc::new(AtomicUsize::new(0));
    let seen = shadowed.clone();
    let layer = RateLimitLayer::new(
        "r".into(),
        vec![
            limit("shadow", 1, Vec::new(), LimitMode::Shadow),
            limit("real", 2, Vec::new(), LimitMode::Enforce),
        ],
    )
    .on_decision(Arc::new(move |i, d| {
        if i == 0 && d == Decision::ShadowLimited {
            seen.fetch_add(1, Ordering::SeqCst);
        }
    }));
    let mut svc = layer.layer(echo());
    assert_eq!(call(&mut svc, tenant(None)).await.status(), StatusCode::OK);
    assert_eq!(call(&mut svc, tenant(None)).await.status(), StatusCode::OK);
    assert_eq!(shadowed.load(Ordering::SeqCst), 1);
    let err = svc
        .ready()
        .await
        .unwrap()
        .call(tenant(None))
        .await
        .unwrap_err();
    let grpc = render_error(err.as_ref(), &[classify_filters], true);
    assert_eq!(grpc.headers()["grpc-status"], "8");
    assert_eq!(grpc.headers()["retry-after"], "1");
}

#[tokio::test(start_paused = true)]
async fn overrides_give_matching_keys_their_own_amount() {
    let header = KeyPart::Header(http::HeaderName::from_static("x-tenant"));
    let mut l = limit("t", 1, vec![header.clone()], LimitMode::Enforce);
    l.overrides.push(LimitOverride {
        matches: vec![(header, "gold".into())],
        amount: 3,
        counter: Counter::Bucket(Arc::new(LocalBucket::new(3, Duration::from_secs(1), 3))),
    });
    let mut svc = RateLimitLayer::new("r".into(), vec![l]).layer(echo());
    for _ in 0..3 {
        let ok = call(&mut svc, tenant(Some("gold"))).await;
        assert_eq!(ok.status(), StatusCode::OK);
        assert_eq!(ok.headers()["x-ratelimit-limit"], "3");
    }
    assert_eq!(
        call(&mut svc, tenant(Some("gold"))).await.status(),
        StatusCode::TOO_MANY_REQUESTS
    );
    assert_eq!(
        call(&mut svc, tenant(Some("lead"))).await.status(),
        StatusCode::OK
    );
    assert_eq!(
        call(&mut svc, tenant(Some("lead"))).await.status(),
        StatusCode::TOO_MANY_REQUESTS
    );
}

/// An upstream that answers when told to, counting requests in flight.
#[derive(Clone)]
struct Gate {
    release: Arc<Notify>,
    in_flight: Arc<AtomicUsize>,
    peak: Arc<AtomicUsize>,
    order: Arc<std::sync::Mutex<Vec<String>>>,
}

impl Gate {
    fn new() -> Gate {
        Gate {
            release: Arc::new(Notify::new()),
            in_flight: Arc::new(AtomicUsize::new(0)),
            peak: Arc::new(AtomicUsize::new(0)),
            order: Arc::new(std::sync::Mutex::new(Vec::new())),
        }
    }
}

impl Service<Request<()>> for Gate {
    type Response = Response<TranslateBody>;
    type Error = BoxError;
    type Future = std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<Response<TranslateBody>, BoxError>> + Send>,
    >;

    fn poll_ready(
        &mut self,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), BoxError>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<()>) -> Self::Future {
        let gate = self.clone();
        Box::pin(async move {
            gate.order.lock().unwrap().push(req.uri().path().to_owned());
            let now = gate.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
            gate.peak.fetch_max(now, Ordering::SeqCst);
            gate.release.notified().await;
            gate.in_flight.fetch_sub(1, Ordering::SeqCst);
            Ok(Response::new(ok_body()))
        })
    }
}

fn settings(max: u32, queue: u32) -> ConcurrencySettings {
    ConcurrencySettings {
        max,
        queue,
        queue_timeout: Duration::from_secs(2),
        route_timeout: None,
        adaptive: false,
    }
}

fn at(path: &str) -> Request<()> {
    Request::builder().uri(path).body(()).unwrap()
}

#[tokio::test(start_paused = true)]
async fn in_flight_never_exceeds_max_and_the_queue_is_fifo() {
    let gate = Gate::new();
    let state = Arc::new(ConcurrencyState::new(settings(1, 2)));
    let svc = ConcurrencyLayer::new(state.clone()).layer(gate.clone());
    let mut tasks = Vec::new();
    for path in ["/a", "/b", "/c"] {
        let mut svc = svc.clone();
        tasks.push(tokio::spawn(async move {
            let resp = svc.ready().await.unwrap().call(at(path)).await?;
            resp.into_body().collect().await?;
            Ok::<_, BoxError>(())
        }));
        tokio::task::yield_now().await;
    }
    // One in flight, two queued; a fourth finds the queue full.
    assert_eq!(state.stats()[0].in_flight, 1);
    assert_eq!(state.stats()[0].queued, 2);
    let mut fourth = svc.clone();
    let full = fourth
        .ready()
        .await
        .unwrap()
        .call(at("/d"))
        .await
        .unwrap_err();
    let answer = render_error(full.as_ref(), &[classify_filters], false);
    assert_eq!(answer.status(), StatusCode::SERVICE_UNAVAILABLE);
    for _ in 0..3 {
        tokio::task::yield_now().await;
        gate.release.notify_one();
        tokio::task::yield_now().await;
    }
    for t in tasks {
        t.await.unwrap().unwrap();
    }
    assert_eq!(gate.peak.load(Ordering::SeqCst), 1);
    assert_eq!(*gate.order.lock().unwrap(), ["/a", "/b", "/c"]);
}

#[tokio::test(start_paused = true)]
async fn a_queued_request_times_out_and_a_short_deadline_is_refused_at_once() {
    let gate = Gate::new();
    let state = Arc::new(ConcurrencyState::new(settings(1, 4)));
    let svc = ConcurrencyLayer::new(state.clone()).layer(gate.clone());
    let mut holder = svc.clone();
    let held = tokio::spawn(async move { holder.ready().await.unwrap().call(at("/a")).await });
    tokio::task::yield_now().await;
    let mut waiter = svc.clone();
    let err = waiter
        .ready()
        .await
        .unwrap()
        .call(at("/b"))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("queue timeout"), "{err}");
    gate.release.notify_one();
    let resp = held.await.unwrap().unwrap();
    // The slot is held until the body ends: time passes, then the body is read.
    tokio::time::advance(Duration::from_secs(3)).await;
    resp.into_body().collect().await.unwrap();
    assert_eq!(state.stats()[0].in_flight, 0);
    // Slots are now known to be held ~3 s; a caller allowing 100 ms is refused at once.
    let mut holder = svc.clone();
    let _held = tokio::spawn(async move { holder.ready().await.unwrap().call(at("/c")).await });
    tokio::task::yield_now().await;
    let short = Request::builder()
        .uri("/d")
        .header("grpc-timeout", "100m")
        .body(())
        .unwrap();
    let mut caller = svc.clone();
    let started = tokio::time::Instant::now();
    let err = caller.ready().await.unwrap().call(short).await.unwrap_err();
    assert!(err.to_string().contains("deadline"), "{err}");
    assert_eq!(started.elapsed(), Duration::ZERO);
}

/// An upstream answering with a fixed body, recording the request bodies it got.
#[derive(Clone)]
struct Answers {
    body: &'static str,
    seen: Arc<std::sync::Mutex<Vec<Bytes>>>,
}

impl Service<Request<TranslateBody>> for Answers {
    type Response = Response<TranslateBody>;
    type Error = BoxError;
    type Future = std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<Response<TranslateBody>, BoxError>> + Send>,
    >;

    fn poll_ready(
        &mut self,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), BoxError>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<TranslateBody>) -> Self::Future {
        let this = self.clone();
        Box::pin(async move {
            let got = req.into_body().collect().await?.to_bytes();
            this.seen.lock().unwrap().push(got);
            let body = Full::new(Bytes::from_static(this.body.as_bytes()))
                .map_err(|e| match e {})
                .boxed_unsync();
            Ok(Response::new(body))
        })
    }
}

fn budget(store: Arc<dyn WindowStore>, tokens: u64, on_failure: OnStoreFailure) -> Limit {
    Limit {
        name: "tokens".into(),
        key: vec![KeyPart::Header(http::HeaderName::from_static("x-tenant"))],
        amount: tokens,
        per: Duration::from_secs(60),
        mode: LimitMode::Enforce,
        counter: Counter::Window(store),
        tokens: Some(TokenSettings {
            charge: Charge::Total,
            fallback: 7,
            request_usage: true,
        }),
        on_failure,
        overrides: Vec::new(),
    }
}

fn chat(body: &'static str) -> Request<TranslateBody> {
    Request::builder()
        .method("POST")
        .uri("/v1/chat/completions")
        .header("x-tenant", "a")
        .header("content-type", "application/json")
        .body(
            Full::new(Bytes::from_static(body.as_bytes()))
                .map_err(|e| match e {})
                .boxed_unsync(),
        )
        .unwrap()
}

async fn drain(resp: Response<TranslateBody>) -> Response<Bytes> {
    let (parts, body) = resp.into_parts();
    let bytes = body.collect().await.unwrap().to_bytes();
    // Charging runs on its own task once the body ends.
    tokio::task::yield_now().await;
    Response::from_parts(parts, bytes)
}

#[tokio::test(start_paused = true)]
async fn a_token_budget_is_charged_from_the_answers_usage() {
    let store = Arc::new(LocalWindows::default());
    let upstream = Answers {
        body: r#"{"choices":[],"usage":{"prompt_tokens":20,"completion_tokens":40,"total_tokens":60}}"#,
        seen: Arc::default(),
    };
    let layer = RateLimitLayer::new(
        "llm".into(),
        vec![budget(store.clone(), 100, OnStoreFailure::Allow)],
    );
    let mut svc = layer.layer(upstream);
    let first = drain(svc.ready().await.unwrap().call(chat("{}")).await.unwrap()).await;
    assert_eq!(first.headers()["x-ratelimit-remaining"], "100");
    let second = drain(svc.ready().await.unwrap().call(chat("{}")).await.unwrap()).await;
    assert_eq!(second.headers()["x-ratelimit-remaining"], "40");
    // 120 of 100 spent: the next request waits for the window.
    let err = svc
        .ready()
        .await
        .unwrap()
        .call(chat("{}"))
        .await
        .unwrap_err();
    let answer = render_error(err.as_ref(), &[classify_filters], false);
    assert_eq!(answer.status(), StatusCode::TOO_MANY_REQUESTS);
    tokio::time::advance(Duration::from_secs(60)).await;
    assert!(svc.ready().await.unwrap().call(chat("{}")).await.is_ok());
}

#[tokio::test(start_paused = true)]
async fn a_streamed_answer_is_charged_from_its_last_chunk_and_asked_for_usage() {
    let store = Arc::new(LocalWindows::default());
    let upstream = Answers {
        body: concat!(
            "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n",
            "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":3,\"total_tokens\":8}}\n\n",
            "data: [DONE]\n\n",
        ),
        seen: Arc::default(),
    };
    let seen = upstream.seen.clone();
    let layer = RateLimitLayer::new(
        "llm".into(),
        vec![budget(store.clone(), 100, OnStoreFailure::Allow)],
    );
    let mut svc = layer.layer(upstream);
    let req = chat(r#"{"model":"m","stream":true,"messages":[]}"#);
    drain(svc.ready().await.unwrap().call(req).await.unwrap()).await;
    let count = store
        .get("llm\u{1f}tokens\u{1f}a", Duration::from_secs(60))
        .await
        .unwrap();
    assert_eq!(count.count, 8);
    let sent: serde_json::Value = serde_json::from_slice(&seen.lock().unwrap()[0]).unwrap();
    assert_eq!(sent["stream_options"]["include_usage"], true);
    // A caller that decided for itself is left alone; an answer without usage pays the fallback.
    let req = chat(r#"{"stream":true,"stream_options":{"include_usage":false}}"#);
    drain(svc.ready().await.unwrap().call(req).await.unwrap()).await;
    let sent: serde_json::Value = serde_json::from_slice(&seen.lock().unwrap()[1]).unwrap();
    assert_eq!(sent["stream_options"]["include_usage"], false);
}

#[derive(Debug)]
struct Down;

impl WindowStore for Down {
    fn add(&self, _: &str, _: Duration, _: u64) -> StoreFuture {
        Box::pin(std::future::ready(Err(StoreError(
            "connection refused".into(),
        ))))
    }
    fn get(&self, _: &str, _: Duration) -> StoreFuture {
        Box::pin(std::future::ready(Err(StoreError(
            "connection refused".into(),
        ))))
    }
}

#[tokio::test(start_paused = true)]
async fn a_failed_store_fails_open_or_closed_as_configured() {
    let mut requests = limit("global", 5, Vec::new(), LimitMode::Enforce);
    requests.counter = Counter::Window(Arc::new(Down));
    let decisions = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = decisions.clone();
    let mut open = RateLimitLayer::new("r".into(), vec![requests.clone()])
        .on_decision(Arc::new(move |_, d| seen.lock().unwrap().push(d)))
        .layer(echo());
    assert_eq!(call(&mut open, tenant(None)).await.status(), StatusCode::OK);
    assert_eq!(*decisions.lock().unwrap(), [Decision::FailedOpen]);
    requests.on_failure = OnStoreFailure::Deny;
    let mut closed = RateLimitLayer::new("r".into(), vec![requests]).layer(echo());
    let answer = call(&mut closed, tenant(None)).await;
    assert_eq!(answer.status(), StatusCode::SERVICE_UNAVAILABLE);
}

#[tokio::test(start_paused = true)]
async fn window_counted_request_limits_admit_the_amount_per_window() {
    let mut l = limit("global", 2, Vec::new(), LimitMode::Enforce);
    l.counter = Counter::Window(Arc::new(LocalWindows::default()));
    let mut svc = RateLimitLayer::new("r".into(), vec![l]).layer(echo());
    let first = call(&mut svc, tenant(None)).await;
    assert_eq!(first.headers()["x-ratelimit-remaining"], "1");
    assert_eq!(call(&mut svc, tenant(None)).await.status(), StatusCode::OK);
    assert_eq!(
        call(&mut svc, tenant(None)).await.status(),
        StatusCode::TOO_MANY_REQUESTS
    );
    tokio::time::advance(Duration::from_secs(1)).await;
    assert_eq!(call(&mut svc, tenant(None)).await.status(), StatusCode::OK);
}

#[test]
fn usage_is_found_at_the_end_of_json_and_sse() {
    let json = br#"{"id":"x","usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}"#;
    assert_eq!(find_usage(json).unwrap().charged(Charge::Total), 3);
    assert_eq!(find_usage(json).unwrap().charged(Charge::Completion), 2);
    let sse =
        b"data: {\"usage\":null}\n\ndata: {\"usage\": {\"prompt_tokens\": 4}}\n\ndata: [DONE]\n\n";
    assert_eq!(find_usage(sse).unwrap().charged(Charge::Total), 4);
    assert!(find_usage(b"data: {\"usage\":null}\n\n").is_none());
}

/// An upstream holding each request for the milliseconds its path names.
#[derive(Clone)]
struct Holds;

impl Service<Request<()>> for Holds {
    type Response = Response<TranslateBody>;
    type Error = BoxError;
    type Future = std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<Response<TranslateBody>, BoxError>> + Send>,
    >;

    fn poll_ready(
        &mut self,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), BoxError>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<()>) -> Self::Future {
        let ms: u64 = req
            .uri()
            .path()
            .trim_start_matches('/')
            .parse()
            .unwrap_or(0);
        Box::pin(async move {
            tokio::time::sleep(Duration::from_millis(ms)).await;
            Ok(Response::new(ok_body()))
        })
    }
}

#[tokio::test(start_paused = true)]
async fn an_adaptive_cap_shrinks_when_the_model_slows_and_grows_back() {
    let mut s = settings(16, 0);
    s.adaptive = true;
    let state = Arc::new(ConcurrencyState::new(s));
    let mut svc = ConcurrencyLayer::new(state.clone()).layer(Holds);
    let mut run = |ms: u64| {
        let fut = svc.call(at(&format!("/{ms}")));
        async move { fut.await.unwrap().into_body().collect().await.unwrap() }
    };
    for _ in 0..20 {
        run(10).await;
    }
    assert_eq!(
        state.stats()[0].limit,
        16,
        "fast and steady: the cap stays at max"
    );
    for _ in 0..200 {
        run(40).await;
    }
    let slowed = state.stats()[0].limit;
    assert!(slowed <= 8, "4x slower: the cap shrinks (now {slowed})");
    for _ in 0..200 {
        run(10).await;
    }
    let recovered = state.stats()[0].limit;
    assert!(
        recovered > slowed,
        "fast again: the cap grows back ({slowed} -> {recovered})"
    );
}

#[tokio::test(start_paused = true)]
async fn a_million_rotating_keys_are_forgotten_once_idle() {
    // A client rotating its tenant header through a million values: every one admitted, and
    // once their buckets are full again the table is empty (RSS follows the table).
    let bucket = LocalBucket::new(5, Duration::from_secs(1), 5);
    let mut key = String::new();
    for i in 0..1_000_000u32 {
        key.clear();
        std::fmt::Write::write_fmt(&mut key, format_args!("tenant-{i}")).unwrap();
        assert!(matches!(bucket.check(&key), Check::Allowed { .. }));
    }
    assert_eq!(bucket.len(), 1_000_000);
    tokio::time::advance(Duration::from_secs(1)).await;
    bucket.evict_idle();
    assert_eq!(bucket.len(), 0);
}
