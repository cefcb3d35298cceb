//! `balance/*`: one endpoint pick (the cluster's `pick_now`, as every attempt makes it) over
//! 2, 16 and 256 endpoints with p2c-ewma and round robin, outlier detection on (its default).
//! Issue 20's target: under 200 ns at any size. Each endpoint has a latency estimate and one
//! endpoint in 16 is ejected, so the pick sometimes draws a candidate it cannot use.

use std::hint::black_box;
use std::net::SocketAddr;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use ferry_config::{
    Cluster as ClusterConfig, Endpoints, LbPolicy, OutlierDetection, UpstreamProtocol,
};
use ferry_proxy::cluster::Cluster;
use ferry_proxy::metrics::Metrics;
use ferry_proxy::upstream::Transport;

fn cluster(n: u16, lb: LbPolicy) -> Cluster {
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
        load_report: None,
    };
    let c = Cluster::new(config, &Metrics::new(), Transport::Network, None);
    for (i, e) in c.endpoints().iter().enumerate() {
        e.observe_latency(Duration::from_micros(100 + (i as u64 % 7) * 10));
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
                b.iter(|| black_box(cl.pick_now(None)));
            });
        }
    }
    g.finish();
}

criterion_group!(benches, pick);
criterion_main!(benches);
