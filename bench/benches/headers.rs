//! `headers/*`: hop-by-hop header removal on a typical request, with and without a
//! `Connection` header that lists extra names.

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use ferry_proxy::headers::strip_hop_by_hop;
use http::{HeaderMap, HeaderValue};
use std::hint::black_box;

fn typical() -> HeaderMap {
    let mut h = HeaderMap::new();
    for (k, v) in [
        ("host", "models.svc:8000"),
        ("user-agent", "python-requests/2.32"),
        ("accept", "application/json"),
        ("content-type", "application/json"),
        ("content-length", "1234"),
        ("x-request-id", "0af7651916cd43dd8448eb211c80319c"),
        (
            "traceparent",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
        ),
        ("authorization", "Bearer abc.def.ghi"),
    ] {
        h.insert(k, HeaderValue::from_static(v));
    }
    h
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("headers");
    group.bench_function("strip_hop_by_hop/plain", |b| {
        b.iter_batched_ref(
            typical,
            |h| strip_hop_by_hop(black_box(h), false),
            BatchSize::SmallInput,
        )
    });
    let with_connection = || {
        let mut h = typical();
        h.insert(
            "connection",
            HeaderValue::from_static("keep-alive, x-hop-a, x-hop-b"),
        );
        h.insert("keep-alive", HeaderValue::from_static("timeout=5"));
        h.insert("x-hop-a", HeaderValue::from_static("1"));
        h.insert("x-hop-b", HeaderValue::from_static("2"));
        h.insert("te", HeaderValue::from_static("trailers"));
        h
    };
    group.bench_function("strip_hop_by_hop/connection_listed", |b| {
        b.iter_batched_ref(
            with_connection,
            |h| strip_hop_by_hop(black_box(h), false),
            BatchSize::SmallInput,
        )
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
