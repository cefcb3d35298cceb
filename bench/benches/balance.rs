//! `balance/*`: one endpoint pick (the cluster's `pick_now`, as every attempt makes it) over
//! 2, 16 and 256 endpoints with p2c-ewma and round robin, outlier detection on (its default).
//! Issue 20's target: under 200 ns at any size. Each endpoint has a latency estimate and one
//! endpoint in 16 is ejected, so the pick sometimes draws a candidate it cannot use.
//!
//! `balance/p2c_ewma_load_report/*`: the same pick on a cluster with `lb.load_report`, every
//! endpoint holding a fresh report (one atomic pair and an `exp` more per candidate).
//! `load_report/*`: what each answer of such a cluster costs on top (issue 20: ≤ 1.03× CPU per
//! request): reading vLLM's TEXT header or a gRPC binary trailer and storing the metric, against
//! `none`, the header lookup every answer of a cluster without it skips.

use std::hint::black_box;
use std::net::SocketAddr;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use ferry_config::{
    Cluster as ClusterConfig, Endpoints, LbPolicy, LoadMetric, LoadReportLb, OutlierDetection,
    UpstreamProtocol,
};
use ferry_filters::load_report::{self, MetricName};
use ferry_proxy::cluster::Cluster;
use ferry_proxy::metrics::Metrics;
use ferry_proxy::upstream::Transport;
use http::{HeaderMap, HeaderValue};

fn cluster(n: u16, lb: LbPolicy) -> Cluster {
    cluster_with(n, lb, None)
}

fn cluster_with(n: u16, lb: LbPolicy, load_report: Option<LoadReportLb>) -> Cluster {
    let outlier = OutlierDetection {
        consecutive_failures: 1,
        base_ejection: Duration::from_secs(3600),
        max_ejection: Duration::from_secs(3600),
        max_ejection_percent: 100,
    };
    let config = ClusterConfig {
        name: "bench".into(),
        endpoints: Endpoints::Static(
            (0..n)
                .map(|i| SocketAddr::from(([127, 0, 0, 1], 10_000 + i)))
                .collect(),
        ),
        protocol: UpstreamProtocol::Http1,
        lb,
        connect_timeout: Duration::from_secs(1),
        idle_timeout: Duration::from_secs(90),
        outlier: Some(outlier.clone()),
        tls: None,
        slow_start: None,
        load_report,
        hash: None,
    };
    let c = Cluster::new(config, &Metrics::new(), Transport::Network, None);
    for (i, e) in c.endpoints().iter().enumerate() {
        e.observe_latency(Duration::from_micros(100 + (i as u64 % 7) * 10));
        e.observe_load(0.1 * (i % 10) as f64);
        if i % 16 == 15 {
            e.failure(&outlier, true);
        }
    }
    c
}

fn pick(c: &mut Criterion) {
    let mut g = c.benchmark_group("balance");
    for (name, lb) in [
        ("p2c_ewma", LbPolicy::P2cEwma),
        ("round_robin", LbPolicy::RoundRobin),
    ] {
        for n in [2u16, 16, 256] {
            let cl = cluster(n, lb);
            g.bench_with_input(BenchmarkId::new(name, n), &cl, |b, cl| {
                b.iter(|| black_box(cl.pick_now(None, None)));
            });
        }
    }
    let reporting = LoadReportLb {
        metric: LoadMetric::Named("kv_cache_usage_perc".into()),
        weight: 1.0,
    };
    for n in [2u16, 16, 256] {
        let cl = cluster_with(n, LbPolicy::P2cEwma, Some(reporting.clone()));
        g.bench_with_input(BenchmarkId::new("p2c_ewma_load_report", n), &cl, |b, cl| {
            b.iter(|| black_box(cl.pick_now(None, None)));
        });
    }
    g.finish();
}

/// An answer's headers as vLLM sends them (a few ordinary headers and the report).
fn vllm_headers() -> HeaderMap {
    let mut h = HeaderMap::new();
    h.insert("content-type", HeaderValue::from_static("application/json"));
    h.insert("content-length", HeaderValue::from_static("512"));
    h.insert(
        "date",
        HeaderValue::from_static("Sat, 05 Dec 2026 07:00:00 GMT"),
    );
    h.insert(
        "endpoint-load-metrics",
        HeaderValue::from_static(
            "TEXT named_metrics.kv_cache_usage_perc=0.42, named_metrics.num_requests_waiting=3",
        ),
    );
    h
}

fn read(c: &mut Criterion) {
    let mut g = c.benchmark_group("load_report");
    let cl = cluster_with(
        2,
        LbPolicy::P2cEwma,
        Some(LoadReportLb {
            metric: LoadMetric::Named("kv_cache_usage_perc".into()),
            weight: 1.0,
        }),
    );
    let endpoint = cl.endpoints()[0].clone();
    let metric = MetricName::Named("kv_cache_usage_perc".into());
    let text = vllm_headers();
    g.bench_function("none", |b| {
        b.iter(|| black_box(black_box(&text).get("x-absent")));
    });
    g.bench_function("read_text", |b| {
        b.iter(|| {
            if let Some(v) = load_report::metric(black_box(&text), &metric) {
                endpoint.observe_load(v);
            }
        });
    });
    // OrcaLoadReport { named_metrics (8): {"kv_cache_usage_perc": 0.25} }, base64 unpadded.
    let mut bin = HeaderMap::new();
    bin.insert("grpc-status", HeaderValue::from_static("0"));
    bin.insert(
        "endpoint-load-metrics-bin",
        HeaderValue::from_static("Qh4KE2t2X2NhY2hlX3VzYWdlX3BlcmMRAAAAAAAA0D8"),
    );
    g.bench_function("read_bin_trailer", |b| {
        b.iter(|| {
            if let Some(v) = load_report::metric(black_box(&bin), &metric) {
                endpoint.observe_load(v);
            }
        });
    });
    g.finish();
}

criterion_group!(benches, pick, read);
criterion_main!(benches);
