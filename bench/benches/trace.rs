//! `trace/*`: what the trace layer costs a request, around an inner service that answers at
//! once (the request is built inside the measured loop in every case, so compare the cases
//! with each other, not with zero):
//!
//! - `none`: no layer;
//! - `unsampled/with_parent`: a caller's `traceparent` with the sampled flag off (read, passed
//!   on untouched);
//! - `unsampled/new_trace`: no context, ratio 0 (a new trace id and one `traceparent` written);
//! - `sampled`: ratio 1 (the hop recorded: spans built and handed to a sink that drops them).
//!
//! Beside the time, each case prints the heap allocations one request makes (a counting
//! global allocator): the unsampled path adds none but the header it writes.

#[path = "support/answer.rs"]
mod answer;

use std::alloc::System;
use std::hint::black_box;
use std::sync::Arc;

use answer::{Answer, empty};
use criterion::{Criterion, criterion_group, criterion_main};
use ferry_filters::trace_context::{
    KeptHop, Propagation, SpanSink, TailRules, TraceLayer, TraceSettings,
};
use ferry_filters::translate::TranslateBody;
use futures_util::FutureExt as _;
use http::{Request, Response};
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};
use tower::{Layer, Service};

/// Counts allocations, so the bench can say how many a request makes.
#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

#[derive(Debug)]
struct Drop_;

impl SpanSink for Drop_ {
    fn export(&self, hop: &KeptHop<'_>) {
        // Walks the spans as an encoding sink would, without building `SpanData`.
        black_box(hop.spans().count());
    }
}

fn settings(ratio: f64) -> TraceSettings {
    TraceSettings {
        propagation: Arc::from([Propagation::W3c]),
        ratio,
        tail: TailRules::default(),
        sink: Arc::new(Drop_),
        attributes: Arc::new(ferry_filters::trace_context::FixedAttributes::new(vec![
            opentelemetry::KeyValue::new("ferry.route", "llm"),
        ])),
        names: Some(ferry_filters::trace_context::SpanNames::new("llm")),
        on_trace: None,
        classifiers: &[],
        attempts_inject: false,
    }
}

const UNSAMPLED: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00";

fn request(traceparent: Option<&'static str>) -> Request<TranslateBody> {
    let mut b = Request::builder()
        .method("POST")
        .uri("/v2/models/resnet/infer")
        .header("host", "models");
    if let Some(tp) = traceparent {
        b = b.header("traceparent", tp);
    }
    b.body(empty()).unwrap_or_default()
}

/// Runs one request through `svc` to its end (the answer's body dropped).
fn once<S>(svc: &mut S, traceparent: Option<&'static str>)
where
    S: Service<Request<TranslateBody>, Response = Response<TranslateBody>>,
{
    let answered = svc.call(request(traceparent)).now_or_never();
    black_box(answered.map(|r| r.ok().map(|r| r.status())));
}

/// Allocations of one request, averaged over 1,000.
fn allocations<S>(svc: &mut S, traceparent: Option<&'static str>) -> f64
where
    S: Service<Request<TranslateBody>, Response = Response<TranslateBody>>,
{
    let region = Region::new(GLOBAL);
    for _ in 0..1_000 {
        once(svc, traceparent);
    }
    region.change().allocations as f64 / 1_000.0
}

fn trace(c: &mut Criterion) {
    let mut group = c.benchmark_group("trace");
    let mut bare = Answer;
    let base = allocations(&mut bare, None);
    println!("trace/none: {base:.1} allocations per request");
    group.bench_function("none", |b| b.iter(|| once(&mut bare, None)));

    let cases: [(&str, f64, Option<&'static str>); 3] = [
        ("unsampled/with_parent", 0.0, Some(UNSAMPLED)),
        ("unsampled/new_trace", 0.0, None),
        ("sampled", 1.0, None),
    ];
    for (name, ratio, tp) in cases {
        let mut svc = TraceLayer::new(settings(ratio)).layer(Answer);
        let baseline = allocations(&mut Answer, tp);
        let n = allocations(&mut svc, tp);
        println!(
            "trace/{name}: {n:.1} allocations per request ({:+.1} over no layer)",
            n - baseline
        );
        group.bench_function(name, |b| b.iter(|| once(&mut svc, tp)));
    }
    group.finish();
}

criterion_group!(benches, trace);
criterion_main!(benches);
