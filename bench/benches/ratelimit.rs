//! `ratelimit/*`: the cost of one local rate-limit decision (governor's keyed GCRA bucket) with
//! 1 and 100,000 live keys, from one thread and from two threads contending for the same
//! table, and the whole layer's decision (key built from a header, bucket checked, quota
//! headers written) around an inner service that answers at once. Target: < 300 ns.

#[path = "support/answer.rs"]
mod answer;

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use answer::{Answer, empty};
use criterion::{Criterion, criterion_group, criterion_main};
use ferry_filters::limits::{
    Counter, KeyPart, Limit, LimitMode, LocalBucket, OnStoreFailure, RateLimitLayer,
};
use futures_util::FutureExt as _;
use http::Request;
use tower::{Layer, Service};

/// Never refuses: the bench measures the decision, not the refusal.
fn roomy() -> LocalBucket {
    LocalBucket::new(
        u64::from(u32::MAX),
        Duration::from_secs(1),
        u64::from(u32::MAX),
    )
}

fn keys(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("tenant-{i}")).collect()
}

fn bucket(c: &mut Criterion) {
    let mut group = c.benchmark_group("ratelimit");
    for (label, n) in [("1_key", 1), ("100k_keys", 100_000)] {
        let b = roomy();
        let keys = keys(n);
        for k in &keys {
            b.check(k);
        }
        let mut i = 0;
        group.bench_function(format!("decision/{label}"), |bench| {
            bench.iter(|| {
                i = (i + 1) % keys.len();
                black_box(b.check(black_box(&keys[i])))
            })
        });
        let b = Arc::new(b);
        let keys = Arc::new(keys);
        group.bench_function(format!("decision/{label}/2_threads"), |bench| {
            bench.iter_custom(|iters| {
                let start = Instant::now();
                let workers: Vec<_> = (0..2)
                    .map(|t| {
                        let b = b.clone();
                        let keys = keys.clone();
                        std::thread::spawn(move || {
                            for j in 0..iters as usize {
                                black_box(b.check(&keys[(j * 2 + t) % keys.len()]));
                            }
                        })
                    })
                    .collect();
                for w in workers {
                    let _ = w.join();
                }
                // Per decision: two threads made `iters` each in this wall time.
                start.elapsed() / 2
            })
        });
    }
    group.finish();
}

fn layer(c: &mut Criterion) {
    let limit = Limit {
        name: "per-tenant".into(),
        key: vec![KeyPart::Header(http::HeaderName::from_static("x-tenant"))],
        amount: u64::from(u32::MAX),
        per: Duration::from_secs(1),
        mode: LimitMode::Enforce,
        counter: Counter::Bucket(Arc::new(roomy())),
        tokens: None,
        on_failure: OnStoreFailure::Allow,
        overrides: Vec::new(),
    };
    let mut svc = RateLimitLayer::new("llm".into(), vec![limit]).layer(Answer);
    c.bench_function("ratelimit/layer/header_key", |bench| {
        bench.iter(|| {
            let req = Request::builder()
                .uri("/v1/chat/completions")
                .header("x-tenant", "team-a")
                .body(empty())
                .unwrap_or_default();
            let answered = svc.call(req).now_or_never();
            black_box(answered.map(|r| r.map(|r| r.status())))
        })
    });
}

criterion_group!(benches, bucket, layer);
criterion_main!(benches);
