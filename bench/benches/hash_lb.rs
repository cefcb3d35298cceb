//! `hash_lb/*`: consistent hashing with bounded load (`lb: {policy: hash}`), issue 24's target
//! a pick under 200 ns at 256 endpoints.
//!
//! - `pick/{2,16,256}`: the cluster's `pick_now` with a key, as every attempt makes it, over
//!   1,024 different keys in turn, `bounded_load: 1.25`, no endpoint full (the common case:
//!   the key's own endpoint is under the bound).
//! - `pick_spill/{2,16,256}`: a hot key whose own endpoint is over the bound, so the pick
//!   counts the usable endpoints and walks the ring to the next one (the slow path).
//! - `key/header`, `key/prompt_prefix_1024`: building the key of a request from a header, or
//!   from the first 1,024 bytes of a chat body's messages (the scan, not the body read).
//! - `ring_build/{16,256}`: rebuilding the ring on an endpoint change.

use std::hint::black_box;
use std::net::SocketAddr;
use std::num::NonZeroUsize;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use ferry_config::{
    Cluster as ClusterConfig, Endpoints, HashKeyPart, HashLb, LbPolicy, OutlierDetection,
    UpstreamProtocol,
};
use ferry_filters::prompt_prefix::prompt_prefix;
use ferry_proxy::cluster::ring::Ring;
use ferry_proxy::cluster::{Cluster, HashKey};
use ferry_proxy::forward::hash_key::key_of;
use ferry_proxy::metrics::Metrics;
use ferry_proxy::upstream::Transport;

fn cluster(n: u16) -> Cluster {
    let config = ClusterConfig {
        name: "bench".into(),
        endpoints: Endpoints::Static(
            (0..n)
                .map(|i| SocketAddr::from(([127, 0, 0, 1], 10_000 + i)))
                .collect(),
        ),
        protocol: UpstreamProtocol::Http1,
        lb: LbPolicy::Hash,
        connect_timeout: Duration::from_secs(1),
        idle_timeout: Duration::from_secs(90),
        outlier: Some(OutlierDetection {
            consecutive_failures: 5,
            base_ejection: Duration::from_secs(10),
            max_ejection: Duration::from_secs(300),
            max_ejection_percent: 50,
        }),
        tls: None,
        slow_start: None,
        load_report: None,
        hash: Some(HashLb {
            key: vec![HashKeyPart::Header("x-session-id".into())],
            bounded_load: Some(1.25),
            fallback: LbPolicy::P2cEwma,
        }),
    };
    Cluster::new(config, &Metrics::new(), Transport::Network, None)
}

fn keys() -> Vec<HashKey> {
    (0..1024u64)
        .map(|i| {
            HashKey(xxhash_rust::xxh3::xxh3_64(
                format!("session-{i}").as_bytes(),
            ))
        })
        .collect()
}

fn pick(c: &mut Criterion) {
    let mut g = c.benchmark_group("hash_lb");
    let keys = keys();
    for n in [2u16, 16, 256] {
        let cl = cluster(n);
        let mut i = 0usize;
        g.bench_with_input(BenchmarkId::new("pick", n), &cl, |b, cl| {
            b.iter(|| {
                i = (i + 1) & 1023;
                black_box(cl.pick_now(None, keys.get(i).copied()))
            });
        });
    }
    for n in [2u16, 16, 256] {
        let cl = cluster(n);
        let hot = keys[0];
        // The hot key's endpoint holds more than 1.25 × the mean: every pick spills.
        let home = match cl.pick_now(None, Some(hot)) {
            Some(Ok(e)) => e,
            _ => panic!("no endpoint"),
        };
        let held: Vec<_> = (0..4).map(|_| home.start_owned()).collect();
        g.bench_with_input(BenchmarkId::new("pick_spill", n), &cl, |b, cl| {
            b.iter(|| black_box(cl.pick_now(None, Some(hot))));
        });
        drop(held);
    }
    g.finish();
}

fn key(c: &mut Criterion) {
    let mut g = c.benchmark_group("hash_lb/key");
    let header = [HashKeyPart::Header("x-session-id".into())];
    let req = http::Request::post("/v1/chat/completions")
        .header("content-type", "application/json")
        .header("x-session-id", "3f2c9a1e-5b7d-4e8f-a0c1-d2e3f4a5b6c7")
        .body(())
        .unwrap_or_default();
    g.bench_function("header", |b| {
        b.iter(|| black_box(key_of(&header, black_box(&req), None)));
    });
    let n = 1024;
    let body = serde_json::json!({
        "model": "llama-3-8b",
        "messages": [
            { "role": "system", "content": "You are a careful assistant for the fleet. ".repeat(60) },
            { "role": "user", "content": "What is the capital of France?" },
        ],
    })
    .to_string();
    let parts = [HashKeyPart::PromptPrefix(
        NonZeroUsize::MIN.saturating_add(n - 1),
    )];
    g.bench_function("prompt_prefix_1024", |b| {
        b.iter(|| {
            let prompt = match prompt_prefix(black_box(body.as_bytes()), n, false) {
                ferry_filters::prompt_prefix::PromptPrefix::Found(p) => Some(p),
                _ => None,
            };
            black_box(key_of(&parts, &req, prompt.as_deref()))
        });
    });
    g.finish();
}

fn build(c: &mut Criterion) {
    let mut g = c.benchmark_group("hash_lb/ring_build");
    for n in [16u16, 256] {
        let cl = cluster(n);
        let members = cl.endpoints();
        g.bench_with_input(BenchmarkId::from_parameter(n), &members, |b, m| {
            b.iter(|| black_box(Ring::new(m)));
        });
    }
    g.finish();
}

criterion_group!(benches, pick, key, build);
criterion_main!(benches);
